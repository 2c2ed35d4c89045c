"""Does a teacher message give the answer away?

An overlap-based detector, by domain: the reference answer appearing in the
message as a standalone expression (math, text domains), the answer grid
written out (ARC), or code from the reference solution (code domains).  It is
cheap and deterministic; an LLM judge (the ``leakage_judge`` prompt) can be
layered on top for subtler leaks.

Unlike the graders it reads the whole message, since a leak anywhere in it
counts, and every check takes time linear in the message's length.
"""

from __future__ import annotations

import re

from intbench.records import Problem

_FENCE = re.compile(r"```")
_LATEX_NOISE = re.compile(r"\\left|\\right|\\!|\\,|\\;|\\ |\$")
# Spaces next to punctuation carry no meaning ("\frac {1} {2}"); spaces between
# words do, and keep "is 3" from reading as "is3".
_LOOSE_SPACE = re.compile(r"(?<=\W)\s+|\s+(?=\W)")


def _normalise_math(text: str) -> str:
    text = text.replace("\\dfrac", "\\frac").replace("\\tfrac", "\\frac")
    return _LOOSE_SPACE.sub("", _LATEX_NOISE.sub("", text)).lower()


def _contains_standalone(haystack: str, needle: str) -> bool:
    """``needle`` occurs in ``haystack`` not glued to more of a number or word
    (so "3" is not in "13" or "3.5"); only the needle's alphanumeric ends need a boundary."""
    if not needle:
        return False
    before = r"(?<![0-9A-Za-z.])" if needle[0].isalnum() else ""
    after = r"(?![0-9A-Za-z]|\.\d)" if needle[-1].isalnum() else ""
    return re.search(before + re.escape(needle) + after, haystack) is not None


def _math_leak(answer: str, message: str) -> bool:
    return _contains_standalone(_normalise_math(message), _normalise_math(answer))


def _text_leak(answer: str, message: str, aliases: list[str]) -> bool:
    from intbench.verifiers.text import canonical_answer, normalize_free_text

    # Word boundaries: "ka" is not leaked by "kata".
    text = re.sub(r"[^\w,]+", " ", normalize_free_text(message))
    for candidate in [answer, *aliases]:
        norm = re.sub(r"[^\w,]+", " ", canonical_answer(str(candidate))).strip()
        if norm and re.search(rf"(?<!\w){re.escape(norm)}(?!\w)", text):
            return True
    return False


def _arc_leak(answer: list, message: str) -> bool:
    digits = re.sub(r"[^0-9]", "", message)
    for grid in answer or []:
        flat = "".join(str(cell) for row in grid for cell in row)
        # Tiny grids occur by chance in any message with numbers.
        if len(flat) >= 4 and flat in digits:
            return True
    return False


def _code_leak(solution: str | None, message: str) -> bool:
    if _FENCE.search(message):
        return True
    if not solution:
        return False
    lines = {line.strip() for line in solution.splitlines() if len(line.strip()) >= 25}
    return any(line in message for line in lines)


def answer_leaked(problem: Problem, message: str | None) -> bool:
    """Whether ``message`` reveals ``problem``'s reference answer or solution."""
    if not message:
        return False
    if problem.domain in ("math", "omni_math"):
        return problem.answer is not None and _math_leak(str(problem.answer), message)
    if problem.domain in ("linguini", "brainteaser"):
        aliases = list(problem.fields.get("aliases", []))
        return problem.answer is not None and _text_leak(str(problem.answer), message, aliases)
    if problem.domain == "arc":
        return _arc_leak(problem.answer, message)
    return _code_leak(problem.solution, message)
