"""Participants and their trials: ids, the balanced assignment of questions, the
random trial order, and the phase of the session.

A session goes instructions -> practice trials -> comprehension check ->
scored trials (in a random order per participant) -> exit questionnaire ->
done.  Trial ids are random tokens, so a participant cannot address another
participant's trial or a trial they were not given.

Questions are assigned so that their annotation counts are balanced by
design (Int-Bench App. A: 25 participants x 6 episodes, each question
annotated 5 times): the study's questions are put in one seeded order, and
the n-th participant to enrol gets the next K of them, going round that order
(slots nK .. nK+K-1, modulo the number of questions).  After any number of
participants, the counts differ by at most one.
"""

from __future__ import annotations

import random
import re
import secrets
import time

from intbench.cache import stable_hash
from intbench.human.study import StudyConfig

PARTICIPANT_ID = re.compile(r"[A-Za-z0-9_-]{1,64}")
PHASES = ("instructions", "practice", "check", "trials", "questionnaire", "done")


def valid_participant_id(value: str | None) -> bool:
    """Participant ids are 1-64 characters of ``[A-Za-z0-9_-]`` (safe in paths and URLs)."""
    return value is not None and PARTICIPANT_ID.fullmatch(value) is not None


def random_participant_id() -> str:
    return "p" + secrets.token_hex(8)


def _trial(problem_id: str, index: int, practice: bool, env_seed: int) -> dict:
    return {
        "trial_id": secrets.token_urlsafe(9),
        "problem_id": problem_id,
        "index": index,
        "practice": practice,
        "env_seed": env_seed,
        "shown_at": None,  # first time the page reported the trial displayed
        "confirmed_at": None,  # Standard: the participant confirmed reading the question
        "cursor": 0,  # Standard: revealed increments beyond the first
        "reveal_times": [],
        "submitted": False,  # practice trials only; scored trials are looked up in the log
        "decision": None,  # practice trials only
    }


def assigned_questions(config: StudyConfig, index: int) -> list[str]:
    """The scored questions of the ``index``-th participant (0-based, in order of
    enrolment): the next K of the study's seeded question order, going round it."""
    order = [p.id for p in config.main_problems]
    random.Random(stable_hash("human-questions", config.seed)).shuffle(order)
    k = min(config.trials, len(order))
    return [order[(index * k + j) % len(order)] for j in range(k)]


def new_participant(config: StudyConfig, participant_id: str, source: str, index: int) -> dict:
    """A fresh participant state: the ``index``-th participant's questions (see
    :func:`assigned_questions`) in an order of their own.

    The order and env seeds derive from (study seed, participant id), so they
    are reproducible and differ between participants.
    """
    main = assigned_questions(config, index)
    random.Random(stable_hash("human-order", config.seed, participant_id)).shuffle(main)
    seed_of = lambda pid: int(stable_hash("human-env", config.seed, participant_id, pid)[:8], 16)  # noqa: E731
    return {
        "participant_id": participant_id,
        "index": index,  # enrolment order, which decides the questions
        "source": source,  # "random" or the URL parameter that carried the id
        "condition": config.condition,
        "created_at": time.time(),
        "phase": "instructions",
        "check_attempts": 0,
        "session": None,  # opened by the first browser to visit (see Study.open_session)
        "practice": [
            _trial(pid, i, True, seed_of(pid))
            for i, pid in enumerate(p.id for p in config.practice_problems)
        ],
        "trials": [_trial(pid, i, False, seed_of(pid)) for i, pid in enumerate(main)],
    }


def find_trial(state: dict, trial_id: str) -> dict | None:
    for trial in state["practice"] + state["trials"]:
        if trial["trial_id"] == trial_id:
            return trial
    return None
