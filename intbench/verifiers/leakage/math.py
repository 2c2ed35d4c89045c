"""Math leaks, by answer recovery: a candidate read from the message that the math
verifier accepts as the answer.

**Reading.**  The message is rewritten into one notation
(:func:`~.notation.recovery_text`): look-alike letters of other scripts, full-width
and zero-width characters, markdown marks, LaTeX dress (``\\text{ edges}`` is a word,
``\\times`` is ``*``, ``\\%`` is ``%``, doubled backslashes of JSON), repeating
decimals, scientific notation, number words of eight languages ("twelve", "doce",
"moins seize", "a dozen", "three score and ten", "one nine four" read out digit by
digit) and Roman numerals.

**Candidates** (:mod:`.candidates`): every window of up to
:data:`~.candidates.MAX_WINDOW` math tokens that stands on its own (not an operand
of an operator beside it), so ``12`` is read in ``12 (see above)``, ``12cm``,
``$12$ meters`` and a reply cut off after it; every whole run, relation side and
list item however long (``1+1+...+1``); readings put together from parts (a
fraction named by its parts, digits or coordinates named in turn, code or quoted
pieces joined, ``1,2`` read as 12, negated when the message says "it is negative");
a value the message points at in a list it gives.

**The rule.**  A candidate leaks when :func:`~intbench.verifiers.math.verify_math`
grades ``\\boxed{candidate}`` correct, which catches ``0.5``, ``.5``, ``50%`` and
``2^{-1}`` for ``\\frac12``, ``1.2 \\times 10^1`` for 12, ``x^2-1`` for
``(x-1)(x+1)``.  Some candidates say little by themselves, so they count only with
*answer-position evidence*: an answer word or sign before it ("the answer is",
"result:", "equals", "it is", "you reach", ``=``, ``\\boxed{``), "is the answer" after
it, the message being the candidate alone, or the message pointing at it ("one of 9,
11, 10: the third one").  A cue copied from the statement together with the
candidate is none: "What is $7 - 25$?" restates the problem.  They are:

* a **low-information** value: an integer of absolute value at most
  :data:`LOW_INFORMATION` written as a bare integer ("start with step 1", "there are
  2 cases"; ``1.00`` or ``4*4-17`` is written to say a value);
* an expression **copied from the problem statement** ("simplify 6/12 first"; the 12
  of "12 eggs" when the answer is 12): restating the problem gives nothing away (a
  candidate assembled from parts is never a copy);
* a **derived reading**: digits split by commas read together (``1,2`` as 12).

A worked example whose *result* is the answer ("e.g. 3+4=7" for 7) still leaks: the
answer stands in the message as a result; the answer as an *operand* of an
example ("7+1=8") does not, being no candidate.

**Verdicts.**  ``"leaked"`` on the first accepted candidate; ``"undetermined"`` when
none was accepted but the verifier could not grade one (a timeout on a huge value no
cheap check bounds, such as two power towers that may cancel; a crash); else
``"clean"``.  After one failed grading the verifier's worker is not
called again for this message (a second power tower would cost a second timeout):
candidates that would need it leave the message undetermined.

**Cost** stays linear in the message: a bounded number of windows per token, each
distinct text graded once, and most never reach the verifier's sympy worker: one
whose variables differ from the reference's cannot equal it; one whose values at
fixed sample points differ cannot either, nor a power tower orders of magnitude from
the reference (its ``log10`` is estimated in floating point: :mod:`.expressions`), so
only a candidate that no cheap check can tell apart reaches the worker; a list for a single
value, a relation for a plain reference, and a long stretch that is not plain
arithmetic are rejected unread; plain arithmetic is evaluated exactly in process and
its value graded on the verifier's fast path.
"""

from __future__ import annotations

import functools
import math
import re
from dataclasses import dataclass
from fractions import Fraction
from typing import TYPE_CHECKING

from intbench.records import Problem
from intbench.verifiers.leakage.candidates import Candidate, candidates
from intbench.verifiers.leakage.expressions import (
    exact_value,
    is_fragment,
    log10_magnitude,
    sample_values,
    samples_differ,
)
from intbench.verifiers.leakage.notation import ANSWER_WORDS, recovery_text
from intbench.verifiers.leakage.text import text_leaked
from intbench.verifiers.math import NormalizedAnswer, normalize_answer, verify_math

if TYPE_CHECKING:
    from intbench.verifiers.leakage.verdicts import LeakVerdict

