"""Run functions in killable worker processes with a hard timeout.

Library timeouts built on ``signal.alarm`` only work on the main thread and
cannot stop C code.  :class:`IsolatedPool` instead keeps a few persistent
worker processes (modules such as sympy are imported once per worker); a call
that overruns its timeout gets its worker killed with SIGKILL and a fresh one
started in its place.  The pool is safe to share between many threads: each
call checks out one idle worker, so calls never interleave on a pipe.

Functions and arguments cross the process boundary by pickling, so the
function must be importable at module level.
"""

from __future__ import annotations

import atexit
import os
import queue
import resource
import subprocess
import sys
import threading
import time
import traceback
import weakref
from collections.abc import Callable, Sequence
from multiprocessing.connection import Connection
from typing import Any

_READY = "ready"
_WORKER_COMMAND = "import sys; from intbench.verifiers.isolation import serve; serve(int(sys.argv[1]), int(sys.argv[2]))"


class IsolationError(Exception):
    """Base class of the errors a pooled call can raise."""


class WorkerTimeout(IsolationError):
    """The call ran past its timeout; its worker was killed and replaced."""


class WorkerCrashed(IsolationError):
    """The worker died during the call (segfault, killed for memory, ...)."""


class RemoteError(IsolationError):
    """The function raised inside the worker.

    Attributes:
        type_name: the class name of the remote exception (``"MemoryError"``, ...).
        remote_traceback: the formatted traceback from the worker.
    """

    def __init__(self, type_name: str, message: str, remote_traceback: str) -> None:
        super().__init__(f"{type_name}: {message}")
        self.type_name = type_name
        self.remote_traceback = remote_traceback


def _watch_parent(parent_pid: int) -> None:
    """Exit when the parent dies, even while a call is still computing."""
    while os.getppid() == parent_pid:
        time.sleep(1.0)
    os._exit(1)


def serve(read_fd: int, write_fd: int) -> None:
    """Worker main loop (run via ``python -c``): set up, announce readiness, serve calls until EOF."""
    import importlib

    inbox = Connection(read_fd, writable=False)
    outbox = Connection(write_fd, readable=False)
    setup = inbox.recv()
    threading.Thread(target=_watch_parent, args=(setup["parent_pid"],), daemon=True).start()
    if setup["memory_limit_mb"]:
        # Runaway big-integer or symbolic work then fails with MemoryError
        # instead of dragging the whole machine into swap.
        limit = setup["memory_limit_mb"] * 1024 * 1024
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    for name in setup["preload"]:
        importlib.import_module(name)
    outbox.send(_READY)
    while True:
        try:
            fn, args, kwargs = inbox.recv()
        except (EOFError, OSError):  # the parent closed the pipe
            return
        try:
            reply: tuple = ("ok", fn(*args, **kwargs))
        except BaseException as exc:  # noqa: BLE001 - every failure goes back to the caller
            reply = ("err", type(exc).__name__, str(exc)[:2000], traceback.format_exc()[-8000:])
        try:
            outbox.send(reply)
        except Exception as exc:  # e.g. an unpicklable result
            outbox.send(
                ("err", type(exc).__name__, str(exc)[:2000], traceback.format_exc()[-8000:])
            )


