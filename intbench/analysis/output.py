"""Writing analysis results: strict JSON, JSON lines and report tables."""

from __future__ import annotations

import json
import math
import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from intbench.metrics import Estimate
from intbench.report.tables import Table


def jsonable(value: Any) -> Any:
    """``value`` with estimates as dicts and NaN as ``None`` (strict JSON)."""
    if isinstance(value, Estimate):
        value = value.to_dict()
    if isinstance(value, dict):
        return {k: jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [jsonable(v) for v in value]
    if isinstance(value, float) and math.isnan(value):
        return None
    return value


def write_jsonl(path: Path, rows: Iterable[dict]) -> None:
    """Write rows as JSON lines (the whole file replaced at once)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(path.suffix + ".tmp")
    with open(tmp, "w", encoding="utf-8") as handle:
        for row in rows:
            handle.write(json.dumps(jsonable(row), ensure_ascii=False) + "\n")
    os.replace(tmp, path)


def write_table(directory: Path, table: Table) -> list[Path]:
    """``<name>.md`` and ``<name>.csv`` of ``table`` in ``directory``."""
    directory.mkdir(parents=True, exist_ok=True)
    paths = [directory / f"{table.name}.md", directory / f"{table.name}.csv"]
    paths[0].write_text(table.to_markdown(), encoding="utf-8")
    paths[1].write_text(table.to_csv(), encoding="utf-8")
    return paths


def read_jsonl(path: Path) -> list[dict]:
    rows = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip():
            try:
                rows.append(json.loads(line))
            except ValueError:
                continue  # a line cut short by an interrupted write
    return rows


def saved_analysis_tables(run_dirs: Iterable[Path], samples: int) -> list[Table]:
    """Tables of the analyses already saved under ``<run>/analysis/``, for the report."""
    from intbench.analysis.categorize import category_table, load_taxonomy
    from intbench.analysis.leakage_audit import leakage_summary, leakage_table

    tables = []
    for run in map(Path, run_dirs):
        folder = run / "analysis"
        if (folder / "leakage.jsonl").exists():
            tables.append(
                leakage_table(leakage_summary(read_jsonl(folder / "leakage.jsonl"), samples))
            )
        if (folder / "categorized.jsonl").exists() and (folder / "categories.json").exists():
            taxonomy = load_taxonomy(folder / "categories.json")
            tables.append(category_table(read_jsonl(folder / "categorized.jsonl"), taxonomy))
    return tables
