"""Checks of a run's command-line arguments, made before any model loads or file is written.

Each check raises :class:`UsageError` with one line that names the fix; the
CLI prints it and exits with code 2.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Mapping
from typing import Any

from intbench.metrics.estimate import BOOTSTRAP_SAMPLES
from intbench.options import UnknownOptionError, closest


def add_samples_option(parser: argparse.ArgumentParser, where: str = "") -> None:
    """The ``--samples`` option of every command that prints confidence intervals."""
    parser.add_argument(
        "--samples",
        type=int,
        default=BOOTSTRAP_SAMPLES,
        help=f"bootstrap resamples per confidence interval{where} (default {BOOTSTRAP_SAMPLES})",
    )


class UsageError(ValueError):
    """A command-line argument that cannot work; the message says how to fix it."""


def check_env_id(env_id: str) -> None:
    from intbench.envs.registration import all_env_ids

    known = all_env_ids()
    if env_id.split(":")[-1] not in known:
        raise UsageError(
            f"unknown env {env_id!r}{closest(env_id, known)} (`intbench data list` shows them)"
        )


def check_count(name: str, value: int, minimum: int = 1) -> None:
    if value < minimum:
        raise UsageError(f"{name} must be at least {minimum}, got {value}")


def check_teacher(spec: str) -> None:
    from intbench.teachers import check_teacher_spec

    try:
        check_teacher_spec(spec)
    except ValueError as exc:
        raise UsageError(f"--teacher: {exc}") from None


def check_model(flag: str, spec: str) -> None:
    """A model spec is well formed (kind, target, options), and a local model path it names exists."""
    from intbench.agents.backends.loading import check_spec, parse_spec

    try:
        check_spec(spec)
        kind, target, _ = parse_spec(spec)
    except ValueError as exc:
        raise UsageError(f"{flag}: {exc}") from None
    path = target.split("::")[0]  # hf:<dir>::<file>.gguf
    if kind in ("hf", "llamacpp") and path.startswith(("/", "./", "../", "~")):
        if not os.path.exists(os.path.expanduser(path)):
            raise UsageError(f"{flag}: no model at {path!r}; give an existing path or a hub id")


def check_env_options(env_id: str, options: Mapping[str, Any]) -> None:
    """Every option is one the env takes, with a value it accepts (no model is built)."""
    import gymnasium as gym

    from intbench.envs.option_classes import env_options_class
    from intbench.options import check_keys, field_names

    options_class = env_options_class(env_id)
    settable = [name for name in field_names(options_class) if name != "domain"]  # the id's
    try:
        check_keys(options, settable, f"env option ... for {env_id}")
        options_class(**{**gym.spec(env_id).kwargs, **options})
    except UnknownOptionError as exc:
        raise UsageError(str(exc)) from None
    except (TypeError, ValueError) as exc:
        raise UsageError(f"bad env option for {env_id}: {exc}") from None


def check_replay(config) -> None:
    """``--replay-interventions`` names a finished Standard monitor run over the same
    env, student and problems (only files are read)."""
    from intbench.runner import ReplayError, check_replay

    try:
        check_replay(config)
    except ReplayError as exc:
        raise UsageError(f"--replay-interventions: {exc}") from None


def replayed_teacher(path) -> str:
    """The teacher of the run that ``--replay-interventions`` names."""
    from intbench.runner import ReplayError, replayed_config

    try:
        teacher = replayed_config(path).get("teacher")
    except ReplayError as exc:
        raise UsageError(f"--replay-interventions: {exc}") from None
    if not isinstance(teacher, str) or not teacher:
        raise UsageError(f"--replay-interventions: {path} names no teacher in its config.json")
    return teacher


def check_run(config, concurrency: int) -> None:
    """Everything about one run that can be checked without loading a model."""
    check_env_id(config.env_id)
    check_count("-n", config.n)
    check_count("--repeats", config.repeats)
    check_count("--concurrency", concurrency)
    check_teacher(config.teacher)
    from intbench.teachers import is_policy_spec

    if not is_policy_spec(config.teacher):
        check_model("--teacher", config.teacher)
    check_model("--student", config.student)
    if config.judge:
        check_model("--judge", config.judge)
    check_env_options(
        config.env_id,
        {**config.env_options, "student": config.student, "n": config.n},
    )
    if getattr(config, "replay_interventions", None):
        check_replay(config)


def check_train(config, max_steps: int | None) -> None:
    """Everything about a training run that can be checked without loading a model."""
    from pathlib import Path

    from intbench.protocols import PROTOCOLS, protocol_of_env_id

    if max_steps is not None:
        check_count("--max-steps", max_steps)
    if config.method == "sft":
        for run in config.records:
            if not Path(run).exists():
                raise UsageError(f"--records: no run directory at {run!r}")
        return
    check_env_id(config.env)
    spec = protocol_of_env_id(config.env)
    if spec.grpo is None:
        trained = [p for p in PROTOCOLS.values() if p.grpo is not None]
        ids = " or ".join(f"IntBench-<Domain>{p.id_suffix}" for p in trained)
        raise UsageError(
            f"GRPO trains {' and '.join(p.name for p in trained)} teachers; {config.env} is a "
            f"{spec.name} env (use {ids})"
        )
    policy = config.model
    if policy != "smollm2":
        directory = policy[len("hf:") :] if policy.startswith("hf:") else policy
        if not Path(directory).is_dir():
            raise UsageError(
                f"--model: cannot train {policy!r}; use 'smollm2', 'hf:<dir>' or a local "
                "model directory (served models, e.g. openai: specs, cannot be trained)"
            )
    check_model("--student", config.student)
    check_env_options(config.env, config.env_kwargs())
