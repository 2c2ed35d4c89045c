"""Run directories: the files a run writes, and the one way they are read and written.

``DIR/episodes.jsonl``
    one :class:`~intbench.records.Episode` per line.  Each line reaches the
    operating system in one ``write`` as soon as its episode ends, so killing
    the process loses nothing finished; ``fsync`` is grouped (every
    ``SYNC_EVERY`` episodes or ``SYNC_INTERVAL_S`` seconds, and on close), so a
    machine crash can lose at most the last group, which a resume re-runs.  A
    line cut short (a kill mid-write, a full disk) is dropped before the next
    append; unreadable lines are skipped (and counted) by every reader.
``DIR/config.json``
    the run's configuration; a run with another one into ``DIR`` is refused.
``DIR/problems.jsonl``
    the run's problems, written once, so analyses never rebuild them.
``DIR/summary.json``
    what the run did and spent (:mod:`intbench.run_summary`), replaced as it
    goes and complete at the end.

``DIR/.lock``
    held (``flock``) by the one process writing the run, with its pid inside,
    and removed when it stops (on every exit path Python sees: a return, an
    exception, Ctrl-C).  A second writer fails at once, naming that pid.  The
    kernel drops the lock when its holder dies, so even the file a killed
    writer (``SIGKILL``) leaves behind does not block a resume.

config, problems and summary are written whole and renamed into place, so no
reader ever sees half of one.  A run that stops before recording any episode
in a directory that held no run leaves the directory as it found it (a new
directory is removed): the corrected command then starts afresh instead of
being refused for a different configuration.  A run that recorded episodes
(failed ones included) stays resumable.

Every write to these files goes through :class:`RunDir` and :class:`EpisodeLog`;
a full disk or an unwritable directory raises :class:`RunWriteError`, one line
that names the fix.
"""

from __future__ import annotations

import atexit
import contextlib
import errno
import fcntl
import functools
import json
import logging
import os
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from intbench.cache import flush_cache_writes
from intbench.records import Episode, Problem

logger = logging.getLogger(__name__)

EPISODES_FILE = "episodes.jsonl"
CONFIG_FILE = "config.json"
PROBLEMS_FILE = "problems.jsonl"
SUMMARY_FILE = "summary.json"
LOCK_FILE = ".lock"
# what a run writes: removed again when it stops without recording an episode in a new run directory
RUN_FILES = (CONFIG_FILE, PROBLEMS_FILE, SUMMARY_FILE, EPISODES_FILE)

REQUIRED_FIELDS = ("protocol", "problem_id", "domain", "student")
# nested fields with the JSON types a record may hold there
SHAPES: dict[str, type | tuple[type, ...]] = {
    "config": dict,
    "baseline": (dict, type(None)),
    "steps": list,
    "intervention": (dict, type(None)),
    "attempts": list,
    "feedback": list,
}
MAX_REPORTED_LINE_NUMBERS = 5
# group commits: one fsync per this many appended episodes, or per this many seconds
SYNC_EVERY = 32
SYNC_INTERVAL_S = 1.0


class ConfigMismatchError(RuntimeError):
    """The output directory holds a run with another configuration."""


class RunLockedError(RuntimeError):
    """Another live process is writing this run directory."""


class RunWriteError(OSError):
    """A run file could not be written (full disk, read-only or forbidden directory).

    What was written before stays valid: episodes are appended whole and
    fsynced, and a cut-short last line is dropped on resume.
    """

    def __str__(self) -> str:
        return self.strerror or super().__str__()


_FULL = {errno.ENOSPC, errno.EDQUOT, errno.EFBIG}
_NOT_WRITABLE = {errno.EROFS, errno.EACCES, errno.EPERM}


