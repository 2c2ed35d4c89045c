"""Reports from run directories: tables, figures and a self-contained HTML page.

A run directory (:class:`~intbench.rundir.RunDir`) holds one episode record
per line and optionally the run's config.  :func:`build_report` reads any number of them and
writes ``tables/`` (Markdown and CSV), ``figures/`` (PNG; skipped without
matplotlib) and ``report.html`` into the output directory.
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from intbench.metrics import BOOTSTRAP_SAMPLES, Summary, Table, summarize
from intbench.report.runs import LoadedRuns, ReportError, RunSource, load_episodes, read_runs
from intbench.run_summary import summary_table
from intbench.rundir import record_problem

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


@dataclass
class ReportOutput:
    """What :func:`generate_report` wrote and the numbers behind it."""

    html_path: Path
    runs: LoadedRuns
    data: Summary
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
    dirs: Sequence[str | Path],
    out_dir: str | Path | None = None,
    samples: int = BOOTSTRAP_SAMPLES,
    progress: Callable[[str], None] | None = None,
) -> ReportOutput:
    """Read the runs and write tables, figures and ``report.html`` into ``out_dir``.

    ``out_dir`` defaults to ``<first dir>/report``; ``samples`` is the number
    of bootstrap resamples behind every CI.  ``progress`` gets a line as each
    phase starts and ends (with its time), for commands that show them.
    """
    from intbench.report import figures, html

    phase = _Phases(progress)
    with phase("reading the runs"):
        runs = read_runs(dirs)
    first = Path(dirs[0] if not isinstance(dirs, (str, Path)) else dirs)
    out = (
        Path(out_dir)
        if out_dir is not None
        else (first.parent if first.is_file() else first) / "report"
    )
    out.mkdir(parents=True, exist_ok=True)
    with phase(f"metrics of {len(runs.episodes)} episodes, {samples} bootstrap resamples per CI"):
        data = summarize(runs.episodes, samples=samples)
        from intbench.analysis.saved_tables import saved_analysis_tables

        data.tables.extend(
            saved_analysis_tables([dirs] if isinstance(dirs, (str, Path)) else dirs, samples)
        )
    summaries = {str(s.path.parent): s.summary for s in runs.sources if s.summary}
    if summaries:
        data.tables.append(summary_table(summaries))
    with phase(f"writing {len(data.tables)} tables"):
        table_files = _write_tables(data.tables, out / "tables")
    with phase("drawing the figures"):
        rendered, skipped = figures.render_all(data, runs.episodes, out / "figures")
    with phase("writing report.html"):
        html_path = html.write_html(out / "report.html", runs, data, rendered, skipped)
    return ReportOutput(html_path, runs, data, table_files, [f.path for f in rendered], skipped)


class _Phases:
    """``with phase(name):`` reports ``name ...`` and then ``name: 1.2 s``."""

    def __init__(self, report: Callable[[str], None] | None):
        self.report = report

    @contextlib.contextmanager
    def __call__(self, name: str) -> Iterator[None]:
        if self.report is None:
            yield
            return
        self.report(f"{name} ...")
        started = time.perf_counter()
        yield
        self.report(f"{name}: {time.perf_counter() - started:.1f} s")


def build_report(
    dirs: Sequence[str | Path], out_dir: str | Path | None = None, samples: int = BOOTSTRAP_SAMPLES
) -> Path:
    """Write the full report (see :func:`generate_report`) and return the HTML path."""
    return generate_report(dirs, out_dir, samples).html_path
