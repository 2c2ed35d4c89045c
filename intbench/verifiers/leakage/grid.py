"""Grid leaks (ARC): the expected output grid written out in any layout.

A grid is the sequence of its rows; the message leaks one when every row's
cells appear, in order, as consecutive digits of the message's digit stream
(everything but the digits is dropped, so nested lists, JSON, ``7 0 7`` rows,
``7,0,7`` rows and newline grids all read the same, and row labels such as
"row 2:" may stand between rows).  Grids of fewer than
:data:`MIN_CELLS` cells are skipped: they occur by chance in any message
with numbers.  Linear in the message's length per grid row.
"""

from __future__ import annotations

import re

from intbench.records import Problem
from intbench.verifiers.leakage.notation import fold

MIN_CELLS = 4


def _rows_in_order(rows: list[str], digits: str) -> bool:
    position = 0
    for row in rows:
        found = digits.find(row, position)
        if found < 0:
            return False
        position = found + len(row)
    return True


def grid_leaked(problem: Problem, message: str) -> bool:
    """Whether some expected output grid of ``problem`` is written out in ``message``."""
    digits = re.sub(r"[^0-9]", "", fold(message))
    for grid in problem.answer or []:
        rows = ["".join(str(cell) for cell in row) for row in grid]
        if sum(len(row) for row in rows) >= MIN_CELLS and _rows_in_order(rows, digits):
            return True
    return False
