"""Evaluation runs: many episodes in flight, resumable, nothing lost.

A run plays ``n`` problems x ``repeats`` episodes of one env with one teacher
and one student.  Each finished episode is appended to ``DIR/episodes.jsonl``
and flushed to disk at once; the run's configuration is saved to
``DIR/config.json``.  Re-running the same command skips finished episodes, so
an interrupted run (Ctrl-C, a crash, SIGKILL) resumes where it stopped; an
episode whose model or grader failed is recorded with its error and retried
on the next resume.  A different configuration into the same ``DIR`` is
refused.

Episodes are identified by ``run_key`` = ``"<problem index>:<repeat>"`` and
seeded from (run seed, key), so which episodes a run holds does not depend on
where it was interrupted.  Up to ``concurrency`` episodes are in flight: their
student calls and their teacher calls are each batched into one model call
per round (one padded forward pass locally, parallel requests on a server).
"""

from __future__ import annotations

import json
import logging
import os
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import gymnasium as gym

from intbench.cache import stable_hash
from intbench.envs import flows
from intbench.envs.registration import protocol_of
from intbench.records import Episode

logger = logging.getLogger(__name__)

EPISODES_FILE = "episodes.jsonl"
EPISODE_TIMEOUT_S = 1800.0
"""Default wall-clock limit of one episode (``run_eval(episode_timeout_s=...)``,
``intbench eval --episode-timeout``).  Every model call and grader is bounded on
its own; this bounds their sum, so one pathological episode cannot stall a run."""
CONFIG_FILE = "config.json"
PROBLEMS_FILE = "problems.jsonl"


@dataclass
class RunConfig:
    """Everything that decides a run's episodes (saved to ``config.json``)."""

    env_id: str
    teacher: str
    student: str = "smollm2"
    judge: str | None = None
    n: int = 10
    repeats: int = 1
    seed: int = 0
    source: str = "offline"
    split: str | None = None
    env_options: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict:
        return asdict(self)


class ConfigMismatchError(RuntimeError):
    """The output directory holds a run with another configuration."""


class EpisodeLog:
    """``episodes.jsonl``: append-only, flushed per episode, repaired after a crash."""

    def __init__(self, path: Path):
        self.path = path
        self.records: dict[str, dict] = {}
        if path.exists():
            self._load()

    def _load(self) -> None:
        data = self.path.read_bytes()
        if data and not data.endswith(b"\n"):
            # A write cut short by a kill: drop the partial line.
            keep = data.rfind(b"\n") + 1
            logger.warning("dropping a partial last line in %s", self.path)
            with open(self.path, "r+b") as handle:
                handle.truncate(keep)
            data = data[:keep]
        for number, line in enumerate(data.decode("utf-8").splitlines(), 1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
                self.records[record["metadata"]["run_key"]] = record
            except (ValueError, KeyError, TypeError):
                logger.warning("skipping unreadable line %d of %s", number, self.path)

    def finished(self, key: str) -> bool:
        record = self.records.get(key)
        return record is not None and not record.get("error")

    def drop_failed(self) -> int:
        """Rewrite the file without the failed episodes about to be retried."""
        failed = [k for k, r in self.records.items() if r.get("error")]
        if not failed:
            return 0
        for key in failed:
            del self.records[key]
        tmp = self.path.with_suffix(".jsonl.tmp")
        with open(tmp, "w", encoding="utf-8") as handle:
            for record in self.records.values():
                handle.write(json.dumps(record, ensure_ascii=False) + "\n")
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, self.path)
        return len(failed)

    def append(self, record: dict) -> None:
        line = json.dumps(record, ensure_ascii=False) + "\n"
        with open(self.path, "a", encoding="utf-8") as handle:
            handle.write(line)
            handle.flush()
            os.fsync(handle.fileno())
        self.records[record["metadata"]["run_key"]] = record


