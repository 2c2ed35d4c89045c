"""Math grading cost per warm answer on the 200 offline Omni-MATH problems.

Two answer sets of 200, each graded by ``verify_math`` with the worker pool
started and warm (and one untimed pass first):

* **reference**: every problem answered with its own reference (``\\boxed{...}``);
* **wrong**: every problem answered ``\\boxed{-1}``, the always-wrong student of
  ``benchmarks/feedback_overhead.py`` (Omni-MATH references include surds such as
  ``\\frac{9\\sqrt{51}}{4}``).

With ``--baseline-src`` (a copy of an older checkout, e.g. ``git archive <commit>``)
each round grades both sets with that checkout too, in a fresh process, rounds
alternating, so the ratio is measured side by side.  Figures: milliseconds per
answer (a round's total over its 200 answers), medians over ``--rounds`` with the
spread, and how many answers needed a worker.

    python benchmarks/omni_math_grading.py [--rounds 5] [--baseline-src /tmp/before] [--out FILE]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SETS = ("reference", "wrong")


def _answer_sets() -> dict[str, list]:
    from intbench.envs.domains import load_problems

    problems = load_problems("omni_math", source="offline", n=200, seed=0)
    return {
        "reference": [(p, f"So the answer is $\\boxed{{{p.answer}}}$.") for p in problems],
        "wrong": [(p, "Subtracting on both sides, the answer is \\boxed{-1}.") for p in problems],
    }


def grade_sets() -> dict:
    """One round in this process: ms per answer and worker calls for each set."""
    from intbench.verifiers.math import default_pool, verify_math

    pool = default_pool()
    pool.warm_up()
    result = {}
    for name, pairs in _answer_sets().items():
        for problem, response in pairs:  # untimed: imports, regex caches
            verify_math(problem, response)
        calls = getattr(pool, "calls", None)
        started = time.perf_counter()
        verdicts = [verify_math(problem, response) for problem, response in pairs]
        elapsed = time.perf_counter() - started
        expected = "correct" if name == "reference" else "incorrect"
        assert all(v.status == expected for v in verdicts), name
        result[name] = {
            "ms_per_answer": 1000 * elapsed / len(pairs),
            "answers": len(pairs),
            "worker_calls": None if calls is None else pool.calls - calls,
        }
    return result


def _round(src: Path) -> dict:
    env = {**os.environ, "PYTHONPATH": str(src)}
    output = subprocess.run(
        [sys.executable, str(Path(__file__).resolve()), "--one-round"],
        env=env,
        cwd=src,
        capture_output=True,
        text=True,
        check=True,
        timeout=600,
    ).stdout
    return json.loads(output.strip().splitlines()[-1])


def median_spread(values: list[float], digits: int = 2) -> str:
    return f"{statistics.median(values):.{digits}f} ({min(values):.{digits}f}–{max(values):.{digits}f})"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--baseline-src", default=None, help="an older checkout to compare with")
    parser.add_argument("--baseline-name", default="baseline")
    parser.add_argument("--out", default=None, help="a Markdown file for the results")
    parser.add_argument("--one-round", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one_round:
        print(json.dumps(grade_sets()))
        return
    sources = {"this checkout": ROOT}
    if args.baseline_src:
        sources[args.baseline_name] = Path(args.baseline_src).resolve()
    runs: dict[str, list[dict]] = {name: [] for name in sources}
    for round_ in range(args.rounds):
        for name, src in sources.items():
            runs[name].append(_round(src))
            print(round_, name, json.dumps(runs[name][-1]), flush=True)
    command = "python benchmarks/omni_math_grading.py --rounds " + str(args.rounds)
    if args.baseline_src:
        command += f" --baseline-src {args.baseline_src} --baseline-name {args.baseline_name}"
    lines = [
        "# Math grading cost per warm answer: the 200 offline Omni-MATH problems\n",
        f"`{command}` — `verify_math` with its worker pool started and warm; set "
        "*reference*: each problem answered with its reference; set *wrong*: each answered "
        "`\\boxed{-1}` (the always-wrong student of benchmarks/feedback_overhead.py). "
        f"Each round is a fresh process per checkout, rounds alternating. {os.cpu_count()} CPU "
        f"cores shared with other work (load average {os.getloadavg()[0]:.1f} at the end), "
        f"Python {platform.python_version()}. Medians over {args.rounds} rounds (min–max).\n",
        "| checkout | set | ms per answer | answers that needed a worker |",
        "|---|---|---:|---:|",
    ]
    for name, rounds in runs.items():
        for set_name in SETS:
            ms = [r[set_name]["ms_per_answer"] for r in rounds]
            calls = rounds[-1][set_name]["worker_calls"]
            shown = (
                "not counted" if calls is None else f"{calls} of {rounds[-1][set_name]['answers']}"
            )
            lines.append(f"| {name} | {set_name} | {median_spread(ms)} | {shown} |")
    if args.baseline_src:
        lines.append("")
        for set_name in SETS:
            ratios = [
                b[set_name]["ms_per_answer"] / a[set_name]["ms_per_answer"]
                for a, b in zip(runs["this checkout"], runs[args.baseline_name], strict=True)
            ]
            lines.append(
                f"- {set_name}: this checkout is {median_spread(ratios)}x faster than "
                f"{args.baseline_name} (round by round)."
            )
    print("\n".join(lines))
    if args.out:
        Path(args.out).write_text("\n".join(lines) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
