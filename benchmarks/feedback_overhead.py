"""IntBench's own overhead on a feedback run: the whole ``intbench eval`` command against its episodes.

The feedback protocol on Omni-MATH-style problems (a local JSONL in the hub
schema), K = 5, a student that is always wrong (5 attempts graded by the math
verifier, wrong numeric answers included) and a model teacher (4 feedback
messages): 9 requests per episode.  Both models are served by one fake
OpenAI-compatible server (aiohttp, in its own process, ``--latency`` per
request).  Each round runs the real command line in a subprocess and measures:

* whole-command episodes/s (process start to exit: imports, setup, episodes,
  the end-of-run summary) against episodes-only episodes/s (the server's first
  request to its last reply);
* CPU per episode of the whole process tree (the command, its grader workers
  and sandbox processes; psutil, sampled every 50 ms), over the episodes only
  and over the whole command;
* 64 against 1 episode in flight (1 in flight on fewer episodes: its rate does
  not depend on how many).

Rounds alternate the settings; figures are medians over ``--rounds`` with the
spread (min–max).

    python benchmarks/feedback_overhead.py [--rounds 3] [--large 2048] [--out benchmarks/results/feedback_overhead.md]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import multiprocessing
import os
import platform
import resource
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path

import psutil

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from intbench.metrics import summarize  # noqa: E402

ENV = "IntBench-OmniMath-Feedback-v0"
K = 5
SERVER = "aiohttp fake OpenAI-compatible server (benchmarks/feedback_overhead.py), own process"


def problems_file(path: Path, n: int) -> Path:
    """``n`` Omni-MATH-style rows in the hub schema (numeric answers)."""
    with path.open("w", encoding="utf-8") as handle:
        for i in range(n):
            row = {
                "domain": ["Mathematics -> Algebra -> Other"],
                "difficulty": 5.0,
                "problem": f"Find the number $x$ such that $x - {i} = {i + 7}$.",
                "solution": f"Adding {i} to both sides gives $x = {2 * i + 7}$.",
                "answer": str(2 * i + 7),
                "source": "benchmark",
            }
            handle.write(json.dumps(row) + "\n")
    return path


# ------------------------------------------------------------------ the fake server
def _serve(latency: float, ports) -> None:
    from aiohttp import web

    stats = {"requests": 0, "in_flight": 0, "max_in_flight": 0, "by_model": {}}
    stats.update(first_request_at=None, last_reply_at=None)

    async def completions(request):
        body = await request.json()
        model = body.get("model", "")
        stats["first_request_at"] = stats["first_request_at"] or time.time()
        stats["requests"] += 1
        stats["by_model"][model] = stats["by_model"].get(model, 0) + 1
        stats["in_flight"] += 1
        stats["max_in_flight"] = max(stats["max_in_flight"], stats["in_flight"])
        await asyncio.sleep(latency)
        # the student is always wrong; the teacher gives a short hint
        text = (
            "Recheck the arithmetic when you move the constant across."
            if model == "teacher"
            else "Subtracting on both sides, the answer is \\boxed{-1}."
        )
        stats["in_flight"] -= 1
        stats["last_reply_at"] = time.time()
        return web.json_response(
            {
                "id": "x",
                "object": "chat.completion",
                "created": 0,
                "model": model,
                "choices": [
                    {
                        "index": 0,
                        "message": {"role": "assistant", "content": text},
                        "finish_reason": "stop",
                    }
                ],
                "usage": {"prompt_tokens": 100, "completion_tokens": 12, "total_tokens": 112},
            }
        )

    async def get_stats(request):
        return web.json_response(stats)

    async def reset(request):
        stats.update(requests=0, max_in_flight=0, by_model={})
        stats.update(first_request_at=None, last_reply_at=None)
        return web.json_response({})

    app = web.Application()
    app.router.add_post("/v1/chat/completions", completions)
    app.router.add_get("/stats", get_stats)
    app.router.add_post("/reset", reset)

    async def main():
        runner = web.AppRunner(app, access_log=None)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0, backlog=1024)
        await site.start()
        ports.put(site._server.sockets[0].getsockname()[1])
        await asyncio.Event().wait()

    asyncio.run(main())


class Server:
    def __init__(self, latency: float):
        context = multiprocessing.get_context("spawn")
        ports = context.Queue()
        self.process = context.Process(target=_serve, args=(latency, ports), daemon=True)
        self.process.start()
        self.url = f"http://127.0.0.1:{ports.get(timeout=60)}"

    def _call(self, path: str, method: str = "GET") -> dict:
        request = urllib.request.Request(self.url + path, method=method)
        with urllib.request.urlopen(request, timeout=10) as response:
            return json.load(response)

    def stats(self) -> dict:
        return self._call("/stats")

    def reset(self) -> None:
        self._call("/reset", "POST")

    def close(self) -> None:
        self.process.terminate()
        self.process.join(10)


# ------------------------------------------------------------------ one command
def tree_cpu_s(root: psutil.Process) -> float:
    """CPU seconds of ``root`` and every descendant alive, with the children each has reaped."""
    total = 0.0
    try:
        tree = [root, *root.children(recursive=True)]
    except psutil.Error:  # a process ended while the tree was listed
        return math.nan
    for process in tree:
        try:
            t = process.cpu_times()
        except psutil.Error:
            continue
        total += t.user + t.system + t.children_user + t.children_system
    return total


def measured(command: list[str], env: dict, cwd: Path, timeout: float = 600):
    """Run ``command``; its output, start and end (wall clock), (wall clock, process-tree CPU
    s) samples every 50 ms, and the CPU of the whole tree, reaped children included."""
    samples: list[tuple[float, float]] = []  # (wall clock, tree CPU s)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    children_before = before.ru_utime + before.ru_stime
    started = time.time()
    process = psutil.Popen(
        command, env=env, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT
    )
    done = threading.Event()

    def sample() -> None:
        while not done.is_set():
            cpu = tree_cpu_s(process)
            if not math.isnan(cpu):
                samples.append((time.time(), cpu))
            done.wait(0.05)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    output = process.communicate(timeout=timeout)[0].decode(errors="replace")
    ended = time.time()
    done.set()
    sampler.join()
    if process.returncode != 0:
        raise RuntimeError(f"{command[:4]} failed ({process.returncode}):\n{output[-3000:]}")
    # the whole tree's CPU, exact: the command, reaped, with everything it reaped
    reaped = resource.getrusage(resource.RUSAGE_CHILDREN)
    return output, started, ended, samples, reaped.ru_utime + reaped.ru_stime - children_before


def cpu_at(samples: list[tuple[float, float]], moment: float) -> float:
    """The process tree's CPU seconds at the first sample from ``moment`` on."""
    return next((cpu for when, cpu in samples if when >= moment), samples[-1][1])


