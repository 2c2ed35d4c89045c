"""Core records: problems, verdicts and episodes.

Every record is a plain dataclass that turns into JSON-ready dicts with
``to_dict`` and back with ``from_dict``; an :class:`Episode` holds its parts
(:class:`Attempt`, :class:`Step`, :class:`Intervention`, :class:`FeedbackTurn`)
as typed records.  Metrics, reports and training data are computed from these
records, never from live environment objects, so the on-disk format is the
contract: ``Episode.schema_version`` is bumped whenever a field changes meaning.

``DOMAINS`` is the tuple of registered domain names, read from
:mod:`intbench.envs.domains.registry` at each access.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import uuid
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal, TypeVar

VerdictStatus = Literal["correct", "incorrect", "error"]
VERDICT_STATUSES = ("correct", "incorrect", "error")

EPISODE_SCHEMA_VERSION = 1


def _registry():
    # Imported on use: the domains package imports this module while it
    # registers the built-in domains.
    from intbench.envs.domains import registry

    return registry


def __getattr__(name: str) -> Any:
    # DOMAINS follows the registry, which third-party domains join after import.
    if name == "DOMAINS":
        return _registry().domain_names()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _from_known_fields(cls, data: dict) -> Any:
    """Build a dataclass from a dict, refusing unknown keys (typos are bugs)."""
    fields = _field_set(cls)
    if not fields.issuperset(data):
        raise ValueError(f"{cls.__name__}: unknown field(s) {sorted(data.keys() - fields)}")
    return cls(**data)


@dataclass
class Problem:
    """One problem of a domain.

    Attributes:
        id: stable identifier, unique within its source (e.g. ``"math/test/algebra/1234"``).
        domain: a registered domain (:data:`DOMAINS`).
        question: the problem statement as shown to the student.
        answer: reference final answer: a string for math/text domains, the
            list of test output grids for ARC, ``None`` for code domains.
        solution: reference worked solution (text) or reference program (code).
        tests: test cases for code domains, ``None`` elsewhere. Either
            ``{"kind": "stdio", "cases": [{"input": str, "output": str}, ...]}`` or
            ``{"kind": "function", "entry_point": str, "setup": str,
            "cases": [{"code": str}, ...]}`` where each case's code runs with
            ``candidate`` bound to the entry point.  Optional ``time_limit_s``
            (per test) and ``memory_limit_mb`` keys carry the problem's limits.
        fields: the domain's own fields (ARC training pairs, buggy code for
            debugging, accepted aliases for teasers, ...).
        metadata: provenance and labels: ``source``, ``split``, ``license``,
            ``difficulty``, ``skill``, ``topic``, generator ``seed``, ...
    """

    id: str
    domain: str
    question: str
    answer: Any = None
    solution: str | None = None
    tests: dict | None = None
    fields: dict = field(default_factory=dict)
    metadata: dict = field(default_factory=dict)

    def __post_init__(self) -> None:
        registry = _registry()
        if not registry.is_registered(self.domain):
            raise ValueError(
                f"unknown domain {self.domain!r}; expected one of {registry.domain_names()}"
            )

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: dict) -> Problem:
        return _from_known_fields(cls, dict(data))


@dataclass
class Verdict:
    """The result of checking one response.

    ``status`` is three-valued: ``"error"`` means the grader could not decide
    (crash, timeout, unparsable judge output) and must never be read as a
    wrong answer.  ``score`` is in [0, 1] (a pass rate for code, 1/0 otherwise).
    """

    status: VerdictStatus
    score: float = 0.0
    answer: Any = None
    feedback: str = ""
    details: dict = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.status not in VERDICT_STATUSES:
            raise ValueError(
                f"verdict status must be one of {VERDICT_STATUSES}, got {self.status!r}"
            )

    @property
    def correct(self) -> bool:
        return self.status == "correct"

    @classmethod
    def error(cls, feedback: str, **details: Any) -> Verdict:
        return cls(status="error", score=0.0, feedback=feedback, details=details)

    def to_dict(self) -> dict:
        data = _record_dict(self)
        data["correct"] = self.correct
        return data

    @classmethod
    def from_dict(cls, data: dict) -> Verdict:
        data = dict(data)
        data.pop("correct", None)
        return _from_known_fields(cls, data)


_SCALARS = (str, int, float, bool, type(None))


def _plain(value: Any) -> Any:
    """A JSON-ready copy of ``value``: nested records become their dicts."""
    if isinstance(value, _SCALARS):  # most values: tested first, as the walk runs per step
        return value
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if hasattr(value, "to_dict"):
        return value.to_dict()
    return value


@functools.cache
def _field_names(cls: type) -> tuple[str, ...]:
    return tuple(f.name for f in dataclasses.fields(cls))


@functools.cache
def _field_set(cls: type) -> frozenset[str]:
    return frozenset(_field_names(cls))


def _record_dict(record: Any) -> dict:
    """``dataclasses.asdict`` that lets nested records write their own dicts."""
    return {name: _plain(getattr(record, name)) for name in _field_names(record.__class__)}


_R = TypeVar("_R", bound="_Record")


class _Record:
    """The dict round trip of an episode's parts (and of the episode itself).

    ``_PARTS`` names the fields that hold one nested record, read back with
    that record's own ``from_dict``.
    """

    _PARTS: ClassVar[dict[str, Any]] = {}

    def to_dict(self) -> dict:
        return _record_dict(self)

    @classmethod
    def from_dict(cls: type[_R], data: dict) -> _R:
        data = dict(data)
        for name, part in cls._PARTS.items():
            if data.get(name) is not None:
                data[name] = part.from_dict(data[name])
        return _from_known_fields(cls, data)


@dataclass
class Attempt(_Record):
    """One student output that was verified: a baseline, a continuation after
    an intervention, or an attempt of the feedback or tutor protocol."""

    _PARTS = {"verdict": Verdict}

    text: str
    answer: Any = None
    verdict: Verdict | None = None
    prompt_tokens: int = 0
    completion_tokens: int = 0
    seconds: float = 0.0
    finish_reason: str | None = None
    error: str | None = None  # the model call failed; there is no answer to score

    @property
    def status(self) -> VerdictStatus | None:
        """The verdict's status, ``None`` when the attempt was never graded."""
        return self.verdict.status if self.verdict else None

    @property
    def correct(self) -> bool:
        return self.status == "correct"


