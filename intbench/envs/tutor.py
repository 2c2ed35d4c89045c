"""The tutor protocol (KITE): ideate with the student, then let it solve alone.

Phase 1, **ideation**: a dialogue about strategy.  The student speaks first
(on ``reset``); each step is one teacher message (the action), after which
the student answers, for ``ideation_turns`` teacher turns.  A checker looks at
every teacher message before the student sees it and *withholds* messages
that contain code, a worked calculation or the final answer: ``"rules"``
(:func:`intbench.tutor.checker.rules_check`) or a model spec, which runs the
``tutor_checker`` prompt on top of the rules (a message is withheld when
either flags it; an unreadable checker reply withholds).  The student sees a
withheld message only as a note that one was withheld; the teacher's own view
marks it with the checker's reason.  ``withheld`` counts them.

Phase 2, **independent solving**, runs inside the last step: the dialogue is
removed and the student solves the problem with the ``tutor_solve`` prompt,
up to ``submissions`` times (default 10 for code domains, 5 otherwise),
seeing only that its earlier submissions were not accepted (the verifier's
pass/fail, no test details).  KITE's participants may not take notes during
ideation (§4.1), so by default (``notes=False``) nothing of the dialogue
reaches phase 2.  ``notes=True`` is an option for an LLM student, which has
no memory of the dialogue: it first writes its plan in its own words, and
that plan (never a phase-1 message) is all it keeps.

``ideation_turns=0`` is the *solo* condition (one step, action ignored): the
baseline for transfer rates.  A model's solo skill in KITE (§4.2) is
zero-shot: it tries each task three times and the task counts as solvable
when at least one try is correct.  So a solo episode makes ``solo_tries``
(3) independent tries of the ``tutor_solve`` prompt, none seeing another,
and is solved when any of them is (``solved_at``: the first correct try);
``solo_tries=None`` runs the solo condition with phase 2's submissions instead.

With ``elo_selection=True`` the env rates its student as KITE does (App.
C.8, :mod:`intbench.tutor.elo`): each reset draws a problem not drawn before
from the domain's band above the student's current rating (a ``problem_id``
in the reset options still wins; ``problem_index`` is ignored), and each
finished episode moves the rating (solved, or the submission limit reached
unsolved).  The first ``calibration_tasks`` episodes are solo solves (condition
``"calibration"``, action ignored) that set the starting rating; the rest are
ideation episodes.  The ratings live in the env (one env is one student; a
resumed run calibrates again); ``metadata["elo"]`` records each update.

Observation (``Dict``): ``problem``, ``dialogue`` (the teacher's view so
far), ``student_message`` (the student's latest message), ``turn`` (teacher
turns taken), ``withheld``, ``submissions`` (phase-2 submissions made) and
``solved``.

Action: ``{"intervene": 0|1, "message": str}`` (``intervene=0``: the teacher
says nothing this turn) or a bare string (the message; reasoning in
``<think>`` is dropped; empty means nothing).  Malformed actions count as
saying nothing and are reported in ``info["action_error"]``; they never raise.

Reward: at the last step, a preset of :mod:`intbench.envs.rewards` over
``success`` (phase 2 solved the problem), ``leaked`` (teacher messages that
give the answer away, by :func:`~intbench.verifiers.leakage.leak_verdict`,
whether or not the checker withheld them: the teacher still tried to tell)
and the transfer arms (a fresh variant after the original problem, with and
without the delivered teacher messages; ``transfer_gain`` is their
difference; see :mod:`intbench.envs.transfer`); ``"success"`` by default, 1
for a solve less 2 per leaking message.  A message whose leak check could
not finish scores the transfer arms as waiting.
``info`` holds ``messages`` (the ``tutor_teacher_ideation`` prompt for the
teacher's next message), ``teacher_turn``, ``problem_id``, ``turn``,
``withheld``, ``check`` (the checker's verdict, only at a step whose message
was checked), ``solved_at`` (the accepted submission, 0 while unsolved) and,
at the end, ``record`` (the episode record, a read-only mapping without
wall-clock times; with them it is ``env.unwrapped.last_episode``).  The record's ``steps`` hold each teacher
turn, ``attempts`` the phase-2 submissions (a solo episode's tries), ``solved_at``
the first accepted one, ``condition`` ``"ideation"``, ``"solo"`` or ``"calibration"``.
"""

