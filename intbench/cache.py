"""On-disk caches shared by every protocol and run.

The student's unassisted baseline depends on (problem, student, prompt,
sampling, seed) and not on the teacher, so it is generated once and reused
across teachers, conditions and runs.  Entries are small JSON files written
atomically, so concurrent runs and interrupted writes never corrupt the cache.
While a run plays its episodes (:func:`deferred_cache_writes`), one background
thread writes them: creating and renaming a file costs about 0.4 ms of system
time, which an episode's step should not wait for.  Lookups see a pending entry
at once, and every entry is on disk when the run ends (and at exit).
"""

from __future__ import annotations

import atexit
import contextlib
import hashlib
import json
import logging
import os
import queue
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any


def default_cache_dir() -> Path:
    """``$INTBENCH_CACHE``, else ``~/.cache/intbench``."""
    return Path(os.environ.get("INTBENCH_CACHE") or Path.home() / ".cache" / "intbench")


def stable_hash(*parts: Any) -> str:
    """A hex digest of JSON-serialisable parts, stable across processes."""
    blob = json.dumps(parts, sort_keys=True, ensure_ascii=False, default=str)
    # surrogatepass: lone surrogates (possible in model output) keep distinct bytes.
    return hashlib.sha256(blob.encode("utf-8", "surrogatepass")).hexdigest()


logger = logging.getLogger(__name__)


def atomic_write_json(path: Path, data: Any) -> None:
    _write_atomically(path, json.dumps(data, ensure_ascii=False))


def _write_atomically(path: Path, text: str) -> None:
    try:
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-", suffix=".json")
    except FileNotFoundError:  # the folder's first entry (no mkdir's stat on every write)
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-", suffix=".json")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)  # one write, not one per token
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


class _Writer:
    """Writes cache entries: at once, or, while a run defers them, from one thread in
    the order they were put.

    ``pending`` holds the text of every deferred entry not yet on disk, so a lookup in
    this process finds it meanwhile.  A deferred write that fails (a full disk, a
    read-only cache folder) is logged; the run goes on without that entry."""

    def __init__(self) -> None:
        self._deferring = 0  # runs now deferring their writes
        self._after_fork()

    def _after_fork(self) -> None:
        """A fresh queue and no thread (a forked child has none); the parent writes what
        was pending at the fork.  The count of deferring runs follows the child's stack."""
        self._queue: queue.SimpleQueue[Path] = queue.SimpleQueue()
        self._pending: dict[Path, str] = {}
        self._done = threading.Condition()
        self._thread: threading.Thread | None = None

    def put(self, path: Path, text: str) -> None:
        with self._done:
            # a key with a value still pending queues the next too, so the last one wins
            deferred = bool(self._deferring) or path in self._pending
            if deferred:
                self._pending[path] = text
                if self._thread is None:
                    self._thread = threading.Thread(
                        target=self._write_forever, name="intbench-cache-writer", daemon=True
                    )
                    self._thread.start()
        if deferred:
            self._queue.put(path)
        else:
            _write_atomically(path, text)

    def pending(self, path: Path) -> str | None:
        with self._done:
            return self._pending.get(path)

    def flush(self, timeout: float | None = None) -> bool:
        """Wait until every entry put so far is written; whether that happened in time."""
        with self._done:
            return self._done.wait_for(lambda: not self._pending, timeout)

    @contextlib.contextmanager
    def deferring(self) -> Iterator[None]:
        with self._done:
            self._deferring += 1
        try:
            yield
        finally:
            with self._done:
                self._deferring -= 1
            self.flush()

    def _write_forever(self) -> None:
        while True:
            path = self._queue.get()
            with self._done:
                text = self._pending.get(path)
            if text is None:
                continue  # written already, with the value put after this one
            try:
                _write_atomically(path, text)
            except Exception as exc:  # noqa: BLE001 - a full disk costs this entry, not the writer
                logger.warning("cache entry %s not saved: %s", path, exc)
            with self._done:
                if self._pending.get(path) is text:  # not put again meanwhile
                    del self._pending[path]
                self._done.notify_all()


_WRITER = _Writer()
atexit.register(_WRITER.flush)
os.register_at_fork(after_in_child=_WRITER._after_fork)


def deferred_cache_writes() -> contextlib.AbstractContextManager[None]:
    """Within it, cache entries are written by a background thread, so no step waits on
    the file system; on leaving it, every entry put is on disk.  Runs play their
    episodes inside it; elsewhere an entry is on disk when ``put`` returns."""
    return _WRITER.deferring()


def flush_cache_writes(timeout: float | None = None) -> bool:
    """Wait until every cache entry put in this process is on disk (exit does this too)."""
    return _WRITER.flush(timeout)


class JsonCache:
    """A key -> JSON value store under ``root/namespace`` with a memory layer."""

    def __init__(self, namespace: str, root: str | os.PathLike | None = None):
        self.dir = Path(root) if root is not None else default_cache_dir()
        self.dir = self.dir / namespace
        self._memory: dict[str, Any] = {}
        self._lock = threading.Lock()

    def _path(self, key: str) -> Path:
        return self.dir / key[:2] / f"{key}.json"

    def get(self, key: str) -> Any | None:
        with self._lock:
            if key in self._memory:
                return self._memory[key]
        path = self._path(key)
        try:
            text = _WRITER.pending(path)
            value = json.loads(path.read_text(encoding="utf-8") if text is None else text)
        except FileNotFoundError:
            return None
        except (OSError, ValueError):
            # A damaged entry is a cache miss: it will be regenerated and overwritten.
            return None
        with self._lock:
            self._memory[key] = value
        return value

    def put(self, key: str, value: Any) -> None:
        """Keep ``value`` under ``key``: in memory at once, on disk now or, within
        :func:`deferred_cache_writes`, by the writer thread."""
        text = json.dumps(value, ensure_ascii=False)
        with self._lock:
            self._memory[key] = value
        _WRITER.put(self._path(key), text)
