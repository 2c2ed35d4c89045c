"""Math answer verifier for the ``math`` and ``omni_math`` domains.

Grading runs in three steps, cheapest first:

1. **Extraction** (in process): the last balanced ``\\boxed{...}``/``\\fbox{...}``,
   else the last "Final Answer:" / "The final answer is" line.
2. **Fast path** (in process): both answers are normalised (``$``, spacing,
   ``\\dfrac``, ``\\text{}``, units, degrees, percent, thousands separators,
   ``x =``); equal strings, plain numbers and plain words are decided here.
3. **Worker cascade** (isolated process): math-verify, then element-wise
   comparison of tuples/sets/intervals/matrices, then sympy simplification and
   numeric evaluation.  It runs in an :class:`~intbench.verifiers.isolation.IsolatedPool`
   with a hard timeout because sympy can hang on inputs such as ``9^{9^{9^9}}``;
   math-verify's own ``signal.alarm`` timeouts are switched off since they
   fail off the main thread.

A timeout or grader crash gives ``status="error"``, never ``"incorrect"``.
"""

from __future__ import annotations

import logging
import os
import re
import threading
from dataclasses import dataclass
from fractions import Fraction

from intbench.records import Problem, Verdict
from intbench.verifiers.isolation import IsolatedPool, RemoteError, WorkerCrashed, WorkerTimeout

logger = logging.getLogger(__name__)

DEFAULT_TIMEOUT_S = float(os.environ.get("INTBENCH_MATH_TIMEOUT", "5"))
"""Seconds the worker cascade may spend on one answer (env ``INTBENCH_MATH_TIMEOUT``)."""

MAX_ANSWER_CHARS = 2000
"""Extracted answers longer than this are only compared as strings: no
competition answer is that long, and parsing them would just burn the timeout."""

RELATIVE_TOLERANCE = Fraction(1, 10**6)
_DETAIL_CHARS = 1000  # how much of an answer the verdict's details and feedback keep

# ---------------------------------------------------------------------------
# Extraction


_BOX_COMMANDS = ("\\boxed", "\\fbox")
_FINAL_ANSWER_RE = re.compile(r"final\s+answer", re.IGNORECASE)
_HOPE_RE = re.compile(r"\s*I\s+hope\s+it\s+is\s+correct\.?\s*$", re.IGNORECASE)


def _boxed_spans(text: str) -> list[tuple[int, int]]:
    """Content spans ``(start, end)`` of every balanced ``\\boxed{...}``/``\\fbox{...}``.

    One left-to-right pass with a brace stack, so deeply nested or unbalanced
    input stays linear.  Escaped braces ``\\{``/``\\}`` are set delimiters, not groups.
    """
    spans = []
    stack: list[int | None] = []  # content start for box groups, None for plain groups
    i, n = 0, len(text)
    while i < n:
        ch = text[i]
        if ch == "\\":
            if text.startswith(_BOX_COMMANDS, i):
                cmd_end = i + (6 if text.startswith("\\boxed", i) else 5)
                j = cmd_end
                while j < n and text[j] == " ":
                    j += 1
                if j < n and text[j] == "{":
                    stack.append(j + 1)
                    i = j + 1
                    continue
                i = cmd_end
                continue
            i += 2  # skip the escaped character (\{, \}, \\)
            continue
        if ch == "{":
            stack.append(None)
        elif ch == "}" and stack:
            start = stack.pop()
            if start is not None:
                spans.append((start, i))
        i += 1
    return spans


def _last_match(pattern: re.Pattern[str], text: str) -> re.Match[str] | None:
    match = None
    for match in pattern.finditer(text):  # noqa: B007 - we want the last one
        pass
    return match


def _final_answer_line(text: str) -> str | None:
    """The answer on the last "Final Answer:" / "The final answer is" line, if any."""
    last = _last_match(_FINAL_ANSWER_RE, text)
    if last is None:
        return None
    # Minerva style "Final Answer: The final answer is $X$. I hope it is correct.":
    # the last match is the inner phrase, so the line starts at " is $X$".
    line = text[last.end() :].split("\n", 1)[0]
    line = _HOPE_RE.sub("", line).strip()
    line = re.sub(r"^(?:is\b|:)\s*", "", line).strip()
    math_span = re.search(r"\$+([^$]+)\$+", line)
    if math_span:
        line = math_span.group(1)
    line = line.strip().rstrip(".").strip()
    return line or None


