"""Math answer verifier for the ``math`` and ``omni_math`` domains.

Only :func:`~intbench.verifiers.bounds.graded_part` of a response (its last
64 KB) is read.  Grading runs in three steps, cheapest first:

1. **Extraction** (in process, linear time): every top-level balanced
   ``\\boxed{...}``/``\\fbox{...}``, else the answer on the last "Final Answer:" /
   "The final answer is" line (see *Final-answer lines*).
2. **Fast path** (in process): both answers are normalised (``$``, spacing,
   ``\\dfrac``, ``\\text{}``, units, degrees, percent, thousands separators,
   ``x =``); equal strings, plain numbers, plain words, relations,
   assignments to another variable and a plain number against an irrational
   surd (``-1`` for ``\\frac{9\\sqrt{51}}{4}``) are decided here.
3. **Worker cascade** (isolated process): element-wise comparison of
   tuples/sets/intervals/matrices, and for single expressions the parser
   math-verify uses (latex2sympy with math-verify's ``NormalizationConfig``)
   followed by ``math_verify.verify``.  It runs in an
   :class:`~intbench.verifiers.isolation.IsolatedPool` with one hard timeout
   per response because sympy can hang on inputs such as ``9^{9^{9^9}}``;
   math-verify's own ``signal.alarm`` timeouts are switched off since they
   fail off the main thread.

A timeout or grader crash gives ``status="error"``, never ``"incorrect"``.

Rules
-----
**Exactness.**  A reference written with a decimal point is *inexact*: a
numeric answer matches within a relative tolerance of :data:`RELATIVE_TOLERANCE`,
and never further than half a unit in the reference's last written decimal.
Any other reference (integer, fraction, surd, ``\\pi``...) is *exact*: the
answer's decimals are read as exact fractions and must equal it exactly
(``0.5`` matches ``\\frac12``; ``0.333333`` does not match ``\\frac13``).
Infinities equal only the same infinity, and huge numbers compare exactly.

**Percent** is read once.  When both sides carry ``\\%`` their numbers are
compared (``0.5\\%`` is not ``50\\%``).  A reference ``p\\%`` accepts ``p`` and
``p/100``.  An answer ``q\\%`` for a bare reference ``r`` is read one way only:
as ``q`` when ``r`` is a whole number (``50\\%`` for ``50``; ``5000\\%`` is not
``50``), else as ``q/100`` (``50\\%`` for ``0.5``; ``0.5\\%`` is not ``0.5``).

**Boxes.**  A box is graded alone; words outside it are not read (an unmarked
second answer earns nothing).  A box that is one operand of an expression
(``-\\boxed{3}``, ``\\frac{1}{\\boxed{3}}``, ``\\boxed{3}^2``) or holds another box is
graded as the whole expression, which never matches (see
:mod:`intbench.verifiers.boxes`).  A box written ``\\\\boxed`` (doubled backslashes)
is read, its content halved.

**Final-answer lines.**  A line that is one math span (``$5$``, ``\\[5\\]``) is
its content.  "NAME is ANSWER" is ANSWER when NAME has no digit, negation or
second clause (``The largest $n$ is 34``).  Any other line is graded whole,
words and all (``not $5$``, ``x < $5$``, ``$5$ or 6`` are not 5).  A display
opened on the line is read to its end; under a bare "**Final Answer**" heading
the next line is the answer.

**Numerals, units and marks.**  ``1011_2`` is compared in base 2 (a bare answer
is read in the reference's base).  When both sides carry a unit the units must
agree (``5 m`` is not ``5 cm``; spellings of one unit agree).  Primes and
ellipses (``5''``, ``5\\dots``) only match a reference that has them, and two
percent signs are no percent.  Values that are not finite numbers (``1:00`` and
``12:00`` both read as 1/0) only match the same signed infinity.

**Relations and text.**  An answer with an inequality or approximation sign
(``\\leq 2``, ``\\approx 2``) or an equation other than one assignment
(``x = 3 = 2``, ``3 + 4 = 7``) only matches a reference that has one too.  An
assignment ``x = v`` is read as ``v``, but when both sides name a variable the
names must agree (``y=2`` is not ``x=2``).  Words around a number are part of
the answer (``\\text{the answer is not 5}`` is not ``5``); known units are dropped.

**Commas.**  Digit groups of three joined by commas without spaces are a
thousands separator (``1,000``, ``2,100``), in the answer and the reference
alike; a comma followed by a space always separates list items
(``32, 349`` is a list, never 32349).  Against a reference written as a decimal,
an answer such as ``1,22`` is a decimal comma (1.22); a reference ``1,22`` or
``0,111`` against a decimal answer is one too, unless three digits follow a
non-zero whole part (``1,222`` stays 1222).  MATH's ``10,\\!000`` is 10000.
Spaces between digits are digit grouping (``32\\,349`` is 32349).

**Collections.**  A reference that is a set (``\\{1,3\\}``) or a bare list
(``1, 3``, ``6 \\text{ and } 8``, ``(1,2), (3,4)``) is compared unordered with an
answer list of any brackets; an item written twice is one item.  A
reference in ``()`` or ``[]`` (an ordered pair or an interval) needs the same
brackets and order.

**Several boxes.**  The top-level boxes of the response are taken, duplicates
dropped.  When the reference is a set or bare list (or the reference itself
has several boxes, which then form a list), the items of all boxes together
are compared with it as a set.  Otherwise every box must match the reference:
hedging with two different answers is wrong.  More than :data:`MAX_BOXES`
distinct boxes are compared as strings only.

Deliberate differences from plain ``math_verify.parse`` + ``math_verify.verify``
-------------------------------------------------------------------------------
* A decimal for an exact reference must be exact (math-verify rounds to six
  places: it accepts ``0.333333`` for ``\\frac13`` and ``3.14159265`` for ``\\pi``).
* A relative, not absolute, tolerance for inexact references (math-verify
  accepts ``0.0000012`` for ``0.0000011``).
* ``\\leq 2``, ``\\approx 2``, ``x = 3 = 2`` and ``3 + 4 = 7`` are not ``2``/``7``
  (math-verify drops the relation or keeps the last right-hand side).
* ``5000\\%`` is not ``50`` (math-verify evaluates the percent).
* ``\\{1,3\\}`` or a bare ``1, 3`` is not the pair or interval ``(1,3)``.
* Every box is graded, not only the last one (``\\boxed{1} \\boxed{2}`` is not
  the pair ``(1,2)``), and a list is never one number (``3, 3`` is not ``3``).
* Decimal commas (``1,22`` for ``1.22``), digit groups split by spaces
  (``32\\,349``), ``90°`` and ``\\fbox`` are read; math-verify rejects them.
* Words around a math span of a final-answer line are graded (``not $5$``); a
  box that is an operand is graded with its operator; numeral bases, units,
  primes and ellipses are compared; two undefined values are not equal.
* Equations are equal when one is the other scaled (``2x+4y-3=0`` and
  ``y=-\\frac12x+\\frac34``); sums and products of matrices are evaluated.
* An answer is only taken from a box or a "final answer" line, and only from
  the graded part of the response; math-verify also takes a bare number
  anywhere (``The answer is 7.``).
* The whole answer is parsed: math-verify's search for a sub-expression inside
  the answer (which finds ``2`` in ``\\leq 2``) is not used.

``benchmarks/math_agreement.py`` measures both graders on the labelled pairs of
``tests/fixtures/math_answer_pairs.jsonl``, where each such pair names its rule;
``tests/test_math_verify_suite.py`` on Math-Verify's own test suite.  The rules
with an example and a test each: ``docs/GRADING.md``.
"""

from __future__ import annotations

