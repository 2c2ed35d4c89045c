"""How much of a response the graders read.

Every verifier grades only the last :data:`MAX_GRADED_CHARS` characters of a
response.  Answers sit at the end of a response (a boxed answer, an
``Answer:`` line, the last code block), so a genuine answer is never cut,
while a hostile multi-megabyte response costs the graders the same bounded
work as a 64 KB one.  Each verifier's parsing is linear in what it reads.
"""

from __future__ import annotations

MAX_GRADED_CHARS = 64 * 1024
"""Characters of a response, counted from its end, that a verifier reads."""


def graded_part(response: str | None) -> str:
    """The part of ``response`` a verifier reads: its last :data:`MAX_GRADED_CHARS` characters."""
    if not response:
        return ""
    return response[-MAX_GRADED_CHARS:]


__all__ = ["MAX_GRADED_CHARS", "graded_part"]