def extract_final_answer(text: str) -> tuple[str | None, str | None]:
    """Extract the final answer of a response.

    Returns:
        ``(answer, method)`` where ``method`` is ``"boxed"`` or
        ``"final_answer_line"``, or ``(None, None)`` when no answer was found.
        Among several boxes, the one that closes last wins (the outer box of
        ``\\boxed{\\boxed{3}}``, the later of two boxes).
    """
    spans = _boxed_spans(text)
    if spans:
        start, end = max(spans, key=lambda span: span[1])
        answer = text[start:end].strip()
        return (answer, "boxed") if answer else (None, None)
    line = _final_answer_line(text)
    return (line, "final_answer_line") if line else (None, None)


# ---------------------------------------------------------------------------
# Normalisation and the in-process fast path

_UNITS = (
    "units?|square\\s+units?|sq\\.?\\s*units?|cm|mm|km|m|meters?|metres?|centimeters?|"
    "kilometers?|inch(?:es)?|in|feet|foot|ft|yards?|miles?|mph|seconds?|sec|s|minutes?|"
    "min|hours?|hrs?|days?|weeks?|months?|years?|degrees?|dollars?|cents?|pounds?|lbs?|"
    "ounces?|oz|grams?|g|kg|liters?|litres?|ml|gallons?|cups?|people|students|ways|"
    "cubic\\s+\\w+|square\\s+\\w+"
)
_TRAILING_UNIT_RE = re.compile(rf"^(.*?[\d}}])\s+(?:{_UNITS})(?:\^?\{{?[23]\}}?)?$", re.IGNORECASE)
_TEXT_CMD_RE = re.compile(
    r"\\(?:text|textbf|textit|mathrm|mathbf|mbox|operatorname)\s*\{([^{}]*)\}"
)
_SPACING_RE = re.compile(r"\\(?:left|right|displaystyle|[!,;:]|quad|qquad)(?![a-zA-Z])|~")
_DEGREE_RE = re.compile(r"\^\s*\{?\s*\\circ\s*\}?|\\circ|\\degree|°")
_ASSIGNMENT_RE = re.compile(r"^[a-zA-Z](?:_\{?\w+\}?)?\s*=\s*(?!.*=)")
_THOUSANDS_RE = re.compile(r"^-?\d{1,3}(?:,\d{3})+(?:\.\d+)?$")
_NUMBER_RE = re.compile(r"^[+-]?(?:\d+\.?\d*|\.\d+)$")
_SLASH_FRACTION_RE = re.compile(r"^([+-]?\d+)/(\d+)$")
_LATEX_FRACTION_RE = re.compile(r"^([+-]?)\\frac(?:\{([+-]?\d+)\}|(\d))(?:\{(\d+)\}|(\d))$")
_WORDS_RE = re.compile(r"^[a-zA-Z][a-zA-Z ]*$")
_MAX_UNWRAP_ROUNDS = 8  # deeper wrapping is left for the (timed) worker
_MAX_NUMBER_DIGITS = 60  # longer literals go to the worker rather than big-int maths here


@dataclass(frozen=True)
class NormalizedAnswer:
    """An answer string after cheap normalisation.

    Attributes:
        text: normalised LaTeX with whitespace removed.
        percent: the answer carried a percent sign (now removed).
        words: the answer as lower-cased plain text (``\\text{Monday}``, ``(C)``,
            ``no solution``), else ``None``.
    """

    text: str
    percent: bool
    words: str | None


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
        if s.endswith("."):
            s = s[:-1].rstrip()
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


def normalize_answer(answer: str) -> NormalizedAnswer:
    """Cheaply normalise a LaTeX answer for string and plain-number comparison."""
    s = _strip_wrapping(answer)
    s = s.replace("\\dfrac", "\\frac").replace("\\tfrac", "\\frac")
    s = s.replace("{,}", ",").replace("\\$", "").replace("\\dots", "\\ldots")
    s = _SPACING_RE.sub(" ", s)
    s = _DEGREE_RE.sub("", s)
    percent = bool(re.search(r"\\?%\s*$", s))
    s = re.sub(r"\\?%", "", s)
    had_text = bool(_TEXT_CMD_RE.search(s))
    for _ in range(3):  # nested \text{\textbf{..}}
        s = _TEXT_CMD_RE.sub(lambda m: " " + m.group(1) + " ", s)
    s = s.strip().rstrip(".").strip()
    unit = _TRAILING_UNIT_RE.match(s)
    if unit:
        s = unit.group(1)
    s = _ASSIGNMENT_RE.sub("", s).strip()
    words = None
    choice = re.fullmatch(r"\(([A-Za-z])\)", s)
    if choice:
        words = choice.group(1).lower()
    elif _WORDS_RE.match(s) and (had_text or " " in s or len(s) >= 4):
        # Short bare letter runs such as "xy" are products of variables, not words.
        words = " ".join(s.lower().split())
    s = re.sub(r"\s+", "", s)
    if _THOUSANDS_RE.match(s):
        s = s.replace(",", "")
    return NormalizedAnswer(text=s, percent=percent, words=words)


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


