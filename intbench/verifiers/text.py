"""Short-answer text matching (BBEH Linguini) and the normalisation helpers.

The rules follow the BBEH evaluation used by the feedback paper ("What Drives
Interactive Improvement from Feedback?"): answers are lower-cased, simple LaTeX
wrappers and answer prefixes are removed, and a few fuzzy equivalences are
allowed (``(a)`` vs ``a``, ``3.0`` vs ``3``, quotes, enclosing brackets,
trailing ``?``/``.``).  The helpers are public so that other code (e.g. leakage
checks) compares answers exactly the way the verifier does.

Several answers: every ``\\boxed{}`` and every ``Answer:`` line of a response
is a marked answer, and the last one is graded.  When a response marks more
than one answer, they must all agree with it (the math verifier's multi-box
rule), so listing candidates never earns credit.

Only :func:`~intbench.verifiers.bounds.graded_part` of a response (its last
64 KB) is read, and every parse of it takes linear time.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from decimal import Decimal, InvalidOperation

from intbench.records import Problem, Verdict
from intbench.verifiers.bounds import graded_part
from intbench.verifiers.boxes import operand_form

MAX_ANSWER_CHARS = 1000
"""Longest final answer that is graded; short-answer references are far shorter."""
MAX_PEEL_ROUNDS = 16
"""Most rounds of wrapper/prefix peeling (bounds the work on hostile inputs)."""
MAX_NUMBER_EXPONENT = 100
"""Numbers with a larger decimal exponent are compared as written, not expanded."""

# Unwrapped repeatedly so that nested forms like ``$\boxed{\text{x}}$`` collapse.
_LATEX_COMMANDS = ("boxed", "text", "texttt", "textbf", "textit", "mathrm", "mathbf", "fbox")
_LATEX_WRAPPER = re.compile(r"^\\(?:" + "|".join(_LATEX_COMMANDS) + r")\s*\{(.*)\}$", re.DOTALL)
# Inner wrappers without nested braces, e.g. the "\text{a}" in "\text{a}, b".
_INNER_TEXT_WRAPPER = re.compile(r"\\(?:" + "|".join(_LATEX_COMMANDS) + r")\s*\{([^{}]*)\}")

_BOXED = re.compile(r"\\boxed\s*\{")
_MATH_DELIMITED = re.compile(r"\$+([^$]*)\$+")
# An answer prefix counts only at the start, after at most a connective
# ("So the answer is 3"): inside the text it may introduce a hedge ("b, unless
# the answer is a").
_ANSWER_PREFIX = re.compile(
    r"\s*(?:(?:so|thus|therefore|hence|finally|overall|in conclusion|in summary)[\s,]*)?"
    r"(?:the\s+)?(?:final\s+)?answer(?:\s+is\b\s*:?|\s*:)",
    re.IGNORECASE,
)
_ANSWER_LINE = re.compile(r"^[\s*_#>-]*(?:final\s+)?answer[\s*_]*:(.*)$", re.IGNORECASE)
_QUOTES = "\"'`\u2018\u2019\u201c\u201d"
_CHOICE = re.compile(r"^\(([a-z0-9])\)$")
# ASCII digits only: float() would also read other scripts' digits.
_NUMBER = re.compile(r"^[-+]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:e[-+]?[0-9]+)?$")


def find_last_boxed(text: str) -> tuple[int, str] | None:
    """Return ``(start, content)`` of the last ``\\boxed{...}`` with balanced braces."""
    boxes = _boxed_answers(text)
    return boxes[-1] if boxes else None


def _boxed_answers(text: str) -> list[tuple[int, str]]:
    """``(start, content)`` of every ``\\boxed{...}`` with balanced braces, in order.

    A box that is one operand of an expression (``-\\boxed{3}``, ``\\boxed{3}^2``)
    gives that expression, not its content (see :mod:`intbench.verifiers.boxes`).
    """
    closing = _matching_braces(text)
    boxes = []
    for match in _BOXED.finditer(text):
        end = closing.get(match.end() - 1)
        if end is not None:
            operand = operand_form(text, match.start(), end, in_group=False)
            boxes.append((match.start(), operand or text[match.end() : end]))
    return boxes


def _matching_braces(text: str) -> dict[int, int]:
    """Map each balanced ``{`` position to its ``}`` in one pass (linear time)."""
    pairs: dict[int, int] = {}
    open_positions: list[int] = []
    for position, char in enumerate(text):
        if char == "{":
            open_positions.append(position)
        elif char == "}" and open_positions:
            pairs[open_positions.pop()] = position
    return pairs


def _braced_content(text: str, pos: int) -> str | None:
    """Content of the ``{...}`` group opening at ``pos``, or None if unbalanced."""
    depth = 0
    for i in range(pos, len(text)):
        if text[i] == "{":
            depth += 1
        elif text[i] == "}":
            depth -= 1
            if depth == 0:
                return text[pos + 1 : i]
    return None


def _until_stable(step: Callable[[str], str], text: str) -> str:
    """Apply ``step`` until the text stops changing, at most :data:`MAX_PEEL_ROUNDS` times.

    The bound keeps absurd inputs (thousands of nested wrappers) linear; real
    answers never nest that deep.
    """
    for _ in range(MAX_PEEL_ROUNDS):
        new = step(text)
        if new == text:
            break
        text = new
    return text


def _answer_lines(text: str) -> list[tuple[int, str]]:
    """Offset and answer of every ``Answer:``/``Final answer:`` line, in order.

    When the label stands alone on its line, the answer is the next non-empty
    line (unless that line is a label itself).  The offset is the label's.
    """
    found = []
    waiting: int | None = None  # offset of a label still waiting for its answer
    offset = 0
    for line in text.splitlines(keepends=True):
        match = _ANSWER_LINE.match(line.rstrip("\r\n"))
        if match:
            rest = match.group(1).strip()
            waiting = None if rest else offset
            if rest:
                found.append((offset, rest))
        elif waiting is not None and line.strip():
            found.append((waiting, line.strip()))
            waiting = None
        offset += len(line)
    return found


def final_answer_candidates(response: str) -> list[str]:
    """Every marked answer of a response: boxed contents and ``Answer:`` lines, in order.

    A box on the same line as a label comes after it.  Only the graded part
    of the response is read.
    """
    text = graded_part(response)
    marked = sorted(_answer_lines(text) + _boxed_answers(text), key=lambda item: item[0])
    return [answer for _, answer in marked]


def extract_final_answer(response: str) -> str | None:
    """Pull the final answer out of a free-form response.

    The last marked answer (see :func:`final_answer_candidates`), otherwise
    the last non-empty line.  Returns ``None`` when the response has no
    non-empty line.  Only the graded part of the response is read.
    """
    candidates = final_answer_candidates(response)
    if candidates:
        return candidates[-1]
    lines = [line.strip() for line in graded_part(response).splitlines()]
    return next((line for line in reversed(lines) if line), None)


def conflicting_answer(
    response: str, final: str, canonical: Callable[[str], str] | None = None
) -> str | None:
    """A marked answer of ``response`` that disagrees with ``final``, or None.

    Two answers agree when their ``canonical`` forms (default
    :func:`canonical_answer`) are equal; marks that normalise to nothing (an
    empty box) are ignored, and an overlong mark never agrees.
    """
    canonical = canonical or canonical_answer
    wanted = canonical(final)
    for candidate in final_answer_candidates(response):
        if len(candidate) > MAX_ANSWER_CHARS:
            return candidate
        form = canonical(candidate)
        if form and form != wanted:
            return candidate
    return None


def strip_latex(text: str) -> str:
    """Remove enclosing ``$...$`` and simple wrappers like ``\\boxed{}``/``\\text{}``."""
    return _INNER_TEXT_WRAPPER.sub(lambda m: m.group(1), _until_stable(_unwrap_once, text))


def _unwrap_once(text: str) -> str:
    text = text.strip()
    math = _MATH_DELIMITED.fullmatch(text)
    if math:
        text = math.group(1).strip()
    match = _LATEX_WRAPPER.match(text)
    if match and _braced_content(text, text.index("{")) == match.group(1):
        text = match.group(1)
    return text


def strip_answer_prefix(text: str) -> str:
    """Drop a leading answer prefix ("the answer is", "Final answer:", "So the answer is").

    A prefix later in the text is kept: it belongs to the answer's own words.
    """
    match = _ANSWER_PREFIX.match(text)
    return text[match.end() :].strip() if match else text


def normalize_answer(text: str) -> str:
    """Normalise an answer for comparison (lower-case, no LaTeX/prefix/markdown).

    Line breaks count as spaces, so a multi-line answer is one longer answer
    (never its first line alone).  Multi-item answers keep their order;
    ``", "`` becomes ``","`` so spacing after commas does not matter.
    """
    # Wrappers, prefixes and final periods can nest in any order
    # ("The answer is $\boxed{3}$."), so peel them until nothing changes.
    text = _until_stable(
        lambda t: strip_answer_prefix(strip_latex(t.strip().rstrip("."))), text.replace("**", "")
    )
    text = re.sub(r"\s+", " ", text.lower()).strip()
    text = re.sub(r"\s*,\s*", ",", text)
    return text.rstrip(".").strip()


def normalize_free_text(text: str) -> str:
    """Normalise a whole message, every line, for containment checks (e.g. leakage).

    Applies the answer rules that make sense inside running text: lower-case,
    inner LaTeX wrappers and ``$`` removed, markdown bold, quotes and
    apostrophes dropped, whitespace collapsed and ``", "`` written ``","``.
    Unlike :func:`normalize_answer` it keeps all lines and strips no prefix,
    so ``canonical_answer(answer) in normalize_free_text(message)`` is a fair test.
    """
    text = _INNER_TEXT_WRAPPER.sub(lambda m: m.group(1), text.replace("**", ""))
    text = text.replace("$", " ").lower().replace("'", "").replace("\u2019", "")
    text = re.sub("[" + _QUOTES + "]", " ", text)
    text = re.sub(r"\s+", " ", text).strip()
    return re.sub(r"\s*,\s*", ",", text)


def canonical_answer(text: str) -> str:
    """Apply :func:`normalize_answer` and the fuzzy rules, giving one comparable form.

    Two answers match when their canonical forms are equal.  The fuzzy rules:
    apostrophes and enclosing quotes are dropped (the BBEH scorer ignores
    apostrophes), one pair of enclosing brackets is removed, trailing ``?``
    and ``.`` go, a parenthesised single choice ``(a)`` becomes ``a`` and a
    plain number is written in one canonical way (``3.0`` -> ``3``).
    """
    text = _until_stable(_drop_quotes_and_brackets, normalize_answer(text))
    choice = _CHOICE.match(text)
    if choice:
        return choice.group(1)
    if _NUMBER.match(text):
        return _canonical_number(text)
    return text


def _drop_quotes_and_brackets(text: str) -> str:
    text = text.strip().strip(_QUOTES).strip()
    text = text.replace("'", "").replace("\u2019", "")
    if len(text) >= 2 and text[0] == "[" and text[-1] == "]":
        text = text[1:-1]
    return text.rstrip("?.").strip()


def _canonical_number(text: str) -> str:
    """``"3.0"`` -> ``"3"``, ``"0.50"`` -> ``"0.5"``, ``"1e3"`` -> ``"1000"``, exactly.

    Decimal arithmetic keeps every digit, so distinct numbers never compare
    equal (floats would merge 12345678901234567 and 12345678901234568).
    Numbers past :data:`MAX_NUMBER_EXPONENT` are kept as written.
    """
    try:
        value = Decimal(text)
    except InvalidOperation:
        return text
    if not value.is_finite() or abs(value.adjusted()) > MAX_NUMBER_EXPONENT:
        return text
    fixed = format(value, "f")
    if "." in fixed:
        fixed = fixed.rstrip("0").rstrip(".")
    return "0" if fixed in ("-0", "") else fixed


def answers_match(predicted: str, reference: str) -> bool:
    """True when two answers are equal after normalisation and the fuzzy rules."""
    candidate = canonical_answer(predicted)
    return bool(candidate) and candidate == canonical_answer(reference)


def reference_answers(problem: Problem) -> list[str]:
    """The problem's reference answer followed by its aliases (``fields["aliases"]``).

    A single alias string is accepted; non-string entries are converted with ``str``.
    """
    references: list[str] = []
    if problem.answer is not None:
        references.append(str(problem.answer))
    aliases = problem.fields.get("aliases") if isinstance(problem.fields, dict) else None
    if isinstance(aliases, str):
        aliases = [aliases]
    if isinstance(aliases, Iterable):
        references.extend(str(alias) for alias in aliases if alias is not None)
    return [ref for ref in references if ref.strip()]


def unusable_answer_verdict(extracted: str | None) -> Verdict | None:
    """An ``incorrect`` verdict when the extracted answer cannot be graded, else None.

    That is the case when there is none, or when it is longer than
    :data:`MAX_ANSWER_CHARS` (short-answer tasks; also bounds the work done on
    hostile inputs).
    """
    if extracted is None or not extracted.strip():
        return no_answer_verdict()
    if len(extracted) > MAX_ANSWER_CHARS:
        feedback = (
            f"The final answer is {len(extracted)} characters long; "
            f"give a short answer (at most {MAX_ANSWER_CHARS} characters)."
        )
        return Verdict(status="incorrect", feedback=feedback, details={"reason": "answer_too_long"})
    return None


def no_answer_verdict() -> Verdict:
    """``incorrect``: the response has no final answer to grade."""
    feedback = "No final answer was found in the response."
    return Verdict(status="incorrect", feedback=feedback, details={"reason": "no_answer"})


def conflicting_answers_verdict(extracted: str, details: dict) -> Verdict:
    """The ``incorrect`` verdict for a response that marks disagreeing answers."""
    return Verdict(
        status="incorrect",
        answer=extracted,
        feedback="The response gives more than one different answer; give a single answer.",
        details={**details, "reason": "conflicting_answers"},
    )


def verify_text(problem: Problem, response: str) -> Verdict:
    """Verify a short text answer (BBEH Linguini) by normalised fuzzy matching.

    Reads the graded part (last 64 KB) of the response.  Incorrect when no
    usable answer can be extracted or when the response marks answers that
    disagree (``reason="conflicting_answers"``); ``error`` when the problem
    has no reference answer.  The feedback never reveals the reference.
    """
    references = reference_answers(problem)
    if not references:
        return Verdict.error("problem has no reference answer", reason="no_reference")
    extracted = extract_final_answer(response or "") or ""
    unusable = unusable_answer_verdict(extracted)
    if unusable is not None:
        return unusable
    normalized = canonical_answer(extracted)
    if not normalized:
        return no_answer_verdict()
    details = {"extracted": extracted, "normalized": normalized}
    if conflicting_answer(response or "", extracted) is not None:
        return conflicting_answers_verdict(extracted, details)
    for reference in references:
        if normalized == canonical_answer(reference):
            return Verdict(
                status="correct",
                score=1.0,
                answer=extracted,
                feedback="Correct.",
                details={**details, "reason": "match", "matched_reference": reference},
            )
    return Verdict(
        status="incorrect",
        answer=extracted,
        feedback=f"The answer {extracted!r} is not correct.",
        details={**details, "reason": "mismatch"},
    )


__all__ = [
    "answers_match",
    "canonical_answer",
    "conflicting_answer",
    "conflicting_answers_verdict",
    "extract_final_answer",
    "final_answer_candidates",
    "find_last_boxed",
    "no_answer_verdict",
    "normalize_answer",
    "normalize_free_text",
    "reference_answers",
    "strip_answer_prefix",
    "strip_latex",
    "unusable_answer_verdict",
    "verify_text",
]