def run_command(server: Server, source: Path, n: int, in_flight: int, workdir: Path) -> dict:
    """One ``intbench eval`` in a subprocess; its timings and process-tree CPU."""
    server.reset()
    out = workdir / f"run-{in_flight}-{n}-{time.monotonic_ns()}"
    command = [
        sys.executable, "-m", "intbench.cli", "eval",
        "--env", ENV, "--source", str(source), "-n", str(n), "--k-max", str(K),
        "--student", f"openai:student@{server.url}/v1?concurrency={in_flight}",
        "--teacher", f"openai:teacher@{server.url}/v1?concurrency={in_flight}",
        "--concurrency", str(in_flight), "--no-progress", "--out", str(out),
    ]  # fmt: skip
    env = {**os.environ, "PYTHONPATH": str(ROOT), "INTBENCH_CACHE": str(out) + "-cache"}
    # compiled once, as in an installed package (the warm-up run fills this folder)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env["PYTHONPYCACHEPREFIX"] = str(workdir / "pycache")
    output, started, ended, samples, whole_cpu = measured(command, env, ROOT)
    stats = server.stats()
    first, last = stats["first_request_at"], stats["last_reply_at"]

    assert stats["requests"] == 9 * n, (stats["requests"], 9 * n, output[-2000:])
    episodes_s = last - first
    records = [json.loads(line) for line in (out / "episodes.jsonl").open(encoding="utf-8")]
    summarize_started = time.perf_counter()
    summarize(records)  # as the command does at its end, timed alone
    summary_s = time.perf_counter() - summarize_started
    return {
        "in_flight": in_flight,
        "episodes": n,
        "whole_s": ended - started,
        "setup_s": first - started,
        "setup_cpu_s": cpu_at(samples, first),
        "episodes_s": episodes_s,
        "after_s": ended - last,
        "whole_rate": n / (ended - started),
        "episodes_rate": n / episodes_s,
        "summary_s": summary_s,
        "episode_cpu_ms": 1000 * (cpu_at(samples, last) - cpu_at(samples, first)) / n,
        "whole_cpu_ms": 1000 * whole_cpu / n,
        "max_in_flight": stats["max_in_flight"],
    }


