"""``intbench report``: tables, figures and an HTML page from run directories."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from intbench.commands.checks import add_samples_option

SUMMARY_ROWS = 12  # rows per protocol in the terminal summary; the rest is in the files


def add_parser(subparsers: Any) -> None:
    """Register ``report DIR [DIR ...] [--out OUTDIR] [--samples N]``."""
    parser = subparsers.add_parser(
        "report",
        help="write tables, figures and report.html from run directories",
        description="Read the episodes of every run directory DIR (or of every run below it) and write "
        "tables/ (Markdown, CSV), figures/ (PNG) and report.html.",
    )
    parser.add_argument(
        "dirs", nargs="+", metavar="DIR", help="run directory (or its episodes file)"
    )
    parser.add_argument(
        "--out", default=None, metavar="OUTDIR", help="output directory (default: first DIR/report)"
    )
    add_samples_option(parser)
    parser.set_defaults(func=run_report, exit_without_teardown=True)


def run_report(args: argparse.Namespace) -> int:
    """Build the report and print a one-screen summary; 2 on unusable input."""
    from intbench.report import ReportError, generate_report

    if args.samples < 1:
        print("error: --samples must be at least 1", file=sys.stderr)
        return 2
    try:
        output = generate_report(
            args.dirs,
            args.out,
            samples=args.samples,
            progress=lambda line: print(f"report: {line}", file=sys.stderr, flush=True),
        )
    except ReportError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(summary_text(output))
    return 0


def summary_text(output: Any) -> str:
    """The terminal summary of a :class:`intbench.report.ReportOutput`: each table's headline."""
    runs, data = output.runs, output.data
    lines = [f"{len(runs.episodes)} episodes from {len(runs.sources)} file(s)"]
    for path, reason in runs.unreadable:
        lines.append(f"warning: skipped the run in {path}: {reason}")
    if runs.skipped:
        lines.append(f"warning: skipped {runs.skipped} malformed line(s)")
    if runs.replaced:
        lines.append(f"{runs.replaced} earlier record(s) replaced by a retry of the same episode")
    for protocol, count in sorted(data.other_protocols.items()):
        lines.append(f"{count} {protocol} episode(s) are shown in the browser only")
    for table in data.tables:
        if table.headline:
            lines += ["", table.headline_text(SUMMARY_ROWS)]
    lines.append("")
    if output.figures_skipped:
        lines.append(f"figures skipped: {output.figures_skipped}")
    else:
        lines.append(
            f"{len(output.figure_files)} figure(s) in {output.html_path.parent / 'figures'}"
        )
    lines.append(f"{len(output.table_files) // 2} table(s) in {output.html_path.parent / 'tables'}")
    lines.append(f"report: {output.html_path}")
    return "\n".join(lines)