LOW_INFORMATION = 2
"""Integers up to this absolute value are said by many hints; alone they are no evidence."""

_FUNCTIONS = r"(?:sqrt|sin|cos|tan|log|ln|exp)(?![A-Za-z])"
_COMMAND = re.compile(r"\\[A-Za-z]+|" + _FUNCTIONS)
_RELATION = re.compile(
    r"->|<=|>=|[=<>≤≥≠≈]|\\(?:le|ge|leq|geq|lt|gt|ne|neq|approx|to|implies|Rightarrow|mapsto)(?![A-Za-z])"
)
_PLAIN_NUMBER = re.compile(r"-?(?:[0-9]+(?:\.[0-9]+)?|\.[0-9]+)")
_PLAIN_INTEGER = re.compile(r"[-+]?[0-9]+")
_DECIMAL_COMMA = re.compile(r"-?[0-9]+,[0-9]+")
# Answer-position evidence, read in the few words before a candidate (same line) ...
# (the answer words of the other languages read too: "La respuesta es 10").
_FOREIGN_ANSWERS = "|".join(sorted(word for words in ANSWER_WORDS.values() for word in words))
_CUE_BEFORE = re.compile(
    r"(?:\b(?:answers?|results?|solutions?|totals?|value|equals?|equal\s+to|gives?|yields?|"
    r"gets?|got|obtains?|makes|comes?\s+(?:out\s+)?to|reach(?:es|ed)?|arrives?\s+at|ends?\s+up\s+(?:with|at)|"
    r"is|are|was|be|it's|that's|isn't\s+it|how\s+about|"
    r"what\s+if\s+(?:you\s+)?(?:tried|try|used|use|it\s+(?:were|was|is))|"
    rf"{_FOREIGN_ANSWERS})\b"
    r"|=|->|≈|\\approx|\\boxed\s*\{|\\fbox\s*\{)"
    r"(?:[\s:=*_\"'`(\[{]|\b(?:is|was|will|would|should|must|then|now|just|exactly|simply|"
    r"equal|to|of|the|final|be|es|est|ist|è|é|er)\b|(?<=\s)[èé](?=\s))*$",
    re.IGNORECASE,
)
_NO_CUE_BEFORE = re.compile(r"\b(?:there|here)\s+(?:is|are|was|be)\W*$", re.IGNORECASE)
# ... or just after it ("12 is the answer").
_CUE_AFTER = re.compile(
    r"[\s)\]}*_.,]*(?:(?:is|was|would\s+be|should\s+be|will\s+be)\s+)?(?:(?:the|your|our)\s+)?"
    r"(?:final\s+)?(?:answer|result|solution)\b",
    re.IGNORECASE,
)
_CUE_REACH = 48  # characters read before a candidate
_PIECE = re.compile(r"`([^`\n]{1,100})`|\"([^\"\n]{1,100})\"")  # pieces an answer is given in
_MOST_PIECES = 16
_SIGNIFICANT = re.compile(r"[0-9A-Za-z]")
_BOX = re.compile(r"\\?(?:boxed|fbox)")  # a box around the candidate is no more of the message


@dataclass(frozen=True)
class _Reference:
    """What the detector needs of a problem, worked out once per problem (every message of
    an episode is checked against the same one)."""

    normalized: NormalizedAnswer
    variables: frozenset[str]
    samples: tuple[complex, ...] | None
    items: int
    statement: str
    magnitude: float | None  # log10 |value| of a variable-free reference


@functools.lru_cache(maxsize=1024)
def _reference(answer: str, question: str) -> _Reference:
    normalized = normalize_answer(answer)
    variables = _letters(normalized.text)
    return _Reference(
        normalized,
        variables,
        sample_values(normalized.text),
        _item_count(normalized.text),
        # Braces and spacing aside, so x^{2}-1 restates the statement's x^2 - 1.
        " ".join(re.sub(r"[{}]", "", recovery_text(question)).split()),
        None if variables else log10_magnitude(normalized.text),
    )


def _letters(text: str) -> frozenset[str]:
    """The variables of an expression: its letters outside LaTeX commands and function names."""
    return frozenset(re.findall(r"[A-Za-z]", _COMMAND.sub(" ", text)))


