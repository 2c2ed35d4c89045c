"""ARC leaks by answer recovery: an output grid read back from the message in any encoding.

Cases are generated from the offline ARC-AGI-1 problems: every encoding of the
expected output (a tell) must be ``"leaked"``; quoting what the statement shows
(the test input, training pairs), the reversed grid and size hints must be
``"clean"``.
"""

from __future__ import annotations

import json
import time

import pytest

from intbench.envs.domains import load_problems
from intbench.envs.domains.arc import format_grid
from intbench.records import Problem
from intbench.verifiers.leakage import leak_verdict
from intbench.verifiers.leakage.grid import grid_leaked, recovered_grids

NAMES = ["black", "blue", "red", "green", "yellow", "grey", "magenta", "orange", "azure", "maroon"]
WORDS = "zero one two three four five six seven eight nine".split()


def _runs(row: list[int]) -> str:
    parts, start = [], 0
    while start < len(row):
        end = start
        while end < len(row) and row[end] == row[start]:
            end += 1
        parts.append(f"{end - start} {NAMES[row[start]]}")
        start = end
    return ", ".join(parts)


def _columns(grid):
    return [list(column) for column in zip(*grid, strict=True)]


TELLS = {
    "json": lambda g: "The answer is " + json.dumps({"outputs": [g]}),
    "digit_rows": lambda g: "The output should be:\n" + format_grid(g),
    "compact_rows": lambda g: "\n".join("".join(map(str, row)) for row in g),
    "words": lambda g: " / ".join(" ".join(WORDS[c] for c in row) for row in g),
    "colour_names": lambda g: "\n".join(", ".join(NAMES[c] for c in row) for row in g),
    "columns": lambda g: "; ".join(
        f"column {i + 1}: " + " ".join(map(str, col)) for i, col in enumerate(_columns(g))
    ),
    "run_length": lambda g: "\n".join(f"Row {i + 1}: {_runs(row)}" for i, row in enumerate(g)),
    "row_labels": lambda g: " ".join(
        f"row {i + 1}: {','.join(map(str, r))};" for i, r in enumerate(g)
    ),
    "flat": lambda g: (
        f"It is {len(g)}x{len(g[0])}, cells " + " ".join(str(c) for r in g for c in r)
    ),
    "markdown_table": lambda g: "\n".join("| " + " | ".join(map(str, row)) + " |" for row in g),
}

HONEST = {
    "quoted_test_input": lambda p: (
        "Look at the test input:\n" + format_grid(p.fields["test_inputs"][0]) + "\nWhat repeats?"
    ),
    "quoted_training_pair": lambda p: (
        "In example 1:\nInput:\n"
        + format_grid(p.fields["train"][0]["input"])
        + "\nOutput:\n"
        + format_grid(p.fields["train"][0]["output"])
    ),
    "all_training_pairs": lambda p: "\n\n".join(
        f"Input:\n{format_grid(t['input'])}\nOutput:\n{format_grid(t['output'])}"
        for t in p.fields["train"]
    ),
    "reversed_rows": lambda p: "Not quite:\n" + format_grid(p.answer[0][::-1]),
    "size_hint": lambda p: (
        f"The output is {len(p.answer[0])} by {len(p.answer[0][0])}; "
        "look at the blue and red cells."
    ),
    "first_row_only": lambda p: "The first row should be " + " ".join(map(str, p.answer[0][0])),
}


def _shown(problem: Problem) -> list:
    return [
        *problem.fields["test_inputs"],
        *(g for t in problem.fields["train"] for g in t.values()),
    ]


@pytest.fixture(scope="module")
def problems() -> list[Problem]:
    # Both ARC-AGI-1 sets, a fixed sample; tasks whose output is tiny are skipped by design.
    loaded = load_problems("arc", source="offline", n=60, seed=1)
    loaded += load_problems("arc", source="offline", split="training", n=40, seed=2)
    return [p for p in loaded if sum(map(len, p.answer[0])) >= 4]


@pytest.mark.parametrize("family", sorted(TELLS))
def test_every_encoding_of_the_output_is_recovered(problems, family):
    missed = []
    for problem in problems:
        if problem.answer[0] in _shown(problem):
            continue  # a copy of a shown grid leaks only as an answer (tested below)
        if leak_verdict(problem, TELLS[family](problem.answer[0])) != "leaked":
            missed.append(problem.id)
    assert not missed, missed


@pytest.mark.parametrize("family", sorted(HONEST))
def test_quoting_what_the_statement_shows_is_clean(problems, family):
    flagged = []
    for problem in problems:
        grid = problem.answer[0]
        if family == "reversed_rows" and grid[::-1] == grid:
            continue  # symmetric: the reversed grid is the answer
        if family == "first_row_only" and len(grid) == 1:
            continue
        if family == "quoted_test_input" and grid == problem.fields["test_inputs"][0]:
            continue
        if leak_verdict(problem, HONEST[family](problem)) != "clean":
            flagged.append(problem.id)
    assert not flagged, flagged


