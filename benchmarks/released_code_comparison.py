"""IntBench against the feedback paper's released code on the same feedback runs.

The released code (github.com/BartekCupial/feedback-bottleneck; not part of this
repository) runs unmodified from a checkout given by ``--released-src``, with the
Python of ``--released-python`` (an environment with its dependencies).  The glue
it needs, written by this script into a temporary folder and nothing else:

* a ``vllm`` stand-in package: its client actor imports ``llm_actor``, which imports
  vLLM at module level, though the client path never uses it (vLLM needs a GPU);
* a local byte-level tokenizer with a chat template: its client actor counts tokens
  with a Hugging Face tokenizer (``tokenizer_id``), and the hub is not reachable;
* its command line (``scripts/collect_episodes.py``, the settings of its
  ``scripts/run_math.sh`` and ``_common.sh``) with the client actor pointed at the
  fake server: ``hierarchical_separate`` with the student as ``llm_actor`` and the
  teacher as ``llm_judge``, K = 5 attempts (``--math-args.max-turns 5``).

Both run the same Omni-MATH-style problems (benchmarks/feedback_overhead.py) against
the same fake OpenAI-compatible server (50 ms per request, an always-wrong student, a
teacher's hint): 9 requests per episode in both.  Measured per run: episodes/s over
the episodes (the server's first request to its last reply) and CPU per episode of
the whole process tree over that window (psutil; the released code's Ray processes
and IntBench's grader workers included).  Rounds alternate the two, each run starting
once the machine is idle again; medians over ``--rounds`` with min–max.

    python benchmarks/released_code_comparison.py --released-src /tmp/fb \\
        --released-python /tmp/fb311/bin/python [--rounds 3] [--out FILE]
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from feedback_overhead import (  # noqa: E402
    SERVER,
    K,
    Server,
    cpu_at,
    measured,
    problems_file,
    run_command,
)

VLLM_STAND_IN = """\
class _Unavailable:
    def __init__(self, *args, **kwargs):
        raise RuntimeError("vLLM is not installed here; the benchmark uses the client actor")


LLM = AsyncEngineArgs = AsyncLLMEngine = SamplingParams = _Unavailable
"""

TOKENIZER = """\
from tokenizers import Tokenizer, decoders, models, pre_tokenizers
from transformers import PreTrainedTokenizerFast

alphabet = sorted(pre_tokenizers.ByteLevel.alphabet())
tokenizer = Tokenizer(models.BPE(vocab={"<eos>": 0, **{c: i + 1 for i, c in enumerate(alphabet)}}, merges=[]))
tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
tokenizer.decoder = decoders.ByteLevel()
template = (
    "{% for m in messages %}<{{ m['role'] }}>{{ m['content'] if m['content'] is string "
    "else m['content'] | map(attribute='text') | join('') }}\\n{% endfor %}"
    "{% if add_generation_prompt %}<assistant>{% endif %}"
)
PreTrainedTokenizerFast(tokenizer_object=tokenizer, eos_token="<eos>", chat_template=template).save_pretrained({path!r})
"""


def write_glue(python: str, folder: Path) -> tuple[Path, Path]:
    """The vLLM stand-in (a folder for PYTHONPATH) and the local tokenizer's folder."""
    stand_in = folder / "glue"
    (stand_in / "vllm" / "lora").mkdir(parents=True)
    (stand_in / "vllm" / "__init__.py").write_text(VLLM_STAND_IN)
    (stand_in / "vllm" / "lora" / "__init__.py").write_text("")
    (stand_in / "vllm" / "lora" / "request.py").write_text(
        "from vllm import _Unavailable as LoRARequest  # noqa: F401\n"
    )
    tokenizer = folder / "tokenizer"
    subprocess.run([python, "-c", TOKENIZER.replace("{path!r}", repr(str(tokenizer)))], check=True)
    return stand_in, tokenizer


def released_command(url: str, source: Path, n: int, workers: int, out: Path, tokenizer: Path):
    client: list[str] = []
    for role, model in (("llm-actor", "student"), ("llm-judge", "teacher")):
        client += [
            f"--{role}.actor-type", "client",
            f"--{role}.client-args.model-id", model,
            f"--{role}.client-args.base-url", f"{url}/v1",
            f"--{role}.client-args.tokenizer-id", str(tokenizer),
        ]  # fmt: skip
    distributed = ["--use-distributed"] if workers > 1 else ["--no-use-distributed"]
    return [
        "-m", "scripts.collect_episodes", "--exp-name", "math", "--env-name", "math",
        "--math-args.dataset-path", str(source), "--math-args.max-turns", str(K),
        "--math-args.verification-mode", "algorithmic",
        "--num-eval-episodes", str(n), "--output-dir", str(out),
        "--no-log-wandb", "--wandb-mode", "offline", "--record-stats",
        *distributed, "--num-eval-workers", str(workers),
        "--llm-agent", "hierarchical_separate", "--max-history", "1",
        "--refinement-prompt.feedback-mode", "feedback",
        "--refinement-prompt.teacher-reference-mode", "none",
        "--refinement-prompt.teacher-prompt-style", "reasoning_feedback_tag",
        "--refinement-prompt.teacher-parse-feedback-tags",
        "--llm-actor.sampling-args.temperature", "0.0",
        *client,
    ]  # fmt: skip


