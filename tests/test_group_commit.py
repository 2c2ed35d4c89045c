"""Group commits: one fsync per group of episodes, and kills at any moment lose nothing finished."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

from intbench.records import Episode
from intbench.rundir import EpisodeLog, RunDir

ROOT = Path(__file__).resolve().parents[1]
FIXTURE = ROOT / "tests" / "fixtures" / "episodes_v1" / "monitor" / "episodes.jsonl"
TOTAL = 60

# Appends the episodes not yet in the log, each padded so a write takes long enough to be cut.
WRITER = f"""
import json, sys, time
sys.path.insert(0, {str(ROOT)!r})
from intbench.records import Episode
from intbench.rundir import RunDir
record = json.loads(open({str(FIXTURE)!r}).readline())
with RunDir(sys.argv[1]).log() as log:
    for i in range({TOTAL}):
        key = f"{{i}}:0"
        if log.finished(key):
            continue
        metadata = {{**record["metadata"], "run_key": key, "pad": "x" * 400_000}}
        log.append(Episode.from_dict({{**record, "metadata": metadata}}))
        time.sleep(0.005)
"""


def _episode(key: str) -> Episode:
    record = json.loads(FIXTURE.read_text().splitlines()[0])
    return Episode.from_dict({**record, "metadata": {**record["metadata"], "run_key": key}})


def _count_fsyncs(monkeypatch) -> list[int]:
    real_fsync, calls = os.fsync, []

    def fsync(fd):
        calls.append(fd)
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", fsync)
    return calls


def test_one_fsync_per_group_and_one_on_close(tmp_path, monkeypatch):
    calls = _count_fsyncs(monkeypatch)
    with EpisodeLog(tmp_path / "episodes.jsonl", sync_every=4, sync_interval_s=3600) as log:
        for i in range(10):
            log.append(_episode(f"{i}:0"))
        assert len(calls) == 2  # after episodes 4 and 8
    assert len(calls) == 3  # the last two, on close
    assert len(RunDir(tmp_path).episodes()) == 10


def test_an_old_group_is_synced_at_the_next_append(tmp_path, monkeypatch):
    calls = _count_fsyncs(monkeypatch)
    clock = [100.0]
    monkeypatch.setattr("intbench.rundir.time.monotonic", lambda: clock[0])
    log = EpisodeLog(tmp_path / "episodes.jsonl", sync_every=1000, sync_interval_s=1.0)
    log.append(_episode("0:0"))
    clock[0] += 0.5
    log.append(_episode("1:0"))
    assert calls == []  # the group is young and small
    clock[0] += 0.6
    log.append(_episode("2:0"))
    assert len(calls) == 1  # 1.1 s since the last sync
    log.close()
    assert len(calls) == 1  # nothing left to sync


def test_appending_after_the_failed_episodes_are_dropped_goes_to_the_new_file(tmp_path):
    log = EpisodeLog(tmp_path / "episodes.jsonl")
    log.append(Episode.from_dict({**_episode("0:0").to_dict(), "error": "boom"}))
    log.append(_episode("1:0"))
    assert log.drop_failed() == 1
    log.append(_episode("0:0"))
    log.close()
    assert sorted(e.metadata["run_key"] for e in RunDir(tmp_path).episodes()) == ["0:0", "1:0"]
    assert len(RunDir(tmp_path).read().episodes) == 2


def test_kills_at_random_moments_leave_no_corrupt_or_duplicate_line(tmp_path):
    run = tmp_path / "run"
    rng = random.Random(7)
    for _ in range(12):
        proc = subprocess.Popen([sys.executable, "-c", WRITER, str(run)])
        time.sleep(rng.uniform(0.3, 1.2))
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
    subprocess.run([sys.executable, "-c", WRITER, str(run)], check=True, timeout=120)
    read = RunDir(run).read()
    keys = [e.metadata["run_key"] for e in read.episodes]
    assert read.bad_lines == []  # every cut-short line was dropped before the next append
    assert len(keys) == len(set(keys)) == TOTAL
    assert sorted(keys) == sorted(f"{i}:0" for i in range(TOTAL))
