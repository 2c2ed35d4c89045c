"""A human study: its configuration, the problems people see, and trials played on the monitor env.

A trial is an ordinary :class:`~intbench.envs.monitor.MonitorEnv` episode
whose actions come from a participant's clicks (played by a
:class:`~intbench.teachers.HumanTeacher`).  The server never keeps an
env alive between requests: a trial is *replayed* from what was persisted
(problem, env seed, how many increments were revealed, the final action), so
a restart loses nothing and the record is built by the env itself.  Seeds make
a replay give the same episode id and the same continuation seed every time.
"""

from __future__ import annotations

import json
import logging
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import gymnasium as gym

import intbench.envs  # noqa: F401  (registers the env ids that gym.spec looks up)
from intbench.agents.backends import backend_name
from intbench.agents.base import ChatBackend, Completion
from intbench.envs import flows
from intbench.envs.engine import run_flow
from intbench.options import option
from intbench.records import Episode, Problem
from intbench.teachers import HumanTeacher

logger = logging.getLogger(__name__)

CONDITIONS = ("standard", "oracle")
PENDING_ERROR = "pending: the student's continuation is running in the background"
"""What the placeholder continuation says; the env puts it in the record's ``error``."""


@dataclass
class StudyConfig:
    """Everything that decides which trials participants get (saved to ``DIR/study.json``).

    Attributes:
        env_id: a monitor env id, e.g. ``IntBench-Math-v0``.
        condition: ``"standard"`` or ``"oracle"``.
        problems: the study's problems; the first ``practice`` are the practice trials.
        student: the student model spec (or a backend object, for tests).
        trials: K, the number of scored trials per participant (capped by the problems
            left); 6, as in Int-Bench §4.2.
        practice: how many practice trials come before the comprehension check.
        seed: seeds each participant's trial order and env seeds.
        env_options: further MonitorEnv options (``increment``, ``post``, ...).
        completion_code: shown on the last page (study platforms ask for one).
    """

    env_id: str = option(help="monitor env id, e.g. IntBench-Math-v0", flag=False)
    condition: str = option(help="standard (the teacher watches the reasoning) or oracle")
    problems: list[Problem] = option(help="the study's problems, practice ones first", flag=False)
    student: str | ChatBackend = option("smollm2", help="student model spec")
    trials: int = option(6, help="scored trials per participant, K (Int-Bench §4.2)")
    practice: int = option(2, help="practice trials")
    seed: int = option(0, help="seeds the problem subset and trial orders")
    env_options: dict[str, Any] = option(
        default_factory=dict, help="further monitor env options", flag=False
    )
    completion_code: str | None = option(None, help="code shown on the last page (platforms)")

    def __post_init__(self) -> None:
        if self.condition not in CONDITIONS:
            raise ValueError(f"condition must be one of {CONDITIONS}, got {self.condition!r}")
        if self.trials < 1:
            raise ValueError(f"trials must be at least 1, got {self.trials}")
        if self.practice < 0:
            raise ValueError(f"practice must be >= 0, got {self.practice}")
        if len(self.problems) < self.practice + 1:
            raise ValueError(
                f"{len(self.problems)} problem(s) cannot give {self.practice} practice trial(s) "
                "and at least one scored trial"
            )
        ids = [p.id for p in self.problems]
        if len(set(ids)) != len(ids):
            raise ValueError("problem ids must be unique within a study")
        for key in ("condition", "student", "problems"):
            if key in self.env_options:
                raise ValueError(f"set {key!r} through the study, not env_options")
        spec = gym.spec(self.env_id)  # raises a clear error for unknown ids
        if not str(spec.entry_point).endswith(":MonitorEnv"):
            raise ValueError(
                f"{self.env_id} is not a monitor env; the human study runs the monitor protocol"
            )
        self.domain = spec.kwargs["domain"]

    @property
    def practice_problems(self) -> list[Problem]:
        return self.problems[: self.practice]

    @property
    def main_problems(self) -> list[Problem]:
        return self.problems[self.practice :]

    @property
    def student_spec(self) -> str:
        return backend_name(self.student)

    def fingerprint(self) -> dict:
        """The JSON form saved to ``study.json``: a restart must use the same study."""
        return json.loads(
            json.dumps(
                {
                    "env_id": self.env_id,
                    "condition": self.condition,
                    "problem_ids": [p.id for p in self.problems],
                    "student": self.student_spec,
                    "trials": self.trials,
                    "practice": self.practice,
                    "seed": self.seed,
                    "env_options": self.env_options,
                }
            )
        )


