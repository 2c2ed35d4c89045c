"""Experiment tracking for eval and matrix runs: ``--report-to wandb|trackio|tensorboard|none``.

The names are TRL's ``report_to`` values, and ``intbench train`` passes its
choice to TRL unchanged.  An eval run logs its configuration at the start,
running counts as episodes finish (episodes done and failed, the running
mean reward), and the final metric tables at the end.  Each tracker is an
optional extra named after it (``pip install "intbench[wandb]"``; ``tracking``
installs all three); asking for one that is not installed is a one-line error
before any work.

A tracker starts on the first thing logged (the first finished episode, or the
final tables), so a run that stops before it leaves no tracker files and no
empty remote run.  wandb's environment variables are honoured: ``WANDB_DIR``,
``WANDB_PROJECT`` and ``WANDB_NAME`` replace IntBench's defaults for them (the run
directory, the project ``intbench``, the directory's name), and wandb reads the
others itself (``WANDB_ENTITY``, ``WANDB_MODE``, ``WANDB_TAGS``, ...).
``intbench train`` leaves all of it to TRL, whose wandb callback reads them too.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from intbench.extras import MissingExtra, require

TRACKERS = ("none", "tensorboard", "wandb", "trackio")
# Each tracker's extra (named after it) and the modules it imports; TensorBoard
# writes through torch's SummaryWriter.
_MODULES = {"tensorboard": ("tensorboard", "torch"), "wandb": ("wandb",), "trackio": ("trackio",)}


class TrackerError(ValueError):
    """A ``--report-to`` value that cannot be used; the message names the fix."""


def check_tracker(name: str) -> None:
    """Fail fast: an unknown tracker, or one whose package is missing."""
    if name not in TRACKERS:
        raise TrackerError(f"--report-to must be one of {', '.join(TRACKERS)}, got {name!r}")
    try:
        require(name, _MODULES.get(name, ()), f"--report-to {name}")
    except MissingExtra as exc:
        raise TrackerError(str(exc)) from None


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


def wandb_init_args(run_dir: Path) -> dict[str, str]:
    """``wandb.init``'s ``dir``, ``project`` and ``name``: ``WANDB_DIR``, ``WANDB_PROJECT`` and
    ``WANDB_NAME`` when set, else the run directory, ``intbench`` and the directory's name.

    Read here, when the run starts: wandb reads its variables once per process."""
    defaults = {
        "dir": ("WANDB_DIR", str(run_dir)),
        "project": ("WANDB_PROJECT", "intbench"),
        "name": ("WANDB_NAME", run_dir.name),
    }
    return {arg: os.environ.get(var) or value for arg, (var, value) in defaults.items()}


class WandbTracker(Tracker):
    """A wandb run, by default named after the run directory and kept in it
    (``WANDB_MODE=offline`` works offline; see :func:`wandb_init_args`)."""

    def __init__(self, run_dir: Path):
        import wandb

        self.wandb = wandb
        args = wandb_init_args(run_dir)
        self.run = wandb.init(
            reinit="finish_previous", dir=args["dir"], project=args["project"], name=args["name"]
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


class _StartedOnFirstLog(Tracker):
    """Starts its tracker when something is first logged; the config waits until then."""

    def __init__(self, start: Callable[[], Tracker]):
        self._start = start
        self._tracker: Tracker | None = None
        self._config: dict | None = None

    def _started(self) -> Tracker:
        if self._tracker is None:
            self._tracker = self._start()
            if self._config is not None:
                self._tracker.log_config(self._config)
        return self._tracker

    def log_config(self, config: dict) -> None:
        if self._tracker is None:
            self._config = config
        else:
            self._tracker.log_config(config)

    def log_metrics(self, metrics: dict[str, float], step: int) -> None:
        self._started().log_metrics(metrics, step)

    def log_tables(self, tables: Iterable[Any]) -> None:
        self._started().log_tables(tables)

    def finish(self) -> None:
        if self._tracker is not None:
            self._tracker.finish()


def make_tracker(name: str, run_dir: str | os.PathLike) -> Tracker:
    """The tracker ``name`` for the run in ``run_dir``, started on the first thing logged."""
    check_tracker(name)
    trackers = {"tensorboard": TensorBoardTracker, "wandb": WandbTracker, "trackio": TrackioTracker}
    if name not in trackers:
        return Tracker()
    return _StartedOnFirstLog(lambda: trackers[name](Path(run_dir)))


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
