"""The teacher messages of a run, gathered from its episode records.

Both analyses work on the same items: every monitor intervention
(``record.intervention.message``) and every non-empty feedback message
(``record.feedback[i].message``).  Records carry the problem id but not
the problem, so the problems are read from the run directory or rebuilt from its config (the
same loader call the env made) unless the caller passes them.
"""

from __future__ import annotations

import bisect
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from intbench.envs.increments import cut_points
from intbench.metrics import teacher_label
from intbench.protocols import PROTOCOLS
from intbench.protocols.monitor import SPEC as MONITOR
from intbench.records import Attempt, Episode, Problem, as_episode
from intbench.rundir import RunDir

SELF_FEEDBACK = "self-feedback"
"""The teacher label of messages a student wrote for itself (feedback ``self_feedback`` mode)."""


DEFAULT_CHUNK = 50
"""The reveal unit when a record does not name one (Int-Bench's 50 characters)."""


class AnalysisError(ValueError):
    """The input cannot be analysed (no run, no problems, a bad taxonomy, ...); the message says why."""


_ROW_FIELDS = (
    "key",
    "episode_id",
    "problem_id",
    "domain",
    "protocol",
    "condition",
    "teacher",
    "turn",
)
"""The fields of a :class:`TeacherMessage` that identify it in every output row, in order."""


@dataclass(frozen=True)
class TeacherMessage:
    """One teacher message with the context the judge prompts need.

    Attributes:
        key: unique within a run: ``"<episode_id>:<turn>"`` (turn 0 for monitor).
        teacher: the teacher as reports group it (see :func:`teacher_label`).
        turn: feedback turn (attempts before the message); 0 for monitor.
        prefix: what the student had written when the message came: the
            baseline trace up to ``tau_abs`` (the whole trace when the
            intervention was not applied), or the failed feedback attempt.
        student_answer: the student's answer before the message: the
            baseline answer (monitor) or the failed attempt's answer.
        chunk_size: the increment the reasoning was revealed in (the run's
            ``increment``; 50 characters when the record does not say).
        at_chunk: the chunk (1-based) in which the message came: the last one
            the teacher had seen; all of them for a message after a whole attempt.
        total_chunks: the chunks of the whole reasoning.
    """

    key: str
    episode_id: str
    problem_id: str
    domain: str
    protocol: str
    condition: str | None
    teacher: str
    turn: int
    message: str
    prefix: str
    student_answer: Any
    chunk_size: int | str = DEFAULT_CHUNK
    at_chunk: int = 1
    total_chunks: int = 1

    def row(self) -> dict:
        """The identifying fields that every output row starts with."""
        return {name: getattr(self, name) for name in _ROW_FIELDS}


@dataclass
class Collected:
    """The messages of a set of records, and what was left out."""

    messages: list[TeacherMessage]
    n_episodes: int
    n_error_episodes: int  # episodes with ``error`` set: left out, as the metrics do


def _teacher_message(
    record: Episode,
    protocol: str,
    turn: int,
    teacher: str,
    message: str,
    answered: Attempt | None,
    prefix: str,
    trace: str,
    cut: int | None,
) -> TeacherMessage:
    """The ``message`` of ``record`` at ``turn``, given after the student's ``answered`` attempt
    when ``cut`` characters of ``trace`` were shown (``None``: all of it)."""
    chunk_size = record.config.get("increment", DEFAULT_CHUNK)
    try:
        cuts = cut_points(trace, chunk_size)
    except (TypeError, ValueError):  # an increment this version cannot read
        chunk_size = DEFAULT_CHUNK
        cuts = cut_points(trace, chunk_size)
    at_chunk = len(cuts) if cut is None else min(bisect.bisect_left(cuts, cut) + 1, len(cuts))
    return TeacherMessage(
        key=f"{record.episode_id}:{turn}",
        episode_id=record.episode_id,
        problem_id=record.problem_id,
        domain=record.domain,
        protocol=protocol,
        condition=record.condition,
        teacher=teacher,
        turn=turn,
        message=message,
        prefix=prefix,
        student_answer=answered.answer if answered else None,
        chunk_size=chunk_size,
        at_chunk=at_chunk,
        total_chunks=len(cuts),
    )


