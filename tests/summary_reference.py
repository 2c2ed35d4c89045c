"""Figures of :func:`intbench.metrics.summarize` on fixed records, as stored in
``tests/data/summary_reference.json``; ``test_summary_reference.py`` holds the
code to them.  The stored file was written by the per-statistic bootstrap that
preceded the array-based summary (commit 4278c8a, by the command below).

    python -m tests.summary_reference   # writes the figures of the code checked out
"""

from __future__ import annotations

import json
import math
import tempfile
from pathlib import Path

from intbench.metrics import Estimate, summarize
from tests import report_records, synthetic_runs

STORED = Path(__file__).parent / "data" / "summary_reference.json"


def datasets() -> dict[str, list]:
    """Every record set the stored figures cover: recorded env runs and synthetic runs."""
    with tempfile.TemporaryDirectory() as cache:
        recorded = [
            *report_records.monitor_records(Path(cache) / "m"),
            *report_records.feedback_records(Path(cache) / "f"),
        ]
    return {
        "recorded_env_runs": recorded,
        "synthetic_128": synthetic_runs.all_records(128, seed=0),
        "synthetic_40_seed1": synthetic_runs.all_records(40, seed=1),
    }


def _cell(cell):
    if isinstance(cell, Estimate):
        return {"estimate": [_number(cell.value), _number(cell.low), _number(cell.high), cell.n]}
    if isinstance(cell, float):
        return _number(cell)
    if isinstance(cell, (list, tuple)):
        return [_cell(c) for c in cell]
    return cell if isinstance(cell, (int, str, type(None), bool)) else str(cell)


def _number(value: float):
    return "nan" if math.isnan(value) else value  # JSON has no NaN


def snapshot(records: list) -> dict:
    """Every table cell and every group summary of ``summarize(records)``, full precision."""
    summary = summarize(records)
    groups = {}
    for protocol in ("monitor", "feedback", "tutor"):
        for key, values in getattr(summary, protocol).items():
            groups[f"{protocol} {'|'.join(map(str, key))}"] = {
                name: _cell(value) for name, value in values.items()
            }
    tables = {
        table.name: [[_cell(c) for c in row] for row in table.rows] for table in summary.tables
    }
    return {"groups": groups, "tables": tables, "text": summary.to_text()}


if __name__ == "__main__":
    STORED.parent.mkdir(exist_ok=True)
    figures = {name: snapshot(records) for name, records in datasets().items()}
    STORED.write_text(json.dumps(figures, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"wrote {STORED}")