def import_floor_cpu_s(workdir: Path, rounds: int = 3) -> float:
    """CPU seconds of a bare interpreter importing only the third-party modules the command
    needs before its first request (the HTTP client, Gymnasium with NumPy, Jinja): what
    no change to IntBench's own setup can remove.  Median over ``rounds``."""
    env = {**os.environ, "PYTHONPYCACHEPREFIX": str(workdir / "pycache")}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    command = [sys.executable, "-c", "import http.client, gymnasium, jinja2"]
    return statistics.median(measured(command, env, ROOT)[4] for _ in range(rounds))


def grading_queue(server: Server, source: Path, n: int, workdir: Path) -> dict:
    """One run in this process at 64 in flight: how often a grading call found every grader
    worker busy, and how long it waited (the pool's own counters)."""
    from intbench.runner import RunConfig, run_eval
    from intbench.verifiers.math import default_pool

    server.reset()
    os.environ["INTBENCH_CACHE"] = str(workdir / f"queue-cache-{time.monotonic_ns()}")
    spec = f"@{server.url}/v1?concurrency=64"
    config = RunConfig(
        env_id=ENV,
        teacher="openai:teacher" + spec,
        student="openai:student" + spec,
        n=n,
        source=str(source),
        env_options={"k_max": K},
    )
    run_eval(config, workdir / f"queue-{time.monotonic_ns()}", concurrency=64, progress=False)
    pool = default_pool()
    gradings = K * n  # every attempt of an always-wrong student is graded
    return {
        "workers": pool.size,
        "started": pool.started,
        "gradings": gradings,
        "worker_calls": pool.calls,
        "queued": pool.queued,
        "queue_wait_ms_per_grading": 1000 * pool.queue_wait_s / gradings,
    }


def median_spread(values: list[float], digits: int = 1) -> str:
    return f"{statistics.median(values):.{digits}f} ({min(values):.{digits}f}–{max(values):.{digits}f})"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--episodes", type=int, default=128, help="episodes at 64 in flight")
    parser.add_argument("--serial-episodes", type=int, default=24, help="episodes at 1 in flight")
    parser.add_argument("--latency", type=float, default=0.05)
    parser.add_argument("--out", default=None, help="a Markdown file for the results")
    parser.add_argument(
        "--large", type=int, default=0, help="also one run of this many episodes at 64 in flight"
    )
    args = parser.parse_args()
    server = Server(args.latency)
    runs: dict = {64: [], 1: []}
    try:
        with tempfile.TemporaryDirectory() as tmp:
            work = Path(tmp)
            source = problems_file(work / "omni_math_style.jsonl", args.episodes)
            run_command(server, source, 8, 8, work)  # first-use costs (disk caches), not kept
            for round_ in range(args.rounds):
                for in_flight, n in ((64, args.episodes), (1, args.serial_episodes)):
                    run = run_command(server, source, n, in_flight, work)
                    runs[in_flight].append(run)
                    print(round_, json.dumps(run), flush=True)
            runs["floor_cpu_s"] = import_floor_cpu_s(work)
            runs["queue"] = grading_queue(server, source, args.episodes, work)
            print("queue", json.dumps(runs["queue"]), flush=True)
            if args.large:
                source = problems_file(work / "omni_math_style_large.jsonl", args.large)
                runs["large"] = [run_command(server, source, args.large, 64, work)]
                print("large", json.dumps(runs["large"][0]), flush=True)
    finally:
        server.close()
    lines = report(runs, args)
    print("\n".join(lines))
    if args.out:
        Path(args.out).write_text("\n".join(lines) + "\n", encoding="utf-8")