import dataclasses
import logging
import math
import os
import re
import threading
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from intbench.records import Problem, Verdict
from intbench.verifiers.bounds import graded_part
from intbench.verifiers.boxes import operand_form
from intbench.verifiers.isolation import IsolatedPool, RemoteError, WorkerCrashed, WorkerTimeout

logger = logging.getLogger(__name__)

DEFAULT_TIMEOUT_S = float(os.environ.get("INTBENCH_MATH_TIMEOUT", "5"))
"""Seconds the worker cascade may spend on one response (env ``INTBENCH_MATH_TIMEOUT``)."""

MAX_ANSWER_CHARS = 2000
"""Extracted answers longer than this are only compared as strings: no
competition answer is that long, and parsing them would just burn the timeout."""

MAX_BOXES = 32
"""Distinct boxed answers graded in full; a response with more is compared as strings only."""

RELATIVE_TOLERANCE = Fraction(1, 10**6)
"""Relative tolerance for a numeric answer to an inexact (decimal) reference."""

_DETAIL_CHARS = 1000  # how much of an answer the verdict's details and feedback keep
_HOPE_TAIL_CHARS = 64  # "I hope it is correct." is searched for only at a line's end

# ---------------------------------------------------------------------------
# Extraction


_BOX_COMMANDS = ("\\boxed", "\\fbox")
# A box written with a doubled backslash (a raw string printed twice): "\\boxed{...}".
_DOUBLED_BOX_COMMANDS = ("\\\\boxed", "\\\\fbox")
_FINAL_ANSWER_RE = re.compile(r"final\s+answer", re.IGNORECASE)
_HOPE_RE = re.compile(r"I\s+hope\s+it\s+is\s+correct\.?$", re.IGNORECASE)
_LINE_LEAD_RE = re.compile(r"(?:is\b|:)\s*(?:(?:the\s+)?answer\b\s*(?:is\b|:)?\s*)?", re.IGNORECASE)
_PERCENT_AFTER_BOX_RE = re.compile(r"(?:\s*\\%)+")
# "The largest $n$ is 34": the answer follows the last "is" when what precedes it
# names the answer (no number, no second clause, no negation).
_NAMED_ANSWER_RE = re.compile(r"^(?P<name>[^\d]{0,80}?)\s+is\s+(?P<answer>.+)$", re.IGNORECASE)
_CLAUSE_WORDS_RE = re.compile(r"\b(?:is|isn't|not|or|but|which|was)\b|n't\b|[,;]", re.IGNORECASE)
_MATH_SPAN_RE = re.compile(r"(?<!\\)\$+|\\\(|\\\)|\\\[|\\\]")


def _box_scan(text: str) -> list[tuple[int, int, int, bool]]:
    """``(command start, content start, content end, inside a plain group)`` of every
    balanced ``\\boxed{...}``/``\\fbox{...}`` (also written ``\\\\boxed``).

    One left-to-right pass with a brace stack, so deeply nested or unbalanced
    input stays linear.  Escaped braces ``\\{``/``\\}`` are set delimiters, not groups.
    """
    boxes = []
    stack: list[tuple[int, int] | None] = []  # (command start, content start) or None
    plain_depth = 0  # open groups that are not boxes (\frac{1}{ ... )
    i, n = 0, len(text)
    while i < n:
        ch = text[i]
        if ch == "\\":
            doubled = text.startswith(_DOUBLED_BOX_COMMANDS, i)
            if doubled or text.startswith(_BOX_COMMANDS, i):
                name = i + 1 + doubled
                cmd_end = name + (5 if text.startswith("boxed", name) else 4)
                j = cmd_end
                while j < n and text[j] == " ":
                    j += 1
                if j < n and text[j] == "{":
                    stack.append((i, j + 1))
                    i = j + 1
                    continue
                i = cmd_end
                continue
            i += 2  # skip the escaped character (\{, \}, \\)
            continue
        if ch == "{":
            stack.append(None)
            plain_depth += 1
        elif ch == "}" and stack:
            opened = stack.pop()
            if opened is None:
                plain_depth -= 1
            else:
                boxes.append((opened[0], opened[1], i, plain_depth > 0))
        i += 1
    return boxes


def _boxed_spans(text: str) -> list[tuple[int, int]]:
    """Content spans ``(start, end)`` of every balanced ``\\boxed{...}``/``\\fbox{...}``."""
    return [(start, end) for _, start, end, _ in _box_scan(text)]


