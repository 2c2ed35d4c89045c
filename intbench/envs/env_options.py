"""The ``gym.make`` options of every env: one dataclass per protocol, on a shared base.

They live apart from the envs so that reading them (the CLI builds its flags from
their fields at every start) does not import the envs' models, prompts and verifiers.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from intbench.agents.base import ChatBackend
from intbench.envs.increments import parse_increment
from intbench.envs.rewards import resolve_weights
from intbench.options import option
from intbench.records import Problem


def check_choice(name: str, value: Any, choices: tuple) -> None:
    if value not in choices:
        raise ValueError(f"{name} must be one of {choices}, got {value!r}")


def check_count(name: str, value: Any, minimum: int) -> None:
    """``value`` must be an int (not a bool) of at least ``minimum``."""
    if not isinstance(value, int) or isinstance(value, bool) or value < minimum:
        kind = "a positive int" if minimum == 1 else f"an int >= {minimum}"
        raise ValueError(f"{name} must be {kind}, got {value!r}")


@dataclass
class EnvOptions:
    """The ``gym.make`` keyword arguments every protocol env takes; each env extends
    it with its own.  Every field's help is in its metadata (:func:`intbench.options.option`),
    which ``intbench eval --help`` prints.  The base env validates them when the env is
    built, so a bad value fails at ``gym.make``, not at the first ``reset``."""

    domain: str | None = option(
        None,
        help="problem domain, set by the registered id; an env built from problems of one "
        "domain may leave it out",
        flag=False,
    )
    student: str | ChatBackend = option(
        "smollm2", help="model spec or backend of the student", flag=False
    )
    source: str = option(
        "offline", help="where problems come from: offline, hub or a local file", flag=False
    )
    split: str | None = option(None, help="the source's split (the domain's default)", flag=False)
    n: int | None = option(None, help="number of problems (all)", flag=False)
    data_seed: int = option(0, help="seed of the problem subset", flag=False)
    problems: Sequence[Problem | dict] | None = option(
        None, help="an explicit list of Problem (or dicts) instead of a source", flag=False
    )
    judge: str | ChatBackend | None = option(
        None,
        help="model spec or backend of an LLM judge that verifies answers instead of the "
        "domain verifier",
        flag=False,
    )
    student_sampling: Mapping[str, Any] | None = option(
        None,
        help='the student\'s sampling options, e.g. {"temperature": 0} (T=0.7, top_p=0.95, '
        "max_tokens the domain's limit: 8,192, ARC 16,000, the embedded smollm2 256)",
    )
    student_seed: int = option(
        0,
        help="seed of the student's first, cached call; part of the cache key, so every "
        "teacher shares it per (problem, seed)",
    )
    cache_dir: str | None = option(
        None, help="where student calls are cached ($INTBENCH_CACHE or ~/.cache/intbench)"
    )
    variants: str | None = option(
        None,
        help="a variant set written by `intbench variants`, for a reward that reads transfer "
        "on problems not generated offline (generated ones get procedural variants)",
    )
    leak_judge: str | ChatBackend | None = option(
        None,
        help="model spec or backend of an LLM that judges whether each teacher message gives "
        "the answer away (the judge_leaked reward component; off without one)",
        flag=False,
    )
    render_mode: str | None = option(None, help="None or 'ansi'", flag=False)

    def __post_init__(self) -> None:
        if self.domain is None:
            self.domain = self._problems_domain()
        if self.render_mode not in (None, "ansi"):
            raise ValueError(f"render_mode must be None or 'ansi', got {self.render_mode!r}")

    def _problems_domain(self) -> str:
        """The one domain of the given ``problems``: there is no default domain."""
        domains = {
            p.domain if isinstance(p, Problem) else p.get("domain") for p in self.problems or ()
        }
        domain = domains.pop() if len(domains) == 1 else None
        if domain is None:
            raise ValueError("domain is required unless the problems given share one domain")
        return domain


# The monitor protocol (intbench.envs.monitor)
CONDITIONS = ("standard", "oracle")
POST_STRATEGIES = ("continue", "stop")
TEACHER_PROMPTS = {
    "paper": "teacher_standard",
    "v1": "teacher_standard_v1",
    "v2": "teacher_standard_v2",
    "append": "teacher_standard_append",
}
"""``teacher_prompt`` name -> Standard teacher template: the paper's prompt
(Int-Bench App. F.2), its two sensitivity-study variations (App. F.8,
Table 10) and the append-only layout of the paper's prompt."""


@dataclass
class MonitorOptions(EnvOptions):
    """The monitor env's ``gym.make`` keyword arguments, besides those of
    :class:`EnvOptions` (each field's help is in its metadata)."""

    condition: str = option("standard", help="standard or oracle")
    # The four fields below are export columns in this order.
    teacher_prompt: str = option(
        "paper",
        help="the teacher prompt: paper (the paper's Standard prompt, App. F.2), v1 or v2 (its "
        "Variations 1 and 2, App. F.8), or append (the paper's prompt with the reference "
        "before the transcript, so prompts share a growing prefix)",
        column="string",
    )
    post: str = option(
        "continue",
        help="after an intervention the student continues its reasoning, or must stop and "
        "answer at once",
        column="string",
    )
    increment: int | str = option(
        50,
        help="the reveal unit: characters (an int), sentence, or tokens:N",
        column="string",
    )
    teacher_access: bool = option(
        True, help="the teacher sees the reference solution", column="bool"
    )
    reward: str | Mapping[str, float] = option(
        "helpfulness",
        help="a preset (helpfulness, success, pedagogical, teaching, transfer) or a "
        "{component: weight} dict; every preset charges for a leaked answer",
    )

    def __post_init__(self) -> None:
        super().__post_init__()
        check_choice("condition", self.condition, CONDITIONS)
        check_choice("post", self.post, POST_STRATEGIES)
        if self.teacher_prompt not in TEACHER_PROMPTS:
            raise ValueError(
                f"teacher_prompt must be one of {sorted(TEACHER_PROMPTS)}, "
                f"got {self.teacher_prompt!r}"
            )
        parse_increment(self.increment)
        self.teacher_access = bool(self.teacher_access)


