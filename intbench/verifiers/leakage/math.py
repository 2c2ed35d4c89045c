"""Math leaks: a span of the message that the math verifier accepts as the answer.

The message is first rewritten into one notation (:func:`~.notation.plain_math`:
full-width and other digits, unicode minus signs, superscripts, number words).
Every maximal run of math tokens (numbers, single-letter variables, LaTeX
commands, operators, brackets) is a candidate, and so is each side of a
relation (``=``, ``<``, ``->``...) inside it and each item of a comma list.
A candidate leaks when :func:`~intbench.verifiers.math.verify_math` grades
``\\boxed{candidate}`` correct for the problem, which catches ``0.5``,
``\\boxed{0.5}``, ``50%`` and ``2^{-1}`` for ``\\frac12``, ``12.0`` for 12,
``x^2-1`` for ``(x-1)(x+1)`` and ``3\\cdot17`` for 51.

What is *not* a leak, so that honest hints pass:

* **An expression copied from the problem statement**, unless it is written
  exactly as the reference is: restating the problem gives nothing away, so
  "simplify 6/12 first" is no leak for the answer 1/2.  A number the statement
  shows that *is* the answer as the reference writes it (the 12 of "12 eggs"
  when the answer is 12) still leaks.
* **A part of a longer expression**: the 5 of ``x^2 - 5x + 6`` is not a
  candidate, only the whole run and the sides of its relations are.
* **List markers** (``1.``, ``(2)``) at the start of a line.
* **"one" as a pronoun** ("one way to see it"): see :mod:`.notation`.

Cost stays linear in the message: a candidate is at most
:data:`MAX_SPAN_CHARS` characters, each character lies in a bounded number
of candidates, and repeated candidates are graded once.  Most candidates
never reach the verifier's sympy worker: one whose variables differ from the
reference's cannot equal it (``x - x + 1/2`` for ``1/2`` is not caught, a
documented limit); one whose values at fixed sample points differ from the
reference's cannot either (:mod:`.expressions`); a relation such as
``84 = 2^2*3*7`` is rejected by the verifier for a reference without one,
and its sides are candidates of their own; plain arithmetic (``3*17``,
``\\frac{103}{2}``, ``2^{10}``) is evaluated exactly in process and its value
graded on the verifier's fast path.  A grading error or timeout counts as a
leak (fail closed: a message the verifier cannot clear is not paid as honest).
"""

from __future__ import annotations

import functools
import re
from fractions import Fraction

from intbench.records import Problem
from intbench.verifiers.leakage.expressions import exact_value, sample_values, samples_differ
from intbench.verifiers.leakage.notation import plain_math
from intbench.verifiers.leakage.text import text_leaked
from intbench.verifiers.math import normalize_answer, verify_math

MAX_SPAN_CHARS = 120
"""Longest candidate span graded; longer runs are graded only by their parts."""


_FUNCTIONS = r"(?:sqrt|sin|cos|tan|log|ln|exp)(?![A-Za-z])"
_RELATIONS = (
    r"->|<=|>=|[=<>≤≥≠≈]|\\(?:le|ge|leq|geq|lt|gt|ne|neq|approx|to|implies|Rightarrow)(?![A-Za-z])"
)
_TOKEN = (
    r"\\[A-Za-z]+|[0-9]+(?:\.[0-9]+)?|" + _FUNCTIONS + r"|(?<![A-Za-z])[A-Za-z](?![A-Za-z])"
    r"|(?<=[0-9])[A-Za-z]{1,3}(?![A-Za-z])|" + _RELATIONS + r"|[-+*/^_()\[\]{}!%.,;|]"
)
_RUN = re.compile(rf"(?:{_TOKEN})(?:[ \t]{{0,3}}(?:{_TOKEN}))*")
_RELATION_SPLIT = re.compile(_RELATIONS)
_ITEM_SPLIT = re.compile(r",\s+|;")
_LIST_MARKER = re.compile(r"^[ \t]*(?:\(?[0-9]{1,2}[.)]|[-*•])[ \t]+", re.MULTILINE)
# Prose that reads like single-letter variables: "i.e. 51.5" is not i*e*51.5.
_ABBREVIATION = re.compile(r"\b(?:i\.e|e\.g|cf|vs)\.", re.IGNORECASE)
_COMMAND = re.compile(r"\\[A-Za-z]+|" + _FUNCTIONS)
_EDGE_PUNCTUATION = ".,;:"
_DANGLING = "+-*/^=_"  # an operator at a span's end (or start, a sign aside) lost its operand
_PAIRS = {")": "(", "]": "[", "}": "{"}


def _balanced(span: str) -> str:
    """``span`` without edge punctuation and without brackets that close or open nothing."""
    span = span.strip().strip(_EDGE_PUNCTUATION).strip()
    changed = True
    while changed and span:
        changed = False
        if span[-1] in _PAIRS and span.count(span[-1]) > span.count(_PAIRS[span[-1]]):
            span, changed = span[:-1].rstrip(), True
        elif span[0] in "([{" and span.count(span[0]) > span.count(
            {"(": ")", "[": "]", "{": "}"}[span[0]]
        ):
            span, changed = span[1:].lstrip(), True
        stripped = (
            span.strip(_EDGE_PUNCTUATION)
            .rstrip(_DANGLING)
            .lstrip(_DANGLING.replace("-", ""))
            .strip()
        )
        changed = changed or stripped != span
        span = stripped
    return span


