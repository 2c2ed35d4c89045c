"""Reading run directories for a report: every run below the given paths, retries resolved."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
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
    unreadable: list[tuple[Path, str]] = field(default_factory=list)  # runs left out, and why

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


def _unusable(episodes: list[Episode]) -> str | None:
    """Why a run's episodes cannot be reported here, or ``None``."""
    from intbench.envs.domains import registry

    unknown = sorted({e.domain for e in episodes if not registry.is_registered(e.domain)})
    if unknown:
        return (
            f"unknown domain {unknown[0]!r}; import the module that registers it "
            "(see 'Adding a domain' in docs/domains.md)"
        )
    return None


def read_runs(dirs: Sequence[str | Path]) -> LoadedRuns:
    """Read the episodes of every run directory in (or below) ``dirs``; malformed lines are
    skipped and counted, and a run that cannot be read or reported here (an unknown
    domain) is left out and named in :attr:`LoadedRuns.unreadable`.

    When one episode appears several times (a resumed run retried it), the
    last record wins.  Raises :class:`ReportError` for a missing directory or
    when no episodes are found at all.
    """
    if isinstance(dirs, (str, Path)):
        dirs = [dirs]
    if not dirs:
        raise ReportError("no run directories given")
    latest: dict[tuple, Episode] = {}
    sources, total, unreadable = [], 0, []
    for directory in map(Path, dirs):
        if not directory.exists():
            raise ReportError(f"{directory}: no such directory")
        runs = RunDir.below(directory)
        if not runs:
            raise ReportError(f"{directory}: no {EPISODES_FILE} found")
        for run in runs:
            try:
                read = run.read()
            except (OSError, ValueError) as exc:
                unreadable.append((run.path, f"{type(exc).__name__}: {exc}"))
                continue
            reason = _unusable(read.episodes)
            if reason:
                unreadable.append((run.path, reason))
                continue
            sources.append(
                RunSource(read.path, len(read.episodes), read.skipped, run.config(), run.summary())
            )
            total += len(read.episodes)
            for episode in read.episodes:
                key = _identity(episode)
                latest.pop(key, None)  # re-insert so the order is that of the last record
                latest[key] = episode
    if not latest:
        names = ", ".join(
            [str(s.path) for s in sources] + [f"{p} ({why})" for p, why in unreadable]
        )
        raise ReportError(f"no episodes found in {names}")
    return LoadedRuns(list(latest.values()), sources, total - len(latest), unreadable)


def load_episodes(dirs: Sequence[str | Path]) -> list[Episode]:
    """All episode records of the run directories (see :func:`read_runs`)."""
    return read_runs(dirs).episodes