@contextlib.contextmanager
def _writing(path: Path) -> Iterator[None]:
    """Turn an OS error while writing ``path`` into a :class:`RunWriteError` that names the fix."""
    try:
        yield
    except RunWriteError:
        raise
    except OSError as exc:
        reason = exc.strerror or str(exc)
        if exc.errno in _FULL:
            fix = (
                "free some space (or use --out on another disk) and re-run the same "
                "command: finished episodes are kept and the run resumes"
            )
        elif exc.errno in _NOT_WRITABLE:
            fix = "choose a writable --out directory"
        else:
            fix = "check the --out directory"
        raise RunWriteError(exc.errno, f"cannot write {path}: {reason}; {fix}") from exc


def record_problem(record: object) -> str | None:
    """Why a parsed line is not a usable episode record, or ``None`` if it is."""
    if not isinstance(record, dict):
        return f"not a JSON object but {type(record).__name__}"
    missing = [k for k in REQUIRED_FIELDS if not record.get(k)]
    if missing:
        return f"missing {', '.join(missing)}"
    for name, kinds in SHAPES.items():
        if name in record and not isinstance(record[name], kinds):
            return f"{name} has type {type(record[name]).__name__}"
    try:
        Episode.from_dict(record)  # unknown fields, newer schema versions, nested parts
    except (TypeError, ValueError, AttributeError) as exc:
        return str(exc)
    return None


@dataclass
class EpisodeFile:
    """What reading one ``episodes.jsonl`` gave: its episodes in file order and the lines skipped."""

    path: Path
    episodes: list[Episode] = field(default_factory=list)
    bad_lines: list[int] = field(default_factory=list)
    first_reason: str = ""

    @property
    def skipped(self) -> int:
        return len(self.bad_lines)