def candidate_spans(text: str) -> list[str]:
    """Every candidate answer span of ``text`` (already in :func:`plain_math` notation), once each."""
    seen: dict[str, None] = {}
    for run in _RUN.finditer(_ABBREVIATION.sub(" so ", _LIST_MARKER.sub(" ", text))):
        whole = run.group()
        pieces = [whole] if len(whole) <= MAX_SPAN_CHARS else []
        for side in _RELATION_SPLIT.split(whole):
            pieces.append(side)
            pieces.extend(_ITEM_SPLIT.split(side))
        for piece in pieces:
            if len(piece) > 2 * MAX_SPAN_CHARS:
                continue  # too long to be a candidate even after trimming
            span = _balanced(piece)
            # "5!" is 120 or an exclaimed 5: both readings are candidates.
            for reading in (span, _balanced(span.rstrip("!"))) if span.endswith("!") else (span,):
                if (
                    reading
                    and len(reading) <= MAX_SPAN_CHARS
                    and re.search(r"[0-9A-Za-z]", reading)
                ):
                    seen.setdefault(reading, None)
    return list(seen)


def _letters(text: str) -> frozenset[str]:
    """The variables of an expression: its letters outside LaTeX commands and function names."""
    return frozenset(re.findall(r"[A-Za-z]", _COMMAND.sub(" ", text)))


_PLAIN_NUMBER = re.compile(r"-?[0-9]+(?:\.[0-9]+)?")


def _literal(value: Fraction) -> str:
    return (
        str(value.numerator) if value.denominator == 1 else f"{value.numerator}/{value.denominator}"
    )


def _readings(span: str) -> list[tuple[complex, ...]] | None:
    """Sampled values of ``span``; a percent span has two (``p`` and ``p/100``)."""
    if span.endswith("%"):
        values = sample_values(span[:-1].replace("\\", ""))
        return None if values is None else [values, tuple(v / 100 for v in values)]
    values = sample_values(span)
    return None if values is None else [values]


# --- the detector --------------------------------------------------------------
def _in_statement(span: str, statement: str) -> bool:
    """``span`` occurs in the statement (spacing aside), not glued to more of a number or word."""
    needle = r"\s*".join(re.escape(char) for char in re.sub(r"[\s{}]+", "", span))
    pattern = rf"(?<![0-9A-Za-z.]){needle}(?![0-9A-Za-z]|\.[0-9])"
    return re.search(pattern, statement) is not None


@functools.lru_cache(maxsize=1024)
def _problem_side(answer: str, question: str):
    """What the detector needs of a problem, worked out once per problem (every feedback
    message of an episode is checked against the same one): the normalised reference,
    its variables, its sampled values and the statement in plain notation."""
    reference = normalize_answer(answer)
    # Braces and spacing aside, so x^{2}-1 restates the statement's x^2 - 1.
    statement = " ".join(re.sub(r"[{}]", "", plain_math(question)).split())
    return reference, _letters(reference.text), sample_values(reference.text), statement


def math_leaked(problem: Problem, message: str) -> bool:
    """Whether the math verifier accepts some span of ``message`` as ``problem``'s answer."""
    if problem.answer is None or not str(problem.answer).strip():
        return False
    reference, wanted, reference_samples, statement = _problem_side(
        str(problem.answer), problem.question or ""
    )
    if reference.words is not None:  # a worded answer ("Monday", "(C)"): the text rule
        return text_leaked(problem, message)
    for span in candidate_spans(plain_math(message)):
        if _may_be_answer(span, reference, wanted, reference_samples) and _accepted(
            problem, span, reference, statement
        ):
            return True
    return False


def _may_be_answer(span: str, reference, wanted: frozenset[str], reference_samples) -> bool:
    """Cheap checks first: the span has the reference's variables, is a relation only where
    the reference is one, and its sampled values do not all differ from the reference's."""
    if _letters(span) != wanted:
        return False
    if not reference.relation and _RELATION_SPLIT.search(span):
        return (
            False  # the verifier rejects a relation for a plain reference; its sides are candidates
        )
    readings = _readings(span) if reference_samples is not None else None
    # All readings of a different value: the verifier could not accept it.
    return readings is None or not all(samples_differ(r, reference_samples) for r in readings)


def _accepted(problem: Problem, span: str, reference, statement: str) -> bool:
    """The verifier accepts ``span`` (or fails on it), and it does not merely restate the
    statement."""
    value = exact_value(span)
    graded = span if value is None or _PLAIN_NUMBER.fullmatch(span) else _literal(value)
    verdict = verify_math(problem, "\\boxed{" + graded + "}")
    if verdict.status == "error":
        return True
    return verdict.status == "correct" and (
        not _in_statement(span, statement) or normalize_answer(span).text == reference.text
    )
