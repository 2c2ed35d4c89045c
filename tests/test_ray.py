"""`--ray` (a local Ray instance): the same episodes as one process, one writer, resumable.

Ray runs in subprocesses (the CLI), never in the test process: a Ray instance
that fails ends its driver, which must not be the test run."""

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


def cli(*args: str) -> list[str]:
    return [sys.executable, "-m", "intbench.cli", *args]


def cli_env(tmp_path: Path, cache: str) -> dict:
    """The CLI's environment: its own cache, the tests importable, no Ray address."""
    env = dict(os.environ, INTBENCH_CACHE=str(tmp_path / cache), PYTHONPATH=str(ROOT))
    env.pop("RAY_ADDRESS", None)  # a local instance, whatever the machine has
    return env


def run_cli(tmp_path: Path, args: list[str], cache: str) -> None:
    done = subprocess.run(
        cli(*args),
        env=cli_env(tmp_path, cache),
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        start_new_session=True,
    )
    assert done.returncode == 0, done.stderr[-3000:]


def by_key(run_dir: Path) -> dict:
    return {r["metadata"]["run_key"]: comparable(r) for r in load_run(run_dir)}


def test_ray_tasks_give_the_episodes_of_one_process(tmp_path, monkeypatch):
    monkeypatch.setenv("INTBENCH_CACHE", str(tmp_path / "cache"))
    config = RunConfig(
        env_id="IntBench-Math-v0", teacher="random:0.5", student=SLOW, n=6, repeats=2, seed=3
    )
    run_eval(config, tmp_path / "one", concurrency=2, progress=False)
    run_cli(
        tmp_path,
        [
            "eval",
            "--env",
            "IntBench-Math-v0",
            "--teacher",
            "random:0.5",
            "--student",
            SLOW,
            "-n",
            "6",
            "--repeats",
            "2",
            "--seed",
            "3",
            "--concurrency",
            "2",
            "--workers",
            "2",
            "--ray",
            "--out",
            str(tmp_path / "ray"),
            "--no-progress",
        ],  # fmt: skip
        cache="cache-2",  # baselines generated again, in the Ray tasks
    )
    assert by_key(tmp_path / "ray") == by_key(tmp_path / "one")
    assert len((tmp_path / "ray" / "episodes.jsonl").read_text().splitlines()) == 12
    summary = json.loads((tmp_path / "ray" / "summary.json").read_text())
    single = json.loads((tmp_path / "one" / "summary.json").read_text())
    # usage counted in the Ray tasks, the same calls as in one process
    assert summary["usage"]["student"]["requests"] == single["usage"]["student"]["requests"]
    assert summary["processes"] == 2


def test_a_killed_ray_run_resumes_without_duplicates(tmp_path):
    out = tmp_path / "run"
    args = [
        "eval", "--env", "IntBench-Math-v0", "--teacher", "at:0.5", "--student", SLOW,
        "-n", "12", "--repeats", "2", "--concurrency", "2", "--workers", "2", "--ray",
        "--out", str(out), "--no-progress",
    ]  # fmt: skip
    proc = subprocess.Popen(
        cli(*args),
        env=cli_env(tmp_path, "cache"),
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
    try:
        run_cli(tmp_path, args, cache="cache")
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)  # what the killed run's Ray instance left
    keys = [json.loads(line)["metadata"]["run_key"] for line in episodes.read_text().splitlines()]
    assert len(keys) == len(set(keys)) == 24
    assert len(load_run(out)) == 24


def test_ray_without_the_extra_is_a_one_line_error(tmp_path, monkeypatch, capsys):
    import intbench.extras as extras

    monkeypatch.setattr(extras.importlib.util, "find_spec", lambda name: None)
    from intbench.cli import main

    command = ["eval", "--env", "IntBench-Math-v0", "--teacher", "never", "--ray", "--out"]
    assert main([*command, str(tmp_path / "run")]) == 2
    assert (
        capsys.readouterr().err == 'error: --ray needs the ray extra: pip install "intbench[ray]"\n'
    )
    assert not (tmp_path / "run" / "config.json").exists()


def test_an_unreachable_ray_address_is_a_one_line_error(tmp_path):
    args = [
        "eval", "--env", "IntBench-Math-v0", "--teacher", "never", "--student",
        "scripted:text=\\boxed{1}", "-n", "2", "--workers", "2", "--ray", "127.0.0.1:9",
        "--out", str(tmp_path / "run"), "--no-progress",
    ]  # fmt: skip
    done = subprocess.run(
        cli(*args), env=cli_env(tmp_path, "cache"), cwd=ROOT, capture_output=True, text=True,
        timeout=120,
    )  # fmt: skip
    assert done.returncode == 1
    assert "cannot reach a Ray cluster at 127.0.0.1:9" in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1


@pytest.mark.slow  # eight Ray workers at once: on a loaded 2-core machine Ray's own health checks can fail
def test_matrix_pairs_share_one_ray_instance(tmp_path, monkeypatch):
    from intbench.cli import main

    monkeypatch.setenv("INTBENCH_CACHE", str(tmp_path / "cache"))
    grid = [
        "matrix", "--env", "IntBench-Math-Feedback-v0", "-n", "3", "--k-max", "2",
        "--students", "scripted:text=\\boxed{1},scripted:text=\\boxed{2}",
        "--teachers", "scripted:text=<feedback>Look again.</feedback>", "--no-progress",
    ]  # fmt: skip
    assert main([*grid, "--out", str(tmp_path / "local")]) == 0
    # four runs at once, each over two Ray tasks: the first to end must not close Ray
    ray_grid = [*grid, "--pairs", "4", "--ray", "--workers", "2", "--out", str(tmp_path / "ray")]
    run_cli(tmp_path, ray_grid, cache="cache-ray")
    runs = sorted(p.name for p in (tmp_path / "local").iterdir())
    assert runs == sorted(p.name for p in (tmp_path / "ray").iterdir()) and len(runs) == 4
    for name in runs:
        assert by_key(tmp_path / "ray" / name) == by_key(tmp_path / "local" / name)
