"""Locating the Oracle teacher's quote in the student's trace.

In the Oracle condition the teacher says *where* it would have intervened by
quoting about five words of the trace.  The quote is searched in three stages,
each more lenient than the last: exact, case-insensitive, and a token regex
that lets whitespace differ.  An intervention is excluded from timing analysis
(and not applied) when the quote is missing, not found, ambiguous, or points
into the final-answer region.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

# Where the final answer starts: the last of these markers in the trace.
_ANSWER_MARKER = re.compile(
    r"\\boxed\s*\{|\\fbox\s*\{|final answer|the answer is|\{\s*\"outputs\"", re.IGNORECASE
)

EXCLUSION_REASONS = ("no_quote", "not_found", "multiple_matches", "in_final_answer")


@dataclass(frozen=True)
class QuoteMatch:
    """Where a quote was found, or why it could not be used.

    ``position`` is the character offset just after the quote: the teacher has
    read the trace up to there when it intervenes.
    """

    position: int | None
    stage: str | None  # "exact", "case_insensitive", "flexible_whitespace"
    excluded: str | None  # one of EXCLUSION_REASONS

    @property
    def ok(self) -> bool:
        return self.excluded is None


_SENTENCE_BREAK = re.compile(r"[.!?]\s|\n")


def final_answer_start(trace: str) -> int:
    """Offset where the final-answer region begins (``len(trace)`` if none).

    The region is the sentence (or line) holding the last answer marker, so
    "So the final answer is \\boxed{5}" counts from "So".
    """
    markers = list(_ANSWER_MARKER.finditer(trace))
    if not markers:
        return len(trace)
    breaks = [m.end() for m in _SENTENCE_BREAK.finditer(trace, 0, markers[-1].start())]
    return breaks[-1] if breaks else 0


def _ends(pattern: re.Pattern, trace: str) -> list[int]:
    return [m.end() for m in pattern.finditer(trace)]


def locate_quote(trace: str, quote: str | None) -> QuoteMatch:
    """Find ``quote`` in ``trace`` with the three-stage search."""
    quote = (quote or "").strip().strip("\"'“”‘’`")
    if not quote:
        return QuoteMatch(None, None, "no_quote")
    tokens = quote.split()
    stages = (
        ("exact", re.compile(re.escape(quote))),
        ("case_insensitive", re.compile(re.escape(quote), re.IGNORECASE)),
        ("flexible_whitespace", re.compile(r"\s+".join(map(re.escape, tokens)), re.IGNORECASE)),
    )
    for stage, pattern in stages:
        ends = _ends(pattern, trace)
        if len(ends) > 1:
            return QuoteMatch(None, stage, "multiple_matches")
        if len(ends) == 1:
            position = ends[0]
            if position > final_answer_start(trace):
                return QuoteMatch(position, stage, "in_final_answer")
            return QuoteMatch(position, stage, None)
    return QuoteMatch(None, None, "not_found")
