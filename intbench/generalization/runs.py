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
    """The problems of a run (see :func:`intbench.runner.run_problems`)."""
    from intbench.runner import run_problems as saved_run_problems

    return saved_run_problems(run_dir)
