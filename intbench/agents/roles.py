"""The three model roles: the student, the teacher and the judge.

Each role owns its prompt templates (from :mod:`intbench.envs.domains.prompting`)
and the parsing of its output, and talks to any
:class:`~intbench.agents.base.ChatBackend`.  Every method takes a list of
requests and makes ONE batched ``generate`` call for all of them, so many
episodes can share a model.

Model output never raises: empty, truncated or off-format replies (and
backend errors reported on a completion) give a defined result with
``error`` set and a ``logging`` warning.  Malformed teacher decisions count as
*wait* / no intervention; a student reply without a final answer is simply
verified (the verifier says incorrect or error).

Templates render with ``problem.domain`` unless the role was built for one
``domain`` (then every problem must belong to it).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from intbench.agents.base import ChatBackend, Completion, Conversation, SamplingParams
from intbench.agents.incremental import DecisionResult, KVCacheDecider, ServerDecider
from intbench.agents.parsing import parse_feedback, parse_monitor_decision, parse_oracle_decision
from intbench.envs.domains.prompting import render, render_messages, render_system
from intbench.records import Attempt, Problem, Verdict
from intbench.verifiers import verify

logger = logging.getLogger(__name__)

MONITOR_VARIANTS = {
    "default": "teacher_standard",
    "v2": "teacher_standard_v2",
    "v3": "teacher_standard_v3",
    "append": "teacher_standard_append",
}
"""Standard teacher prompt variants: the paper's template, its two rewordings
from the sensitivity study, and the append-only (cache-friendly) variant."""

REFERENCE_KINDS = ("none", "answer", "solution")


def _generate(
    backend: ChatBackend, batch: list[Conversation], params: SamplingParams
) -> tuple[list[Completion], float]:
    """One batched call; returns the completions and the seconds per request."""
    if not batch:
        return [], 0.0
    start = time.perf_counter()
    completions = backend.generate(batch, params)
    if len(completions) != len(batch):
        raise RuntimeError(
            f"backend {getattr(backend, 'spec', backend)!r} returned {len(completions)} "
            f"completions for {len(batch)} prompts"
        )
    return completions, (time.perf_counter() - start) / len(batch)


class _Role:
    """Shared plumbing: backend, sampling defaults and template domain."""

    def __init__(
        self, backend: ChatBackend, domain: str | None, sampling: SamplingParams | None
    ) -> None:
        if not hasattr(backend, "generate"):
            raise TypeError(f"backend must have .generate(), got {type(backend).__name__}")
        self.backend = backend
        self.domain = domain
        self.sampling = sampling or self.default_sampling()

    @staticmethod
    def default_sampling() -> SamplingParams:
        return SamplingParams()

    def _domain_of(self, problem: Problem) -> str:
        if self.domain is not None and problem.domain != self.domain:
            raise ValueError(
                f"{type(self).__name__} is for domain {self.domain!r}; "
                f"problem {problem.id!r} is {problem.domain!r}"
            )
        return self.domain or problem.domain

    def _messages(self, problem: Problem, template: str, **variables: Any) -> Conversation:
        return render_messages(self._domain_of(problem), template, problem=problem, **variables)


# --------------------------------------------------------------------------- student


@dataclass
class ContinueRequest:
    """The revealed prefix of the student's trace and the teacher's message."""

    problem: Problem
    prefix: str
    message: str


@dataclass
class AttemptRequest:
    """A feedback-protocol attempt.

    ``history`` holds the attempts shown to the student (up to ``h``), oldest
    first, each ``{"attempt": text, "feedback": text or None}``; its last entry
    is the latest failed attempt.  Empty for the first attempt.  ``feedback``
    is the teacher's message on that latest attempt, or ``None`` for
    self-refinement (retry without feedback).
    """

    problem: Problem
    history: Sequence[dict] = ()
    feedback: str | None = None


class Student(_Role):
    """The problem solver.  Every method returns one :class:`~intbench.records.Attempt`
    per request, with its final answer and verdict from the domain's verifier
    (skip verification with ``verify_answers=False``, e.g. when the caller
    verifies in a thread pool)."""

    def __init__(
        self,
        backend: ChatBackend,
        domain: str | None = None,
        sampling: SamplingParams | None = None,
        *,
        verify_answers: bool = True,
    ) -> None:
        super().__init__(backend, domain, sampling)
        self.verify_answers = verify_answers

    def baseline(self, problems: Sequence[Problem]) -> list[Attempt]:
        """The unassisted attempt at each problem (``student_baseline``)."""
        batch = [self._messages(p, "student_baseline") for p in problems]
        return self._attempts(problems, batch)

    def continue_after(self, requests: Sequence[ContinueRequest]) -> list[Attempt]:
        """Continue each prefix after the teacher's ``<update>`` message (``student_continue``).

        The attempt's text is the continuation only; it is verified on its own
        because the final answer comes after the intervention.
        """
        batch = [
            self._messages(r.problem, "student_continue", prefix=r.prefix, message=r.message)
            for r in requests
        ]
        return self._attempts([r.problem for r in requests], batch)

    def stop_and_answer(self, requests: Sequence[ContinueRequest]) -> list[Attempt]:
        """Answer at once after the teacher's message (``student_stop_answer``)."""
        batch = [
            self._messages(r.problem, "student_stop_answer", prefix=r.prefix, message=r.message)
            for r in requests
        ]
        return self._attempts([r.problem for r in requests], batch)

    def attempt(self, requests: Sequence[AttemptRequest]) -> list[Attempt]:
        """A feedback-protocol attempt: ``feedback_student`` for the first one,
        ``feedback_student_retry`` (with the history and the feedback, or
        self-refinement wording when ``feedback`` is ``None``) afterwards."""
        batch = []
        for r in requests:
            if r.history:
                history = [dict(entry) for entry in r.history]
                batch.append(
                    self._messages(
                        r.problem,
                        "feedback_student_retry",
                        history=history,
                        feedback_text=r.feedback,
                    )
                )
            else:
                batch.append(self._messages(r.problem, "feedback_student"))
        return self._attempts([r.problem for r in requests], batch)

    def self_feedback(self, requests: Sequence[FeedbackRequest]) -> list[FeedbackResult]:
        """The student critiques its own latest attempt (``feedback_self_feedback``)."""
        batch = [
            self._messages(
                r.problem,
                "feedback_self_feedback",
                history=[dict(e) for e in r.history],
                latest_attempt=r.latest_attempt,
                execution_context=r.execution_context,
            )
            for r in requests
        ]
        completions, seconds = _generate(self.backend, batch, self.sampling)
        return [_feedback_result(c, seconds) for c in completions]

    def _attempts(self, problems: Sequence[Problem], batch: list[Conversation]) -> list[Attempt]:
        completions, seconds = _generate(self.backend, batch, self.sampling)
        return [self._attempt(p, c, seconds) for p, c in zip(problems, completions, strict=True)]

    def _attempt(self, problem: Problem, completion: Completion, seconds: float) -> Attempt:
        text = completion.text if isinstance(completion.text, str) else ""
        attempt = Attempt(
            text=text,
            prompt_tokens=completion.prompt_tokens,
            completion_tokens=completion.completion_tokens,
            seconds=seconds,
            finish_reason=completion.finish_reason,
        )
        if completion.error:
            # The model never answered: a grader-side error, not a wrong answer.
            logger.warning("student generation failed on %s: %s", problem.id, completion.error)
            attempt.verdict = Verdict.error(f"generation failed: {completion.error}")
            attempt.finish_reason = "error"
        elif self.verify_answers:
            verdict = verify(problem, text)
            attempt.answer = verdict.answer
            attempt.verdict = verdict
        return attempt


