"""Evaluation runs: many episodes in flight, resumable, nothing lost.

A run plays ``n`` problems x ``repeats`` episodes of one env with one teacher
and one student.  Each finished episode is appended to the run directory
``DIR`` (:class:`~intbench.rundir.RunDir`) in one write as it ends, beside
the run's configuration.  Re-running the same command skips finished episodes, so
an interrupted run (Ctrl-C, a crash, SIGKILL) resumes where it stopped; an
episode whose model or grader failed is recorded with its error and retried
on the next resume.  A different configuration into the same ``DIR`` is
refused.

Episodes are identified by ``run_key`` = ``"<problem index>:<repeat>"`` and
seeded from (run seed, key), so which episodes a run holds does not depend on
where it was interrupted.  Up to ``concurrency`` episodes are in flight, each at
its own pace (:mod:`intbench.envs.engine`): a server gets every ready request
at once, a local model gets what is ready as one padded batch, and gradings
run in a thread pool, so a slow episode delays only itself.
"""

from __future__ import annotations

import importlib
import itertools
import json
import logging
import os
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import gymnasium as gym

from intbench.agents.backends import shared_backend
from intbench.cache import deferred_cache_writes, stable_hash
from intbench.envs.engine import Engine, episode_program
from intbench.envs.registration import protocol_of
from intbench.extras import require
from intbench.metrics.estimate import warm_estimates
from intbench.options import option
from intbench.protocols import PROTOCOLS, has
from intbench.records import Episode, Problem
from intbench.run_summary import RunSummary
from intbench.rundir import ConfigMismatchError, RunDir, RunLockedError, canonical_run_key

if TYPE_CHECKING:  # teachers load the model-side modules; a run imports them when it starts
    from intbench.agents.base import ChatBackend
    from intbench.teachers import Teacher

__all__ = [
    "EPISODE_TIMEOUT_S",
    "ConfigMismatchError",
    "ReplayError",
    "RunLockedError",
    "RunConfig",
    "RunResult",
    "load_run",
    "run_eval",
    "run_problems",
]

logger = logging.getLogger(__name__)

SUMMARY_EVERY_S = 2.0  # how often summary.json is replaced while a run goes
EPISODE_TIMEOUT_S = 1800.0
"""Default wall-clock limit of one episode (``run_eval(episode_timeout_s=...)``,
``intbench eval --episode-timeout``).  Every model call and grader is bounded on
its own; this bounds their sum, so one pathological episode cannot stall a run."""


@dataclass
class RunConfig:
    """Everything that decides a run's episodes (saved in the run directory and in
    ``summary.json``); the flagged fields are ``intbench eval`` and ``matrix`` flags."""

    env_id: str = option(
        help="env id, e.g. IntBench-Math-v0 or IntBench-Math-Feedback-v0", flag=False
    )
    teacher: str = option(help="policy (never, always, at:0.5, ...) or model spec", flag=False)
    student: str = option("smollm2", help="student model spec", flag=False)
    judge: str | None = option(
        None, help="model spec of an LLM judge (none: the domain's verifier)"
    )
    n: int = option(10, help="number of problems")
    repeats: int = option(1, help="episodes per problem, each with its own seed")
    seed: int = option(0, help="seeds the problem draw and every episode")
    source: str = option("offline", help="offline, hub, or a local file in the hub schema")
    split: str | None = option(None, help="the source's split (none: the domain's default)")
    env_options: dict[str, Any] = option(
        help="gym.make options of the env", flag=False, default_factory=dict
    )
    replay_interventions: str | None = option(
        None,
        help="a Standard monitor run whose interventions this run replays (Int-Bench §3.3)",
        flag=False,
    )

    def to_dict(self) -> dict:
        data = asdict(self)
        if data["replay_interventions"] is None:
            del data["replay_interventions"]  # configs saved before the option stay comparable
        return data


def episode_seed(config: RunConfig, key: str) -> int:
    return int(stable_hash("episode", config.seed, key)[:8], 16)


@dataclass
class RunResult:
    """A finished run: its episodes as written (dicts, in run-key order) and the same
    episodes as :class:`Episode` objects, which the metrics take without parsing."""

    out_dir: Path
    episodes: list[dict]
    ran: int
    skipped: int
    seconds: float
    records: list[Episode]


