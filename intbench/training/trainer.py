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

from intbench.extras import TRAIN_MODULES, require
from intbench.training.config import MONITOR_GRPO_DEFAULTS, TrainConfig
from intbench.training.envpool import EnvPool
from intbench.training.models import freeze_lower_layers, load_policy, save_policy

logger = logging.getLogger(__name__)

FINAL_DIR = "final"
REFERENCE_DIR = "reference"
PRIMED_DIR = "format-primed"


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
    path (with LoRA it keeps a frozen copy of the adapters instead).  The embedded model is built
    from a GGUF file that such a path cannot load, so it is first saved as a
    plain model directory under the run's output (by one process under
    ``accelerate launch``) and the policy is loaded from there.
    """
    if beta <= 0 or config.model != "smollm2" or config.lora is not None:
        return _load_trainable(config.model, config)
    from accelerate import PartialState

    directory = Path(config.output_dir) / REFERENCE_DIR
    with PartialState().main_process_first():
        if not directory.is_dir():
            _saved_once(directory, lambda partial: save_policy(*load_policy(config.model), partial))
    return _load_trainable(f"hf:{directory}", config)


def _saved_once(directory: Path, save) -> None:
    """Run ``save(partial_dir)`` and rename the result to ``directory``, so an
    interrupted save leaves no half-written model."""
    partial = directory.with_name(f"{directory.name}.partial")
    shutil.rmtree(partial, ignore_errors=True)
    save(partial)
    partial.rename(directory)


def _load_trainable(spec: str, config: TrainConfig) -> tuple[Any, Any]:
    """A policy with LoRA adapters or only its top ``train_layers`` layers trainable,
    as the config says."""
    model, tokenizer = load_policy(spec, config.lora)
    if config.train_layers is not None:
        freeze_lower_layers(model, config.train_layers)
    return model, tokenizer


def _primed_policy(config: TrainConfig, states) -> tuple[Any, Any]:
    """The policy after format priming on the monitor decision ``states``, saved to
    ``<output_dir>/format-primed`` (reused when it exists) and loaded back from
    there, so that TRL's KL reference is the primed policy."""
    from accelerate import PartialState

    from intbench.training.priming import PRIMING_DEFAULTS, monitor_format_examples, prime_format

    settings = {**PRIMING_DEFAULTS, **(config.format_priming or {})}
    directory = Path(config.output_dir) / PRIMED_DIR
    if not directory.is_dir():
        if PartialState().num_processes > 1:
            raise ValueError(
                f"format priming runs in one process: run the same command once without "
                f"accelerate launch (it saves {directory}, which a launched run then reuses)"
            )
        model, tokenizer = _load_trainable(config.model, config)
        examples = monitor_format_examples(
            states, config.seed, settings["messages"], settings["time"]
        )

        def prime_and_save(partial: Path) -> None:
            seconds = prime_format(
                model,
                tokenizer,
                examples,
                steps=settings["steps"],
                learning_rate=settings["learning_rate"],
                batch_size=settings["batch_size"],
                output_dir=str(partial),
                **trainer_options({"seed": config.seed}),
            )
            save_policy(model, tokenizer, partial)
            logger.info("format priming: %d steps in %.0f s", settings["steps"], seconds)

        _saved_once(directory, prime_and_save)
    else:
        logger.info("reusing the format-primed policy in %s", directory)
    return _load_trainable(f"hf:{directory}", config)


def build_trainer(config: TrainConfig) -> Any:
    """The configured TRL trainer (not yet trained)."""
    require("train", TRAIN_MODULES, "training")
    if config.method == "sft":
        from trl import SFTConfig, SFTTrainer

        from intbench.training.sft import sft_dataset

        if not config.records:
            raise ValueError("sft needs 'records': run directories written by intbench eval")
        dataset = sft_dataset(config.records, config.filter)
        model, tokenizer = _load_trainable(config.model, config)
        args = SFTConfig(
            output_dir=config.output_dir, seed=config.seed, **trainer_options(config.trainer)
        )
        return SFTTrainer(model=model, args=args, train_dataset=dataset, processing_class=tokenizer)

    if config.environment_factory:
        return _tool_trainer(config)
    pool = EnvPool(config.env, config.env_kwargs())
    return pool.spec.hook("grpo")(config, pool)