# --------------------------------------------------------------------------- teacher


@dataclass
class MonitorRequest:
    """The Standard teacher's view at one increment."""

    problem: Problem
    transcript: str
    reference: str | None = None


@dataclass
class OracleRequest:
    """The Oracle teacher's view: the whole trace, the answer and its verdict."""

    problem: Problem
    transcript: str
    student_answer: str
    verdict: str  # "correct" / "incorrect"
    reference: str | None = None


@dataclass
class OracleResult:
    """An Oracle decision; malformed output means no intervention (``error`` set)."""

    intervene: bool
    quote: str | None = None
    message: str | None = None
    text: str = ""
    error: str | None = None
    prompt_tokens: int = 0
    completion_tokens: int = 0
    seconds: float = 0.0


@dataclass
class FeedbackRequest:
    """What the feedback teacher sees after a failed attempt.

    ``reference_kind`` is ``"none"``, ``"answer"`` or ``"solution"`` (the
    teacher's privileged information); ``execution_context`` holds code
    execution results, if any.
    """

    problem: Problem
    latest_attempt: str
    history: Sequence[dict] = ()
    execution_context: str | None = None
    reference: str | None = None
    reference_kind: str = "none"


@dataclass
class FeedbackResult:
    """A feedback message (the ``<feedback>`` content, else the raw reply).

    ``error`` is set for empty or unusable replies; ``message`` is then what
    could be recovered (possibly ``""``).
    """

    message: str
    tagged: bool = False
    text: str = ""
    error: str | None = None
    prompt_tokens: int = 0
    completion_tokens: int = 0
    seconds: float = 0.0