def run_eval(
    config: RunConfig,
    out_dir: str | os.PathLike,
    concurrency: int = 8,
    progress: bool = True,
    on_episode: Callable[[dict], None] | None = None,
    episode_timeout_s: float | None = EPISODE_TIMEOUT_S,
    prices: dict[str, tuple[float, float]] | None = None,
    workers: int = 1,
    ray_address: str | None = None,
) -> RunResult:
    """Run (or resume) an evaluation and return all its episode records.

    ``workers`` > 1 plays the episodes in that many processes (each with
    ``concurrency`` in flight); this process alone writes the run directory.
    ``ray_address`` (``"local"`` for a Ray instance started here, or a cluster's
    address) plays them as ``workers`` Ray tasks instead, one per cluster CPU when
    ``workers`` is 1.

    An episode still running ``episode_timeout_s`` seconds after its reset
    (``None`` for no limit) is recorded as failed, like a model or grader
    error, and so re-run on resume.  ``on_episode`` gets each finished record as
    written (the dict the result holds: read it, do not change it).
    ``DIR/summary.json`` keeps the run's counts, timings and token usage
    (:mod:`intbench.run_summary`); ``prices`` (role -> US$ per million prompt /
    completion tokens) adds a cost estimate.
    """
    if episode_timeout_s is not None and not episode_timeout_s > 0:
        raise ValueError(f"episode_timeout_s must be positive, got {episode_timeout_s!r}")
    if not isinstance(workers, int) or workers < 1:
        raise ValueError(f"workers must be a positive int, got {workers!r}")
    run_dir = RunDir(out_dir)
    with run_dir.writer():  # one writer per run directory
        return _run_locked(
            config, run_dir, concurrency, progress, on_episode, episode_timeout_s, prices,
            workers, ray_address,
        )  # fmt: skip


def _run_locked(
    config: RunConfig,
    run_dir: RunDir,
    concurrency: int,
    progress: bool,
    on_episode: Callable[[dict], None] | None,
    episode_timeout_s: float | None,
    prices: dict[str, tuple[float, float]] | None,
    workers: int,
    ray_address: str | None,
) -> RunResult:
    setup_started = time.perf_counter()
    out = run_dir.path
    run_dir.check_config(config.to_dict())
    if config.replay_interventions:
        check_replay(config)  # before any model loads
    # Models, problems and the teacher first: a start that fails here leaves
    # no config.json behind, so the corrected command is not refused.
    first = _make_env(config)
    problems = first.problems
    grader_here = workers == 1 and ray_address is None and bool(problems)

    def warm() -> None:
        if grader_here:
            _size_grader(problems[0].domain, concurrency)
        importlib.import_module("intbench.metrics.summary")  # the end-of-run summary's
        warm_estimates(len(problems))  # the summary's groups span the run's problems

    teacher = _make_teacher(config, first, problems)
    run_dir.save_config(config.to_dict())
    run_dir.save_problems(problems)
    log = run_dir.log()
    retried = log.drop_failed()
    if retried:
        logger.warning("retrying %d failed episode(s)", retried)
    keys = [f"{i}:{r}" for r in range(config.repeats) for i in range(len(problems))]
    todo = [k for k in keys if not log.finished(k)]
    skipped = len(keys) - len(todo)
    student = first.executor.backends["student"]
    summary = RunSummary(
        config.to_dict(), _backends(config, student, teacher), prices, setup_started
    )
    summary.total, summary.skipped, summary.retried = len(keys), skipped, retried
    summary.settings = first.summary_settings()
    saved_at = [0.0]

    def save_summary(force: bool = False) -> None:
        if force or time.monotonic() - saved_at[0] >= SUMMARY_EVERY_S:
            run_dir.save_summary(summary.to_dict())
            saved_at[0] = time.monotonic()

    save_summary(force=True)
    summary.begin("episodes")
    started = time.perf_counter()
    bar = _progress_bar(len(keys), skipped, progress)

    played: dict[str, dict] = {}  # this run's records as dicts, made once for file and result

    def keep(record: Episode) -> None:
        data = played[record.metadata["run_key"]] = record.to_dict()
        log.append(record, data)
        summary.count(failed=bool(record.error), metadata=record.metadata)
        save_summary()
        if on_episode:
            on_episode(data)
        _tick(bar, student, teacher)

    try:
        with deferred_cache_writes(), log:
            if _in_workers(workers, ray_address, todo):
                first.close()
                _play_in_workers(
                    config,
                    todo,
                    workers,
                    concurrency,
                    episode_timeout_s,
                    keep,
                    summary,
                    ray_address,
                )
            else:
                _play(
                    config,
                    first,
                    problems,
                    teacher,
                    todo,
                    concurrency,
                    episode_timeout_s,
                    keep,
                    bar,
                    warm,
                )
        summary.finished = True
    finally:
        save_summary(force=True)  # also after an interruption: what was done until then
        if bar is not None:
            bar.close()
    records = [log.records[k] for k in keys if k in log.records]
    episodes = [played.get(r.metadata["run_key"]) or r.to_dict() for r in records]
    seconds = time.perf_counter() - started
    return RunResult(out, episodes, len(keys) - skipped, skipped, seconds, records)


