"""Episodes per minute of an evaluation with 1 vs N episodes in flight.

Runs the README's main job (monitor protocol, ``at:0.5`` teacher, the
embedded SmolLM2 student, generated math problems) twice side by side: once
with one episode at a time and once with ``--concurrency`` episodes in flight,
whose student calls the runner batches into one model call per round.  Each
run starts from an empty baseline cache, so the student's baselines and
continuations are all generated and timed.

    python benchmarks/eval_throughput.py [--n 8] [--concurrency 8] [--max-tokens 192] [--runtime hf]
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time

from intbench.agents.backends import shared_backend
from intbench.runner import RunConfig, run_eval


def timed_run(
    n: int, concurrency: int, max_tokens: int, spec: str, workdir: str
) -> tuple[float, int]:
    os.environ["INTBENCH_CACHE"] = os.path.join(workdir, f"cache-{concurrency}")
    config = RunConfig(
        env_id="IntBench-Math-v0",
        teacher="at:0.5",
        student=spec,
        n=n,
        env_options={"student_sampling": {"max_tokens": max_tokens}},
    )
    student = shared_backend(spec)  # loaded once per process, shared by both runs
    tokens_before = student.usage.completion_tokens
    started = time.perf_counter()
    result = run_eval(
        config, os.path.join(workdir, f"run-{concurrency}"), concurrency=concurrency, progress=False
    )
    seconds = time.perf_counter() - started
    assert len(result.episodes) == n
    return seconds, student.usage.completion_tokens - tokens_before


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=8)
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--max-tokens", type=int, default=192)
    parser.add_argument(
        "--runtime", choices=["hf", "llamacpp"], default=None, help="default: what smollm2 picks"
    )
    args = parser.parse_args()
    spec = f"smollm2?runtime={args.runtime}" if args.runtime else "smollm2"
    student = shared_backend(spec)
    print(
        f"student: {spec} via {type(student).__name__}; {args.n} episodes; student max_tokens {args.max_tokens}"
    )
    with tempfile.TemporaryDirectory() as workdir:
        rows = []
        for concurrency in (1, args.concurrency):
            seconds, tokens = timed_run(args.n, concurrency, args.max_tokens, spec, workdir)
            rows.append((concurrency, seconds, tokens))
            print(
                f"in flight {concurrency:>2}: {seconds:7.1f} s, {60 * args.n / seconds:6.2f} episodes/min, "
                f"{tokens} generated tokens, {tokens / seconds:6.1f} tok/s"
            )
    (_, s1, _), (_, sn, _) = rows
    print(f"speed-up with {args.concurrency} in flight: {s1 / sn:.2f}x")


if __name__ == "__main__":
    main()
