"""Benchmark: KV-cache prefix reuse for incremental monitor decisions.

A 1,500-character student trace is revealed in 50-character increments to the
embedded SmolLM2-135M-Instruct (transformers runtime) acting as the Standard
teacher.  At every increment two deciders answer the same prompt:

* naive: render the full prompt and ``generate()`` the full teacher output
  (greedy), then parse the decision from the text;
* incremental (:class:`intbench.agents.incremental.KVCacheDecider`): reuse
  the KV cache of the longest common token prefix, prefill only the new
  tokens, decide from the " Yes"/" No" next-token probabilities after
  ``Intervene:`` and generate a message only on Yes.

Every increment is asked (the run does not stop at the first intervention),
so the whole trace's cost is measured; the two deciders alternate at each
increment so background load affects both alike.  Run for the paper's template
(reference after the transcript: only the part before it is reusable) and
the append-only variant.  Prints a Markdown report:

    python benchmarks/monitor_prefix_reuse.py > benchmarks/results/monitor_prefix_reuse.md
"""

from __future__ import annotations

import argparse
import platform
import sys
import tempfile

import gymnasium as gym
import torch

import intbench  # noqa: F401  (registers the ids)
from intbench.agents.backends import load_backend
from intbench.agents.backends.scripted import ScriptedBackend
from intbench.agents.incremental import DecisionResult, KVCacheDecider, NaiveDecider
from intbench.records import Problem

PROBLEM = Problem(
    id="bench/rectangle",
    domain="math",
    question=(
        "The length of a rectangle is 3 cm more than twice its width, and its perimeter "
        "is 54 cm. What is the area of the rectangle, in square centimetres?"
    ),
    answer="152",
    solution=(
        "Let the width be w, so the length is 2w + 3. The perimeter is 2(w + 2w + 3) = "
        "6w + 6 = 54, so w = 8 and the length is 19. The area is 8 * 19 = 152."
    ),
)

# A baseline trace with an arithmetic slip in the middle (6w + 6 = 54 solved as w = 9).
TRACE = (
    "Let me set up the problem with a variable. Let w be the width of the rectangle in "
    "centimetres. The length is 3 more than twice the width, so the length is 2w + 3. "
    "The perimeter of a rectangle is two times the sum of the length and the width, so "
    "P = 2(length + width) = 2((2w + 3) + w). Simplifying inside the parentheses gives "
    "3w + 3, and multiplying by two gives 6w + 6. We are told the perimeter is 54, so "
    "6w + 6 = 54. Subtracting 6 from both sides, 6w = 54 - 6. Now 54 - 6 is 46, so "
    "6w = 46 and w = 46 / 6, which is not a whole number; let me recheck by dividing "
    "differently. Actually, maybe I should subtract again: 54 - 6 = 48, hmm, I wrote 46 "
    "before, but let me keep going with a cleaner approach. If 6w = 54, then w = 9. "
    "So the width is 9 cm. Then the length is 2 * 9 + 3 = 21 cm. Let me check the "
    "perimeter: 2(21 + 9) = 2 * 30 = 60 cm. That is not 54, which is a bit odd, but "
    "the numbers look reasonable for a rectangle of this shape, so I will continue. "
    "The area of a rectangle is length times width. So the area is 21 * 9. Computing "
    "21 * 9: 20 * 9 = 180 and 1 * 9 = 9, so 180 + 9 = 189. Therefore the area of the "
    "rectangle is 189 square centimetres. Let me double-check the multiplication once "
    "more: 21 * 9 = 189, yes. The width of 9 cm and the length of 21 cm give an area "
    "of 189 square centimetres, and the relation length = 2 * width + 3 holds because "
    "2 * 9 + 3 = 21. I am fairly confident in this result, although the perimeter "
    "check gave 60 instead of 54. Since the question only asks for the area, I will "
    "report the area I found. Final answer: the area is 189 square centimetres, so "
    "\\boxed{189}."
)


def _totals(results: list[DecisionResult], seconds: float) -> dict:
    return {
        "prefilled": sum(r.prefilled_tokens for r in results),
        "prompt": sum(r.prompt_tokens for r in results),
        "generated": sum(r.generated_tokens for r in results),
        "seconds": seconds,
        # The naive decider knows its decision only once the whole output is generated.
        "decision_seconds": sum(r.details.get("decision_seconds", r.seconds) for r in results),
        "interventions": sum(r.intervene for r in results),
    }


def monitor_prompts(variant: str, trace: str, increment: int) -> list[tuple[int, list[dict]]]:
    """``(revealed chars, teacher prompt)`` at every increment, from the monitor env itself."""
    student = ScriptedBackend(lambda messages: trace, spec="scripted:benchmark-trace")
    with tempfile.TemporaryDirectory() as cache:
        env = gym.make(
            "IntBench-Math-v0",
            student=student,
            problems=[PROBLEM],
            increment=increment,
            teacher_prompt=variant,
            cache_dir=cache,
        )
        obs, info = env.reset(seed=0)
        shown = [(int(obs["revealed_chars"]), info["messages"])]
        while not obs["finished"]:
            obs, *_, info = env.step(0)  # wait: reveal the next increment
            shown.append((int(obs["revealed_chars"]), info["messages"]))
        env.close()
    return shown


