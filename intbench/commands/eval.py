"""``intbench eval`` and ``intbench matrix``: run teachers against students."""

from __future__ import annotations

import argparse
import dataclasses
import sys
import threading
from pathlib import Path
from typing import TYPE_CHECKING

from intbench.commands.checks import UsageError, check_run, replayed_teacher
from intbench.commands.env_flags import add_env_flags, env_options_from
from intbench.extras import MissingExtra, require
from intbench.options import add_flags, flag_values, option, option_help
from intbench.protocols import PROTOCOLS, protocol_of_env_id
from intbench.run_summary import PriceError, parse_prices
from intbench.runner import (
    EPISODE_TIMEOUT_S,
    ConfigMismatchError,
    ReplayError,
    RunConfig,
    RunLockedError,
    connect_ray,
    run_eval,
)
from intbench.tracking import TRACKERS, EpisodeTracking, TrackerError, check_tracker, make_tracker

if TYPE_CHECKING:
    from intbench.metrics import Summary
    from intbench.records import Episode


@dataclasses.dataclass(frozen=True)
class ExecutionOptions:
    """How ``eval`` and ``matrix`` play and report a run; none of it changes the
    episodes, so none of it is part of the run's config (``RunConfig``)."""

    concurrency: int = option(8, help="episodes in flight")
    workers: int = option(
        1,
        help="processes playing episodes, each with --concurrency in flight; this one "
        "writes the run directory (with --ray, one per CPU of the cluster)",
    )
    ray: str | None = option(
        None,
        bare="local",
        help="play the --workers shards as Ray tasks: on a local Ray instance (--ray "
        "alone), or on the cluster at RAY (pip install 'intbench[ray]'; IntBench on every "
        "node)",
    )
    episode_timeout: float = option(
        EPISODE_TIMEOUT_S,
        help="wall-clock limit per episode in seconds; a longer one is recorded as failed "
        "and re-run on resume",
    )
    max_failure_rate: float | None = option(
        None,
        help="exit with code 1 when more than this share of the episodes failed (model or "
        "grader errors), e.g. 0.1; none: only when every episode failed",
    )
    max_tokens: int | None = option(None, help="student generation budget per call")
    no_progress: bool = option(False, help="no progress bar")
    price: list[str] = option(
        default_factory=list,
        help="US$ per million prompt/completion tokens of a role (student, teacher, "
        "judge) as ROLE=IN/OUT, for the cost estimate in DIR/summary.json, e.g. "
        "--price teacher=2.5/10",
    )
    report_to: str = option("none", help=f"experiment tracker: {', '.join(TRACKERS)} (TRL's names)")

    def __post_init__(self) -> None:
        if self.workers < 1:
            raise UsageError(f"--workers must be at least 1, got {self.workers}")
        rate = self.max_failure_rate
        if rate is not None and not 0.0 <= rate <= 1.0:
            raise UsageError(f"--max-failure-rate must be between 0 and 1, got {rate}")


# The run's flags (-n, --seed, --source, ...) come from RunConfig's flagged fields,
# how it is played (--concurrency, --workers, ...) from ExecutionOptions'.
RUN_FLAGS = {"run": RunConfig}
RUN_FIELDS = {f.name: f for f in dataclasses.fields(RunConfig)}
EXECUTION_FLAGS = {"execution": ExecutionOptions}


def execution_options(args) -> ExecutionOptions:
    """The execution flags given, checked (exit 2 on a bad value)."""
    return ExecutionOptions(**flag_values(args, EXECUTION_FLAGS))