# The feedback protocol (intbench.envs.feedback)
MODES = ("teacher", "self_refine", "self_feedback", "self_critique")
REFERENCE_KINDS = ("none", "answer", "solution")
EXECUTION_CONTEXTS = ("structured", "feedback", "traceback", "none")
EXECUTION_TESTS = ("visible", "all")


@dataclass
class FeedbackOptions(EnvOptions):
    """The feedback env's ``gym.make`` keyword arguments, besides those of
    :class:`EnvOptions` (each field's help is in its metadata)."""

    k_max: int = option(10, help="maximum number of attempts (K)", column="int64")
    history: int = option(
        1,
        help="h, how many turns before the latest one the student and the teacher see "
        "(feedback paper §3: turns k..n, k = max(n - h, 0)); the task prompt is always kept, "
        "and so is the teacher's first attempt, which A.8's original teacher prompt carries",
        column="int64",
    )
    teacher_reference: str = option(
        "none",
        help="the privileged reference the teacher (never the student) sees: none, answer "
        "or solution",
        column="string",
    )
    execution_context: str = option(
        "structured",
        help="code domains: how test results are shown to the teacher: structured (the "
        "feedback paper's dense-matrix setting, Table 2), feedback, traceback or none",
        column="string",
    )
    execution_tests: str = option(
        "visible",
        help="code domains: which tests' inputs and outputs the execution context may show: "
        "visible (the problem's examples or a fixed share of its tests; grading still runs "
        "all) or all (the first failing graded test, as in the feedback paper)",
    )
    mode: str = option(
        "teacher",
        help="teacher, self_refine, self_feedback (the student's model as its own teacher, "
        "with the teacher prompt: the matrix diagonal) or self_critique (the student reviews "
        "its own attempt)",
    )
    reward: str | Mapping[str, float] = option(
        "success",
        help="a preset (success, auc, teaching, transfer) or a {component: weight} dict",
    )
    teacher_sampling: Mapping[str, Any] | None = option(
        None,
        help="sampling options of feedback written by the student's model (self_feedback, "
        "self_critique) and of a model teacher of `intbench eval` (T=1.0, top_p=0.95, the "
        "domain's limit: 8,192 tokens, ARC 16,000)",
    )

    def __post_init__(self) -> None:
        super().__post_init__()
        check_choice("mode", self.mode, MODES)
        check_choice("teacher_reference", self.teacher_reference, REFERENCE_KINDS)
        check_choice("execution_context", self.execution_context, EXECUTION_CONTEXTS)
        check_choice("execution_tests", self.execution_tests, EXECUTION_TESTS)
        resolve_weights(self.reward, "feedback")
        check_count("k_max", self.k_max, 1)
        check_count("history", self.history, 0)


# The tutor protocol (intbench.envs.tutor)
@dataclass
class TutorOptions(EnvOptions):
    """The tutor env's ``gym.make`` keyword arguments, besides those of
    :class:`EnvOptions` (each field's help is in its metadata).
    ``student_seed`` seeds the first phase-2 submission, cached and shared by every
    episode with the same solve prompt."""

    ideation_turns: int = option(3, help="teacher messages in phase 1; 0 is the solo condition")
    checker: str | ChatBackend | None = option(
        None,
        help="model spec or backend of the LLM checker (KITE §3: a secondary model withholds "
        "flagged messages), or rules; none: the run's judge model when one is configured, "
        "else rules, the offline fallback (summary.json names the one used)",
    )
    submissions: int | None = option(
        None, help="phase-2 submission budget (none: 10 for code domains, else 5)"
    )
    notes: bool = option(
        False, help="the student keeps a plan in its own words for phase 2 (KITE allows none)"
    )
    solo_tries: int | None = option(
        3,
        help="independent zero-shot tries of a solo episode, solved if any is correct (KITE "
        "§4.2: 1 of 3); none: phase 2's submissions",
    )
    checker_sampling: Mapping[str, Any] | None = option(
        None, help="sampling options of the LLM checker (greedy, 128 tokens)"
    )
    elo_selection: bool = option(
        False, help="draw problems by the student's Elo rating and update it"
    )
    calibration_tasks: int = option(
        5, help="solo episodes that calibrate the rating first (KITE: 5)"
    )
    reward: str | Mapping[str, float] = option(
        "success", help="a preset (success, teaching, transfer) or a {component: weight} dict"
    )

    def __post_init__(self) -> None:
        super().__post_init__()
        check_count("ideation_turns", self.ideation_turns, 0)
        check_count("calibration_tasks", self.calibration_tasks, 0)
        resolve_weights(self.reward, "tutor")
        self.elo_selection = bool(self.elo_selection)
        self.notes = bool(self.notes)
        if self.submissions is not None:
            check_count("submissions", self.submissions, 1)
        if self.solo_tries is not None:
            check_count("solo_tries", self.solo_tries, 1)
        checker = self.checker
        if checker is not None and (
            checker == "" or not (isinstance(checker, str) or hasattr(checker, "generate"))
        ):
            raise ValueError(f"checker must be 'rules', a model spec or a backend, got {checker!r}")

    @property
    def resolved_checker(self) -> str | ChatBackend:
        """The checker used: the one named, else the judge model, else the rules."""
        if self.checker is not None:
            return self.checker
        return "rules" if self.judge is None else self.judge
