"""Behaviour unchanged: scripted runs of every protocol give the committed records and metrics.

Each case plays four problems with a scripted student (and a scripted or policy
teacher) at a fixed seed, once through the runner (``intbench eval``) and once
through a single ``gym.make`` env stepped by hand with the runner's seeds.  Both
must reproduce ``tests/data/golden/<case>.jsonl`` and ``<case>.metrics.json``.

Only the scientific content is compared: actions, messages, texts, verdicts,
rewards, configuration and metrics.  Timings, token counts, cache flags, record
ids and run bookkeeping are dropped, so internal changes (caching, info dicts,
scheduling) that keep the results pass, and any change of a result fails.

After an intended change of results, rewrite the files with
``INTBENCH_GOLDEN_UPDATE=1 pytest tests/test_golden_runs.py`` and review the diff.
"""

from __future__ import annotations

import itertools
import json
import os
from pathlib import Path

import gymnasium as gym
import pytest

import intbench  # noqa: F401  (registers the ids)
from intbench.cli import main
from intbench.envs.registration import protocol_of
from intbench.metrics import summarize
from intbench.runner import RunConfig, episode_seed, load_run
from intbench.teachers import make_teacher

GOLDEN = Path(__file__).parent / "data" / "golden"
UPDATE = os.environ.get("INTBENCH_GOLDEN_UPDATE") == "1"
STUDENT = "scripted:tests.scripted_students:fixture_student"
N = 4
SEED = 0
SAMPLES = 200  # bootstrap resamples behind the metrics' intervals

FIXTURE_TEACHER = "scripted:tests.scripted_students:fixture_teacher"
CASES = {
    # case: (env id, teacher, env options); policy teachers and model teachers
    "monitor": ("IntBench-Math-v0", "random:0.3", {}),
    "monitor_oracle": ("IntBench-Math-v0", "at:0.5", {"condition": "oracle"}),
    "monitor_model": (
        "IntBench-Math-v0",
        "scripted:tests.scripted_students:fixture_monitor_teacher",
        {},
    ),
    "feedback": ("IntBench-Math-Feedback-v0", FIXTURE_TEACHER, {}),
    "tutor": ("IntBench-Math-Tutor-v0", FIXTURE_TEACHER, {}),
}

INCIDENTAL = {
    "seconds",  # wall-clock
    "timings",
    "tokens",  # usage accounting, not a result
    "prompt_tokens",
    "completion_tokens",
    "episode_id",
    "schema_version",
    "baseline_from_cache",
    # the runner's bookkeeping, which a hand-stepped env does not add
    "run_key",
    "problem_index",
    "repeat",
}


def scientific(value):
    """``value`` without the incidental fields, at any depth."""
    if isinstance(value, dict):
        return {k: scientific(v) for k, v in value.items() if k not in INCIDENTAL}
    if isinstance(value, list):
        return [scientific(v) for v in value]
    return value


def metrics(records: list[dict]) -> dict:
    """Every protocol's group summaries, as JSON values."""
    summary = summarize(records, samples=SAMPLES)
    groups = {**summary.monitor, **summary.feedback, **summary.tutor}
    return json.loads(
        json.dumps(
            {str(key): scientific(group) for key, group in groups.items()},
            default=lambda v: v.to_dict(),
        )
    )


def check_golden(case: str, records: list[dict]) -> None:
    records = [scientific(r) for r in records]
    got_metrics = metrics(records)
    records_path = GOLDEN / f"{case}.jsonl"
    metrics_path = GOLDEN / f"{case}.metrics.json"
    if UPDATE:
        GOLDEN.mkdir(parents=True, exist_ok=True)
        records_path.write_text(
            "".join(json.dumps(r, sort_keys=True) + "\n" for r in records), encoding="utf-8"
        )
        metrics_path.write_text(json.dumps(got_metrics, indent=1, sort_keys=True) + "\n")
    expected = [json.loads(line) for line in records_path.read_text(encoding="utf-8").splitlines()]
    assert len(records) == len(expected)
    for got, want in zip(records, expected, strict=True):
        assert got == want, f"{case}: episode {want['problem_id']} differs from {records_path}"
    # compared as canonical JSON text, where NaN (an empty group's estimate) equals NaN
    want_metrics = json.loads(metrics_path.read_text(encoding="utf-8"))
    assert json.dumps(got_metrics, sort_keys=True) == json.dumps(want_metrics, sort_keys=True)


@pytest.fixture(autouse=True)
def _cache(tmp_path, monkeypatch):
    monkeypatch.setenv("INTBENCH_CACHE", str(tmp_path / "cache"))


@pytest.mark.parametrize("case", CASES)
def test_runner_reproduces_the_golden_run(case, tmp_path, capsys):
    env_id, teacher, options = CASES[case]
    out = tmp_path / "run"
    flags = [f"--{name}={value}" for name, value in options.items()]
    code = main([
        "eval", "--env", env_id, "--teacher", teacher, "--student", STUDENT, *flags,
        "-n", str(N), "--seed", str(SEED), "--out", str(out), "--no-progress",
    ])  # fmt: skip
    assert code == 0, capsys.readouterr().err
    records = sorted(load_run(out), key=lambda r: r["metadata"]["problem_index"])
    assert [r["teacher"] for r in records] == [teacher] * N
    check_golden(case, records)


@pytest.mark.parametrize("case", CASES)
def test_single_env_reproduces_the_golden_run(case):
    """``gym.make`` and a step loop with the runner's seeds give the runner's records."""
    env_id, spec, options = CASES[case]
    config = RunConfig(env_id=env_id, teacher=spec, student=STUDENT, n=N, seed=SEED)
    env = gym.make(env_id, student=STUDENT, source="offline", n=N, data_seed=SEED, **options)
    unwrapped = env.unwrapped
    teacher = make_teacher(
        spec,
        protocol_of(env_id),
        getattr(unwrapped, "condition", None),
        getattr(unwrapped, "teacher_sampling", None),  # the feedback env's own
    )
    records = []
    for index in range(N):
        key = f"{index}:0"
        seed = episode_seed(config, key)
        teacher_seeds = itertools.count(seed)
        teacher.reset(0, key)
        obs, info = env.reset(seed=seed, options={"problem_index": index, "student_seed": SEED})
        done = False
        while not done:
            (action,) = teacher.act([0], [(obs, info)], [next(teacher_seeds)])
            obs, _, terminated, truncated, info = env.step(action)
            done = terminated or truncated
        episode = unwrapped.last_episode
        teacher.finish(0, episode)  # a model teacher adds its raw replies
        episode.teacher = episode.teacher or spec
        records.append(episode.to_dict())
    env.close()
    check_golden(case, records)
