"""Reports from run directories: tables, figures and a self-contained HTML page.

A run directory (:class:`~intbench.rundir.RunDir`) holds one episode record
per line and optionally the run's config.  :func:`build_report` reads any number of them and
writes ``tables/`` (Markdown and CSV), ``figures/`` (PNG; skipped without
matplotlib) and ``report.html`` into the output directory.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from intbench.metrics import BOOTSTRAP_SAMPLES
from intbench.records import Episode
from intbench.report.tables import ReportData, Table, summarize
from intbench.rundir import EPISODES_FILE, RunDir, record_problem

logger = logging.getLogger(__name__)

__all__ = [
    "ReportError",
    "ReportOutput",
    "RunSource",
    "build_report",
    "generate_report",
    "load_episodes",
    "read_runs",
    "record_problem",
]


class ReportError(ValueError):
    """The input cannot make a report (missing directories, no episodes)."""


@dataclass
class RunSource:
    """One run directory's episodes file that was read, with what was kept and skipped."""

    path: Path
    episodes: int = 0
    skipped: int = 0
    config: dict | None = None


@dataclass
class LoadedRuns:
    """Episodes of all sources (duplicates resolved) and per-file counts."""

    episodes: list[Episode]
    sources: list[RunSource]
    replaced: int = 0  # earlier records of an episode superseded by a later one (a retry)

    @property
    def skipped(self) -> int:
        return sum(s.skipped for s in self.sources)


def _identity(episode: Episode) -> tuple:
    # episode ids are unique per draw but shared across teachers, so the
    # models and condition are part of what makes a record "the same episode"
    return (
        episode.episode_id,
        episode.protocol,
        episode.student,
        episode.teacher,
        episode.condition,
    )


def read_runs(dirs: Sequence[str | Path]) -> LoadedRuns:
    """Read the episodes of every run directory in (or below) ``dirs``; malformed lines are
    skipped and counted.

    When one episode appears several times (a resumed run retried it), the
    last record wins.  Raises :class:`ReportError` for a missing directory or
    when no episodes are found at all.
    """
    if isinstance(dirs, (str, Path)):
        dirs = [dirs]
    if not dirs:
        raise ReportError("no run directories given")
    latest: dict[tuple, Episode] = {}
    sources, total = [], 0
    for directory in map(Path, dirs):
        if not directory.exists():
            raise ReportError(f"{directory}: no such directory")
        runs = RunDir.below(directory)
        if not runs:
            raise ReportError(f"{directory}: no {EPISODES_FILE} found")
        for run in runs:
            read = run.read()
            sources.append(RunSource(read.path, len(read.episodes), read.skipped, run.config()))
            total += len(read.episodes)
            for episode in read.episodes:
                key = _identity(episode)
                latest.pop(key, None)  # re-insert so the order is that of the last record
                latest[key] = episode
    if not latest:
        names = ", ".join(str(s.path) for s in sources)
        raise ReportError(f"no episodes found in {names}")
    return LoadedRuns(list(latest.values()), sources, total - len(latest))


def load_episodes(dirs: Sequence[str | Path]) -> list[Episode]:
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
    from intbench.analysis.saved_tables import saved_analysis_tables

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
