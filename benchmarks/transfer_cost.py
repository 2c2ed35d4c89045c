"""Benchmark: what the transfer arms cost in a monitor GRPO reward call.

The ``teaching`` preset adds two student attempts per teacher message (the
variant of the problem after the original and the student's own attempt, with
and without the message, one seed) and one per wait (the no-message arm),
the no-message arm shared by every completion of a decision state.  This
measures that cost where training pays it: one call of
:class:`intbench.training.MonitorReward` on a GRPO batch, with the embedded
SmolLM2-135M student (its default runtime, 2 threads, ``--max-tokens`` per answer), under
``success`` (no transfer) and ``teaching`` side by side.  The whole GRPO step
(policy generation and update included) is measured by
``benchmarks/teaching_step_cost.py``.  Each of
``--problems`` offline math problems gives one decision state; each state gets
``--group`` completions, half a method hint and half a wait.  Decision states
and baselines are built first (cached, shared by both presets); the two presets
then alternate for ``--repeats`` rounds so background load hits both alike,
each round with a fresh transfer cache (the no-message variant attempt is
cached across rounds in real training, so this is the costlier case).

Counted: student requests, batched ``generate`` calls (the extra attempts go
out in the same batch as the episodes' continuations, not in a round of their
own), generated tokens and wall time.  Run::

    OMP_NUM_THREADS=2 python benchmarks/transfer_cost.py > benchmarks/results/transfer_cost.md
"""

from __future__ import annotations

import argparse
import platform
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

import torch

import intbench  # noqa: F401  (registers the ids)
from intbench.agents.backends import load_backend
from intbench.envs.domains import load_problems
from intbench.training import MonitorReward, monitor_states
from intbench.training.monitor import monitor_reply

ENV = "IntBench-Math-v0"
HINT = "Write down what the question asks for, then check each step of your method."


class Counting:
    """Wraps a backend's ``generate`` to count batches, requests and generated tokens."""

    def __init__(self, backend):
        self.backend = backend
        self.inner = backend.generate
        backend.generate = self.generate
        self.reset()

    def reset(self):
        self.batches = self.requests = self.tokens = 0

    def generate(self, batch, sampling):
        out = self.inner(batch, sampling)
        self.batches += 1
        self.requests += len(batch)
        self.tokens += sum(c.completion_tokens for c in out)
        return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--problems", type=int, default=2)
    parser.add_argument("--group", type=int, default=8)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--max-tokens", type=int, default=48)
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)

    root = Path(tempfile.mkdtemp(prefix="transfer-cost-"))
    student = load_backend("smollm2")
    counter = Counting(student)
    problems = load_problems("math", n=args.problems, seed=0)
    base = {
        "student": student,
        "problems": problems,
        "increment": 100_000,  # one decision per trace
        "student_sampling": {"max_tokens": args.max_tokens},
    }
    states = monitor_states(ENV, {**base, "cache_dir": str(root / "base")}, seed=0)
    half = args.group // 2
    completions = [monitor_reply(True, HINT)] * half + [monitor_reply(False)] * half
    batch = {
        "prompts": [s["prompt"] for s in states for _ in completions],
        "completions": completions * len(states),
        "problem_index": [s["problem_index"] for s in states for _ in completions],
        "waits": [s["waits"] for s in states for _ in completions],
        "seed": [s["seed"] for s in states for _ in completions],
    }
    runs: dict[str, list[dict]] = {"success": [], "teaching": []}
    for repeat in range(args.repeats):
        for preset in runs:
            cache = root / f"{preset}-{repeat}"
            shutil.copytree(root / "base", cache)  # the baselines, cached
            reward = MonitorReward(ENV, {**base, "reward": preset, "cache_dir": str(cache)})
            counter.reset()
            started = time.perf_counter()
            reward(**batch)
            seconds = time.perf_counter() - started
            transfer = sum(c["transfer"] for c in reward.last_components)
            runs[preset].append(
                {"s": seconds, "batches": counter.batches, "requests": counter.requests,
                 "tokens": counter.tokens, "transfer": transfer}
            )  # fmt: skip
            reward.pool.close()
    shutil.rmtree(root, ignore_errors=True)

    def med(preset, key):
        return statistics.median(r[key] for r in runs[preset])

    episodes = len(batch["completions"])
    print("# Transfer reward: cost in a monitor GRPO reward call\n")
    print(
        f"Student `smollm2` ({type(student).__name__}, {args.threads} threads), {args.max_tokens} "
        f"tokens per answer; {len(states)} decision states x {args.group} completions "
        f"({half} hint, {half} wait) = {episodes} episodes per call; median of "
        f"{args.repeats} alternating rounds. torch {torch.__version__}, Python "
        f"{platform.python_version()}, {platform.machine()}.\n"
    )
    print(f"Command: `python benchmarks/transfer_cost.py {' '.join(sys.argv[1:])}`\n")
    print("| per reward call | success | teaching | ratio |")
    print("|---|---:|---:|---:|")
    for key, label in (
        ("requests", "student requests"),
        ("batches", "batched generate calls"),
        ("tokens", "generated tokens"),
        ("s", "wall time (s)"),
    ):
        a, b = med("success", key), med("teaching", key)
        shown = (f"{a:.1f}", f"{b:.1f}") if key == "s" else (f"{a:.0f}", f"{b:.0f}")
        print(f"| {label} | {shown[0]} | {shown[1]} | {b / a:.2f}x |")
    print(
        f"\nVariants solved under `teaching` (median per call): {med('teaching', 'transfer'):.0f} "
        f"of {episodes}.  Every round's raw figures:\n"
    )
    for preset, rows in runs.items():
        for i, row in enumerate(rows):
            print(f"- {preset} round {i}: {row}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
