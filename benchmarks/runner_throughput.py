"""Runner throughput against a local OpenAI-compatible server: is IntBench the bottleneck?

Every figure comes from one process, measured side by side:

* episodes/s and requests/s with a scripted ``at:0.5`` teacher and an
  ``openai:`` student, at 0 ms and 50 ms server latency, at concurrency
  1, 8, 64 and 256;
* requests/s with a model teacher (``openai:``) at concurrency 64 on the
  instant server, and the tokens it asks for per wait decision;
* setup time before the first episode (from ``run_eval`` to the server's first
  request), which should not grow with concurrency;
* a projection to the papers' scales from the measured per-episode cost.

    python benchmarks/runner_throughput.py [--out benchmarks/results/runner_throughput.md]
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import platform
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from intbench.runner import RunConfig, run_eval  # noqa: E402
from tests.fake_openai_server import FakeOpenAIServer  # noqa: E402

TRACE = "We add the two numbers one digit at a time, carrying when needed. " * 6
LATENCIES_S = (0.0, 0.05)
CONCURRENCIES = (1, 8, 64, 256)


def reply(messages: list[dict]) -> str:
    """A student trace ending in a boxed answer; a teacher's Standard or Oracle decision."""
    if any("Intervene: [" in m["content"] for m in messages):  # the teacher's output format
        return "Intervene: No"
    return TRACE + "So the answer is \\boxed{7}."


def _serve(latency: float, urls) -> None:
    with FakeOpenAIServer(reply=reply, latency=latency) as server:
        urls.put(server.base_url)
        while True:
            time.sleep(3600)


class ServerProcess:
    """The fake server in a process of its own, so it does not share the runner's GIL."""

    def __init__(self, latency: float):
        context = multiprocessing.get_context("spawn")
        urls = context.Queue()
        self.process = context.Process(target=_serve, args=(latency, urls), daemon=True)
        self.process.start()
        self.base_url = urls.get(timeout=60)

    def stats(self) -> dict:
        url = self.base_url.removesuffix("/v1") + "/stats"
        with urllib.request.urlopen(url, timeout=10) as response:
            return json.load(response)

    def close(self) -> None:
        self.process.terminate()
        self.process.join(10)


def timed_run(latency: float, teacher: str, n: int, concurrency: int, workdir: str) -> dict:
    """One run against a fresh server process (so its counts and first request are this run's)."""
    server = ServerProcess(latency)
    try:
        return _timed_run(
            server, teacher, n, concurrency, os.path.join(workdir, f"latency-{latency}")
        )
    finally:
        server.close()


