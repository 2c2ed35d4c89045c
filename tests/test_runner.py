"""The eval runner: resumable after SIGINT/SIGKILL, config checks, failed episodes retried."""

from __future__ import annotations

import json
import os
import random
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from intbench.envs.domains import load_problems
from intbench.runner import ConfigMismatchError, RunConfig, load_run, run_eval

ROOT = Path(__file__).resolve().parents[1]
SLOW = "scripted:tests.scripted_students:slow"


def eval_cmd(
    out: Path, student: str = SLOW, teacher: str = "at:0.5", n: int = 12, extra=()
) -> list[str]:
    return [
        sys.executable, "-m", "intbench.cli", "eval", "--env", "IntBench-Math-v0",
        "--teacher", teacher, "--student", student, "-n", str(n), "--repeats", "2",
        "--seed", "3", "--concurrency", "3", "--out", str(out), "--no-progress", *extra,
    ]  # fmt: skip


@pytest.fixture()
def env_vars(tmp_path):
    env = dict(os.environ, INTBENCH_CACHE=str(tmp_path / "cache"), PYTHONPATH=str(ROOT))
    return env


def keys_in(out: Path) -> list[str]:
    lines = (out / "episodes.jsonl").read_text().splitlines()
    return [json.loads(line)["metadata"]["run_key"] for line in lines]


def comparable(record: dict) -> dict:
    """The record minus what legitimately differs between runs: wall-clock
    timings, and whether the baseline came from the shared cache."""
    tokens = {k: v for k, v in record["tokens"].items() if k != "baseline_generated"}
    kept = {k: v for k, v in record.items() if k not in ("timings", "metadata", "tokens")}
    return kept | {"tokens": tokens, "run_key": record["metadata"]["run_key"]}


