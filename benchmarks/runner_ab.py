"""Runner episodes/s of two checkouts side by side, alternated on the same machine.

Checks a refactor for slowdowns: each round runs ``runner_throughput.timed_run``
(monitor env, ``at:0.5`` teacher, an ``openai:`` student on the fake server of
``tests/fake_openai_server.py`` in its own process) once in the checkout ``--old``
and once in ``--new``, each in a fresh interpreter importing that checkout.

    git worktree add /tmp/before <commit>
    python benchmarks/runner_ab.py --old /tmp/before --new .
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys

ONE_RUN = r"""
import json, sys, tempfile
sys.path.insert(0, "benchmarks")
import runner_throughput as rt
with tempfile.TemporaryDirectory() as workdir:
    rt.timed_run(0.0, "at:0.5", 8, 8, workdir)  # imports and first-use costs, not measured
    run = rt.timed_run(float(sys.argv[1]), "at:0.5", int(sys.argv[2]), int(sys.argv[3]), workdir)
print("RESULT", json.dumps(run["episodes_per_s"]))
"""


def episodes_per_s(tree: str, latency: float, episodes: int, concurrency: int) -> float:
    env = {**os.environ, "PYTHONPATH": os.path.abspath(tree), "HF_HUB_OFFLINE": "1"}
    argv = [sys.executable, "-c", ONE_RUN, str(latency), str(episodes), str(concurrency)]
    done = subprocess.run(argv, cwd=tree, env=env, capture_output=True, text=True, check=True)
    [line] = [x for x in done.stdout.splitlines() if x.startswith("RESULT ")]
    return float(line.removeprefix("RESULT "))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--old", required=True, help="checkout before the change")
    parser.add_argument("--new", required=True, help="checkout after the change")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--episodes", type=int, default=256)
    parser.add_argument("--concurrency", type=int, default=64)
    args = parser.parse_args()
    print(
        "| latency | old episodes/s (rounds) | median | new episodes/s (rounds) | median | new / old |"
    )
    print("|---:|---|---:|---|---:|---:|")
    for latency in (0.0, 0.05):
        rates: dict[str, list[float]] = {"old": [], "new": []}
        for _ in range(args.rounds):
            for name in ("old", "new"):
                tree = getattr(args, name)
                rates[name].append(episodes_per_s(tree, latency, args.episodes, args.concurrency))
        old, new = (statistics.median(rates[n]) for n in ("old", "new"))
        cells = {n: " / ".join(f"{r:.1f}" for r in rates[n]) for n in rates}
        print(
            f"| {latency * 1000:.0f} ms | {cells['old']} | {old:.1f} | {cells['new']} | {new:.1f} "
            f"| {new / old:.3f} |",
            flush=True,
        )


if __name__ == "__main__":
    main()
