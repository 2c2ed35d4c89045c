"""Grid leaks (ARC): an expected output grid recovered from the message in any encoding.

The message is read as a stream of cells, each a colour 0-9 written as a
digit (``707`` is three cells), a number word (``seven``) or an ARC colour
name (0 black, 1 blue, 2 red, 3 green, 4 yellow, 5 grey/gray, 6
magenta/pink/fuchsia, 7 orange, 8 azure/light blue/cyan/teal, 9
maroon/brown); a second reading expands runs (``3 black, 2 red`` is
``0 0 0 2 2``).  Commas and spaces separate cells; anything else (newlines,
brackets, ``/``, ``;``, words, row labels such as "row 2:" or "column
one:") is a *boundary*.  Row labels are dropped, so their numbers are no cells.

A grid is recovered when its cells in row-major order, or those of its
transpose (the grid written column by column), are a run of consecutive
cells of one reading that starts and ends at a boundary: JSON, digit rows,
words, colour names, one flat line, columns and run lengths all read so.
A grid whose rows come reversed is a different grid and does not count.
Grids of fewer than :data:`MIN_CELLS` cells are skipped (they occur in any
message with numbers).

A grid is also recovered when the message lists the cell edits that turn a
test input into it ("start from the test input and set (row,col) (5,20)->2,
(5,24)->2, ..."; ``->``, ``=``, ``:``, "to"), rows and columns counted from 1
or from 0, one set of edits per "Test N" part; every edit must lie inside the
grid and together they must give the whole output.

A copy is no leak: a recovered output that lies inside a grid the statement
already shows (test input, training inputs and outputs), quoted in the
message, is that grid quoted.  When the output *is* such a shown grid, its
copy leaks only when the message presents it as the answer: an answer cue
("answer", "test output", "should be", ...) comes after the last cue of a
shown grid ("input", "example", ...) in the :data:`CUE_CHARS` characters
before it.

Linear in the message's length per grid (each grid is compared at the
boundaries only).
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterable
from typing import TYPE_CHECKING

from intbench.records import Problem
from intbench.verifiers.leakage.notation import fold

if TYPE_CHECKING:
    from intbench.verifiers.leakage.verdicts import LeakVerdict

MIN_CELLS = 4
MAX_EDITS = 4096  # cell edits read per message (a 30 x 30 grid has 900 cells)
MAX_RUN = 30  # the longest ARC row: a larger count is no run length
CUE_CHARS = 120

Grid = list[list[int]]
_Cells = tuple[str, list[int], list[int], list[bool]]
"""A reading's cells as digits, their starts in the text, the cells a boundary comes
before and whether one comes before each cell (and after the last): :meth:`_Reading.finish`."""
_Copy = tuple[int, int, Grid]
"""Cells ``begin:end`` of a reading that spell a grid the statement shows."""
_Token = tuple[str, int]
_Edit = tuple[int, int, int]
"""A cell edit: row, column (as written, from 0 or 1) and the colour it gets."""

_NUMBER_WORDS = "zero one two three four five six seven eight nine".split()
_COLOURS = {
    "black": 0, "blue": 1, "red": 2, "green": 3, "yellow": 4, "grey": 5, "gray": 5,
    "magenta": 6, "pink": 6, "fuchsia": 6, "orange": 7, "azure": 8, "light blue": 8,
    "lightblue": 8, "cyan": 8, "teal": 8, "maroon": 9, "brown": 9, "dark red": 9,
}  # fmt: skip
_WORDS = {**{w: i for i, w in enumerate(_NUMBER_WORDS)}, **_COLOURS}
# Plurals name a colour too ("3 zeros", "two blacks"), but only after a count.
_PLURALS = {w + ("es" if w.endswith("o") else "s"): v for w, v in _WORDS.items()}
_PLURALS |= {w + "s": v for w, v in _WORDS.items()}

_ORDINAL = "first|second|third|fourth|fifth|sixth|seventh|eighth|ninth|tenth|last|top|bottom|middle|next|final"
_LABEL_NUMBER = r"(?:#\s*)?(?:\d{1,2}|one|two|three|four|five|six|seven|eight|nine|ten)"
_LABEL = re.compile(
    rf"\b(?:(?:{_ORDINAL})\s+)?(?:row|line|column|col)s?\b"
    rf"(?:\s*{_LABEL_NUMBER}(?=\s*(?:[:=).,-]|is\b|reads?\b|has\b|should\b|becomes?\b|$)))?"
    r"\s*[:=)-]?"
    r"|^[ \t]*[rc]?\d{1,2}[ \t]*[:)]",
    re.MULTILINE,
)
_TOKEN = re.compile(r"light\s+blue|dark\s+red|[0-9]+|[a-z]+|[^\sa-z0-9,'\"`*-]")
# "Output:" alone labels an example's output as well as the answer: no cue either way.
_ANSWER_CUE = re.compile(
    r"\b(?:answer|solution|final|result|(?:test|your|correct|expected)\s+output"
    r"|output\s+(?:is|should|will)|should\s+(?:be|look|read)|looks\s+like|becomes?)\b"
)
_EDIT = re.compile(
    r"\(\s*(\d{1,2})\s*,\s*(\d{1,2})\s*\)\s*(?:->|→|=>|=|:|\bto\b|\bbecomes\b)\s*(\d)(?!\d)"
)
_TEST_LABEL = re.compile(r"\btest\s*(?:input\s*|grid\s*|case\s*)?#?\s*\d{1,2}\b")
_SHOWN_CUE = re.compile(r"\b(?:input|example|given|original|training|demonstration|pair)\b")


class _Reading:
    """One reading of a message: its cells as a digit string, where each cell starts in the
    text, and whether a boundary comes before each cell (and after the last)."""

    def __init__(self) -> None:
        self.cells: list[str] = []
        self.starts: list[int] = []
        self.boundary: list[bool] = []
        self._pending = True

    def emit(self, value: int, start: int, count: int = 1) -> None:
        for _ in range(count):
            self.cells.append(str(value))
            self.starts.append(start)
            self.boundary.append(self._pending)
            self._pending = False

    def cut(self) -> None:
        self._pending = True

    def finish(self) -> _Cells:
        self.boundary.append(True)
        edges = [i for i, edge in enumerate(self.boundary) if edge]
        return "".join(self.cells), self.starts, edges, self.boundary


def _readings(text: str) -> list[_Cells]:
    """The plain reading of ``text`` (folded, lower case) and, when it has run lengths,
    the run-length one."""
    tokens = _tokens(text)
    plain, _ = _read(tokens, runs=False)
    readings = [plain]
    if any(word in _COLOURS or word in _PLURALS for word, _ in tokens):
        with_runs, has_runs = _read(tokens, runs=True)
        if has_runs:
            readings.append(with_runs)
    return readings


def _tokens(text: str) -> list[_Token]:
    """The words, numbers and other marks of ``text`` with where each starts, row labels
    blanked out (a boundary) and "light  blue"-like names spelled with one space."""
    text = _LABEL.sub(lambda m: "\n" + " " * (len(m.group()) - 1), text)
    tokens = [(m.group(), m.start()) for m in _TOKEN.finditer(text)]
    return [(word if word.isalnum() else " ".join(word.split()), at) for word, at in tokens]


def _read(tokens: list[_Token], runs: bool) -> tuple[_Cells, bool]:
    """The cells of ``tokens`` and whether a run was read: with ``runs``, a count before a
    colour name is that many cells of it."""
    reading, has_runs, index = _Reading(), False, 0
    while index < len(tokens):
        word, start = tokens[index]
        run = _run_at(tokens, index) if runs else None
        if run is not None:
            colour, count = run
            reading.emit(colour, start, count)
            has_runs = True
            index += 2  # the count and its colour
        else:
            _read_word(reading, word, start)
            index += 1
    return reading.finish(), has_runs


def _run_at(tokens: list[_Token], index: int) -> tuple[int, int] | None:
    """``(colour, count)`` when token ``index`` is a run length and the next one names a
    colour (a plural too), else ``None``."""
    count = _count(tokens[index][0])
    following = tokens[index + 1][0] if index + 1 < len(tokens) else ""
    colour = _COLOURS.get(following, _PLURALS.get(following))
    return (colour, count) if count and colour is not None else None


def _read_word(reading: _Reading, word: str, start: int) -> None:
    """Add one token to ``reading``: a number (a cell per digit), a number word or colour
    name (one cell), or anything else (a boundary)."""
    if word.isdigit():
        _read_digits(reading, word, start)
    elif word in _WORDS:
        reading.emit(_WORDS[word], start)
    else:
        reading.cut()


def _read_digits(reading: _Reading, digits: str, start: int) -> None:
    """Add a cell per digit to ``reading``; a number of several digits (a row such as
    ``707``) stands between boundaries."""
    if len(digits) > 1:
        reading.cut()
    for offset, digit in enumerate(digits):
        reading.emit(int(digit), start + offset)
    if len(digits) > 1:
        reading.cut()


def _count(word: str) -> int:
    """``word`` as a run length (1 to :data:`MAX_RUN`), else 0."""
    if word.isdigit() and len(word) <= 2:
        return int(word) if 0 < int(word) <= MAX_RUN else 0
    return _NUMBER_WORDS.index(word) if word in _NUMBER_WORDS[1:] else 0


def _flat(grid: Grid) -> str:
    return "".join(str(cell) for row in grid for cell in row)


def _transpose(grid: Grid) -> Grid:
    return [list(column) for column in zip(*grid, strict=False)]


def _spellings(grid: Grid) -> list[tuple[str, Grid]]:
    """``grid`` row by row and column by column, as (cells, grid) pairs."""
    forms = [(_flat(grid), grid)]
    transposed = _transpose(grid)
    if transposed != grid:
        forms.append((_flat(transposed), transposed))
    return forms


def _occurrences(cells: str, edges: list[int], boundary: list[bool], flat: str) -> Iterable[int]:
    """Where ``flat`` is a run of cells starting and ending at a boundary."""
    end_limit = len(cells) - len(flat)
    for start in edges:
        if start > end_limit:
            break
        if cells.startswith(flat, start) and boundary[start + len(flat)]:
            yield start


def _shown_grids(problem: Problem) -> list[Grid]:
    """The grids the statement shows: the test inputs and every training pair."""
    fields = problem.fields or {}
    shown = [grid for grid in fields.get("test_inputs") or [] if grid]
    for pair in fields.get("train") or []:
        shown += [pair[key] for key in ("input", "output") if pair.get(key)]
    return shown


def _presented_as_output(text: str, position: int) -> bool:
    before = text[max(0, position - CUE_CHARS) : position]
    output = [m.end() for m in _ANSWER_CUE.finditer(before)]
    given = [m.end() for m in _SHOWN_CUE.finditer(before)]
    return bool(output) and (not given or output[-1] > given[-1])


def recovered_grids(problem: Problem, message: str) -> list[Grid]:
    """The expected output grids of ``problem`` that ``message`` reveals (see the module)."""
    targets = [g for g in problem.answer or [] if g and sum(map(len, g)) >= MIN_CELLS]
    if not targets:
        return []
    shown = [form for grid in _shown_grids(problem) for form in _spellings(grid)]
    text = fold(message).lower()
    found = [target for target in _edited_grids(problem, text) if target in targets]
    for reading in _readings(text):
        copies = _copies(reading, shown)
        for target in targets:
            if target not in found and _reveals(text, reading, target, copies):
                found.append(target)
    return found


def _edited_grids(problem: Problem, text: str) -> list[Grid]:
    """The expected outputs that the cell edits of ``text`` ("set (row,col) (5,20)->2,
    ...") make of their test inputs, rows and columns counted from 1 or from 0; one set
    of edits per "test N" part when there are several."""
    fields = problem.fields or {}
    pairs = [
        (given, target)
        for given, target in zip(
            fields.get("test_inputs") or [], problem.answer or [], strict=False
        )
        if given and target and _shape(given) == _shape(target) and given != target
    ]
    found: list[Grid] = []
    for edits in _edit_parts(text) if pairs else []:
        for (given, target), base in itertools.product(pairs, (1, 0)):
            if target not in found and _edited(given, edits, base) == target:
                found.append(target)
    return found


def _edit_parts(text: str) -> list[list[_Edit]]:
    """The cell edits ``(row, column, colour)`` of ``text``, as written, one list per part
    that a "test N" label starts (the whole text when it has none)."""
    parts: list[list[_Edit]] = [[]]
    labels = [m.start() for m in _TEST_LABEL.finditer(text)]
    label = 0
    for match in itertools.islice(_EDIT.finditer(text), MAX_EDITS):
        while label < len(labels) and labels[label] < match.start():
            parts.append([])
            label += 1
        parts[-1].append((int(match.group(1)), int(match.group(2)), int(match.group(3))))
    return [edits for edits in parts if edits]


def _edited(grid: Grid, edits: list[_Edit], base: int) -> Grid | None:
    """``grid`` with ``edits`` applied (rows and columns counted from ``base``), ``None``
    when one lies outside it."""
    edited = [list(row) for row in grid]
    for row, column, colour in edits:
        r, c = row - base, column - base
        if not (0 <= r < len(edited) and 0 <= c < len(edited[r])):
            return None
        edited[r][c] = colour
    return edited


def _shape(grid: Grid) -> list[int]:
    return [len(row) for row in grid]


def _copies(reading: _Cells, shown: list[tuple[str, Grid]]) -> list[_Copy]:
    """Where ``reading`` spells a grid of ``shown`` (``(cells, grid)`` spellings)."""
    cells, _, edges, boundary = reading
    return [
        (start, start + len(flat), grid)
        for flat, grid in shown
        for start in _occurrences(cells, edges, boundary, flat)
    ]


def _reveals(text: str, reading: _Cells, target: Grid, copies: list[_Copy]) -> bool:
    """Whether ``reading`` spells ``target`` (or its transpose) as more than a quoted
    shown grid somewhere."""
    cells, starts, edges, boundary = reading
    return any(
        _is_leak(text, starts, start, start + len(flat), grid, copies)
        for flat, grid in _spellings(target)
        for start in _occurrences(cells, edges, boundary, flat)
    )


def _is_leak(
    text: str, starts: list[int], begin: int, end: int, grid: Grid, copies: list[_Copy]
) -> bool:
    """Whether cells ``begin:end`` (spelling ``grid``) are more than a quoted shown grid."""
    inside = [(a, b, shown) for a, b, shown in copies if a <= begin and end <= b]
    if not inside:
        return True
    if any((a, b) == (begin, end) and shown == grid for a, b, shown in inside):
        return _presented_as_output(text, starts[begin])
    return False


def grid_leaked(problem: Problem, message: str) -> LeakVerdict:
    """``"leaked"`` when some expected output grid of ``problem`` is recovered from
    ``message`` (:func:`recovered_grids`), else ``"clean"``: every check here finishes."""
    return "leaked" if recovered_grids(problem, message) else "clean"