def _backends(
    config: RunConfig, student: ChatBackend, teacher: Teacher
) -> dict[str, ChatBackend | None]:
    """The run's backends by role, for the summary's token usage (no judge: ``None``)."""
    return {
        "student": student,
        "teacher": teacher.backend,
        "judge": shared_backend(config.judge) if config.judge else None,
    }


def _in_workers(workers: int, ray_address: str | None, todo: list[str]) -> bool:
    """Whether the episodes are played in worker processes or Ray tasks (not for one)."""
    return (workers > 1 or ray_address is not None) and len(todo) > 1


def _size_grader(domain: str, concurrency: int) -> None:
    """Let the domain's grader pool (math) grow to one worker per episode in flight, at
    most one per core, unless ``INTBENCH_MATH_WORKERS`` fixes its size.  Workers start
    when the first answer needs one: the in-process fast path decides most numeric
    answers, and a worker's imports (sympy, about a CPU-second) would otherwise be paid
    by runs that never use it."""
    from intbench.verifiers import get_verifier

    module = sys.modules.get(getattr(get_verifier(domain), "__module__", ""))
    pool_of = getattr(module, "default_pool", None)
    if pool_of is None or "INTBENCH_MATH_WORKERS" in os.environ:
        return
    pool_of().grow(min(max(1, concurrency), os.cpu_count() or 1))


def _make_teacher(config: RunConfig, first, problems: list[Problem]) -> Teacher:
    from intbench.teachers import make_teacher

    if config.replay_interventions:
        return replay_teacher(config, problems)
    # A feedback env knows its teacher's sampling (its domain's token limit).
    return make_teacher(
        config.teacher,
        protocol_of(config.env_id),
        getattr(first, "condition", None),
        getattr(first, "teacher_sampling", None),
    )


def _play(
    config: RunConfig,
    first,
    problems: list[Problem],
    teacher: Teacher,
    todo: list[str],
    concurrency: int,
    episode_timeout_s: float | None,
    keep: Callable[[Episode], None],
    bar=None,
    warm: Callable[[], None] | None = None,
) -> None:
    """Play the episodes ``todo`` (run keys), up to ``concurrency`` at once, handing each
    finished record to ``keep``.  ``first`` is an env of the run; the others are made
    when their slot first gets an episode, so setup does not grow with concurrency.
    ``warm`` runs in a thread once the first requests are sent: work the run needs only
    later, done while they wait rather than before them; the play ends after it does."""
    todo = list(todo)
    envs = [first] + [None] * (max(1, concurrency) - 1)
    warming: list[threading.Thread] = []
    scheduler = Engine(
        first.executor,
        teacher,
        min(len(envs), max(1, len(todo))),
        on_batch=_batch_note(bar, warm, warming),
    )
    key_in_slot: dict[int, str] = {}

    def next_program(slot: int):
        if not todo:
            return None
        if envs[slot] is None:
            envs[slot] = _make_env(config, problems)
        key = key_in_slot[slot] = todo.pop(0)
        teacher.reset(slot, key)  # a replay looks the episode up by its key
        problem_index, repeat = (int(part) for part in key.split(":"))
        seed = episode_seed(config, key)
        options = {"problem_index": problem_index, "student_seed": config.seed + repeat}
        return episode_program(envs[slot], seed, options, itertools.count(seed), slot)

    def on_done(slot: int, episode: Episode) -> None:
        keep(_finish_record(episode, config, key_in_slot[slot], teacher, slot))

    def on_overdue(slot: int) -> None:
        assert episode_timeout_s is not None  # the scheduler only calls it under a limit
        keep(_timeout_record(problems, config, key_in_slot[slot], episode_timeout_s))

    try:
        scheduler.run(next_program, on_done, on_overdue, episode_timeout_s)
    finally:
        scheduler.close()
        for env in envs:
            if env is not None:
                env.close()
        for thread in warming:  # a short run: none of its work still runs when it returns
            thread.join()