@dataclass
class ProblemView:
    """What the pages show for one problem (the same baseline for every participant)."""

    problem_id: str
    question: str
    reference: str
    trace: str
    cuts: list[int]  # revealed prefix lengths per Standard step, ending at len(trace)
    answer: str
    correct: bool | None  # baseline verdict; None when the grader could not decide
    error: str | None = None  # the baseline could not be generated


def make_env(config: StudyConfig, condition: str | None = None):
    """A fresh (unwrapped) monitor env over the study's problems."""
    return gym.make(
        config.env_id,
        student=config.student,
        problems=config.problems,
        condition=condition or config.condition,
        **config.env_options,
    ).unwrapped


def warm_up(
    config: StudyConfig, progress: Callable[[int, int, str], None] | None = None
) -> dict[str, ProblemView]:
    """Generate (or read from the cache) every problem's baseline and build its view.

    Runs each problem through a Standard episode that only waits, which is how
    the cut points of the increments are read off the env itself.
    """
    env = make_env(config, condition="standard")
    views = {}
    try:
        for number, problem in enumerate(config.problems, 1):
            obs, info = env.reset(seed=0, options={"problem_id": problem.id})
            reference = obs["reference"]
            cuts = [int(obs["revealed_chars"])]
            done = False
            while not done:
                obs, _, done, _, info = env.step({"intervene": 0, "message": ""})
                if not done:
                    cuts.append(int(obs["revealed_chars"]))
            record = env.last_episode
            baseline = record.baseline
            status = baseline.status
            views[problem.id] = ProblemView(
                problem_id=problem.id,
                question=problem.question,
                reference=reference,
                trace=baseline.text,
                cuts=cuts,
                answer="" if baseline.answer is None else str(baseline.answer),
                correct=None if status not in ("correct", "incorrect") else status == "correct",
                error=record.error,
            )
            if progress:
                progress(number, len(config.problems), problem.id)
    finally:
        env.close()
    return views


def print_progress(done: int, total: int, problem_id: str) -> None:
    """A one-line progress message for :func:`warm_up` on stderr."""
    end = "\n" if done == total else ""
    print(
        f"\rwarming the student cache: {done}/{total} problems ({problem_id})",
        end=end,
        file=sys.stderr,
        flush=True,
    )


class _DeferredStudent:
    """Serves flow requests but answers the student's continuation with a placeholder.

    The participant's page must never wait on the model: the record written on
    submission holds the intervention with a failed ``pending`` attempt, and the
    background worker replays the trial with the real model later.
    """

    def serve(self, requests: list) -> list:
        answers = []
        for request in requests:
            if isinstance(request, flows.Generate):
                answers.append(Completion(text="", finish_reason="error", error=PENDING_ERROR))
            else:
                answers.append(request.verifier(request.problem, request.text))
        return answers


def play_trial(
    config: StudyConfig, problem_id: str, env_seed: int, decision: dict, defer: bool
) -> Episode:
    """Replay a trial on a fresh env and return its episode record.

    ``decision`` is ``{"reveals": n, "action": {...}}``: Standard waits ``n``
    times and then takes ``action``; Oracle takes ``action`` at once.  With
    ``defer`` the student's continuation is a placeholder (see
    :class:`_DeferredStudent`); without it the configured student runs.
    """
    reveals = int(decision["reveals"]) if config.condition == "standard" else 0
    teacher = HumanTeacher(reveals, decision["action"])
    env = make_env(config)
    try:
        obs, info = env.reset(seed=env_seed, options={"problem_id": problem_id})
        teacher.reset(0)
        for step in range(reveals + 1):
            (action,) = teacher.act([0], [(obs, info)], [env_seed])
            if defer and teacher.decides_at(step):
                obs, _, done, _, info = run_flow(env.step_flow(action), _DeferredStudent())
            else:
                obs, _, done, _, info = env.step(action)
            if done and not teacher.decides_at(step):
                raise ValueError(
                    f"trial of {problem_id}: more reveals than the trace has increments"
                )
        if not done:
            # Standard "wait" before the end of the trace: not a final decision.
            raise ValueError(f"trial of {problem_id}: the decision did not end the episode")
        return env.last_episode
    finally:
        env.close()
