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

Reward: a preset of :mod:`intbench.envs.rewards` over the components
``success`` (1 at the step the student is right), ``auc`` (``(k_max - k + 1) /
k_max`` when solved at attempt ``k``, the episode's contribution to the mean of
acc@1..acc@k_max), ``leaked`` (charged at each teacher turn whose feedback
gives the answer away) and the transfer arms (means over teacher turns of a
fresh variant after the original and the attempt the feedback answers, with
and without that feedback; ``transfer_gain`` is their difference; paid at
the last step; see :mod:`intbench.envs.transfer`).  Every preset charges a
flagged leak more than telling can gain, and under ``teaching`` an unflagged
one cannot gain either (:mod:`intbench.envs.rewards`); a turn whose leak
check could not finish scores its transfer arms as waiting.  ``info`` carries the
teacher prompt (``messages``: the chat messages for the teacher's next feedback,
empty when the teacher has no turn), ``teacher_turn``, ``attempt`` index, ``solved_at`` (the attempt
that was right, 0 while unsolved) and, at the end, ``record`` (the episode
record, a read-only mapping without wall-clock times; the full record is
``env.unwrapped.last_episode``).
"""

from __future__ import annotations

import time
from dataclasses import replace
from typing import Any

from gymnasium import spaces

from intbench.agents.parsing import parse_feedback
from intbench.envs import flows
from intbench.envs.common import (
    MAX_MESSAGE,
    FlowEnv,
    message_action_space,
    output_tokens,
    parse_message_action,
    sampling_from,
)
from intbench.envs.domains.prompting import render_messages
from intbench.envs.domains.registry import get_domain
from intbench.envs.env_options import FeedbackOptions
from intbench.envs.rewards import (
    NO_TRANSFER,
    TRANSFER_COMPONENTS,
    resolve_weights,
    weighted_reward,
)
from intbench.envs.spaces import UnicodeText, as_counter, counter
from intbench.records import Attempt, FeedbackTurn

SELF_TEMPLATES = {"self_feedback": "feedback_teacher", "self_critique": "feedback_self_critique"}
"""Modes where the student's model writes the feedback -> its prompt: self-feedback gets
the teacher's prompt (and the teacher's reference access), self-critique a review of
its own attempt."""
# The feedback paper's teacher sampling (App. A.2: T=1.0, top-p 0.95, the domain's
# output limit; its student's is STUDENT_DEFAULTS).
TEACHER_DEFAULTS = {"temperature": 1.0, "top_p": 0.95}


def history_window(latest: int, history: int) -> range:
    """The turns (1-based) visible after turn ``latest`` with history ``h``.

    Feedback paper §3: the student sees the problem and turns k..n with
    k = max(n − h, 0), turn 0 being the problem itself, which A.1 always keeps.
    So h = 0 shows the latest turn alone and h ≥ n every turn.  The student's
    and the teacher's prompts are both built from this window.
    """
    return range(max(latest - history, 1), latest + 1)


class FeedbackEnv(FlowEnv):
    """Multi-attempt student-teacher loop with verifier-gated feedback.

    ``gym.make`` keyword arguments: :class:`FeedbackOptions`.
    """

    options_class = FeedbackOptions
    options: FeedbackOptions

    def __init__(self, **kwargs: Any):
        super().__init__(**kwargs)
        self.reward_weights = resolve_weights(self.options.reward, "feedback")
        self._init_transfer(self.reward_weights)
        self.teacher_sampling = sampling_from(
            self.options.teacher_sampling,
            **TEACHER_DEFAULTS,
            max_tokens=output_tokens(self.domain),
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
        self._transfers: list[dict[str, float]] = []
        self._undetermined = 0
        self._judged = 0
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
                "execution_tests": self.options.execution_tests,
                "reward": self.options.reward,
                "reward_weights": self.reward_weights,
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
            return self._step_result(self._first_reward, None, self._current_episode, "feedback")
        self._check_steppable()
        feedback, source, action_error = yield from self._feedback_for_turn(action)
        self._feedback.append(feedback)
        verdicts = yield from self._check_leak(feedback, self._attempts[-1].answer)
        leaked = verdicts[0] == "leaked"
        self._judged += verdicts[1] == "leaked"
        undetermined = "undetermined" in verdicts and "leaked" not in verdicts
        self._undetermined += undetermined
        self._current_episode.feedback.append(
            FeedbackTurn(
                turn=len(self._attempts),
                message=feedback,
                source=source,
                leaked=leaked,
                action_error=action_error,
            )
        )
        # The transfer arms need only the feedback and the attempt it answers, so
        # they share the retry's batch.
        transfer = (
            self._transfer(feedback, self._attempts[-1]) if self._variants is not None else None
        )
        charges = {
            "leaked": float(leaked),
            "judge_leaked": float(verdicts[1] == "leaked"),
            # An undetermined leak check scores as waiting: no cost either.
            "messages": float(bool(feedback) and not undetermined),
        }
        reward = yield from self._attempt(feedback, charges, transfer, undetermined)
        return self._step_result(reward, action_error, self._current_episode, "feedback")

    def _attempt(self, feedback: str | None, charges=None, transfer=None, undetermined=False):
        """Flow: the student's next attempt, recorded -> the step's reward (ends the
        episode when right, on an error or at ``k_max``); ``charges``: what the
        feedback before it costs (``leaked``, ``judge_leaked``, ``messages``),
        charged at this step; ``transfer``: the turn's transfer flow, run beside the
        attempt; ``undetermined``: the feedback's leak check could not finish, so its
        turn's transfer arms count as waiting's (gain 0)."""
        episode = self._current_episode
        step = {"success": 0.0, "auc": 0.0, **(charges or {}), **NO_TRANSFER}
        started = time.perf_counter()
        attempt = yield from self._attempt_and_arms(feedback, transfer, undetermined)
        episode.timings["student_s"] += time.perf_counter() - started
        self._attempts.append(attempt)
        episode.attempts.append(attempt)
        episode.tokens["student_prompt"] += attempt.prompt_tokens
        episode.tokens["student_completion"] += attempt.completion_tokens
        status = attempt.status
        k = len(self._attempts)
        if attempt.error or status == "error":
            episode.error = (
                attempt.error or f"grader error on attempt {k}: {attempt.verdict.feedback}"
            )
            self._terminated = True
        elif status == "correct":
            episode.solved_at = k
            step["success"] = 1.0
            step["auc"] = (self.options.k_max - k + 1) / self.options.k_max
            self._terminated = True
        elif k >= self.options.k_max:
            self._terminated = True
        if self._terminated and self._transfers:
            for name in TRANSFER_COMPONENTS:
                step[name] = sum(arms[name] for arms in self._transfers) / len(self._transfers)
        reward = weighted_reward(step, self.reward_weights)
        episode.reward += reward
        episode.reward_components = self._components(k, step)
        return reward

    def _attempt_and_arms(self, feedback: str | None, transfer, undetermined: bool):
        """Flow: the student's next attempt, with the turn's transfer arms beside it (kept
        for the last step) -> the attempt."""
        if transfer is None:
            return (yield from self._next_attempt(feedback))
        attempt, arms = yield from flows.gather(self._next_attempt(feedback), transfer)
        if undetermined:  # scored as waiting: the alone arm on both sides
            alone = arms["transfer_alone"]
            arms = {"transfer": alone, "transfer_alone": alone, "transfer_gain": 0.0}
        self._transfers.append(arms)
        return attempt

    def _components(self, k: int, step: dict) -> dict:
        """The episode's reward components after attempt ``k``."""
        episode = self._current_episode
        solved = float(episode.solved_at is not None)
        return {
            "solved": solved,
            "solved_at": episode.solved_at,
            "success": solved,
            "auc": (self.options.k_max - k + 1) / self.options.k_max if solved else 0.0,
            "leaked": float(sum(turn.leaked for turn in episode.feedback)),
            "leak_undetermined": float(self._undetermined),
            "judge_leaked": float(self._judged),
            "derailed": 0.0,
            "messages": float(sum(bool(turn.message) for turn in episode.feedback))
            - self._undetermined,
            **{name: step[name] for name in TRANSFER_COMPONENTS},
        }

    def _feedback_for_turn(self, action):
        """Flow: -> (feedback text or None, source, action error)."""
        if self.options.mode == "self_refine":
            return None, "none", None
        if self.options.mode in SELF_TEMPLATES:
            messages = self._teacher_messages(SELF_TEMPLATES[self.options.mode])
            sampling = replace(self.teacher_sampling, seed=self._draw_seed())
            completion = yield flows.Generate("student", messages, sampling)
            self._current_episode.tokens["feedback_prompt"] += completion.prompt_tokens
            self._current_episode.tokens["feedback_completion"] += completion.completion_tokens
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
        problem = self._current_problem
        if not self._attempts:
            messages = render_messages(problem.domain, "feedback_student", problem=problem)
            sampling = replace(self.student_sampling, seed=self._student_seed)
            attempt, _ = yield from self._cached_student_call(messages, sampling, problem)
            return attempt
        messages = render_messages(
            problem.domain,
            "feedback_student_retry",
            problem=problem,
            history=self._student_turns(),
            feedback_text=feedback,
        )
        sampling = replace(self.student_sampling, seed=self._draw_seed())
        return (yield from self._student_attempt(messages, sampling, problem))

    # ------------------------------------------------------- observation/info
    def _turn(self, index: int, with_feedback: bool) -> dict:
        """Turn ``index`` (1-based): its attempt and, if asked, the feedback it received."""
        feedback = self._feedback[index - 1] if index <= len(self._feedback) else None
        return {
            "index": index,
            "attempt": self._attempts[index - 1].text,
            "feedback": feedback if with_feedback else None,
        }

    def _student_turns(self) -> list[dict]:
        """The turns the retrying student sees: the window, the latest turn last
        (its feedback is the prompt's own ``Feedback:`` block)."""
        n = len(self._attempts)
        return [self._turn(i, with_feedback=i < n) for i in history_window(n, self.options.history)]

    def _teacher_turns(self) -> list[dict]:
        """The turns the teacher sees before the latest attempt: the window's, after
        the first attempt, which the original teacher prompt always carries (A.1,
        A.8); the first attempt's feedback only while it is in the window."""
        n = len(self._attempts)
        shown = history_window(n, self.options.history)
        earlier = sorted({1, *shown} - {n})
        return [self._turn(i, with_feedback=i in shown) for i in earlier]

    def _reference(self) -> str | None:
        problem = self._current_problem
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
        kind = get_domain(self._current_problem.domain).kind
        if kind == "code":
            if self.options.execution_context == "none" or "passed" not in verdict.details:
                return None
            from intbench.verifiers.code import render_execution_context

            return render_execution_context(
                verdict.details, self.options.execution_context, self.options.execution_tests
            )
        if kind == "grid":
            return verdict.feedback or None
        return None

    def _teacher_messages(self, template: str = "feedback_teacher") -> list[dict]:
        return render_messages(
            self._current_problem.domain,
            template,
            problem=self._current_problem,
            history=self._teacher_turns(),
            latest_attempt=self._attempts[-1].text,
            execution_context=self._execution(),
            reference=self._reference(),
            reference_kind=self.options.teacher_reference,
        )

    def _observation(self) -> dict:
        earlier = "\n\n".join(
            f"Attempt {t['index']}:\n{t['attempt']}"
            + (f"\nFeedback:\n{t['feedback']}" if t["feedback"] else "")
            for t in (self._teacher_turns() if self._attempts else [])
        )
        return {
            "problem": self._current_problem.question,
            "attempt": self._attempts[-1].text if self._attempts else "",
            "history": earlier,
            "execution": self._execution() or "",
            "reference": self._reference() or "",
            "attempts": as_counter(len(self._attempts)),
            "solved": int(self._current_episode.solved_at is not None),
        }

    def _info(self) -> dict:
        teacher_turn = (
            bool(self._attempts) and not self._terminated and self.options.mode == "teacher"
        )
        return {
            "messages": self._teacher_messages() if teacher_turn else [],
            "teacher_turn": teacher_turn,
            "problem_id": self._current_problem.id,
            "attempt": len(self._attempts),
            # An int in every episode (0: unsolved), so vector envs can stack it.
            "solved_at": self._current_episode.solved_at or 0,
        }

    def render(self):
        if self.render_mode != "ansi" or self._episode is None:
            return None
        lines = [
            f"[{self._current_problem.id}] {self.options.mode}: {len(self._attempts)}/{self.options.k_max} attempts"
        ]
        for i, attempt in enumerate(self._attempts):
            lines.append(f"-- attempt {i + 1} ({attempt.status}):\n{attempt.text}")
            if i < len(self._feedback) and self._feedback[i]:
                lines.append(f"-- feedback:\n{self._feedback[i]}")
        return "\n".join(lines)