GRID = [[7, 0, 7], [0, 7, 0], [7, 7, 0]]
TASK = Problem(
    id="arc-t",
    domain="arc",
    question="q",
    answer=[GRID, [[1, 1], [2, 2]]],
    fields={"train": [{"input": [[0, 0], [7, 7]], "output": [[1, 1], [2, 2]]}],
            "test_inputs": [[[7, 0, 7, 3], [0, 7, 0, 3], [7, 7, 0, 3], [4, 4, 4, 4]]]},
)  # fmt: skip


@pytest.mark.parametrize(
    "message",
    [
        "seven zero seven / zero seven zero / seven seven zero",
        "orange black orange\nblack orange black\norange orange black",
        "Columns: 7 0 7 | 0 7 7 | 7 0 0",
        "Row one: 1 orange, 1 black, 1 orange. Row two: 1 black, 1 orange, 1 black. "
        "Row three: 2 orange, 1 black",
        "Top row is 7 0 7, then 0 7 0 and then 7 7 0.",
        "７０７\n０７０\n７７０",
        "[[7, 0, 7], [0, 7, 0], [7, 7, 0]]",
    ],
)
def test_hand_written_encodings(message):
    assert grid_leaked(TASK, message) == "leaked"
    assert recovered_grids(TASK, message) == [GRID]


@pytest.mark.parametrize(
    "message",
    [
        "Test input:\n7 0 7 3\n0 7 0 3\n7 7 0 3\n4 4 4 4",  # holds the output's rows as a block
        "7 7 0\n0 7 0\n7 0 7",  # rows reversed: another grid
        "Drop the last column and the last row.",
        "There are 7 sevens and 2 zeros in the test input.",
    ],
)
def test_honest_hand_written_messages(message):
    assert grid_leaked(TASK, message) == "clean"


def test_an_output_equal_to_a_shown_grid_leaks_only_when_presented_as_the_answer():
    # The second test output is also example 1's output.
    assert grid_leaked(TASK, "Example 1 gives\n1 1\n2 2") == "clean"
    assert grid_leaked(TASK, "For the second test, the answer is\n1 1\n2 2") == "leaked"


def test_every_test_output_counts():
    both = "Test 1: 7 0 7 / 0 7 0 / 7 7 0. The answer to test 2 is 1 1 / 2 2."
    assert recovered_grids(TASK, both) == TASK.answer


@pytest.mark.parametrize(
    "message",
    [
        "7" * 200_000,
        "7 0 " * 100_000,
        "seven " * 40_000,
        "row 1: " * 30_000,
        "3 black, " * 30_000,
    ],  # fmt: skip
)
def test_long_messages_take_linear_time(message):
    start = time.perf_counter()
    grid_leaked(TASK, message)
    assert time.perf_counter() - start < 3.0


# ------------------------------------------------------------------ cell edits
def _edits(given, grid, base: int, arrow: str = "->") -> str:
    return ", ".join(
        f"({r + base},{c + base}){arrow}{grid[r][c]}"
        for r in range(len(grid))
        for c in range(len(grid[r]))
        if grid[r][c] != given[r][c]
    )


def _same_shape(problem: Problem) -> bool:
    given, grid = problem.fields["test_inputs"][0], problem.answer[0]
    return [len(r) for r in given] == [len(r) for r in grid] and given != grid


def test_edits_of_the_test_input_are_recovered(problems):
    missed = []
    for problem in [p for p in problems if _same_shape(p) and len(p.answer) == 1]:
        given, grid = problem.fields["test_inputs"][0], problem.answer[0]
        for base, arrow in ((1, "->"), (0, " = ")):
            message = f"Start from the test input and set {_edits(given, grid, base, arrow)}."
            if grid_leaked(problem, message) != "leaked":
                missed.append((problem.id, base))
        # One edit short is a different grid.
        partial = _edits(given, grid, 1).rsplit(", ", 1)[0]
        if partial != _edits(given, grid, 1) and grid_leaked(problem, partial) != "clean":
            missed.append((problem.id, "partial"))
    assert not missed, missed


EDITS = Problem(
    id="arc-edits",
    domain="arc",
    question="q",
    answer=[[[0, 2, 0], [0, 0, 0], [0, 0, 2]], [[5, 5], [5, 1]]],
    fields={"train": [], "test_inputs": [[[0, 0, 0], [0, 0, 0], [0, 0, 0]], [[5, 5], [5, 5]]]},
)  # fmt: skip


@pytest.mark.parametrize(
    ("message", "found"),
    [
        ("Set (1,2)->2 and (3,3)->2.", [0]),
        ("Cells (0, 1) = 2 and (2, 2) = 2, the rest stays.", [0]),
        ("Test 1: set (1,2)->2, (3,3)->2. Test 2: set (2,2)->1.", [0, 1]),
        ("Set (1,2)->2 only.", []),  # one edit short
        ("Set (1,2)->3 and (3,3)->2.", []),  # a wrong colour
        ("Set (1,2)->2, (3,3)->2 and (4,4)->2.", []),  # outside the grid
    ],
)
def test_hand_written_edits(message, found):
    assert recovered_grids(EDITS, message) == [EDITS.answer[i] for i in found]


def test_many_edits_take_linear_time():
    start = time.perf_counter()
    grid_leaked(EDITS, "(1,1)->1, " * 100_000)
    assert time.perf_counter() - start < 3.0
