"""One entry point for every training method: :func:`train` runs a :class:`TrainConfig`.

Runs unchanged under ``accelerate launch`` (each process builds the same
seeded dataset; TRL shards batches; only the main process writes the final
model).
"""

from __future__ import annotations

import logging
import shutil
from pathlib import Path
from typing import Any

from intbench.training.config import MONITOR_GRPO_DEFAULTS, TrainConfig
from intbench.training.envpool import EnvPool
from intbench.training.models import load_policy, save_policy

logger = logging.getLogger(__name__)

FINAL_DIR = "final"
REFERENCE_DIR = "reference"


def trainer_options(options: dict[str, Any]) -> dict[str, Any]:
    """``trainer:`` options with CPU-friendly defaults where no GPU is present.

    TRL turns on bf16 and gradient checkpointing by default, which suits GPUs;
    on a 2-core CPU without bf16 units the two made a GRPO step 3.8x slower
    (benchmarks/results/train_monitor_demo.md), so there both default to off.
    Values set in the config always win.
    """
    import torch

    if torch.cuda.is_available():
        return dict(options)
    return {"bf16": False, "gradient_checkpointing": False, **options}


def _grpo_policy(config: TrainConfig, beta: float) -> tuple[Any, Any]:
    """The policy to train with GRPO, loadable as TRL's KL reference when ``beta > 0``.

    TRL loads that reference with ``from_pretrained`` from the policy's config
    path (or, with LoRA, turns the adapters off).  The embedded model is built
    from a GGUF file that such a path cannot load, so it is first saved as a
    plain model directory under the run's output (by one process under
    ``accelerate launch``) and the policy is loaded from there.
    """
    if beta <= 0 or config.model != "smollm2" or config.lora is not None:
        return load_policy(config.model, config.lora)
    from accelerate import PartialState

    directory = Path(config.output_dir) / REFERENCE_DIR
    with PartialState().main_process_first():
        if not directory.is_dir():
            # Save beside it, then rename: an interrupted save leaves no half-written reference.
            partial = directory.with_name(f"{REFERENCE_DIR}.partial")
            shutil.rmtree(partial, ignore_errors=True)
            save_policy(*load_policy(config.model), partial)
            partial.rename(directory)
    return load_policy(f"hf:{directory}")


def build_trainer(config: TrainConfig) -> Any:
    """The configured TRL trainer (not yet trained)."""
    if config.method == "sft":
        from trl import SFTConfig, SFTTrainer

        from intbench.training.sft import sft_dataset

        if not config.records:
            raise ValueError("sft needs 'records': run directories written by intbench eval")
        dataset = sft_dataset(config.records, config.filter)
        model, tokenizer = load_policy(config.model, config.lora)
        args = SFTConfig(
            output_dir=config.output_dir, seed=config.seed, **trainer_options(config.trainer)
        )
        return SFTTrainer(model=model, args=args, train_dataset=dataset, processing_class=tokenizer)

    from trl import GRPOConfig, GRPOTrainer

    pool = EnvPool(config.env, config.env_kwargs())
    options = config.trainer
    if pool.protocol == "monitor":
        options = {**MONITOR_GRPO_DEFAULTS, **options}
    args = GRPOConfig(output_dir=config.output_dir, seed=config.seed, **trainer_options(options))
    model, tokenizer = _grpo_policy(config, args.beta)
    if pool.protocol == "monitor":
        from intbench.training.monitor import monitor_rewards, monitor_states

        dataset = monitor_states(
            pool=pool, states_per_problem=config.states_per_problem, seed=config.seed
        )
        return GRPOTrainer(
            model=model,
            args=args,
            train_dataset=dataset,
            processing_class=tokenizer,
            reward_funcs=monitor_rewards(pool=pool),
        )
    from intbench.training.feedback import FeedbackRollout, feedback_reward

    rollout = FeedbackRollout(
        pool=pool, max_turn_tokens=config.max_turn_tokens, temperature=config.temperature
    )
    dataset = rollout.dataset(seed=config.seed)
    return GRPOTrainer(
        model=model,
        args=args,
        train_dataset=dataset,
        processing_class=tokenizer,
        reward_funcs=[feedback_reward],
        rollout_func=rollout,
    )


def train(config: TrainConfig) -> Path:
    """Train, then save the policy to ``<output_dir>/final`` (loadable as ``hf:<dir>``)."""
    trainer = build_trainer(config)
    trainer.train()
    final = Path(config.output_dir) / FINAL_DIR
    if trainer.accelerator.is_main_process:
        save_policy(
            trainer.accelerator.unwrap_model(trainer.model), trainer.processing_class, final
        )
        logger.info("saved the trained policy to %s", final)
    trainer.accelerator.wait_for_everyone()
    return final
