"""The study's state machine: what each participant action does, independent of HTTP.

Every method validates its input and raises :class:`ActionError` (with an
HTTP-like status and a message for the participant) instead of changing
anything when the input is bad.  A repeated action that was already applied
(a double click on a button) raises :class:`AlreadyDone`, which the web layer
treats as a harmless no-op; a replayed submission of a trial that was already
submitted is refused with 409, so a trial is never recorded twice.

Each participant has one session, opened by the first browser that visits
(:meth:`Study.open_session`); only the digest of its token is stored, with the
participant's state, so sessions survive a restart.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Mapping

from intbench.human import content, security
from intbench.human.schedule import (
    find_trial,
    new_participant,
    random_participant_id,
    valid_participant_id,
)
from intbench.human.storage import StudyStore
from intbench.human.study import (
    PENDING_ERROR,
    ProblemView,
    StudyConfig,
    play_trial,
    print_progress,
    warm_up,
)
from intbench.human.worker import ContinuationWorker
from intbench.records import Episode

logger = logging.getLogger(__name__)


class ActionError(Exception):
    """A participant action that was refused; nothing was written."""

    def __init__(self, status: int, message: str):
        super().__init__(message)
        self.status = status
        self.message = message


class AlreadyDone(Exception):
    """The action was already applied (a double submission); nothing new was written."""


class Study:
    """One running study: its config, problem views, files and continuation worker.

    Args:
        config: the study settings.
        out_dir: the study directory (see :mod:`intbench.human.storage`).
        views: precomputed problem views (default: :func:`warm_up` them now).
        progress: print warm-up progress on stderr.
    """

    def __init__(
        self,
        config: StudyConfig,
        out_dir,
        views: dict[str, ProblemView] | None = None,
        progress: bool = False,
    ):
        self.config = config
        self.store = StudyStore(out_dir)
        self.store.check_study(config.fingerprint())
        # Analyses (leakage audit, categorisation, generalization) read a run's problems from here.
        self.store.run_dir.save_problems(config.problems)
        self.views = (
            views if views is not None else warm_up(config, print_progress if progress else None)
        )
        self._lock = threading.RLock()
        self.worker = ContinuationWorker(config, self._append_completed)
        for record in list(self.store.episodes.records.values()):
            if record.metadata.get("human", {}).get("continuation") in ("pending", "failed"):
                self.worker.submit(record)

    def close(self) -> None:
        self.worker.stop()

    def _append_completed(self, record: Episode) -> None:
        with self._lock:
            self.store.append_episode(record)

    # ---------------------------------------------------------- participants
    def start(self, participant_id: str | None, source: str) -> str:
        """Create the participant (a random id when none is given) or return the existing one."""
        if participant_id is None:
            participant_id, source = random_participant_id(), "random"
        if not valid_participant_id(participant_id):
            raise ActionError(
                400, "A participant id may only hold letters, digits, '-' and '_' (at most 64)."
            )
        with self._lock:
            if self.store.load_participant(participant_id) is None:
                index = len(self.store.participant_ids())  # enrolment order: balanced questions
                state = new_participant(self.config, participant_id, source, index)
                self.store.save_participant(state)
        return participant_id

    def question_counts(self) -> list[dict]:
        """Per scored question, in the study's order: how many participants were
        assigned it and how many annotations (submitted trials) it has."""
        with self._lock:
            states = [self.store.load_participant(p) for p in self.store.participant_ids()]
            trials = [t for state in states if state for t in state["trials"]]
            rows = []
            for problem in self.config.main_problems:
                mine = [t for t in trials if t["problem_id"] == problem.id]
                annotated = sum(self.store.record_of(t["trial_id"]) is not None for t in mine)
                rows.append(
                    {"problem_id": problem.id, "assigned": len(mine), "annotated": annotated}
                )
        return rows

    def participant(self, participant_id: str) -> dict:
        """The participant's state with its phase brought up to date; unknown ids are refused."""
        if not valid_participant_id(participant_id):
            raise ActionError(400, "This is not a valid participant id.")
        state = self.store.load_participant(participant_id)
        if state is None:
            raise ActionError(
                404, "Unknown participant. Please open the study from the link you were given."
            )
        # The episode log is the source of truth for scored trials: a kill after
        # recording a trial but before saving the state must not lose the step.
        if state["phase"] == "trials" and self.current_trial(state) is None:
            state["phase"] = "questionnaire"
        if participant_id in self.store.questionnaires:
            state["phase"] = "done"
        return state

    def submitted(self, trial: dict) -> bool:
        return (
            trial["submitted"]
            if trial["practice"]
            else self.store.record_of(trial["trial_id"]) is not None
        )

    def current_trial(self, state: dict) -> dict | None:
        """The trial the participant is on (practice or scored), or ``None`` outside trial phases."""
        trials = {"practice": state["practice"], "trials": state["trials"]}.get(state["phase"], [])
        return next((t for t in trials if not self.submitted(t)), None)

    # -------------------------------------------------------------- sessions
    def open_session(self, participant_id: str) -> str | None:
        """A new session token for a participant without a session, else ``None``.

        The first browser to ask gets the participant's session; any later
        one gets nothing, so an id alone never takes over a session.
        """
        with self._lock:
            state = self.participant(participant_id)
            if state.get("session") is not None:
                return None
            token = security.new_token()
            state["session"] = {
                "token_sha256": security.token_digest(token),
                "opened_at": time.time(),
            }
            self.store.save_participant(state)
            return token

    def session_matches(self, participant_id: str, token: str | None) -> bool:
        """Whether ``token`` is the participant's session token."""
        session = self.participant(participant_id).get("session")
        if session is None or not token:
            return False
        return security.same_token(security.token_digest(token), session["token_sha256"])

    # --------------------------------------------------------------- phases
    def finish_instructions(self, participant_id: str) -> None:
        with self._lock:
            state = self.participant(participant_id)
            if state["phase"] != "instructions":
                raise AlreadyDone
            state["phase"] = "practice" if state["practice"] else "check"
            self.store.save_participant(state)

    def check(self, participant_id: str, form: Mapping[str, str]) -> list[str]:
        """Grade the comprehension check; returns the wrongly answered question ids."""
        with self._lock:
            state = self.participant(participant_id)
            if state["phase"] != "check":
                raise AlreadyDone
            wrong = content.check_answers(self.config.condition, form)
            state["check_attempts"] += 1
            if not wrong:
                state["phase"] = "trials"
            self.store.save_participant(state)
            return wrong

    def questionnaire(self, participant_id: str, form: Mapping[str, str]) -> list[str]:
        """Save the exit questionnaire; returns the problems to fix (nothing saved then)."""
        with self._lock:
            state = self.participant(participant_id)
            if state["phase"] == "done":
                raise AlreadyDone
            if state["phase"] != "questionnaire":
                raise ActionError(409, "The questionnaire comes after the last question.")
            answers, problems = content.questionnaire_answers(form)
            if problems:
                return problems
            self.store.append_questionnaire(
                {
                    "participant_id": participant_id,
                    "teacher": f"human:{participant_id}",
                    "condition": self.config.condition,
                    "env_id": self.config.env_id,
                    "source": state["source"],
                    "check_attempts": state["check_attempts"],
                    "submitted_at": time.time(),
                    **answers,
                }
            )
            state["phase"] = "done"
            self.store.save_participant(state)
            return []

    # --------------------------------------------------------------- trials
    def mark_shown(self, participant_id: str, trial_id: str) -> None:
        """The page reports that the current trial is displayed: the start of its timing.

        Only the first report counts, so a reload does not restart the clock.
        """
        with self._lock:
            state, trial = self._open_trial(participant_id, trial_id)
            if trial["shown_at"] is None:
                trial["shown_at"] = time.time()
                self.store.save_participant(state)

    def _open_trial(self, participant_id: str, trial_id: str) -> tuple[dict, dict]:
        """The participant's state and the trial ``trial_id``, which must be their current one."""
        state = self.participant(participant_id)
        trial = find_trial(state, trial_id)
        if trial is None:
            raise ActionError(404, "This question does not exist for you. Please reload the page.")
        if self.submitted(trial):
            raise AlreadyDone
        if trial is not self.current_trial(state):
            raise ActionError(409, "This is not your current question. Please reload the page.")
        return state, trial

    def confirm(self, participant_id: str, trial_id: str) -> None:
        """Standard: the participant has read the question and reference solution."""
        with self._lock:
            state, trial = self._open_trial(participant_id, trial_id)
            if trial["confirmed_at"] is None:
                trial["confirmed_at"] = now = time.time()
                _seen_by(trial, now)
                self.store.save_participant(state)

    def reveal(self, participant_id: str, trial_id: str, cursor: str | None) -> None:
        """Standard: show the next increment.  ``cursor`` is what the page showed,
        so a double click reveals one increment, not two."""
        with self._lock:
            state, trial = self._open_trial(participant_id, trial_id)
            view = self.views[trial["problem_id"]]
            if self.config.condition != "standard" or trial["confirmed_at"] is None:
                raise ActionError(409, "Nothing to reveal on this page. Please reload it.")
            if _as_int(cursor) != trial["cursor"]:
                raise AlreadyDone
            if trial["cursor"] >= len(view.cuts) - 1:
                raise ActionError(409, "The whole reasoning is already shown.")
            trial["cursor"] += 1
            trial["reveal_times"].append(time.time())
            self.store.save_participant(state)

    def submit(self, participant_id: str, trial_id: str, form: Mapping[str, str]) -> None:
        """The participant's decision on a trial: record it (scored trials) and move on."""
        with self._lock:
            try:
                state, trial = self._open_trial(participant_id, trial_id)
            except AlreadyDone:
                raise ActionError(409, "This question was already submitted.") from None
            decision = self._decision(trial, form)
            now = time.time()
            _seen_by(trial, now)
            if trial["practice"]:
                trial.update(submitted=True, decision=decision, submitted_at=now)
            else:
                record = play_trial(
                    self.config, trial["problem_id"], trial["env_seed"], decision, defer=True
                )
                self._annotate(record, state, trial, decision, now)
                self.store.append_episode(record)
                if record.metadata["human"]["continuation"] == "pending":
                    self.worker.submit(record)
            if self.current_trial(state) is None:
                state["phase"] = {"practice": "check", "trials": "questionnaire"}[state["phase"]]
            self.store.save_participant(state)

    def _decision(self, trial: dict, form: Mapping[str, str]) -> dict:
        """Validate the form into ``{"reveals", "action"}`` for :func:`play_trial`."""
        view = self.views[trial["problem_id"]]
        action = form.get("action")
        if action not in ("intervene", "none"):
            raise ActionError(400, "Please choose whether to send a message.")
        message = form.get("message", "") or ""
        if action == "intervene":
            if not message.strip():
                raise ActionError(
                    400, "Your message is empty. Write a message, or choose not to send one."
                )
            if len(message) > content.MAX_TEXT:
                raise ActionError(
                    400,
                    f"Your message is {len(message):,} characters long; the limit is {content.MAX_TEXT:,}.",
                )
        if self.config.condition == "oracle":
            if action == "none":
                return {"reveals": 0, "action": {"intervene": 0, "message": ""}}
            position = _as_int(form.get("position"))
            if position is None or not 0 <= position <= len(view.trace):
                raise ActionError(
                    400, "Click in the student's reasoning to choose where your message goes."
                )
            return {
                "reveals": 0,
                "action": {"intervene": 1, "message": message, "position": position},
            }
        if trial["confirmed_at"] is None:
            raise ActionError(409, "Please confirm that you have read the question first.")
        if _as_int(form.get("cursor")) != trial["cursor"]:
            raise ActionError(409, "This page is out of date. Please reload it.")
        at_end = trial["cursor"] >= len(view.cuts) - 1
        if action == "none" and not at_end:
            raise ActionError(
                400, "You can move on once the whole reasoning is shown; reveal more first."
            )
        # A "wait" at the last increment ends the episode without an intervention.
        intervene = (
            {"intervene": 1, "message": message}
            if action == "intervene"
            else {"intervene": 0, "message": ""}
        )
        return {"reveals": trial["cursor"], "action": intervene}

    def _annotate(
        self, record: Episode, state: dict, trial: dict, decision: dict, now: float
    ) -> None:
        participant_id = state["participant_id"]
        attempt = record.intervention.attempt if record.intervention else None
        pending = attempt is not None and attempt.error == PENDING_ERROR
        record.teacher = f"human:{participant_id}"
        record.timings["teacher_s"] = now - trial["shown_at"]
        if trial["confirmed_at"] is not None:
            record.timings["reading_s"] = trial["confirmed_at"] - trial["shown_at"]
        record.metadata["run_key"] = trial["trial_id"]
        record.metadata["human"] = {
            "participant_id": participant_id,
            "trial_id": trial["trial_id"],
            "trial_index": trial["index"],
            "env_seed": trial["env_seed"],
            "decision": decision,
            "continuation": "pending" if pending else "none",
            "shown_at": trial["shown_at"],
            "confirmed_at": trial["confirmed_at"],
            "reveal_times": list(trial["reveal_times"]),
            "submitted_at": now,
        }


def _seen_by(trial: dict, now: float) -> None:
    """A participant acting on a trial has seen it, even if the page has not reported it
    (no JavaScript, or the report is still on its way)."""
    if trial["shown_at"] is None:
        trial["shown_at"] = now


def _as_int(value: str | None) -> int | None:
    try:
        return int(str(value).strip())
    except (TypeError, ValueError):
        return None