# ------------------------------------------------------------------ workers
def _play_in_workers(
    config: RunConfig,
    todo: list[str],
    workers: int,
    concurrency: int,
    episode_timeout_s: float | None,
    keep: Callable[[Episode], None],
    summary: RunSummary,
    ray_address: str | None = None,
) -> None:
    """Shard ``todo`` over ``workers`` processes (or Ray tasks when ``ray_address`` is
    given); their records come back to ``keep`` here, so one process writes the run
    directory and nothing is duplicated."""
    shards = _RayShards(ray_address) if ray_address is not None else _ProcessShards()
    try:
        if isinstance(shards, _RayShards) and workers == 1:  # one shard per CPU of the cluster
            workers = shards.cpus()
        running = shards.start(config, todo, workers, concurrency, episode_timeout_s)
        summary.processes = running
        while running:
            item = shards.get(timeout=1.0)
            if item is None:
                shards.check()
                continue
            kind, payload = item
            if kind == "episode":
                keep(Episode.from_dict(payload))
            else:  # "usage": the shard is done
                summary.add_usage(payload)
                running -= 1
    finally:
        shards.close()


def _shard(todo: list[str], workers: int) -> list[list[str]]:
    return [shard for shard in (todo[i::workers] for i in range(workers)) if shard]


class _ProcessShards:
    """Shards in spawned processes on this machine; records come back through a queue."""

    def start(self, config, todo, workers, concurrency, timeout_s) -> int:
        import multiprocessing

        context = multiprocessing.get_context("spawn")  # no forked model or thread state
        self.results = context.Queue()
        self.processes = [
            context.Process(
                target=_worker,
                args=(config.to_dict(), shard, concurrency, timeout_s, self.results),
                daemon=True,
                name=f"intbench-worker-{n}",
            )
            for n, shard in enumerate(_shard(todo, workers))
        ]
        for process in self.processes:
            process.start()
        return len(self.processes)

    def get(self, timeout: float):
        import queue

        try:
            return self.results.get(timeout=timeout)
        except queue.Empty:
            return None

    def check(self) -> None:
        dead = [p for p in self.processes if p.exitcode not in (None, 0)]
        if dead:
            raise RuntimeError(
                f"worker {dead[0].name} exited with code {dead[0].exitcode}; finished "
                "episodes are saved, re-run the command to resume"
            )

    def close(self) -> None:
        for process in getattr(self, "processes", []):
            if process.is_alive():
                process.terminate()
            process.join(5)


_RAY_CONNECTING = threading.Lock()


def connect_ray(address: str):
    """Connect this process to Ray (``"local"``: a local instance), once; the ``ray``
    module.  Call it from the main thread before starting threads that run with
    ``ray_address`` (as ``intbench matrix`` does), so Ray can set its signal handlers."""
    require("ray", "ray", "--ray")
    import ray

    with _RAY_CONNECTING:
        if not ray.is_initialized():
            _check_reachable(address)
            ray.init(
                address=None if address == "local" else address,
                include_dashboard=False,
                log_to_driver=False,
                configure_logging=False,
            )
    return ray


def _check_reachable(address: str) -> None:
    """Fail fast on a ``host:port`` (or ``ray://host:port``) nobody listens on: Ray
    itself would retry for minutes."""
    import socket

    host, _, port = address.removeprefix("ray://").rpartition(":")
    if not host or not port.isdigit():
        return  # "local", "auto": Ray finds the instance itself
    try:
        socket.create_connection((host, int(port)), timeout=5).close()
    except OSError as exc:
        raise RuntimeError(
            f"cannot reach a Ray cluster at {address} ({exc.strerror or exc}); give --ray the "
            "head's address (host:6379, ray://host:10001) or 'auto' for one started with "
            "`ray start` on this machine, or no address for a local instance"
        ) from None


