"""Which of a code problem's tests the teacher may see, and which stay held out.

Grading always runs every test (:func:`intbench.verifiers.code.verify_code`).
What the feedback teacher's execution context may show is only the *visible*
tests: a teacher that forwards the failing graded test to the student, and a
student that hard-codes the shown input and output, would otherwise pass every
test without solving anything.  The split, for every code domain:

- the problem's examples, when its loader marks which graded cases they are
  (``tests["examples"]``: case indices; the student already sees them in the
  statement);
- otherwise a deterministic split by a hash of the problem id and the case
  index: a third of the cases (at least one) are visible and the rest held
  out; a problem with a single test keeps it held out, so no graded I/O is
  ever shown for it.

:func:`forwards_held_out_io` tells whether a message passes a held-out test's
input and expected output on (the code leak check).
"""

from __future__ import annotations

import ast
import hashlib
import re
from collections.abc import Mapping, Sequence
from decimal import Decimal, InvalidOperation
from typing import TypeGuard

from intbench.records import Problem

VISIBLE_SHARE = 3  # one case in this many is visible under the hash split

# Evidence rules of forwards_held_out_io, in message tokens.
_GAP = 3  # other tokens allowed between two consecutive tokens of a shown value
_WINDOW = 40  # how close the input and the expected output must be to each other
_PREFIX = 32  # a long value counts as shown when its first this many tokens are
_MIN_EVIDENCE = 3  # input and output tokens together: "1" -> "1" alone is not a leak
_SUBSTANTIAL_TOKENS = 4  # an output this long is evidence on its own ...
_SUBSTANTIAL_CHARS = 16  # ... as is one with this many characters in its tokens
_PROSE_CHARS = 32  # word-only values shorter than this (in letters) may be ordinary prose

# Numbers (a minus sign only where it cannot be a subtraction), words, and any
# other symbol on its own; brackets, commas, quotes, colons and "=" separate.
_TOKEN = re.compile(
    r"(?:(?<![\w.)\]])-)?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?|[^\W_]+|[^\w\s,;:()\[\]{}'\"`=]"
)
_UNICODE_MINUS = str.maketrans({"\u2212": "-", "\u2013": "-"})
# Text a message shows as a literal: fenced and inline code, and quoted strings (a
# single quote opens only after a non-word character, so "don't" opens nothing).
_LITERAL = re.compile(
    r"```[\s\S]*?(?:```|$)|`[^`\n]+`|\"[^\"\n]*\"|\u201c[^\u201d\n]*\u201d"
    r"|\u2018[^\u2019\n]*\u2019|\u00ab[^\u00bb\n]*\u00bb|(?<!\w)'[^'\n]*'(?!\w)"
)


