"""`--ray` (a local Ray instance): the same episodes as one process, one writer, resumable."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from intbench.runner import RunConfig, load_run, run_eval
from tests.test_workers import SLOW, comparable

pytest.importorskip("ray", reason="the Ray extra is not installed (pip install 'intbench[ray]')")

ROOT = Path(__file__).resolve().parents[1]


def test_ray_tasks_give_the_episodes_of_one_process(tmp_path, monkeypatch):
    monkeypatch.setenv("INTBENCH_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("PYTHONPATH", str(ROOT))  # the Ray workers import the scripted student
    config = RunConfig(
        env_id="IntBench-Math-v0", teacher="random:0.5", student=SLOW, n=6, repeats=2, seed=3
    )
    one = run_eval(config, tmp_path / "one", concurrency=2, progress=False)
    monkeypatch.setenv("INTBENCH_CACHE", str(tmp_path / "cache-2"))  # baselines generated again
    ray = run_eval(
        config, tmp_path / "ray", concurrency=2, progress=False, workers=2, ray_address="local"
    )
    assert ray.ran == 12
    by_key = {r["metadata"]["run_key"]: comparable(r) for r in one.episodes}
    assert {r["metadata"]["run_key"]: comparable(r) for r in ray.episodes} == by_key
    assert len((tmp_path / "ray" / "episodes.jsonl").read_text().splitlines()) == 12
    summary = json.loads((tmp_path / "ray" / "summary.json").read_text())
    single = json.loads((tmp_path / "one" / "summary.json").read_text())
    # usage counted in the Ray tasks, the same calls as in one process
    assert summary["usage"]["student"]["requests"] == single["usage"]["student"]["requests"]


def test_a_killed_ray_run_resumes_without_duplicates(tmp_path):
    env = dict(os.environ, INTBENCH_CACHE=str(tmp_path / "cache"), PYTHONPATH=str(ROOT))
    env.pop("RAY_ADDRESS", None)
    out = tmp_path / "run"
    command = [
        sys.executable, "-m", "intbench.cli", "eval", "--env", "IntBench-Math-v0",
        "--teacher", "at:0.5", "--student", SLOW, "-n", "12", "--repeats", "2",
        "--concurrency", "2", "--workers", "2", "--ray", "--out", str(out), "--no-progress",
    ]  # fmt: skip
    proc = subprocess.Popen(
        command,
        env=env,
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,  # so the killed run's Ray processes can be cleaned up below
    )
    deadline = time.monotonic() + 180
    episodes = out / "episodes.jsonl"
    while time.monotonic() < deadline and (
        not episodes.exists() or len(episodes.read_text().splitlines()) < 3
    ):
        time.sleep(0.2)
    proc.send_signal(signal.SIGKILL)  # the driver only: its Ray instance is left to itself
    proc.wait(timeout=30)
    done = subprocess.run(command, env=env, cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    keys = [json.loads(line)["metadata"]["run_key"] for line in episodes.read_text().splitlines()]
    assert len(keys) == len(set(keys)) == 24
    assert len(load_run(out)) == 24
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)  # what the killed run's Ray instance left


def test_ray_without_the_extra_is_a_one_line_error(tmp_path, monkeypatch):
    import intbench.commands.eval as eval_command

    monkeypatch.setattr(eval_command.importlib.util, "find_spec", lambda name: None)
    from intbench.cli import main

    command = ["eval", "--env", "IntBench-Math-v0", "--teacher", "never", "--ray", "--out"]
    assert main([*command, str(tmp_path / "run")]) == 2
    assert not (tmp_path / "run" / "config.json").exists()


def test_matrix_pairs_share_one_ray_instance(tmp_path, monkeypatch):
    from intbench.cli import main

    monkeypatch.setenv("INTBENCH_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("PYTHONPATH", str(ROOT))
    grid = [
        "matrix", "--env", "IntBench-Math-Feedback-v0", "-n", "3", "--k-max", "2",
        "--students", "scripted:text=\\boxed{1},scripted:text=\\boxed{2}",
        "--teachers", "scripted:text=<feedback>Look again.</feedback>", "--no-progress",
    ]  # fmt: skip
    assert main([*grid, "--out", str(tmp_path / "local")]) == 0
    # four runs at once, each over two Ray tasks: the first to end must not close Ray
    ray_grid = [*grid, "--pairs", "4", "--ray", "--workers", "2", "--out", str(tmp_path / "ray")]
    assert main(ray_grid) == 0
    runs = sorted(p.name for p in (tmp_path / "local").iterdir())
    assert runs == sorted(p.name for p in (tmp_path / "ray").iterdir()) and len(runs) == 4
    for name in runs:
        local, ray = (
            {r["metadata"]["run_key"]: comparable(r) for r in load_run(tmp_path / kind / name)}
            for kind in ("local", "ray")
        )
        assert local == ray