from __future__ import annotations

import time
from dataclasses import replace
from typing import Any

import numpy as np
from gymnasium import spaces

from intbench.agents.backends import backend_name, shared_backend
from intbench.agents.base import ChatBackend
from intbench.agents.parsing import strip_think
from intbench.envs import flows
from intbench.envs.common import (
    MAX_MESSAGE,
    FlowEnv,
    message_action_space,
    parse_message_action,
    reset_options,
    sampling_from,
)
from intbench.envs.domains.prompting import render_messages
from intbench.envs.domains.registry import get_domain
from intbench.envs.env_options import TutorOptions
from intbench.envs.rewards import NO_TRANSFER, resolve_weights, weighted_reward
from intbench.envs.spaces import UnicodeText, as_counter, counter
from intbench.records import Attempt, TutorStep
from intbench.tutor.checker import CheckResult, parse_checker_reply, rules_check
from intbench.tutor.elo import EloTable, config_for

# KITE's submission budgets: 10 for code, 5 for math.
DEFAULT_SUBMISSIONS = {"code": 10, "other": 5}
WITHHELD_NOTE = "(The teacher's message was withheld by the checker.)"
NOT_ACCEPTED = "not accepted"

# Ideation messages and notes are short; a long one is cut rather than waited for.
IDEATION_MAX_TOKENS = 256
CHECKER_DEFAULTS = {"temperature": 0.0, "top_p": 1.0, "max_tokens": 128}


