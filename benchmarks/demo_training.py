"""What the teacher-training demos share: the policy with only its top layers
trainable, format priming by SFT, the GRPO settings of one recipe, and the paired
held-out gain with its bootstrap CI."""

from __future__ import annotations

import argparse
import json
import os
import time

import numpy as np
import torch

from intbench.metrics import bootstrap
from intbench.training import priming
from intbench.training.models import freeze_lower_layers, load_policy
from intbench.training.trainer import trainer_options

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"


RECIPE_DEFAULTS = {
    "train_problems": 64,
    "eval_problems": 40,
    "train_layers": 8,
    "prime_steps": 24,
    "prime_lr": 3e-4,
    "steps": 24,
    "generations": 8,
    "batch": 16,
    "samples": 2,
    "lr": 1e-4,
    "warmup_steps": 6,
    "beta": 0.2,
    "loss_type": "dapo",
    "seed": 0,
}


def recipe_parser(description: str, **defaults) -> argparse.ArgumentParser:
    """The options every demo takes, at :data:`RECIPE_DEFAULTS` unless ``defaults``
    says otherwise; a demo adds its own."""
    values = {**RECIPE_DEFAULTS, **defaults}
    parser = argparse.ArgumentParser(description=description)
    for name, help_text in (
        ("train_problems", "training problems"),
        ("eval_problems", "held-out problems"),
        ("train_layers", "top decoder layers trained (the rest frozen)"),
        ("prime_steps", "SFT steps of format priming"),
        ("prime_lr", "learning rate of format priming"),
        ("steps", "GRPO steps"),
        ("generations", "GRPO group size"),
        ("batch", "completions (episodes) per GRPO step"),
        ("samples", "sampled replies (episodes) per held-out problem"),
        ("lr", "GRPO learning rate, constant after the warmup"),
        ("warmup_steps", "GRPO steps of linear learning-rate warmup"),
        ("beta", "KL penalty to the format-primed model"),
        ("loss_type", "GRPOConfig.loss_type (TRL's default: dapo)"),
        ("seed", "seeds the priming, the step order and GRPO"),
    ):
        default = values[name]
        parser.add_argument(
            "--" + name.replace("_", "-"), type=type(default), default=default, help=help_text
        )
    return parser


def trainable_policy(spec: str, train_layers: int) -> tuple:
    """``(model, tokenizer, trainable parameters)``: the policy on :data:`DEVICE` with
    only its top ``train_layers`` layers trainable."""
    model, tokenizer = load_policy(spec)
    model.to(DEVICE)
    return model, tokenizer, freeze_lower_layers(model, train_layers)


def _trainer_options(seed: int) -> dict:
    return trainer_options({"use_cpu": DEVICE == "cpu", "seed": seed})


def prime_format(
    model, tokenizer, examples: list[dict], args: argparse.Namespace, out_dir: str
) -> float:
    """``args.prime_steps`` SFT steps at ``args.prime_lr`` on ``examples``; returns
    the seconds taken."""
    return priming.prime_format(
        model,
        tokenizer,
        examples,
        steps=args.prime_steps,
        learning_rate=args.prime_lr,
        output_dir=out_dir,
        **_trainer_options(args.seed),
    )


def reload_primed(model, tokenizer, out_dir: str, train_layers: int) -> tuple:
    """The primed policy saved and loaded back: TRL builds the KL reference from the
    model's path."""
    primed_dir = os.path.join(out_dir, "format-primed")
    model.save_pretrained(primed_dir)
    tokenizer.save_pretrained(primed_dir)
    model, tokenizer, _ = trainable_policy(f"hf:{primed_dir}", train_layers)
    return model, tokenizer


def grpo_args(args: argparse.Namespace, out_dir: str, **settings):
    """The recipe's ``GRPOConfig`` (learning rate with linear warmup, group size,
    batch, KL beta, loss) plus the demo's own ``settings``."""
    from trl import GRPOConfig

    return GRPOConfig(
        output_dir=out_dir,
        learning_rate=args.lr,
        lr_scheduler_type="constant_with_warmup",
        warmup_steps=args.warmup_steps,
        per_device_train_batch_size=args.batch,
        num_generations=args.generations,
        temperature=1.0,
        beta=args.beta,
        loss_type=args.loss_type,
        max_steps=args.steps,
        logging_steps=1,
        save_strategy="no",
        report_to=[],
        **settings,
        **_trainer_options(args.seed),
    )


def paired_gain(before: dict, after: dict) -> dict:
    """Mean reward of ``after`` minus ``before`` on the same held-out problems,
    with a 95% CI from resampling problems (both policies resampled together)."""
    episodes = {
        problem: [{"after": False, "reward": r} for r in rewards]
        + [{"after": True, "reward": r} for r in after["rewards_by_problem"][problem]]
        for problem, rewards in before["rewards_by_problem"].items()
    }

    def gain(eps):
        return float(
            np.mean([e["reward"] for e in eps if e["after"]])
            - np.mean([e["reward"] for e in eps if not e["after"]])
        )

    return bootstrap(episodes, gain).to_dict()


def ci_text(stats: dict) -> str:
    return f"{stats['value']:+.3f} [{stats['low']:+.3f}, {stats['high']:+.3f}]"


def train_logged(trainer, metrics: tuple[str, ...]) -> tuple[float, list[dict]]:
    """Train; returns the seconds taken and, for each logged step, its ``reward``,
    ``reward_std`` and ``metrics``."""
    started = time.perf_counter()
    trainer.train()
    seconds = time.perf_counter() - started
    keys = ("step", "reward", "reward_std", *metrics)
    history = [
        {k: e[k] for k in keys if k in e} for e in trainer.state.log_history if "reward" in e
    ]
    return seconds, history


def seconds_since(started: float, **phases: float) -> dict:
    """Each phase's seconds and the total since ``started`` (a ``perf_counter`` time)."""
    return {
        **{name: round(value, 1) for name, value in phases.items()},
        "total": round(time.perf_counter() - started, 1),
    }


def write_result(
    args: argparse.Namespace,
    script: str,
    trainable: int,
    markdown,
    primed: dict,
    trained: dict,
    **fields,
) -> dict:
    """The run's record (settings, command, model, versions, the primed and trained
    policies' scores, the paired gain and ``fields``), written to ``args.out`` and,
    through ``markdown``, beside it as a table."""
    result = {
        "setting": {k: v for k, v in vars(args).items() if k not in ("out", "command")},
        "command": getattr(args, "command", f"OMP_NUM_THREADS=2 python benchmarks/{script}"),
        "model": f"smollm2 (SmolLM2-135M-Instruct, fp32, {DEVICE}), top layers trained",
        "trainable_parameters": trainable,
        "format_primed": primed,
        "grpo": trained,
        "gain_of_grpo_over_format_primed": paired_gain(primed, trained),
        **fields,
        "threads": torch.get_num_threads(),
        "torch": torch.__version__,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2))
    args.out.with_suffix(".md").write_text(markdown(result))
    return result
