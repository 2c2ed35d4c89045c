"""Local Standard teachers: episodes decided one at a time vs in one batch.

A local transformers teacher keeps one KV cache per episode
(:class:`~intbench.agents.incremental.KVCacheDecider`).  This script plays the
same increments of several episodes both ways, side by side in one process:
each decider alone (one forward per episode and increment), and all of them
through :func:`~intbench.agents.incremental.decide_batch` (one forward per
increment for all episodes, messages generated together).  It checks that both
give the same decisions and reports the time per increment.

    python benchmarks/batched_decisions.py [--episodes 8] [--model smollm2]
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from intbench.agents.backends import load_backend  # noqa: E402
from intbench.agents.incremental import KVCacheDecider, decide_batch  # noqa: E402
from tests.test_incremental import monitor_prompts  # noqa: E402

OUT = Path(__file__).parent / "results" / "batched_decisions.md"


def deciders(backend, n: int) -> list[KVCacheDecider]:
    return [
        KVCacheDecider(
            backend.model,
            backend.tokenizer,
            temperature=0.7,
            top_p=0.95,
            max_message_tokens=16,
            seed=seed,
            render=backend.render,
        )
        for seed in range(n)
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--episodes", type=int, default=8)
    parser.add_argument("--model", default="smollm2")
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args()
    backend = load_backend(args.model)
    prompts = monitor_prompts("paper")
    # episodes at staggered increments, so prompts (and cached prefixes) differ in length
    episodes = [prompts[i % 3 :] for i in range(args.episodes)]
    steps = min(len(e) for e in episodes)
    alone, together = deciders(backend, args.episodes), deciders(backend, args.episodes)
    start = time.perf_counter()
    solo = [[d.decide(e[t]) for d, e in zip(alone, episodes, strict=True)] for t in range(steps)]
    solo_s = time.perf_counter() - start
    start = time.perf_counter()
    batched = [decide_batch(together, [e[t] for e in episodes]) for t in range(steps)]
    batch_s = time.perf_counter() - start
    same = sum(
        a.intervene == b.intervene and a.text == b.text
        for x, y in zip(solo, batched, strict=True)
        for a, b in zip(x, y, strict=True)
    )
    total = steps * args.episodes
    messages = sum(r.generated_tokens > 0 for row in batched for r in row)
    lines = [
        "# Local Standard teacher: one episode at a time vs one batch\n",
        f"`python benchmarks/batched_decisions.py --episodes {args.episodes} --model "
        f"{args.model}`: {args.episodes} monitor episodes at staggered increments of the "
        f"paper's Standard prompt, {steps} increments each, T=0.7, messages up to 16 tokens. "
        f"{os.cpu_count()} CPU cores (shared with other jobs), Python "
        f"{platform.python_version()}.\n",
        "| decisions | time s | ms per decision |",
        "|---|---:|---:|",
        f"| one at a time | {solo_s:.1f} | {1000 * solo_s / total:.0f} |",
        f"| batched | {batch_s:.1f} | {1000 * batch_s / total:.0f} |",
        "",
        f"- Batched / one at a time: {solo_s / batch_s:.2f}x faster.",
        f"- Same decision and text in {same} of {total} decisions ({messages} with a message).",
    ]
    args.out.write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