def monitor_grpo(config: TrainConfig, pool: EnvPool) -> Any:
    """GRPO on single monitor decisions: one sampled env state per prompt, rewarded by
    playing the decision out (:mod:`intbench.training.monitor`)."""
    from trl import GRPOConfig, GRPOTrainer

    from intbench.training.monitor import balanced_states, monitor_rewards, monitor_states

    options = {**MONITOR_GRPO_DEFAULTS, **config.trainer}
    if config.balanced_states:
        options = {"shuffle_dataset": False, **options}  # keep the balanced steps
    args = GRPOConfig(output_dir=config.output_dir, seed=config.seed, **trainer_options(options))
    dataset = monitor_states(
        pool=pool, states_per_problem=config.states_per_problem, seed=config.seed
    )
    if config.format_priming is not None:
        model, tokenizer = _primed_policy(config, dataset)
    else:
        model, tokenizer = _grpo_policy(config, args.beta)
    if config.balanced_states:
        if args.max_steps <= 0:
            raise ValueError("balanced_states needs trainer.max_steps (the steps to plan)")
        batch, group = args.generation_batch_size, args.num_generations
        assert batch is not None and group is not None  # GRPOConfig.__post_init__ sets both
        dataset = balanced_states(dataset, args.max_steps, batch // group, config.seed)
    return GRPOTrainer(
        model=model,
        args=args,
        train_dataset=dataset,
        processing_class=tokenizer,
        reward_funcs=monitor_rewards(pool=pool),
    )


def feedback_grpo(config: TrainConfig, pool: EnvPool) -> Any:
    """GRPO on whole feedback episodes, rolled out by :class:`FeedbackRollout`."""
    from trl import GRPOConfig, GRPOTrainer

    from intbench.training.feedback import FeedbackRollout, feedback_reward

    if config.format_priming is not None or config.balanced_states:
        raise ValueError(
            f"format_priming and balanced_states apply to monitor envs, not {config.env}"
        )
    options = config.trainer
    args = GRPOConfig(output_dir=config.output_dir, seed=config.seed, **trainer_options(options))
    model, tokenizer = _grpo_policy(config, args.beta)
    rollout = FeedbackRollout(
        pool=pool, max_turn_tokens=config.max_turn_tokens, temperature=config.temperature
    )
    dataset = rollout.dataset(seed=config.seed)
    return GRPOTrainer(
        model=model,
        args=args,
        train_dataset=dataset,
        processing_class=tokenizer,
        # TRL's annotations are narrower than what it accepts: reward lists of
        # list[float | None] (invariant, so list[float] is refused) and string prompts
        # (conversational ones are lists of messages).
        reward_funcs=[feedback_reward],  # type: ignore[list-item]
        rollout_func=rollout,  # type: ignore[arg-type]
    )


def _tool_trainer(config: TrainConfig) -> Any:
    """GRPO through TRL's ``environment_factory``: the policy plays the env with tool
    calls and the env's return is the reward (:mod:`intbench.integrations.trl`)."""
    from trl import GRPOConfig, GRPOTrainer

    from intbench.integrations.trl import environment_factory, tool_dataset, with_tool_calling

    args = GRPOConfig(
        output_dir=config.output_dir, seed=config.seed, **trainer_options(config.trainer)
    )
    env_class = environment_factory(config.env, **config.env_kwargs())
    model, tokenizer = _grpo_policy(config, args.beta)
    return GRPOTrainer(
        model=model,
        args=args,
        train_dataset=tool_dataset(env_class, seed=config.seed),
        processing_class=with_tool_calling(tokenizer),
        environment_factory=env_class,
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
