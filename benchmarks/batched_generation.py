"""Batched vs sequential generation with the embedded SmolLM2 on the transformers backend.

Runs the same 8 prompts in two modes in one process -- 8 single-conversation
calls, and one call with all 8 (one micro-batch, left padding) -- with greedy
decoding and the same ``max_tokens``, and prints a Markdown report:
generated tokens per second for both, their ratio, and how many answers are
identical between the two modes.

    python benchmarks/batched_generation.py [--max-tokens 48] [--rounds 2] [--output FILE]
"""

from __future__ import annotations

import argparse
import os
import platform
import time

import torch

from intbench.agents.backends import load_backend
from intbench.agents.base import Completion, SamplingParams

PROMPTS = [
    "Explain why the sky is blue.",
    "Write a short story about a robot learning to paint.",
    "List five uses of a paperclip and explain each.",
    "Describe how a bicycle works.",
    "What are the benefits of regular exercise?",
    "Explain the water cycle to a ten-year-old.",
    "Give advice to someone starting to learn programming.",
    "Describe a sunset over the ocean in detail.",
]


def timed(fn) -> tuple[list[Completion], float]:
    start = time.perf_counter()
    result = fn()
    return result, time.perf_counter() - start


def run(max_tokens: int, rounds: int) -> str:
    """Run both modes ``rounds`` times, alternating which goes first; return the report.

    Alternating the order spreads changes in machine load (other processes
    sharing the cores) over both modes instead of charging them to one.
    """
    backend = load_backend("smollm2", runtime="hf", batch_size=len(PROMPTS))
    params = SamplingParams(temperature=0.0, max_tokens=max_tokens)
    batch = [[{"role": "user", "content": p}] for p in PROMPTS]
    backend.generate(batch[:1], SamplingParams(temperature=0.0, max_tokens=4))  # warm-up

    modes = {
        "sequential": lambda: [backend.generate([c], params)[0] for c in batch],
        "batched": lambda: backend.generate(batch, params),
    }
    totals = {name: [0, 0.0] for name in modes}  # tokens, seconds
    answers: dict[str, list[str]] = {}
    round_ratios = []
    for index in range(rounds):
        order = list(modes) if index % 2 == 0 else list(reversed(modes))
        rates = {}
        for name in order:
            completions, seconds = timed(modes[name])
            tokens = sum(c.completion_tokens for c in completions)
            totals[name][0] += tokens
            totals[name][1] += seconds
            rates[name] = tokens / seconds
            answers[name] = [c.text for c in completions]
        round_ratios.append(rates["batched"] / rates["sequential"])

    rate = {name: tokens / seconds for name, (tokens, seconds) in totals.items()}
    same = sum(a == b for a, b in zip(answers["sequential"], answers["batched"], strict=True))
    calls = {"sequential": len(PROMPTS) * rounds, "batched": rounds}
    lines = [
        "# Batched vs sequential generation (embedded SmolLM2-135M, transformers backend)",
        "",
        f"- machine: {platform.machine()}, {os.cpu_count()} CPU cores, torch {torch.__version__}"
        f" ({torch.get_num_threads()} threads)",
        f"- {len(PROMPTS)} prompts, greedy, max_tokens={max_tokens}, dtype float32,"
        f" {rounds} rounds alternating which mode goes first",
        # Other processes may compete for the cores; the ratio is the robust number.
        f"- load average at the end: {os.getloadavg()[0]:.1f}",
        "",
        "| mode | calls | generated tokens | seconds | tokens/s |",
        "|---|---|---|---|---|",
    ]
    for name, (tokens, seconds) in totals.items():
        lines.append(f"| {name} | {calls[name]} | {tokens} | {seconds:.2f} | {rate[name]:.1f} |")
    lines += [
        "",
        f"**Speed-up (batched / sequential throughput): {rate['batched'] / rate['sequential']:.2f}x**"
        f" (per round: {', '.join(f'{r:.2f}x' for r in round_ratios)})",
        "",
        f"Identical answers in both modes: {same}/{len(PROMPTS)}",
    ]
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--max-tokens", type=int, default=48)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--output", help="also write the report to this file")
    args = parser.parse_args()
    report = run(args.max_tokens, args.rounds)
    print(report, end="")
    if args.output:
        with open(args.output, "w", encoding="utf-8") as handle:
            handle.write(report)


if __name__ == "__main__":
    main()
