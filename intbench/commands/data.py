"""``intbench data``: list the problem sources and show single problems."""

from __future__ import annotations

import argparse
import json
import sys
import textwrap
from typing import Any

from intbench.envs.domains import (
    DEFAULT_PROCEDURAL_N,
    DataSourceError,
    HubUnavailableError,
    domain_names,
    get_domain,
    load_problems,
)
from intbench.records import Problem

PREVIEW_CHARS = 600  # long solutions/fields are cut in `show` so a problem fits on a screen


def add_parser(subparsers: Any) -> None:
    """Register ``data list`` and ``data show``."""
    parser = subparsers.add_parser("data", help="list problem sources and show problems")
    actions = parser.add_subparsers(dest="data_command", required=True)

    listing = actions.add_parser("list", help="domains x sources with problem counts")
    listing.set_defaults(func=run_list)

    show = actions.add_parser("show", help="print one problem readably")
    show.add_argument("domain", help=f"one of {', '.join(domain_names())}")
    show.add_argument("index", nargs="?", type=int, default=0, help="problem number (default 0)")
    show.add_argument(
        "--source", default="offline", help="offline (default), hub, or a JSONL/JSON/Parquet path"
    )
    show.add_argument("--split", default=None, help="split of the source (default: all)")
    show.add_argument("--seed", type=int, default=0, help="generator seed (default 0)")
    show.add_argument("--json", action="store_true", help="print the problem as JSON")
    show.set_defaults(func=run_show)


def _offline_rows(domain) -> list[list[str]]:
    if domain.procedural:
        note = f"generated on demand (default {DEFAULT_PROCEDURAL_N})"
        return [[domain.name, "offline", split, "any", note] for split in domain.offline_splits]
    if domain.offline_needs_build is not None and domain.offline_needs_build():
        note = "built and cached on first load (about a minute)"
        return [[domain.name, "offline", split, "?", note] for split in domain.offline_splits]
    return [
        [
            domain.name,
            "offline",
            split,
            str(len(load_problems(domain.name, split=split))),
            domain.offline_source,
        ]
        for split in domain.offline_splits
    ]


def _hub_rows(domain) -> list[list[str]]:
    confirmed = "" if domain.hub_schema_confirmed else ", schema unconfirmed"
    return [
        [domain.name, "hub", split, "-", f"{ref.describe()} (needs network{confirmed})"]
        for split, ref in domain.hub.items()
    ]


def _table(rows: list[list[str]], header: list[str]) -> str:
    widths = [max(len(row[i]) for row in [header, *rows]) for i in range(len(header) - 1)]

    def line(row: list[str]) -> str:
        return "  ".join(
            [*(cell.ljust(w) for cell, w in zip(row[:-1], widths, strict=True)), row[-1]]
        ).rstrip()

    return "\n".join([line(header), line(["-" * w for w in widths] + ["-" * 5]), *map(line, rows)])


def run_list(args: argparse.Namespace) -> int:
    """Print every domain's offline and hub sources with counts per split."""
    rows: list[list[str]] = []
    for name in domain_names():
        domain = get_domain(name)
        try:
            rows += _offline_rows(domain)
        except Exception as exc:  # a broken optional package must not hide the other rows
            rows.append([name, "offline", "-", "-", f"unavailable: {type(exc).__name__}: {exc}"])
        rows += _hub_rows(domain)
    print(_table(rows, ["domain", "source", "split", "count", "notes"]))
    print(
        "\nAny source also accepts a local JSONL/JSON/Parquet file in the hub schema: --source PATH"
    )
    return 0


def _preview(value: Any) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    if len(text) > PREVIEW_CHARS:
        text = text[:PREVIEW_CHARS] + f"... [{len(text) - PREVIEW_CHARS} more characters]"
    return text


def _section(title: str, body: str) -> str:
    return f"== {title} ==\n{body.rstrip()}\n"


def format_problem(problem: Problem) -> str:
    """A readable multi-section rendering of a problem."""
    parts = [
        _section("problem", f"{problem.id}  (domain {problem.domain})"),
        _section("question", problem.question),
    ]
    if problem.answer is not None:
        parts.append(_section("answer", _preview(problem.answer)))
    if problem.solution:
        parts.append(_section("solution", _preview(problem.solution)))
    if problem.tests:
        tests = problem.tests
        cases = tests.get("cases", [])
        summary = [f"kind: {tests.get('kind')}, {len(cases)} case(s)"]
        summary += [
            f"{key}: {tests[key]}"
            for key in ("entry_point", "time_limit_s", "memory_limit_mb")
            if key in tests
        ]
        if cases:
            first = cases[0]
            shown = (
                first["code"]
                if "code" in first
                else f"input:\n{first.get('input')}\noutput:\n{first.get('output')}"
            )
            summary.append("first case:\n" + textwrap.indent(_preview(shown), "  "))
        parts.append(_section("tests", "\n".join(summary)))
    for key, value in problem.fields.items():
        parts.append(_section(f"fields.{key}", _preview(value)))
    meta = "\n".join(f"{key}: {value}" for key, value in problem.metadata.items())
    parts.append(_section("metadata", meta))
    return "\n".join(parts)


def run_show(args: argparse.Namespace) -> int:
    """Print problem number ``args.index`` of a domain/source."""
    try:
        domain = get_domain(args.domain)
        n = None
        if args.source == "offline" and domain.procedural:
            n = max(DEFAULT_PROCEDURAL_N, args.index + 1)
        problems = load_problems(domain.name, args.source, split=args.split, n=n, seed=args.seed)
    except (DataSourceError, HubUnavailableError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if not 0 <= args.index < len(problems):
        print(
            f"error: index {args.index} out of range: {len(problems)} problem(s) loaded",
            file=sys.stderr,
        )
        return 2
    problem = problems[args.index]
    if args.json:
        print(json.dumps(problem.to_dict(), ensure_ascii=False, indent=2))
    else:
        print(format_problem(problem))
    return 0
