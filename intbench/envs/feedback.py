"""The feedback protocol: the student retries, a teacher comments on each failure.

``reset`` plays attempt 1, the student alone, so the teacher's prompt on it is
in ``info["messages"]`` at once.  Each step is the teacher's feedback on the
latest failed attempt (the action) followed by the student's next attempt; a
correct attempt ends the episode at once.  After a failed attempt the
observation holds the problem, the latest attempt, up to ``history`` earlier
turns, the verifier's result where the domain has one (code execution, ARC
grid diagnostics) and the reference if ``teacher_reference`` allows; the
student tries up to ``k_max`` times.  So a student right on attempt 3 ends the
episode at step 2.  When attempt 1 already ends it (right, or an error), the
teacher has no turn (``info["teacher_turn"]`` is false, ``messages`` empty) and
the first step, its action ignored, returns the reward and ``terminated``.

Modes: ``teacher`` (the agent writes feedback; ``intervene=0`` is a plain
retry), ``self_refine`` (no feedback at all, the repeated-attempt control),
``self_feedback`` (the student's own model in the teacher role, with the
teacher prompt: the dense matrix's diagonal, feedback paper Table 7 and §4.2)
and ``self_critique`` (the student model reviews its own attempt with a
student-side critique prompt, an extra control the paper does not run).  In
the last three modes the agent's actions are ignored.  A ``self_feedback``
episode is recorded as the diagonal cell: condition ``"teacher"`` and teacher
the student's own spec, its feedback turns with source ``"self"``.

Observation (``Dict``): ``problem``, ``attempt`` (latest attempt text),
``history`` (earlier visible turns, rendered), ``execution`` (verifier result
in the ``execution_context`` mode; "" where the domain has none),
``reference``, ``attempts`` (count so far) and ``solved``.

Action: the monitor env's ``{"intervene": 0|1, "message": str}``; also a bare
string (the feedback, parsed from ``<feedback>...</feedback>`` with the raw text
passed through when the tags are missing).  Malformed actions count as no
feedback and are reported in ``info["action_error"]``.

Reward: ``"success"`` gives 1 at the step the student is right; ``"auc"``
gives ``(k_max - k + 1) / k_max`` when solved at attempt ``k``, which is the
episode's contribution to the mean of acc@1..acc@k_max.  ``info`` carries the
teacher prompt (``messages``: the chat messages for the teacher's next feedback,
empty when the teacher has no turn), ``teacher_turn``, ``attempt`` index, ``solved_at`` (the attempt
that was right, 0 while unsolved) and, at the end, ``record`` (the episode
record, a read-only mapping without wall-clock times; the full record is
``env.unwrapped.last_episode``).
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from gymnasium import spaces

from intbench.agents.parsing import parse_feedback
from intbench.envs import flows
from intbench.envs.common import (
    MAX_MESSAGE,
    EnvOptions,
    FlowEnv,
    check_choice,
    check_count,
    message_action_space,
    output_tokens,
    parse_message_action,
    sampling_from,
)
from intbench.envs.domains.prompting import render_messages
from intbench.envs.domains.registry import get_domain
from intbench.envs.spaces import UnicodeText, as_counter, counter
from intbench.records import Attempt, FeedbackTurn
from intbench.verifiers.leakage import answer_leaked

MODES = ("teacher", "self_refine", "self_feedback", "self_critique")
SELF_TEMPLATES = {"self_feedback": "feedback_teacher", "self_critique": "feedback_self_critique"}
"""Modes where the student's model writes the feedback -> its prompt: self-feedback gets
the teacher's prompt (and the teacher's reference access), self-critique a review of
its own attempt."""
REFERENCE_KINDS = ("none", "answer", "solution")
EXECUTION_CONTEXTS = ("structured", "feedback", "traceback", "none")
REWARDS = ("success", "auc")
# The feedback paper's teacher sampling (App. A.2: T=1.0, top-p 0.95, the domain's
# output limit; its student's is STUDENT_DEFAULTS).
TEACHER_DEFAULTS = {"temperature": 1.0, "top_p": 0.95}


@dataclass
class FeedbackOptions(EnvOptions):
    """The feedback env's ``gym.make`` keyword arguments (defaults in brackets),
    besides those of :class:`~intbench.envs.common.EnvOptions`.

    Args:
        k_max: maximum number of attempts [10].
        history: how many past turns (attempt + feedback) the student and the
            teacher see, the latest included; the task prompt is always kept [1].
        teacher_reference: ``"none"``, ``"answer"`` or ``"solution"`` — what
            privileged reference the teacher sees (never the student) [``"none"``].
        execution_context: for code domains, how the test results are shown to
            the teacher: ``"structured"``, ``"feedback"``, ``"traceback"``,
            ``"none"`` [``"feedback"``].
        mode: ``"teacher"``, ``"self_refine"``, ``"self_feedback"`` (the student's
            model as its own teacher, teacher prompt) or ``"self_critique"`` (the
            student's critique prompt) [``"teacher"``].
        reward: ``"success"`` or ``"auc"`` [``"success"``].
        teacher_sampling: sampling options used when the student model writes
            feedback in ``self_feedback`` and ``self_critique``, and by a model teacher of
            ``intbench eval`` [T=1.0, top_p=0.95, the domain's limit: 8,192 tokens, ARC 16,000].
    """

    k_max: int = 10
    history: int = 1
    teacher_reference: str = "none"
    execution_context: str = "feedback"
    mode: str = "teacher"
    reward: str = "success"
    teacher_sampling: Mapping[str, Any] | None = None

    def __post_init__(self) -> None:
        super().__post_init__()
        check_choice("mode", self.mode, MODES)
        check_choice("teacher_reference", self.teacher_reference, REFERENCE_KINDS)
        check_choice("execution_context", self.execution_context, EXECUTION_CONTEXTS)
        check_choice("reward", self.reward, REWARDS)
        check_count("k_max", self.k_max, 1)
        check_count("history", self.history, 1)


class FeedbackEnv(FlowEnv):
    """Multi-attempt student-teacher loop with verifier-gated feedback.

    ``gym.make`` keyword arguments: :class:`FeedbackOptions`.
    """

    options_class = FeedbackOptions

    def __init__(self, **kwargs: Any):
        super().__init__(**kwargs)
        self.teacher_sampling = sampling_from(
            self.options.teacher_sampling,
            **TEACHER_DEFAULTS,
            max_tokens=output_tokens(self.options.domain),
        )

        self.observation_space = spaces.Dict(
            {
                "problem": UnicodeText(),
                "attempt": UnicodeText(),
                "history": UnicodeText(),
                "execution": UnicodeText(),
                "reference": UnicodeText(),
                "attempts": counter(),
                "solved": spaces.Discrete(2),
            }
        )
        self.action_space = message_action_space()
        self._ended_at_reset = False

    # ------------------------------------------------------------------ reset
    def reset_flow(self, *, seed: int | None = None, options: dict | None = None):
        """Flow version of :meth:`reset` (draws the problem and plays attempt 1)."""
        problem = self._draw_problem(seed, options)
        self._problem = problem
        self._attempts: list[Attempt] = []
        self._feedback: list[str | None] = []
        # Self-feedback is the matrix cell whose teacher is the student's own model.
        diagonal = self.options.mode == "self_feedback"
        self._episode = self._new_episode(
            "feedback",
            problem,
            "teacher" if diagonal else self.options.mode,
            teacher=self.student_spec if diagonal else None,
            config={
                "k_max": self.options.k_max,
                "history": self.options.history,
                "teacher_reference": self.options.teacher_reference,
                "execution_context": self.options.execution_context,
                "reward": self.options.reward,
                "student_sampling": dict(self.student_sampling.__dict__),
                "teacher_sampling": dict(self.teacher_sampling.__dict__),
            },
            tokens={
                "student_prompt": 0,
                "student_completion": 0,
                "feedback_prompt": 0,
                "feedback_completion": 0,
            },
            timings={"student_s": 0.0},
            metadata={"problem": problem.metadata},
        )
        # Attempt 1 (the student alone) happens here, so the teacher's prompt on it is
        # ready at reset.  When it already ends the episode (right, or an error), the
        # first step reports that, action ignored: a reset cannot end an episode.
        self._first_reward = yield from self._attempt(None)
        self._ended_at_reset = self._terminated
        return self._observation(), self._info()

    # ------------------------------------------------------------------- step
    def step_flow(self, action):
        """Flow version of :meth:`step`."""
        if self._ended_at_reset:
            self._ended_at_reset = False
            return self._step_result(self._first_reward, None, self._episode, "feedback")
        self._check_steppable()
        feedback, source, action_error = yield from self._feedback_for_turn(action)
        self._feedback.append(feedback)
        self._episode.feedback.append(
            FeedbackTurn(
                turn=len(self._attempts),
                message=feedback,
                source=source,
                leaked=answer_leaked(self._problem, feedback),
                action_error=action_error,
            )
        )
        reward = yield from self._attempt(feedback)
        return self._step_result(reward, action_error, self._episode, "feedback")

    def _attempt(self, feedback: str | None):
        """Flow: the student's next attempt, recorded -> its reward (ends the episode
        when right, on an error or at ``k_max``)."""
        episode = self._episode
        started = time.perf_counter()
        attempt = yield from self._next_attempt(feedback)
        episode.timings["student_s"] += time.perf_counter() - started
        self._attempts.append(attempt)
        episode.attempts.append(attempt)
        episode.tokens["student_prompt"] += attempt.prompt_tokens
        episode.tokens["student_completion"] += attempt.completion_tokens
        status = attempt.status
        k = len(self._attempts)
        reward = 0.0
        if attempt.error or status == "error":
            episode.error = (
                attempt.error or f"grader error on attempt {k}: {attempt.verdict.feedback}"
            )
            self._terminated = True
        elif status == "correct":
            episode.solved_at = k
            reward = (
                1.0
                if self.options.reward == "success"
                else (self.options.k_max - k + 1) / self.options.k_max
            )
            self._terminated = True
        elif k >= self.options.k_max:
            self._terminated = True
        episode.reward += reward
        episode.reward_components = {
            "solved": float(episode.solved_at is not None),
            "solved_at": episode.solved_at,
        }
        return reward

    def _feedback_for_turn(self, action):
        """Flow: -> (feedback text or None, source, action error)."""
        if self.options.mode == "self_refine":
            return None, "none", None
        if self.options.mode in SELF_TEMPLATES:
            messages = self._teacher_messages(SELF_TEMPLATES[self.options.mode])
            sampling = replace(self.teacher_sampling, seed=self._draw_seed())
            completion = yield flows.Generate("student", messages, sampling)
            self._episode.tokens["feedback_prompt"] += completion.prompt_tokens
            self._episode.tokens["feedback_completion"] += completion.completion_tokens
            if completion.error:
                name = self.options.mode.replace("_", "-")
                return None, "self", f"{name} generation failed: {completion.error}"
            return parse_feedback(completion.text).text or None, "self", None
        message, error = parse_message_action(
            action, lambda text: parse_feedback(text).text, MAX_MESSAGE
        )
        return message, "teacher" if message else "none", error

    def _next_attempt(self, feedback: str | None):
        """Flow: the next attempt, verified.  Attempt 1 is cached and shared."""
        problem = self._problem
        if not self._attempts:
            messages = render_messages(problem.domain, "feedback_student", problem=problem)
            sampling = replace(self.student_sampling, seed=self._student_seed)
            attempt, _ = yield from self._cached_student_call(messages, sampling, problem)
            return attempt
        messages = render_messages(
            problem.domain,
            "feedback_student_retry",
            problem=problem,
            history=self._visible_turns(include_feedback_of_latest=False),
            feedback_text=feedback,
        )
        sampling = replace(self.student_sampling, seed=self._draw_seed())
        return (yield from self._student_attempt(messages, sampling, problem))

    # ------------------------------------------------------- observation/info
    def _visible_turns(self, include_feedback_of_latest: bool) -> list[dict]:
        """The last ``history`` turns (the latest attempt included), oldest first."""
        turns = [
            {"attempt": a.text, "feedback": self._feedback[i] if i < len(self._feedback) else None}
            for i, a in enumerate(self._attempts)
        ]
        if not include_feedback_of_latest and turns:
            turns[-1]["feedback"] = None
        return turns[-self.options.history :]

    def _reference(self) -> str | None:
        problem = self._problem
        if self.options.teacher_reference == "answer":
            answer = problem.answer
            return None if answer is None else str(answer)
        if self.options.teacher_reference == "solution":
            return problem.solution or (None if problem.answer is None else str(problem.answer))
        return None

    def _execution(self) -> str | None:
        """The verifier's result on the latest attempt, as the teacher sees it."""
        if not self._attempts:
            return None
        verdict = self._attempts[-1].verdict
        if verdict is None:
            return None
        kind = get_domain(self._problem.domain).kind
        if kind == "code":
            if self.options.execution_context == "none" or "passed" not in verdict.details:
                return None
            from intbench.verifiers.code import render_execution_context

            return render_execution_context(verdict.details, self.options.execution_context)
        if kind == "grid":
            return verdict.feedback or None
        return None

    def _teacher_messages(self, template: str = "feedback_teacher") -> list[dict]:
        turns = self._visible_turns(include_feedback_of_latest=False)
        return render_messages(
            self._problem.domain,
            template,
            problem=self._problem,
            history=turns[:-1],
            latest_attempt=turns[-1]["attempt"],
            execution_context=self._execution(),
            reference=self._reference(),
            reference_kind=self.options.teacher_reference,
        )

    def _observation(self) -> dict:
        turns = self._visible_turns(include_feedback_of_latest=False) if self._attempts else []
        earlier = "\n\n".join(
            f"Attempt {len(self._attempts) - len(turns) + i + 1}:\n{t['attempt']}"
            + (f"\nFeedback:\n{t['feedback']}" if t["feedback"] else "")
            for i, t in enumerate(turns[:-1])
        )
        return {
            "problem": self._problem.question,
            "attempt": self._attempts[-1].text if self._attempts else "",
            "history": earlier,
            "execution": self._execution() or "",
            "reference": self._reference() or "",
            "attempts": as_counter(len(self._attempts)),
            "solved": int(self._episode.solved_at is not None),
        }

    def _info(self) -> dict:
        teacher_turn = (
            bool(self._attempts) and not self._terminated and self.options.mode == "teacher"
        )
        return {
            "messages": self._teacher_messages() if teacher_turn else [],
            "teacher_turn": teacher_turn,
            "problem_id": self._problem.id,
            "attempt": len(self._attempts),
            # An int in every episode (0: unsolved), so vector envs can stack it.
            "solved_at": self._episode.solved_at or 0,
        }

    def render(self):
        if self.render_mode != "ansi" or self._episode is None:
            return None
        lines = [
            f"[{self._problem.id}] {self.options.mode}: {len(self._attempts)}/{self.options.k_max} attempts"
        ]
        for i, attempt in enumerate(self._attempts):
            lines.append(f"-- attempt {i + 1} ({attempt.status}):\n{attempt.text}")
            if i < len(self._feedback) and self._feedback[i]:
                lines.append(f"-- feedback:\n{self._feedback[i]}")
        return "\n".join(lines)