def add_parser(subparsers) -> None:
    run = subparsers.add_parser(
        "eval",
        help="run a teacher against a student on an env; resumable",
        description="Run N problems x R repeats of an env with one teacher and one student. "
        "Re-running the same command resumes the run in --out.",
    )
    _common(run)
    run.add_argument(
        "--teacher",
        default=None,
        help="policy (never, always, at:0.5, random:0.1, oracle) or model spec; required "
        "unless --replay-interventions reuses a run's teacher",
    )
    run.add_argument(
        "--replay-interventions",
        type=Path,
        default=None,
        metavar="RUN_DIR",
        help="monitor: replay, per episode, the intervention (position and message) of the "
        "Standard run in RUN_DIR instead of asking a teacher, e.g. with --post stop for "
        "Stop-and-Answer on the same messages; episodes it did not intervene in stay "
        "without intervention",
    )
    run.add_argument(
        "--student", default="smollm2", help="student model spec (default: the embedded smollm2)"
    )
    run.add_argument(
        "--out", required=True, type=Path, help="run directory (episodes, config, problems)"
    )
    run.set_defaults(func=_eval, exit_without_teardown=True)

    grid = subparsers.add_parser(
        "matrix",
        help="the dense student x teacher grid of the feedback protocol, plus self-refinement",
        description="Runs every (student, teacher) pair of a feedback env in --out/<student>__<teacher>, "
        "with the self_refine control for each student, then prints the feedback table, the "
        "matrices and their analyses.",
    )
    _common(grid)
    grid.add_argument("--students", required=True, help="comma-separated model specs")
    grid.add_argument("--teachers", required=True, help="comma-separated model specs")
    grid.add_argument("--out", required=True, type=Path)
    grid.add_argument(
        "--pairs",
        type=int,
        default=4,
        help="(student, teacher) runs in flight at once, each with --concurrency episodes; "
        "they share each model backend and its bound on requests in flight (default 4)",
    )
    grid.set_defaults(func=_matrix, exit_without_teardown=True)


