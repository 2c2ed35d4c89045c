"""Start time of the embedded SmolLM2 (transformers runtime) with and without the weights cache.

Starts two fresh Python processes one after the other on an empty cache
directory (``INTBENCH_CACHE``): the first converts the GGUF and writes the
cached copy, the second loads that copy.  Each one's time is wall-clock from
spawning the process to the backend being ready (imports included), so it is
what a user waits for.  Each process also answers one short greedy prompt, and
the answers must agree.  A third process then reads the GGUF directly, as
every start did before the cache, for reference.  Writes a Markdown report;
acceptance is a second start at least 3x faster than the first.

    python benchmarks/embedded_start.py [--output benchmarks/results/embedded_start.md]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import platform
import shlex
import subprocess
import sys
import tempfile
import time
from pathlib import Path

TARGET_RATIO = 3.0
PROMPT = "What is 2 + 2? Answer with one number."
DEFAULT_OUTPUT = Path(__file__).parent / "results" / "embedded_start.md"


def child(mode: str) -> None:
    """One start: load the backend, report, answer one prompt, report again.

    ``mode`` "cache" is the normal start; "gguf" reads the GGUF directly, as
    every start did before the cache, for reference.
    """
    started = time.perf_counter()
    import torch  # noqa: F401 -- timed apart from the model load
    import transformers  # noqa: F401

    import intbench.agents.embedded as embedded
    from intbench.agents.backends import load_backend
    from intbench.agents.backends.hf import HFBackend
    from intbench.agents.base import SamplingParams

    imported = time.perf_counter()
    conversions = []
    convert = embedded._convert_gguf

    def counting(path):
        began = time.perf_counter()
        result = convert(path)
        conversions.append(time.perf_counter() - began)
        return result

    embedded._convert_gguf = counting
    if mode == "cache":
        backend = load_backend("smollm2?runtime=hf")
    else:
        gguf = embedded.embedded_gguf_path()
        backend = HFBackend(gguf.parent, gguf_file=gguf.name, dtype="float32")
    ready = time.perf_counter()
    event = {"event": "ready", "in_process_s": ready - started, "load_s": ready - imported}
    print(json.dumps(event), flush=True)
    [answer] = backend.generate(
        [[{"role": "user", "content": PROMPT}]], SamplingParams(temperature=0, max_tokens=8)
    )
    print(
        json.dumps(
            {
                "event": "done",
                "converted": len(conversions),
                "convert_s": sum(conversions),
                "answer": answer.text,
            }
        ),
        flush=True,
    )


def start(cache: Path, mode: str = "cache") -> dict:
    """Spawn one process and time it until it says the model is ready."""
    env = {**os.environ, "INTBENCH_CACHE": str(cache), "TQDM_DISABLE": "1"}
    load_before = os.getloadavg()[0]
    spawned = time.perf_counter()
    process = subprocess.Popen(
        [sys.executable, __file__, "--child", mode],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    result: dict = {"load_before": load_before, "mode": mode}
    for line in process.stdout:
        if not line.startswith("{"):
            continue
        event = json.loads(line)
        if event["event"] == "ready":
            result["wall_s"] = time.perf_counter() - spawned
            result["in_process_s"] = event["in_process_s"]
            result["load_s"] = event["load_s"]
            result["load_at_ready"] = os.getloadavg()[0]
        elif event["event"] == "done":
            result.update(
                converted=event["converted"], convert_s=event["convert_s"], answer=event["answer"]
            )
    stderr = process.stderr.read()
    if process.wait() != 0 or "wall_s" not in result:
        raise SystemExit(f"start failed (exit {process.returncode}):\n{stderr[-3000:]}")
    return result


def sha256_seconds(path: Path) -> float:
    began = time.perf_counter()
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        while chunk := handle.read(1 << 20):
            digest.update(chunk)
    return time.perf_counter() - began


def cache_size(cache: Path) -> int:
    return sum(p.stat().st_size for p in (cache / "embedded").rglob("*") if p.is_file())


def report(
    first: dict, second: dict, before: dict, command: str, gguf: Path, hash_s: float, size: int
) -> str:
    import torch
    import transformers

    ratio = first["wall_s"] / second["wall_s"]
    verdict = "pass" if ratio >= TARGET_RATIO else "FAIL"
    rows = [
        ("first (empty cache: converts, writes the copy)", first),
        ("second (reads the cache)", second),
        ("reference: GGUF read directly, no cache (every start before)", before),
    ]
    lines = [
        "# Embedded model start: GGUF conversion vs the converted-weights cache",
        "",
        f"- command: `{command}`",
        f"- machine: {platform.machine()}, {os.cpu_count()} CPU cores (nproc), "
        f"Python {platform.python_version()}, torch {torch.__version__}, "
        f"transformers {transformers.__version__}",
        f"- model: `smollm2?runtime=hf` from {gguf.name} ({gguf.stat().st_size / 1e6:.0f} MB), "
        "float32",
        "- each start is a fresh Python process; wall time runs from spawning it to the "
        "backend being ready, imports included; model load is the part after importing "
        "torch, transformers and intbench",
        "- order: first, second, then the reference start",
        "",
        "| start | reads the GGUF | wall s | model load s | load avg (1 min) before / at ready |",
        "|---|---|---|---|---|",
    ]
    for name, row in rows:
        lines.append(
            f"| {name} | {'yes' if row['mode'] == 'gguf' or row['converted'] else 'no'} "
            f"| {row['wall_s']:.2f} | {row['load_s']:.2f} "
            f"| {row['load_before']:.2f} / {row['load_at_ready']:.2f} |"
        )
    lines += [
        "",
        f"**Speed-up (first / second wall time): {ratio:.2f}x** "
        f"(target at least {TARGET_RATIO:.0f}x: {verdict})",
        "",
        f"- first start's model load: {first['convert_s']:.2f} s converting the GGUF, "
        f"{first['load_s'] - first['convert_s']:.2f} s hashing the GGUF, writing and hashing "
        "the copy and reading it back (what the cache adds to a first start); the GGUF reads "
        "of the first and the reference start differ by the machine's load",
        f"- second start vs the reference: {before['wall_s'] / second['wall_s']:.2f}x faster",
        "- same greedy answer from all three starts: "
        f"{first['answer'] == second['answer'] == before['answer']} ({second['answer']!r})",
        f"- cached copy on disk: {size / 1e6:.0f} MB (float32 safetensors, config, tokenizer)",
        f"- a streamed sha256 of the GGUF takes {hash_s:.2f} s here; the cache stores the "
        "digest under the file's size, mtime, ctime and inode, so a start does not pay it",
        f"- load average at the end: {os.getloadavg()[0]:.2f}",
        "",
    ]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--output", type=Path, default=DEFAULT_OUTPUT)
    parser.add_argument("--child", choices=("cache", "gguf"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.child)
        return
    from intbench.agents.embedded import embedded_gguf_path

    gguf = embedded_gguf_path()
    command = shlex.join(["python", *sys.argv])
    with tempfile.TemporaryDirectory(prefix="intbench-start-") as cache:
        first = start(Path(cache))
        second = start(Path(cache))
        size = cache_size(Path(cache))
        before = start(Path(cache), mode="gguf")
    if (first["converted"], second["converted"]) != (1, 0):
        raise SystemExit(
            f"expected conversions 1 then 0, got {first['converted']}, {second['converted']}"
        )
    text = report(first, second, before, command, gguf, sha256_seconds(gguf), size)
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(text, encoding="utf-8")
    print(text)


if __name__ == "__main__":
    main()