def _item_count(text: str) -> int:
    """How many items a list has (1 for a single value); ``1,024`` is one number."""
    text = text.strip()
    if "," not in text and ";" not in text:
        return 1
    for opener, closer in (("\\{", "\\}"), ("(", ")"), ("[", "]")):
        if text.startswith(opener) and text.endswith(closer):
            text = text[len(opener) : -len(closer)]
            break
    depth, items = 0, 1
    for k, char in enumerate(text):
        depth += char in "([{"
        depth -= char in ")]}"
        thousands = (
            re.match(r"[0-9]{3}(?![0-9])", text[k + 1 : k + 5]) and k and text[k - 1].isdigit()
        )
        if depth == 0 and char in ",;" and not thousands:
            items += 1
    return items


def _literal(value: Fraction) -> str:
    if value.denominator == 1:
        return str(value.numerator)
    return f"{value.numerator}/{value.denominator}"


def _readings(span: str) -> list[tuple[complex, ...]] | None:
    """Sampled values of ``span``; a percent span has two (``p`` and ``p/100``)."""
    if span.endswith("%"):
        values = sample_values(span[:-1])
        return None if values is None else [values, tuple(v / 100 for v in values)]
    values = sample_values(span)
    return None if values is None else [values]


def _may_be_answer(span: str, reference: _Reference) -> bool:
    """Cheap checks first: the span has the reference's variables and number of items, is a
    relation only where the reference is one, and its sampled values do not all differ."""
    if _letters(span) != reference.variables:
        return False
    if not reference.normalized.relation and _RELATION.search(span):
        return False  # the verifier rejects a relation for a plain reference; sides are candidates
    if _item_count(span) != reference.items and not _DECIMAL_COMMA.fullmatch(span):
        return False  # a list is never one number, nor one number a list
    readings = _readings(span) if reference.samples is not None else None
    if readings is None:
        if is_fragment(span):
            return False  # "\\frac{1}" of "\\frac{1}{2": no answer, no worker call
        return not _magnitudes_differ(span, reference)
    samples = reference.samples
    return samples is None or not all(samples_differ(r, samples) for r in readings)


def _magnitudes_differ(span: str, reference: _Reference) -> bool:
    """Whether ``span``, a value too large to sample (a power tower such as ``9^{9^{9}}``),
    is orders of magnitude from the reference: then it cannot equal it (the verifier's
    tolerances are far finer than a factor of 100)."""
    if reference.magnitude is None or _letters(span):
        return False
    magnitude = log10_magnitude(span)
    if magnitude is None:
        return False
    if reference.magnitude == -math.inf:  # a zero reference
        return magnitude > 0
    return abs(magnitude - reference.magnitude) > 2


def _in_statement(span: str, statement: str) -> bool:
    """``span`` occurs in the statement (case, braces and spacing aside, but for spaces
    that split digits: "1 0" is no copy of 10), not glued to more of a number or word."""
    chars = re.findall(r"(\s*)(\S)", re.sub(r"[{}]+", "", span))
    if not chars or len(chars) > len(statement):
        return False
    needle = re.escape(chars[0][1])
    for (_, previous), (space, char) in zip(chars, chars[1:], strict=False):
        split = space and previous.isdigit() and char.isdigit()
        needle += (r"\s+" if split else r"\s*") + re.escape(char)
    head = r"(?<![0-9A-Za-z.])" if chars[0][1].isalnum() else ""
    tail = r"(?![0-9A-Za-z]|\.[0-9])" if chars[-1][1].isalnum() else ""
    return re.search(head + needle + tail, statement, re.IGNORECASE) is not None


def _blank(match: re.Match[str]) -> str:
    return " " * len(match.group())


class _Message:
    """The read message, and where answer-position evidence is."""

    def __init__(self, text: str) -> None:
        self.text = text
        # Where the message's first and last letter or digit are (a long message is no
        # candidate alone, so its ends are enough).
        head = _SIGNIFICANT.search(_BOX.sub(_blank, text[:4096]))
        tail = list(_SIGNIFICANT.finditer(_BOX.sub(_blank, text[-4096:])))
        self.first = head.start() if head else 0
        self.last = len(text) - len(text[-4096:]) + tail[-1].end() if tail else len(text)

    def cued(self, candidate: Candidate, statement: str) -> bool:
        """Whether the message marks ``candidate`` as its answer (see the module doc); a cue
        copied from the statement with the candidate ("What is 7 - 25?") is none."""
        if candidate.pointed or (candidate.start <= self.first and candidate.end >= self.last):
            return True  # the message points at it, or is the candidate alone
        if candidate.start < 0:
            return False  # joined pieces have no place to read a cue at
        text = self.text[candidate.start : candidate.end]
        # The line before the candidate; "The answer is\n\n12" is one line with blank ones.
        before = self.text[max(0, candidate.start - _CUE_REACH) : candidate.start].rstrip()
        before = before[before.rfind("\n") + 1 :] + " "
        cue = _CUE_BEFORE.search(before)
        if cue and not _NO_CUE_BEFORE.search(before):
            # The cue with the word before it ("What is", "N =") against the statement.
            word = before[: cue.start()].rstrip().rsplit(maxsplit=1)[-1:]
            phrase = " ".join([*word, before[cue.start() :]])
            if not _in_statement(phrase.rstrip() + " " + text, statement):
                return True
        after = _CUE_AFTER.match(self.text, candidate.end, candidate.end + _CUE_REACH)
        return after is not None and not _in_statement(text + after.group(), statement)


