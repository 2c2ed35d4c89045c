"""``summary.json``: what a run did and spent, kept up to date while it runs.

It holds the episodes done, failed and retried; wall time per phase; requests
and tokens per role (student, teacher, judge), counted from the backends'
own usage counters over this run only; the model specs; IntBench's version and
git revision; and, when prices are given (``--price ROLE=IN/OUT``, US$ per
million prompt / completion tokens), a cost estimate.
"""

from __future__ import annotations

import dataclasses
import functools
import subprocess
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

ROLES = ("student", "teacher", "judge")
_COUNTED = ("calls", "prompt_tokens", "completion_tokens", "errors")


class PriceError(ValueError):
    """A ``--price`` value that cannot be read; the message says the expected form."""


def parse_prices(items: list[str] | None) -> dict[str, tuple[float, float]]:
    """``["student=0.5/1.5", ...]`` -> ``{"student": (0.5, 1.5)}`` (US$ per million tokens)."""
    prices: dict[str, tuple[float, float]] = {}
    for item in items or []:
        role, sep, value = item.partition("=")
        prompt, slash, completion = value.partition("/")
        try:
            if not sep or not slash or role not in ROLES:
                raise ValueError
            pair = (float(prompt), float(completion))
            if min(pair) < 0:
                raise ValueError
        except ValueError:
            raise PriceError(
                f"--price needs ROLE=IN/OUT with ROLE one of {', '.join(ROLES)} and prices "
                f"in US$ per million prompt/completion tokens, e.g. student=0.15/0.60; got {item!r}"
            ) from None
        prices[role] = pair
    return prices


