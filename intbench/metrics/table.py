"""The one table type every metric is shown in: Markdown, CSV, HTML and the terminal."""

from __future__ import annotations

import csv
import io
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from intbench.metrics.estimate import Estimate

GroupKey = TypeVar("GroupKey", bound=tuple)  # a metric's group key (a NamedTuple)

TEXT_WIDTH = 100  # wider tables print one block per row, as psql's expanded display


@dataclass
class Table:
    """A titled table whose cells are numbers, strings, ``None`` or :class:`Estimate`.

    ``name`` is the file stem of its Markdown and CSV files.  ``ids`` are ASCII
    column names for the CSV header (the labels if ``None``); ``headline``
    names, by id, the columns of the one-screen terminal summary (the table is
    left out of it if ``None``).
    """

    name: str
    title: str
    columns: list[str]
    rows: list[list[Any]]
    note: str = ""
    ids: list[str] | None = None
    headline: list[str] | None = None

    def __post_init__(self) -> None:
        if self.ids is not None and len(self.ids) != len(self.columns):
            raise ValueError(
                f"table {self.name}: {len(self.ids)} ids for {len(self.columns)} columns"
            )
        unknown = set(self.headline or ()) - set(self.column_ids)
        if unknown:
            raise ValueError(f"table {self.name}: headline names unknown ids {sorted(unknown)}")

    @classmethod
    def of_groups(
        cls,
        name: str,
        title: str,
        keys: Sequence[str],
        groups: Mapping[GroupKey, Mapping[str, Any]],
        estimates: Mapping[str, str],
        counts: Mapping[str, str],
        note: str,
        headline: list[str],
    ) -> Table:
        """One row per group: its key fields, its ``estimates`` (summary key -> label), its
        ``counts`` (column -> summary key).  Estimates' CSV ids are their summary keys."""
        columns = [*keys, *estimates.values(), *counts]
        ids = [*keys, *estimates, *counts]
        rows = [
            [*key, *(s[e] for e in estimates), *(s[c] for c in counts.values())]
            for key, s in groups.items()
        ]
        return cls(name, title, columns, rows, note, ids=ids, headline=headline)

    @property
    def column_ids(self) -> list[str]:
        return self.ids or self.columns

    def to_markdown(self) -> str:
        """A GitHub-flavoured Markdown table (estimates as ``value [low, high]``)."""
        lines = [f"### {self.title}", ""]
        if self.note:
            lines += [self.note, ""]
        lines.append("| " + " | ".join(self.columns) + " |")
        lines.append("|" + "---|" * len(self.columns))
        for row in self.rows:
            lines.append("| " + " | ".join(format_cell(c).replace("|", "\\|") for c in row) + " |")
        return "\n".join(lines) + "\n"

    def to_csv(self) -> str:
        """CSV text; an estimate column ``c`` becomes ``c``, ``c_low``, ``c_high``."""
        estimate_cols = {
            i
            for i in range(len(self.columns))
            if any(isinstance(r[i], Estimate) for r in self.rows)
        }
        header: list[str] = []
        for i, name in enumerate(self.column_ids):
            header += [name, f"{name}_low", f"{name}_high"] if i in estimate_cols else [name]
        buffer = io.StringIO()
        writer = csv.writer(buffer, lineterminator="\n")
        writer.writerow(header)
        for row in self.rows:
            out: list[str] = []
            for i, cell in enumerate(row):
                if i in estimate_cols:
                    est = cell if isinstance(cell, Estimate) else Estimate(math.nan)
                    out += [_csv_number(est.value), _csv_number(est.low), _csv_number(est.high)]
                elif isinstance(cell, float):
                    out.append(_csv_number(cell))
                else:
                    out.append("" if cell is None else str(cell))
            writer.writerow(out)
        return buffer.getvalue()

    def to_text(self, width: int = TEXT_WIDTH) -> str:
        """Plain text for the terminal: aligned columns, or one block per row when wider than ``width``."""
        cells = [[format_cell(c) for c in row] for row in self.rows]
        lines = [self.title]
        grid = _grid(self.columns, cells)
        if max(len(line) for line in grid) <= width:
            lines += grid
        else:
            label_width = max(len(c) for c in self.columns)
            for number, row in enumerate(cells, 1):
                lines.append(f"-[ {number} ]" + "-" * max(0, label_width - 4))
                lines += [
                    f"{c.ljust(label_width)}  {v}" for c, v in zip(self.columns, row, strict=True)
                ]
        if not self.rows:
            lines.append("(no rows)")
        if self.note:
            lines.append(self.note)
        return "\n".join(lines)

    def headline_text(self, max_rows: int) -> str:
        """The headline columns as aligned text, point values only, at most ``max_rows`` rows."""
        picked = [self.column_ids.index(i) for i in self.headline or ()]
        rows = [[_point(row[i]) for i in picked] for row in self.rows[:max_rows]]
        lines = [f"{self.title} (tables/{self.name}.md)"]
        lines += _grid([self.columns[i] for i in picked], rows)
        if len(self.rows) > max_rows:
            lines.append(f"... {len(self.rows) - max_rows} more rows")
        return "\n".join(lines)


def format_cell(cell: Any) -> str:
    """How a cell reads in Markdown, HTML and the terminal."""
    if cell is None:
        return "—"
    if isinstance(cell, Estimate):
        return str(cell)
    if isinstance(cell, float):
        return "n/a" if math.isnan(cell) else f"{cell:.3f}"
    return str(cell)


def slug(text: str) -> str:
    """``text`` reduced to a file-name-safe stem."""
    return "".join(ch if ch.isalnum() else "_" for ch in text).strip("_") or "x"


def _point(cell: Any) -> str:
    # the terminal summary is a glance: two decimals, intervals are in the files
    value = cell.value if isinstance(cell, Estimate) else cell
    if isinstance(value, float):
        return "n/a" if math.isnan(value) else f"{value:.2f}"
    return format_cell(value)


def _grid(header: list[str], rows: list[list[str]]) -> list[str]:
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
    return [
        "  ".join(c.ljust(w) for c, w in zip(line, widths, strict=True)).rstrip()
        for line in [header, *rows]
    ]


def _csv_number(value: float) -> str:
    # empty rather than "nan": spreadsheets and pandas read it as missing
    return "" if value is None or math.isnan(value) else repr(float(value))