def _timed_run(server: ServerProcess, teacher: str, n: int, concurrency: int, workdir: str) -> dict:
    spec = f"openai:student@{server.base_url}?concurrency={max(concurrency, 1)}"
    os.environ["INTBENCH_CACHE"] = os.path.join(workdir, f"cache-{teacher}-{concurrency}-{n}")
    config = RunConfig(
        env_id="IntBench-Math-v0",
        teacher=teacher.replace("SERVER", spec.replace("openai:student@", "openai:teacher@")),
        student=spec,
        n=n,
        env_options={"student_sampling": {"max_tokens": 256}},
    )
    started_wall, started = time.time(), time.perf_counter()
    result = run_eval(
        config,
        os.path.join(workdir, f"run-{teacher}-{concurrency}-{n}"),
        concurrency=concurrency,
        progress=False,
    )
    seconds = time.perf_counter() - started
    stats = server.stats()
    assert len(result.episodes) == n, (len(result.episodes), n)
    by_teacher = stats["by_model"].get("teacher", {"requests": 0, "max_tokens": 0})
    setup = stats["first_request_at"] - started_wall
    running = seconds - setup  # rates over the episodes, not the one-off setup (its own column)
    return {
        "seconds": seconds,
        "episodes_per_s": n / running,
        "requests": stats["requests"],
        "requests_per_s": stats["requests"] / running,
        "max_in_flight": stats["max_in_flight"],
        "setup_s": setup,
        "teacher_requests": by_teacher["requests"],
        "teacher_tokens_per_request": (
            by_teacher["max_tokens"] / by_teacher["requests"] if by_teacher["requests"] else 0.0
        ),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="benchmarks/results/runner_throughput.md")
    parser.add_argument("--episodes", type=int, default=256, help="episodes per scripted run")
    parser.add_argument("--teacher-episodes", type=int, default=64)
    args = parser.parse_args()
    rows, lines = [], []
    with tempfile.TemporaryDirectory() as workdir:
        timed_run(0.0, "at:0.5", 8, 8, workdir)  # imports and first-use costs, not measured
        for latency in LATENCIES_S:
            for concurrency in CONCURRENCIES:
                run = timed_run(latency, "at:0.5", args.episodes, concurrency, workdir)
                rows.append(("at:0.5", latency, concurrency, run))
                print(latency, concurrency, run, flush=True)
        for concurrency in (1, 64):
            run = timed_run(0.0, "SERVER", args.teacher_episodes, concurrency, workdir)
            rows.append(("model", 0.0, concurrency, run))
            print("model", concurrency, run, flush=True)

    def find(teacher, latency, concurrency):
        return next(r for t, lat, c, r in rows if (t, lat, c) == (teacher, latency, concurrency))

    lines.append("# Runner throughput against a local OpenAI-compatible server\n")
    lines.append(
        f"`python benchmarks/runner_throughput.py` — monitor protocol (`IntBench-Math-v0`), "
        f"rates over the episodes (from the server's first request to the end; setup is its "
        f"own column), "
        f"generated math problems, an `openai:` student on a local fake server "
        f"(`tests/fake_openai_server.py` in its own process, one thread per request). {os.cpu_count()} CPU cores, "
        f"load average {os.getloadavg()[0]:.1f} at the end, Python {platform.python_version()}.\n"
    )
    lines.append(
        "| teacher | latency | in flight | episodes | total s | episodes/s | requests/s | "
        "most in flight at the server | setup s (to the first request) |"
    )
    lines.append("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for teacher, latency, concurrency, run in rows:
        episodes = args.episodes if teacher == "at:0.5" else args.teacher_episodes
        lines.append(
            f"| {teacher} | {latency * 1000:.0f} ms | {concurrency} | {episodes} | "
            f"{run['seconds']:.1f} | {run['episodes_per_s']:.1f} | {run['requests_per_s']:.0f} | "
            f"{run['max_in_flight']} | {run['setup_s']:.2f} |"
        )
    slow1, slow64, slow256 = (find("at:0.5", 0.05, c) for c in (1, 64, 256))
    model64 = find("model", 0.0, 64)
    lines.append("")
    lines.append(
        f"- At 50 ms latency, 64 in flight give "
        f"{slow64['episodes_per_s'] / slow1['episodes_per_s']:.1f}x the episodes/s of 1 in flight; "
        f"256 give {slow256['episodes_per_s'] / slow64['episodes_per_s']:.2f}x of 64."
    )
    lines.append(
        f"- A model teacher at 64 in flight on the instant server: "
        f"{model64['requests_per_s']:.0f} requests/s, "
        f"{model64['teacher_tokens_per_request']:.1f} tokens asked per teacher request."
    )
    setups = [find("at:0.5", 0.0, c)["setup_s"] for c in CONCURRENCIES]
    lines.append(
        "- Setup before the first request, by concurrency "
        + ", ".join(f"{c}: {s:.2f} s" for c, s in zip(CONCURRENCIES, setups, strict=True))
        + "."
    )
    per_episode = 1 / find("at:0.5", 0.0, 256)["episodes_per_s"]
    lines.append(
        f"- Projection from the instant-server runs: IntBench's own cost is "
        f"{per_episode * 1000:.1f} ms per scripted episode at 256 in flight, so 36,000 "
        f"rollouts cost {36000 * per_episode / 60:.1f} min of runner time; per model-teacher "
        f"request {1000 / model64['requests_per_s']:.1f} ms."
    )
    Path(args.out).write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
