"""The feedback protocol: the student retries, a teacher comments on each failure.

Each step is one student attempt.  Step 1 is the student alone (the action is
ignored: there is nothing to comment on yet); a correct attempt ends the
episode at once.  After a failed attempt the observation holds the problem,
the latest attempt, up to ``history`` earlier turns, the verifier's result
where the domain has one (code execution, ARC grid diagnostics) and the
reference if ``teacher_reference`` allows; the next action is the teacher's
feedback, and the student tries again, up to ``k_max`` attempts.  So a student
right on attempt 3 ends the episode at step 3.

Modes: ``teacher`` (the agent writes feedback; ``intervene=0`` is a plain
retry), ``self_refine`` (no feedback at all, the repeated-attempt control) and
``self_feedback`` (the student model critiques its own attempt).  In the two
control modes the agent's actions are ignored.

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
teacher prompt (``messages``), ``attempt`` index, ``solved_at`` and, at the
end, the ``episode`` record (without wall-clock timings; the full record is
``env.unwrapped.last_episode``).
"""

from __future__ import annotations

import hashlib
import logging
import time
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

import gymnasium as gym
from gymnasium import spaces

from intbench.agents.base import ChatBackend
from intbench.agents.parsing import parse_feedback
from intbench.envs import flows
from intbench.envs.common import (
    FlowEnv,
    attempt_from,
    cached_student_call,
    parse_message_action,
    sampling_from,
)
from intbench.envs.domains.prompting import render_messages
from intbench.envs.spaces import UnicodeText, as_counter, counter
from intbench.records import Attempt, Episode, FeedbackTurn, Problem
from intbench.verifiers.leakage import answer_leaked

logger = logging.getLogger(__name__)

MODES = ("teacher", "self_refine", "self_feedback")
REFERENCE_KINDS = ("none", "answer", "solution")
EXECUTION_CONTEXTS = ("structured", "feedback", "traceback", "none")
REWARDS = ("success", "auc")
CODE_DOMAINS = ("codeforces", "debug")
MAX_MESSAGE = 8_000

# The feedback paper's sampling: student T=0.7, top-p 0.95; teacher T=1.0.
STUDENT_DEFAULTS = {"temperature": 0.7, "top_p": 0.95, "max_tokens": 1024}
TEACHER_DEFAULTS = {"temperature": 1.0, "top_p": 1.0, "max_tokens": 512}