@dataclass(kw_only=True)
class Step(_Record):
    """One teacher decision; :class:`MonitorStep` and :class:`TutorStep` add
    what their protocol records."""

    step: int
    message: str | None = None
    action_error: str | None = None  # the action was malformed and counted as no message


@dataclass(kw_only=True)
class MonitorStep(Step):
    """A monitor decision after ``revealed_chars`` characters of the trace."""

    revealed_chars: int
    action: Literal["intervene", "wait"]


@dataclass(kw_only=True)
class TutorStep(Step):
    """A tutor ideation turn: the student's message it answered and the checker's verdict."""

    student_message: str | None = None
    withheld: bool = False
    check: dict | None = None


STEP_TYPES: dict[str, type[Step]] = {"monitor": MonitorStep, "tutor": TutorStep}
"""The step record of each protocol that takes steps."""


@dataclass
class Intervention(_Record):
    """The monitor intervention: where it was placed and what the student did after it.

    ``tau_abs``/``tau_rel`` are ``None`` when it was not applied (an oracle
    quote that could not be located or pointed into the final answer:
    ``excluded`` says why).  ``attempt`` is the student's continuation.
    """

    _PARTS = {"attempt": Attempt}

    message: str | None
    position: int | None = None
    tau_abs: int | None = None
    tau_rel: float | None = None
    quote_stage: str | None = None
    excluded: str | None = None
    post: str | None = None
    leaked: bool = False
    attempt: Attempt | None = None

    @property
    def applied(self) -> bool:
        return not self.excluded and self.tau_abs is not None