@functools.lru_cache(maxsize=1)
def _revision() -> str | None:
    """The git revision of the checkout IntBench runs from, if it is one."""
    try:
        result = subprocess.run(
            ["git", "rev-parse", "HEAD"],
            cwd=Path(__file__).resolve().parent,
            capture_output=True,
            text=True,
            timeout=5,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return result.stdout.strip() or None if result.returncode == 0 else None


def _usage(backend: object) -> dict[str, int]:
    usage = getattr(backend, "usage", None)
    if usage is None:
        return dict.fromkeys(_COUNTED, 0)
    values = dataclasses.asdict(usage)
    return {name: int(values.get(name, 0)) for name in _COUNTED}


class RunSummary:
    """The counts and timings of one run; :meth:`to_dict` is ``summary.json``.

    ``backends`` maps a role to its backend (or ``None``); the usage a backend
    had before the run is subtracted, since backends are shared in a process.
    """

    def __init__(
        self,
        config: Mapping[str, Any],
        backends: Mapping[str, object],
        prices: Mapping[str, tuple[float, float]] | None = None,
        setup_started: float | None = None,
    ):
        """``setup_started``: the ``time.perf_counter()`` at which the run began (default now)."""
        from intbench import __version__

        self.config = dict(config)
        self.processes = 1  # processes (workers, Ray tasks, accelerate ranks) that played it
        self.backends = {role: b for role, b in backends.items() if b is not None}
        self.prices = dict(prices or {})
        self.version = __version__
        self._before = {role: _usage(b) for role, b in self.backends.items()}
        now = time.perf_counter()
        self._phase_started = now if setup_started is None else setup_started
        self._started = time.time() - (now - self._phase_started)
        self._phase = "setup"
        self.phases: dict[str, float] = {}
        self._elsewhere: list[dict] = []  # usage counted in worker processes
        self.done = self.failed = self.retried = self.skipped = 0
        self.total = 0
        self.finished = False
        self.settings: dict[str, Any] = {}  # what the env resolved itself (the tutor's checker)
        # Variants the transfer arms dropped because the original's answer answers them.
        self.variants_sharing_answer: set[str] = set()

    def begin(self, name: str) -> None:
        """End the phase running now (the first is ``setup``) and start ``name``."""
        now = time.perf_counter()
        self.phases[self._phase] = self.phases.get(self._phase, 0.0) + now - self._phase_started
        self._phase, self._phase_started = name, now

    def count(self, failed: bool, metadata: Mapping[str, Any] | None = None) -> None:
        """One more finished episode (``failed``: recorded with an error, re-run on resume;
        ``metadata``: the record's, for the variants its transfer arms dropped)."""
        self.done += 1
        self.failed += int(failed)
        for entry in (metadata or {}).get("transfer") or ():
            self.variants_sharing_answer.update(entry.get("dropped_sharing_answer") or ())

    def add_usage(self, usage: dict[str, dict]) -> None:
        """Add what :meth:`usage` of a worker process's summary counted."""
        self._elsewhere.append(usage)

    def usage(self) -> dict[str, dict]:
        """Requests and tokens per role during this run (and its cost, when priced)."""
        roles = {}
        seen: dict[int, str] = {}
        for role, backend in self.backends.items():
            if id(backend) in seen:  # one model in two roles: counted once, under the first
                roles[role] = {"same_backend_as": seen[id(backend)]}
                continue
            seen[id(backend)] = role
            now, before = _usage(backend), self._before[role]
            counts: dict[str, Any] = {name: now[name] - before[name] for name in _COUNTED}
            counts["requests"] = counts.pop("calls")
            for other in self._elsewhere:
                for name in ("requests", "prompt_tokens", "completion_tokens", "errors"):
                    counts[name] += (other.get(role) or {}).get(name, 0)
            counts["spec"] = getattr(backend, "spec", type(backend).__name__)
            if role in self.prices:
                prompt, completion = self.prices[role]
                counts["cost_usd"] = round(
                    (counts["prompt_tokens"] * prompt + counts["completion_tokens"] * completion)
                    / 1e6,
                    6,
                )
            roles[role] = counts
        return roles

    def to_dict(self) -> dict:
        usage = self.usage()
        phases = dict(self.phases)  # with the phase running now, so far
        phases[self._phase] = (
            phases.get(self._phase, 0.0) + time.perf_counter() - self._phase_started
        )
        costs = [u["cost_usd"] for u in usage.values() if "cost_usd" in u]
        return {
            "finished": self.finished,
            "episodes": {
                "total": self.total,
                "done": self.done,
                "failed": self.failed,
                "retried": self.retried,
                "already_done": self.skipped,
            },
            "started_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(self._started)),
            "seconds": {name: round(value, 3) for name, value in phases.items()}
            | {"total": round(sum(phases.values()), 3)},
            "usage": usage,
            "processes": self.processes,
            "cost_usd": round(sum(costs), 6) if costs else None,
            "models": {role: self.config.get(role) for role in ROLES if self.config.get(role)},
            "settings": self.settings,
            "variants_sharing_answer": len(self.variants_sharing_answer),
            "intbench": {"version": self.version, "git_revision": _revision()},
        }


def summary_table(summaries: Mapping[str, dict]):
    """The report's table of runs: episodes, wall time, tokens per role and cost."""
    from intbench.metrics.table import Table

    def tokens(usage: dict, role: str) -> str | None:
        counts = usage.get(role) or {}
        if "prompt_tokens" not in counts:
            return None
        return f"{counts['prompt_tokens']} / {counts['completion_tokens']}"

    rows = []
    for name, summary in summaries.items():
        episodes, usage = summary.get("episodes", {}), summary.get("usage", {})
        rows.append(
            [
                name,
                episodes.get("done"),
                episodes.get("failed"),
                summary.get("seconds", {}).get("total"),
                tokens(usage, "student"),
                tokens(usage, "teacher"),
                tokens(usage, "judge"),
                summary.get("cost_usd"),
                "yes" if summary.get("finished") else "no",
            ]
        )
    return Table(
        "runs",
        "Runs: episodes, time and tokens (prompt / completion) from summary.json",
        [
            "run",
            "episodes run",
            "failed",
            "seconds",
            "student tokens",
            "teacher tokens",
            "judge tokens",
            "cost (US$)",
            "finished",
        ],
        rows,
        note="Counts of the run's own processes; an episode re-run on resume is counted again.",
        ids=[
            "run",
            "done",
            "failed",
            "seconds",
            "student_tokens",
            "teacher_tokens",
            "judge_tokens",
            "cost_usd",
            "finished",
        ],
    )
