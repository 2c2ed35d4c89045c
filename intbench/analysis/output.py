"""Writing analysis results: strict JSON, JSON lines and report tables."""

from __future__ import annotations

import json
import math
import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from intbench.metrics import Estimate, Table


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
