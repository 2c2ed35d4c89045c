"""`--workers N`: the same episodes as one process, one writer, resumable after a kill."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from intbench.runner import RunConfig, load_run, run_eval

ROOT = Path(__file__).resolve().parents[1]
SLOW = "scripted:tests.scripted_students:slow"


def comparable(record: dict) -> dict:
    """A record without what differs between runs (timings, cache provenance)."""
    tokens = {k: v for k, v in record["tokens"].items() if k != "baseline_generated"}
    kept = {k: v for k, v in record.items() if k not in ("timings", "metadata", "tokens")}
    return kept | {"tokens": tokens, "run_key": record["metadata"]["run_key"]}


def test_two_workers_give_the_episodes_of_one(tmp_path, monkeypatch):
    monkeypatch.setenv("INTBENCH_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("PYTHONPATH", str(ROOT))  # the spawned workers import the scripted student
    config = RunConfig(
        env_id="IntBench-Math-v0", teacher="random:0.5", student=SLOW, n=6, repeats=2, seed=3
    )
    one = run_eval(config, tmp_path / "one", concurrency=2, progress=False)
    monkeypatch.setenv("INTBENCH_CACHE", str(tmp_path / "cache-2"))  # baselines generated again
    two = run_eval(config, tmp_path / "two", concurrency=2, progress=False, workers=2)
    assert two.ran == 12
    by_key = {r["metadata"]["run_key"]: comparable(r) for r in one.episodes}
    assert {r["metadata"]["run_key"]: comparable(r) for r in two.episodes} == by_key
    lines = (tmp_path / "two" / "episodes.jsonl").read_text().splitlines()
    assert len(lines) == 12  # one line per episode: one writer
    summary = json.loads((tmp_path / "two" / "summary.json").read_text())
    single = json.loads((tmp_path / "one" / "summary.json").read_text())
    assert summary["episodes"]["done"] == 12
    # counted in the workers, the same calls as in one process
    assert summary["usage"]["student"]["requests"] == single["usage"]["student"]["requests"] > 12


def test_a_killed_multi_worker_run_resumes_without_duplicates(tmp_path):
    env = dict(os.environ, INTBENCH_CACHE=str(tmp_path / "cache"), PYTHONPATH=str(ROOT))
    out = tmp_path / "run"
    command = [
        sys.executable, "-m", "intbench.cli", "eval", "--env", "IntBench-Math-v0",
        "--teacher", "at:0.5", "--student", SLOW, "-n", "12", "--repeats", "2",
        "--concurrency", "2", "--workers", "2", "--out", str(out), "--no-progress",
    ]  # fmt: skip
    proc = subprocess.Popen(
        command, env=env, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    deadline = time.monotonic() + 120
    episodes = out / "episodes.jsonl"
    while time.monotonic() < deadline and (
        not episodes.exists() or len(episodes.read_text().splitlines()) < 3
    ):
        time.sleep(0.2)
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=30)
    time.sleep(1.0)  # the workers end with their parent
    assert subprocess.run(command, env=env, cwd=ROOT, capture_output=True).returncode == 0
    keys = [json.loads(line)["metadata"]["run_key"] for line in episodes.read_text().splitlines()]
    assert len(keys) == len(set(keys)) == 24
    assert len(load_run(out)) == 24
