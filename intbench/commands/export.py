"""``intbench export``: run directories as a Hugging Face dataset with a dataset card."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from intbench.commands.checks import UsageError, add_samples_option, check_count


def add_parser(subparsers: Any) -> None:
    """Register ``export RUN [RUN ...] --out DIR [--push-to-hub REPO]``."""
    parser = subparsers.add_parser(
        "export",
        help="write runs as a Hugging Face dataset (one row per episode) with a dataset card",
        description="Write the episodes of every RUN (a run directory, its episodes file, or a "
        "folder of runs) to DIR as one 'train' split: one row per episode, the columns people "
        "filter on flattened, the whole record as JSON. DIR/data/*.parquet is what "
        "datasets.load_dataset(DIR) and the hub read; DIR/train/ holds the same rows for "
        "datasets.load_from_disk(DIR). DIR/README.md is the dataset card: the columns, the "
        "problems' sources and licences, each run's config, the report's metric tables and the "
        "papers to cite.",
    )
    parser.add_argument(
        "runs", nargs="+", metavar="RUN", help="run directory (or its episodes file)"
    )
    parser.add_argument(
        "--out", required=True, type=Path, metavar="DIR", help="new or empty output directory"
    )
    parser.add_argument(
        "--push-to-hub",
        default=None,
        metavar="REPO",
        help="then upload DIR to the hub dataset repo REPO (user-or-org/name, created if "
        "missing); needs `hf auth login` or HF_TOKEN",
    )
    parser.add_argument(
        "--private", action="store_true", help="create the hub repo private (with --push-to-hub)"
    )
    add_samples_option(parser, " in the card")
    parser.set_defaults(func=run_export, exit_without_teardown=True)


def run_export(args: argparse.Namespace) -> int:
    """Check everything, then write the dataset (and push it); 1 when only the push failed."""
    from intbench import export

    check_count("--samples", args.samples)
    try:
        runs = export.find_runs(args.runs)
        export.check_out(args.out)
        if args.push_to_hub:
            export.check_hub(args.push_to_hub)
    except export.ExportInputError as exc:
        raise UsageError(str(exc)) from None
    read = export.read_runs(runs)
    if not any(run.episodes for run in read):
        names = ", ".join(str(run.run.episodes_path) for run in read)
        raise UsageError(f"no episodes in {names}; export runs that have finished episodes")
    result = export.export_runs(read, args.out, samples=args.samples, repo=args.push_to_hub)
    print(f"{result.rows} episode(s) of {len(result.runs)} run(s) in {result.path}")
    for run in result.runs:
        print(f"  {run.name}: {len(run.episodes)} episode(s) ({run.env_id or 'unknown env'})")
    print(f"dataset card: {result.card_path}")
    if args.push_to_hub:
        try:
            url = export.push_to_hub(result.path, args.push_to_hub, private=args.private)
        except export.HubPushError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 1
        print(f"pushed to {url}")
    return 0
