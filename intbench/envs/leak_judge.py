"""The optional LLM leak judge: a model's reading of whether a teacher message gives
the answer away, beside the leak detector's answer recovery.

Off unless the env option ``leak_judge`` names a model.  The judge sees the
reference solution, the student's latest answer and the message (the
feedback paper's leakage audit prompt, ``leakage_judge``), greedily, and its
``Leaked: True|False`` becomes the ``judge_leaked`` reward component, which
``teaching`` charges like ``leaked``.  A failed call or an unreadable reply
is ``"undetermined"``: the message then scores as waiting, never a penalty
and never more.
"""

from __future__ import annotations

from intbench.agents.base import SamplingParams
from intbench.agents.parsing import parse_leakage
from intbench.envs.domains.prompting import reference_text, render_messages
from intbench.envs.flows import Generate
from intbench.records import Problem

ROLE = "leak_judge"
SAMPLING = SamplingParams(temperature=0.0, max_tokens=256)
"""Greedy decoding: the same message gets the same verdict every time."""


def leak_judge_messages(problem: Problem, message: str, student_answer: object) -> list[dict]:
    """The ``leakage_judge`` prompt for one message about ``problem`` (``student_answer``:
    the student's latest answer, a grid or text; ``None`` or empty: none yet)."""
    return render_messages(
        problem.domain,
        "leakage_judge",
        solution=reference_text(problem),
        student_answer="(no answer)"
        if student_answer is None or student_answer == ""
        else student_answer,
        message=message,
    )


def judge_leak(problem: Problem, message: str, student_answer: object):
    """Flow: the judge's verdict on ``message`` -> "leaked", "clean" or "undetermined"."""
    completion = yield Generate(
        ROLE, leak_judge_messages(problem, message, student_answer), SAMPLING
    )
    if completion.error:
        return "undetermined"
    leaked = parse_leakage(completion.text).leaked
    return "undetermined" if leaked is None else "leaked" if leaked else "clean"
