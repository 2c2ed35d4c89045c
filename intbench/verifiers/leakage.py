"""Does a teacher message give the answer away?

An overlap-based detector, by domain kind: the reference answer appearing in
the message as whole words (text domains; LaTeX-normalised for math, which
sets :func:`math_leaked` as its ``Domain.leak_check``), the answer grid
written out (grid domains), or code from the reference solution (code domains).  It is
cheap and deterministic; an LLM judge (the ``leakage_judge`` prompt) can be
layered on top for subtler leaks.

Unlike the graders it reads the whole message, since a leak anywhere in it
counts, and every check takes time linear in the message's length.
"""

from __future__ import annotations

import re

from intbench.envs.domains import registry
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


def math_leaked(problem: Problem, message: str) -> bool:
    """The reference answer appears as a standalone LaTeX expression."""
    if problem.answer is None:
        return False
    return _contains_standalone(_normalise_math(message), _normalise_math(str(problem.answer)))


def text_leaked(problem: Problem, message: str) -> bool:
    """The reference answer, or an accepted alias, appears as whole words."""
    from intbench.verifiers.text import canonical_answer, normalize_free_text

    if problem.answer is None:
        return False
    # Word boundaries: "ka" is not leaked by "kata".
    text = re.sub(r"[^\w,]+", " ", normalize_free_text(message))
    for candidate in [problem.answer, *problem.fields.get("aliases", [])]:
        norm = re.sub(r"[^\w,]+", " ", canonical_answer(str(candidate))).strip()
        if norm and re.search(rf"(?<!\w){re.escape(norm)}(?!\w)", text):
            return True
    return False


def grid_leaked(problem: Problem, message: str) -> bool:
    """An answer grid is written out (its cells in order among the message's digits)."""
    digits = re.sub(r"[^0-9]", "", message)
    for grid in problem.answer or []:
        flat = "".join(str(cell) for row in grid for cell in row)
        # Tiny grids occur by chance in any message with numbers.
        if len(flat) >= 4 and flat in digits:
            return True
    return False


def code_leaked(problem: Problem, message: str) -> bool:
    """The message holds a code block, or a long line of the reference solution."""
    if _FENCE.search(message):
        return True
    if not problem.solution:
        return False
    lines = {line.strip() for line in problem.solution.splitlines() if len(line.strip()) >= 25}
    return any(line in message for line in lines)


KIND_LEAK_CHECKS = {"text": text_leaked, "code": code_leaked, "grid": grid_leaked}
"""The leak check of each domain kind, for domains that set no ``leak_check``."""


def answer_leaked(problem: Problem, message: str | None) -> bool:
    """Whether ``message`` reveals ``problem``'s reference answer or solution.

    Raises:
        ValueError: ``problem.domain`` is not registered.
    """
    domain = registry.get_domain(problem.domain)
    if not message:
        return False
    if domain.leak_check is not None:
        return bool(registry.resolve(domain.leak_check)(problem, message))
    return KIND_LEAK_CHECKS[domain.kind](problem, message)