def run_variant(backend, variant: str, trace: str, increment: int, max_message_tokens: int):
    """Ask both deciders at every increment; return per-increment rows and totals."""
    cuts, prompts = zip(*monitor_prompts(variant, trace, increment), strict=True)
    model, tokenizer = backend.model, backend.tokenizer
    naive = NaiveDecider(
        model, tokenizer, max_new_tokens=max_message_tokens + 1, render=backend.render
    )
    incremental = KVCacheDecider(
        model, tokenizer, max_message_tokens=max_message_tokens, render=backend.render
    )
    # Interleaved, so that load from other processes hits both deciders alike.
    naive_results, incremental_results = [], []
    for prompt in prompts:
        naive_results.append(naive.decide(prompt))
        incremental_results.append(incremental.decide(prompt))
    naive_seconds = sum(r.seconds for r in naive_results)
    incremental_seconds = sum(r.seconds for r in incremental_results)
    rows = [(cut, n, i) for cut, n, i in zip(cuts, naive_results, incremental_results, strict=True)]
    return (
        rows,
        _totals(naive_results, naive_seconds),
        _totals(incremental_results, incremental_seconds),
    )


def _ratio(a: float, b: float) -> str:
    return f"{a / b:.1f}x" if b else "inf"


def report(variant: str, rows, naive: dict, incremental: dict) -> str:
    """Markdown section for one prompt variant."""
    same = sum(n.intervene == i.intervene for _, n, i in rows)
    # Texts are comparable where the cached decider generated an answer (Yes at the slot).
    generated = [(n, i) for _, n, i in rows if i.generated_tokens]
    same_text = sum(n.text == i.text for n, i in generated)
    lines = [
        f"### Template `{variant}`",
        "",
        "| | naive generate() | prefix reuse + next-token | ratio |",
        "|---|---:|---:|---:|",
        f"| prompt tokens (total) | {naive['prompt']} | {incremental['prompt']} | |",
        f"| prefilled tokens | {naive['prefilled']} | {incremental['prefilled']} "
        f"| {_ratio(naive['prefilled'], incremental['prefilled'])} fewer |",
        f"| generated tokens | {naive['generated']} | {incremental['generated']} "
        f"| {_ratio(naive['generated'], incremental['generated'])} fewer |",
        f"| wall time (s) | {naive['seconds']:.1f} | {incremental['seconds']:.1f} "
        f"| {_ratio(naive['seconds'], incremental['seconds'])} less |",
        f"| time to the decision (s) | {naive['decision_seconds']:.1f} "
        f"| {incremental['decision_seconds']:.1f} "
        f"| {_ratio(naive['decision_seconds'], incremental['decision_seconds'])} less |",
        f"| interventions (of {len(rows)}) | {naive['interventions']} "
        f"| {incremental['interventions']} | |",
        "",
        f"Same decision at {same}/{len(rows)} increments. Where the cached decider read "
        f"Yes at the decision slot and generated the rest ({len(generated)} increments), "
        f"its output text equals naive generate()'s at {same_text}/{len(generated)}.",
        "",
        "<details><summary>per increment</summary>",
        "",
        "| revealed | naive | incremental | P(Yes vs No) | prefilled naive / incr. |",
        "|---:|---|---|---:|---:|",
    ]
    for cut, n, i in rows:
        decision = {True: "intervene", False: "wait"}
        lines.append(
            f"| {cut} | {decision[n.intervene]} | {decision[i.intervene]} "
            f"| {i.p_intervene:.3f} | {n.prefilled_tokens} / {i.prefilled_tokens} |"
        )
    lines += ["", "</details>", ""]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", default="smollm2", help="backend spec (transformers runtime)")
    parser.add_argument("--increment", type=int, default=50)
    parser.add_argument("--trace-chars", type=int, default=1500)
    parser.add_argument("--max-message-tokens", type=int, default=64)
    parser.add_argument(
        "--variants", nargs="+", default=["paper", "append"], help="monitor env teacher_prompt"
    )
    # One thread: with other processes on the CPU, OpenMP threads oversubscribe badly
    # (measured 13x slower with 2 threads on a busy 2-core machine).
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args(argv)

    torch.set_num_threads(args.threads)
    options = {"runtime": "hf", "dtype": "float32"} if args.model == "smollm2" else {}
    backend = load_backend(args.model, **options)
    trace = TRACE[: args.trace_chars]
    print("# Monitor prefix reuse: incremental vs naive Standard-teacher decisions\n")
    print(
        f"Teacher `{args.model}` (transformers, fp32, {args.threads} threads, greedy), "
        f"{len(trace)}-character trace in {args.increment}-character increments, "
        f"message budget {args.max_message_tokens} tokens; every increment is asked. "
        f"torch {torch.__version__}, Python {platform.python_version()}, "
        f"{platform.machine()}.\n"
    )
    print("Command: `python benchmarks/monitor_prefix_reuse.py " + " ".join(sys.argv[1:]) + "`\n")
    for variant in args.variants:
        rows, naive, incremental = run_variant(
            backend, variant, trace, args.increment, args.max_message_tokens
        )
        print(report(variant, rows, naive, incremental), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
