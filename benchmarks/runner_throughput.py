"""Runner throughput against a local OpenAI-compatible server: is IntBench the bottleneck?

Every figure comes from one process, measured side by side:

* episodes/s and requests/s with a scripted ``at:0.5`` teacher and an
  ``openai:`` student, at 0 ms and 50 ms server latency, at concurrency
  1, 8, 64 and 256, and 64 in flight over ``--workers 2`` (32 each);
* where the time goes: the CPU the runner (all its threads and processes,
  grader workers included, less the setup's, measured alone) spends per episode and the server spends per
  request, and the ceiling those two put on episodes/s on this machine's cores;
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
import resource
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from intbench.runner import RunConfig, _make_env, run_eval  # noqa: E402
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
        SERVERS.add(self.process.pid)

    def cpu_s(self) -> float:
        import psutil

        times = psutil.Process(self.process.pid).cpu_times()
        return times.user + times.system

    def stats(self) -> dict:
        url = self.base_url.removesuffix("/v1") + "/stats"
        with urllib.request.urlopen(url, timeout=10) as response:
            return json.load(response)

    def close(self) -> None:
        self.process.terminate()
        self.process.join(10)


def timed_run(
    latency: float, teacher: str, n: int, concurrency: int, workdir: str, workers: int = 1
) -> dict:
    """One run against a fresh server process (so its counts and first request are this run's)."""
    server = ServerProcess(latency)
    try:
        return _timed_run(
            server, teacher, n, concurrency, os.path.join(workdir, f"latency-{latency}"), workers
        )
    finally:
        server.close()


SERVERS: set[int] = set()  # the fake servers' pids: their CPU is counted apart


def _cpu_s() -> float:
    """CPU seconds of this process and its descendants: worker processes that have
    ended, and those still running (the grader pool's workers, sandboxes) but the
    fake server."""
    import psutil

    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    total = time.process_time() + children.ru_utime + children.ru_stime
    for child in psutil.Process().children(recursive=True):
        try:
            if child.pid in SERVERS or child.ppid() in SERVERS:
                continue
            times = child.cpu_times()
        except psutil.Error:
            continue  # ended meanwhile: counted once reaped
        total += times.user + times.system + times.children_user + times.children_system
    return total


def _setup_cpu_s(config: RunConfig) -> float:
    """CPU seconds of a run's setup (problems resolved, the first env made), measured alone."""
    started = _cpu_s()
    _make_env(config).close()
    return _cpu_s() - started


def _timed_run(
    server: ServerProcess, teacher: str, n: int, concurrency: int, workdir: str, workers: int = 1
) -> dict:
    spec = f"openai:student@{server.base_url}?concurrency={max(concurrency, 1)}"
    os.environ["INTBENCH_CACHE"] = os.path.join(workdir, f"cache-{teacher}-{concurrency}-{n}")
    config = RunConfig(
        env_id="IntBench-Math-v0",
        teacher=teacher.replace("SERVER", spec.replace("openai:student@", "openai:teacher@")),
        student=spec,
        n=n,
        env_options={"student_sampling": {"max_tokens": 256}},
    )
    setup_cpu = _setup_cpu_s(config)
    os.environ["INTBENCH_CACHE"] += "-run"  # the run generates its baselines itself
    runner_cpu, server_cpu = _cpu_s(), server.cpu_s()
    started_wall, started = time.time(), time.perf_counter()
    result = run_eval(
        config,
        os.path.join(workdir, f"run-{teacher}-{concurrency}-{n}-{workers}"),
        concurrency=concurrency,
        progress=False,
        workers=workers,
    )
    seconds = time.perf_counter() - started
    # workers have been joined (their CPU is in RUSAGE_CHILDREN), the server not yet;
    # the setup's CPU is left out, as its time has its own column
    runner_cpu = _cpu_s() - runner_cpu - setup_cpu
    server_cpu = server.cpu_s() - server_cpu
    stats = server.stats()
    assert len(result.episodes) == n, (len(result.episodes), n)
    by_teacher = stats["by_model"].get("teacher", {"requests": 0, "max_tokens": 0})
    setup = stats["first_request_at"] - started_wall
    running = seconds - setup  # rates over the episodes, not the one-off setup (its own column)
    return {
        "episodes": n,
        "seconds": seconds,
        "episodes_per_s": n / running,
        "requests": stats["requests"],
        "requests_per_s": stats["requests"] / running,
        "max_in_flight": stats["max_in_flight"],
        "setup_s": setup,
        "runner_cpu_ms_per_episode": 1000 * runner_cpu / n,
        "server_cpu_ms_per_request": 1000 * server_cpu / stats["requests"],
        "server_cpu_ms_per_episode": 1000 * server_cpu / n,
        "teacher_requests": by_teacher["requests"],
        "teacher_tokens_per_request": (
            by_teacher["max_tokens"] / by_teacher["requests"] if by_teacher["requests"] else 0.0
        ),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="benchmarks/results/runner_throughput.md")
    parser.add_argument("--episodes", type=int, default=256, help="episodes per scripted run")
    parser.add_argument("--teacher-episodes", type=int, default=256)
    parser.add_argument(
        "--long-episodes", type=int, default=1024, help="episodes of the --workers 1 vs 2 runs"
    )
    args = parser.parse_args()
    rows, lines = [], []
    with tempfile.TemporaryDirectory() as workdir:
        timed_run(0.0, "at:0.5", 8, 8, workdir)  # imports and first-use costs, not measured
        for latency in LATENCIES_S:
            for concurrency in CONCURRENCIES:
                run = timed_run(latency, "at:0.5", args.episodes, concurrency, workdir)
                rows.append(("at:0.5", latency, concurrency, 1, run))
                print(latency, concurrency, run, flush=True)
        # 64 in flight in one process and over 2 worker processes, and 256 in one, on
        # runs long enough that every slot is refilled several times and a worker's
        # start-up (a fresh interpreter, imports, problems) is amortised
        for concurrency, workers in ((64, 1), (64, 2), (256, 1)):
            run = timed_run(
                0.05, "at:0.5", args.long_episodes, concurrency // workers, workdir, workers
            )
            rows.append(("at:0.5", 0.05, concurrency, workers, run))
            print(concurrency, "over", workers, "workers", run, flush=True)
        for concurrency in (1, 64):
            run = timed_run(0.0, "SERVER", args.teacher_episodes, concurrency, workdir)
            rows.append(("model", 0.0, concurrency, 1, run))
            print("model", concurrency, run, flush=True)

    def find(teacher, latency, concurrency, workers=1):
        key = (teacher, latency, concurrency, workers)
        return next(r for *row, r in rows if tuple(row) == key)  # the first such row

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
        "| teacher | latency | in flight | workers | episodes | total s | episodes/s | "
        "requests/s | most in flight at the server | setup s (to the first request) | "
        "runner CPU ms / episode | server CPU ms / request |"
    )
    lines.append("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for teacher, latency, concurrency, workers, run in rows:
        episodes = run["episodes"]
        lines.append(
            f"| {teacher} | {latency * 1000:.0f} ms | {concurrency} | {workers} | {episodes} | "
            f"{run['seconds']:.1f} | {run['episodes_per_s']:.1f} | {run['requests_per_s']:.0f} | "
            f"{run['max_in_flight']} | {run['setup_s']:.2f} | "
            f"{run['runner_cpu_ms_per_episode']:.1f} | {run['server_cpu_ms_per_request']:.1f} |"
        )
    slow1, slow64, slow256 = (find("at:0.5", 0.05, c) for c in (1, 64, 256))
    model64 = find("model", 0.0, 64)
    lines.append("")
    lines.append(
        f"- At 50 ms latency, 64 in flight give "
        f"{slow64['episodes_per_s'] / slow1['episodes_per_s']:.1f}x the episodes/s of 1 in flight; "
        f"256 give {slow256['episodes_per_s'] / slow64['episodes_per_s']:.2f}x of 64, and the "
        f"whole run (setup included) takes {slow256['seconds'] / slow64['seconds']:.2f}x as long "
        f"(the episodes/s of 256 include starting most of its 256 slots, which overlaps the "
        f"first requests)."
    )

    def find_long(concurrency, workers):
        return next(
            r
            for t, lat, c, w, r in rows
            if r["episodes"] == args.long_episodes and (c, w) == (concurrency, workers)
        )

    long_one, long_two, long_256 = find_long(64, 1), find_long(64, 2), find_long(256, 1)
    lines.append(
        f"- On {args.long_episodes} episodes at 50 ms (every slot refilled several times), "
        f"64 in flight give {long_one['episodes_per_s'] / slow1['episodes_per_s']:.1f}x of 1 "
        f"in flight in one process and "
        f"{long_two['episodes_per_s'] / slow1['episodes_per_s']:.1f}x over 2 worker processes "
        f"(32 each); 256 in flight give "
        f"{long_256['episodes_per_s'] / long_one['episodes_per_s']:.2f}x of 64 "
        f"({long_256['seconds'] / long_one['seconds']:.2f}x the time of the whole run)."
    )
    cores = os.cpu_count() or 1
    runner_ms, server_ms = (
        long_one["runner_cpu_ms_per_episode"],
        long_one["server_cpu_ms_per_episode"],
    )
    lines.append(
        f"- Where the time goes at 50 ms and 64 in flight: the runner spends {runner_ms:.1f} ms "
        f"of CPU per episode (all threads and processes, grader workers included, setup "
        f"excluded; the profile's largest parts are "
        f"prompt rendering, record serialisation, the baseline cache and the HTTP client) and "
        f"the fake server {server_ms:.1f} ms ({long_one['server_cpu_ms_per_request']:.1f} ms "
        f"per request). One process runs Python on one core at a time, so it cannot pass "
        f"1000 / {runner_ms:.1f} = {1000 / runner_ms:.0f} episodes/s "
        f"({1000 / runner_ms / slow1['episodes_per_s']:.1f}x the rate at 1 in flight); "
        f"worker processes share the {cores} cores with the server: at most "
        f"{cores * 1000 / (runner_ms + server_ms):.0f} episodes/s "
        f"({cores * 1000 / (runner_ms + server_ms) / slow1['episodes_per_s']:.1f}x)."
    )
    model_runner_ms = (
        model64["runner_cpu_ms_per_episode"] * args.teacher_episodes / model64["requests"]
    )
    lines.append(
        f"- A model teacher at 64 in flight on the instant server: "
        f"{model64['requests_per_s']:.0f} requests/s, "
        f"{model64['teacher_tokens_per_request']:.1f} tokens asked per teacher request; "
        f"CPU per request: runner "
        f"{model_runner_ms:.1f} ms, server "
        f"{model64['server_cpu_ms_per_request']:.1f} ms, so one process allows at most "
        f"1000 / {model_runner_ms:.1f} = {1000 / model_runner_ms:.0f} requests/s."
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
