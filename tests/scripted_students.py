"""Scripted students for subprocess tests (importable as ``scripted:tests.scripted_students:NAME``)."""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

TRACE = "We add the two numbers one digit at a time, carrying when needed. " * 3 + "So \\boxed{7}."


def slow(messages):
    """A fixed trace after a short pause, so that kills land mid-run."""
    time.sleep(0.05)
    return TRACE


def flaky(messages):
    """Fails on problems whose prompt mentions a marker file's content, until the file is gone."""
    marker = Path(os.environ["INTBENCH_TEST_FLAKY"])
    if marker.exists() and marker.read_text() in messages[-1]["content"]:
        raise RuntimeError("injected student failure")
    return TRACE


def stalls(messages):
    """Stalls for a few seconds on the problem named in a marker file, to trip episode limits."""
    marker = Path(os.environ["INTBENCH_TEST_STALL"])
    if marker.exists() and marker.read_text() in messages[-1]["content"]:
        time.sleep(2.5)
    return TRACE


def _fixture_answers() -> dict[str, tuple[int, str]]:
    from intbench.envs.domains.generators import generate_math

    problems = generate_math(4, seed=0, split="test")
    return {p.question: (i, p.answer) for i, p in enumerate(problems)}


def fixture_student(messages):
    """The student of ``tests/fixtures/episodes_v1``: right on some problems, after help on others.

    Problem ``i`` (of ``-n 4 --seed 0``) is solved once its prompt holds ``i``
    signs of help (earlier submissions, teacher messages); help confuses it on
    problem 3.  Runs so mix solved, helped, failed and hurt episodes.
    """
    last = messages[-1]["content"]
    if "Write only the plan" in last:
        return "PLAN: find the key quantity first, then compute it."
    if "Write your next message to the teacher" in last:
        return "Should I start from the definition?"
    text = "\n".join(m["content"] for m in messages)
    index, answer = next((v for q, v in _fixture_answers().items() if q in text), (9, "0"))
    helped = sum(text.count(sign) for sign in ("Submission ", "mistake", "second step"))
    right = helped == 0 if index == 3 else helped >= index
    return "We work it out step by step, checking each part. " * 4 + (
        f"So \\boxed{{{answer if right else 0}}}."
    )


def fixture_teacher(messages):
    """The feedback and tutor teacher of ``tests/fixtures/episodes_v1``."""
    return "<feedback>Check the second step again.</feedback>"


OVERLAP = {"active": 0, "most": 0}
_overlap_lock = threading.Lock()


def overlapping(messages):
    """A fixed trace after a short pause; ``OVERLAP["most"]`` is the most calls seen at once."""
    with _overlap_lock:
        OVERLAP["active"] += 1
        OVERLAP["most"] = max(OVERLAP["most"], OVERLAP["active"])
    time.sleep(0.05)
    with _overlap_lock:
        OVERLAP["active"] -= 1
    return TRACE


def hinted(messages):
    """Wrong (``\\boxed{0}``) until a message mentions ``HINT``; then it repeats the hint
    (so a plan it writes keeps it) and answers ``\\boxed{5}``."""
    text = "\n".join(m["content"] for m in messages)
    steps = "We add the numbers step by step. " * 4
    return steps + ("Using the HINT: so \\boxed{5}." if "HINT" in text else "So \\boxed{0}.")


def hinted_then_fails(messages):
    """As :func:`hinted`, but fails once a message mentions ``HINT``."""
    if any("HINT" in m["content"] for m in messages):
        raise RuntimeError("injected student failure")
    return hinted(messages)


def fixture_monitor_teacher(messages):
    """A Standard monitor teacher for the golden runs: waits until the trace has repeated its
    opening sentence three times, then intervenes."""
    if messages[-1]["content"].count("checking each part") >= 3:
        return "Intervene: Yes\nIntervention: Check the second step again."
    return "Intervene: No"