@dataclass
class FeedbackTurn(_Record):
    """The teacher feedback given before retry ``turn`` of the feedback protocol."""

    turn: int
    message: str | None
    source: str | None = None
    leaked: bool = False
    action_error: str | None = None


@dataclass
class Episode(_Record):
    """The one record every protocol writes (monitor, feedback, tutor, human).

    Fields a protocol does not use keep their empty defaults.

    Attributes:
        protocol: ``"monitor"``, ``"feedback"`` or ``"tutor"``.
        condition: monitor ``"standard"``/``"oracle"``; feedback mode
            (``"teacher"``, ``"self_refine"``, ``"self_critique"``; self-feedback is
            ``"teacher"`` with the student's own model as teacher); tutor phase set.
        student, teacher, judge: model specs (``"human:<id>"`` for people).
        config: the env options that shaped the episode (increment, post, ...).
        baseline: the student's unassisted attempt (monitor protocol).
        steps: one :class:`Step` per teacher decision (monitor and tutor).
        intervention: the monitor intervention, if any.
        attempts: feedback/tutor attempts in order.
        feedback: the teacher message given before each feedback retry.
        solved_at: 1-based attempt index of the first correct attempt, or ``None``.
        reward, reward_components: what the env returned, with its parts.
        tokens: token counts per role; timings: seconds per phase.
        error: set when a model or grader failed; such episodes are retried on resume.
    """

    _PARTS = {"baseline": Attempt, "intervention": Intervention}

    protocol: str
    problem_id: str
    domain: str
    student: str
    teacher: str | None = None
    judge: str | None = None
    condition: str | None = None
    seed: int | None = None
    config: dict = field(default_factory=dict)
    baseline: Attempt | None = None
    steps: list[Step] = field(default_factory=list)
    intervention: Intervention | None = None
    attempts: list[Attempt] = field(default_factory=list)
    feedback: list[FeedbackTurn] = field(default_factory=list)
    solved_at: int | None = None
    reward: float = 0.0
    reward_components: dict = field(default_factory=dict)
    tokens: dict = field(default_factory=dict)
    timings: dict = field(default_factory=dict)
    metadata: dict = field(default_factory=dict)
    error: str | None = None
    episode_id: str = field(default_factory=lambda: uuid.uuid4().hex)
    schema_version: int = EPISODE_SCHEMA_VERSION

    @property
    def applied_intervention(self) -> Intervention | None:
        """The intervention if it was applied (not excluded), else ``None``."""
        return self.intervention if self.intervention and self.intervention.applied else None

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), ensure_ascii=False)

    @classmethod
    def from_dict(cls, data: dict) -> Episode:
        data = dict(data)
        version = data.get("schema_version", EPISODE_SCHEMA_VERSION)
        if version > EPISODE_SCHEMA_VERSION:
            raise ValueError(
                f"episode schema version {version} is newer than this intbench "
                f"({EPISODE_SCHEMA_VERSION}); upgrade intbench to read it"
            )
        step_type = STEP_TYPES.get(data.get("protocol", ""), Step)
        for name, part in (("steps", step_type), ("attempts", Attempt), ("feedback", FeedbackTurn)):
            data[name] = [part.from_dict(item) for item in data.get(name) or []]
        return super().from_dict(data)


def as_episode(record: Episode | dict) -> Episode:
    """``record`` as an :class:`Episode` (a dict as written to JSONL is parsed)."""
    return record if isinstance(record, Episode) else Episode.from_dict(record)


def as_episodes(records: Iterable[Episode | dict]) -> list[Episode]:
    """:func:`as_episode` of each record, for functions that take either form."""
    return [as_episode(r) for r in records]