def prepare_dir(config: RunConfig, out_dir: Path) -> None:
    """Create ``out_dir`` and save the config, or check it matches the saved one."""
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / CONFIG_FILE
    wanted = config.to_dict()
    if path.exists():
        saved = json.loads(path.read_text(encoding="utf-8"))
        if saved != json.loads(json.dumps(wanted)):
            diffs = [
                f"{k}: {saved.get(k)!r} -> {wanted.get(k)!r}"
                for k in sorted(set(saved) | set(wanted))
                if saved.get(k) != wanted.get(k)
            ]
            raise ConfigMismatchError(
                f"{out_dir} holds a run with a different configuration ({'; '.join(diffs)}). "
                "Use another --out directory, or delete this one to start over."
            )
        return
    path.write_text(json.dumps(wanted, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")


def episode_seed(config: RunConfig, key: str) -> int:
    return int(stable_hash("episode", config.seed, key)[:8], 16)


@dataclass
class RunResult:
    out_dir: Path
    episodes: list[dict]
    ran: int
    skipped: int
    seconds: float


def run_eval(
    config: RunConfig,
    out_dir: str | os.PathLike,
    concurrency: int = 8,
    progress: bool = True,
    on_episode: Callable[[dict], None] | None = None,
    episode_timeout_s: float | None = EPISODE_TIMEOUT_S,
) -> RunResult:
    """Run (or resume) an evaluation and return all its episode records.

    An episode still running ``episode_timeout_s`` seconds after its reset
    (checked between rounds; ``None`` for no limit) is recorded as failed,
    like a model or grader error, and so re-run on resume.
    """
    if episode_timeout_s is not None and not episode_timeout_s > 0:
        raise ValueError(f"episode_timeout_s must be positive, got {episode_timeout_s!r}")
    from intbench.teachers import make_teacher

    out = Path(out_dir)
    prepare_dir(config, out)
    log = EpisodeLog(out / EPISODES_FILE)
    retried = log.drop_failed()
    if retried:
        logger.warning("retrying %d failed episode(s)", retried)

    envs = [_make_env(config) for _ in range(max(1, concurrency))]
    first = envs[0]
    problems = first.problems
    save_problems(out, problems)
    keys = [f"{i}:{r}" for r in range(config.repeats) for i in range(len(problems))]
    todo = [k for k in keys if not log.finished(k)]
    skipped = len(keys) - len(todo)
    protocol = protocol_of(config.env_id)
    condition = getattr(first, "condition", None)
    teacher = make_teacher(config.teacher, protocol, condition)
    executor = first._executor
    student = executor.backends["student"]
    started = time.perf_counter()
    bar = _progress_bar(len(keys), skipped, progress)
    active: dict[int, dict] = {}  # slot -> {"key", "obs", "info", "steps"}
    try:
        while todo or active:
            free = [slot for slot in range(len(envs)) if slot not in active][: len(todo)]
            starting = [(slot, todo.pop(0)) for slot in free]
            reset_at = time.monotonic()  # the limit counts the reset (baseline) too
            resets = flows.run_flows(
                [
                    envs[slot].reset_flow(
                        seed=episode_seed(config, key),
                        options={
                            "problem_index": int(key.split(":")[0]),
                            "student_seed": config.seed + int(key.split(":")[1]),
                        },
                    )
                    for slot, key in starting
                ],
                executor,
            )
            for (slot, key), (obs, info) in zip(starting, resets, strict=True):
                teacher.reset(slot)
                active[slot] = {
                    "key": key, "obs": obs, "info": info, "step": 0, "start": reset_at
                }  # fmt: skip
            slots = sorted(active)
            seeds = [episode_seed(config, active[s]["key"]) + active[s]["step"] for s in slots]
            actions = teacher.act(
                slots, [(active[s]["obs"], active[s]["info"]) for s in slots], seeds
            )
            results = flows.run_flows(
                [envs[s].step_flow(a) for s, a in zip(slots, actions, strict=True)], executor
            )
            for slot, (obs, _, terminated, truncated, info) in zip(slots, results, strict=True):
                state = active[slot]
                state.update(obs=obs, info=info, step=state["step"] + 1)
                if terminated or truncated:
                    record = _finish_record(
                        envs[slot].last_episode, config, state["key"], teacher, slot
                    )
                    log.append(record)
                    if on_episode:
                        on_episode(record)
                    del active[slot]
                    _tick(bar, student, teacher)
            for slot in _overdue(active, episode_timeout_s):
                record = _timeout_record(
                    problems, config, active.pop(slot)["key"], episode_timeout_s
                )
                log.append(record)
                if on_episode:
                    on_episode(record)
                _tick(bar, student, teacher)
    finally:
        if bar is not None:
            bar.close()
        for env in envs:
            env.close()
    episodes = [log.records[k] for k in keys if k in log.records]
    return RunResult(out, episodes, len(keys) - skipped, skipped, time.perf_counter() - started)


def _make_env(config: RunConfig):
    import intbench.envs  # noqa: F401  (registers the ids)

    kwargs = dict(config.env_options)
    kwargs.update(
        student=config.student,
        source=config.source,
        split=config.split,
        n=config.n,
        data_seed=config.seed,
    )
    if config.judge:
        kwargs["judge"] = config.judge
    return gym.make(config.env_id, **kwargs).unwrapped


def _finish_record(episode: Episode, config: RunConfig, key: str, teacher, slot: int) -> dict:
    episode.teacher = config.teacher
    problem_index, repeat = key.split(":")
    episode.metadata.update(run_key=key, problem_index=int(problem_index), repeat=int(repeat))
    outputs = getattr(teacher, "outputs", {}).get(slot)
    if outputs is not None:
        episode.metadata["teacher_outputs"] = outputs
        prompt, completion = teacher.tokens[slot]
        episode.tokens.update(teacher_prompt=prompt, teacher_completion=completion)
    return episode.to_dict()


def _overdue(active: dict[int, dict], limit_s: float | None) -> list[int]:
    """Slots whose episode has run longer than ``limit_s`` seconds."""
    if limit_s is None:
        return []
    now = time.monotonic()
    return [slot for slot, state in active.items() if now - state["start"] > limit_s]


def _timeout_record(problems: list, config: RunConfig, key: str, limit_s: float) -> dict:
    """A failed-episode record for an episode cut off by the wall-clock limit."""
    problem_index, repeat = key.split(":")
    problem = problems[int(problem_index)]
    episode = Episode(
        protocol=protocol_of(config.env_id),
        problem_id=problem.id,
        domain=problem.domain,
        student=config.student,
        teacher=config.teacher,
        judge=config.judge,
        seed=episode_seed(config, key),
        error=f"episode exceeded the wall-clock limit of {limit_s:g} s (--episode-timeout)",
        metadata={"run_key": key, "problem_index": int(problem_index), "repeat": int(repeat)},
    )
    return episode.to_dict()


def _progress_bar(total: int, done: int, enabled: bool):
    if not enabled:
        return None
    from tqdm.auto import tqdm

    return tqdm(total=total, initial=done, unit="episode", dynamic_ncols=True)


def _tick(bar, student, teacher) -> None:
    if bar is None:
        return
    bar.update(1)
    elapsed = bar.format_dict.get("elapsed") or 0.0
    generated = student.usage.completion_tokens
    backend = getattr(teacher, "backend", None)
    if backend is not None and backend is not student:
        generated += backend.usage.completion_tokens
    if elapsed > 0:
        bar.set_postfix(tok_s=f"{generated / elapsed:.1f}")


def save_problems(out_dir: Path, problems: list) -> None:
    """Write the run's problems once, so analyses never need to rebuild them."""
    path = Path(out_dir) / PROBLEMS_FILE
    if path.exists():
        return
    tmp = path.with_suffix(".jsonl.tmp")
    with open(tmp, "w", encoding="utf-8") as handle:
        for problem in problems:
            handle.write(json.dumps(problem.to_dict(), ensure_ascii=False) + "\n")
    os.replace(tmp, path)


def run_problems(run_dir: str | os.PathLike) -> list:
    """The problems of a run directory (``intbench eval``, ``intbench serve``).

    Read from ``problems.jsonl``; for a directory without one, rebuilt from
    ``config.json`` with the loader call the run made.

    Raises:
        FileNotFoundError: neither file is there.
    """
    from intbench.records import Problem

    directory = Path(run_dir)
    saved = directory / PROBLEMS_FILE
    if saved.is_file():
        lines = saved.read_text(encoding="utf-8").splitlines()
        return [Problem.from_dict(json.loads(line)) for line in lines if line.strip()]
    path = directory / CONFIG_FILE
    if not path.is_file():
        raise FileNotFoundError(
            f"{run_dir} is not an intbench run directory (no {PROBLEMS_FILE} or {CONFIG_FILE})"
        )
    config = json.loads(path.read_text(encoding="utf-8"))
    import intbench.envs  # noqa: F401  (registers the ids)
    from intbench.envs.common import resolve_problems

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


def load_run(out_dir: str | os.PathLike) -> list[dict]:
    """The episode records of a run directory (the latest record per episode)."""
    return list(EpisodeLog(Path(out_dir) / EPISODES_FILE).records.values())