class _RayShards:
    """Shards as Ray tasks, on the cluster at ``address`` or on a local Ray instance
    started here (``address="local"``); records come back through a Ray queue actor.
    Every node needs IntBench installed; model servers are reached by URL as usual.
    Runs in one process share one connection (:func:`connect_ray`), which Ray
    closes at exit: closing it after a run while another starts makes Ray end
    the process."""

    def __init__(self, address: str):
        self.ray = connect_ray(address)

    def cpus(self) -> int:
        return max(1, int(self.ray.cluster_resources().get("CPU", 1)))

    def start(self, config, todo, workers, concurrency, timeout_s) -> int:
        from ray.util.queue import Queue

        self.results = Queue()
        play = self.ray.remote(num_cpus=1, max_retries=0)(_play_shard)
        self.tasks = [
            play.remote(config.to_dict(), shard, concurrency, timeout_s, self.results)
            for shard in _shard(todo, workers)
        ]
        return len(self.tasks)

    def get(self, timeout: float):
        from ray.util.queue import Empty

        try:
            return self.results.get(timeout=timeout)
        except Empty:
            return None

    def check(self) -> None:
        done, _ = self.ray.wait(self.tasks, num_returns=len(self.tasks), timeout=0)
        for task in done:
            try:
                self.ray.get(task)
            except Exception as exc:  # a task's error, or a lost node
                lines = str(exc).strip().splitlines()
                reason = lines[-1] if lines else type(exc).__name__  # the error, not the trace
                raise RuntimeError(
                    f"a Ray task failed ({reason}); finished episodes are saved, "
                    "re-run the command to resume"
                ) from None

    def close(self) -> None:
        tasks = getattr(self, "tasks", [])
        if tasks:  # finished shards return at once; the others (after an error) are stopped
            _, running = self.ray.wait(tasks, num_returns=len(tasks), timeout=5.0)
            for task in running:
                self.ray.cancel(task, force=True)
        if hasattr(self, "results"):
            self.results.shutdown(force=True)


def _worker(config_dict: dict, keys: list[str], concurrency: int, timeout_s, results) -> None:
    """One worker process: ends with its parent, plays its shard."""
    _die_with_parent()
    _play_shard(config_dict, keys, concurrency, timeout_s, results)


def _play_shard(config_dict: dict, keys: list[str], concurrency: int, timeout_s, results) -> None:
    """Play ``keys`` and send each record to ``results``, then the backends' usage."""
    config = RunConfig(**config_dict)
    first = _make_env(config)
    teacher = _make_teacher(config, first, first.problems)
    backends = {
        "student": first.executor.backends["student"],
        "teacher": teacher.backend,
        "judge": shared_backend(config.judge) if config.judge else None,
    }
    before = RunSummary(config_dict, backends)

    def keep(record: Episode) -> None:
        results.put(("episode", record.to_dict()))

    with deferred_cache_writes():  # on disk before the shard reports done
        _play(config, first, first.problems, teacher, keys, concurrency, timeout_s, keep)
    results.put(("usage", before.usage()))


def _die_with_parent() -> None:
    """Ask Linux to end this process when its parent dies (a killed run leaves no workers)."""
    try:
        import ctypes
        import signal

        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


def _make_env(config: RunConfig, problems: list[Problem] | None = None):
    import intbench.envs  # noqa: F401  (registers the ids)

    kwargs = dict(config.env_options)
    if problems is not None:
        kwargs["problems"] = problems
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


def _finish_record(
    episode: Episode, config: RunConfig, key: str, teacher: Teacher, slot: int
) -> Episode:
    # An env that knows who wrote the feedback (self-feedback: the student's model) says so.
    episode.teacher = episode.teacher or config.teacher
    problem_index, repeat = key.split(":")
    episode.metadata.update(run_key=key, problem_index=int(problem_index), repeat=int(repeat))
    teacher.finish(slot, episode)
    return episode


def _timeout_record(problems: list, config: RunConfig, key: str, limit_s: float) -> Episode:
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
    return episode


