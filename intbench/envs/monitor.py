"""The monitor protocol (Int-Bench): watch a student's reasoning, decide when to help.

On ``reset`` a problem is drawn and the student's unassisted baseline (trace,
answer, verdict) is taken from the on-disk cache or generated once.  Then:

* **Standard** condition: each step reveals the next increment of the trace
  (a cumulative prefix).  ``wait`` reveals more; ``intervene`` injects the
  teacher's message after the revealed prefix, the student continues (or must
  answer at once, ``post="stop"``), the verifier scores the new answer and the
  episode ends.  A teacher that never intervenes sees the whole trace in
  ``len(cuts)`` steps and the episode ends without an intervention.
* **Oracle** condition: one step.  The observation holds the whole trace, the
  student's answer and the verdict; the action says whether to intervene, the
  message, and where (a character ``position`` or a ~5-word ``quote`` of the
  trace, located by a three-stage search; see :mod:`intbench.envs.quotes`).

Observation (``Dict``): ``problem``, ``transcript`` (revealed prefix, or the
whole trace for Oracle), ``reference`` (the reference solution when
``teacher_access`` is on, else ""), ``student_answer`` and ``verdict``
(Oracle only: 0 incorrect, 1 correct, 2 hidden/unknown), ``step``,
``revealed_chars`` and ``finished`` (1 once the whole trace is shown).

Action (``Dict``): ``intervene`` (0/1), ``message`` (str), and for Oracle
``position`` (int, -1 = unset) and ``quote`` (str).  Also accepted: a bare
0/1, a dict without ``message`` (or, for Oracle, ``position`` and ``quote``),
and a dict with an ``error`` string (what a wrapper sends when it cannot parse
a reply).  Malformed actions (an unknown type, a missing ``intervene`` or an
unknown key, a value that is not 0/1, an integer or a string as its key needs:
inf, NaN, 1.7, huge ints, None; ``intervene=1`` with an empty message) count
as *wait* (Standard) or *no intervention* (Oracle), are logged, and are
reported in ``info["action_error"]``; they never raise.  Raw teacher text in the paper's
format is accepted through :class:`intbench.envs.wrappers.TeacherTextActions`.

``info`` holds ``messages`` (the paper's teacher prompt for this step as chat
messages, ready for any LLM client), ``problem_id``, ``step``,
``revealed_chars``, and ``privileged`` (``total_chars`` and
``baseline_correct``: for scripted baselines such as ``at:0.5`` and
``oracle``, not for the teacher being evaluated).  At the end it adds
``reward_components`` and ``record`` (the episode record, a read-only mapping
without wall-clock times, which stay out of ``info`` so that seeded runs
compare equal; the full record is ``env.unwrapped.last_episode``).
``info["episode"]`` is left to Gymnasium's ``RecordEpisodeStatistics``.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import replace
from functools import partial
from typing import Any

import numpy as np
from gymnasium import spaces

from intbench.envs import flows
from intbench.envs.common import (
    MAX_MESSAGE,
    ActionError,
    FlowEnv,
    attempt_from,
    integer_field,
    message_action_space,
    parse_action,
    text_field,
)
from intbench.envs.domains.prompting import render_messages
from intbench.envs.env_options import TEACHER_PROMPTS, MonitorOptions
from intbench.envs.increments import cut_points, parse_increment
from intbench.envs.quotes import QuoteMatch, final_answer_start, locate_quote
from intbench.envs.rewards import monitor_components, resolve_weights, weighted_reward
from intbench.envs.spaces import UnicodeText, as_counter, counter
from intbench.records import Intervention, MonitorStep, Problem

logger = logging.getLogger(__name__)

MAX_POSITION = 2**31 - 1
ORACLE_FIELDS: dict[str, tuple[Any, Callable[[str, Any], Any]]] = {
    "position": (-1, partial(integer_field, low=-1, high=MAX_POSITION)),
    "quote": ("", text_field),
}
"""The Oracle action's keys besides ``intervene`` and ``message``: (default, check)."""

VERDICT_CODES = {"incorrect": 0, "correct": 1}
HIDDEN = 2


