"""Reading back the analyses saved under ``<run>/analysis/``, as report tables."""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path

from intbench.analysis.categorize import BY_NAME, category_table, load_taxonomy
from intbench.analysis.leakage_audit import leakage_summary, leakage_table
from intbench.metrics import Table


def read_jsonl(path: Path) -> list[dict]:
    """The rows of a JSON-lines file, skipping a line cut short by an interrupted write."""
    rows = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip():
            try:
                rows.append(json.loads(line))
            except ValueError:
                continue
    return rows


def saved_analysis_tables(run_dirs: Iterable[str | Path], samples: int) -> list[Table]:
    """Tables of the analyses already saved under ``<run>/analysis/``, for the report."""
    tables = []
    for run in map(Path, run_dirs):
        folder = run / "analysis"
        if (folder / "leakage.jsonl").exists():
            tables.append(
                leakage_table(leakage_summary(read_jsonl(folder / "leakage.jsonl"), samples))
            )
        if (folder / "categorized.jsonl").exists() and (folder / "categories.json").exists():
            saved = json.loads((folder / "categories.json").read_text(encoding="utf-8"))
            if "dimensions" not in saved:
                continue  # written before the two-dimension categorisation: rerun it
            taxonomies = load_taxonomy(folder / "categories.json")
            rows = read_jsonl(folder / "categorized.jsonl")
            tables += [category_table(rows, taxonomies[d], d) for d in BY_NAME if d in taxonomies]
    return tables