def _top_level(spans: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """The spans not nested in another one, in reading order."""
    outer: list[tuple[int, int]] = []
    for start, end in sorted(spans):
        if not outer or start > outer[-1][1]:
            outer.append((start, end))
    return outer


def _undouble(s: str) -> str:
    """Halve every backslash run when all of them are doubled (``\\\\frac`` from a raw string)."""
    runs = [len(run) for run in re.findall(r"\\+", s)]
    if runs and all(length % 2 == 0 for length in runs) and re.search(r"\\\\[a-zA-Z]", s):
        return re.sub(r"\\+", lambda run: "\\" * (len(run.group()) // 2), s)
    return s


def boxed_answers(text: str) -> list[str]:
    """The non-empty contents of the top-level boxes of ``text``, in reading order.

    A box that is an operand of a larger expression (``-\\boxed{3}``,
    ``\\frac{1}{\\boxed{3}}``, ``\\boxed{3}^2``) is returned with its operator
    (``-\\boxed{3}``), so it is graded as the expression it is part of, never alone.
    """
    scanned = {
        (start, end): (command, in_group) for command, start, end, in_group in _box_scan(text)
    }
    answers = []
    for start, end in _top_level(list(scanned)):
        content = _undouble(text[start:end].strip())
        if not content:
            continue
        command, in_group = scanned[(start, end)]
        percent = _PERCENT_AFTER_BOX_RE.match(text, end + 1)
        if percent is not None and not in_group:  # \boxed{50}\% is the answer 50\%
            answers.append(content + "\\%" * percent.group().count("%"))
        else:
            answers.append(operand_form(text, command, end, in_group) or content)
    return answers


def _last_match(pattern: re.Pattern[str], text: str) -> re.Match[str] | None:
    match = None
    for match in pattern.finditer(text):  # noqa: B007 - we want the last one
        pass
    return match


def _only_math_span(line: str) -> str | None:
    """The content of ``line`` when all of it is one ``$...$``/``$$...$$``/``\\(...\\)``/``\\[...\\]``.

    ``None`` otherwise: "$5$ or 6" and "not $5$" are graded whole, so words around a
    math span can never be dropped.
    """
    delimiters = list(_MATH_SPAN_RE.finditer(line))
    if len(delimiters) != 2 or delimiters[0].start() != 0 or delimiters[1].end() != len(line):
        return None
    return line[delimiters[0].end() : delimiters[1].start()].strip() or None


def _line_answer(line: str) -> str:
    """The answer a "final answer" line states (see the module doc, *Final-answer lines*)."""
    span = _only_math_span(line)
    if span is not None:
        return span
    named = _NAMED_ANSWER_RE.match(line)
    if named and not _CLAUSE_WORDS_RE.search(_MATH_SPAN_RE.sub("", named.group("name"))):
        line = named.group("answer").strip()
        span = _only_math_span(line)
        if span is not None:
            return span
    return _MATH_SPAN_RE.sub(" ", line).strip()  # graded whole, words and all


def _answer_line(text: str, start: int) -> str:
    """The rest of the line from ``start``, continued to the end of a display (``\\[``,
    ``$$``) that opens on it; under a bare "**Final Answer**" heading, the next line."""
    end = text.find("\n", start)
    line = text[start : end if end >= 0 else len(text)]
    if end >= 0 and not line.strip(" *:\t"):  # a heading: the answer is below it
        start = end + 1
        while start < len(text) and text[start] in " \t\n":
            start += 1
        end = text.find("\n", start)
        line = text[start : end if end >= 0 else len(text)]
    closer = _unclosed_display(line)
    if end >= 0 and closer is not None:
        close = text.find(closer, end)
        if close >= 0:
            line = text[start : close + len(closer)]
    return " ".join(line.split()).strip(" *")


def _unclosed_display(line: str) -> str | None:
    """The closing delimiter of a display math block opened but not closed on ``line``."""
    if line.count("\\[") > line.count("\\]"):
        return "\\]"
    return "$$" if line.count("$$") % 2 else None


def _final_answer_line(text: str) -> str | None:
    """The answer on the last "Final Answer:" / "The final answer is" line, if any."""
    last = _last_match(_FINAL_ANSWER_RE, text)
    if last is None:
        return None
    # Minerva style "Final Answer: The final answer is $X$. I hope it is correct.":
    # the last match is the inner phrase, so the line starts at " is $X$".
    line = _answer_line(text, last.end())
    hope = _HOPE_RE.search(line, max(0, len(line) - _HOPE_TAIL_CHARS))
    if hope:
        line = line[: hope.start()].rstrip()
    lead = _LINE_LEAD_RE.match(line)
    if lead:
        line = line[lead.end() :]
    line = _undouble(line.strip().rstrip(".").strip())
    line = _line_answer(line)
    return line.strip().rstrip(".").strip() or None


_REASONING_END = "</think>"


def _after_reasoning(text: str) -> str:
    """The text after the last closed ``<think>`` block: a box drafted while
    reasoning is not an answer (the feedback paper's A.8 prompts invite such blocks)."""
    end = text.rfind(_REASONING_END)
    return text[end + len(_REASONING_END) :] if end >= 0 else text


def extract_answers(text: str) -> tuple[list[str], str | None]:
    """All final answers of a response: ``(answers, method)``.

    Only the text after a closed ``<think>`` block is read.  ``method`` is
    ``"boxed"`` (every top-level box) or ``"final_answer_line"``; ``([], None)``
    when no answer was found.
    """
    text = _after_reasoning(text)
    boxes = boxed_answers(text)
    if boxes:
        return boxes, "boxed"
    line = _final_answer_line(text)
    return ([line], "final_answer_line") if line else ([], None)


def extract_final_answer(text: str) -> tuple[str | None, str | None]:
    """The last final answer of a response: ``(answer, method)``, or ``(None, None)``.

    Among several boxes the last top-level one is returned (the outer box of
    ``\\boxed{\\boxed{3}}``, the later of two boxes); grading uses all of them.
    """
    answers, method = extract_answers(text)
    return (answers[-1], method) if answers else (None, None)


# ---------------------------------------------------------------------------
# Normalisation and the in-process fast path

_UNITS = (
    "units?|square\\s+units?|sq\\.?\\s*units?|cm|mm|km|m|meters?|metres?|centimeters?|"
    "centimetres?|millimeters?|millimetres?|kilometers?|kilometres?|"
    "inch(?:es)?|in|feet|foot|ft|yards?|yd|miles?|mi|mph|seconds?|sec|s|minutes?|"
    "min|hours?|hrs?|h|days?|weeks?|months?|years?|degrees?|dollars?|cents?|pounds?|lbs?|lb|"
    "ounces?|oz|grams?|g|kg|kilograms?|liters?|litres?|l|ml|milliliters?|gallons?|cups?|"
    "people|students|ways|cubic\\s+\\w+|square\\s+\\w+"
)
_TRAILING_UNIT_RE = re.compile(rf"^(.*?[\d}}])\s+({_UNITS})(\s*\^?\{{?[23]\}}?)?$", re.IGNORECASE)
# Spellings of one unit share a name: "5 centimeters" and "5\text{ cm}" agree, "5 m" does not.
_UNIT_NAMES = {
    "cm": ("centimeter", "centimetre"), "mm": ("millimeter", "millimetre"),
    "km": ("kilometer", "kilometre"), "m": ("meter", "metre"), "in": ("inch", "inche"),
    "ft": ("feet", "foot"), "yd": ("yard",), "mi": ("mile",), "s": ("second", "sec"),
    "min": ("minute",), "h": ("hour", "hr"), "lb": ("pound", "lbs"), "oz": ("ounce",),
    "g": ("gram",), "kg": ("kilogram",), "l": ("liter", "litre"), "ml": ("milliliter",),
    "unit": ("sq unit", "sq. unit", "square unit"), "degree": (), "dollar": (), "cent": (),
}  # fmt: skip
_UNIT_NAME = {spelling: name for name, spellings in _UNIT_NAMES.items() for spelling in spellings}
_TEXT_CMD_RE = re.compile(
    r"\\(?:text|textbf|textit|mathrm|mathbf|mbox|operatorname)\s*\{([^{}]*)\}"
)
# "\ " is a LaTeX space too; "\\" (a line break) is not touched.
_SPACING_RE = re.compile(
    r"(?<!\\)\\(?:(?:left|right|displaystyle|quad|qquad)(?![a-zA-Z])|[!,;: ])|~"
)
_DEGREE_RE = re.compile(r"\^\s*\{?\s*\\circ\s*\}?|\\circ|\\degree|°")
# x = 3, x_1 = 3, x \in [0, 1], and a tuple of variables (x, y) = (1, 2)
_ASSIGNMENT_RE = re.compile(
    r"^([a-zA-Z](?:_\{?\w+\}?)?|\([a-zA-Z](?:\s*,\s*[a-zA-Z])+\))\s*(?:=|\\in(?![a-zA-Z]))\s*(?!.*=)"
)
_RELATION_RE = re.compile(
    r"\\(?:approx|sim|simeq|cong|le|ge|leq|geq|leqslant|geqslant|lt|gt|ne|neq|ll|gg|"
    r"propto|equiv)(?![a-zA-Z])|[<>=≤≥≈≠]"
)
_MATH_THOUSANDS_RE = re.compile(r",\\!\s*(?=\d{3}(?!\d))")  # MATH writes 10,\!000
_PERCENT_WORD_RE = re.compile(r"\s*\b(?:percent(?:age)?|pct)\.?$", re.IGNORECASE)
# "6 and 8", "19, 46, and 82", "(5, 8) or (8, 5)": a word between two items separates a list.
_LIST_WORD_RE = re.compile(r"(?<=[\d)\]}])\s*,?\s*\b(?:and|or)\b\s*(?=[-+\d(\[{\\a-zA-Z])")
_BASE_RE = re.compile(r"^(\d[0-9A-Z]*)_\{?(\d{1,2})\}?$")  # 1011_2, 204_{5}
_PRIME_RE = re.compile(r"'|\\prime(?![a-zA-Z])")
_DOTS_RE = re.compile(r"\\[lc]?dots(?![a-zA-Z])|\.\.\.")
_THOUSANDS_RE = re.compile(r"^-?[1-9]\d{0,2}(?:,\d{3})+(?:\.\d+)?$")  # 0,111 is no thousands
_DECIMAL_COMMA_RE = re.compile(r"^-?\d+,\d+$")
_SPACED_COMMA_RE = re.compile(r",\s+")
# Whitespace is dropped except between two letters, where it may end a command (\pi r).
_INNER_SPACE_RE = re.compile(r"(?<![a-zA-Z])\s+|\s+(?![a-zA-Z])")
_NUMBER_RE = re.compile(r"^[+-]?(?:\d+\.?\d*|\.\d+)$")
_DECIMAL_RE = re.compile(r"\d*\.\d")
_SLASH_FRACTION_RE = re.compile(r"^([+-]?\d+)/(\d+)$")
_LATEX_FRACTION_RE = re.compile(r"^([+-]?)\\frac(?:\{([+-]?\d+)\}|(\d))(?:\{(\d+)\}|(\d))$")
_WORDS_RE = re.compile(r"^[a-zA-Z][a-zA-Z ]*$")
_SURD_PART = r"(\d+)?(?:\\sqrt(?:\{(\d+)\}|(\d)))?"  # c, \sqrt{n} or c\sqrt{n}, c and n whole
_SURD_RE = re.compile(rf"^[+-]?(?:\\frac\{{{_SURD_PART}\}}\{{{_SURD_PART}\}}|{_SURD_PART})$")
_MAX_UNWRAP_ROUNDS = 8  # deeper wrapping is left for the (timed) worker
_MAX_NUMBER_DIGITS = 60  # longer literals go to the worker rather than big-int maths here


@dataclass(frozen=True)
class NormalizedAnswer:
    """An answer string after cheap normalisation.

    Attributes:
        text: normalised LaTeX with (non-separating) whitespace removed.
        percent: the answer carried a percent sign (now removed).
        words: the answer as lower-cased plain text (``\\text{Monday}``, ``(C)``,
            ``no solution``), else ``None``.
        variable: the variable of an assignment ``x = ...`` (now removed), else ``None``.
        relation: the answer still contains a relation sign (``<``, ``\\approx``, ``=``...).
        unit: the name of a trailing unit (now removed, ``cm`` for ``\\text{ centimeters}``).
        base: the base of a numeral written ``1011_2`` (``text`` keeps its digits).
        marks: ``"prime"`` (``5''``) and ``"dots"`` (``5\\ldots``): signs that change
            what an answer means, so an answer may only carry those its reference has.
    """

    text: str
    percent: bool
    words: str | None
    variable: str | None = None
    relation: bool = False
    unit: str | None = None
    base: int | None = None
    marks: frozenset[str] = frozenset()


def _peel_outer_braces(s: str) -> str:
    """Drop all redundant outer brace pairs (``{{x}}`` -> ``x``) in one linear pass."""
    partner: dict[int, int] = {}
    stack: list[int] = []
    for i, ch in enumerate(s):
        if ch == "{" and (i == 0 or s[i - 1] != "\\"):
            stack.append(i)
        elif ch == "}" and (i == 0 or s[i - 1] != "\\") and stack:
            partner[stack.pop()] = i
    depth = 0
    while depth < len(s) // 2 and partner.get(depth) == len(s) - 1 - depth:
        depth += 1
    return s[depth : len(s) - depth]


def _strip_wrapping(s: str) -> str:
    """Remove math delimiters, whole-answer boxes and redundant outer braces."""
    s = s.strip()
    changed = True
    rounds = 0
    while changed and rounds < _MAX_UNWRAP_ROUNDS:  # bounded: this runs in process, untimed
        changed = False
        rounds += 1
        if s.endswith(".") or (s.endswith("\\") and not s.endswith("\\\\")):
            s = s[:-1].rstrip()  # a final "." or the backslash of a stripped "\ "
            changed = True
        peeled = _peel_outer_braces(s)
        if peeled != s:
            s, changed = peeled.strip(), True
        for left, right in (("$$", "$$"), ("$", "$"), ("\\(", "\\)"), ("\\[", "\\]")):
            if len(s) >= len(left) + len(right) and s.startswith(left) and s.endswith(right):
                s = s[len(left) : len(s) - len(right)].strip()
                changed = True
        spans = _boxed_spans(s)
        if (
            spans
            and s.startswith(_BOX_COMMANDS)
            and max(spans, key=lambda sp: sp[1])[1] == len(s) - 1
        ):
            start, end = max(spans, key=lambda sp: sp[1])
            s = s[start:end].strip()
            changed = True
    return s


def _squeeze_number(s: str) -> str:
    """Remove the whitespace, but keep one space after a list comma; drop thousands commas."""
    parts = _SPACED_COMMA_RE.split(s)
    squeezed = ", ".join(_INNER_SPACE_RE.sub("", part) for part in parts)
    return squeezed.replace(",", "") if _THOUSANDS_RE.match(squeezed) else squeezed


def _unit_name(unit: str, power: str | None) -> str:
    """One name for the spellings of a unit: ``centimeters`` and ``cm`` are ``cm``."""
    words = " ".join(unit.lower().replace(".", " ").split())
    square = re.match(r"(?:square|sq|cubic)\s+(.+)", words)
    if square:
        words, power = square.group(1), "3" if words.startswith("cubic") else "2"
    for spelling in (words, words[:-1] if words.endswith("s") and len(words) > 2 else words):
        if spelling in _UNIT_NAMES or spelling in _UNIT_NAME:
            words = _UNIT_NAME.get(spelling, spelling)
            break
    digits = re.sub(r"\D", "", power or "")
    return words + (f"^{digits}" if digits else "")


def _clean_latex(answer: str) -> str:
    """The unwrapped answer with one spelling of fractions and dots, and no spacing or degrees."""
    s = _strip_wrapping(answer)
    s = s.replace("\\dfrac", "\\frac").replace("\\tfrac", "\\frac")
    s = s.replace("{,}", ",").replace("\\$", "").replace("\\dots", "\\ldots")
    s = s.replace("$", " ")  # a math delimiter inside the answer: "$1$ and $2$"
    s = _MATH_THOUSANDS_RE.sub(",", s)
    s = _SPACING_RE.sub(" ", s)
    s = _DEGREE_RE.sub("", s)
    return s.strip()


def _split_percent(s: str) -> tuple[str, bool]:
    """``(s without its percent sign, whether it is a percentage)``."""
    # One percent sign at the end is read; "5\%\%" keeps its signs and matches nothing.
    percent = s.endswith("%") and s.count("%") == 1
    if s.count("%") == 1:
        s = s.replace("\\%", "").replace("%", "")
    return s, percent


def _strip_text_commands(s: str) -> tuple[str, bool]:
    """``(s with \\text{..} and its kin unwrapped, whether it had any)``."""
    had_text = bool(_TEXT_CMD_RE.search(s))
    for _ in range(3):  # nested \text{\textbf{..}}
        s = _TEXT_CMD_RE.sub(lambda m: " " + m.group(1) + " ", s)
    return " ".join(s.split()).rstrip(".").strip(), had_text


def _split_unit(s: str) -> tuple[str, str | None]:
    """``(s without a trailing unit, the unit's canonical name)``."""
    unit_match = _TRAILING_UNIT_RE.match(s)
    if unit_match:
        return unit_match.group(1), _unit_name(unit_match.group(2), unit_match.group(3))
    return s, None


def _split_assignment(s: str) -> tuple[str, str | None]:
    """``(the value of "x = value", the variable)``; ``s`` itself when it assigns nothing."""
    assignment = _ASSIGNMENT_RE.match(s)
    if assignment:
        return s[assignment.end() :].strip(), _INNER_SPACE_RE.sub("", assignment.group(1))
    return s, None


def _answer_words(s: str, had_text: bool) -> str | None:
    """The lower-cased words of a word answer or the letter of a choice such as ``(B)``."""
    choice = re.fullmatch(r"\(([A-Za-z])\)", s)
    if choice:
        return choice.group(1).lower()
    if _WORDS_RE.match(s) and (had_text or " " in s or len(s) >= 4):
        # Short bare letter runs such as "xy" are products of variables, not words.
        return " ".join(s.lower().split())
    return None


def _split_base(text: str) -> tuple[str, int | None]:
    """``(the digits, the base)`` of a numeral with a base subscript; ``text`` itself otherwise."""
    base_match = _BASE_RE.match(text)
    if base_match:
        return base_match.group(1), int(base_match.group(2))
    return text, None


def normalize_answer(answer: str) -> NormalizedAnswer:
    """Cheaply normalise a LaTeX answer for string and plain-number comparison."""
    s, percent = _split_percent(_clean_latex(answer))
    s, had_text = _strip_text_commands(s)
    percent_word = _PERCENT_WORD_RE.search(s)
    if percent_word and not percent and "%" not in s:
        s, percent = s[: percent_word.start()].strip(), True
    s, unit = _split_unit(s)
    s = _LIST_WORD_RE.sub(", ", s)
    s, variable = _split_assignment(s)
    words = _answer_words(s, had_text)
    relation = bool(_RELATION_RE.search(s))
    marks = frozenset(
        mark for mark, pattern in (("prime", _PRIME_RE), ("dots", _DOTS_RE)) if pattern.search(s)
    )
    text, base = _split_base(_squeeze_number(s))
    return NormalizedAnswer(text, percent, words, variable, relation, unit, base, marks)


def _base_value(digits: str, base: int) -> int | None:
    """The value of ``digits`` read in ``base`` (2-36), or ``None`` when they are not its digits."""
    if not 2 <= base <= 36 or len(digits) > _MAX_NUMBER_DIGITS:
        return None
    try:
        return int(digits, base)
    except ValueError:
        return None


def _bases_match(reference: NormalizedAnswer, answer: NormalizedAnswer) -> bool:
    """Numerals with a base subscript: the same base and value; a bare answer is read in the
    reference's base; a subscripted answer to a decimal reference must have its value."""
    if reference.base is not None:
        base = reference.base
        if answer.base is not None and answer.base != base:
            return False
        expected = _base_value(reference.text, base)
        return expected is not None and _base_value(answer.text, base) == expected
    value = _plain_number(reference.text)
    if value is None or answer.base is None:  # the caller sends answers with a base here
        return False
    return _base_value(answer.text, answer.base) == value


def _plain_number(s: str) -> Fraction | None:
    """Value of an integer, decimal or integer fraction literal; ``None`` otherwise."""
    if len(s) > _MAX_NUMBER_DIGITS:
        return None
    try:
        if _NUMBER_RE.match(s):
            return Fraction(s)
        match = _SLASH_FRACTION_RE.match(s)
        if match:
            num, den = match.groups()
        else:
            match = _LATEX_FRACTION_RE.match(s)
            if not match:
                return None
            sign, num_braced, num_digit, den_braced, den_digit = match.groups()
            num = sign + (num_braced or num_digit)
            den = den_braced or den_digit
        return Fraction(int(num), int(den)) if int(den) else None
    except (ValueError, ZeroDivisionError):
        return None


def is_inexact(reference_text: str) -> bool:
    """Whether a normalised reference is written with a decimal point (so it is rounded)."""
    return bool(_DECIMAL_RE.search(reference_text))


def _half_last_place(reference_text: str) -> Fraction | None:
    """Half a unit in the last written place of a plain decimal reference (``1.25`` -> 0.005)."""
    if not _NUMBER_RE.match(reference_text) or "." not in reference_text:
        return None
    return Fraction(1, 2 * 10 ** len(reference_text.split(".")[1]))


def tolerance(reference_text: str, magnitude: Fraction) -> Fraction:
    """How far an answer may be from an inexact reference of about ``magnitude``.

    A relative :data:`RELATIVE_TOLERANCE`, and never more than half a unit in the
    reference's last written decimal (``12345.679`` is not ``12345.678``).
    """
    relative = RELATIVE_TOLERANCE * magnitude
    half_place = _half_last_place(reference_text)
    return relative if half_place is None else min(relative, half_place)


def _numbers_match(reference: Fraction, answer: Fraction, reference_text: str) -> bool:
    """Exact comparison, or within :func:`tolerance` when the reference is inexact."""
    if not is_inexact(reference_text):
        return reference == answer
    return abs(reference - answer) <= tolerance(reference_text, max(abs(reference), abs(answer)))


def percent_readings(ref, ans, ref_percent: bool, ans_percent: bool, ref_is_whole: bool):
    """The ``(reference, answer)`` value pairs the percent rule allows (see the module doc)."""
    if ans_percent and not ref_percent:
        return [(ref, ans if ref_is_whole else ans / 100)]
    if ref_percent and not ans_percent:
        return [(ref, ans), (ref / 100, ans)]
    return [(ref, ans)]


def _answer_value(reference: NormalizedAnswer, answer: NormalizedAnswer) -> Fraction | None:
    """The answer's number; against a decimal reference ``1,22`` is a decimal comma."""
    if is_inexact(reference.text) and _DECIMAL_COMMA_RE.match(answer.text):
        return _plain_number(answer.text.replace(",", "."))
    return _plain_number(answer.text)


def _decimal_comma_reference(reference: NormalizedAnswer, answer: NormalizedAnswer):
    """A reference ``1,22`` or ``0,111`` read with a decimal comma, when the answer is a decimal.

    Three digits after a comma that follows a non-zero whole part (``1,222``) stay a
    thousands separator; against an answer that is a list, the reference stays a list.
    """
    if not (_DECIMAL_COMMA_RE.match(reference.text) and _NUMBER_RE.match(answer.text)):
        return reference
    whole, decimals = reference.text.split(",")
    if "." in answer.text and (len(decimals) != 3 or whole.lstrip("-") == "0"):
        return dataclasses.replace(reference, text=f"{whole}.{decimals}")
    return reference


def _irrational_surd(text: str) -> bool:
    """Whether ``text`` is ``c\\sqrt{a}``, or a ``\\frac`` of two such parts (``\\frac{9\\sqrt{51}}{4}``),
    with non-zero whole coefficients and a product of radicands that is not a perfect
    square: an irrational number, which no plain number (a rational) equals."""
    match = _SURD_RE.match(text)
    if match is None:
        return False
    groups = match.groups()
    parts = (groups[0:3], groups[3:6]) if groups[6:9] == (None, None, None) else (groups[6:9],)
    radicand = 1
    for coefficient, braced, digit in parts:
        root = braced or digit
        if root is None and coefficient is None:
            return False  # an empty part: not a number
        if coefficient is not None and (
            len(coefficient) > _MAX_NUMBER_DIGITS or not int(coefficient)
        ):
            return False
        if root is not None:
            if len(root) > _MAX_NUMBER_DIGITS:
                return False
            radicand *= int(root)
    return radicand > 0 and math.isqrt(radicand) ** 2 != radicand


def _form_mismatch(reference: NormalizedAnswer, answer: NormalizedAnswer) -> str | None:
    """The stage that rejects an answer of another form than the reference, if any."""
    if any(command in answer.text for command in _BOX_COMMANDS):
        return "box_operand"  # -\\boxed{3}, \\boxed{\\boxed{5}+6}: a box inside the answer
    if reference.variable and answer.variable and reference.variable != answer.variable:
        return "variable"
    if reference.unit and answer.unit and reference.unit != answer.unit:
        return "unit"
    if answer.marks - reference.marks:
        return "marks"
    return None


def _relation_verdict(
    reference: NormalizedAnswer, answer: NormalizedAnswer
) -> tuple[bool, str] | None:
    """A relation given for a value: wrong, unless both may be equations of one variable."""
    if reference.variable is not None and _equation_sides(answer) is not None:
        return None  # x = 3 against 2x = 6: compared as equations in the worker
    return False, "relation"


def _numeric_verdict(
    reference: NormalizedAnswer, answer: NormalizedAnswer
) -> tuple[bool, str] | None:
    """Compare plain numbers (under the percent readings); ``None`` when either is not one."""
    reference = _decimal_comma_reference(reference, answer)
    ref_value, ans_value = _plain_number(reference.text), _answer_value(reference, answer)
    if ref_value is None and ans_value is not None and _irrational_surd(reference.text):
        # A surd reference is exact, and every reading of a plain number is rational.
        return False, "irrational"
    if ref_value is None or ans_value is None:
        return None
    readings = percent_readings(
        ref_value, ans_value, reference.percent, answer.percent, ref_value.denominator == 1
    )
    return any(_numbers_match(r, a, reference.text) for r, a in readings), "numeric"


def _fast_path(reference: NormalizedAnswer, answer: NormalizedAnswer) -> tuple[bool, str] | None:
    """Decide cheaply when possible: ``(is_correct, stage)`` or ``None`` to defer."""
    mismatch = _form_mismatch(reference, answer)
    if mismatch is not None:
        return False, mismatch
    if reference.base is not None or answer.base is not None:
        return _bases_match(reference, answer), "base"
    if reference.text == answer.text and reference.percent == answer.percent:
        return True, "string"
    if reference.words is not None:
        return answer.words == reference.words or answer.text.lower() == reference.words, "text"
    if answer.relation and not reference.relation:
        return _relation_verdict(reference, answer)
    return _numeric_verdict(reference, answer)


# ---------------------------------------------------------------------------
# Worker cascade (runs inside an isolated process)

_OPENERS = ("(", "[", "\\{")
_MATRIX_RE = re.compile(
    # one matrix: its body holds no other \begin/\end (A + B is a sum of two)
    r"^\\begin\{([pbvBV]?matrix|array)\}(?:\{[^{}]*\})?((?:(?!\\(?:begin|end)\{).)*)\\end\{\1\}$",
    re.DOTALL,
)
_BRACKETED_ARRAY_RE = re.compile(r"^[\[(](\\begin\{array\}.*\\end\{array\})[\])]$", re.DOTALL)
_DECIMAL_LITERAL_RE = re.compile(r"(?<![\d.])(\d*)\.(\d+)(?![\d.])")


def _split_top_level(s: str, separator: str) -> list[str]:
    """Split on ``separator`` outside of any (), [], {} nesting."""
    parts: list[str] = []
    current: list[str] = []
    depth, i = 0, 0
    while i < len(s):
        if s.startswith(separator, i) and depth == 0:
            parts.append("".join(current))
            current = []
            i += len(separator)
            continue
        ch = s[i]
        if ch == "\\" and i + 1 < len(s) and s[i + 1] in "{}":
            current.append(s[i : i + 2])
            depth += 1 if s[i + 1] == "{" else -1
            i += 2
            continue
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        current.append(ch)
        i += 1
    parts.append("".join(current))
    return parts


def _closes_at_end(s: str) -> bool:
    """Whether the bracket opened at ``s[0]`` is the one closed by the last character."""
    depth, i = 0, 0
    while i < len(s):
        step = 2 if s[i] == "\\" and i + 1 < len(s) and s[i + 1] in "{}" else 1
        token = s[i : i + step]
        if token in ("(", "[", "{", "\\{"):
            depth += 1
        elif token in (")", "]", "}", "\\}"):
            depth -= 1
            if depth == 0:
                return i + step == len(s)
        i += step
    return False


def _collection(s: str) -> tuple[str, str, list[str]] | None:
    """``(open, close, items)`` for a bracketed or bare comma list of 2+ items (or a set)."""
    opener = next((o for o in _OPENERS if s.startswith(o)), "")
    closer = next((c for c in (")", "]", "\\}") if s.endswith(c)), "") if opener else ""
    if opener and not (closer and _closes_at_end(s)):
        opener = closer = ""  # "(1,2), (3,4)": a bare list whose items are bracketed
    items = _split_top_level(s[len(opener) : len(s) - len(closer)], ",")
    if not all(items) or (len(items) < 2 and opener != "\\{"):
        return None
    return opener, closer, items


def _items_of(s: str) -> tuple[str, str, list[str]] | None:
    """Like :func:`_collection`, and an answer with ``\\pm`` is the bare list of its two values."""
    items = _collection(s)
    if items is None and "\\pm" in s:
        return "", "", [s]
    return items


def _expand_pm(items: list[str]) -> list[str]:
    """``a \\pm b`` stands for the two items ``a + b`` and ``a - b``."""
    expanded = []
    for item in items:
        if "\\pm" in item:
            expanded += [item.replace("\\pm", "+", 1), item.replace("\\pm", "-", 1)]
        else:
            expanded.append(item)
    return expanded


def is_unordered_collection(reference: str) -> bool:
    """Whether a reference is a set ``\\{...\\}`` or a bare list ``a, b``."""
    items = _collection(normalize_answer(reference).text)
    return items is not None and items[0] in ("\\{", "")


def _matrix(s: str) -> tuple[str, list[list[str]]] | None:
    """``(kind, rows of cells)`` of a matrix; ``kind`` is ``"determinant"`` for the bars of
    ``vmatrix``/``Vmatrix`` (a number, not a matrix), else ``"matrix"``."""
    bracketed = _BRACKETED_ARRAY_RE.match(s)  # \left[\begin{array}...\end{array}\right]
    match = _MATRIX_RE.match(bracketed.group(1) if bracketed else s)
    if not match:
        return None
    kind = "determinant" if match.group(1) in ("vmatrix", "Vmatrix") else "matrix"
    rows = [row for row in match.group(2).split("\\\\") if row.strip()]
    return kind, [[cell.strip() for cell in row.split("&")] for row in rows]


def _as_fraction(match: re.Match[str]) -> str:
    whole, decimals = match.groups()
    numerator = int(whole + decimals)
    return "{\\frac{" + str(numerator) + "}{1" + "0" * len(decimals) + "}}"


def _exact_decimals(latex: str) -> str:
    """Rewrite decimal literals as exact fractions (``0.25`` -> ``{\\frac{25}{100}}``)."""
    return _DECIMAL_LITERAL_RE.sub(_as_fraction, latex)


def _parse(latex: str):
    """The whole of ``latex`` as one sympy object, read the way math-verify reads LaTeX."""
    from latex2sympy2_extended.latex2sympy2 import latex2sympy, normalize_latex
    from math_verify import LatexExtractionConfig
    from math_verify.grader import should_treat_as_complex

    normalized = normalize_latex(latex, config=LatexExtractionConfig().normalization_config)
    return latex2sympy(
        normalized,
        is_real=not should_treat_as_complex(normalized),
        convert_degrees=False,
        normalization_config=None,
    )


def _has_infinity(expr) -> bool:
    import sympy

    return any(expr.has(value) for value in (sympy.oo, -sympy.oo, sympy.zoo, sympy.nan))


def _numerically_close(reference, answer, reference_text: str) -> bool:
    """:func:`tolerance` comparison of two finite constant values, in sympy arithmetic."""
    import sympy

    ref_value, ans_value = sympy.N(reference, 30), sympy.N(answer, 30)
    if not (ref_value.is_finite and ans_value.is_finite):
        return False
    magnitude = sympy.Rational(str(max(abs(ref_value), abs(ans_value))))
    allowed = tolerance(reference_text, Fraction(int(magnitude.p), int(magnitude.q)))
    return bool(
        abs(ref_value - ans_value) <= sympy.Rational(allowed.numerator, allowed.denominator)
    )


def _is_statement(reference, answer) -> bool:
    """Whether the answer is a statement where the reference is a value."""
    import sympy
    from latex2sympy2_extended.logic import And

    if isinstance(answer, sympy.logic.boolalg.BooleanAtom):
        return True  # "2 = 2" evaluates to True: a statement, not a value
    return isinstance(answer, And) and not isinstance(reference, And)  # a chain such as x = 3 = 2


def _infinities_equal(reference, answer) -> bool:
    """Only a signed infinity equals itself: 1:00 and 12:00 both read as complex infinity
    (a division by zero), which says nothing about either answer."""
    import sympy

    undefined = any(x.has(sympy.zoo) or x.has(sympy.nan) for x in (reference, answer))
    return not undefined and reference == answer


def _sympy_equal(reference, answer, reference_text: str) -> bool:
    """Compare two parsed values under the exactness, infinity and relation rules."""
    import sympy
    from math_verify import verify

    if not all(isinstance(x, (sympy.Basic, sympy.MatrixBase)) for x in (reference, answer)):
        return False
    if _is_statement(reference, answer):
        return False
    scalars = isinstance(reference, sympy.Expr) and isinstance(answer, sympy.Expr)
    if scalars and (_has_infinity(reference) or _has_infinity(answer)):
        return _infinities_equal(reference, answer)
    if is_inexact(reference_text) and scalars and reference.is_number and answer.is_number:
        return _numerically_close(reference, answer, reference_text)
    return bool(verify(reference, answer, strict=True, timeout_seconds=None))


def _parsed_equal(ref_norm: NormalizedAnswer, ans_norm: NormalizedAnswer) -> bool:
    inexact = is_inexact(ref_norm.text)
    reference = _parse(ref_norm.text)
    answer = _parse(ans_norm.text if inexact else _exact_decimals(ans_norm.text))
    ref_is_whole = bool(getattr(reference, "is_integer", False))
    readings = percent_readings(reference, answer, ref_norm.percent, ans_norm.percent, ref_is_whole)
    return any(_sympy_equal(r, a, ref_norm.text) for r, a in readings)


def _scalar_equal(reference: str, answer: str) -> tuple[bool, str]:
    """Compare two single expressions: normalised strings, plain numbers, then sympy."""
    ref_norm, ans_norm = normalize_answer(reference), normalize_answer(answer)
    decided = _fast_path(ref_norm, ans_norm)
    if decided is not None:
        return decided
    try:
        return _parsed_equal(ref_norm, ans_norm), "sympy"
    except Exception:  # unparsable LaTeX: simply not equal
        return False, "unparsable"


def _items_equal(reference: list[str], answer: list[str], ordered: bool) -> bool:
    if ordered:
        if len(reference) != len(answer):
            return False
        return all(grade_in_worker(r, a)[0] for r, a in zip(reference, answer, strict=True))
    reference, answer = _distinct_items(reference), _distinct_items(answer)  # a set: twice is once
    if len(reference) != len(answer):
        return False
    unmatched = list(answer)
    for ref_item in reference:  # greedy matching is enough for distinct set elements
        hit = next((a for a in unmatched if grade_in_worker(ref_item, a)[0]), None)
        if hit is None:
            return False
        unmatched.remove(hit)
    return True


def _distinct_items(items: list[str]) -> list[str]:
    """Set items with repeats dropped; ``(3, 7)`` and ``(3,7)`` are one item."""
    seen: dict[NormalizedAnswer, str] = {}
    for item in items:
        norm = normalize_answer(item)
        seen.setdefault(dataclasses.replace(norm, text=norm.text.replace(" ", "")), item)
    return list(seen.values())


def _is_bare_list(items: tuple[str, str, list[str]] | None) -> bool:
    return items is not None and items[0] == ""


def _equation_sides(norm: NormalizedAnswer) -> tuple[str, str] | None:
    """``(left, right)`` of an answer that is one equation (``2x+4y-3=0``, ``y = 3x``)."""
    if norm.variable is not None:
        if norm.relation or norm.variable.startswith("("):
            return None
        return norm.variable, norm.text
    sides = _split_top_level(norm.text, "=")
    if len(sides) != 2 or any(_RELATION_RE.search(side) for side in sides) or not all(sides):
        return None
    return sides[0], sides[1]


def _equations_equal(reference: tuple[str, str], answer: tuple[str, str]) -> bool:
    """Whether two equations are one equation scaled: (l1 - r1) / (l2 - r2) is a non-zero
    constant (``2x+4y-3=0`` and ``y=-\\frac{x}{2}+\\frac34``; not ``x^2=4`` and ``x=2``)."""
    import sympy

    try:
        ref_left, ref_right = (_parse(side) for side in reference)
        ans_left, ans_right = (_parse(_exact_decimals(side)) for side in answer)
        ref_zero, ans_zero = ref_left - ref_right, ans_left - ans_right
        if ans_zero == 0 or not ref_zero.free_symbols:
            return False
        ratio = sympy.simplify(ref_zero / ans_zero)
    except Exception:  # unparsable LaTeX, or sides that are not expressions
        return False
    return bool(ratio.is_number and ratio.is_finite and ratio != 0)


def _matrix_value(text: str):
    """The matrix an expression of matrices evaluates to (a sum, a product), else ``None``."""
    import sympy

    try:
        value = _parse(_exact_decimals(text))
        if isinstance(value, sympy.MatrixExpr) and not isinstance(value, sympy.MatrixBase):
            value = value.doit()
    except Exception:  # unparsable LaTeX, or matrices of mismatched shapes
        return None
    return value if isinstance(value, sympy.MatrixBase) else None


def _matrices_equal(reference: tuple[str, list[list[str]]], answer_text: str) -> tuple[bool, str]:
    """Cell by cell; an answer that is a sum or product of matrices is evaluated first."""
    import sympy

    kind, ref_rows = reference
    answer = _matrix(answer_text)
    if answer is not None:
        same_shape = [len(r) for r in ref_rows] == [len(r) for r in answer[1]]
        cells = zip(sum(ref_rows, []), sum(answer[1], []), strict=False)
        correct = kind == answer[0] and same_shape
        return correct and all(_scalar_equal(r, a)[0] for r, a in cells), "matrix"
    if kind != "matrix" or "\\begin" not in answer_text:
        return False, "matrix"
    value = _matrix_value(answer_text)
    if value is None or value.shape != (len(ref_rows), len(ref_rows[0])):
        return False, "matrix"
    cells = zip(sum(ref_rows, []), value, strict=True)
    return all(_scalar_equal(r, sympy.latex(a))[0] for r, a in cells), "matrix_expression"


def grade_in_worker(reference: str, answer: str) -> tuple[bool, str]:
    """The full cascade for one answer; meant to run inside an :class:`IsolatedPool` worker.

    Returns ``(is_correct, stage)`` where ``stage`` names the deciding step.
    """
    logging.getLogger("math_verify").setLevel(logging.ERROR)  # it warns that timeouts are off
    ref_norm, ans_norm = normalize_answer(reference), normalize_answer(answer)
    ref_matrix = _matrix(ref_norm.text)
    if ref_matrix is not None:
        return _matrices_equal(ref_matrix, ans_norm.text)
    if _matrix(ans_norm.text) is not None:
        return False, "matrix"
    ref_items, ans_items = _items_of(ref_norm.text), _items_of(ans_norm.text)
    if ref_items is not None and ans_items is not None:
        (ref_open, ref_close, refs), (ans_open, ans_close, answers) = ref_items, ans_items
        if ref_open in ("\\{", ""):  # a set: any brackets, any order
            return _items_equal(_expand_pm(refs), _expand_pm(answers), ordered=False), "set"
        brackets_match = (ref_open, ref_close) == (ans_open, ans_close)
        return brackets_match and _items_equal(refs, answers, ordered=True), "tuple"
    if _is_bare_list(ref_items) or _is_bare_list(ans_items):
        return False, "list_vs_scalar"  # a bare list is never one number
    ref_equation, ans_equation = _equation_sides(ref_norm), _equation_sides(ans_norm)
    if ref_equation and ans_equation and not (ref_norm.variable and ans_norm.variable):
        decided = _fast_path(ref_norm, ans_norm)
        if decided is not None and not decided[0]:
            return decided
        return _equations_equal(ref_equation, ans_equation), "equation"
    return _scalar_equal(reference, answer)


def grade_all_in_worker(reference: str, answers: list[str]) -> tuple[bool, str]:
    """Every answer must match the reference; the stage of the deciding one is returned."""
    stage = "none"
    for answer in answers:
        correct, stage = grade_in_worker(reference, answer)
        if not correct:
            return False, stage
    return True, stage


# ---------------------------------------------------------------------------
# Pool and entry point

_pool: IsolatedPool | None = None
_pool_lock = threading.Lock()


def default_pool() -> IsolatedPool:
    """The shared worker pool for math grading, created on first use (per process)."""
    global _pool
    with _pool_lock:
        if _pool is None or _pool.owner_pid != os.getpid():
            size = int(os.environ.get("INTBENCH_MATH_WORKERS", min(2, os.cpu_count() or 1)))
            _pool = IsolatedPool(size, preload=("math_verify", "sympy", __name__))
        return _pool


def _clip(s: str) -> str:
    return s if len(s) <= _DETAIL_CHARS else s[:_DETAIL_CHARS] + f"... [{len(s)} chars]"


def verify_math(
    problem: Problem,
    response: str,
    *,
    timeout_s: float | None = None,
    pool: IsolatedPool | None = None,
) -> Verdict:
    """Grade a math response against ``problem.answer``; never raises.

    Args:
        problem: a problem whose ``answer`` is the reference (a LaTeX string).
        response: the full student response; only its graded part is read.
        timeout_s: hard limit for the worker cascade (default :data:`DEFAULT_TIMEOUT_S`).
        pool: worker pool to use (default: :func:`default_pool`).

    Returns:
        ``correct``/``incorrect`` with ``details`` ``{"extracted", "reference",
        "extraction", "stage"}`` (plus ``"boxes"`` when several were graded);
        ``incorrect`` with ``reason="no_answer"`` when nothing could be extracted;
        ``error`` with ``reason`` ``"timeout"``, ``"worker_crashed"``, ``"memory"``
        or ``"grader_error"`` when grading failed, or ``"no_reference"`` when the
        problem has no answer.
    """
    try:
        return _verify(problem, response, timeout_s=timeout_s, pool=pool)
    except Exception as exc:  # a bug here must not end an episode
        logger.exception("math verifier crashed on problem %s", getattr(problem, "id", "?"))
        return Verdict.error(f"grader error: {type(exc).__name__}: {exc}", reason="grader_error")


def math_cache_key(problem: Problem, response: str) -> tuple:
    """What :func:`verify_math` grades: the extracted answers and how they were found."""
    answers, method = extract_answers(graded_part(response))
    return method, tuple(answers)


# A function attribute that intbench.verifiers.memo looks up (mypy does not model them).
verify_math.cache_key = math_cache_key  # type: ignore[attr-defined]


def _reference_text(answer: object) -> str:
    """The reference as one LaTeX string; a reference with several boxes becomes their list."""
    text = str(answer)
    boxes = list(dict.fromkeys(boxed_answers(text)))  # a solution boxed twice is one item
    if len(boxes) > 1:
        return ", ".join(boxes)
    return _strip_wrapping(boxes[0] if boxes else text)


def _distinct(answers: list[str]) -> list[str]:
    """Answers with repeats (after cheap normalisation) dropped, in order."""
    seen: dict[object, str] = {}
    for answer in answers:
        # The whole normalised answer: "5 cm" and "5 m" share a text but not a unit.
        key = normalize_answer(answer) if len(answer) <= MAX_ANSWER_CHARS else answer
        seen.setdefault(key, answer)
    return list(seen.values())


def _strings_only(reference: str, answers: list[str], pooled: bool) -> bool:
    """The fallback for too many or too long answers: exact stripped-string comparison."""
    found = {_strip_wrapping(answer) for answer in answers}
    if pooled:
        return found == {item.strip() for item in reference.split(",")}
    return found == {reference.strip()}


def _graded_answers(reference: str, answers: list[str]) -> tuple[list[str], bool]:
    """What to grade under the multi-box rule, and whether it is the pooled list of all boxes."""
    if len(answers) > 1 and is_unordered_collection(reference):
        return [", ".join(answers)], True
    return answers, False


def _verify(
    problem: Problem, response: str, *, timeout_s: float | None, pool: IsolatedPool | None
) -> Verdict:
    text = response if isinstance(response, str) else "" if response is None else str(response)
    if problem.answer is None or not str(problem.answer).strip():
        return Verdict.error("the problem has no reference answer", reason="no_reference")
    reference = _reference_text(problem.answer)
    extracted, method = extract_answers(graded_part(text))
    if not extracted:
        return Verdict(
            status="incorrect",
            feedback="No final answer was found (expected \\boxed{...} or a 'Final Answer:' line).",
            details={"reason": "no_answer", "reference": reference},
        )
    distinct = _distinct(extracted)
    shown = distinct[-1] if len(distinct) == 1 else " ; ".join(distinct)
    details: dict[str, Any] = {
        "extracted": _clip(shown),
        "reference": reference,
        "extraction": method,
    }
    if len(distinct) > 1:
        details["boxes"] = len(distinct)

    def decide(correct: bool, stage: str) -> Verdict:
        relation = "matches" if correct else "does not match"
        return Verdict(
            status="correct" if correct else "incorrect",
            score=1.0 if correct else 0.0,
            answer=shown,
            feedback=f"Extracted answer {_clip(shown)} {relation} the reference {reference}",
            details={**details, "stage": stage},
        )

    answers, pooled = _graded_answers(reference, distinct)
    if len(distinct) > MAX_BOXES or any(len(a) > MAX_ANSWER_CHARS for a in answers):
        return decide(_strings_only(reference, distinct, pooled), "too_long")
    return _grade_answers(reference, answers, timeout_s, pool, decide, details)


def _grade_answers(reference, answers, timeout_s, pool, decide, details) -> Verdict:
    """The fast path on every answer, then one worker call for those it leaves undecided."""
    ref_norm = normalize_answer(reference)
    pending = []
    correct: tuple[bool, str] | None = None  # the last answer the fast path found correct
    for answer in answers:
        decided = _fast_path(ref_norm, normalize_answer(answer))
        if decided is None:
            pending.append(answer)
        elif not decided[0]:
            return decide(*decided)
        else:
            correct = decided
    if not pending and correct is not None:
        return decide(*correct)
    return _grade_pending(reference, pending, timeout_s, pool or default_pool(), decide, details)


def _grade_pending(reference, pending, timeout_s, pool, decide, details) -> Verdict:
    """One timed worker call for every answer the fast path could not decide."""
    timeout = DEFAULT_TIMEOUT_S if timeout_s is None else timeout_s
    try:
        correct, stage = pool.call(grade_all_in_worker, reference, pending, timeout=timeout)
    except WorkerTimeout:
        reason, message = "timeout", f"grading timed out after {timeout:g} s"
    except WorkerCrashed as exc:
        reason, message = "worker_crashed", f"grading worker crashed: {exc}"
    except RemoteError as exc:
        reason = "memory" if exc.type_name == "MemoryError" else "grader_error"
        message = f"grader error: {exc}"
    else:
        return decide(correct, stage)
    return Verdict(
        status="error",
        answer=details["extracted"],
        feedback=message,
        details={**details, "reason": reason},
    )
