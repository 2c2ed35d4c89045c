"""Reports from run directories: tables, figures and a self-contained HTML page.

A run directory holds ``episodes.jsonl`` (one episode record per line) and
optionally ``config.json``.  :func:`build_report` reads any number of them and
writes ``tables/`` (Markdown and CSV), ``figures/`` (PNG; skipped without
matplotlib) and ``report.html`` into the output directory.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from intbench.metrics import BOOTSTRAP_SAMPLES
from intbench.records import Episode
from intbench.report.tables import ReportData, Table, summarize

logger = logging.getLogger(__name__)

EPISODES_FILE = "episodes.jsonl"
CONFIG_FILE = "config.json"
REQUIRED_FIELDS = ("protocol", "problem_id", "domain", "student")
MAX_REPORTED_LINE_NUMBERS = 5
# nested fields the report reads, with the types a record may hold there
SHAPES = {
    "config": dict,
    "baseline": (dict, type(None)),
    "intervention": (dict, type(None)),
    "attempts": list,
    "feedback": list,
}

__all__ = [
    "ReportError",
    "ReportOutput",
    "RunSource",
    "build_report",
    "generate_report",
    "load_episodes",
    "read_runs",
]


class ReportError(ValueError):
    """The input cannot make a report (missing directories, no episodes)."""


@dataclass
class RunSource:
    """One ``episodes.jsonl`` that was read, with what was kept and skipped."""

    path: Path
    episodes: int = 0
    skipped: int = 0
    config: dict | None = None


@dataclass
class LoadedRuns:
    """Episodes of all sources (duplicates resolved) and per-file counts."""

    episodes: list[dict]
    sources: list[RunSource]
    replaced: int = 0  # earlier records of an episode superseded by a later one (a retry)

    @property
    def skipped(self) -> int:
        return sum(s.skipped for s in self.sources)


def _episode_files(directory: Path) -> list[Path]:
    if directory.is_file():
        return [directory]
    if not directory.is_dir():
        raise ReportError(f"{directory}: no such directory")
    own = directory / EPISODES_FILE
    # a directory of runs works too: every episodes.jsonl below it is read
    return [own] if own.is_file() else sorted(directory.rglob(EPISODES_FILE))


def record_problem(record: object) -> str | None:
    """Why a parsed line is not a usable episode record, or ``None`` if it is."""
    if not isinstance(record, dict):
        return f"not a JSON object but {type(record).__name__}"
    missing = [k for k in REQUIRED_FIELDS if not record.get(k)]
    if missing:
        return f"missing {', '.join(missing)}"
    try:
        Episode.from_dict(record)  # unknown fields and newer schema versions
    except (TypeError, ValueError) as exc:
        return str(exc)
    for name, kinds in SHAPES.items():
        if name in record and not isinstance(record[name], kinds):
            return f"{name} has type {type(record[name]).__name__}"
    return None


def _read_file(path: Path) -> tuple[list[dict], RunSource]:
    source = RunSource(path)
    episodes, bad_lines, first_reason = [], [], ""
    with path.open(encoding="utf-8", errors="replace") as handle:
        for number, line in enumerate(handle, 1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
                reason = record_problem(record)
            except json.JSONDecodeError as exc:
                reason = f"invalid JSON ({exc.msg})"
            if reason:
                bad_lines.append(number)
                first_reason = first_reason or reason
                continue
            episodes.append(record)
    source.episodes, source.skipped = len(episodes), len(bad_lines)
    if bad_lines:
        shown = ", ".join(map(str, bad_lines[:MAX_REPORTED_LINE_NUMBERS]))
        more = "" if len(bad_lines) <= MAX_REPORTED_LINE_NUMBERS else ", ..."
        logger.warning(
            "%s: skipped %d malformed line(s) (line %s%s; first: %s)",
            path,
            len(bad_lines),
            shown,
            more,
            first_reason,
        )
    config_path = path.parent / CONFIG_FILE
    if config_path.is_file():
        try:
            source.config = json.loads(config_path.read_text(encoding="utf-8"))
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            logger.warning("%s: unreadable, ignored (%s)", config_path, exc)
    return episodes, source


def _identity(episode: dict) -> tuple:
    # episode ids are unique per draw but shared across teachers, so the
    # models and condition are part of what makes a record "the same episode"
    return (
        episode.get("episode_id"),
        episode["protocol"],
        episode["student"],
        episode.get("teacher"),
        episode.get("condition"),
    )


def read_runs(dirs: Sequence[str | Path]) -> LoadedRuns:
    """Read every ``episodes.jsonl`` of ``dirs``; malformed lines are skipped and counted.

    When one episode appears several times (a resumed run retried it), the
    last record wins.  Raises :class:`ReportError` for a missing directory or
    when no episodes are found at all.
    """
    if isinstance(dirs, (str, Path)):
        dirs = [dirs]
    if not dirs:
        raise ReportError("no run directories given")
    latest: dict[tuple, dict] = {}
    sources, total = [], 0
    for directory in map(Path, dirs):
        files = _episode_files(directory)
        if not files:
            raise ReportError(f"{directory}: no {EPISODES_FILE} found")
        for path in files:
            episodes, source = _read_file(path)
            sources.append(source)
            total += len(episodes)
            for episode in episodes:
                key = _identity(episode)
                latest.pop(key, None)  # re-insert so the order is that of the last record
                latest[key] = episode
    if not latest:
        names = ", ".join(str(s.path) for s in sources)
        raise ReportError(f"no episodes found in {names}")
    return LoadedRuns(list(latest.values()), sources, total - len(latest))


def load_episodes(dirs: Sequence[str | Path]) -> list[dict]:
    """All episode records of the run directories (see :func:`read_runs`)."""
    return read_runs(dirs).episodes


@dataclass
class ReportOutput:
    """What :func:`generate_report` wrote and the numbers behind it."""

    html_path: Path
    runs: LoadedRuns
    data: ReportData
    table_files: list[Path] = field(default_factory=list)
    figure_files: list[Path] = field(default_factory=list)
    figures_skipped: str | None = None  # why no figures were drawn


def _write_tables(tables: Iterable[Table], directory: Path) -> list[Path]:
    directory.mkdir(parents=True, exist_ok=True)
    written = []
    for table in tables:
        md, csv = directory / f"{table.name}.md", directory / f"{table.name}.csv"
        md.write_text(table.to_markdown(), encoding="utf-8")
        csv.write_text(table.to_csv(), encoding="utf-8")
        written += [md, csv]
    return written


def generate_report(
    dirs: Sequence[str | Path], out_dir: str | Path | None = None, samples: int = BOOTSTRAP_SAMPLES
) -> ReportOutput:
    """Read the runs and write tables, figures and ``report.html`` into ``out_dir``.

    ``out_dir`` defaults to ``<first dir>/report``; ``samples`` is the number
    of bootstrap resamples behind every CI.
    """
    from intbench.report import figures, html

    runs = read_runs(dirs)
    first = Path(dirs[0] if not isinstance(dirs, (str, Path)) else dirs)
    out = (
        Path(out_dir)
        if out_dir is not None
        else (first.parent if first.is_file() else first) / "report"
    )
    out.mkdir(parents=True, exist_ok=True)
    data = summarize(runs.episodes, samples=samples)
    from intbench.analysis.output import saved_analysis_tables

    data.tables.extend(
        saved_analysis_tables([dirs] if isinstance(dirs, (str, Path)) else dirs, samples)
    )
    table_files = _write_tables(data.tables, out / "tables")
    rendered, skipped = figures.render_all(data, runs.episodes, out / "figures")
    html_path = html.write_html(out / "report.html", runs, data, rendered, skipped)
    return ReportOutput(html_path, runs, data, table_files, [f.path for f in rendered], skipped)


def build_report(
    dirs: Sequence[str | Path], out_dir: str | Path | None = None, samples: int = BOOTSTRAP_SAMPLES
) -> Path:
    """Write the full report (see :func:`generate_report`) and return the HTML path."""
    return generate_report(dirs, out_dir, samples).html_path