class TutorEnv(FlowEnv):
    """Two-phase KITE episode: checked ideation dialogue, then independent solving.

    ``gym.make`` keyword arguments: :class:`TutorOptions`.
    """

    options_class = TutorOptions
    options: TutorOptions

    def __init__(self, **kwargs: Any):
        super().__init__(**kwargs)
        options = self.options
        self.reward_weights = resolve_weights(options.reward, "tutor")
        self._init_transfer(self.reward_weights)
        domain = self.domain
        submissions = options.submissions
        if submissions is None:
            kind = get_domain(domain).kind
            submissions = DEFAULT_SUBMISSIONS["code" if kind == "code" else "other"]
        self.submissions = submissions
        self.ideation_sampling = replace(
            self.student_sampling,
            max_tokens=min(self.student_sampling.max_tokens, IDEATION_MAX_TOKENS),
        )
        self.checker_sampling = sampling_from(options.checker_sampling, **CHECKER_DEFAULTS)
        checker = options.resolved_checker
        self.checker_spec = "rules" if checker == "rules" else backend_name(checker)
        self.ratings = EloTable(config_for(domain)) if options.elo_selection else None
        self._rated_episodes = 0
        self._seen: set[str] = set()  # problems drawn by rating since the pool last started over

        self.observation_space = spaces.Dict(
            {
                "problem": UnicodeText(),
                "dialogue": UnicodeText(),
                "student_message": UnicodeText(),
                "turn": counter(),
                "withheld": counter(),
                "submissions": counter(),
                "solved": spaces.Discrete(2),
            }
        )
        self.action_space = message_action_space()

    def _role_backends(self) -> dict[str, ChatBackend]:
        checker = self.options.resolved_checker
        return {} if checker == "rules" else {"checker": shared_backend(checker)}

    def summary_settings(self) -> dict:
        """The checker this run uses, for summary.json (rules: the offline fallback)."""
        settings = {"checker": self.checker_spec}
        if self.checker_spec == "rules":
            settings["checker_note"] = (
                "rules checker: the offline fallback; KITE §3 withholds messages with a checker "
                "model (pass checker=SPEC, or a judge model)"
            )
        return settings

    # ------------------------------------------------------------------ reset
    def reset_flow(self, *, seed: int | None = None, options: dict | None = None):
        """Flow version of :meth:`reset`: draws the problem; the student opens the dialogue."""
        calibrating = False
        if self.ratings is None:
            problem = self._draw_problem(seed, options)
        else:
            problem = self._draw_rated_problem(self.ratings, seed, options)
            calibrating = self._rated_episodes < self.options.calibration_tasks
            self._rated_episodes += 1
        self._problem = problem
        self._dialogue: list[dict] = []  # {"role", "content", "withheld", "reason"}
        self._attempts: list[Attempt] = []
        self._turn = 0
        self._withheld = 0
        self._leaked = 0
        self._undetermined = 0
        self._judged = 0
        self._waived = 0
        self._last_check: CheckResult | None = None
        self._ideation_turns = 0 if calibrating else self.options.ideation_turns
        condition = "calibration" if calibrating else "ideation" if self._ideation_turns else "solo"
        self._episode = self._new_episode(
            "tutor",
            problem,
            condition,
            config={
                "ideation_turns": self._ideation_turns,
                "elo_selection": self.options.elo_selection,
                "checker": self.checker_spec,
                "submissions": self.submissions,
                "notes": self.options.notes,
                "solo_tries": self.options.solo_tries if condition == "solo" else None,
                "reward_weights": self.reward_weights,
                "student_sampling": dict(self.student_sampling.__dict__),
                "checker_sampling": dict(self.checker_sampling.__dict__),
            },
            tokens={
                "student_prompt": 0,
                "student_completion": 0,
                "checker_prompt": 0,
                "checker_completion": 0,
            },
            timings={"ideation_s": 0.0, "solve_s": 0.0},
            metadata={"problem": problem.metadata, "notes": None, "withheld": 0},
        )
        if self._ideation_turns:
            yield from self._student_says(final=False)
        return self._observation(), self._info()

    # ------------------------------------------------------------------- step
    def step_flow(self, action):
        """Flow version of :meth:`step`."""
        self._check_steppable()
        episode = self._current_episode
        action_error = None
        self._last_check = None
        if self._ideation_turns:
            started = time.perf_counter()
            message, action_error = parse_message_action(action, strip_think, MAX_MESSAGE)
            yield from self._teacher_says(message, action_error)
            self._turn += 1
            if not episode.error:
                if self._turn < self._ideation_turns:
                    yield from self._student_says(final=False)
                elif self.options.notes:
                    yield from self._student_says(final=True)
            episode.timings["ideation_s"] += time.perf_counter() - started
        transfer = dict(NO_TRANSFER)
        if episode.error or self._turn >= self._ideation_turns:
            if not episode.error:
                started = time.perf_counter()
                # The transfer attempt needs only the dialogue's messages, so it shares
                # phase 2's batches.
                _, transfer = yield from flows.gather(
                    self._solve(), self._transfer(self._delivered_messages(), None)
                )
                if self._undetermined:  # a leak check that could not finish: as waiting
                    alone = transfer["transfer_alone"]
                    transfer = {"transfer": alone, "transfer_alone": alone, "transfer_gain": 0.0}
                episode.timings["solve_s"] += time.perf_counter() - started
            self._terminated = True
            if self.ratings is not None and not episode.error:
                self._update_rating(self.ratings, episode)
        solved = float(episode.solved_at is not None)
        episode.metadata["withheld"] = self._withheld
        episode.reward_components = {
            "solved": solved,
            "withheld": float(self._withheld),
            "submissions": float(len(self._attempts)),
            "success": solved,
            "leaked": float(self._leaked),
            "leak_undetermined": float(self._undetermined),
            "judge_leaked": float(self._judged),
            "derailed": 0.0,
            # Messages the student saw (the checker withheld the others), less those
            # whose leak check could not finish.
            "messages": float(
                sum(
                    bool(step.message) and not (isinstance(step, TutorStep) and step.withheld)
                    for step in episode.steps
                )
                - self._waived
            ),
            **transfer,
        }
        reward = (
            weighted_reward(episode.reward_components, self.reward_weights)
            if self._terminated
            else 0.0
        )
        episode.reward = reward
        return self._step_result(reward, action_error, episode, "tutor")

    def _delivered_messages(self) -> str | None:
        """The teacher's messages the student saw (none withheld), for the transfer attempt."""
        delivered = [
            t["content"] for t in self._dialogue if t["role"] == "teacher" and not t["withheld"]
        ]
        return "\n\n".join(delivered) or None

    # ------------------------------------------------------------- ideation
    def _student_says(self, final: bool):
        """Flow: the student's next ideation message, or (``final``) its plan for phase 2."""
        messages = render_messages(
            self._current_problem.domain,
            "tutor_student_ideation",
            problem=self._current_problem,
            dialogue=self._view("student"),
            final=final,
        )
        sampling = replace(self.ideation_sampling, seed=self._draw_seed())
        completion = yield flows.Generate("student", messages, sampling)
        self._count_tokens("student", completion)
        if completion.error:
            self._current_episode.error = f"student ideation call failed: {completion.error}"
            return
        text = strip_think(completion.text).strip()
        if final:
            self._current_episode.metadata["notes"] = text
        else:
            self._dialogue.append(
                {"role": "student", "content": text, "withheld": False, "reason": ""}
            )

    def _teacher_says(self, message: str | None, action_error: str | None):
        """Flow: check the teacher's message and deliver or withhold it."""
        step = TutorStep(
            step=self._turn + 1,
            student_message=self._latest_student_message(),
            message=message,
            action_error=action_error,
        )
        if message is not None:
            verdicts = yield from self._check_leak(message, None)
            self._leaked += verdicts[0] == "leaked"
            self._judged += verdicts[1] == "leaked"
            undetermined = "undetermined" in verdicts and "leaked" not in verdicts
            self._undetermined += undetermined
            check = rules_check(self._current_problem, message)
            if not check.leak and self.checker_spec != "rules":
                check = yield from self._llm_check(message)
            self._last_check = check
            self._withheld += int(check.leak)
            # Delivered but not determined: scored as waiting, so it costs nothing.
            self._waived += undetermined and not check.leak
            self._dialogue.append(
                {
                    "role": "teacher",
                    "content": message,
                    "withheld": check.leak,
                    "reason": check.reason,
                }
            )
            step.withheld, step.check = check.leak, check.to_dict()
        self._current_episode.steps.append(step)

    def _llm_check(self, message: str):
        messages = render_messages(
            self._current_problem.domain,
            "tutor_checker",
            problem=self._current_problem,
            message=message,
        )
        completion = yield flows.Generate("checker", messages, self.checker_sampling)
        self._count_tokens("checker", completion)
        return parse_checker_reply(completion.text, completion.error)

    # ------------------------------------------------------------ Elo rating
    def _draw_rated_problem(self, ratings: EloTable, seed: int | None, options: dict | None):
        """The problem KITE would give next: unseen, in the band above the student's rating.

        A ``problem_id`` in the reset options is drawn as asked.  Once every
        problem was drawn, the pool starts over.
        """
        options = {k: v for k, v in reset_options(options).items() if k != "problem_index"}
        if "problem_id" not in options:
            problems = self.problems
            if len(self._seen) >= len(problems):
                self._seen.clear()
            rng = np.random.default_rng(seed) if seed is not None else self.np_random
            options["problem_id"] = ratings.select_task(
                self.student_spec,
                [p.id for p in problems],
                rng,
                self._seen,
                {p.id: p.metadata for p in problems},
            )
        self._seen.add(options["problem_id"])
        return self._draw_problem(seed, options)

    def _update_rating(self, ratings: EloTable, episode) -> None:
        """KITE's update once the problem is solved or the submission limit is reached."""
        before = ratings.student(self.student_spec)
        after, task = ratings.record(
            self.student_spec, self._current_problem.id, episode.solved_at is not None,
            self._current_problem.metadata,
        )  # fmt: skip
        episode.metadata["elo"] = {"student_before": before, "student_after": after, "task": task}

    # ---------------------------------------------------------------- solving
    def _solve(self):
        """Flow: phase 2, up to ``submissions`` attempts (a solo episode: ``solo_tries``
        independent tries); never shown the dialogue."""
        problem, episode = self._current_problem, self._current_episode
        notes = episode.metadata["notes"] if self.options.notes else None
        # Zero-shot tries see no earlier try: each is a fresh sample of the same prompt.
        independent = self.options.solo_tries if episode.condition == "solo" else None
        for k in range(1, (independent or self.submissions) + 1):
            earlier = (
                []
                if independent
                else [{"attempt": a.text, "feedback": NOT_ACCEPTED} for a in self._attempts]
            )
            messages = render_messages(
                problem.domain, "tutor_solve", problem=problem, notes=notes, attempts=earlier
            )
            if k == 1:
                sampling = replace(self.student_sampling, seed=self._student_seed)
                attempt, _ = yield from self._cached_student_call(messages, sampling, problem)
            else:
                sampling = replace(self.student_sampling, seed=self._draw_seed())
                attempt = yield from self._student_attempt(messages, sampling, problem)
            self._attempts.append(attempt)
            episode.attempts.append(attempt)
            episode.tokens["student_prompt"] += attempt.prompt_tokens
            episode.tokens["student_completion"] += attempt.completion_tokens
            status = attempt.status
            if attempt.error or status == "error":
                episode.error = (
                    attempt.error or f"grader error on submission {k}: {attempt.verdict.feedback}"
                )
                return
            if status == "correct":
                episode.solved_at = k
                return

    # ------------------------------------------------------- observation/info
    def _view(self, who: str) -> list[dict]:
        """The dialogue as ``who`` sees it: withheld messages are a note for the
        student and marked with the checker's reason for the teacher."""
        view = []
        for turn in self._dialogue:
            content = turn["content"]
            if turn["withheld"]:
                content = (
                    WITHHELD_NOTE
                    if who == "student"
                    else f"[withheld from the student: {turn['reason']}] {content}"
                )
            view.append({"role": turn["role"], "content": content})
        return view

    def _latest_student_message(self) -> str:
        return next((t["content"] for t in reversed(self._dialogue) if t["role"] == "student"), "")

    def _count_tokens(self, role: str, completion) -> None:
        self._current_episode.tokens[f"{role}_prompt"] += completion.prompt_tokens
        self._current_episode.tokens[f"{role}_completion"] += completion.completion_tokens

    def _teacher_turn(self) -> bool:
        return (
            not self._terminated
            and self._turn < self._ideation_turns
            and not self._current_episode.error
        )

    def _observation(self) -> dict:
        dialogue = "\n".join(
            f"{'Student' if t['role'] == 'student' else 'Teacher'}: {t['content']}"
            for t in self._view("teacher")
        )
        return {
            "problem": self._current_problem.question,
            "dialogue": dialogue,
            "student_message": self._latest_student_message(),
            "turn": as_counter(self._turn),
            "withheld": as_counter(self._withheld),
            "submissions": as_counter(len(self._attempts)),
            "solved": int(self._current_episode.solved_at is not None),
        }

    def _info(self) -> dict:
        teacher_turn = self._teacher_turn()
        messages = (
            render_messages(
                self._current_problem.domain,
                "tutor_teacher_ideation",
                problem=self._current_problem,
                dialogue=self._view("teacher"),
            )
            if teacher_turn
            else []
        )
        info = {
            "messages": messages,
            "teacher_turn": teacher_turn,
            "problem_id": self._current_problem.id,
            "turn": self._turn,
            "withheld": self._withheld,
            # An int in every episode (0: unsolved), so vector envs can stack it.
            "solved_at": self._current_episode.solved_at or 0,
        }
        # Absent rather than None when nothing was checked: vector envs merge a
        # key that some sub-envs lack, not one that is None in some and a dict in others.
        if self._last_check:
            info["check"] = self._last_check.to_dict()
        return info

    def render(self):
        if self.render_mode != "ansi" or self._episode is None:
            return None
        lines = [
            f"[{self._current_problem.id}] tutor: turn {self._turn}/{self._ideation_turns}, {self._withheld} withheld"
        ]
        lines += [f"{t['role']}: {t['content']}" for t in self._view("teacher")]
        for i, attempt in enumerate(self._attempts):
            lines.append(f"-- submission {i + 1} ({attempt.status}):\n{attempt.text}")
        return "\n".join(lines)


def batched_tutor(num_envs: int = 1, **kwargs):
    """Vector entry point of the tutor ids: sub-envs' model calls are batched."""
    from intbench.envs.vector import BatchedVectorEnv

    return BatchedVectorEnv([lambda: TutorEnv(**kwargs) for _ in range(num_envs)])