def intervention_messages(record: Episode) -> list[TeacherMessage]:
    """The message of the episode's intervention, if it has one (a monitor message)."""
    intervention = record.intervention
    message = intervention.message if intervention else None
    if intervention is None or not isinstance(message, str) or not message.strip():
        return []
    baseline = record.baseline
    trace = (baseline.text if baseline else "") or ""
    cut = intervention.tau_abs
    prefix = trace if cut is None else trace[:cut]
    teacher = teacher_label(record.teacher)
    return [
        _teacher_message(record, MONITOR.name, 0, teacher, message, baseline, prefix, trace, cut)
    ]


def no_messages(record: Episode) -> list[TeacherMessage]:
    """Protocols whose teacher messages are not analysed (tutor dialogues)."""
    return []


def feedback_messages(record: Episode) -> list[TeacherMessage]:
    """Each teacher (or self-) feedback turn with a message."""
    attempts = record.attempts
    items = []
    for entry in record.feedback:
        message = entry.message
        if not isinstance(message, str) or not message.strip():
            continue  # self-refinement turns carry no message
        turn = int(entry.turn)
        failed = attempts[turn - 1] if 0 < turn <= len(attempts) else None
        teacher = SELF_FEEDBACK if entry.source == "self" else teacher_label(record.teacher)
        prefix = (failed.text if failed else "") or ""
        # The whole failed attempt was read before the message: all its chunks were shown.
        args = (failed, prefix, prefix, None)
        items.append(_teacher_message(record, "feedback", turn, teacher, message, *args))
    return items


def collect_messages(records: Iterable[Episode | dict]) -> Collected:
    """Every teacher message of ``records`` (episodes with an error are left out and counted).

    Raises:
        AnalysisError: a record lacks ``episode_id``, ``problem_id`` or ``domain``.
    """
    messages: list[TeacherMessage] = []
    n_episodes = n_errors = 0
    for item in records:
        n_episodes += 1
        fields = item if isinstance(item, dict) else vars(item)
        missing = [k for k in ("episode_id", "problem_id", "domain") if not fields.get(k)]
        if missing:
            raise AnalysisError(f"episode record #{n_episodes} lacks {', '.join(missing)}")
        record = as_episode(item)
        if record.error:
            n_errors += 1
            continue
        # records of unregistered protocols (generalization runs) hold an intervention
        spec = PROTOCOLS.get(str(record.protocol))
        messages.extend(
            intervention_messages(record) if spec is None else spec.hook("teacher_messages")(record)
        )
    return Collected(messages, n_episodes, n_errors)


def load_run_problems(run_dir: str | os.PathLike, domains: Iterable[str]) -> dict[str, Problem]:
    """The problems of a run by id (see :meth:`intbench.rundir.RunDir.problems`).

    Raises:
        AnalysisError: the run's problems cannot be read or rebuilt here.
    """
    try:
        problems = RunDir(run_dir).problems()
    except Exception as exc:  # any loader failure means the same thing to the user
        raise AnalysisError(f"cannot read the problems of {run_dir}: {exc}") from exc
    wanted = set(domains)
    return {p.id: p for p in problems if p.domain in wanted}


def resolve_problem_map(
    run_dir: str | os.PathLike,
    problems: Mapping[str, Problem] | Iterable[Problem] | None,
    messages: list[TeacherMessage],
) -> dict[str, Problem]:
    """The problems by id: as given, else rebuilt from the run's config (only if there are messages)."""
    if problems is None:
        return load_run_problems(run_dir, {m.domain for m in messages}) if messages else {}
    if isinstance(problems, Mapping):
        return dict(problems)
    return {p.id: p for p in problems}
