"""When a ``\\boxed{...}`` is not an answer on its own but one operand of an expression.

``$-\\boxed{3}$``, ``\\frac{1}{\\boxed{3}}``, ``\\boxed{3}^2`` and ``2\\boxed{3}``
state -3, 1/3, 9 and 6: grading the box's content alone would pay for 3.  The
math and text verifiers both ask :func:`operand_form` about every box they
extract, and grade the expression it returns (which keeps ``\\boxed``, so it
never matches a reference) instead of the content.

Not operators: ``=`` before a box (``$x = \\boxed{5}$``), a list bullet
(``- \\boxed{5}``), markdown emphasis (``**\\boxed{5}**``), a dash followed by
words (``\\boxed{5} - that is all``) and a final ``.``.
"""

from __future__ import annotations

import re

# Before the box: an operator or a digit right against it.  A star counts only with a
# number or bracket beside it (2 * \boxed{3}); alone it is markdown emphasis.
_BEFORE_RE = re.compile(
    r"(?:[-+/^_{]\s*|[\d)}\]]\s*\*\s*|\d|\\(?:cdot|times|div|sqrt|pm|mp|\{)\s*)\Z"
)
_BULLET_RE = re.compile(r"\n[ \t]*[-+*][ \t]+\Z")  # "- \boxed{5}" starting a list item
# After the box: an operator, a digit or decimals, a prime, a factorial; a sign or star
# only when an operand follows it (\boxed{3} - 1, not \boxed{3} - that is all).
_AFTER_RE = re.compile(
    r"\s*(?:[/^_!'\d]|\.\d|[-+*]\s*[\d\\({]|\\(?:cdot|times|div|pm|mp|%)(?![a-zA-Z]))"
)
CONTEXT_CHARS = 16
"""How far before a box an operator is looked for (a bounded window keeps it linear)."""


def operand_form(text: str, command: int, close: int, in_group: bool) -> str | None:
    """The box with its operator when it is one operand of a larger expression, else ``None``.

    Args:
        text: the response.
        command: where the box's command (``\\boxed``) starts.
        close: the position of the box's closing brace.
        in_group: the box sits inside a plain brace group (``\\frac{1}{\\boxed{3}}``).
    """
    box = text[command : close + 1]
    if in_group:
        return "{" + box
    start = max(0, command - CONTEXT_CHARS)
    window = ("\n" if start == 0 else "") + text[start:command]
    before = _BEFORE_RE.search(window)
    if before is not None and _BULLET_RE.search(window) is None:
        return before.group().strip() + box
    after = _AFTER_RE.match(text, close + 1)
    return box + after.group().strip() if after is not None else None


__all__ = ["CONTEXT_CHARS", "operand_form"]