def _feedback_result(completion: Completion, seconds: float) -> FeedbackResult:
    text = completion.text if isinstance(completion.text, str) else ""
    parsed = parse_feedback(text)
    error = completion.error or parsed.error
    if error:
        logger.warning("feedback output unusable (%s): %r", error, text[:200])
    return FeedbackResult(
        message="" if completion.error else parsed.text,
        tagged=parsed.tagged,
        text=text,
        error=error,
        prompt_tokens=completion.prompt_tokens,
        completion_tokens=completion.completion_tokens,
        seconds=seconds,
    )


class Teacher(_Role):
    """The teacher: Standard monitor decisions, Oracle decisions and feedback.

    Args:
        backend: the teacher model.
        domain: render every prompt with this domain's templates (``None``: each
            problem's own).
        variant: Standard prompt variant, one of :data:`MONITOR_VARIANTS`.
        chunk_size: the increment size named in the Standard prompt.
        sampling: defaults to greedy with 256 tokens.
    """

    def __init__(
        self,
        backend: ChatBackend,
        domain: str | None = None,
        *,
        variant: str = "default",
        chunk_size: int | str = 50,
        sampling: SamplingParams | None = None,
    ) -> None:
        if variant not in MONITOR_VARIANTS:
            raise ValueError(f"variant must be one of {sorted(MONITOR_VARIANTS)}, got {variant!r}")
        super().__init__(backend, domain, sampling)
        self.variant = variant
        self.chunk_size = chunk_size

    @staticmethod
    def default_sampling() -> SamplingParams:
        return SamplingParams(temperature=0.0, max_tokens=256)

    def monitor_messages(self, request: MonitorRequest) -> Conversation:
        """The Standard prompt for one increment."""
        return self._messages(
            request.problem,
            MONITOR_VARIANTS[self.variant],
            transcript=request.transcript,
            chunk_size=self.chunk_size,
            reference=request.reference,
        )

    def monitor(self, requests: Sequence[MonitorRequest]) -> list[DecisionResult]:
        """One Standard decision per request, in one batched call (full prompts,
        no cache reuse; see :meth:`monitor_session` for incremental episodes)."""
        batch = [self.monitor_messages(r) for r in requests]
        completions, seconds = _generate(self.backend, batch, self.sampling)
        return [_monitor_result(c, seconds) for c in completions]

    def monitor_session(self, problem: Problem, reference: str | None = None) -> MonitorSession:
        """An incremental decider for one episode of ``problem``: reuses the KV
        cache with local transformers backends (those exposing ``.model`` and
        ``.tokenizer``), else sends cache-friendly requests to the backend."""
        return MonitorSession(self, problem, reference)

    def oracle(self, requests: Sequence[OracleRequest]) -> list[OracleResult]:
        """One Oracle decision per request (``teacher_oracle``)."""
        batch = [
            self._messages(
                r.problem,
                "teacher_oracle",
                transcript=r.transcript,
                student_answer=r.student_answer,
                verdict=r.verdict,
                reference=r.reference,
            )
            for r in requests
        ]
        completions, seconds = _generate(self.backend, batch, self.sampling)
        return [_oracle_result(c, seconds) for c in completions]

    def feedback(self, requests: Sequence[FeedbackRequest]) -> list[FeedbackResult]:
        """One feedback message per failed attempt (``feedback_teacher``)."""
        batch = []
        for r in requests:
            if r.reference_kind not in REFERENCE_KINDS:
                raise ValueError(
                    f"reference_kind must be one of {REFERENCE_KINDS}, got {r.reference_kind!r}"
                )
            batch.append(
                self._messages(
                    r.problem,
                    "feedback_teacher",
                    history=[dict(e) for e in r.history],
                    latest_attempt=r.latest_attempt,
                    execution_context=r.execution_context,
                    reference=r.reference,
                    reference_kind=r.reference_kind,
                )
            )
        completions, seconds = _generate(self.backend, batch, self.sampling)
        return [_feedback_result(c, seconds) for c in completions]


