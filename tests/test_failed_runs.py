"""What a failed eval leaves in --out: nothing (a run that recorded no episode in a new
directory) or a resumable run; never the lock, a temporary file or tracker files of a run
that logged nothing."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from intbench import runner
from intbench.cli import main
from intbench.rundir import RunDir
from intbench.runner import RunConfig, run_eval

ROOT = Path(__file__).resolve().parents[1]
STUDENT = "scripted:tests.scripted_students:slow"
FLAKY = "scripted:tests.scripted_students:flaky"


def _eval(out: Path, *extra: str, student: str = STUDENT, n: int = 3) -> int:
    return main([
        "eval", "--env", "IntBench-Math-v0", "--teacher", "at:0.5", "--student", student,
        "-n", str(n), "--concurrency", "1", "--out", str(out), "--no-progress", *extra,
    ])  # fmt: skip


def _names(path: Path) -> list[str]:
    return sorted(p.relative_to(path).as_posix() for p in path.rglob("*"))


@pytest.fixture(autouse=True)
def _cache(tmp_path, monkeypatch):
    monkeypatch.setenv("INTBENCH_CACHE", str(tmp_path / "cache"))


def _fail_at(monkeypatch, where: str, error: BaseException) -> None:
    def fail(*args, **kwargs):
        raise error

    monkeypatch.setattr(runner, where, fail)


FAILURES = [
    pytest.param("_make_teacher", RuntimeError("teacher model failed to load"), 1, id="setup"),
    pytest.param("_play", RuntimeError("backend crashed"), 1, id="mid-run"),
    pytest.param("_play", KeyboardInterrupt(), 130, id="ctrl-c"),
]


@pytest.mark.parametrize(("where", "error", "code"), FAILURES)
def test_a_run_that_records_no_episode_removes_the_directory_it_made(
    tmp_path, monkeypatch, where, error, code
):
    _fail_at(monkeypatch, where, error)
    out = tmp_path / "run"
    assert _eval(out, "--report-to", "tensorboard") == code
    assert not out.exists()  # no lock, no config, no tensorboard files of a run that logged nothing
    assert [p.name for p in tmp_path.iterdir() if p.name != "cache"] == []  # no staging files


@pytest.mark.parametrize(("where", "error", "code"), FAILURES)
def test_a_run_that_records_no_episode_leaves_an_existing_out_as_it_found_it(
    tmp_path, monkeypatch, where, error, code
):
    _fail_at(monkeypatch, where, error)
    out = tmp_path / "run"
    out.mkdir()
    (out / "notes.txt").write_text("mine")
    assert _eval(out, "--report-to", "tensorboard") == code
    assert _names(out) == ["notes.txt"]
    monkeypatch.undo()
    monkeypatch.setenv("INTBENCH_CACHE", str(tmp_path / "cache"))
    assert _eval(out, "--teacher", "never") == 0  # a corrected command is not refused


def test_an_interrupt_after_some_episodes_leaves_a_resumable_run(tmp_path):
    config = RunConfig(env_id="IntBench-Math-v0", teacher="at:0.5", student=STUDENT, n=4)
    out = tmp_path / "run"
    seen = []

    def interrupt_on_the_second(record: dict) -> None:
        seen.append(record)
        if len(seen) == 2:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        run_eval(config, out, concurrency=1, progress=False, on_episode=interrupt_on_the_second)
    assert _names(out) == ["config.json", "episodes.jsonl", "problems.jsonl", "summary.json"]
    lines = (out / "episodes.jsonl").read_text().splitlines()
    assert [json.loads(line)["episode_id"] for line in lines] == [r["episode_id"] for r in seen]
    assert json.loads((out / "summary.json").read_text())["finished"] is False
    resumed = run_eval(config, out, concurrency=1, progress=False)
    assert (resumed.skipped, resumed.ran) == (2, 2) and not (out / ".lock").exists()


def test_a_run_whose_every_episode_failed_is_kept_resumable_without_its_lock(
    tmp_path, monkeypatch, capsys
):
    marker = tmp_path / "marker"
    marker.write_text("")  # the flaky student fails on every prompt
    monkeypatch.setenv("INTBENCH_TEST_FLAKY", str(marker))
    out = tmp_path / "run"
    assert _eval(out, "--report-to", "tensorboard", student=FLAKY) == 1
    names = _names(out)
    assert ".lock" not in names and not [n for n in names if n.endswith(".tmp")]
    assert any(n.startswith("tensorboard/events.out.tfevents") for n in names)  # it logged
    assert "re-run the same command to retry them" in capsys.readouterr().err
    marker.unlink()
    assert _eval(out, "--report-to", "tensorboard", student=FLAKY) == 0  # retried
    assert [e.error for e in RunDir(out).episodes()] == [None, None, None]


def test_sigterm_mid_run_removes_the_lock_and_the_run_resumes(tmp_path):
    out = tmp_path / "run"
    env = dict(os.environ, INTBENCH_CACHE=str(tmp_path / "cache"), PYTHONPATH=str(ROOT))
    command = [
        sys.executable, "-m", "intbench.cli", "eval", "--env", "IntBench-Math-v0",
        "--teacher", "at:0.5", "--student", STUDENT, "-n", "40", "--concurrency", "1",
        "--out", str(out), "--no-progress",
    ]  # fmt: skip
    process = subprocess.Popen(command, env=env, cwd=ROOT, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 120
    while not (out / "episodes.jsonl").exists() or not (out / "episodes.jsonl").read_text():
        assert process.poll() is None and time.monotonic() < deadline
        time.sleep(0.05)
    process.send_signal(signal.SIGTERM)
    assert process.wait(timeout=60) == 128 + signal.SIGTERM
    assert "re-run the command to resume" in process.stderr.read()
    names = _names(out)
    assert ".lock" not in names and not [n for n in names if n.endswith(".tmp")]
    done = len((out / "episodes.jsonl").read_text().splitlines())
    assert 0 < done < 40
    resumed = subprocess.run(command, env=env, cwd=ROOT, capture_output=True, text=True)
    assert resumed.returncode == 0, resumed.stderr
    assert f"{40 - done} episode(s) run, {done} already done" in resumed.stdout
