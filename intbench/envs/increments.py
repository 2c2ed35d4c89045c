"""Where the Standard teacher gets to look: cut points in a student trace.

The paper reveals the reasoning 50 characters at a time.  ``increment`` picks
the unit: an int (characters), ``"sentence"``, or ``"tokens:N"``.  The result
is the list of cumulative prefix lengths, strictly increasing and ending at
the trace length, so step *k* reveals ``trace[:cuts[k]]``.
"""

from __future__ import annotations

import re
from collections.abc import Callable

_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|\n+")
_TOKEN = re.compile(r"\s*\S+")


def parse_increment(increment: int | str) -> tuple[str, int]:
    """Normalise the ``increment`` option to ``(unit, size)``; raise ``ValueError`` if malformed."""
    if isinstance(increment, bool):
        raise ValueError("increment must be an int, 'sentence' or 'tokens:N', not a bool")
    if isinstance(increment, int):
        if increment <= 0:
            raise ValueError(f"increment must be positive, got {increment}")
        return "chars", increment
    if isinstance(increment, str):
        text = increment.strip().lower()
        if text.isdigit():
            return parse_increment(int(text))
        if text == "sentence":
            return "sentence", 1
        if text.startswith("tokens:") and text[7:].isdigit() and int(text[7:]) > 0:
            return "tokens", int(text[7:])
    raise ValueError(
        f"increment must be a positive int, 'sentence' or 'tokens:N'; got {increment!r}"
    )


def cut_points(
    trace: str,
    increment: int | str = 50,
    token_offsets: Callable[[str], list[int]] | None = None,
) -> list[int]:
    """Cumulative prefix lengths at which the trace is revealed.

    ``token_offsets`` maps a text to the end offsets of its tokens (e.g. from the
    student's tokenizer); without it, ``tokens:N`` counts whitespace-separated words.
    An empty trace has the single cut ``[0]`` so that a teacher still gets one look.
    """
    unit, size = parse_increment(increment)
    length = len(trace)
    if length == 0:
        return [0]
    if unit == "chars":
        ends = list(range(size, length, size))
    elif unit == "sentence":
        ends = [m.start() for m in _SENTENCE_END.finditer(trace) if 0 < m.start()]
    else:
        offsets = (
            token_offsets(trace) if token_offsets else [m.end() for m in _TOKEN.finditer(trace)]
        )
        ends = offsets[size - 1 :: size]
    cuts = sorted({e for e in ends if 0 < e < length})
    cuts.append(length)
    return cuts