class _Worker:
    """One worker process and the parent's ends of its two pipes.

    Workers are plain ``python -c`` subprocesses rather than ``multiprocessing``
    children: nothing re-imports the caller's ``__main__`` (so scripts need no
    ``if __name__ == "__main__"`` guard) and no threaded parent is ever forked.
    """

    def __init__(self, preload: tuple[str, ...], memory_limit_mb: int | None) -> None:
        to_parent_r, to_parent_w = os.pipe()
        to_child_r, to_child_w = os.pipe()
        try:
            self.process = subprocess.Popen(
                [sys.executable, "-c", _WORKER_COMMAND, str(to_child_r), str(to_parent_w)],
                pass_fds=(to_child_r, to_parent_w),
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,  # stray prints must not reach the caller's stdout
                start_new_session=True,  # a terminal Ctrl-C goes to the parent only
                # The parent's path, so functions from its modules (and an
                # uninstalled intbench checkout) import in the worker too.
                env={**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)},
            )
        finally:
            os.close(to_child_r)
            os.close(to_parent_w)
        self.inbox = Connection(to_parent_r, writable=False)
        self.outbox = Connection(to_child_w, readable=False)
        self.ready = False
        self.outbox.send(
            {
                "parent_pid": os.getpid(),
                "memory_limit_mb": memory_limit_mb,
                "preload": preload,
            }
        )

    def wait_ready(self, timeout: float) -> None:
        """Block until the worker finished its imports (not counted in call timeouts)."""
        if self.ready:
            return
        if not self.inbox.poll(timeout):
            raise WorkerCrashed(f"worker did not start within {timeout:.0f} s")
        if self.inbox.recv() != _READY:
            raise WorkerCrashed("worker sent an unexpected start message")
        self.ready = True

    def kill(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait(timeout=10)
        self.inbox.close()
        self.outbox.close()


class IsolatedPool:
    """A thread-safe pool of persistent worker processes with per-call hard timeouts.

    Workers start lazily on first use.  ``call`` blocks while all workers are
    busy; the timeout only counts the time the function actually runs, so a
    loaded pool delays calls but never fails them spuriously.

    Args:
        size: number of worker processes.
        preload: modules every worker imports once at start-up.
        memory_limit_mb: address-space limit per worker (``None``: no limit).
        startup_timeout: seconds a new worker may take to import ``preload``.

    Attributes:
        owner_pid: the process that created the pool; a forked child must
            create its own pool instead of sharing the parent's pipes.
    """

    def __init__(
        self,
        size: int = 2,
        *,
        preload: Sequence[str] = (),
        memory_limit_mb: int | None = 4096,
        startup_timeout: float = 120.0,
    ) -> None:
        if size < 1:
            raise ValueError(f"pool size must be at least 1, got {size}")
        self.size = size
        self._preload = tuple(preload)
        self._memory_limit_mb = memory_limit_mb
        self._startup_timeout = startup_timeout
        self._idle: queue.Queue[_Worker] = queue.Queue()
        self._all: set[_Worker] = set()
        self._lock = threading.Lock()
        self._started = 0
        self._closed = False
        self.calls = 0  # calls made (each a grading that needed a worker)
        self.queued = 0  # calls that found every worker busy
        self.queue_wait_s = 0.0  # and the seconds they waited for one
        self.owner_pid = os.getpid()
        _live_pools.add(self)

    @property
    def started(self) -> int:
        """Workers started so far (they start on demand or in :meth:`warm_up`)."""
        return self._started

    def _new_worker(self) -> _Worker:
        worker = _Worker(self._preload, self._memory_limit_mb)
        with self._lock:
            self._all.add(worker)
        return worker

    def _checkout(self) -> _Worker:
        """An idle worker if there is one, else a new one while the pool may grow, else
        the first worker to come back (the time waited is counted in :attr:`queue_wait_s`)."""
        with self._lock:
            if self._closed:
                raise RuntimeError("IsolatedPool is closed")
            try:
                return self._idle.get_nowait()
            except queue.Empty:
                pass
            start_one = self._started < self.size
            if start_one:
                self._started += 1
        if not start_one:
            waiting = time.perf_counter()
            worker = self._idle.get()
            with self._lock:
                self.queued += 1
                self.queue_wait_s += time.perf_counter() - waiting
            return worker
        try:
            return self._new_worker()
        except BaseException:
            with self._lock:
                self._started -= 1  # let a later call try again
            raise

    def _retire(self, worker: _Worker) -> None:
        """Kill a broken worker and put a fresh one in its place."""
        worker.kill()
        with self._lock:
            self._all.discard(worker)
            closed = self._closed
        if closed:
            return
        try:
            self._idle.put(self._new_worker())
        except BaseException:
            with self._lock:
                self._started -= 1  # the next checkout starts one instead
            raise

    def grow(self, size: int) -> None:
        """Allow up to ``size`` workers (never fewer than now); they start on demand or
        in :meth:`warm_up`."""
        with self._lock:
            self.size = max(self.size, size)

    def warm_up(self) -> None:
        """Start every worker now and wait until all are ready, so that the
        first calls do not pay the start-up imports."""
        workers = []
        while True:
            with self._lock:
                if self._started >= self.size:
                    break
            workers.append(self._checkout())
        failure = None
        for worker in workers:
            try:
                worker.wait_ready(self._startup_timeout)
            except WorkerCrashed as exc:
                failure = exc
                self._retire(worker)
                continue
            self._idle.put(worker)
        if failure is not None:
            raise failure

    def call(self, fn: Callable[..., Any], *args: Any, timeout: float, **kwargs: Any) -> Any:
        """Run ``fn(*args, **kwargs)`` in a worker and return its result.

        Raises:
            WorkerTimeout: the call ran longer than ``timeout`` seconds.
            WorkerCrashed: the worker died or could not start.
            RemoteError: ``fn`` raised; the remote type name and traceback are kept.
        """
        if os.getpid() != self.owner_pid:
            raise RuntimeError("IsolatedPool was inherited through fork; create a new one")
        with self._lock:
            self.calls += 1
        worker = self._checkout()
        try:
            worker.wait_ready(self._startup_timeout)
            worker.outbox.send((fn, args, kwargs))
            if not worker.inbox.poll(timeout):
                raise WorkerTimeout(f"call exceeded {timeout:g} s")
            reply = worker.inbox.recv()
        except WorkerTimeout:
            self._retire(worker)
            raise
        except (EOFError, OSError, WorkerCrashed) as exc:
            self._retire(worker)
            if isinstance(exc, WorkerCrashed):
                raise
            raise WorkerCrashed(f"worker died: {type(exc).__name__}: {exc}") from None
        except BaseException:
            # Anything else (e.g. an unpicklable argument, KeyboardInterrupt)
            # leaves the pipe in an unknown state: do not reuse this worker.
            self._retire(worker)
            raise
        self._idle.put(worker)
        if reply[0] == "ok":
            return reply[1]
        _, type_name, message, remote_tb = reply
        raise RemoteError(type_name, message, remote_tb)

    def close(self) -> None:
        """Kill every worker; later calls raise ``RuntimeError``."""
        with self._lock:
            self._closed = True
            workers = list(self._all)
            self._all.clear()
        if os.getpid() != self.owner_pid:
            return  # the workers belong to the parent process
        for worker in workers:
            worker.kill()

    def __enter__(self) -> IsolatedPool:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


_live_pools: weakref.WeakSet[IsolatedPool] = weakref.WeakSet()


@atexit.register
def _close_live_pools() -> None:
    for pool in list(_live_pools):
        pool.close()
