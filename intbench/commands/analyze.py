"""``intbench analyze leakage|categorize DIR --judge SPEC``: LLM analyses of a finished run."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from intbench.commands.checks import add_samples_option
from intbench.rundir import RunDir


def add_parser(subparsers: Any) -> None:
    """Register ``analyze leakage DIR`` and ``analyze categorize DIR``."""
    parser = subparsers.add_parser(
        "analyze",
        help="LLM analyses of a run: leakage audit, intervention categories",
        description="Ask a judge model about every teacher message of a run directory and write "
        "the results to DIR/analysis/. Judge answers are cached, so re-runs are cheap.",
    )
    kinds = parser.add_subparsers(dest="analysis", required=True)
    leakage = kinds.add_parser(
        "leakage",
        help="does each message give the solution away? leak rate per teacher",
        description="Writes leakage.jsonl, leakage_summary.json and leakage_audit.md/.csv.",
    )
    categorize = kinds.add_parser(
        "categorize",
        help="label, cluster and relabel the messages by functional role and solution leakage "
        "(Table 1)",
        description="Writes categories.json, categorized.jsonl, intervention_role.md/.csv and "
        "intervention_leakage.md/.csv.",
    )
    for sub in (leakage, categorize):
        sub.add_argument("dir", metavar="DIR", help="run directory (as intbench eval writes it)")
        sub.add_argument(
            "--judge", required=True, metavar="SPEC", help="judge model spec, e.g. smollm2"
        )
        sub.add_argument(
            "--batch-size", type=int, default=16, help="prompts per model call (default 16)"
        )
        sub.add_argument(
            "--cache",
            default=None,
            metavar="DIR",
            help="judge answer cache (default $INTBENCH_CACHE)",
        )
    add_samples_option(leakage)
    categorize.add_argument(
        "--taxonomy",
        default=None,
        metavar="FILE",
        help="use these taxonomies instead of clustering: a JSON file (an earlier "
        "categories.json works) or 'paper' for the categories of Int-Bench Table 1",
    )
    categorize.add_argument(
        "--max-labels",
        type=int,
        default=200,
        help="most frequent explanations sent to each clustering prompt (default 200)",
    )
    leakage.set_defaults(func=run_analyze)
    categorize.set_defaults(func=run_analyze)


def run_analyze(args: argparse.Namespace) -> int:
    """Run the chosen analysis and print its table; 2 on unusable input."""
    from intbench.analysis import (
        AnalysisError,
        load_taxonomy,
        run_categorization,
        run_leakage_audit,
    )
    from intbench.cache import JsonCache

    if args.batch_size < 1:
        return _fail("--batch-size must be at least 1")
    run = RunDir(args.dir)
    if not run.has_episodes():
        return _fail(f"{args.dir} is not a run directory (no {run.episodes_path.name})")
    cache = JsonCache("analysis", root=args.cache) if args.cache else None
    try:
        if args.analysis == "leakage":
            if args.samples < 1:
                return _fail("--samples must be at least 1")
            audit = run_leakage_audit(
                args.dir, args.judge, cache=cache, batch_size=args.batch_size, samples=args.samples
            )
            everyone = audit.summary.get("all", {})
            print(f"{len(audit.rows)} teacher message(s) from {audit.n_episodes} episode(s); "
                  f"{everyone.get('n_unreadable', 0)} unreadable judge reply(ies), "
                  f"{everyone.get('n_errors', 0)} judge error(s); "
                  f"{audit.judge_calls} judge call(s)")  # fmt: skip
            tables, files, skipped = [audit.table], audit.files, audit.n_error_episodes
        else:
            if args.max_labels < 1:
                return _fail("--max-labels must be at least 1")
            taxonomy = load_taxonomy(args.taxonomy) if args.taxonomy else None
            categorized = run_categorization(
                args.dir, args.judge, taxonomy=taxonomy, cache=cache,
                batch_size=args.batch_size, max_labels=args.max_labels,
            )  # fmt: skip
            rows, taxonomies = categorized.result.rows, categorized.result.taxonomies
            parts = [
                f"{len(taxonomies[d])} {d} categories, "
                f"{sum(1 for r in rows if r[f'{d}_category'] is None)} uncategorised"
                for d in taxonomies
            ]
            print(f"{len(rows)} teacher message(s): {'; '.join(parts)}; "
                  f"{categorized.judge_calls} judge call(s)")  # fmt: skip
            tables, files = categorized.tables, categorized.files
            skipped = categorized.n_error_episodes
    except AnalysisError as exc:
        return _fail(str(exc))
    if skipped:
        print(f"{skipped} episode(s) with a model or grader error were left out")
    for table in tables:
        print()
        print(table.to_markdown())
    print("wrote " + ", ".join(str(f) for f in files))
    return 0


def _fail(message: str) -> int:
    print(f"error: {message}", file=sys.stderr)
    return 2