def test_killed_runs_resume_to_the_uninterrupted_result(tmp_path, env_vars):
    reference = tmp_path / "reference"
    subprocess.run(eval_cmd(reference), env=env_vars, check=True, cwd=ROOT, capture_output=True)
    expected = {r["metadata"]["run_key"]: comparable(r) for r in load_run(reference)}
    assert len(expected) == 24

    out = tmp_path / "interrupted"
    rng = random.Random(0)
    for sig in [signal.SIGINT, signal.SIGKILL, signal.SIGINT, signal.SIGKILL, signal.SIGKILL]:
        proc = subprocess.Popen(
            eval_cmd(out),
            env=env_vars,
            cwd=ROOT,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        time.sleep(rng.uniform(1.5, 4.0))
        proc.send_signal(sig)
        proc.wait(timeout=60)
    subprocess.run(eval_cmd(out), env=env_vars, check=True, cwd=ROOT, capture_output=True)
    keys = keys_in(out)
    assert len(keys) == len(set(keys)) == 24  # nothing duplicated, nothing lost
    got = {r["metadata"]["run_key"]: comparable(r) for r in load_run(out)}
    assert got == expected


def test_partial_last_line_is_repaired(tmp_path, monkeypatch):
    monkeypatch.setenv("INTBENCH_CACHE", str(tmp_path / "cache"))
    config = RunConfig(
        env_id="IntBench-Math-v0", teacher="never", student="scripted:text=\\boxed{1}", n=3
    )
    out = tmp_path / "run"
    run_eval(config, out, concurrency=2, progress=False)
    path = out / "episodes.jsonl"
    lines = path.read_text().splitlines()
    # simulate a kill in the middle of writing the last record
    path.write_text("\n".join(lines[:-1]) + "\n" + lines[-1][: len(lines[-1]) // 2])
    result = run_eval(config, out, concurrency=2, progress=False)
    assert result.ran == 1 and result.skipped == 2
    assert len(path.read_text().splitlines()) == 3


def test_changed_config_is_refused(tmp_path, env_vars):
    out = tmp_path / "run"
    first = subprocess.run(
        eval_cmd(out, n=2), env=env_vars, cwd=ROOT, capture_output=True, text=True
    )
    assert first.returncode == 0, first.stderr
    second = subprocess.run(
        eval_cmd(out, n=2, teacher="never"), env=env_vars, cwd=ROOT, capture_output=True, text=True
    )
    assert second.returncode == 2
    assert (
        "different configuration" in second.stderr
        and "teacher: 'at:0.5' -> 'never'" in second.stderr
    )
    with pytest.raises(ConfigMismatchError):
        run_eval(
            RunConfig(env_id="IntBench-Math-v0", teacher="never", student=SLOW, n=5),
            out,
            progress=False,
        )


def test_failed_episodes_are_recorded_then_retried(tmp_path, monkeypatch):
    monkeypatch.setenv("INTBENCH_CACHE", str(tmp_path / "cache"))
    problems = load_problems("math", source="offline", n=4, seed=0)
    marker = tmp_path / "flaky"
    marker.write_text(problems[1].question[:40])
    monkeypatch.setenv("INTBENCH_TEST_FLAKY", str(marker))
    config = RunConfig(
        env_id="IntBench-Math-v0",
        teacher="never",
        student="scripted:tests.scripted_students:flaky",
        n=4,
    )
    out = tmp_path / "run"
    first = run_eval(config, out, concurrency=2, progress=False)
    failed = [e for e in first.episodes if e["error"]]
    assert len(failed) == 1 and "injected student failure" in failed[0]["error"]
    marker.unlink()
    second = run_eval(config, out, concurrency=2, progress=False)
    assert second.ran == 1 and second.skipped == 3
    assert not any(e["error"] for e in second.episodes) and len(keys_in(out)) == 4
    # the same records as objects, the resumed ones (from the file) and the new one alike
    assert [r.to_dict() for r in second.records] == second.episodes
    assert [r.to_dict() for r in first.records] == first.episodes


def test_a_second_writer_fails_at_once_naming_the_first(tmp_path, env_vars):
    out = tmp_path / "run"
    first = subprocess.Popen(
        eval_cmd(out, n=12),
        env=env_vars,
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    deadline = time.monotonic() + 60
    while not (out / "episodes.jsonl").exists() and time.monotonic() < deadline:
        time.sleep(0.2)  # the first writer holds the lock before its first episode
    started = time.monotonic()
    second = subprocess.run(
        eval_cmd(out, n=12), env=env_vars, cwd=ROOT, capture_output=True, text=True
    )
    assert second.returncode == 2
    assert f"being written by another process (pid {first.pid})" in second.stderr
    assert time.monotonic() - started < 30  # refused before any model or env is built
    assert first.wait(timeout=120) == 0
    keys = keys_in(out)
    assert len(keys) == len(set(keys)) == 24


def test_the_lock_of_a_killed_writer_does_not_block_the_resume(tmp_path):
    from intbench.rundir import RunDir, RunLockedError

    script = (
        "import sys, time\nfrom intbench.rundir import RunDir\n"
        "with RunDir(sys.argv[1]).writer():\n    print('locked', flush=True)\n    time.sleep(60)\n"
    )
    holder = subprocess.Popen(
        [sys.executable, "-c", script, str(tmp_path)], cwd=ROOT, stdout=subprocess.PIPE, text=True
    )
    assert holder.stdout.readline().strip() == "locked"
    with pytest.raises(RunLockedError, match=f"pid {holder.pid}"):
        with RunDir(tmp_path).writer():
            pass
    holder.kill()
    holder.wait()
    with RunDir(tmp_path).writer():  # the kernel dropped the dead holder's lock
        assert (tmp_path / ".lock").read_text().strip() == str(os.getpid())


def test_an_episode_past_its_wall_clock_limit_fails_and_is_rerun(tmp_path, monkeypatch):
    monkeypatch.setenv("INTBENCH_CACHE", str(tmp_path / "cache"))
    problems = load_problems("math", source="offline", n=3, seed=0)
    marker = tmp_path / "stall"
    marker.write_text(problems[2].question[:40])
    monkeypatch.setenv("INTBENCH_TEST_STALL", str(marker))
    config = RunConfig(
        env_id="IntBench-Math-v0",
        teacher="never",
        student="scripted:tests.scripted_students:stalls",
        n=3,
    )
    out = tmp_path / "run"
    first = run_eval(config, out, concurrency=1, progress=False, episode_timeout_s=1.5)
    failed = [e for e in first.episodes if e["error"]]
    assert [e["metadata"]["run_key"] for e in failed] == ["2:0"]
    assert "wall-clock limit of 1.5 s" in failed[0]["error"]
    assert failed[0]["problem_id"] == problems[2].id
    marker.unlink()
    second = run_eval(config, out, concurrency=1, progress=False, episode_timeout_s=1.5)
    assert second.ran == 1 and second.skipped == 2
    assert not any(e["error"] for e in second.episodes) and len(keys_in(out)) == 3


def test_episode_timeout_must_be_positive(tmp_path):
    config = RunConfig(env_id="IntBench-Math-v0", teacher="never", student=SLOW, n=1)
    with pytest.raises(ValueError, match="episode_timeout_s"):
        run_eval(config, tmp_path / "run", progress=False, episode_timeout_s=0)


def test_feedback_run_and_summary(tmp_path, monkeypatch, capsys):
    from intbench.cli import main

    monkeypatch.setenv("INTBENCH_CACHE", str(tmp_path / "cache"))
    code = main([
        "eval", "--env", "IntBench-Math-Feedback-v0", "--teacher", "scripted:text=<feedback>Recheck.</feedback>",
        "--student", "scripted:text=\\boxed{1}", "-n", "3", "--k-max", "3", "--out", str(tmp_path / "fb"), "--no-progress",
    ])  # fmt: skip
    assert code == 0
    printed = capsys.readouterr().out
    assert "Feedback protocol" in printed and "acc@K" in printed and "AUC" in printed
    records = load_run(tmp_path / "fb")
    assert all(r["protocol"] == "feedback" and len(r["attempts"]) in (1, 3) for r in records)
    assert any(f["message"] == "Recheck." for r in records for f in r["feedback"])


def test_feedback_modes_are_comparable_on_the_same_problems(tmp_path, monkeypatch):
    """Teacher, self-refinement and self-feedback runs share problems and seeds; metrics compare them."""
    from intbench import metrics

    monkeypatch.setenv("INTBENCH_CACHE", str(tmp_path / "cache"))
    runs = {}
    for mode, teacher in [
        ("teacher", "scripted:text=<feedback>Recheck.</feedback>"),
        ("self_refine", "never"),
        ("self_feedback", "never"),
    ]:
        config = RunConfig(
            env_id="IntBench-Math-Feedback-v0", teacher=teacher, student="scripted:text=\\boxed{1}",
            n=4, seed=2, env_options={"mode": mode, "k_max": 3},
        )  # fmt: skip
        runs[mode] = run_eval(config, tmp_path / mode, concurrency=2, progress=False).episodes
    problem_sets = {mode: sorted(e["problem_id"] for e in eps) for mode, eps in runs.items()}
    assert problem_sets["teacher"] == problem_sets["self_refine"] == problem_sets["self_feedback"]
    first_attempts = {mode: [e["attempts"][0]["text"] for e in eps] for mode, eps in runs.items()}
    assert first_attempts["teacher"] == first_attempts["self_refine"]  # attempt 1 is shared
    for mode, eps in runs.items():
        summary = metrics.feedback_summary(eps)
        assert summary["k_max"] == 3 and len(summary["acc"]) == 3 and summary["n_episodes"] == 4
        # self-feedback is recorded as the matrix diagonal: the student's model as teacher
        diagonal = mode == "self_feedback"
        assert {e["condition"] for e in eps} == {"teacher" if diagonal else mode}
        if diagonal:
            assert {e["teacher"] for e in eps} == {"scripted:text=\\boxed{1}"}


def test_matrix_command(tmp_path, monkeypatch, capsys):
    from intbench.cli import main

    monkeypatch.setenv("INTBENCH_CACHE", str(tmp_path / "cache"))
    students = "scripted:text=\\boxed{1},scripted:text=\\boxed{2}"
    teachers = "scripted:text=<feedback>Look again.</feedback>,scripted:text=<feedback>Check units.</feedback>"
    code = main([
        "matrix", "--env", "IntBench-Math-Feedback-v0", "--students", students, "--teachers", teachers,
        "-n", "3", "--k-max", "2", "--out", str(tmp_path / "grid"), "--no-progress",
    ])  # fmt: skip
    assert code == 0
    printed = capsys.readouterr().out
    assert "Matrix analyses" in printed and "best − worst teacher" in printed
    assert not re.search(r"\bnan\b|'r2_student':", printed)  # tables, never raw dicts or nan
    assert (
        len(list((tmp_path / "grid").iterdir())) == 2 * 2 + 2
    )  # pairs + one self_refine per student


def test_matrix_pairs_run_at_once_with_the_episodes_of_one_at_a_time(tmp_path, monkeypatch):
    from intbench.cli import main
    from tests import scripted_students

    monkeypatch.setenv("INTBENCH_CACHE", str(tmp_path / "cache"))
    teachers = "scripted:text=<feedback>Look again.</feedback>,scripted:text=<feedback>Check units.</feedback>"
    grids = {}
    for pairs in (1, 3):
        scripted_students.OVERLAP["most"] = 0
        grid = tmp_path / f"grid{pairs}"
        code = main([
            "matrix", "--env", "IntBench-Math-Feedback-v0", "--teachers", teachers,
            "--students", "scripted:tests.scripted_students:overlapping", "-n", "2", "--k-max", "2",
            "--concurrency", "1", "--pairs", str(pairs), "--out", str(grid), "--no-progress",
        ])  # fmt: skip
        assert code == 0
        # one episode in flight per run: calls overlap only when the runs do
        most = scripted_students.OVERLAP["most"]
        assert most == 1 if pairs == 1 else most >= 2
        grids[pairs] = {
            run.name: sorted(
                (r["metadata"]["run_key"], r["solved_at"], len(r["attempts"]))
                for r in load_run(run)
            )
            for run in grid.iterdir()
        }
    assert grids[1] == grids[3] and len(grids[1]) == 3


def test_a_run_returns_only_after_its_warm_up_thread_ends(tmp_path, monkeypatch):
    """The warm-up (imports, NumPy) runs while the first requests wait; a run shorter than
    it still waits for it, so no NumPy call is left running in a daemon thread when a
    program exits right after (that aborted the interpreter: 'terminate called without an
    active exception')."""
    import threading

    from intbench import runner

    warmed = []
    real = runner.warm_estimates

    def warm_estimates(problems: int = 0) -> None:
        threading.Event().wait(0.5)  # longer than the whole run
        real(problems)
        warmed.append(problems)

    monkeypatch.setattr(runner, "warm_estimates", warm_estimates)
    monkeypatch.setenv("INTBENCH_CACHE", str(tmp_path / "cache"))  # the student is asked
    config = RunConfig(env_id="IntBench-Math-v0", teacher="never", student=SLOW, n=2)
    run_eval(config, tmp_path / "run", concurrency=2, progress=False)
    assert warmed == [2]
    assert not [t for t in threading.enumerate() if t.name == "intbench-warm"]