def run_released(args, server: Server, source: Path, n: int, workers: int, glue, work: Path):
    stand_in, tokenizer = glue
    server.reset()
    out = work / f"released-{workers}-{n}-{time.monotonic_ns()}"
    command = [
        args.released_python,
        *released_command(server.url, source, n, workers, out, tokenizer),
    ]
    env = {
        **os.environ,
        "PYTHONPATH": f"{stand_in}{os.pathsep}{args.released_src}",
        "OPENAI_API_KEY": "unused",
        "RAY_USAGE_STATS_ENABLED": "0",
    }
    output, started, ended, samples, whole_cpu = measured(
        command, env, Path(args.released_src), timeout=1800
    )
    stats = server.stats()
    assert stats["requests"] == 9 * n, (stats["requests"], 9 * n, output[-2000:])
    first, last = stats["first_request_at"], stats["last_reply_at"]
    return {
        "episodes": n,
        "in_flight": workers,
        "setup_s": first - started,
        "episodes_rate": n / (last - first),
        "episode_cpu_ms": 1000 * (cpu_at(samples, last) - cpu_at(samples, first)) / n,
        "whole_cpu_ms": 1000 * whole_cpu / n,
        "max_in_flight": stats["max_in_flight"],
    }


SETTLE_BUSY_PERCENT = 20.0
SETTLE_MAX_S = 60.0


def settle() -> float:
    """Wait until the machine is idle again (below SETTLE_BUSY_PERCENT over a second, at
    most SETTLE_MAX_S), so that no run pays for the previous one's leftovers: Ray's
    daemons outlive the released code's command for a few seconds.  The seconds waited."""
    import psutil

    started = time.monotonic()
    while time.monotonic() - started < SETTLE_MAX_S:
        if psutil.cpu_percent(interval=1.0) < SETTLE_BUSY_PERCENT:
            break
    return time.monotonic() - started


def median_spread(values: list[float], digits: int = 2) -> str:
    return f"{statistics.median(values):.{digits}f} ({min(values):.{digits}f}–{max(values):.{digits}f})"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--released-src", required=True, help="a checkout of the released code")
    parser.add_argument("--released-python", required=True, help="a Python with its dependencies")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--episodes", type=int, default=128, help="episodes at many in flight")
    parser.add_argument("--serial-episodes", type=int, default=16, help="episodes at 1 in flight")
    parser.add_argument("--released-workers", type=int, default=8, help="its Ray episode workers")
    parser.add_argument("--released-episodes", type=int, default=64)
    parser.add_argument("--out", default=None)
    args = parser.parse_args()
    commit = subprocess.run(
        ["git", "-C", args.released_src, "rev-parse", "HEAD"], capture_output=True, text=True
    ).stdout.strip()
    server = Server(0.05)
    settings = [
        ("IntBench", 64, args.episodes),
        ("released", args.released_workers, args.released_episodes),
        ("IntBench", 1, args.serial_episodes),
        ("released", 1, args.serial_episodes),
    ]
    runs: dict[tuple, list[dict]] = {(who, w): [] for who, w, _ in settings}
    waits: list[float] = []
    try:
        with tempfile.TemporaryDirectory() as tmp:
            work = Path(tmp)
            glue = write_glue(args.released_python, work)
            source = problems_file(work / "omni_math_style.jsonl", args.episodes)
            run_command(server, source, 8, 8, work)  # IntBench's bytecode, compiled once
            run_released(args, server, source, 2, 1, glue, work)  # its bytecode and caches
            for round_ in range(args.rounds):
                for who, in_flight, n in settings:
                    waits.append(settle())
                    if who == "IntBench":
                        run = run_command(server, source, n, in_flight, work)
                    else:
                        run = run_released(args, server, source, n, in_flight, glue, work)
                    runs[(who, in_flight)].append(run)
                    print(round_, who, in_flight, run, flush=True)
    finally:
        server.close()
    lines = report(runs, args, commit, max(waits))
    print("\n".join(lines))
    if args.out:
        Path(args.out).write_text("\n".join(lines) + "\n", encoding="utf-8")


