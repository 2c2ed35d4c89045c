"""Decoding defaults follow each paper's setup; CPU caps are command-line choices."""

from __future__ import annotations

import gymnasium as gym
import pytest

import intbench  # noqa: F401  (registers the ids)
from intbench.agents.backends import load_backend
from intbench.runner import RunConfig, run_eval
from intbench.teachers import make_teacher

STUDENT = "scripted:text=We add the numbers and carry. So \\boxed{7}."


@pytest.mark.parametrize(
    ("env_id", "tokens"),
    [
        ("IntBench-OmniMath-Feedback-v0", 8192),  # feedback paper App. A.2
        ("IntBench-Codeforces-Feedback-v0", 8192),
        ("IntBench-Linguini-Feedback-v0", 8192),
        ("IntBench-ARC-Feedback-v0", 16000),  # "ARC-AGI uses max output tokens 16000"
    ],
)
def test_feedback_student_and_teacher_sampling_are_the_papers(env_id, tokens):
    env = gym.make(env_id, student=STUDENT, n=2).unwrapped
    student, teacher = env.student_sampling, env.teacher_sampling
    assert (student.temperature, student.top_p, student.max_tokens) == (0.7, 0.95, tokens)
    assert (teacher.temperature, teacher.top_p, teacher.max_tokens) == (1.0, 0.95, tokens)


def test_int_bench_students_and_teachers_sample_at_temperature_0_7():
    env = gym.make("IntBench-Math-v0", student=STUDENT, n=2).unwrapped
    assert env.student_sampling.temperature == 0.7  # Int-Bench §4.1
    teacher = make_teacher("scripted:text=Intervene: No", "monitor", "standard")
    assert teacher.sampling.temperature == 0.7
    tutor = make_teacher("scripted:text=Try a smaller case.", "tutor", None)
    assert tutor.sampling.temperature == 0.7  # KITE §4: temperature 0.7


def test_a_feedback_run_gives_its_model_teacher_the_envs_sampling(tmp_path, monkeypatch):
    monkeypatch.setenv("INTBENCH_CACHE", str(tmp_path / "cache"))
    seen = []
    import intbench.runner as runner

    real = runner.Engine

    class Spy(real):
        def __init__(self, executor, teacher, slots, **options):
            seen.append(teacher.sampling)
            super().__init__(executor, teacher, slots, **options)

    monkeypatch.setattr(runner, "Engine", Spy)
    config = RunConfig(
        env_id="IntBench-ARC-Feedback-v0",
        teacher="scripted:text=Look at the colours.",
        student=STUDENT,
        n=1,
        env_options={"k_max": 2},
    )
    run_eval(config, tmp_path / "run", concurrency=1, progress=False)
    assert (seen[0].temperature, seen[0].top_p, seen[0].max_tokens) == (1.0, 0.95, 16000)


def test_the_cli_cap_overrides_the_student_limit():
    from intbench.options import with_student_tokens

    options = with_student_tokens({}, max_tokens=192)
    env = gym.make("IntBench-Math-v0", student=STUDENT, n=2, **options).unwrapped
    assert env.student_sampling.max_tokens == 192


@pytest.mark.parametrize(
    "env_id", ["IntBench-Math-v0", "IntBench-ARC-Feedback-v0", "IntBench-Math-Tutor-v0"]
)
def test_the_embedded_student_gets_a_budget_sized_for_it(env_id, monkeypatch):
    """The papers' 8,192 tokens made ``gym.make(...)``/``reset`` with the embedded
    135M student run for minutes on a CPU; its default is 256 tokens, other students
    keep the papers' limits, and an explicit budget wins (no model loads here)."""
    from intbench.envs import common

    monkeypatch.setattr(common, "shared_backend", lambda spec: load_backend(STUDENT))
    embedded = gym.make(env_id, n=2).unwrapped
    assert embedded.student_sampling.max_tokens == common.EMBEDDED_STUDENT_TOKENS == 256
    assert (
        gym.make(env_id, student="smollm2?runtime=hf", n=2).unwrapped.student_sampling.max_tokens
        == 256
    )
    sized = gym.make(env_id, n=2, student_sampling={"max_tokens": 32}).unwrapped
    assert sized.student_sampling.max_tokens == 32
    paper = 16000 if "ARC" in env_id else 8192
    assert gym.make(env_id, student=STUDENT, n=2).unwrapped.student_sampling.max_tokens == paper
