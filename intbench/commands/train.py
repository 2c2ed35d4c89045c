"""``intbench train grpo|sft``: train a teacher with TRL from a YAML config."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from intbench.commands.checks import UsageError, check_train
from intbench.commands.env_flags import add_env_flags, env_options_from
from intbench.extras import TRAIN_MODULES, require
from intbench.options import add_flags, flag_values
from intbench.run_summary import RunSummary
from intbench.rundir import RunDir
from intbench.tracking import TrackerError, check_tracker
from intbench.training.config import TrainConfig

TRAIN_OPTIONS = {"training": TrainConfig}


def add_parser(subparsers) -> None:
    parser = subparsers.add_parser(
        "train",
        help="train a teacher with TRL (GRPO on an env, or SFT from eval records)",
        description="Train a teacher policy.  Settings come from --config (see "
        "intbench/training/configs/*.yaml for documented examples); flags override them.  "
        "Multi-GPU: accelerate launch --config_file intbench/training/accelerate/multi_gpu.yaml "
        "-m intbench.cli train grpo ...",
    )
    parser.add_argument("method", choices=["grpo", "sft"])
    parser.add_argument(
        "--config", type=Path, default=None, help="YAML file with TrainConfig fields"
    )
    add_flags(parser.add_argument_group("training options (over the config's)"), TRAIN_OPTIONS)
    parser.add_argument(
        "--max-steps",
        type=int,
        default=None,
        help="bounds every phase: trainer.max_steps and the format-priming steps",
    )
    parser.add_argument(
        "--lora", action="store_true", help="train LoRA adapters (needs peft) with default settings"
    )
    parser.add_argument(
        "--report-to",
        default=None,
        metavar="TRACKER",
        help="TRL's report_to: none, tensorboard, wandb or trackio (default: the config's)",
    )
    add_env_flags(parser)
    parser.set_defaults(func=_train)


def _train(args: argparse.Namespace) -> int:
    require("train", TRAIN_MODULES, "intbench train")
    from intbench.training.config import load_config
    from intbench.training.trainer import train

    try:
        config = load_config(
            args.config,
            env_options=env_options_from(args),
            method=args.method,
            **flag_values(args, TRAIN_OPTIONS),
        )
    except (OSError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    check_train(config, args.max_steps)  # before any model loads
    if args.max_steps is not None:
        config.trainer["max_steps"] = args.max_steps
        if config.format_priming is not None:  # every phase, priming included
            from intbench.training.priming import PRIMING_DEFAULTS

            steps = config.format_priming.get("steps", PRIMING_DEFAULTS["steps"])
            config.format_priming["steps"] = min(steps, args.max_steps)
    if args.lora and config.lora is None:
        config.lora = {}
    if args.report_to is not None:
        try:
            check_tracker(args.report_to)
        except TrackerError as exc:
            raise UsageError(str(exc)) from None
        config.trainer["report_to"] = args.report_to
    summary = RunSummary(
        {
            "method": config.method,
            "env": config.env,
            "model": config.model,
            "student": config.student,
            "trainer": config.trainer,
        },
        {"student": _student_backend(config)},
    )
    summary.begin("training")
    final = train(config)
    summary.finished = True
    if not _gather_usage(summary):
        return 0  # under accelerate, the main process reports for all
    RunDir(config.output_dir).save_summary(summary.to_dict())
    print(json.dumps({"model": f"hf:{final}"}))
    return 0


def _gather_usage(summary: RunSummary) -> bool:
    """Under a multi-process launch, add the other processes' model usage to the main
    process's summary; whether this process is the one that reports."""
    from accelerate import PartialState
    from accelerate.utils import gather_object

    state = PartialState()
    if state.num_processes == 1:
        return True
    usages = gather_object([summary.usage()])  # in process order
    if not state.is_main_process:
        return False
    for usage in usages[1:]:
        summary.add_usage(usage)
    summary.processes = state.num_processes
    return True


def _student_backend(config):
    """The env's student model (shared in the process), whose usage the summary counts."""
    if config.method != "grpo" or not config.student:
        return None
    from intbench.agents.backends import shared_backend

    return shared_backend(config.student)