def _common(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--env", required=True, help=option_help(RUN_FIELDS["env_id"]))
    add_flags(parser, RUN_FLAGS)
    add_flags(parser, EXECUTION_FLAGS)
    add_env_flags(parser)


def env_options(args) -> dict:
    """The env options of ``eval`` and ``matrix``: flags, ``--env-option`` and ``--max-tokens``."""
    try:
        return env_options_from(args, execution_options(args).max_tokens)
    except ValueError as exc:
        raise UsageError(str(exc)) from None


def _config(
    args, teacher: str, student: str, options: dict, replay: str | None = None
) -> RunConfig:
    return RunConfig(
        env_id=args.env,
        teacher=teacher,
        student=student,
        env_options=options,
        replay_interventions=replay,
        **flag_values(args, RUN_FLAGS),
    )


def _tracking_options(execution: ExecutionOptions) -> dict:
    """``--price``, ``--report-to`` and ``--ray``, checked before any work (exit 2)."""
    try:
        if execution.ray is not None:
            require("ray", "ray", "--ray")
        check_tracker(execution.report_to)
        return {"prices": parse_prices(execution.price)}
    except (MissingExtra, PriceError, TrackerError) as exc:
        raise UsageError(str(exc)) from None


def _run(
    config: RunConfig, out: Path, execution: ExecutionOptions, progress: bool = True
) -> tuple[list[Episode], Summary] | None:
    """The run's episode records and their summary (``None`` when it could not start)."""
    check_run(config, execution.concurrency)
    options = _tracking_options(execution)
    tracker = None
    try:
        tracker = make_tracker(execution.report_to, out)
        tracker.log_config(config.to_dict())
        result = run_eval(
            config,
            out,
            concurrency=execution.concurrency,
            progress=progress and not execution.no_progress,
            episode_timeout_s=execution.episode_timeout,
            on_episode=EpisodeTracking(tracker),
            workers=execution.workers,
            ray_address=execution.ray,
            **options,
        )
        from intbench.metrics import summarize  # imported while the first requests wait

        summary = summarize(result.records)
        tracker.log_tables(summary.tables)
    except (ConfigMismatchError, RunLockedError, ReplayError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return None
    finally:
        if tracker is not None:
            tracker.finish()
    print(
        f"{out}: {result.ran} episode(s) run, {result.skipped} already done, {result.seconds:.1f} s"
    )
    return result.records, summary


def _eval(args) -> int:
    teacher, replay = args.teacher, None
    if args.replay_interventions is not None:
        # Saved resolved, so a resume from another directory names the same run.
        replay = str(args.replay_interventions.resolve())
        teacher = teacher or replayed_teacher(replay)
    if not teacher:
        raise UsageError("--teacher is required (or --replay-interventions RUN_DIR)")
    execution = execution_options(args)
    _tracking_options(execution)
    config = _config(args, teacher, args.student, env_options(args), replay)
    run = _run(config, args.out, execution)
    if run is None:
        return 2
    episodes, summary = run
    print(summary.to_text())
    return failure_status(episodes, execution.max_failure_rate)


def failure_status(episodes: list[Episode], max_rate: float | None) -> int:
    """Exit status of a finished run: 1 when too many of its episodes failed.

    Failed episodes (a model or grader error) are left out of the metrics, so a
    run whose every episode failed measured nothing; a line on stderr says how
    many failed, with the first error, whenever any did."""
    failed = [e for e in episodes if e.error]
    if not failed:
        return 0
    share = len(failed) / len(episodes)
    first = str(failed[0].error).strip().splitlines()[0][:200]
    print(
        f"warning: {len(failed)} of {len(episodes)} episode(s) failed and are left out of the "
        f"metrics (first error: {first}); re-run the same command to retry them",
        file=sys.stderr,
    )
    too_many = len(failed) == len(episodes) if max_rate is None else share > max_rate
    if too_many:
        limit = "all of them" if max_rate is None else f"more than --max-failure-rate {max_rate:g}"
        print(f"error: {share:.0%} of the episodes failed ({limit}); exit code 1", file=sys.stderr)
        return 1
    return 0


def _runs_matrices(env: str) -> bool:
    """Whether ``env`` is an id of a protocol that matrices run; if not, say so."""
    try:
        if protocol_of_env_id(env).matrix:
            return True
    except ValueError:
        pass
    ids = " or ".join(f"IntBench-<Domain>{p.id_suffix}" for p in PROTOCOLS.values() if p.matrix)
    names = " or ".join(p.title for p in PROTOCOLS.values() if p.matrix)
    print(f"error: matrix runs {names}; use an {ids} id", file=sys.stderr)
    return False


def _matrix(args) -> int:
    if not _runs_matrices(args.env):
        return 2
    execution = execution_options(args)
    _tracking_options(execution)
    if args.pairs < 1:
        raise UsageError(f"--pairs must be at least 1, got {args.pairs}")
    students = [s for s in args.students.split(",") if s]
    teachers = [t for t in args.teachers.split(",") if t]
    base = env_options(args)
    jobs: dict[tuple[str, str], tuple[RunConfig, Path]] = {}
    for student in students:
        jobs[(student, "self_refine")] = (
            _config(args, "never", student, {**base, "mode": "self_refine"}),
            args.out / f"{_slug(student)}__self_refine",
        )
        for teacher in teachers:
            # The diagonal (teacher == student) is self-feedback by the same model.
            jobs[(student, teacher)] = (
                _config(args, teacher, student, {**base, "mode": "teacher"}),
                args.out / f"{_slug(student)}__{_slug(teacher)}",
            )
    for config, _ in jobs.values():  # every pair's input, before any pair loads a model
        check_run(config, execution.concurrency)
    if execution.ray is not None:
        connect_ray(execution.ray)  # here, in the main thread, before the pairs' threads
    runs = _run_pairs(jobs, execution, args.pairs)
    if any(v is None for v in runs.values()):
        return 2
    episodes = [e for run_episodes, _ in runs.values() for e in run_episodes]
    from intbench.metrics import summarize

    print(summarize(episodes).to_text())
    return failure_status(episodes, execution.max_failure_rate)


def _run_pairs(jobs: dict, execution: ExecutionOptions, pairs: int) -> dict:
    """Each job's run, ``pairs`` at a time.  The threads are daemons: Ctrl-C ends the
    process at once, and every run resumes from what it has written."""
    # wandb and trackio keep one current run per process, so their runs go one by one.
    pairs = 1 if execution.report_to in ("wandb", "trackio") else pairs
    pending = list(jobs.items())
    runs: dict = {}
    errors: list[BaseException] = []
    take = threading.Lock()

    def play() -> None:
        while not errors:
            with take:
                if not pending:
                    return
                key, (config, out) = pending.pop(0)
            try:
                runs[key] = _run(config, out, execution, progress=pairs == 1)
            except BaseException as exc:  # re-raised in the main thread, as in a single run
                errors.append(exc)

    threads = [threading.Thread(target=play, daemon=True) for _ in range(min(pairs, len(jobs)))]
    for thread in threads:
        thread.start()
    for thread in threads:
        while thread.is_alive():
            thread.join(0.5)  # a timed join lets KeyboardInterrupt through
    if errors:
        raise errors[0]
    return {key: runs[key] for key in jobs}


def _slug(spec: str) -> str:
    return "".join(c if c.isalnum() or c in "-." else "_" for c in spec)[:80]