def report(runs: dict, args, commit: str, longest_wait_s: float) -> list[str]:
    command = (
        f"python benchmarks/released_code_comparison.py --released-src {args.released_src} "
        f"--released-python {args.released_python} --rounds {args.rounds} --episodes "
        f"{args.episodes} --serial-episodes {args.serial_episodes} --released-workers "
        f"{args.released_workers} --released-episodes {args.released_episodes}"
    )
    lines = [
        "# IntBench against the feedback paper's released code\n",
        f"`{command}` — the released code (BartekCupial/feedback-bottleneck, commit {commit}) "
        "run unmodified by its `scripts/collect_episodes.py` with the glue described in the "
        "script (a vLLM stand-in module, a local byte-level tokenizer, its client actor "
        "pointed at the server), against `intbench eval --env IntBench-OmniMath-Feedback-v0`. "
        f"Same Omni-MATH-style problems, K = {K}, an always-wrong student and a model teacher: "
        f"9 requests per episode in both. Server: {SERVER}, 50 ms per request. Machine: "
        f"{os.cpu_count()} CPU cores shared with other work (load average "
        f"{os.getloadavg()[0]:.1f} at the end), {platform.platform()}, Python "
        f"{platform.python_version()} for both (the released code asks for 3.12 and pins "
        "transformers 5.5.4 and datasets < 4; the only CPU torch wheel here is for 3.11, so it "
        "ran on 3.11 with transformers 5.25 and datasets 5.2). Medians over "
        f"{args.rounds} rounds (min–max), rounds alternating; each run starts once the "
        f"machine's CPU is below {SETTLE_BUSY_PERCENT:.0f}% busy over a second (the longest "
        f"wait: {longest_wait_s:.0f} s).\n",
        "| code | in flight | episodes | episodes/s (episodes only) | CPU ms / episode, "
        "episodes only (process tree) | CPU ms / episode, whole command | setup s |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for (who, in_flight), rs in runs.items():
        column = lambda key: [r[key] for r in rs]  # noqa: E731, B023
        lines.append(
            f"| {who} | {in_flight} | {rs[0]['episodes']} | {median_spread(column('episodes_rate'))} "
            f"| {median_spread(column('episode_cpu_ms'), 1)} "
            f"| {median_spread(column('whole_cpu_ms'), 1)} | {median_spread(column('setup_s'), 1)} |"
        )
    ours_many, ours_one = runs[("IntBench", 64)], runs[("IntBench", 1)]
    theirs_many = runs[("released", args.released_workers)]
    theirs_one = runs[("released", 1)]

    def ratios(a, b, key):
        return [x[key] / y[key] for x, y in zip(a, b, strict=True)]

    lines += [
        "",
        f"- Episodes/s, IntBench at 64 in flight against the released code at "
        f"{args.released_workers} Ray workers: {median_spread(ratios(ours_many, theirs_many, 'episodes_rate'))}x "
        "(round by round; target ≥ 15x).",
        f"- Episodes/s at 1 in flight: {median_spread(ratios(ours_one, theirs_one, 'episodes_rate'))}x "
        "(target ≥ 1.5x); the latency limit is 1 / (9 x 50 ms) = 2.22 episodes/s.",
        f"- CPU per episode (episodes only), released / IntBench: at many in flight "
        f"{median_spread(ratios(theirs_many, ours_many, 'episode_cpu_ms'), 1)}x, at 1 in flight "
        f"{median_spread(ratios(theirs_one, ours_one, 'episode_cpu_ms'), 1)}x.",
        "- Most requests in flight at the server: IntBench "
        f"{max(r['max_in_flight'] for r in ours_many)}, released "
        f"{max(r['max_in_flight'] for r in theirs_many)}.",
    ]
    lines.append(
        "- The released code's concurrency is its number of Ray episode workers "
        "(`--use-distributed --num-eval-workers`), each a process of its own; "
        f"{args.released_workers} is the setting measured here: at "
        f"{statistics.median(r['episode_cpu_ms'] for r in theirs_many):.0f} ms of CPU per "
        f"episode, {os.cpu_count()} idle cores would cap it at "
        f"{os.cpu_count() * 1000 / statistics.median(r['episode_cpu_ms'] for r in theirs_many):.1f} "
        "episodes/s whatever the number of workers."
    )
    lines.append(
        "- CPU of the whole command counts the processes it waited for; the released code's "
        "Ray processes (GCS, raylet, workers) are not among them, so its whole-command "
        "figure leaves them out. The episodes-only figures sample the live process tree and "
        "include them."
    )
    return lines


if __name__ == "__main__":
    main()