def _monitor_result(completion: Completion, seconds: float) -> DecisionResult:
    text = completion.text if isinstance(completion.text, str) else ""
    parsed = parse_monitor_decision(text)
    error = completion.error or parsed.error
    if error:
        logger.warning("monitor output treated as wait: %s (%r)", error, text[:200])
    intervene = error is None and parsed.intervene is True
    return DecisionResult(
        intervene=intervene,
        message=parsed.message if intervene else None,
        time=parsed.time,
        text=text,
        error=error,
        prompt_tokens=completion.prompt_tokens,
        prefilled_tokens=completion.prompt_tokens,
        generated_tokens=completion.completion_tokens,
        seconds=seconds,
    )


def _oracle_result(completion: Completion, seconds: float) -> OracleResult:
    text = completion.text if isinstance(completion.text, str) else ""
    parsed = parse_oracle_decision(text)
    error = completion.error or parsed.error
    if error:
        logger.warning("oracle output treated as no intervention: %s (%r)", error, text[:200])
    intervene = error is None and parsed.intervene is True
    return OracleResult(
        intervene=intervene,
        quote=parsed.quote if intervene else None,
        message=parsed.message if intervene else None,
        text=text,
        error=error,
        prompt_tokens=completion.prompt_tokens,
        completion_tokens=completion.completion_tokens,
        seconds=seconds,
    )


class MonitorSession:
    """Incremental Standard decisions for one episode (see :mod:`intbench.agents.incremental`).

    Call :meth:`decide` with the transcript revealed so far, once per
    increment; the prompt only grows, so the deciders reuse the shared prefix.
    """

    def __init__(self, teacher: Teacher, problem: Problem, reference: str | None = None) -> None:
        self.teacher = teacher
        self.problem = problem
        self.reference = reference
        params = teacher.sampling
        backend = teacher.backend
        model, tokenizer = getattr(backend, "model", None), getattr(backend, "tokenizer", None)
        if model is not None and tokenizer is not None:
            self.decider: KVCacheDecider | ServerDecider = KVCacheDecider(
                model,
                tokenizer,
                temperature=params.temperature,
                top_p=params.top_p,
                max_message_tokens=params.max_tokens,
                seed=params.seed,
                render=getattr(backend, "render", None),
            )
        else:
            self.decider = ServerDecider(
                backend,
                temperature=params.temperature,
                seed=params.seed,
                message_max_tokens=params.max_tokens,
            )

    @property
    def stats(self):
        """The decider's cost counters (:class:`~intbench.agents.incremental.DecisionStats`)."""
        return self.decider.stats

    def decide(self, transcript: str) -> DecisionResult:
        """The decision after ``transcript`` (the revealed prefix) has been shown."""
        request = MonitorRequest(self.problem, transcript, self.reference)
        return self.decider.decide(self.teacher.monitor_messages(request))