class FeedbackEnv(FlowEnv):
    """Multi-attempt student-teacher loop with verifier-gated feedback.

    Args (``gym.make`` keyword arguments; defaults in brackets):
        domain: set by the registered id.
        student: model spec or backend [``"smollm2"``].
        source, split, n, data_seed, problems: as in the monitor env.
        k_max: maximum number of attempts [10].
        history: how many past turns (attempt + feedback) the student and the
            teacher see, the latest included; the task prompt is always kept [1].
        teacher_reference: ``"none"``, ``"answer"`` or ``"solution"`` — what
            privileged reference the teacher sees (never the student) [``"none"``].
        execution_context: for code domains, how the test results are shown to
            the teacher: ``"structured"``, ``"feedback"``, ``"traceback"``,
            ``"none"`` [``"feedback"``].
        mode: ``"teacher"``, ``"self_refine"`` or ``"self_feedback"`` [``"teacher"``].
        reward: ``"success"`` or ``"auc"`` [``"success"``].
        student_sampling, teacher_sampling: sampling options (the teacher's
            are used when the student model writes feedback in ``self_feedback``).
        student_seed: seed of attempt 1, which is cached and shared by all
            teachers and modes [0].
        judge: model spec or backend verifying answers instead of the domain verifier.
        cache_dir: cache location.
    """

    metadata = {"render_modes": ["ansi"]}

    def __init__(
        self,
        domain: str = "math",
        student: str | ChatBackend = "smollm2",
        source: str = "offline",
        split: str | None = None,
        n: int | None = None,
        data_seed: int = 0,
        problems: Sequence[Problem | dict] | None = None,
        k_max: int = 10,
        history: int = 1,
        teacher_reference: str = "none",
        execution_context: str = "feedback",
        mode: str = "teacher",
        reward: str = "success",
        student_sampling: Mapping[str, Any] | None = None,
        teacher_sampling: Mapping[str, Any] | None = None,
        student_seed: int = 0,
        judge: str | ChatBackend | None = None,
        cache_dir: str | None = None,
        render_mode: str | None = None,
    ):
        _check_choice("mode", mode, MODES)
        _check_choice("teacher_reference", teacher_reference, REFERENCE_KINDS)
        _check_choice("execution_context", execution_context, EXECUTION_CONTEXTS)
        _check_choice("reward", reward, REWARDS)
        if not isinstance(k_max, int) or k_max < 1:
            raise ValueError(f"k_max must be a positive int, got {k_max!r}")
        if not isinstance(history, int) or history < 1:
            raise ValueError(f"history must be a positive int, got {history!r}")
        if render_mode not in (None, "ansi"):
            raise ValueError(f"render_mode must be None or 'ansi', got {render_mode!r}")
        self.domain = domain
        self.k_max = k_max
        self.history = history
        self.teacher_reference = teacher_reference
        self.execution_context = execution_context
        self.mode = mode
        self.reward_kind = reward
        self.render_mode = render_mode
        self.student_sampling = sampling_from(student_sampling, **STUDENT_DEFAULTS)
        self.teacher_sampling = sampling_from(teacher_sampling, **TEACHER_DEFAULTS)
        self.student_seed = int(student_seed)
        self._init_models(domain, student, problems, source, split, n, data_seed, judge, cache_dir)

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
        self.action_space = spaces.Dict(
            {"intervene": spaces.Discrete(2), "message": UnicodeText(MAX_MESSAGE)}
        )
        self.last_episode: Episode | None = None
        self._episode: Episode | None = None

    # ------------------------------------------------------------------ reset
    def reset_flow(self, *, seed: int | None = None, options: dict | None = None):
        """Flow version of :meth:`reset` (draws the problem; attempt 1 happens at step 1)."""
        gym.Env.reset(self, seed=seed)
        problem = self._pool.draw(self.np_random, seed is not None, options)
        self._problem = problem
        self._attempts: list[Attempt] = []
        self._feedback: list[str | None] = []
        self._terminated = False
        self._student_seed = int((options or {}).get("student_seed", self.student_seed))
        draw = int(self.np_random.integers(2**63 - 1))
        self._episode = Episode(
            protocol="feedback",
            problem_id=problem.id,
            domain=problem.domain,
            student=self.student_spec,
            judge=self.judge_spec,
            condition=self.mode,
            seed=self._student_seed,
            config={
                "k_max": self.k_max,
                "history": self.history,
                "teacher_reference": self.teacher_reference,
                "execution_context": self.execution_context,
                "reward": self.reward_kind,
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
            episode_id=hashlib.sha1(f"{problem.id}|{self.mode}|{draw}".encode()).hexdigest()[:16],
        )
        return self._observation(), self._info()
        yield  # a flow, though resetting needs no model call

    # ------------------------------------------------------------------- step
    def step_flow(self, action):
        """Flow version of :meth:`step`."""
        if self._episode is None:
            raise RuntimeError("call reset() before step()")
        if self._terminated:
            raise RuntimeError("episode is over; call reset()")
        episode = self._episode
        action_error = None
        feedback = None
        if self._attempts:
            feedback, source, action_error = yield from self._feedback_for_turn(action)
            self._feedback.append(feedback)
            episode.feedback.append(
                FeedbackTurn(
                    turn=len(self._attempts),
                    message=feedback,
                    source=source,
                    leaked=answer_leaked(self._problem, feedback),
                    action_error=action_error,
                )
            )
        started = time.perf_counter()
        attempt = yield from self._student_attempt(feedback)
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
            reward = 1.0 if self.reward_kind == "success" else (self.k_max - k + 1) / self.k_max
            self._terminated = True
        elif k >= self.k_max:
            self._terminated = True
        episode.reward += reward
        episode.reward_components = {
            "solved": float(episode.solved_at is not None),
            "solved_at": episode.solved_at,
        }
        info = self._info()
        if action_error:
            info["action_error"] = action_error
            logger.info("malformed feedback action on %s: %s", self._problem.id, action_error)
        if self._terminated:
            self.last_episode = episode
            info["episode"] = {key: v for key, v in episode.to_dict().items() if key != "timings"}
        return self._observation(), reward, self._terminated, False, info

    def _feedback_for_turn(self, action):
        """Flow: -> (feedback text or None, source, action error)."""
        if self.mode == "self_refine":
            return None, "none", None
        if self.mode == "self_feedback":
            messages = self._teacher_messages("feedback_self_feedback")
            sampling = replace(self.teacher_sampling, seed=int(self.np_random.integers(2**31 - 1)))
            completion = yield flows.Generate("student", messages, sampling)
            self._episode.tokens["feedback_prompt"] += completion.prompt_tokens
            self._episode.tokens["feedback_completion"] += completion.completion_tokens
            if completion.error:
                return None, "self", f"self-feedback generation failed: {completion.error}"
            return parse_feedback(completion.text).text or None, "self", None
        message, error = parse_message_action(
            action, lambda text: parse_feedback(text).text, MAX_MESSAGE
        )
        return message, "teacher" if message else "none", error

    def _student_attempt(self, feedback: str | None):
        """Flow: the next attempt, verified.  Attempt 1 is cached and shared."""
        problem = self._problem
        if not self._attempts:
            messages = render_messages(problem.domain, "feedback_student", problem=problem)
            sampling = replace(self.student_sampling, seed=self._student_seed)
            attempt, _ = yield from cached_student_call(
                self._cache, self.student_spec, messages, sampling, problem, self._verifier
            )
            return attempt
        messages = render_messages(
            problem.domain,
            "feedback_student_retry",
            problem=problem,
            history=self._visible_turns(include_feedback_of_latest=False),
            feedback_text=feedback,
        )
        sampling = replace(self.student_sampling, seed=int(self.np_random.integers(2**31 - 1)))
        completion = yield flows.Generate("student", messages, sampling)
        verdict = None
        if not completion.error:
            verdict = yield flows.Verify(problem, completion.text, self._verifier)
        return attempt_from(completion, verdict)

    # ------------------------------------------------------- observation/info
    def _visible_turns(self, include_feedback_of_latest: bool) -> list[dict]:
        """The last ``history`` turns (the latest attempt included), oldest first."""
        turns = [
            {"attempt": a.text, "feedback": self._feedback[i] if i < len(self._feedback) else None}
            for i, a in enumerate(self._attempts)
        ]
        if not include_feedback_of_latest and turns:
            turns[-1]["feedback"] = None
        return turns[-self.history :]

    def _reference(self) -> str | None:
        problem = self._problem
        if self.teacher_reference == "answer":
            answer = problem.answer
            return None if answer is None else str(answer)
        if self.teacher_reference == "solution":
            return problem.solution or (None if problem.answer is None else str(problem.answer))
        return None

    def _execution(self) -> str | None:
        """The verifier's result on the latest attempt, as the teacher sees it."""
        if not self._attempts:
            return None
        verdict = self._attempts[-1].verdict
        if verdict is None:
            return None
        if self._problem.domain in CODE_DOMAINS:
            if self.execution_context == "none" or "passed" not in verdict.details:
                return None
            from intbench.verifiers.code import render_execution_context

            return render_execution_context(verdict.details, self.execution_context)
        if self._problem.domain == "arc":
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
            reference_kind=self.teacher_reference,
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
        teacher_turn = bool(self._attempts) and not self._terminated and self.mode == "teacher"
        return {
            "messages": self._teacher_messages() if teacher_turn else [],
            "teacher_turn": teacher_turn,
            "problem_id": self._problem.id,
            "attempt": len(self._attempts),
            "solved_at": self._episode.solved_at,
        }

    def render(self):
        if self.render_mode != "ansi" or self._episode is None:
            return None
        lines = [f"[{self._problem.id}] {self.mode}: {len(self._attempts)}/{self.k_max} attempts"]
        for i, attempt in enumerate(self._attempts):
            lines.append(f"-- attempt {i + 1} ({attempt.status}):\n{attempt.text}")
            if i < len(self._feedback) and self._feedback[i]:
                lines.append(f"-- feedback:\n{self._feedback[i]}")
        return "\n".join(lines)


def _check_choice(name: str, value: Any, choices: tuple) -> None:
    if value not in choices:
        raise ValueError(f"{name} must be one of {choices}, got {value!r}")