def _progress_bar(total: int, done: int, enabled: bool):
    if not enabled:
        return None
    from tqdm.auto import tqdm

    # disable=False: shown even where TQDM_DISABLE hides the libraries' bars (the CLI's default).
    return tqdm(total=total, initial=done, unit="episode", dynamic_ncols=True, disable=False)


def _batch_note(bar, warm: Callable[[], None] | None, started: list[threading.Thread]):
    """Says on the progress bar what the model is generating, so a long first batch shows;
    starts ``warm`` in a thread at the first batch (added to ``started``)."""
    if bar is None and warm is None:
        return None
    pending = [warm] if warm is not None else []

    def note(role: str, n: int) -> None:
        if pending:
            thread = threading.Thread(target=pending.pop(), name="intbench-warm", daemon=True)
            started.append(thread)
            thread.start()
        if bar is not None:
            bar.set_description_str(f"{role}: generating {n} in one batch", refresh=True)

    return note


def _tick(bar, student, teacher: Teacher) -> None:
    if bar is None:
        return
    bar.update(1)
    elapsed = bar.format_dict.get("elapsed") or 0.0
    generated = student.usage.completion_tokens
    backend = teacher.backend
    if backend is not None and backend is not student:
        generated += backend.usage.completion_tokens
    if elapsed > 0:
        bar.set_postfix(tok_s=f"{generated / elapsed:.1f}")


# ------------------------------------------------------------------ replays
class ReplayError(ValueError):
    """A run cannot replay the interventions of the run it names; the message says why."""


REPLAY_FREE_OPTIONS = ("post", "reward")
"""Env options a replaying run may set apart from the run it replays: what the student
does after the intervention and how that is scored.  Every other option, and the
env, student, problems and seed, must be the same, so the replay sees the same
baseline traces cut at the same places."""

_SAME_RUN_FIELDS = ("env_id", "student", "source", "split", "n", "seed")


def _options_with_defaults(env_id: str, options: dict) -> dict:
    """``options`` over the env's defaults, as JSON values (so saved and given ones compare)."""
    from intbench.envs.option_classes import env_options_class
    from intbench.options import defaults

    values = {**defaults(env_options_class(env_id)), **gym.spec(env_id).kwargs, **options}
    return json.loads(json.dumps(values, default=str))


def _replay_keys(source: RunDir, repeats: int) -> list[str]:
    if not source.problems_path.is_file():
        raise ReplayError(f"{source.path} has no problems yet; run it before replaying it")
    count = len(source.problems())
    return [f"{i}:{r}" for r in range(repeats) for i in range(count)]


def _usable(episode: Episode | None) -> bool:
    # A record that failed after its intervention still says where and what the teacher said.
    return episode is not None and (not episode.error or episode.intervention is not None)


def replayed_config(path: str | os.PathLike) -> dict:
    """The saved configuration of the run at ``path``.

    Raises:
        ReplayError: ``path`` holds no readable ``config.json``.
    """
    source = RunDir(path)
    if not source.config_path.is_file():
        raise ReplayError(f"{source.path} is not a run directory (no config.json)")
    saved = source.config()
    if not isinstance(saved, dict) or "env_id" not in saved:
        raise ReplayError(f"{source.config_path} is unreadable")
    return saved


def _replayed_dir(config: RunConfig) -> RunDir:
    if not config.replay_interventions:
        raise ReplayError("this run names no run to replay (replay_interventions)")
    return RunDir(config.replay_interventions)


def check_replay(config: RunConfig) -> dict:
    """Check that ``config.replay_interventions`` names a finished Standard monitor run over
    the same env, student and problems; return its saved configuration.  Reads files only.

    Raises:
        ReplayError: one line saying what does not fit.
    """
    source = _replayed_dir(config)
    where = str(source.path)
    saved = replayed_config(source.path)
    _check_replay_protocols(config, saved, where)
    ours, theirs = _standard_options(config, saved, where)
    _check_same_run(config, saved, ours, theirs, where)
    _check_replayed_episodes(source, config.repeats, where)
    return saved


def _check_replay_protocols(config: RunConfig, saved: dict, where: str) -> None:
    """Both runs' envs are of a protocol with interventions."""
    protocols: tuple[str | None, str | None]
    try:
        protocols = protocol_of(config.env_id), protocol_of(saved["env_id"])
    except (KeyError, ValueError):
        protocols = None, None
    timed = " and ".join(p.name for p in PROTOCOLS.values() if p.interventions)
    if not has(protocols[0] or "", "interventions"):
        raise ReplayError(f"only {timed} runs replay interventions, not {config.env_id}")
    if not has(protocols[1] or "", "interventions"):
        raise ReplayError(f"{where} is not a {timed} run ({saved['env_id']})")