class MonitorEnv(FlowEnv):
    """A teacher watches a student's reasoning and decides whether, when and how to intervene.

    ``gym.make`` keyword arguments: :class:`MonitorOptions`.
    """

    options_class = MonitorOptions
    options: MonitorOptions

    def __init__(self, **kwargs: Any):
        super().__init__(**kwargs)
        self.reward_weights = resolve_weights(self.options.reward, "monitor")
        self._init_transfer(self.reward_weights)

        self.observation_space = spaces.Dict(
            {
                "problem": UnicodeText(),
                "transcript": UnicodeText(),
                "reference": UnicodeText(),
                "student_answer": UnicodeText(),
                "verdict": spaces.Discrete(3),
                "step": counter(),
                "revealed_chars": counter(),
                "finished": spaces.Discrete(2),
            }
        )
        action = message_action_space()
        if self.condition == "oracle":
            action["position"] = spaces.Box(low=-1, high=MAX_POSITION, shape=(), dtype=np.int64)
            action["quote"] = UnicodeText(1_000)
        self.action_space = action

    @property
    def condition(self) -> str:
        """``"standard"`` or ``"oracle"``: what teachers and wrappers adapt their actions to."""
        return self.options.condition

    # ------------------------------------------------------------------ reset
    def reset_flow(self, *, seed: int | None = None, options: dict | None = None):
        """Flow version of :meth:`reset`, for drivers that batch many envs' model calls."""
        problem = self._draw_problem(seed, options)
        started = time.perf_counter()
        messages = render_messages(problem.domain, "student_baseline", problem=problem)
        sampling = replace(self.student_sampling, seed=self._student_seed)
        baseline, from_cache = yield from self._cached_student_call(messages, sampling, problem)
        self._problem = problem
        self._trace = baseline.text
        self._cuts = cut_points(self._trace, self.options.increment, self._token_offsets())
        self._cursor = 0 if self.condition == "standard" else len(self._cuts) - 1
        self._baseline_correct = baseline.correct
        self._baseline_answer = str(baseline.answer or "")
        self._verdict_code = VERDICT_CODES.get(baseline.status, HIDDEN)
        self._prompt_parts: list[tuple[str, list[str]]] | None = None
        self._episode = self._new_episode(
            "monitor",
            problem,
            self.condition,
            config={
                "increment": self.options.increment,
                "post": self.options.post,
                "teacher_access": self.options.teacher_access,
                "teacher_prompt": self.options.teacher_prompt,
                "reward_weights": self.reward_weights,
                "student_sampling": dict(self.student_sampling.__dict__),
            },
            baseline=baseline,
            tokens={
                "baseline_prompt": baseline.prompt_tokens,
                "baseline_completion": baseline.completion_tokens,
                "baseline_generated": 0 if from_cache else baseline.completion_tokens,
            },
            timings={"baseline_s": time.perf_counter() - started},
            metadata={"problem": problem.metadata, "baseline_from_cache": from_cache},
            error=f"student failed on the baseline: {baseline.error}" if baseline.error else None,
        )
        if baseline.error:
            logger.warning("baseline generation failed for %s: %s", problem.id, baseline.error)
        return self._observation(), self._info()

    def _token_offsets(self):
        tokenizer = getattr(self.executor.backends["student"], "tokenizer", None)
        if tokenizer is None or parse_increment(self.options.increment)[0] != "tokens":
            return None

        def offsets(text: str) -> list[int]:
            encoded = tokenizer(text, return_offsets_mapping=True, add_special_tokens=False)
            return [end for _, end in encoded["offset_mapping"]]

        return offsets

    # ------------------------------------------------------------------- step
    def step_flow(self, action):
        """Flow version of :meth:`step` (for batched drivers)."""
        self._check_steppable()
        intervene, message, position, quote, action_error = self._parse_action(action)
        if action_error:
            logger.info("malformed action on %s: %s", self._current_problem.id, action_error)
        revealed = self._cuts[self._cursor]
        self._current_episode.steps.append(
            MonitorStep(
                step=len(self._current_episode.steps),
                revealed_chars=revealed,
                action="intervene" if intervene else "wait",
                message=message if intervene else None,
                action_error=action_error,
            )
        )
        if self.condition == "oracle":
            match = self._locate(position, quote) if intervene else None
            yield from self._finish(
                intervene, message, match.position if match else revealed, match
            )
        elif intervene:
            yield from self._finish(True, message, revealed, None)
        elif self._cursor == len(self._cuts) - 1:
            yield from self._finish(False, None, revealed, None)
        else:
            self._cursor += 1
        info = self._info()
        if action_error:
            info["action_error"] = action_error
        if self._terminated:
            info["reward_components"] = dict(self._current_episode.reward_components)
            self._end_info(info, self._current_episode)
        reward = self._current_episode.reward if self._terminated else 0.0
        return self._observation(), reward, self._terminated, False, info

    def _parse_action(self, action) -> tuple[bool, str, int, str, str | None]:
        """-> (intervene, message, position, quote, error); malformed means no intervention."""
        optional = ORACLE_FIELDS if self.condition == "oracle" else {}
        try:
            fields = parse_action(action, optional)
        except ActionError as exc:
            return False, "", -1, "", str(exc)
        position, quote = fields.get("position", -1), fields.get("quote", "")
        return fields["intervene"], fields["message"][:MAX_MESSAGE], position, quote, None

    def _locate(self, position: int, quote: str) -> QuoteMatch:
        # The domain's answer format marks where the final answer begins (App. A.2).
        domain = self._current_problem.domain
        if quote.strip():
            return locate_quote(self._trace, quote, domain)
        if position < 0:
            return QuoteMatch(None, None, "no_quote")
        if position > len(self._trace):
            return QuoteMatch(None, "position", "not_found")
        if position > final_answer_start(self._trace, domain):
            return QuoteMatch(position, "position", "in_final_answer")
        return QuoteMatch(position, "position", None)

    def _finish(
        self, intervene: bool, message: str | None, position: int | None, match: QuoteMatch | None
    ):
        """Flow: apply the intervention (if any), score it, close the episode record."""
        episode = self._current_episode
        # The cut the continuation starts from; an accepted quote always has a position.
        cut = position if intervene and (match is None or match.ok) else None
        post_correct = None
        baseline_answer = episode.baseline.answer if episode.baseline else None
        verdicts = yield from self._check_leak(message if intervene else None, baseline_answer)
        if intervene:
            episode.intervention = self._intervention(message, position, cut, match, verdicts[0])
        if cut is not None:
            # The transfer arms need only the message, so they share the
            # continuation's batch.
            intervention = episode.intervention
            assert intervention is not None  # an intervention was recorded just above
            post_correct, transfer = yield from flows.gather(
                self._continue(intervention, cut),
                self._transfer(message, episode.baseline),
            )
        else:
            transfer = yield from self._transfer(None, episode.baseline)
        self._score(verdicts, cut is not None, post_correct, transfer, bool(intervene and message))
        if episode.baseline is not None and episode.baseline.status == "error":
            episode.error = episode.error or "grader error on the baseline"
        self._terminated = True

    def _intervention(
        self, message, position, cut: int | None, match: QuoteMatch | None, detector: str
    ) -> Intervention:
        """The record of the teacher's intervention (placed at ``cut``, or not placed)."""
        total = len(self._trace)
        return Intervention(
            message=message,
            position=position,
            tau_abs=cut,
            tau_rel=None if cut is None else (cut / total if total else 1.0),
            quote_stage=match.stage if match else None,
            excluded=match.excluded if match else None,
            post=self.options.post,
            leaked=detector == "leaked",
        )

    def _score(self, verdicts, applied: bool, post_correct, transfer, spoke: bool) -> None:
        """The episode's reward components and reward (:mod:`intbench.envs.rewards`)."""
        episode = self._current_episode
        # A leak is charged whether or not the intervention could be placed: the
        # teacher chose to state the answer.
        leaked = bool(episode.intervention and episode.intervention.leaked)
        components = monitor_components(
            self._baseline_correct, applied, post_correct, leaked, transfer, spoke
        )
        components["judge_leaked"] = float(verdicts[1] == "leaked")
        episode.reward_components = components
        episode.reward = weighted_reward(components, self.reward_weights)
        if "undetermined" in verdicts and "leaked" not in verdicts:
            # A leak check that could not finish scores as waiting: never a penalty, never more.
            alone = {k: transfer["transfer_alone"] for k in ("transfer", "transfer_alone")}
            waiting = monitor_components(self._baseline_correct, False, None, False, alone)
            components["leak_undetermined"] = 1.0
            episode.reward = weighted_reward(waiting, self.reward_weights)

    def _continue(self, intervention: Intervention, position: int):
        """Flow: the student continues the trace cut at ``position`` after the
        intervention's message -> correct (None when it failed)."""
        episode = self._current_episode
        started = time.perf_counter()
        messages = continuation_messages(
            self._current_problem,
            self._trace[:position],
            intervention.message or "",
            self.options.post,
        )
        sampling = replace(self.student_sampling, seed=self._draw_seed())
        completion = yield flows.Generate("student", messages, sampling)
        verdict = None
        post_correct = None
        if completion.error:
            episode.error = f"student failed after the intervention: {completion.error}"
        else:
            verdict = yield flows.Verify(self._current_problem, completion.text, self._verifier)
            if verdict.status == "error":
                episode.error = f"grader error after the intervention: {verdict.feedback}"
            post_correct = verdict.correct
        intervention.attempt = attempt_from(completion, verdict)
        episode.tokens["post_prompt"] = completion.prompt_tokens
        episode.tokens["post_completion"] = completion.completion_tokens
        episode.timings["post_s"] = time.perf_counter() - started
        return post_correct

    # ------------------------------------------------------- observation/info
    def _observation(self) -> dict:
        problem = self._current_problem
        oracle = self.condition == "oracle"
        revealed = self._cuts[self._cursor]
        return {
            "problem": problem.question,
            "transcript": self._trace[:revealed],
            "reference": self._reference(),
            "student_answer": self._baseline_answer if oracle else "",
            "verdict": self._verdict_code if oracle else HIDDEN,
            "step": as_counter(len(self._current_episode.steps)),
            "revealed_chars": as_counter(revealed),
            "finished": int(self._cursor == len(self._cuts) - 1),
        }

    def _reference(self) -> str:
        if not self.options.teacher_access:
            return ""
        problem = self._current_problem
        return str(problem.solution or problem.answer or "")

    def _info(self) -> dict:
        revealed = self._cuts[self._cursor]
        return {
            "messages": self.teacher_messages(),
            "problem_id": self._current_problem.id,
            "step": len(self._current_episode.steps),
            "revealed_chars": revealed,
            "privileged": {
                "total_chars": len(self._trace),
                "baseline_correct": self._baseline_correct,
            },
        }

    def teacher_messages(self) -> list[dict]:
        """The paper's teacher prompt for the current step, as chat messages."""
        problem = self._current_problem
        reference = self._reference() or None
        if self.condition == "oracle":
            return render_messages(
                problem.domain,
                "teacher_oracle",
                problem=problem,
                transcript=self._trace,
                student_answer=self._baseline_answer,
                verdict="correct" if self._baseline_correct else "incorrect",
                reference=reference,
            )
        # The prompt differs between steps only in the transcript: render it
        # once around a marker and splice each prefix in (keeps steps cheap).
        if self._prompt_parts is None:
            self._prompt_parts = _split_on_marker(
                render_messages(
                    problem.domain,
                    TEACHER_PROMPTS[self.options.teacher_prompt],
                    problem=problem,
                    transcript=_MARKER,
                    chunk_size=self.options.increment,
                    reference=reference,
                )
            )
        transcript = self._trace[: self._cuts[self._cursor]]
        return [
            {"role": role, "content": transcript.join(pieces)}
            for role, pieces in self._prompt_parts
        ]

    def render(self):
        if self.render_mode != "ansi" or self._episode is None:
            return None
        shown = self._cuts[self._cursor]
        lines = [
            f"[{self._current_problem.id}] {self.condition} step {len(self._current_episode.steps)} "
            f"revealed {shown}/{len(self._trace)} chars",
            self._trace[:shown],
        ]
        if self._current_episode.intervention:
            lines.append(f"-- intervention: {self._current_episode.intervention.message!r}")
        return "\n".join(lines)


_MARKER = "\x00TRANSCRIPT\x00"

POST_TEMPLATES = {"continue": "student_continue", "stop": "student_stop_answer"}


def continuation_messages(problem: Problem, prefix: str, message: str, post: str) -> list[dict]:
    """The student's post-intervention conversation (Int-Bench App. F.3).

    System (the baseline system prompt plus the update instruction), user 1
    (the baseline user message), assistant (``Reasoning:`` and the reasoning
    revealed before the intervention) and user 2 (the teacher's message in
    ``<update>`` tags, then "continue" or, for ``post="stop"``, "answer now").
    """
    system, *example, update = render_messages(
        problem.domain, POST_TEMPLATES[post], problem=problem, message=message
    )
    question = render_messages(problem.domain, "student_baseline", problem=problem)[-1]
    # A trace in the F.1 format already starts with its "Reasoning:" label.
    label = "" if prefix.lstrip().startswith("Reasoning:") else "Reasoning: "
    return [system, *example, question, {"role": "assistant", "content": label + prefix}, update]


def _split_on_marker(messages: list[dict]) -> list[tuple[str, list[str]]]:
    return [(m["role"], m["content"].split(_MARKER)) for m in messages]