def visible_indices(problem: Problem) -> tuple[int, ...]:
    """Indices of the cases of ``problem.tests`` the teacher may see, ascending.

    Raises ``ValueError`` when ``tests["examples"]`` names a case that does not exist.
    """
    tests = problem.tests or {}
    count = len(tests.get("cases") or [])
    examples = tests.get("examples")
    if examples:
        bad = [i for i in examples if isinstance(i, bool) or not isinstance(i, int)]
        bad += [i for i in examples if isinstance(i, int) and not 0 <= i < count]
        if bad:
            raise ValueError(
                f"{problem.id}: tests['examples'] must list case indices below {count}, got {bad}"
            )
        return tuple(sorted(set(examples)))
    if count < 2:
        return ()
    shown = min(count - 1, max(1, count // VISIBLE_SHARE))
    ranked = sorted(range(count), key=lambda i: _case_rank(problem.id, i))
    return tuple(sorted(ranked[:shown]))


def _case_rank(problem_id: str, index: int) -> str:
    return hashlib.sha256(f"{problem_id}\0{index}".encode()).hexdigest()


def visible_tests(problem: Problem) -> list[Mapping]:
    """The cases the teacher's execution context may show."""
    cases = (problem.tests or {}).get("cases") or []
    return [cases[i] for i in visible_indices(problem)]


def held_out_tests(problem: Problem) -> list[Mapping]:
    """The graded cases never shown to the teacher."""
    cases = (problem.tests or {}).get("cases") or []
    shown = set(visible_indices(problem))
    return [case for i, case in enumerate(cases) if i not in shown]


# ------------------------------------------------------------------ leak check
def forwards_held_out_io(problem: Problem, message: str | None) -> bool:
    """Whether ``message`` passes on a held-out test's input with its expected output.

    Layout does not matter: values are compared as token sequences (numbers by
    value, words case-insensitively, brackets, commas, quotes and ``=`` ignored,
    up to a few other tokens between consecutive ones, e.g. argument names).
    A case counts when its expected output appears within a few dozen tokens of
    its input (every argument, for function tests), with at least
    ``_MIN_EVIDENCE`` tokens between them, or when a substantial output (4+
    tokens or 16+ characters) appears on its own.  A short output such as
    ``0`` or ``YES`` without its input is never enough.  Cases whose values the
    statement or a visible test already shows are not held-out information.

    Cases made only of ordinary words and short (under ``_PROSE_CHARS``
    letters in all: a Debug case ``"here is"`` -> ``"is"``) also occur in honest
    prose ("Here is your code"), so their string values must in addition appear
    as literals (quoted, or in inline or fenced code); so must a short
    word-only output that counts on its own.
    """
    if not message or not problem.tests:
        return False
    said = _tokens(message)
    if not said:
        return False
    public = _tokens(problem.question)
    shown = {_case_values(problem.tests, case) for case in visible_tests(problem)}
    literal = tuple(t for text in _LITERAL.findall(message) for t in _tokens(text))
    for case in held_out_tests(problem):
        values = _case_values(problem.tests, case)
        if values in shown or _shows(public, *values) or not _shows(said, *values):
            continue
        needed = _literals_needed(problem.tests, case, said, values)
        if all(_spans(literal, value) for value in needed if value):
            return True
    return False


def _literals_needed(tests: Mapping, case: Mapping, said, values) -> tuple:
    """The string values a shown case must also show as literals: none for an ordinary
    case, its strings for a prose-like one."""
    inputs, output = values
    paired = _shows(said, inputs, output, alone=False)
    if paired and _prose_like(*inputs, output):
        input_strings, output_strings = _string_values(tests, case)
        return (*input_strings, *output_strings)
    if not paired and _prose_like(output):
        return tuple(_string_values(tests, case)[1])  # the output on its own
    return ()


def _prose_like(*values: tuple[str, ...]) -> bool:
    """Whether ``values`` are short and only ordinary words (could be plain prose)."""
    tokens = [t for value in values for t in value]
    return all(t.isalpha() for t in tokens) and sum(map(len, tokens)) < _PROSE_CHARS


def _string_values(
    tests: Mapping, case: Mapping
) -> tuple[tuple[tuple[str, ...], ...], tuple[tuple[str, ...], ...]]:
    """``(input strings, output strings)`` of a case as token tuples: a stdio case's input
    and output; the string literals in a function test's arguments and expected value."""
    if tests.get("kind") == "stdio":
        inputs, outputs = [str(case.get("input", ""))], [str(case.get("output", ""))]
    else:
        parts, expected = _function_case_values(str(case.get("code", "")))
        inputs = [text for part in parts for text in _string_literals(part)]
        outputs = _string_literals(expected) if expected is not None else []
    return (
        tuple(_tokens(text)[:_PREFIX] for text in inputs),
        tuple(_tokens(text)[:_PREFIX] for text in outputs),
    )


def _string_literals(source: str) -> list[str]:
    try:
        tree = ast.parse(source, mode="eval")
    except (SyntaxError, ValueError, RecursionError):
        return []
    return [
        n.value for n in ast.walk(tree) if isinstance(n, ast.Constant) and isinstance(n.value, str)
    ]


def _case_values(tests: Mapping, case: Mapping) -> tuple[tuple[tuple[str, ...], ...], tuple]:
    """``(input parts, expected output)`` of a case as token tuples (prefixes of long ones)."""
    if tests.get("kind") == "stdio":
        parts = [case.get("input", "")]
        expected = case.get("output", "")
    else:
        parts, expected = _function_case_values(str(case.get("code", "")))
    inputs = tuple(t for t in (_tokens(p)[:_PREFIX] for p in parts) if t)
    output = _tokens(expected)[:_PREFIX] if expected is not None else ()
    return inputs, tuple(output)


def _shows(tokens: Sequence[str], inputs: tuple, output: tuple, alone: bool = True) -> bool:
    """Whether ``tokens`` show a case's ``output`` near its ``inputs`` or (with ``alone``)
    a substantial ``output`` on its own."""
    if not output:
        return False
    output_spans = _spans(tokens, output)
    if not output_spans:
        return False
    if alone and _substantial(output):
        return True
    if not inputs or len(output) + sum(map(len, inputs)) < _MIN_EVIDENCE:
        return False
    return _inputs_near(tokens, inputs, output_spans)


def _substantial(output: tuple) -> bool:
    return len(output) >= _SUBSTANTIAL_TOKENS or sum(map(len, output)) >= _SUBSTANTIAL_CHARS


def _inputs_near(tokens: Sequence[str], inputs: tuple, output_spans) -> bool:
    """Whether every input part stands within the window of one of the output's spans."""
    input_spans = [_spans(tokens, part) for part in inputs]
    return any(
        all(any(_distance(span, near) <= _WINDOW for near in spans) for spans in input_spans)
        for span in output_spans
    )


def _distance(a: tuple[int, int], b: tuple[int, int]) -> int:
    return max(0, b[0] - a[1], a[0] - b[1])


def _spans(tokens: Sequence[str], needle: Sequence[str]) -> list[tuple[int, int]]:
    """``(start, end)`` of each place ``needle`` appears in ``tokens``, in order, with at
    most ``_GAP`` other tokens between consecutive needle tokens (earliest continuation)."""
    spans = []
    for start, token in enumerate(tokens):
        if token != needle[0]:
            continue
        position, ok = start, True
        for want in needle[1:]:
            window = tokens[position + 1 : position + 2 + _GAP]
            if want not in window:
                ok = False
                break
            position += 1 + window.index(want)
        if ok:
            spans.append((start, position + 1))
    return spans


def _tokens(text: object) -> tuple[str, ...]:
    return tuple(_canonical(t) for t in _TOKEN.findall(str(text).translate(_UNICODE_MINUS)))


def _canonical(token: str) -> str:
    if token[0].isdigit() or (token[0] == "-" and len(token) > 1):
        try:
            return str(Decimal(token).normalize())
        except InvalidOperation:
            return token
    return token.casefold()


def _function_case_values(code: str) -> tuple[list[str], str | None]:
    """The arguments of the ``candidate(...)`` call in a function test and the value it
    is compared with (``True``/``False`` for a bare or negated call; ``None`` when the
    assert compares it in some other way)."""
    try:
        module = ast.parse(code)
    except (SyntaxError, ValueError, RecursionError):
        return [], None
    check = next((n for n in ast.walk(module) if isinstance(n, ast.Assert)), None)
    if check is None:
        return [], None
    call = next((n for n in ast.walk(check.test) if _is_candidate_call(n)), None)
    if call is None:
        return [], None
    args = [ast.get_source_segment(code, a) or ast.unparse(a) for a in call.args]
    args += [ast.get_source_segment(code, k.value) or ast.unparse(k.value) for k in call.keywords]
    expected = _expected_value(check.test, call)
    source = None if expected is None else ast.get_source_segment(code, expected)
    return args, (source or (None if expected is None else ast.unparse(expected)))


def _is_candidate_call(node: ast.AST) -> TypeGuard[ast.Call]:
    return (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id == "candidate"
    )


def _expected_value(test: ast.expr, call: ast.Call) -> ast.expr | None:
    if test is call:
        return ast.Constant(True)
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not) and test.operand is call:
        return ast.Constant(False)
    if isinstance(test, ast.Compare) and len(test.ops) == 1:
        left, right = test.left, test.comparators[0]
        if isinstance(test.ops[0], (ast.Eq, ast.Is)):
            return _other_side(left, right, call)
        # abs(candidate(x) - y) < tolerance: y is the expected value
        if isinstance(left, ast.Call) and getattr(left.func, "id", None) == "abs" and left.args:
            inner = left.args[0]
            if isinstance(inner, ast.BinOp) and isinstance(inner.op, ast.Sub):
                return _other_side(inner.left, inner.right, call)
    return None


def _other_side(left: ast.expr, right: ast.expr, call: ast.Call) -> ast.expr | None:
    if left is call:
        return right
    if right is call:
        return left
    return None


__all__ = [
    "forwards_held_out_io",
    "held_out_tests",
    "visible_indices",
    "visible_tests",
]
