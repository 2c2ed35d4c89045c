"""Locating the Oracle teacher's quote in the student's trace (Int-Bench App. A.2).

In the Oracle condition the teacher says *where* it would have intervened by
quoting about five words of the trace.  The quote is searched in three stages,
each more lenient than the last: exact substring, case-insensitive, and a
token regex that lets whitespace differ but keeps every operator and
punctuation mark ("x + 1 = 2" finds "x+1=2").  An intervention is excluded
from timing analysis (and not applied) when the quote is missing, not found,
ambiguous, or points into the final-answer region.

The final-answer region is found with the domain's own answer format, read by
the same extraction code as the domain's verifier: the last ``Answer:`` line
(brain teasers, Linguini), the last ``\\boxed{}`` or "final answer" line
(math), the final fenced code block (debugging, Codeforces), the last
``{"outputs": ...}`` grid object or block of digit rows (ARC).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass

from intbench.envs.domains.registry import DataSourceError, get_domain
from intbench.verifiers import arc as arc_verifier
from intbench.verifiers import code as code_verifier
from intbench.verifiers import math as math_verifier
from intbench.verifiers import text as text_verifier
from intbench.verifiers.bounds import graded_part

# Markers of an answer in a trace whose domain is unknown: the last one starts the region.
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
_ANSWER_TAG = "<answer>"
_TOKEN = re.compile(r"(\w+)|[^\w\s]")  # a word, or one operator/punctuation mark

Finder = Callable[[str], "int | None"]
"""``(graded part of a trace) -> offset where its final answer starts``, or ``None``."""


def _text_answer(part: str) -> int | None:
    """The last ``Answer:``/``Final answer:`` line or ``\\boxed{}``: what the text
    verifiers (``verify_text``, the brain-teaser fallback) grade."""
    marked = text_verifier._answer_lines(part) + text_verifier._boxed_answers(part)
    if marked:
        return max(offset for offset, _ in marked)
    # Unmarked, the verifier grades the last non-empty line; it is an answer when it
    # opens with an answer prefix ("So the answer is a piano.").
    stripped = part.rstrip()
    line = stripped.rfind("\n") + 1
    return line if text_verifier._ANSWER_PREFIX.match(stripped, line) else None


def _math_answer(part: str) -> int | None:
    """The last top-level ``\\boxed{}``/``\\fbox{}`` or "final answer" phrase: what the
    math verifier grades."""
    starts = []
    boxes = math_verifier._top_level(math_verifier._boxed_spans(part))
    if boxes:
        content = boxes[-1][0]
        # the span is the box's content: the region starts at its command
        starts.append(max(part.rfind(command, 0, content) for command in ("\\boxed", "\\fbox")))
    phrase = math_verifier._last_match(math_verifier._FINAL_ANSWER_RE, part)
    if phrase is not None:
        starts.append(phrase.start())
    return max(starts, default=None)


def _code_answer(part: str) -> int | None:
    """The opening fence of the block the code verifier runs (the last ```python
    block, else the last fenced block); ``None`` when the trace has no fenced block."""
    program = code_verifier.extract_code(part)
    if program is None:
        return None
    # The program is a block's body when the line before it holds the opening fence.
    body = part.rfind(program)
    while body > 0:
        fence = part.rfind("```", 0, body)
        if fence >= 0 and part.find("\n", fence) == body - 1:
            return fence
        body = part.rfind(program, 0, body + len(program) - 1)
    return None


def _grid_answer(part: str) -> int | None:
    """The last ``{"outputs": [...]}`` object, else the last block of digit rows: what
    the ARC verifier reads."""
    for start, end in reversed(arc_verifier._outermost_object_spans(part)):
        try:
            value = json.loads(part[start:end])
        except (ValueError, RecursionError):
            continue
        if isinstance(value, dict) and isinstance(value.get("outputs"), list):
            return start
    offset, block_start, last = 0, None, None
    for line in part.splitlines(keepends=True):
        if arc_verifier._DIGIT_ROW.match(line.rstrip("\r\n")):
            block_start = offset if block_start is None else block_start
            last = block_start
        else:
            block_start = None
        offset += len(line)
    return last


def _any_answer(part: str) -> int | None:
    """A domain without a known answer format: the last answer marker of any kind."""
    markers = [m.start() for m in _ANSWER_MARKER.finditer(part)]
    answer_line = _text_answer(part)
    return max([*markers, *([] if answer_line is None else [answer_line])], default=None)


_FINDERS: dict[str, Finder] = {
    "answer_line": _text_answer,
    "math": _math_answer,
    "code": _code_answer,
    "grid": _grid_answer,
    "any": _any_answer,
}
_TEXT_VERIFIERS = {
    "intbench.verifiers.math": "math",
    "intbench.verifiers.text": "answer_line",
    "intbench.verifiers.judge": "answer_line",
}


def answer_style(domain: str | None) -> str:
    """How ``domain``'s final answer looks, one of ``answer_line``, ``math``, ``code``,
    ``grid`` (from its kind and the module of its verifier) or ``any`` (unknown)."""
    if not domain:
        return "any"
    try:
        spec = get_domain(domain)
    except DataSourceError:
        return "any"
    if spec.kind in ("code", "grid"):
        return spec.kind
    verifier = spec.verifier
    module = (
        verifier.partition(":")[0]
        if isinstance(verifier, str)
        else getattr(verifier, "__module__", "")
    )
    return _TEXT_VERIFIERS.get(module, "any")


def _is_bare_label(line: str) -> bool:
    """An answer label with nothing after it: ``Final Answer:``, ``Answer:``, ``<answer>``."""
    line = line.strip()
    if line == _ANSWER_TAG:
        return True
    match = text_verifier._ANSWER_LINE.match(line)
    return match is not None and match.group(1).strip(" \t*_") in ("", _ANSWER_TAG)


def _label_start(trace: str, start: int) -> int:
    """``start`` moved back over the bare answer labels just above it (a "Final Answer:"
    line before a code block, an ``<answer>`` line before a grid)."""
    position = result = start
    for line in reversed(trace[:start].splitlines(keepends=True)):
        position -= len(line)
        if not line.strip():
            continue
        if not _is_bare_label(line):
            break
        result = position
    return result


def final_answer_start(trace: str, domain: str | None = None) -> int:
    """Offset where the final-answer region begins (``len(trace)`` if none).

    The region starts at the final answer in ``domain``'s answer format (see
    :func:`answer_style`), found in the part of the trace its verifier reads.
    It takes in the sentence (or line) holding the answer, so "So the final
    answer is \\boxed{5}" counts from "So", and the bare answer labels right
    above it, so a "Final Answer:" line before the final code block counts too.
    """
    part = graded_part(trace)
    found = _FINDERS[answer_style(domain)](part)
    if found is None:
        return len(trace)
    answer = len(trace) - len(part) + found
    breaks = [m.end() for m in _SENTENCE_BREAK.finditer(trace, 0, answer)]
    return _label_start(trace, breaks[-1] if breaks else 0)


def _flexible_pattern(quote: str) -> re.Pattern:
    """Stage 3: the quote's words, operators and punctuation in order, any whitespace
    between them (none needed next to an operator or a punctuation mark, some between
    two words), case ignored."""
    pieces: list[str] = []
    after_word = False
    for token in _TOKEN.finditer(quote):
        word = token.group(1) is not None
        if pieces:
            pieces.append(r"\s+" if word and after_word else r"\s*")
        pieces.append(re.escape(token.group()))
        after_word = word
    return re.compile("".join(pieces), re.IGNORECASE)


def _ends(pattern: re.Pattern, trace: str) -> list[int]:
    return [m.end() for m in pattern.finditer(trace)]


def locate_quote(trace: str, quote: str | None, domain: str | None = None) -> QuoteMatch:
    """Find ``quote`` in ``trace`` with the three-stage search (Int-Bench App. A.2).

    ``domain`` names the answer format that marks the final-answer region
    (:func:`final_answer_start`).
    """
    quote = (quote or "").strip().strip("\"'“”‘’`")
    if not quote:
        return QuoteMatch(None, None, "no_quote")
    stages = (
        ("exact", re.compile(re.escape(quote))),
        ("case_insensitive", re.compile(re.escape(quote), re.IGNORECASE)),
        ("flexible_whitespace", _flexible_pattern(quote)),
    )
    for stage, pattern in stages:
        ends = _ends(pattern, trace)
        if len(ends) > 1:
            return QuoteMatch(None, stage, "multiple_matches")
        if len(ends) == 1:
            position = ends[0]
            if position > final_answer_start(trace, domain):
                return QuoteMatch(position, stage, "in_final_answer")
            return QuoteMatch(position, stage, None)
    return QuoteMatch(None, None, "not_found")
