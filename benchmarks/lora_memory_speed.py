"""LoRA against full fine-tuning in monitor GRPO: trainable parameters, peak memory, step time.

Each way of training runs in a process of its own (so its peak memory is its
own), through the library path a user takes (``load_config`` + ``build_trainer``
on the shipped ``monitor_grpo_demo.yaml``, without its format priming), for
``--steps`` GRPO steps of the config's size (16 completions of at most 32
tokens, KL beta 0.2):

* full fine-tuning of every weight;
* full fine-tuning of the top 8 decoder layers (``train_layers: 8``, the demo's);
* LoRA adapters (``lora: {r: 16}``, peft, every linear layer), base frozen;
* LoRA adapters on the linear layers of the top 8 decoder layers only.

Reported per way: trainable parameters, peak resident memory of the process,
the median time of a GRPO step after the first (generation, the env's reward,
the reference pass and the update), and memory and time as ratios to full
fine-tuning, measured side by side in one run.  The reference model TRL needs
for the KL term is a second copy of the weights under full fine-tuning and a
frozen copy of the adapters (TRL's "ref" adapter) under LoRA.

    OMP_NUM_THREADS=2 python benchmarks/lora_memory_speed.py
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CONFIG = ROOT / "benchmarks" / "configs" / "monitor_grpo_demo.yaml"
WAYS = {
    "full fine-tuning, every weight": {},
    "full fine-tuning, top 8 layers": {"train_layers": 8},
    "LoRA r=16, every linear layer": {"lora": {"r": 16}},
    # SmolLM2-135M has 30 decoder layers: adapters only where train_layers: 8 trains
    "LoRA r=16, linear layers of the top 8": {
        "lora": {
            "r": 16,
            "target_modules": [
                "q_proj",
                "k_proj",
                "v_proj",
                "o_proj",
                "gate_proj",
                "up_proj",
                "down_proj",
            ],
            "layers_to_transform": list(range(22, 30)),
        }
    },
}


def measure(options: dict, steps: int, output_dir: str) -> dict:
    """One way of training, in this process: build, train ``steps`` steps, report."""
    import resource

    import yaml

    from intbench.training import load_config
    from intbench.training.trainer import build_trainer

    settings = yaml.safe_load(CONFIG.read_text())
    settings.pop("format_priming")
    settings.pop("train_layers")
    settings["source"] = str(ROOT / settings["source"])
    settings["trainer"] = {**settings["trainer"], "max_steps": steps, "warmup_steps": 0}
    config = load_config(None, **{**settings, **options, "output_dir": output_dir})
    trainer = build_trainer(config)
    trainable = sum(p.numel() for p in trainer.model.parameters() if p.requires_grad)
    total = sum(p.numel() for p in trainer.model.parameters())
    trainer.train()
    step_times = [e["step_time"] for e in trainer.state.log_history if "step_time" in e]
    return {
        "trainable_parameters": trainable,
        "parameters": total,
        "step_seconds": step_times,
        "median_step_s_after_first": statistics.median(step_times[1:] or step_times),
        "peak_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    }


def run_way(name: str, steps: int) -> dict:
    with tempfile.TemporaryDirectory() as out:
        completed = subprocess.run(
            [
                sys.executable,
                __file__,
                "--one",
                json.dumps(WAYS[name]),
                "--steps",
                str(steps),
                "--output-dir",
                out,
            ],
            cwd=ROOT,
            env={**os.environ, "PYTHONPATH": f"{ROOT / 'benchmarks'}{os.pathsep}{ROOT}"},
            capture_output=True,
            text=True,
        )
    if completed.returncode != 0:
        raise SystemExit(f"{name} failed:\n{completed.stderr[-3000:]}")
    return json.loads(completed.stdout.strip().splitlines()[-1])


def markdown(rows: dict, steps: int) -> str:
    full = rows["full fine-tuning, every weight"]
    lines = [
        "# LoRA against full fine-tuning (monitor GRPO, embedded SmolLM2-135M, CPU)",
        "",
        f"`OMP_NUM_THREADS=2 python benchmarks/lora_memory_speed.py` — {steps} GRPO steps of "
        "`monitor_grpo_demo.yaml` (16 completions of at most 32 tokens, KL beta 0.2, no format "
        f"priming) per way, each in its own process; {platform.machine()}, "
        f"{os.cpu_count()} cores, torch {rows['torch']}.",
        "",
        "| way | trainable parameters | peak memory (MiB) | memory / full | median step s "
        "(after the first) | time / full |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for name in WAYS:
        row = rows[name]
        lines.append(
            f"| {name} | {row['trainable_parameters']:,} of {row['parameters']:,} "
            f"| {row['peak_rss_mib']:.0f} | {row['peak_rss_mib'] / full['peak_rss_mib']:.2f} "
            f"| {row['median_step_s_after_first']:.1f} "
            f"| {row['median_step_s_after_first'] / full['median_step_s_after_first']:.2f} |"
        )
    lines += [
        "",
        "LoRA's parameter counts include the frozen copy of the adapters that TRL adds as the "
        "KL reference.  Without gradient checkpointing (off on a CPU) the backward pass keeps "
        "every layer's activations down to the lowest trained weight, so the peak follows how "
        "deep training reaches (30 layers or the top 8) more than how many weights it trains.",
        "",
    ]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=3)
    parser.add_argument("--one", help=argparse.SUPPRESS)  # a child process: one way
    parser.add_argument("--output-dir", help=argparse.SUPPRESS)
    parser.add_argument(
        "--out", type=Path, default=ROOT / "benchmarks/results/lora_memory_speed.json"
    )
    args = parser.parse_args()
    if args.one is not None:
        print(json.dumps(measure(json.loads(args.one), args.steps, args.output_dir)))
        return
    import torch

    os.environ.setdefault("INTBENCH_CACHE", tempfile.mkdtemp(prefix="intbench-lora-cache-"))
    os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")
    rows: dict = {"torch": torch.__version__}
    for name in WAYS:
        rows[name] = run_way(name, args.steps)
        print(name, json.dumps(rows[name]), flush=True)
    args.out.write_text(json.dumps(rows, indent=2))
    args.out.with_suffix(".md").write_text(markdown(rows, args.steps))
    print(markdown(rows, args.steps))


if __name__ == "__main__":
    main()