def _standard_options(config: RunConfig, saved: dict, where: str) -> tuple[dict, dict]:
    """This run's and the replayed run's env options with defaults filled in; both
    runs must be of the standard condition."""
    ours = _options_with_defaults(config.env_id, config.env_options)
    theirs = _options_with_defaults(saved["env_id"], saved.get("env_options") or {})
    if theirs["condition"] != "standard":
        raise ReplayError(f"{where} is a {theirs['condition']} run; replay a Standard run")
    if ours["condition"] != "standard":
        raise ReplayError("replayed interventions need the standard condition (--condition)")
    return ours, theirs


def _check_same_run(config: RunConfig, saved: dict, ours: dict, theirs: dict, where: str) -> None:
    """The same env, student, problems and teacher, the same env options but
    :data:`REPLAY_FREE_OPTIONS`, and no more repeats than the replayed run made."""
    given = config.to_dict()
    for name in _SAME_RUN_FIELDS:
        if given[name] != saved.get(name):
            raise ReplayError(
                f"{where} ran {name}={saved.get(name)!r}, this run {name}={given[name]!r}; "
                "a replay needs the same env, student and problems"
            )
    for name in sorted(set(ours) | set(theirs)):
        if name not in REPLAY_FREE_OPTIONS and ours.get(name) != theirs.get(name):
            raise ReplayError(
                f"{where} ran with {name}={theirs.get(name)!r}, this run with "
                f"{name}={ours.get(name)!r}; only {', '.join(REPLAY_FREE_OPTIONS)} may differ"
            )
    if config.teacher != saved.get("teacher"):
        raise ReplayError(
            f"--teacher {config.teacher!r} is not the teacher of {where} "
            f"({saved.get('teacher')!r}); leave --teacher out"
        )
    if config.repeats > saved.get("repeats", 1):
        raise ReplayError(
            f"{where} has {saved.get('repeats', 1)} repeat(s), this run asks for {config.repeats}"
        )


def _check_replayed_episodes(source: RunDir, repeats: int, where: str) -> None:
    """The replayed run finished every episode this run replays."""
    keys = _replay_keys(source, repeats)
    episodes = {canonical_run_key(e.metadata.get("run_key")): e for e in source.episodes()}
    missing = [key for key in keys if not _usable(episodes.get(key))]
    if missing:
        raise ReplayError(
            f"{where} has no finished episode for {len(missing)} of the {len(keys)} this run "
            f"replays (first: {missing[0]}); resume that run first"
        )


def replay_teacher(config: RunConfig, problems: list[Problem]) -> Teacher:
    """The teacher replaying ``config.replay_interventions`` on ``problems`` (see
    :class:`~intbench.teachers.ReplayTeacher`)."""
    from intbench.teachers import ReplayedIntervention, ReplayTeacher

    source = _replayed_dir(config)
    if [p.id for p in source.problems()] != [p.id for p in problems]:
        raise ReplayError(f"{source.path} ran other problems than this run draws")
    plan = {}
    for episode in source.episodes():
        key = canonical_run_key(episode.metadata.get("run_key"))
        intervention = episode.intervention
        plan[key] = ReplayedIntervention(
            position=intervention.position if intervention else None,
            message=(intervention.message or "") if intervention else "",
            baseline=episode.baseline.text if episode.baseline is not None else None,
            episode_id=episode.episode_id,
        )
    return ReplayTeacher(plan, str(source.path))


def run_problems(run_dir: str | os.PathLike) -> list[Problem]:
    """The problems of a run directory (``intbench eval``, ``intbench serve``); see
    :meth:`RunDir.problems`."""
    return RunDir(run_dir).problems()


def load_run(out_dir: str | os.PathLike) -> list[dict]:
    """The episode records of a run directory (the latest record per episode), as dicts.

    :meth:`RunDir.episodes` gives them as typed :class:`~intbench.records.Episode`.
    """
    return [episode.to_dict() for episode in RunDir(out_dir).episodes()]
