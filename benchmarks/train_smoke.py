"""The smoke training configs: one real GRPO step per protocol, timed as a user runs them.

Runs ``intbench train grpo --config intbench/training/configs/smoke_<protocol>.yaml``
for the monitor and the feedback protocol, each in a fresh process with the
embedded model as policy and student, into a temporary output directory, and
reads TRL's logged step (the rewards' mean and standard deviation) from its
output.  Acceptance per protocol: the command succeeds, it takes under 120 s
of CPU time, and for the monitor the step's rewards differ within a group
(``reward_std`` > 0, so the step has a gradient; under the ``teaching`` reward
the feedback step's 135M student solves the variant alike with and without
the feedback, so its rewards may tie) (user + system, with torch on one thread, which
bounds the wall time on an idle machine; on a shared, loaded one the wall time
mostly measures the queue).

    python benchmarks/train_smoke.py [--output benchmarks/results/train_smoke.md]
"""

from __future__ import annotations

import argparse
import os
import platform
import re
import resource
import shlex
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CONFIGS = ROOT / "intbench" / "training" / "configs"
DEFAULT_OUTPUT = Path(__file__).parent / "results" / "train_smoke.md"
PROTOCOLS = ("monitor", "feedback")
TARGET_CPU_S = 120.0
_LOGGED = re.compile(r"'(reward|reward_std|loss)': '?(-?[0-9.e+-]+|nan)'?")


def cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def run(protocol: str, scratch: Path) -> dict:
    command = [
        sys.executable, "-m", "intbench.cli", "train", "grpo",
        "--config", str(CONFIGS / f"smoke_{protocol}.yaml"),
        "--output-dir", str(scratch / protocol),
    ]  # fmt: skip
    # One torch thread: on a loaded machine two threads spin while waiting for each
    # other, and only then is the CPU time the work done.
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1"}
    load_before, cpu_before = os.getloadavg()[0], cpu_seconds()
    started = time.perf_counter()
    result = subprocess.run(command, env=env, cwd=ROOT, capture_output=True, text=True)
    wall = time.perf_counter() - started
    if result.returncode != 0:
        raise SystemExit(f"{protocol}: exit {result.returncode}\n{result.stderr[-3000:]}")
    logged = {name: float(value) for name, value in _LOGGED.findall(result.stdout)}
    return {
        "wall_s": wall,
        "cpu_s": cpu_seconds() - cpu_before,
        "load": (load_before, os.getloadavg()[0]),
        "stderr_lines": len(result.stderr.splitlines()),
        **logged,
    }


def report(rows: dict[str, dict], command: str) -> str:
    import torch
    import transformers
    import trl

    lines = [
        "# Smoke training: one GRPO step per protocol on a CPU",
        "",
        f"- command: `{command}`",
        f"- machine: {platform.machine()}, {os.cpu_count()} CPU cores (nproc), Python "
        f"{platform.python_version()}, torch {torch.__version__}, transformers "
        f"{transformers.__version__}, TRL {trl.__version__}",
        "- each run: `intbench train grpo --config intbench/training/configs/smoke_<protocol>.yaml` "
        "in a fresh process (embedded SmolLM2-135M as policy and student, its converted "
        "weights cached), output in a temporary directory",
        "- CPU s: user + system time of the process with torch on one thread "
        "(`OMP_NUM_THREADS=1`), the acceptance figure (it bounds the wall time on an idle "
        "machine); wall s on a shared, loaded machine mostly measures the queue",
        "",
        "| protocol | wall s | CPU s | reward (mean) | reward_std | loss | lines on stderr "
        "| load avg (1 min) before / after | verdict |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for protocol, row in rows.items():
        varied = protocol != "monitor" or row.get("reward_std", 0.0) > 0
        passed = row["cpu_s"] < TARGET_CPU_S and varied
        lines.append(
            f"| {protocol} | {row['wall_s']:.1f} | {row['cpu_s']:.1f} "
            f"| {row.get('reward', float('nan')):.3f} | {row.get('reward_std', float('nan')):.3f} "
            f"| {row.get('loss', float('nan')):.4f} | {row['stderr_lines']} "
            f"| {row['load'][0]:.2f} / {row['load'][1]:.2f} | {'pass' if passed else 'FAIL'} |"
        )
    lines += [
        "",
        f"Acceptance: under {TARGET_CPU_S:.0f} CPU s per protocol, and the monitor step's "
        "reward_std > 0 (the group's rewards differ, so the step has a gradient).",
        "",
    ]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--output", type=Path, default=DEFAULT_OUTPUT)
    parser.add_argument("--protocol", choices=PROTOCOLS, action="append", default=None)
    args = parser.parse_args()
    command = shlex.join(["python", *sys.argv])
    with tempfile.TemporaryDirectory(prefix="intbench-smoke-") as scratch:
        rows = {p: run(p, Path(scratch)) for p in args.protocol or PROTOCOLS}
    text = report(rows, command)
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(text)
    print(text)


if __name__ == "__main__":
    main()
