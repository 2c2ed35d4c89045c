"""ARC grid verifier: parse the student's output grids and compare them exactly.

Accepted answer formats:

* a JSON object ``{"outputs": [grid, ...]}`` with one grid per test input,
  anywhere in the text or inside a fenced code block;
* for tasks with a single test input, also the grid written as rows of
  digits (``0 1 2``, ``0,1,2`` or ``012`` per line).

Only one answer is graded: the last ``{"outputs": ...}`` object, else the
last block of digit rows.  Earlier candidates are ignored whatever they hold,
so writing several grids can never earn more than the final one.

A bare JSON grid is deliberately not accepted: inside a broken
``{"outputs": ...}`` object it would be picked up and hide the syntax error.
For the same reason an object that does not decode is skipped whole; the
objects nested in it are not tried on their own.

Only :func:`~intbench.verifiers.bounds.graded_part` of a response (its last
64 KB) is read, and reading it takes linear time: one pass finds the
outermost objects, and each character is handed to the JSON decoder at most
once.

A response that cannot be read or holds malformed grids is *incorrect*
(the student's fault), never an ``error``; ``error`` is kept for broken
problems.  Feedback names shapes and mismatch positions but never the
expected cell values, so it can be shown to the student without leaking.
"""

from __future__ import annotations

import json
import re
from typing import Any

from intbench.records import Problem, Verdict
from intbench.verifiers.bounds import graded_part

MAX_GRID_SIDE = 30
MAX_FEEDBACK_CHARS = 2000
MAX_LISTED_MISMATCHES = 5

Grid = list[list[int]]

# ASCII digits only: \d would also accept other scripts' digits.
_DIGIT_ROW = re.compile(r"^[\s,]*[0-9](?:[\s,]*[0-9])*[\s,]*$")
# A key must follow the brace; this skips LaTeX groups and stray braces cheaply.
_OBJECT_START = re.compile(r'\{\s*"')
# The characters that change the state of the object scanner.
_JSON_STRUCTURE = re.compile(r'[{}"\\\n]')
_TRUNCATION_MARK = "\n[feedback truncated]"


class ArcParseError(ValueError):
    """The response holds no readable grids, or grids that break ARC's rules."""

    def __init__(self, message: str, reason: str) -> None:
        super().__init__(message)
        self.reason = reason


def _json_candidates(text: str) -> list[Any]:
    """The outermost JSON objects in ``text`` that decode, in order."""
    found = []
    for start, end in _outermost_object_spans(text):
        try:
            found.append(json.loads(text[start:end]))
        except (ValueError, RecursionError):
            continue
    return found


def _outermost_object_spans(text: str) -> list[tuple[int, int]]:
    """``(start, end)`` of each balanced ``{...}`` not inside another one, in one pass.

    An object opens at ``{"`` and braces inside JSON strings do not count.  A
    JSON string cannot span lines, so a newline inside one abandons the
    objects still open (prose quotes cannot derail the rest of the text);
    objects already closed inside them stay candidates.
    """
    closed: list[tuple[int, int]] = []
    open_starts: list[int] = []
    in_string = False
    position = 0
    while True:
        if not open_starts:
            start = _OBJECT_START.search(text, position)
            if start is None:
                break
            open_starts.append(start.start())
            position, in_string = start.start() + 1, False
            continue
        token = _JSON_STRUCTURE.search(text, position)
        if token is None:
            break
        char, position = token.group(), token.end()
        if in_string:
            if char == "\\":
                position += 1  # the escaped character cannot end the string
            elif char == '"':
                in_string = False
            elif char == "\n":
                open_starts.clear()
        elif char == '"':
            in_string = True
        elif char == "{":
            open_starts.append(token.start())
        elif char == "}":
            closed.append((open_starts.pop(), position))
    return _outermost(closed)


