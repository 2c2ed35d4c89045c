"""The run directory: one reader for every consumer, repair only when appending."""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from intbench.records import Episode
from intbench.rundir import ConfigMismatchError, RunDir, RunLockedError

ROOT = Path(__file__).resolve().parents[1]
FIXTURE = ROOT / "tests" / "fixtures" / "episodes_v1" / "monitor"


def _record(key: str) -> Episode:
    first = RunDir(FIXTURE).episodes()[0].to_dict()
    return Episode.from_dict({**first, "metadata": {**first["metadata"], "run_key": key}})


def test_reading_skips_a_partial_line_and_only_appending_repairs_it(tmp_path):
    run = RunDir(tmp_path / "run")
    shutil.copytree(FIXTURE, run.path)
    whole = run.episodes_path.read_bytes()
    run.episodes_path.write_bytes(whole + b'{"protocol": "moni')  # a write cut short by a kill
    read = run.read()
    assert len(read.episodes) == 4 and read.bad_lines == [5]
    assert run.episodes_path.read_bytes().endswith(b'"moni')  # readers never write
    log = run.log()
    assert run.episodes_path.read_bytes() == whole and len(log.records) == 4
    episode = Episode.from_dict({**log.records["0:0"].to_dict(), "error": "boom"})
    log.append(episode)
    assert [e.error for e in run.episodes()][0] == "boom"  # the latest record, at its place
    assert log.drop_failed() == 1 and len(run.episodes()) == 3


def test_config_is_saved_once_and_a_different_one_refused(tmp_path):
    run = RunDir(tmp_path / "run")
    run.prepare({"env_id": "IntBench-Math-v0", "n": 2})
    run.prepare({"env_id": "IntBench-Math-v0", "n": 2})
    assert run.config() == {"env_id": "IntBench-Math-v0", "n": 2}
    with pytest.raises(ConfigMismatchError, match="n: 2 -> 3"):
        run.prepare({"env_id": "IntBench-Math-v0", "n": 3})


def test_runs_are_found_below_a_directory_and_problems_read_back():
    runs = RunDir.below(FIXTURE.parent)
    assert [r.path.name for r in runs] == ["feedback", "monitor", "tutor"]
    assert RunDir.below(FIXTURE / "episodes.jsonl")[0].path == FIXTURE
    assert [p.id for p in RunDir(FIXTURE).problems()][0] == "math/procedural/test/0/0"


def test_resume_accepts_any_json_run_key_and_keys_are_canonical(tmp_path):
    # Issue 38: a list in run_key crashed RunDir.episodes() and .log() with
    # "unhashable type: 'list'"; an object's key order must not make two episodes.
    run = RunDir(tmp_path / "run")
    shutil.copytree(FIXTURE, run.path)
    first = run.episodes()[0].to_dict()
    keys = [["variant", 1], {"b": 2, "a": 1}, {"a": 1, "b": 2}, '["variant", 1]']
    with run.log() as log:
        for key in keys:
            log.append(
                Episode.from_dict({**first, "metadata": {**first["metadata"], "run_key": key}})
            )
    reopened = run.log()
    assert reopened.finished(["variant", 1]) and reopened.finished({"a": 1, "b": 2})
    assert reopened.finished('["variant", 1]')  # a string key stays a string, not a list
    # 4 fixture records + the list key + one object (two spellings) + the string key
    assert len(run.episodes()) == 4 + 3


# ------------------------------------------------------------- the writer lock
def test_the_lock_is_removed_when_the_writer_returns_or_raises(tmp_path):
    run = RunDir(tmp_path / "run")
    with run.writer():
        assert (run.path / ".lock").read_text().strip() == str(os.getpid())
        run.save_config({"n": 1})
        with run.log() as log:
            log.append(_record("0:0"))
    assert sorted(p.name for p in run.path.iterdir()) == ["config.json", "episodes.jsonl"]
    with pytest.raises(RuntimeError, match="crash"), run.writer():
        raise RuntimeError("crash")
    assert sorted(p.name for p in run.path.iterdir()) == ["config.json", "episodes.jsonl"]


def test_a_writer_that_opened_a_lock_file_its_holder_then_removed_takes_the_new_one(
    tmp_path, monkeypatch
):
    # The holder exits (removing .lock) after we opened it but before our flock, and a
    # third writer creates and locks a new .lock: we must not count the old file as the lock.
    run = RunDir(tmp_path)
    lock = tmp_path / ".lock"
    real_flock, third = fcntl.flock, []

    def flock(fd, operation):
        if not third:
            lock.unlink()
            third.append(os.open(lock, os.O_RDWR | os.O_CREAT))
            os.write(third[0], b"4242\n")
            real_flock(third[0], fcntl.LOCK_EX | fcntl.LOCK_NB)
        return real_flock(fd, operation)

    monkeypatch.setattr(fcntl, "flock", flock)
    with pytest.raises(RunLockedError, match="pid 4242"), run.writer():
        pass
    os.close(third[0])


def test_a_writer_still_held_at_exit_in_a_daemon_thread_is_released(tmp_path):
    # as a matrix pair's run is when Ctrl-C ends the process
    script = (
        "import sys, threading, time\nfrom intbench.rundir import RunDir\n"
        "def hold():\n    with RunDir(sys.argv[1]).writer():\n"
        "        RunDir(sys.argv[1]).save_config({'n': 1})\n        time.sleep(60)\n"
        "threading.Thread(target=hold, daemon=True).start()\ntime.sleep(1)\n"
    )
    out = tmp_path / "run"
    subprocess.run([sys.executable, "-c", script, str(out)], cwd=ROOT, check=True, timeout=60)
    assert not out.exists()  # no episode recorded: the lock, config and directory are gone
