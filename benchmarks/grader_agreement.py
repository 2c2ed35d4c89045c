"""Grader trust and speed: agreement, reference and hostile programs, throughput.

Three reports in one run:

1. **Math agreement**: IntBench's math verdicts and plain math-verify's on the
   labelled answer pairs of ``tests/fixtures/math_answer_pairs.jsonl``
   (agreement, false accepts, false rejects; see ``benchmarks/math_agreement.py``).
2. **Code**: the reference program of every offline function-test problem
   (HumanEval for ``codeforces``, the repaired programs for ``debug``) passes,
   and every hostile program of ``tests/test_hostile_programs.py`` fails.
3. **Throughput before vs after**: the same grading workload run by this
   checkout and by a baseline checkout (``--baseline-src``, e.g. a
   ``git worktree`` of an older commit), alternating, in fresh processes;
   medians of ``--repeats`` runs, so the ratio is measured side by side.

    python benchmarks/grader_agreement.py --baseline-src /tmp/before \\
        --out benchmarks/results/grader_agreement.md
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
PAIRS = ROOT / "tests" / "fixtures" / "math_answer_pairs.jsonl"
MATH_PROBLEMS = 300  # each graded with its reference answer and with a wrong one
BATCH_CASES = 16


# ------------------------------------------------------------------ workload


def _math_responses():
    """Each offline MATH problem with its reference and a wrong answer, then every
    labelled answer pair (the answers that reach the worker's parser)."""
    from intbench.envs.domains import load_problems
    from intbench.records import Problem

    problems = load_problems("math", source="offline", n=MATH_PROBLEMS, seed=0)
    for problem in problems:
        yield problem, f"So the answer is $\\boxed{{{problem.answer}}}$."
        yield problem, f"So the answer is $\\boxed{{{problem.answer}1}}$."
    for line in PAIRS.read_text(encoding="utf-8").splitlines():
        pair = json.loads(line)
        problem = Problem(id="pair", domain="math", question="?", answer=pair["reference"])
        response = pair.get("response", f"The answer is \\boxed{{{pair.get('answer')}}}.")
        yield problem, response


def _code_responses():
    from intbench.envs.domains import load_problems

    for problem in load_problems("codeforces", source="offline", n=None, seed=0):
        yield problem, f"```python\n{problem.solution}\n```"


def _answers_per_second(pairs) -> tuple[float, int]:
    from intbench.verifiers import verify

    pairs = list(pairs)
    verify(*pairs[0])  # warm-up: worker pools, isolation probe
    start = time.perf_counter()
    errors = sum(verify(problem, response).status == "error" for problem, response in pairs)
    return len(pairs) / (time.perf_counter() - start), errors


def _batching_seconds() -> tuple[float, float]:
    """Seconds for 16 stdio cases in one sandbox, and in one sandbox each."""
    from intbench.verifiers.sandbox import run_program

    program = "import sys\nprint(sum(map(int, sys.stdin.read().split())))\n"
    cases = [{"input": " ".join(str(i * j) for j in range(50))} for i in range(BATCH_CASES)]
    run_program(program, cases[:1])
    start = time.perf_counter()
    run_program(program, cases)
    batched = time.perf_counter() - start
    start = time.perf_counter()
    for case in cases:
        run_program(program, [case])
    return batched, time.perf_counter() - start


def throughput_worker(math_only: bool) -> None:
    """Run the workload with whichever ``intbench`` is importable; print JSON."""
    import logging

    logging.disable(logging.WARNING)
    math_rate, math_errors = _answers_per_second(_math_responses())
    result = {"math_answers_per_s": math_rate, "math_errors": math_errors}
    if not math_only:
        code_rate, code_errors = _answers_per_second(_code_responses())
        batched, per_case = _batching_seconds()
        result.update(
            code_answers_per_s=code_rate, code_errors=code_errors,
            batched_s=batched, per_case_s=per_case,
        )  # fmt: skip
    print(json.dumps(result))


def _run_worker(src: Path, math_only: bool) -> dict:
    env = dict(os.environ, PYTHONPATH=str(src))
    out = subprocess.run(
        [sys.executable, __file__, "--throughput-worker", *(["--math-only"] if math_only else [])],
        env=env,
        cwd=src,
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def throughput(baseline: Path | None, repeats: int, math_only: bool) -> dict[str, list[dict]]:
    runs: dict[str, list[dict]] = {"after": []}
    if baseline is not None:
        runs["before"] = []
    for _ in range(repeats):  # alternate, so both see the same machine load
        if baseline is not None:
            runs["before"].append(_run_worker(baseline, math_only))
        runs["after"].append(_run_worker(ROOT, math_only))
    return runs


# ------------------------------------------------------------------ code checks


def reference_programs() -> dict:
    """Every offline function-test problem's reference program: how many pass."""
    from intbench.envs.domains import load_problems
    from intbench.verifiers import verify

    report = {}
    for domain in ("codeforces", "debug"):
        problems = load_problems(domain, source="offline", n=None, seed=0)
        failed = [
            problem.id
            for problem in problems
            if verify(problem, f"```python\n{problem.solution}\n```").status != "correct"
        ]
        report[domain] = {"problems": len(problems), "failed": failed}
    return report


def hostile_programs() -> dict:
    """Every hostile program of the test suite, graded: which are not failed."""
    sys.path.insert(0, str(ROOT))
    from intbench.envs.domains.codeforces import humaneval_problem, humaneval_problems
    from tests import test_hostile_programs as suite

    problems = [humaneval_problem(humaneval_problems()[t]) for t in suite.FUNCTION_TASKS]
    cases = [
        (f"{name} on {problem.id}", problem, program.replace("ENTRY", problem.tests["entry_point"]))
        for name, program in suite.FUNCTION_ATTACKS.items()
        for problem in problems
    ] + [(name, suite.BIG_SUM, program) for name, program in suite.STDIO_ATTACKS.items()]
    verdicts = suite.verify_all([(problem, suite.fenced(code)) for _, problem, code in cases])
    return {
        "programs": len(suite.FUNCTION_ATTACKS) + len(suite.STDIO_ATTACKS),
        "gradings": len(cases),
        "passed": [name for (name, _, _), v in zip(cases, verdicts, strict=True) if v.correct],
        "isolation": sorted({str(v.details.get("isolation")) for v in verdicts}),
    }


# ------------------------------------------------------------------ report


def _median(runs: list[dict], key: str) -> float:
    return statistics.median(run[key] for run in runs)


def render(agreement: dict, references: dict, hostile: dict, speed: dict, args) -> str:
    from math_agreement import to_markdown

    lines = [
        "# Grader agreement, reference and hostile programs, throughput",
        "",
        f"- command: `python benchmarks/grader_agreement.py --repeats {args.repeats}"
        + (" --math-only" if args.math_only else "")
        + (" --baseline-src <checkout of the baseline commit>`" if args.baseline_src else "`"),
        f"- machine: {platform.machine()}, {os.cpu_count()} CPUs, Python {platform.python_version()}",
        "",
        "## Math: IntBench vs math-verify on the labelled pairs",
        "",
        to_markdown(agreement),
        "",
    ]
    if references is not None:
        lines += _code_lines(references, hostile)
    lines += _throughput_lines(speed)
    return "\n".join(lines)


def _code_lines(references: dict, hostile: dict) -> list[str]:
    lines = ["## Code", "", "| check | count | not as expected |", "|---|---|---|"]
    for domain, row in references.items():
        lines.append(
            f"| {domain}: reference program passes | {row['problems']} | {len(row['failed'])} |"
        )
    lines.append(
        f"| hostile programs fail ({hostile['programs']} programs, {hostile['gradings']} "
        f"gradings) | {hostile['gradings']} | {len(hostile['passed'])} |"
    )
    lines += ["", f"Isolation level used: {', '.join(hostile['isolation'])}."]
    if references_failed := [i for row in references.values() for i in row["failed"]]:
        lines.append(f"Reference programs that failed: {', '.join(references_failed)}.")
    if hostile["passed"]:
        lines.append(f"Hostile programs graded correct: {', '.join(hostile['passed'])}.")
    return lines


def _throughput_lines(speed: dict) -> list[str]:
    lines = ["", "## Throughput (median of the runs; higher answers/s is better)", ""]
    versions = [v for v in ("before", "after") if v in speed]
    lines.append(
        "| measure | "
        + " | ".join(versions)
        + (" | after / before |" if len(versions) == 2 else " |")
    )
    lines.append("|---|" + "---|" * (len(versions) + (len(versions) == 2)))
    measures = [
        ("math answers/s", "math_answers_per_s"),
        ("code answers/s (164 reference programs)", "code_answers_per_s"),
        (f"{BATCH_CASES} stdio cases, one sandbox (s)", "batched_s"),
        (f"{BATCH_CASES} stdio cases, a sandbox each (s)", "per_case_s"),
    ]
    measured = speed["after"][0]
    for label, key in measures:
        if key not in measured:
            continue
        values = [_median(speed[v], key) for v in versions]
        row = f"| {label} | " + " | ".join(f"{x:.3g}" for x in values)
        if len(values) == 2:
            row += f" | {values[1] / values[0]:.2f}"
        lines.append(row + " |")
    if len(versions) == 2:
        before, after = (1000 / _median(speed[v], "math_answers_per_s") for v in versions)
        lines.append(
            f"\nMath grading cost per answer: {before:.2f} ms before, {after:.2f} ms after "
            f"(**{after / before:.2f}x**)."
        )
    for version in versions if "per_case_s" in measured else []:
        ratio = _median(speed[version], "per_case_s") / _median(speed[version], "batched_s")
        lines.append(f"\nSandbox batching ratio ({version}): **{ratio:.1f}x**")
    lines += ["", "Raw runs:", "", "```json", json.dumps(speed, indent=1), "```", ""]
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline-src", type=Path, default=None)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument(
        "--math-only", action="store_true", help="grade math only (no code checks or throughput)"
    )
    parser.add_argument("--throughput-worker", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.throughput_worker:
        throughput_worker(args.math_only)
        return
    sys.path.insert(0, str(ROOT / "benchmarks"))
    from math_agreement import math_agreement

    agreement = math_agreement(PAIRS)
    references = None if args.math_only else reference_programs()
    hostile = None if args.math_only else hostile_programs()
    speed = throughput(args.baseline_src, args.repeats, args.math_only)
    text = render(agreement, references, hostile, speed, args)
    print(text)
    if args.out:
        args.out.write_text(text, encoding="utf-8")


if __name__ == "__main__":
    main()
