"""Batched vs per-test sandboxing: 16 test cases of one small problem.

Batched: all 16 cases in one sandboxed process (what the code verifier does).
Per-test: a fresh sandboxed process for every case.  Both run side by side
in one invocation, alternating, and the median of several repeats is kept.

    python benchmarks/sandbox_batching.py [--repeats 5] [--out benchmarks/results/sandbox_batching.md]
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import time
from pathlib import Path

from intbench.verifiers.sandbox import isolation_level, run_program

PROGRAM = (
    "import sys\nnums = list(map(int, sys.stdin.read().split()))\nprint(sum(nums), max(nums))\n"
)
CASES = [{"input": " ".join(str(i * j) for j in range(1, 50))} for i in range(1, 17)]


def _timed(fn) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def _batched() -> None:
    run = run_program(PROGRAM, CASES)
    assert all(o.status == "ok" for o in run.outcomes), run


def _per_test() -> None:
    for case in CASES:
        run = run_program(PROGRAM, [case])
        assert run.outcomes[0].status == "ok", run


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--out", type=Path, default=None, help="also write a markdown report here")
    args = parser.parse_args()

    level = isolation_level()
    _batched()  # warm-up: page cache, isolation probe
    batched, per_test = [], []
    for _ in range(args.repeats):
        batched.append(_timed(_batched))
        per_test.append(_timed(_per_test))
    b, p = statistics.median(batched), statistics.median(per_test)
    lines = [
        "# Sandbox batching benchmark",
        "",
        f"- command: `python benchmarks/sandbox_batching.py --repeats {args.repeats}`",
        f"- machine: {platform.machine()}, {os.cpu_count()} CPUs, Python {platform.python_version()}",
        f"- isolation level: `{level}`; {len(CASES)} stdio test cases; median of {args.repeats} repeats",
        "",
        "| mode | seconds for 16 cases | per case (ms) |",
        "|---|---|---|",
        f"| batched (one sandbox) | {b:.3f} | {1000 * b / len(CASES):.1f} |",
        f"| one sandbox per case | {p:.3f} | {1000 * p / len(CASES):.1f} |",
        "",
        f"**per-case / batched = {p / b:.1f}x**",
        "",
        f"raw batched: {[round(x, 3) for x in batched]}",
        f"raw per-case: {[round(x, 3) for x in per_test]}",
    ]
    report = "\n".join(lines) + "\n"
    print(report)
    if args.out:
        args.out.write_text(report)


if __name__ == "__main__":
    main()
