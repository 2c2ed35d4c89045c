"""Recover what an ``intbench eval`` run used: its problems and its student."""

from __future__ import annotations

import json
import os
from pathlib import Path

from intbench.records import Problem


def run_config(run_dir: str | os.PathLike) -> dict:
    """The saved ``config.json`` of a run directory.

    Raises:
        FileNotFoundError: ``run_dir`` is not a run directory.
    """
    from intbench.runner import CONFIG_FILE

    path = Path(run_dir) / CONFIG_FILE
    if not path.is_file():
        raise FileNotFoundError(f"{run_dir} is not an intbench run directory (no {CONFIG_FILE})")
    return json.loads(path.read_text(encoding="utf-8"))


def run_problems(run_dir: str | os.PathLike) -> list[Problem]:
    """The problems of a run, loaded exactly as the run's env loaded them."""
    import gymnasium as gym

    import intbench.envs  # noqa: F401  (registers the env ids)
    from intbench.envs.common import resolve_problems

    config = run_config(run_dir)
    options = config.get("env_options") or {}
    domain = gym.spec(config["env_id"]).kwargs["domain"]
    return resolve_problems(
        domain,
        options.get("problems"),
        config.get("source", "offline"),
        config.get("split"),
        config.get("n"),
        config.get("seed", 0),
    )