def _numbers_match(a: Fraction, b: Fraction, inexact: bool) -> bool:
    """Exact comparison for integers/fractions, relative tolerance once a decimal is involved."""
    if not inexact:
        return a == b
    return abs(a - b) <= RELATIVE_TOLERANCE * max(abs(a), abs(b), Fraction(1, 10**6))


def _fast_path(reference: NormalizedAnswer, answer: NormalizedAnswer) -> tuple[bool, str] | None:
    """Decide cheaply when possible: ``(is_correct, stage)`` or ``None`` to defer."""
    if reference.text == answer.text and reference.percent == answer.percent:
        return True, "string"
    if reference.words is not None:
        return answer.words == reference.words or answer.text.lower() == reference.words, "text"
    ref_value, ans_value = _plain_number(reference.text), _plain_number(answer.text)
    if ref_value is None or ans_value is None:
        return None
    inexact = "." in reference.text or "." in answer.text
    # "50\%" equals both 50 and 0.5; an answer's own percent sign works the same way.
    ref_values = {ref_value, ref_value / 100} if reference.percent else {ref_value}
    ans_values = {ans_value, ans_value / 100} if answer.percent else {ans_value}
    matched = any(_numbers_match(r, a, inexact) for r in ref_values for a in ans_values)
    return matched, "numeric"


# ---------------------------------------------------------------------------
# Worker cascade (runs inside an isolated process)

_OPENERS = ("(", "[", "\\{")
_MATRIX_RE = re.compile(
    r"^\\begin\{([pbvBV]?matrix|array)\}(?:\{[^{}]*\})?(.*)\\end\{\1\}$", re.DOTALL
)


def _split_top_level(s: str, separator: str) -> list[str]:
    """Split on ``separator`` outside of any (), [], {} nesting."""
    parts, depth, current, i = [], 0, [], 0
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
    """``(open, close, items)`` for a bracketed or bare comma list of 2+ items."""
    opener = next((o for o in _OPENERS if s.startswith(o)), "")
    closer = ""
    if opener:
        closer = next((c for c in (")", "]", "\\}") if s.endswith(c)), "")
        if not closer or not _closes_at_end(s):
            return None
    items = _split_top_level(s[len(opener) : len(s) - len(closer)], ",")
    if len(items) < 2 or not all(items):
        return None
    return opener, closer, items


def _matrix(s: str) -> list[list[str]] | None:
    match = _MATRIX_RE.match(s)
    if not match:
        return None
    rows = [row for row in match.group(2).split("\\\\") if row.strip()]
    return [[cell.strip() for cell in row.split("&")] for row in rows]


def _sympy_equal(reference: str, answer: str) -> bool:
    """Symbolic difference simplifies to zero, or numeric values agree within tolerance."""
    import sympy
    from latex2sympy2_extended import latex2sympy

    ref_expr, ans_expr = latex2sympy(reference), latex2sympy(answer)
    if not isinstance(ref_expr, sympy.Expr) or not isinstance(ans_expr, sympy.Expr):
        return False
    if sympy.simplify(ref_expr - ans_expr) == 0:
        return True
    if ref_expr.free_symbols or ans_expr.free_symbols:
        return False
    ref_value, ans_value = complex(ref_expr.evalf(30)), complex(ans_expr.evalf(30))
    scale = max(abs(ref_value), abs(ans_value), 1e-6)
    return abs(ref_value - ans_value) <= RELATIVE_TOLERANCE * scale


def _math_verify_equal(reference: str, answer: str) -> bool:
    from math_verify import ExprExtractionConfig, LatexExtractionConfig, parse, verify

    config = [LatexExtractionConfig(), ExprExtractionConfig()]
    gold = parse(f"${reference}$", extraction_config=config, parsing_timeout=None)
    pred = parse(f"${answer}$", extraction_config=config, parsing_timeout=None)
    if not gold or not pred:
        return False
    return bool(verify(gold, pred, timeout_seconds=None))


def _scalar_equal(reference: str, answer: str) -> tuple[bool, str]:
    """Compare two single expressions: normalised strings, plain numbers, math-verify, sympy."""
    ref_norm, ans_norm = normalize_answer(reference), normalize_answer(answer)
    decided = _fast_path(ref_norm, ans_norm)
    if decided is not None:
        return decided
    if _math_verify_equal(reference, answer) or _math_verify_equal(ref_norm.text, ans_norm.text):
        return True, "math_verify"
    try:
        if _sympy_equal(ref_norm.text, ans_norm.text):
            return True, "sympy"
    except Exception:  # unparsable for sympy: simply not equal by this stage
        pass
    return False, "all_stages"