def _outermost(spans: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """Drop the spans nested in a later one; ``spans`` are in closing order."""
    kept: list[tuple[int, int]] = []
    for start, end in spans:
        while kept and kept[-1][0] > start:
            kept.pop()
        kept.append((start, end))
    return kept


def _looks_like_grid(value: Any) -> bool:
    return isinstance(value, list) and bool(value) and all(isinstance(row, list) for row in value)


def _parse_json(text: str) -> list[Any] | None:
    """The outputs of the last ``{"outputs": [...]}`` object, or None when there is none."""
    for value in reversed(_json_candidates(text)):
        if isinstance(value, dict) and isinstance(value.get("outputs"), list):
            return value["outputs"]
    return None


def _parse_digit_rows(text: str) -> Grid | None:
    """The last block of consecutive digit-only lines, as a grid."""
    blocks: list[list[str]] = []
    current: list[str] = []
    for line in text.splitlines():
        if _DIGIT_ROW.match(line):
            current.append(line)
        elif current:
            blocks.append(current)
            current = []
    if current:
        blocks.append(current)
    if not blocks:
        return None
    grid = []
    for line in blocks[-1]:
        tokens = re.split(r"[\s,]+", line.strip(" \t,"))
        # "012" is three cells; "0 1 2" and "0,1,2" list the cells explicitly.
        cells = list(tokens[0]) if len(tokens) == 1 else tokens
        grid.append([int(cell) for cell in cells])
    return grid


def parse_arc_response(text: str, n_tests: int) -> list[Grid]:
    """Read the student's output grids, one per test input, and validate them.

    Only the graded part (the last 64 KB) of ``text`` is read.

    Raises:
        ArcParseError: with ``reason`` ``"parse_error"`` (nothing readable) or
            ``"invalid_output"`` (wrong number of grids, bad values or shapes).
    """
    text = graded_part(text)
    outputs = _parse_json(text)
    if outputs is None and n_tests == 1:
        grid = _parse_digit_rows(text)
        outputs = None if grid is None else [grid]
    if outputs is None:
        expected = (
            'a JSON object {"outputs": [grid]} or the grid as rows of digits'
            if n_tests == 1
            else f'a JSON object {{"outputs": [grid, ...]}} with {n_tests} grids'
        )
        raise ArcParseError(f"Could not find the output grids; expected {expected}.", "parse_error")
    if len(outputs) != n_tests:
        raise ArcParseError(
            f"Expected exactly {n_tests} output grid(s), one per test input, got {len(outputs)}.",
            "invalid_output",
        )
    for index, grid in enumerate(outputs, start=1):
        problem = _grid_problem(grid)
        if problem:
            raise ArcParseError(f"Output {index} is not a valid grid: {problem}.", "invalid_output")
    return outputs


def _grid_problem(grid: Any) -> str | None:
    """Why ``grid`` is not a valid ARC grid, or None when it is one."""
    if not _looks_like_grid(grid) or not grid[0]:
        return "it must be a non-empty list of non-empty rows"
    width = len(grid[0])
    if len(grid) > MAX_GRID_SIDE or width > MAX_GRID_SIDE:
        return f"it is {len(grid)}x{width}, larger than {MAX_GRID_SIDE}x{MAX_GRID_SIDE}"
    for r, row in enumerate(grid):
        if len(row) != width:
            return f"row {r} has {len(row)} cells but row 0 has {width} (not rectangular)"
        for c, cell in enumerate(row):
            # bool is an int subclass; JSON true/false are not colours.
            if type(cell) is not int or not 0 <= cell <= 9:
                return f"cell ({r}, {c}) is {cell!r}, not an integer from 0 to 9"
    return None


def shape(grid: Grid) -> tuple[int, int]:
    """(height, width) of a rectangular grid."""
    return len(grid), len(grid[0]) if grid else 0


def compare_grids(expected: Grid, got: Grid) -> dict:
    """Per-output comparison: correctness, both shapes and the mismatching cells."""
    result: dict[str, Any] = {
        "expected_shape": list(shape(expected)),
        "shape": list(shape(got)),
    }
    if shape(expected) != shape(got):
        result.update(correct=False, shape_match=False, mismatches=None, mismatch_positions=[])
        return result
    positions = [
        [r, c]
        for r, (want_row, got_row) in enumerate(zip(expected, got, strict=True))
        for c, (want, have) in enumerate(zip(want_row, got_row, strict=True))
        if want != have
    ]
    result.update(
        correct=not positions,
        shape_match=True,
        mismatches=len(positions),
        mismatch_positions=positions[:MAX_LISTED_MISMATCHES],
    )
    return result


def _describe(index: int, comparison: dict) -> str:
    if comparison["correct"]:
        return f"Output {index}: correct."
    eh, ew = comparison["expected_shape"]
    gh, gw = comparison["shape"]
    if not comparison["shape_match"]:
        return f"Output {index}: wrong shape: expected {eh}x{ew}, got {gh}x{gw}."
    listed = ", ".join(f"({r}, {c})" for r, c in comparison["mismatch_positions"])
    more = " and more" if comparison["mismatches"] > len(comparison["mismatch_positions"]) else ""
    return (
        f"Output {index}: {comparison['mismatches']} of {eh * ew} cells are wrong; "
        f"first wrong cells at (row, col), 0-based: {listed}{more}."
    )


def truncate_feedback(text: str, limit: int = MAX_FEEDBACK_CHARS) -> str:
    """Cut ``text`` to at most ``limit`` characters, marking the cut."""
    if len(text) <= limit:
        return text
    return text[: limit - len(_TRUNCATION_MARK)] + _TRUNCATION_MARK


def _reference_grids(problem: Problem) -> list[Grid]:
    """The problem's expected outputs as plain lists (numpy arrays are accepted)."""
    answer = problem.answer
    if not isinstance(answer, (list, tuple)) or not answer:
        raise ValueError("ARC problem.answer must be a non-empty list of output grids")
    grids = [grid.tolist() if hasattr(grid, "tolist") else grid for grid in answer]
    for index, grid in enumerate(grids, start=1):
        problem_text = _grid_problem(grid)
        if problem_text:
            raise ValueError(f"reference output {index} is invalid: {problem_text}")
    test_inputs = problem.fields.get("test_inputs") if isinstance(problem.fields, dict) else None
    if test_inputs is not None and len(test_inputs) != len(grids):
        raise ValueError(
            f"problem has {len(test_inputs)} test inputs but {len(grids)} reference outputs"
        )
    return grids


def verify_arc(problem: Problem, response: str) -> Verdict:
    """Verify an ARC answer: every output grid must match its reference exactly.

    Details hold ``reason`` (``"match"``, ``"mismatch"``, ``"parse_error"`` or
    ``"invalid_output"``) and, when grids were read, ``outputs``: one dict per
    test with ``correct``, ``shape``, ``expected_shape`` and ``mismatches``.
    """
    try:
        expected = _reference_grids(problem)
    except ValueError as exc:
        return Verdict.error(f"broken ARC problem: {exc}", reason="bad_problem")
    try:
        outputs = parse_arc_response(response or "", len(expected))
    except ArcParseError as exc:
        return Verdict(
            status="incorrect",
            feedback=truncate_feedback(str(exc)),
            details={"reason": exc.reason},
        )
    comparisons = [compare_grids(want, got) for want, got in zip(expected, outputs, strict=True)]
    all_correct = all(c["correct"] for c in comparisons)
    lines = [_describe(i, c) for i, c in enumerate(comparisons, start=1)]
    feedback = "All outputs are correct." if all_correct else "\n".join(lines)
    return Verdict(
        status="correct" if all_correct else "incorrect",
        score=1.0 if all_correct else 0.0,
        answer=outputs,
        feedback=truncate_feedback(feedback),
        details={"reason": "match" if all_correct else "mismatch", "outputs": comparisons},
    )


__all__ = [
    "ArcParseError",
    "compare_grids",
    "parse_arc_response",
    "shape",
    "truncate_feedback",
    "verify_arc",
]
