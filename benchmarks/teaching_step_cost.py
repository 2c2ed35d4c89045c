"""What the ``teaching`` reward costs in a real GRPO step, against ``success`` on the same config.

``teaching`` pays only for a variant the teacher never saw: each teacher message
adds two student attempts at the variant (with and without the message, one
seed), the no-message one shared by every rollout of a decision state.  This
runs one GRPO step of a shipped CPU-sized config (``smoke_<protocol>.yaml``,
the embedded SmolLM2-135M as policy and student) twice per round, once with
``reward: success`` and once with ``reward: teaching``, alternating so that
background load hits both alike, each in a fresh process with a fresh student
cache (the costlier case: in training the no-message arm is cached across
steps), and reads the step's wall time that TRL logs (``step_time``) and the
process's CPU time (torch on one thread).

Target (issue 54): a step with ``teaching`` costs at most 2x one with ``success``.

    python benchmarks/teaching_step_cost.py [--rounds 2] [--protocol monitor] \
        [--output benchmarks/results/teaching_step_cost.md]
"""

from __future__ import annotations

import argparse
import os
import platform
import re
import shlex
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

import yaml
from train_smoke import CONFIGS, ROOT, cpu_seconds

DEFAULT_OUTPUT = Path(__file__).parent / "results" / "teaching_step_cost.md"
PRESETS = ("success", "teaching")
TARGET = 2.0
_LOGGED = re.compile(r"'(step_time|reward|reward_std)': '?(-?[0-9.e+-]+|nan)'?")


def one_step(protocol: str, preset: str, scratch: Path, tag: str) -> dict:
    """One GRPO step of ``smoke_<protocol>.yaml`` with ``reward: preset``, in its own process."""
    config = yaml.safe_load((CONFIGS / f"smoke_{protocol}.yaml").read_text())
    config["env_options"]["reward"] = preset
    path = scratch / f"{protocol}-{preset}-{tag}.yaml"
    path.write_text(yaml.safe_dump(config))
    env = {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        "OMP_NUM_THREADS": "1",
        "INTBENCH_CACHE": str(scratch / f"cache-{tag}-{preset}"),  # fresh student cache
    }
    command = [sys.executable, "-m", "intbench.cli", "train", "grpo", "--config", str(path),
               "--output-dir", str(scratch / f"out-{tag}-{preset}")]  # fmt: skip
    before = cpu_seconds()
    result = subprocess.run(command, env=env, cwd=ROOT, capture_output=True, text=True)
    if result.returncode != 0:
        raise SystemExit(f"{protocol}/{preset}: exit {result.returncode}\n{result.stderr[-3000:]}")
    logged = {name: float(value) for name, value in _LOGGED.findall(result.stdout)}
    return {"cpu_s": cpu_seconds() - before, **logged}


def report(rows: dict[str, dict[str, list[dict]]], command: str) -> str:
    import torch
    import trl

    lines = [
        "# The teaching reward's cost in a GRPO step",
        "",
        f"- command: `{command}`",
        f"- machine: {platform.machine()}, {os.cpu_count()} CPU cores, Python "
        f"{platform.python_version()}, torch {torch.__version__}, TRL {trl.__version__}",
        "- each run: one step of `intbench train grpo --config smoke_<protocol>.yaml` with the "
        "reward swapped, a fresh process and student cache, torch on one thread; runs of the "
        "two presets alternate",
        "- step s: the step's wall time as TRL logs it (`step_time`: rollouts, rewards and "
        "the update); CPU s: the whole process (loading the models included)",
        "",
        "| protocol | figure (median) | success | teaching | ratio | target |",
        "|---|---|---:|---:|---:|---|",
    ]
    for protocol, runs in rows.items():
        for key, label in (("step_time", "step s"), ("cpu_s", "CPU s")):
            a = statistics.median(r.get(key, float("nan")) for r in runs["success"])
            b = statistics.median(r.get(key, float("nan")) for r in runs["teaching"])
            verdict = ("pass" if b / a <= TARGET else "FAIL") if key == "step_time" else ""
            lines.append(
                f"| {protocol} | {label} | {a:.1f} | {b:.1f} | {b / a:.2f}x | "
                f"{'<= 2x ' + verdict if verdict else ''} |"
            )
    lines += ["", "Every run:", ""]
    for protocol, runs in rows.items():
        for preset, rounds in runs.items():
            for i, row in enumerate(rounds):
                lines.append(f"- {protocol} {preset} round {i}: {row}")
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--protocol", choices=("monitor", "feedback"), action="append")
    parser.add_argument("--output", type=Path, default=DEFAULT_OUTPUT)
    args = parser.parse_args()
    command = shlex.join(["python", *sys.argv])
    rows: dict[str, dict[str, list[dict]]] = {}
    with tempfile.TemporaryDirectory(prefix="intbench-teaching-cost-") as scratch:
        for protocol in args.protocol or ("monitor", "feedback"):
            rows[protocol] = {preset: [] for preset in PRESETS}
            for round_ in range(args.rounds):
                for preset in PRESETS if round_ % 2 == 0 else PRESETS[::-1]:
                    rows[protocol][preset].append(
                        one_step(protocol, preset, Path(scratch), str(round_))
                    )
    text = report(rows, command)
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(text)
    print(text)


if __name__ == "__main__":
    main()