# --------------------------------------------------------------------------- judge


@dataclass
class _JudgeReplies:
    """Answers computed in one batch, served to the verifier one by one."""

    replies: dict[str, str] = field(default_factory=dict)

    def __call__(self, messages: Conversation) -> str:
        key = messages[-1]["content"]
        if key not in self.replies:
            raise RuntimeError("judge prompt was not part of the batch")
        return self.replies[key]


class Judge:
    """The LLM judge: the ``judge`` prompt template scored by
    :class:`~intbench.verifiers.judge.JudgeVerifier` (one ``Verdict:`` line,
    else an ``error`` verdict).  Batched: one ``generate`` call per :meth:`judge`."""

    def __init__(
        self, backend: ChatBackend, domain: str = "math", *, max_tokens: int = 128
    ) -> None:
        from intbench.verifiers.judge import JudgeVerifier

        if not hasattr(backend, "generate"):
            raise TypeError(f"backend must have .generate(), got {type(backend).__name__}")
        self.backend = backend
        self.domain = domain
        self.params = SamplingParams(temperature=0.0, max_tokens=max_tokens)
        # Render the project's judge template around the verifier's placeholders,
        # which the verifier fills in one pass (so responses cannot inject text).
        slots = {"question": "{question}", "reference": "{reference}", "response": "{response}"}
        self.system = render_system(domain, "judge", **slots)
        self._replies = _JudgeReplies()
        self.verifier = JudgeVerifier(
            self._replies, template=render(domain, "judge", **slots), max_tokens=max_tokens
        )

    def messages(self, problem: Problem, response: str) -> Conversation:
        """The chat messages sent to the judge for ``response``."""
        user = self.verifier.build_messages(problem, response)
        return ([{"role": "system", "content": self.system}] if self.system else []) + user

    def judge(self, problems: Sequence[Problem], responses: Sequence[str]) -> list[Verdict]:
        """One verdict per (problem, response); never raises on judge output."""
        if len(problems) != len(responses):
            raise ValueError(f"{len(problems)} problems but {len(responses)} responses")
        responses = [r if isinstance(r, str) else "" for r in responses]
        pending = [(p, r) for p, r in zip(problems, responses, strict=True) if r.strip()]
        batch = [self.messages(p, r) for p, r in pending]
        completions, _ = _generate(self.backend, batch, self.params)
        self._replies.replies.clear()
        failed: dict[str, str] = {}
        for conversation, completion in zip(batch, completions, strict=True):
            key = conversation[-1]["content"]
            if completion.error:
                failed[key] = completion.error
            self._replies.replies[key] = completion.text or ""
        verdicts = []
        for problem, response in zip(problems, responses, strict=True):
            key = self.verifier.build_messages(problem, response)[0]["content"]
            if key in failed:
                logger.warning("judge backend failed on %s: %s", problem.id, failed[key])
                verdicts.append(Verdict.error(f"judge backend failed: {failed[key]}"))
                continue
            verdict = self.verifier(problem, response)
            if verdict.status == "error":
                logger.warning("judge gave no verdict on %s: %s", problem.id, verdict.feedback)
            verdicts.append(verdict)
        return verdicts