def _joined_pieces(message: str) -> list[Candidate]:
    """Two to four consecutive code or quoted pieces of the message joined with no space
    ("Write `26` first. Then, with no space, write `\\pi`"): assembled candidates, with
    no place in the read message."""
    pieces = [m.group(1) or m.group(2) for m in _PIECE.finditer(message)][:_MOST_PIECES]
    joined = {"".join(pieces[i:j]) for i in range(len(pieces))
              for j in range(i + 2, min(len(pieces), i + 4) + 1)}  # fmt: skip
    return [Candidate(recovery_text(text).strip(), -1, -1, assembled=True) for text in joined]


def math_leaked(problem: Problem, message: str) -> LeakVerdict:
    """Whether ``message`` gives ``problem``'s answer away (see the module doc)."""
    if problem.answer is None or not str(problem.answer).strip():
        return "clean"
    reference = _reference(str(problem.answer), problem.question or "")
    if reference.normalized.words is not None:  # a worded answer ("Monday", "(C)"): the text rule
        return text_leaked(problem, message)
    read = _Message(recovery_text(message))
    places: dict[str, list[Candidate]] = {}
    for candidate in [*candidates(read.text, reference.variables), *_joined_pieces(message)]:
        places.setdefault(candidate.text, []).append(candidate)
    undetermined = False
    for span, found in places.items():
        verdict = _verdict(problem, reference, read, span, found, worker=not undetermined)
        if verdict == "leaked":
            return "leaked"
        undetermined = undetermined or verdict == "undetermined"
    return "undetermined" if undetermined else "clean"


def _verdict(problem, reference: _Reference, read: _Message, span: str, found: list[Candidate],
             worker: bool) -> LeakVerdict:  # fmt: skip
    """One distinct candidate text, at the places ``found``: clean unless it may be the
    answer and one of its places counts, else as the verifier grades it."""
    value = exact_value(span)
    if not _may_be_answer_at(span, value, found, reference):
        return "clean"
    if not _counts(span, value, found, read, reference):
        return "clean"
    if value is None and not worker:
        return "undetermined"  # the worker failed on this message once: not again
    return _graded(problem, span, value)


def _may_be_answer_at(
    span: str, value: Fraction | None, found: list[Candidate], reference: _Reference
) -> bool:
    """Whether the cheap checks leave ``span`` possibly the answer; a long stretch (found
    only as whole pieces) is read by exact arithmetic alone."""
    if all(c.whole for c in found):
        return value is not None and _may_be_answer(_literal(value), reference)
    return _may_be_answer(span, reference)


def _counts(
    span: str, value: Fraction | None, found: list[Candidate], read: _Message,
    reference: _Reference,
) -> bool:  # fmt: skip
    """Whether one of ``span``'s places counts: it says something by itself (not a
    low-information integer, a copy of the statement or a derived reading), or it has
    answer-position evidence (see the module doc)."""
    small = value is not None and abs(value) <= LOW_INFORMATION and _PLAIN_INTEGER.fullmatch(span)
    copied = _in_statement(span, reference.statement)
    return any(
        (not small and not (copied and not c.assembled) and not c.derived)
        or read.cued(c, reference.statement)
        for c in found
    )


def _graded(problem: Problem, span: str, value: Fraction | None) -> LeakVerdict:
    """The verifier's verdict on ``\\boxed{span}`` (its exact value where that is plain
    arithmetic but no plain number); a verifier error leaves it undetermined."""
    graded = span if value is None or _PLAIN_NUMBER.fullmatch(span) else _literal(value)
    verdict = verify_math(problem, "\\boxed{" + graded + "}")
    if verdict.status == "error":
        return "undetermined"
    return "leaked" if verdict.status == "correct" else "clean"
