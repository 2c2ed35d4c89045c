"""``intbench report``: tables, figures and an HTML page from run directories."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from intbench.metrics import BOOTSTRAP_SAMPLES

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
    parser.add_argument(
        "--samples",
        type=int,
        default=BOOTSTRAP_SAMPLES,
        help=f"bootstrap resamples per confidence interval (default {BOOTSTRAP_SAMPLES})",
    )
    parser.set_defaults(func=run_report)


def run_report(args: argparse.Namespace) -> int:
    """Build the report and print a one-screen summary; 2 on unusable input."""
    from intbench.report import ReportError, generate_report

    if args.samples < 1:
        print("error: --samples must be at least 1", file=sys.stderr)
        return 2
    try:
        output = generate_report(args.dirs, args.out, samples=args.samples)
    except ReportError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(summary_text(output))
    return 0


def _line(cells: list[str], widths: list[int]) -> str:
    return "  ".join(c.ljust(w) for c, w in zip(cells, widths, strict=True)).rstrip()


def _grid(header: list[str], rows: list[list[str]]) -> list[str]:
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
    return [_line(header, widths), *(_line(r, widths) for r in rows)]


def _value(estimate: Any) -> str:
    value = estimate.value
    return "n/a" if value != value else f"{value:.2f}"  # NaN is the only value unequal to itself


def _clipped(rows: list[list[str]], name: str) -> list[list[str]]:
    if len(rows) <= SUMMARY_ROWS:
        return rows
    return [*rows[:SUMMARY_ROWS], [f"... {len(rows) - SUMMARY_ROWS} more rows in tables/{name}.md"]]


def summary_text(output: Any) -> str:
    """The terminal summary of a :class:`intbench.report.ReportOutput`."""
    runs, data = output.runs, output.data
    lines = [f"{len(runs.episodes)} episodes from {len(runs.sources)} file(s)"]
    if runs.skipped:
        lines.append(f"warning: skipped {runs.skipped} malformed line(s)")
    if runs.replaced:
        lines.append(f"{runs.replaced} earlier record(s) replaced by a retry of the same episode")
    for protocol, count in sorted(data.other_protocols.items()):
        lines.append(f"{count} {protocol} episode(s) are shown in the browser only")
    if data.monitor:
        rows = [
            [
                k.domain,
                k.teacher,
                k.condition,
                k.post,
                _value(s["phi"]),
                _value(s["tau_rel"]),
                _value(s["H"]),
                str(s["n_episodes"]),
                str(s["n_errors"]),
            ]
            for k, s in data.monitor.items()
        ]
        lines += ["", "monitor"]
        lines += _grid(
            ["domain", "teacher", "condition", "post", "φ", "τ_rel", "H", "n", "errors"],
            _pad(_clipped(rows, "monitor"), 9),
        )
    if data.feedback:
        rows = [
            [
                k.domain,
                k.student,
                k.teacher,
                k.mode,
                _value(s["acc@1"]),
                _value(s[f"acc@{k.k_max}"]),
                str(k.k_max),
                _value(s["auc"]),
                str(s["n_episodes"]),
                str(s["n_errors"]),
            ]
            for k, s in data.feedback.items()
        ]
        lines += ["", "feedback"]
        header = [
            "domain",
            "student",
            "teacher",
            "mode",
            "acc@1",
            "acc@K",
            "K",
            "AUC",
            "n",
            "errors",
        ]
        lines += _grid(header, _pad(_clipped(rows, "feedback"), 10))
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


def _pad(rows: list[list[str]], width: int) -> list[list[str]]:
    return [r + [""] * (width - len(r)) for r in rows]
