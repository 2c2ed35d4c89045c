"""Reading run directories for a report: every run below the given paths, retries resolved."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from intbench.records import Episode
from intbench.rundir import EPISODES_FILE, RunDir


class ReportError(ValueError):
    """The input cannot make a report (missing directories, no episodes)."""


@dataclass
class RunSource:
    """One run directory's episodes file that was read, with what was kept and skipped."""

    path: Path
    episodes: int = 0
    skipped: int = 0
    config: dict | None = None
    summary: dict | None = None


@dataclass
class LoadedRuns:
    """Episodes of all sources (duplicates resolved) and per-file counts."""

    episodes: list[Episode]
    sources: list[RunSource]
    replaced: int = 0  # earlier records of an episode superseded by a later one (a retry)

    @property
    def skipped(self) -> int:
        return sum(s.skipped for s in self.sources)


def _identity(episode: Episode) -> tuple:
    # episode ids are unique per draw but shared across teachers, so the
    # models and condition are part of what makes a record "the same episode"
    return (
        episode.episode_id,
        episode.protocol,
        episode.student,
        episode.teacher,
        episode.condition,
    )


def read_runs(dirs: Sequence[str | Path]) -> LoadedRuns:
    """Read the episodes of every run directory in (or below) ``dirs``; malformed lines are
    skipped and counted.

    When one episode appears several times (a resumed run retried it), the
    last record wins.  Raises :class:`ReportError` for a missing directory or
    when no episodes are found at all.
    """
    if isinstance(dirs, (str, Path)):
        dirs = [dirs]
    if not dirs:
        raise ReportError("no run directories given")
    latest: dict[tuple, Episode] = {}
    sources, total = [], 0
    for directory in map(Path, dirs):
        if not directory.exists():
            raise ReportError(f"{directory}: no such directory")
        runs = RunDir.below(directory)
        if not runs:
            raise ReportError(f"{directory}: no {EPISODES_FILE} found")
        for run in runs:
            read = run.read()
            sources.append(
                RunSource(read.path, len(read.episodes), read.skipped, run.config(), run.summary())
            )
            total += len(read.episodes)
            for episode in read.episodes:
                key = _identity(episode)
                latest.pop(key, None)  # re-insert so the order is that of the last record
                latest[key] = episode
    if not latest:
        names = ", ".join(str(s.path) for s in sources)
        raise ReportError(f"no episodes found in {names}")
    return LoadedRuns(list(latest.values()), sources, total - len(latest))


def load_episodes(dirs: Sequence[str | Path]) -> list[Episode]:
    """All episode records of the run directories (see :func:`read_runs`)."""
    return read_runs(dirs).episodes
