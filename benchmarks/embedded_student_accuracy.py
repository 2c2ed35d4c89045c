"""Can the embedded student give the main job a signal?  Its baseline accuracy, measured.

The README's main job evaluates a teacher on the embedded student
(SmolLM2-135M-Instruct).  Its table shows φ_correct, φ_incorrect and H only if
some baselines are right and some wrong.  This script asks the embedded model
each problem once with the env's own student prompt (the paper's template, the
domain's answer format) at the main job's budget, grades every answer with the
trusted verifier, and writes the accuracy per problem set and decoding, with a
few of the replies.  Sets: the offline math problems (``IntBench-Math-v0``),
and the ``arithmetic`` domain's sums and differences (the main job's
``IntBench-Arithmetic-v0``) asked twice: in the math domain's prompt, and in
their own, which shows one solved example first.

    python benchmarks/embedded_student_accuracy.py [--n 24] [--max-tokens 192]
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import platform
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from intbench.agents.backends.base import SamplingParams  # noqa: E402
from intbench.agents.backends.loading import load_backend  # noqa: E402
from intbench.envs.domains import load_problems  # noqa: E402
from intbench.envs.domains.generators import generate_math  # noqa: E402
from intbench.envs.domains.prompting import render_messages  # noqa: E402
from intbench.records import Problem  # noqa: E402
from intbench.verifiers import verify  # noqa: E402

OUT = Path(__file__).parent / "results" / "embedded_student_accuracy.md"


def measure(backend, problems: list[Problem], params: SamplingParams) -> tuple[int, int, list[str]]:
    conversations = [render_messages(p.domain, "student_baseline", problem=p) for p in problems]
    replies = backend.generate(conversations, params)
    verdicts = [verify(p, r.text) for p, r in zip(problems, replies, strict=True)]
    extracted = sum(v.answer is not None for v in verdicts)
    correct = sum(v.correct for v in verdicts)
    tails = [" / ".join(r.text.strip().splitlines()[-2:])[-110:] for r in replies[:3]]
    return correct, extracted, tails


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=24, help="problems per set")
    parser.add_argument("--max-tokens", type=int, default=192, help="the main job's budget")
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args()
    backend = load_backend("smollm2")
    arithmetic = load_problems("arithmetic", n=args.n, seed=0)
    sets = {
        "offline math": generate_math(args.n, seed=0, split="test"),
        "arithmetic, math prompt": [dataclasses.replace(p, domain="math") for p in arithmetic],
        "arithmetic, own prompt with its solved example (the main job)": arithmetic,
    }
    decodings = {
        "T=0.7, top-p 0.95 (the papers' student)": dict(temperature=0.7, top_p=0.95, seed=0),
        "greedy": dict(temperature=0.0),
    }
    lines = [
        "# The embedded student's baseline accuracy\n",
        f"`python benchmarks/embedded_student_accuracy.py --n {args.n} --max-tokens "
        f"{args.max_tokens}`: SmolLM2-135M-Instruct (embedded), the env's student prompt, "
        f"one reply per problem, graded by `intbench.verify`. {os.cpu_count()} CPU cores, "
        f"Python {platform.python_version()}.\n",
        "| problems | decoding | correct | answer extracted | seconds |",
        "|---|---|---:|---:|---:|",
    ]
    samples = []
    for set_name, problems in sets.items():
        for decoding, options in decodings.items():
            started = time.perf_counter()
            params = SamplingParams(max_tokens=args.max_tokens, **options)
            correct, extracted, tails = measure(backend, problems, params)
            seconds = time.perf_counter() - started
            lines.append(
                f"| {set_name} | {decoding} | {correct}/{len(problems)} | "
                f"{extracted}/{len(problems)} | {seconds:.0f} |"
            )
            samples.append((set_name, decoding, tails))
            print(lines[-1], flush=True)
    lines += ["", "Ends of the first three replies of each run:", ""]
    for set_name, decoding, tails in samples:
        lines.append(f"- {set_name}, {decoding}:")
        lines += [f"  - `{tail.replace('`', '')}`" for tail in tails]
    args.out.write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
