"""Participants and their trials: ids, the random trial order, and the phase of the session.

A session goes instructions -> practice trials -> comprehension check ->
scored trials (in a random order per participant) -> exit questionnaire ->
done.  Trial ids are random tokens, so a participant cannot address another
participant's trial or a trial they were not given.
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
    return bool(value) and PARTICIPANT_ID.fullmatch(value) is not None


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


def new_participant(config: StudyConfig, participant_id: str, source: str) -> dict:
    """A fresh participant state with their own order of the scored trials.

    The order and env seeds derive from (study seed, participant id), so they
    are reproducible and differ between participants.
    """
    rng = random.Random(stable_hash("human-order", config.seed, participant_id))
    main = [p.id for p in config.main_problems]
    rng.shuffle(main)
    main = main[: config.trials]
    seed_of = lambda pid: int(stable_hash("human-env", config.seed, participant_id, pid)[:8], 16)  # noqa: E731
    return {
        "participant_id": participant_id,
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