def _items_equal(reference: list[str], answer: list[str], ordered: bool) -> bool:
    if len(reference) != len(answer):
        return False
    if ordered:
        return all(_scalar_equal(r, a)[0] for r, a in zip(reference, answer, strict=True))
    unmatched = list(answer)
    for ref_item in reference:  # greedy matching is enough for distinct set elements
        hit = next((a for a in unmatched if _scalar_equal(ref_item, a)[0]), None)
        if hit is None:
            return False
        unmatched.remove(hit)
    return True


def grade_in_worker(reference: str, answer: str) -> tuple[bool, str]:
    """The full cascade; meant to run inside an :class:`IsolatedPool` worker.

    Returns ``(is_correct, stage)`` where ``stage`` names the deciding step.
    """
    logging.getLogger("math_verify").setLevel(logging.ERROR)  # it warns that timeouts are off
    ref_norm, ans_norm = normalize_answer(reference), normalize_answer(answer)
    ref_matrix, ans_matrix = _matrix(ref_norm.text), _matrix(ans_norm.text)
    if ref_matrix is not None and ans_matrix is not None:
        same_shape = [len(r) for r in ref_matrix] == [len(r) for r in ans_matrix]
        cells = zip(sum(ref_matrix, []), sum(ans_matrix, []), strict=True)
        return same_shape and all(_scalar_equal(r, a)[0] for r, a in cells), "matrix"
    ref_items, ans_items = _collection(ref_norm.text), _collection(ans_norm.text)
    if ref_items is not None and ans_items is not None:
        (ref_open, ref_close, refs), (ans_open, ans_close, answers) = ref_items, ans_items
        is_set = ref_open in ("\\{", "") and ans_open in ("\\{", "")
        if is_set:
            return _items_equal(refs, answers, ordered=False), "set"
        brackets_match = (ref_open, ref_close) == (ans_open, ans_close)
        return brackets_match and _items_equal(refs, answers, ordered=True), "tuple"
    return _scalar_equal(reference, answer)


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
        response: the full student response.
        timeout_s: hard limit for the worker cascade (default :data:`DEFAULT_TIMEOUT_S`).
        pool: worker pool to use (default: :func:`default_pool`).

    Returns:
        ``correct``/``incorrect`` with ``details`` ``{"extracted", "reference",
        "extraction", "stage"}``; ``incorrect`` with ``reason="no_answer"`` when
        nothing could be extracted; ``error`` with ``reason`` ``"timeout"``,
        ``"worker_crashed"``, ``"memory"`` or ``"grader_error"`` when grading failed, or
        ``"no_reference"`` when the problem has no answer.
    """
    try:
        return _verify(problem, response, timeout_s=timeout_s, pool=pool)
    except Exception as exc:  # a bug here must not end an episode
        logger.exception("math verifier crashed on problem %s", getattr(problem, "id", "?"))
        return Verdict.error(f"grader error: {type(exc).__name__}: {exc}", reason="grader_error")


def _verify(
    problem: Problem, response: str, *, timeout_s: float | None, pool: IsolatedPool | None
) -> Verdict:
    text = response if isinstance(response, str) else "" if response is None else str(response)
    if problem.answer is None or not str(problem.answer).strip():
        return Verdict.error("the problem has no reference answer", reason="no_reference")
    reference = _strip_wrapping(str(problem.answer))
    answer, method = extract_final_answer(text)
    if answer is None:
        return Verdict(
            status="incorrect",
            feedback="No final answer was found (expected \\boxed{...} or a 'Final Answer:' line).",
            details={"reason": "no_answer", "reference": reference},
        )
    details = {"extracted": _clip(answer), "reference": reference, "extraction": method}

    def decide(correct: bool, stage: str) -> Verdict:
        relation = "matches" if correct else "does not match"
        return Verdict(
            status="correct" if correct else "incorrect",
            score=1.0 if correct else 0.0,
            answer=answer,
            feedback=f"Extracted answer {_clip(answer)} {relation} the reference {reference}",
            details={**details, "stage": stage},
        )

    if len(answer) > MAX_ANSWER_CHARS:
        return decide(answer.strip() == reference.strip(), "too_long")
    decided = _fast_path(normalize_answer(reference), normalize_answer(answer))
    if decided is not None:
        return decide(*decided)

    timeout = DEFAULT_TIMEOUT_S if timeout_s is None else timeout_s
    try:
        correct, stage = (pool or default_pool()).call(
            grade_in_worker, reference, answer, timeout=timeout
        )
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
        status="error", answer=answer, feedback=message, details={**details, "reason": reason}
    )
