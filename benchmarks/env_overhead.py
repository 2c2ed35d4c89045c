"""Env overhead of the monitor protocol: wait-steps per second.

A scripted teacher always waits and the student's baselines come from the
cache, so what is timed is the env itself: revealing the next increment,
building the observation and the teacher's chat messages (``info["messages"]``).
Target: at least 20,000 wait-steps per second.

    python benchmarks/env_overhead.py [--episodes 200] [--trace-chars 5000]
"""

from __future__ import annotations

import argparse
import tempfile
import time

import gymnasium as gym

import intbench  # noqa: F401
from intbench.agents.backends.scripted import ScriptedBackend
from intbench.envs.domains import load_problems


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--episodes", type=int, default=200)
    parser.add_argument("--trace-chars", type=int, default=5000)
    args = parser.parse_args()

    trace = ("We expand the product and collect like terms. " * 200)[
        : args.trace_chars - 12
    ] + " \\boxed{42}."
    student = ScriptedBackend(lambda messages: trace)
    problems = load_problems("math", source="offline", n=50, seed=0)
    with tempfile.TemporaryDirectory() as cache_dir:
        env = gym.make("IntBench-Math-v0", student=student, problems=problems, cache_dir=cache_dir)
        for i in range(len(problems)):  # warm the baseline cache
            env.reset(seed=i)
        wait = {"intervene": 0, "message": ""}
        steps = 0
        reset_seconds = 0.0
        started = time.perf_counter()
        for episode in range(args.episodes):
            t0 = time.perf_counter()
            env.reset(seed=episode % len(problems))
            reset_seconds += time.perf_counter() - t0
            done = False
            while not done:
                _, _, done, _, _ = env.step(wait)
                steps += 1
        total = time.perf_counter() - started
    step_seconds = total - reset_seconds
    print(
        f"trace length: {len(trace)} chars, increment 50 -> {steps // args.episodes} steps per episode"
    )
    print(f"episodes: {args.episodes}, wait-steps: {steps}")
    print(f"wait-steps per second (steps only): {steps / step_seconds:,.0f}")
    print(f"wait-steps per second (including resets from cache): {steps / total:,.0f}")
    print(f"reset from cache: {1000 * reset_seconds / args.episodes:.2f} ms per episode")


if __name__ == "__main__":
    main()