def read_episode_file(path: Path) -> EpisodeFile:
    """Parse every line of ``path``; unusable lines are skipped, counted and logged once."""
    result = EpisodeFile(path)
    with path.open(encoding="utf-8", errors="replace") as handle:
        for number, line in enumerate(handle, 1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
                reason = record_problem(record)
            except json.JSONDecodeError as exc:
                reason = f"invalid JSON ({exc.msg})"
            if reason:
                result.bad_lines.append(number)
                result.first_reason = result.first_reason or reason
                continue
            result.episodes.append(Episode.from_dict(record))
    if result.bad_lines:
        shown = ", ".join(map(str, result.bad_lines[:MAX_REPORTED_LINE_NUMBERS]))
        more = "" if result.skipped <= MAX_REPORTED_LINE_NUMBERS else ", ..."
        logger.warning(
            "%s: skipped %d malformed line(s) (line %s%s; first: %s)",
            path,
            result.skipped,
            shown,
            more,
            result.first_reason,
        )
    return result


def canonical_run_key(value: object) -> object:
    """A hashable key equal for equal JSON values: a string as it is, any other value as
    ``("json", canonical JSON with sorted keys)``.

    Records are read back from JSON, so a key may be a list or an object (unhashable)
    or an object whose keys were written in another order.
    """
    if isinstance(value, str):
        return value
    return ("json", json.dumps(value, sort_keys=True, ensure_ascii=False, default=str))


def latest_by_run_key(episodes: Iterable[Episode]) -> dict[object, Episode]:
    """The latest record of each ``metadata.run_key`` (see :func:`canonical_run_key`), at
    the place of its first record.

    A record without a run key (one written by hand) is kept on its own.
    """
    latest: dict[object, Episode] = {}
    for index, episode in enumerate(episodes):
        key = episode.metadata.get("run_key", _NO_KEY)
        latest[("line", index) if key is _NO_KEY else canonical_run_key(key)] = episode
    return latest


_NO_KEY = object()

# lock descriptor -> its writer's release, while held
_HELD: dict[int, Callable[[], None]] = {}


@atexit.register
def _release_held() -> None:
    """Writers still held when the interpreter exits (a run in a daemon thread, as a
    matrix pair is when Ctrl-C ends the process) are released as a ``with`` exit would."""
    for release in list(_HELD.values()):
        release()


def _fsynced_write(handle, text: str) -> None:
    handle.write(text)
    handle.flush()
    os.fsync(handle.fileno())


def _replace_whole(path: Path, text: str, sync: bool = False) -> None:
    """Write ``text`` to ``path`` through a temporary file renamed over it: a reader sees
    the old file or the new one, and a failed write leaves no temporary file behind."""
    tmp = path.with_name(path.name + ".tmp")
    with _writing(path):
        try:
            with open(tmp, "w", encoding="utf-8") as handle:
                if sync:
                    _fsynced_write(handle, text)
                else:
                    handle.write(text)
            os.replace(tmp, path)
        except BaseException:
            tmp.unlink(missing_ok=True)
            raise


def _has_record(path: Path) -> bool:
    """Whether ``path`` holds at least one complete line (without reading all of it)."""
    try:
        with open(path, "rb") as handle:
            while chunk := handle.read(1 << 16):
                if b"\n" in chunk:
                    return True
    except FileNotFoundError:
        pass
    return False


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


class EpisodeLog:
    """``episodes.jsonl`` opened for appending: the latest record per ``metadata.run_key``.

    Use it as a context manager (or call :meth:`close`) so the last group is
    fsynced; without that, finished episodes still survive the process.
    """

    def __init__(
        self, path: Path, sync_every: int = SYNC_EVERY, sync_interval_s: float = SYNC_INTERVAL_S
    ):
        self.path = path
        self.sync_every = sync_every
        self.sync_interval_s = sync_interval_s
        self.records: dict[object, Episode] = {}
        self._fd: int | None = None
        self._unsynced = 0
        self._last_sync = time.monotonic()
        if path.exists():
            self._repair_tail()
            self.records = latest_by_run_key(read_episode_file(path).episodes)

    def __enter__(self) -> EpisodeLog:
        return self

    def __exit__(self, *exc_info) -> None:
        self.close()

    def _repair_tail(self) -> None:
        data = self.path.read_bytes()
        if data and not data.endswith(b"\n"):
            # A write cut short by a kill or a full disk: drop the partial line
            # before appending after it.
            keep = data.rfind(b"\n") + 1
            logger.warning("dropping a partial last line in %s", self.path)
            with _writing(self.path), open(self.path, "r+b") as handle:
                handle.truncate(keep)

    def finished(self, key: object) -> bool:
        record = self.records.get(canonical_run_key(key))
        return record is not None and not record.error

    def drop_failed(self) -> int:
        """Rewrite the file without the failed episodes about to be retried."""
        failed = [k for k, r in self.records.items() if r.error]
        if not failed:
            return 0
        for key in failed:
            del self.records[key]
        self.close()  # the rewrite replaces the file: the next append reopens it
        text = "".join(r.to_json() + "\n" for r in self.records.values())
        _replace_whole(self.path, text, sync=True)
        return len(failed)

    def append(self, episode: Episode, data: dict | None = None) -> None:
        """Write one record in a single ``write``; fsync when the group is full or old.

        ``data``: ``episode.to_dict()``, when the caller has made it already."""
        if data is None:
            data = episode.to_dict()
        line = (json.dumps(data, ensure_ascii=False) + "\n").encode("utf-8")
        with _writing(self.path):
            if self._fd is None:
                flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC
                self._fd = os.open(self.path, flags, 0o644)
            _write_all(self._fd, line)
        self._unsynced += 1
        self.records[canonical_run_key(episode.metadata["run_key"])] = episode
        if (
            self._unsynced >= self.sync_every
            or time.monotonic() - self._last_sync >= self.sync_interval_s
        ):
            self.sync()

    def sync(self) -> None:
        """fsync what was appended since the last sync, once the cache entries put
        meanwhile (the students' answers behind these records) are written too."""
        if self._fd is not None and self._unsynced:
            flush_cache_writes()
            with _writing(self.path):
                os.fsync(self._fd)
        self._unsynced = 0
        self._last_sync = time.monotonic()

    def close(self) -> None:
        """fsync the last group and close the file (appending again reopens it)."""
        try:
            self.sync()
        finally:
            if self._fd is not None:
                os.close(self._fd)
                self._fd = None


def _run_file(name: str) -> property:
    """A read-only :class:`RunDir` attribute: the path of its file ``name``."""
    return property(lambda self: self.path / name, doc=f"The run's ``{name}``.")


class RunDir:
    """One run directory: its file names, its config check, its problems and its episodes."""

    def __init__(self, path: str | os.PathLike):
        self.path = Path(path)

    def __repr__(self) -> str:
        return f"RunDir({str(self.path)!r})"

    episodes_path = _run_file(EPISODES_FILE)
    config_path = _run_file(CONFIG_FILE)
    problems_path = _run_file(PROBLEMS_FILE)
    summary_path = _run_file(SUMMARY_FILE)

    def save_summary(self, summary: dict) -> None:
        """Replace ``summary.json`` (written whole, then renamed: never half a file)."""
        _replace_whole(self.summary_path, json.dumps(summary, indent=2, ensure_ascii=False) + "\n")

    def summary(self) -> dict | None:
        """The saved summary; ``None`` when there is none or it is unreadable."""
        try:
            return json.loads(self.summary_path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None

    @classmethod
    def below(cls, path: str | os.PathLike) -> list[RunDir]:
        """The run directory ``path`` (or of its ``episodes.jsonl``), else every run below it."""
        path = Path(path)
        if path.is_file():
            return [cls(path.parent)]
        own = cls(path)
        if own.has_episodes():
            return [own]
        return [cls(p.parent) for p in sorted(path.rglob(EPISODES_FILE))]

    def has_episodes(self) -> bool:
        return self.episodes_path.is_file()

    # ------------------------------------------------------------ writer lock
    @contextlib.contextmanager
    def writer(self) -> Iterator[None]:
        """Hold the run's writer lock for the ``with`` block; remove it at the end.

        A run that leaves the block without a recorded episode, in a directory
        that held no run (no ``config.json``) when the block began, takes back
        the run files it wrote, and the directory if the block made it.

        Raises:
            RunLockedError: another live process holds it (its pid is in the message).
        """
        created_dir = not self.path.exists()
        with _writing(self.path / LOCK_FILE):
            self.path.mkdir(parents=True, exist_ok=True)
        found = {p.name for p in self.path.iterdir()}
        fd = self._lock()
        _HELD[fd] = functools.partial(self._release, fd, found, created_dir)
        try:
            yield
        finally:
            self._release(fd, found, created_dir)

    def _release(self, fd: int, found: set[str], created_dir: bool) -> None:
        """End a :meth:`writer` block (once): tidy a run that recorded nothing, remove the lock."""
        if _HELD.pop(fd, None) is None:
            return
        try:
            if CONFIG_FILE not in found and not _has_record(self.episodes_path):
                for name in set(RUN_FILES) - found:
                    (self.path / name).unlink(missing_ok=True)
            # unlinked while still held: a process that opened the old file sees that
            # it is gone once it gets the lock, and opens the new one (see _lock)
            (self.path / LOCK_FILE).unlink(missing_ok=True)
            if created_dir and not any(self.path.iterdir()):
                self.path.rmdir()
        except OSError as exc:  # tidying up must not hide why the run stopped
            logger.warning("could not tidy %s: %s", self.path, exc)
        finally:
            os.close(fd)  # closing drops the flock

    def _lock(self) -> int:
        """Open and ``flock`` the lock file, write our pid into it; -> its descriptor."""
        lock = self.path / LOCK_FILE
        while True:
            with _writing(lock):
                fd = os.open(lock, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                holder = os.pread(fd, 32, 0).decode("ascii", "replace").strip() or "unknown"
                os.close(fd)
                raise RunLockedError(
                    f"{self.path} is being written by another process (pid {holder}); "
                    "wait for it to finish, or use another --out directory"
                ) from None
            try:
                current = os.stat(lock).st_ino
            except FileNotFoundError:
                current = None
            if current != os.fstat(fd).st_ino:
                os.close(fd)  # its holder removed that file after we opened it: take the new one
                continue
            try:
                with _writing(lock):
                    os.ftruncate(fd, 0)
                    os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
            except BaseException:
                os.close(fd)
                raise
            return fd

    # ------------------------------------------------------------ config
    def prepare(self, config: dict) -> None:
        """Create the directory and save ``config``, or check it matches the saved one.

        Raises:
            ConfigMismatchError: the directory holds a run with another configuration.
        """
        self.check_config(config)
        self.save_config(config)

    def save_config(self, config: dict) -> None:
        """Save ``config`` unless one is saved already (the run has started)."""
        with _writing(self.config_path):
            self.path.mkdir(parents=True, exist_ok=True)
        if not self.config_path.exists():
            _replace_whole(
                self.config_path, json.dumps(config, indent=2, ensure_ascii=False) + "\n"
            )

    def check_config(self, config: dict) -> None:
        """Check ``config`` matches the saved one, if any (writes nothing).

        Raises:
            ConfigMismatchError: the directory holds a run with another configuration.
        """
        if not self.config_path.exists():
            return
        saved = json.loads(self.config_path.read_text(encoding="utf-8"))
        if saved != json.loads(json.dumps(config)):
            diffs = [
                f"{k}: {saved.get(k)!r} -> {config.get(k)!r}"
                for k in sorted(set(saved) | set(config))
                if saved.get(k) != config.get(k)
            ]
            raise ConfigMismatchError(
                f"{self.path} holds a run with a different configuration ({'; '.join(diffs)}). "
                "Use another --out directory, or delete this one to start over."
            )

    def config(self) -> dict | None:
        """The saved configuration; ``None`` when there is none or it is unreadable."""
        if not self.config_path.is_file():
            return None
        try:
            return json.loads(self.config_path.read_text(encoding="utf-8"))
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            logger.warning("%s: unreadable, ignored (%s)", self.config_path, exc)
            return None

    # ---------------------------------------------------------- problems
    def save_problems(self, problems: Iterable[Problem]) -> None:
        """Write the run's problems once (replaced into place, so never half-written)."""
        if self.problems_path.exists():
            return
        lines = (json.dumps(p.to_dict(), ensure_ascii=False) + "\n" for p in problems)
        _replace_whole(self.problems_path, "".join(lines))

    def problems(self) -> list[Problem]:
        """The run's problems: saved ones, else rebuilt from the config with the run's loader call.

        Raises:
            FileNotFoundError: neither ``problems.jsonl`` nor ``config.json`` is there.
        """
        if self.problems_path.is_file():
            lines = self.problems_path.read_text(encoding="utf-8").splitlines()
            return [Problem.from_dict(json.loads(line)) for line in lines if line.strip()]
        if not self.config_path.is_file():
            raise FileNotFoundError(
                f"{self.path} is not an intbench run directory "
                f"(no {PROBLEMS_FILE} or {CONFIG_FILE})"
            )
        config = json.loads(self.config_path.read_text(encoding="utf-8"))
        import gymnasium as gym

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

    # ---------------------------------------------------------- episodes
    def read(self) -> EpisodeFile:
        """Every readable record of ``episodes.jsonl`` in file order (nothing is written)."""
        return read_episode_file(self.episodes_path)

    def episodes(self) -> list[Episode]:
        """The latest record of each episode (see :func:`latest_by_run_key`); none without a file."""
        if not self.has_episodes():
            return []
        return list(latest_by_run_key(self.read().episodes).values())

    def log(self) -> EpisodeLog:
        """``episodes.jsonl`` opened for appending (creating the directory)."""
        with _writing(self.episodes_path):
            self.path.mkdir(parents=True, exist_ok=True)
        return EpisodeLog(self.episodes_path)
