"""The monitor learning demo reproduced through the CLI, with the shipped config.

Runs, in a subprocess and from the repository root::

    PYTHONPATH=benchmarks intbench train grpo \
        --config benchmarks/configs/monitor_grpo_demo.yaml --seed S --output-dir D

(the setting of :mod:`train_monitor_demo`: its scripted student, its 64 training
additions, written here as ``benchmarks/data/monitor_demo_train.jsonl`` in the
MATH-500 schema that the config names as its source, format priming, the top 8
layers trained, balanced steps and the GRPO defaults of ``intbench train grpo``).
Then it scores the format-primed policy the command saved (``D/format-primed``)
and the trained one (``D/final``) on the demo's 40 held-out problems, as the demo
does, and writes the paired gain with its 95% bootstrap CI over problems to
``results/train_cli_monitor.{json,md}``.  Run:
``OMP_NUM_THREADS=2 python benchmarks/train_cli_monitor.py --seed 0``.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import demo_training as demo
import torch
import train_monitor_demo as monitor_demo

from intbench.training import MonitorReward, monitor_states
from intbench.training.models import load_policy

ROOT = Path(__file__).resolve().parent.parent
CONFIG = "benchmarks/configs/monitor_grpo_demo.yaml"
TRAIN_DATA = ROOT / "benchmarks" / "data" / "monitor_demo_train.jsonl"
RESULTS = ROOT / "benchmarks" / "results"
EVAL_PROBLEMS = 40
SAMPLES = 2


def write_train_data() -> None:
    """The demo's training problems as MATH-500 rows (the config's ``source``)."""
    rows = [
        {
            "problem": p.question,
            "solution": p.solution,
            "answer": p.answer,
            "subject": "Prealgebra",
            "level": 1,
            "unique_id": p.id,
        }
        for p in monitor_demo.problems(64, seed=1)
    ]
    TRAIN_DATA.parent.mkdir(parents=True, exist_ok=True)
    TRAIN_DATA.write_text("".join(json.dumps(row) + "\n" for row in rows))


def train(seed: int, output_dir: Path) -> tuple[list[str], float]:
    """Runs the command; returns it as a user types it (the results name no temporary
    folder: without ``--output-dir`` it writes to the config's ``runs/monitor-grpo-demo``)."""
    command = ["intbench", "train", "grpo", "--config", CONFIG, "--seed", str(seed)]
    env = {**os.environ, "PYTHONPATH": "benchmarks"}
    started = time.perf_counter()
    subprocess.run(
        [sys.executable, "-m", "intbench.cli", *command[1:], "--output-dir", str(output_dir)],
        cwd=ROOT,
        env=env,
        check=True,
    )
    return command, time.perf_counter() - started


def score(directory: Path, states, reward: MonitorReward) -> dict:
    model, tokenizer = load_policy(f"hf:{directory}")
    model.to(demo.DEVICE)
    started = time.perf_counter()
    result = monitor_demo.evaluate(model, tokenizer, states, reward, SAMPLES, max_new_tokens=32)
    result["seconds"] = round(time.perf_counter() - started, 1)
    return result


def markdown(result: dict) -> str:
    lines = [
        "# Monitor learning demo through `intbench train grpo`",
        "",
        f"Command (from the repository root): `PYTHONPATH=benchmarks {' '.join(result['command'])}` "
        f"({result['train_minutes']:.1f} min on a 2-core CPU, torch {result['torch']}, "
        f"{result['threads']} threads); scored by `{result['scored_by']}` on "
        f"{EVAL_PROBLEMS} held-out problems x {SAMPLES} sampled replies (temperature 1), "
        "95% bootstrap CIs over problems.",
        "",
        "| policy | mean reward | intervenes when guessing | intervenes when sure | unparsable |",
        "|---|---:|---:|---:|---:|",
    ]
    for label, key in (
        ("format-primed (`format-primed/`)", "format_primed"),
        ("+ GRPO (`final/`)", "grpo"),
    ):
        row = result[key]
        lines.append(
            f"| {label} | {demo.ci_text(row['reward'])} "
            f"| {demo.ci_text(row['intervene_rate_when_guessing'])} "
            f"| {demo.ci_text(row['intervene_rate_when_sure'])} | {row['unparsable']:.2f} |"
        )
    best = result["reference_policies"]["when_guessing"]
    lines += [
        f"| reference: intervene exactly when guessing (best) | {demo.ci_text(best)} | | | |",
        "",
        f"Seed {result['seed']}: gain of GRPO over the format-primed policy, paired on the "
        f"held-out problems: {demo.ci_text(result['heldout_gain'])}.",
        "",
    ]
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, default=RESULTS / "train_cli_monitor.json")
    args = parser.parse_args()
    os.environ.setdefault("INTBENCH_CACHE", tempfile.mkdtemp(prefix="intbench-demo-cache-"))
    write_train_data()
    eval_kwargs = monitor_demo.env_kwargs(monitor_demo.problems(EVAL_PROBLEMS, seed=2), "append")
    states = monitor_states(monitor_demo.ENV, eval_kwargs, states_per_problem=1, seed=0)
    reward = MonitorReward(monitor_demo.ENV, eval_kwargs)
    with tempfile.TemporaryDirectory() as out_dir:
        command, seconds = train(args.seed, Path(out_dir))
        primed = score(Path(out_dir) / "format-primed", states, reward)
        trained = score(Path(out_dir) / "final", states, reward)
    gain = demo.paired_gain(primed, trained)
    result = {
        "seed": args.seed,
        "command": command,
        "scored_by": f"python benchmarks/train_cli_monitor.py --seed {args.seed}",
        "train_minutes": round(seconds / 60, 1),
        "format_primed": primed,
        "grpo": trained,
        "heldout_gain": gain,
        "reference_policies": monitor_demo.reference_policies(states, reward),
        "threads": torch.get_num_threads(),
        "torch": torch.__version__,
    }
    args.out.write_text(json.dumps(result, indent=2))
    args.out.with_suffix(".md").write_text(markdown(result))
    print(json.dumps({"seed": args.seed, "heldout_gain": gain}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
