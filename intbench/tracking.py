"""Experiment tracking for eval and matrix runs: ``--report-to wandb|trackio|tensorboard|none``.

The names are TRL's ``report_to`` values, and ``intbench train`` passes its
choice to TRL unchanged.  An eval run logs its configuration at the start,
running counts as episodes finish (episodes done and failed, the running
mean reward), and the final metric tables at the end.  Each tracker is an
optional extra (``pip install intbench[tracking]``); asking for one that is not
installed is a one-line error before any work.
"""

from __future__ import annotations

import importlib.util
import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

TRACKERS = ("none", "tensorboard", "wandb", "trackio")
_MODULES = {"tensorboard": "tensorboard", "wandb": "wandb", "trackio": "trackio"}


class TrackerError(ValueError):
    """A ``--report-to`` value that cannot be used; the message names the fix."""


def check_tracker(name: str) -> None:
    """Fail fast: an unknown tracker, or one whose package is missing."""
    if name not in TRACKERS:
        raise TrackerError(f"--report-to must be one of {', '.join(TRACKERS)}, got {name!r}")
    module = _MODULES.get(name)
    if module and importlib.util.find_spec(module) is None:
        raise TrackerError(
            f"--report-to {name} needs the {module} package: pip install {module} "
            "(or pip install 'intbench[tracking]')"
        )


class Tracker:
    """Logs one run; the base class logs nothing (``--report-to none``)."""

    def log_config(self, config: dict) -> None:
        pass

    def log_metrics(self, metrics: dict[str, float], step: int) -> None:
        pass

    def log_tables(self, tables: Iterable[Any]) -> None:
        pass

    def finish(self) -> None:
        pass


class TensorBoardTracker(Tracker):
    """Event files under ``DIR/tensorboard`` (``tensorboard --logdir DIR``)."""

    def __init__(self, run_dir: Path):
        from torch.utils.tensorboard import SummaryWriter

        self.writer = SummaryWriter(log_dir=str(run_dir / "tensorboard"))

    def log_config(self, config: dict) -> None:
        import json

        self.writer.add_text("config", "```\n" + json.dumps(config, indent=2) + "\n```")

    def log_metrics(self, metrics: dict[str, float], step: int) -> None:
        for name, value in metrics.items():
            self.writer.add_scalar(name, value, step)

    def log_tables(self, tables: Iterable[Any]) -> None:
        for table in tables:
            self.writer.add_text(f"tables/{table.name}", table.to_markdown())

    def finish(self) -> None:
        self.writer.close()


class WandbTracker(Tracker):
    """A wandb run named after the run directory (``WANDB_MODE=offline`` works offline)."""

    def __init__(self, run_dir: Path):
        import wandb

        self.wandb = wandb
        self.run = wandb.init(
            project=os.environ.get("WANDB_PROJECT", "intbench"),
            name=run_dir.name,
            dir=str(run_dir),
            reinit="finish_previous",
        )

    def log_config(self, config: dict) -> None:
        self.run.config.update(config, allow_val_change=True)

    def log_metrics(self, metrics: dict[str, float], step: int) -> None:
        self.run.log(metrics, step=step)

    def log_tables(self, tables: Iterable[Any]) -> None:
        for table in tables:
            rows = [[_cell(value) for value in row] for row in table.rows]
            self.run.log(
                {f"tables/{table.name}": self.wandb.Table(columns=table.columns, data=rows)}
            )

    def finish(self) -> None:
        self.run.finish()


class TrackioTracker(WandbTracker):
    """A trackio run (local by default): its run has wandb's ``log`` and ``finish``, so
    metrics and the finish are wandb's; the config goes in as logged strings, and
    tables are not logged."""

    def __init__(self, run_dir: Path):
        import trackio

        self.run = trackio.init(
            project=os.environ.get("TRACKIO_PROJECT", "intbench"), name=run_dir.name
        )

    def log_config(self, config: dict) -> None:
        self.run.log({f"config/{k}": str(v) for k, v in config.items()})

    def log_tables(self, tables: Iterable[Any]) -> None:
        pass


def _cell(value: Any) -> Any:
    """A table cell as a tracker can store it: estimates as their value."""
    return getattr(value, "value", value) if not isinstance(value, (int, float, str)) else value


def make_tracker(name: str, run_dir: str | os.PathLike) -> Tracker:
    check_tracker(name)
    trackers = {"tensorboard": TensorBoardTracker, "wandb": WandbTracker, "trackio": TrackioTracker}
    return trackers[name](Path(run_dir)) if name in trackers else Tracker()


class EpisodeTracking:
    """The runner's ``on_episode`` hook for a tracker: running counts per finished episode."""

    def __init__(self, tracker: Tracker):
        self.tracker = tracker
        self.done = self.failed = 0
        self.reward = 0.0

    def __call__(self, record: dict) -> None:
        self.done += 1
        self.failed += int(bool(record.get("error")))
        self.reward += float(record.get("reward") or 0.0)
        self.tracker.log_metrics(
            {
                "episodes/done": self.done,
                "episodes/failed": self.failed,
                "episodes/mean_reward": self.reward / self.done,
            },
            step=self.done,
        )