def report(runs: dict, args) -> list[str]:
    many, one = runs[64], runs[1]
    column = lambda rs, key: [r[key] for r in rs]  # noqa: E731
    lines = [
        "# Feedback run overhead: the whole command against its episodes\n",
        f"`python benchmarks/feedback_overhead.py --rounds {args.rounds} --episodes "
        f"{args.episodes} --serial-episodes {args.serial_episodes}"
        + (f" --large {args.large}" if args.large else "")
        + f"` — `intbench eval --env {ENV}` "
        f"on {args.episodes} Omni-MATH-style problems (local JSONL), K = {K}, an always-wrong "
        f"`openai:` student and an `openai:` teacher: 9 requests per episode, every attempt graded "
        f"by the math verifier; bytecode compiled once, by a first run that is not counted. Server: {SERVER}, {args.latency * 1000:.0f} ms per request. "
        f"{os.cpu_count()} CPU cores shared with other work (load average "
        f"{os.getloadavg()[0]:.1f} at the end), Python {platform.python_version()}. "
        f"Medians over {args.rounds} rounds (min–max).\n",
        "| in flight | episodes | whole command s | setup s (to the first request) | episodes s "
        "| after the last reply s | episodes/s, whole command | episodes/s, episodes only "
        "| whole / episodes-only | CPU ms / episode, episodes only (process tree) "
        "| CPU ms / episode, whole command (process tree) |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for rs in (many, one):
        ratios = [r["whole_rate"] / r["episodes_rate"] for r in rs]
        lines.append(
            f"| {rs[0]['in_flight']} | {rs[0]['episodes']} | {median_spread(column(rs, 'whole_s'))} "
            f"| {median_spread(column(rs, 'setup_s'), 2)} | {median_spread(column(rs, 'episodes_s'))} "
            f"| {median_spread(column(rs, 'after_s'), 2)} "
            f"| {median_spread(column(rs, 'whole_rate'))} | {median_spread(column(rs, 'episodes_rate'))} "
            f"| {median_spread(ratios, 2)} | {median_spread(column(rs, 'episode_cpu_ms'))} "
            f"| {median_spread(column(rs, 'whole_cpu_ms'))} |"
        )
    speedups = [a["episodes_rate"] / b["episodes_rate"] for a, b in zip(many, one, strict=True)]
    latency_limit = 1 / (9 * args.latency)
    lines += [
        "",
        f"- 64 in flight give {median_spread(speedups)}x the episodes/s of 1 in flight "
        f"(episodes only, round by round); 1 in flight runs at "
        f"{statistics.median(column(one, 'episodes_rate')) / latency_limit:.0%} of the latency "
        f"limit (1 / (9 x {args.latency * 1000:.0f} ms) = {latency_limit:.2f} episodes/s).",
        f"- Whole command at 64 in flight: {median_spread([r['whole_rate'] / r['episodes_rate'] for r in many], 2)} "
        f"of the episodes-only rate; the time after the last reply (the end-of-run summary, "
        f"closing) is {median_spread([r['after_s'] / r['episodes_s'] for r in many], 2)} of the "
        "episodes' time.",
        f"- The end-of-run summary alone (`summarize` on the run's records, timed after the "
        f"command): {median_spread([r['summary_s'] for r in many], 3)} s, "
        f"{median_spread([r['summary_s'] / r['episodes_s'] for r in many], 3)} of the "
        "episodes' time.",
        f"- Most requests in flight at the server: {max(column(many, 'max_in_flight'))}.",
        f"- CPU to the first request (process tree) at 64 in flight: "
        f"{median_spread(column(many, 'setup_cpu_s'), 2)} s; a bare interpreter importing only "
        f"the modules needed before it that are not IntBench's (http.client, gymnasium with "
        f"numpy, jinja2) takes {runs['floor_cpu_s']:.2f} s. Setup and the time after the last "
        f"reply together are {median_spread([(r['setup_s'] + r['after_s']) / r['episodes_s'] for r in many], 2)} "
        "of the episodes' time (whole / episodes-only reaches 0.8 at 0.25 or less).",
    ]
    queue = runs["queue"]
    lines.append(
        f"- Grading at 64 in flight (one run in the benchmark's process; the pool may grow to "
        f"{queue['workers']} workers, which start when an answer needs one): "
        f"{queue['worker_calls']} of {queue['gradings']} gradings needed a worker (the others "
        f"were decided in process), {queue['started']} worker(s) started, {queue['queued']} "
        f"found every worker busy; queue wait {queue['queue_wait_ms_per_grading']:.2f} ms per "
        "grading on average."
    )
    for run in runs.get("large", []):
        lines.append(
            f"- One run of {run['episodes']} episodes at 64 in flight: episodes "
            f"{run['episodes_s']:.1f} s ({run['episodes_rate']:.1f} episodes/s), whole command "
            f"{run['whole_s']:.1f} s ({run['whole_rate'] / run['episodes_rate']:.2f} of the "
            f"episodes-only rate), after the last reply {run['after_s']:.2f} s; the summary alone "
            f"{run['summary_s']:.2f} s = {run['summary_s'] / run['episodes_s']:.3f} of the "
            f"episodes' time; CPU {run['episode_cpu_ms']:.1f} ms / episode (episodes only)."
        )
    return lines


if __name__ == "__main__":
    main()
