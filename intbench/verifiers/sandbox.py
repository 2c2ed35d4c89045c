"""Run untrusted Python programs against test cases, all cases in one sandbox.

One call of :func:`run_program` starts one fresh sandboxed process (the
runner, ``_sandbox_runner.py``), sends it the program, then each test's input
over a pipe one at a time; the runner executes the program per test in a
forked child under rlimits and answers with the raw outcome.  Expected
outputs, other problems' tests and reference solutions stay in this (trusted)
process, which does all comparisons.

Isolation levels, strongest first (:func:`isolation_level` picks the first
that works here and logs which):

``bwrap``
    bubblewrap: a minimal read-only filesystem (system libraries and the base
    Python prefix without site-packages), a size-limited private tmpfs as the
    working directory, new PID/network/IPC/UTS namespaces, runner as PID 1.
    Started as root, the runner drops to a per-run unprivileged uid; started
    as a normal user, bwrap uses a user namespace instead.
``unshare``
    ``unshare`` namespaces (no network, own PID namespace with the runner as
    PID 1) plus the uid drop and rlimits, but the host filesystem stays
    visible (read-only where permissions say so).  Needs the interpreter to
    be readable by the sandbox uid.
``rlimits``
    rlimits, a new session and a private temp dir only: no network or
    filesystem isolation.  Used only with a logged warning.

Thread-safe: each call owns its process, pipes, temp dir and (as root) uid.
"""

from __future__ import annotations

import dataclasses
import fcntl
import json
import logging
import os
import random
import selectors
import shutil
import signal
import struct
import subprocess
import sys
import sysconfig
import tempfile
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

logger = logging.getLogger(__name__)

IsolationLevel = Literal["bwrap", "unshare", "rlimits"]
ISOLATION_LEVELS: tuple[IsolationLevel, ...] = ("bwrap", "unshare", "rlimits")

_HEADER = struct.Struct(">I")
_RUNNER_SOURCE = (Path(__file__).with_name("_sandbox_runner.py")).read_text(encoding="utf-8")
_WORKDIR = "/sandbox"  # the program's working directory inside bwrap
_STARTUP_TIMEOUT_S = 10.0
_RESPONSE_GRACE_S = 1.0  # slack over the runner's own per-test deadline
_MAX_RUNNER_STDERR = 64 * 1024
# Per-run uids when we are root: each concurrent run gets its own uid, so a
# fork bomb in one sandbox cannot exhaust another's RLIMIT_NPROC and leftover
# processes are found by uid.  The range is far above normal account uids.
_UID_BASE = 2_000_000_000
_UID_POOL_SIZE = 4096


@dataclass(frozen=True)
class SandboxLimits:
    """Resource limits of one sandboxed run (per test unless named total)."""

    time_limit_s: float = 2.0
    total_time_s: float = 15.0
    memory_mb: int = 512
    file_size_mb: int = 16
    workdir_mb: int = 64
    max_processes: int = 32
    max_open_files: int = 64
    max_output_bytes: int = 1024 * 1024
    max_stderr_bytes: int = 64 * 1024

    def __post_init__(self) -> None:
        for f in dataclasses.fields(self):
            if not getattr(self, f.name) > 0:
                raise ValueError(f"SandboxLimits.{f.name} must be positive")


@dataclass
class CaseOutcome:
    """What happened when the program ran on one test case.

    ``status`` is ``"ok"`` (exited 0 in time), ``"runtime_error"`` (non-zero
    exit, uncaught exception or fatal signal), ``"timeout"``,
    ``"output_limit"`` (printed more than allowed), ``"crashed"`` (the
    sandbox itself died during this case) or ``"not_run"`` (total time
    exhausted or the sandbox gone before this case).
    """

    status: str
    stdout: str = ""
    stderr: str = ""
    exit_code: int | None = None
    signal: str | None = None
    time_s: float = 0.0


@dataclass
class SandboxRun:
    """Outcomes of all cases of one :func:`run_program` call, in case order."""

    outcomes: list[CaseOutcome]
    isolation: str
    uid: int | None = None
    total_timeout: bool = False
    error: str | None = None
    seconds: float = 0.0
    runner_stderr: str = field(default="", repr=False)


class SandboxError(RuntimeError):
    """The sandbox could not be set up (not a fault of the program)."""


def run_program(
    program: str,
    cases: Sequence[dict],
    *,
    kind: Literal["stdio", "function"] = "stdio",
    entry_point: str | None = None,
    setup: str = "",
    limits: SandboxLimits | None = None,
    isolation: IsolationLevel | None = None,
) -> SandboxRun:
    """Run ``program`` on every case in one fresh sandboxed process.

    Args:
        program: Python source of the untrusted program.
        cases: ``{"input": str}`` per test for ``kind="stdio"``; ``{"code": str}``
            per test for ``kind="function"`` (run with ``candidate`` bound to
            ``entry_point`` after ``setup``).  Other keys (expected outputs)
            are ignored and never sent to the sandbox.
        limits: resource limits; defaults to :class:`SandboxLimits`.
        isolation: force a level instead of the best available one.

    Returns:
        A :class:`SandboxRun`.  Problems of the sandbox itself (it could not
        start) set ``error`` and leave every case ``not_run``; they never raise.
    """
    if kind not in ("stdio", "function"):
        raise ValueError(f"kind must be 'stdio' or 'function', got {kind!r}")
    if kind == "function" and not entry_point:
        raise ValueError("function tests need an entry_point")
    limits = limits or SandboxLimits()
    level = isolation or isolation_level()
    if level not in ISOLATION_LEVELS:
        raise ValueError(f"isolation must be one of {ISOLATION_LEVELS}, got {level!r}")
    payloads = [
        {"input": str(c.get("input", ""))} if kind == "stdio" else {"code": str(c.get("code", ""))}
        for c in cases
    ]
    config = {
        "kind": kind,
        "program": program,
        "entry_point": entry_point,
        "setup": setup or "",
        "limits": dataclasses.asdict(limits),
    }
    with _Session(level, limits) as session:
        return session.run(config, payloads)


# ---------------------------------------------------------------- isolation


_level_lock = threading.Lock()
_level_cache: IsolationLevel | None = None


def isolation_level() -> IsolationLevel:
    """Return the strongest isolation level that works on this machine (cached).

    Each candidate is probed by running a tiny program through it.  Falling
    back to ``rlimits`` logs a warning, since it offers no filesystem or
    network isolation.
    """
    global _level_cache
    with _level_lock:
        if _level_cache is None:
            for level in ISOLATION_LEVELS:
                reason = _probe(level)
                if reason is None:
                    _level_cache = level
                    break
                logger.info("sandbox isolation %r unavailable: %s", level, reason)
            else:
                raise SandboxError("no sandbox isolation level works on this machine")
            if _level_cache == "rlimits":
                logger.warning(
                    "sandbox falls back to rlimits only: untrusted code can reach the "
                    "network and read files visible to its user; install bubblewrap"
                )
            else:
                logger.info("sandbox isolation level: %s", _level_cache)
        return _level_cache


def _probe(level: IsolationLevel) -> str | None:
    """Why ``level`` is unusable here, or ``None`` if a test program ran through it."""
    tool = {"bwrap": "bwrap", "unshare": "unshare"}.get(level)
    if tool and shutil.which(tool) is None:
        return f"{tool} not found"
    limits = SandboxLimits(time_limit_s=5.0, total_time_s=10.0)
    # The program imports stdlib modules after the uid drop, proving the
    # interpreter's files are readable by the sandbox uid.
    try:
        with _Session(level, limits) as session:
            run = session.run(
                {"kind": "stdio", "program": "import fractions, json\nprint(input())", "entry_point": None,
                 "setup": "", "limits": dataclasses.asdict(limits)},
                [{"input": "ok"}],
            )  # fmt: skip
    except (OSError, SandboxError) as exc:
        return str(exc)
    outcome = run.outcomes[0]
    if run.error or outcome.stdout != "ok\n":
        return run.error or f"probe program failed: {outcome.status} {outcome.stderr[-300:]!r}"
    return None


def _base_interpreter() -> tuple[str, str]:
    """The base (non-venv) interpreter and its prefix: the sandbox runs stdlib only."""
    executable = os.path.realpath(getattr(sys, "_base_executable", None) or sys.executable)
    return executable, os.path.realpath(sys.base_prefix)


def _runner_argv(uid: int) -> list[str]:
    executable, _ = _base_interpreter()
    # -I: ignore env vars and user site; -S: no site-packages; -B: write no .pyc.
    return [executable, "-I", "-S", "-B", "-c", _RUNNER_SOURCE, str(uid)]


def _bwrap_command(uid: int, limits: SandboxLimits, as_root: bool) -> list[str]:
    executable, prefix = _base_interpreter()
    args = [
        shutil.which("bwrap") or "bwrap",
        "--unshare-ipc", "--unshare-pid", "--unshare-net", "--unshare-uts",
        "--unshare-cgroup-try", "--die-with-parent", "--new-session", "--as-pid-1",
        "--clearenv",
    ]  # fmt: skip
    if as_root:
        # Privileged bwrap creates no user namespace; the runner needs these two
        # capabilities only to switch to the sandbox uid, which clears them.
        args += ["--cap-add", "CAP_SETUID", "--cap-add", "CAP_SETGID"]
    else:
        args += ["--unshare-user", "--uid", str(uid), "--gid", str(os.getgid())]

    binds: list[tuple[str, list[str]]] = []
    for lib in ("/usr/lib", "/usr/lib64", "/usr/lib32"):
        if os.path.isdir(lib) and not os.path.islink(lib):
            binds.append((lib, ["--ro-bind", lib, lib]))
    for lib in ("/lib", "/lib64", "/lib32"):
        if os.path.islink(lib):
            binds.append((lib, ["--symlink", os.readlink(lib), lib]))
        elif os.path.isdir(lib):
            binds.append((lib, ["--ro-bind", lib, lib]))
    if os.path.exists("/etc/ld.so.cache"):
        binds.append(("/etc/ld.so.cache", ["--ro-bind", "/etc/ld.so.cache", "/etc/ld.so.cache"]))
    binds.append((prefix, ["--ro-bind", prefix, prefix]))
    exe_dir = os.path.dirname(executable)
    if not exe_dir.startswith(prefix + os.sep):
        binds.append((exe_dir, ["--ro-bind", exe_dir, exe_dir]))
    # Hide the base interpreter's installed packages (and any data sets in them).
    for key in ("purelib", "platlib"):
        site = os.path.realpath(sysconfig.get_paths(vars={"base": prefix, "platbase": prefix})[key])
        if os.path.isdir(site) and site.startswith(prefix + os.sep):
            binds.append((site, ["--tmpfs", site]))
    binds.sort(key=lambda item: item[0].count("/"))

    # Privileged bwrap creates missing parent directories with mode 0700, which
    # the sandbox uid could not traverse: create them world-readable first.
    targets = {target for target, _ in binds} | {_WORKDIR}
    parents = sorted(
        {str(p) for t in targets for p in Path(t).parents if str(p) != "/"} - targets,
        key=lambda p: p.count("/"),
    )
    for parent in parents:
        args += ["--perms", "0755", "--dir", parent]
    for _, bind_args in binds:
        args += bind_args
    args += [
        "--proc", "/proc", "--dev", "/dev",
        "--perms", "01777", "--size", str(limits.workdir_mb * 1024 * 1024), "--tmpfs", _WORKDIR,
        "--chdir", _WORKDIR,
        "--setenv", "HOME", _WORKDIR, "--setenv", "TMPDIR", _WORKDIR,
        "--setenv", "LANG", "C.UTF-8", "--setenv", "PATH", "/usr/bin:/bin",
        "--",
    ]  # fmt: skip
    return args + _runner_argv(uid)


def _unshare_command(uid: int, as_root: bool) -> list[str]:
    args = [shutil.which("unshare") or "unshare", "--net", "--ipc", "--uts", "--pid"]
    args += ["--kill-child", "--mount-proc"]
    if not as_root:
        args.append("--map-current-user")
    return args + ["--"] + _runner_argv(uid)


# ---------------------------------------------------------------- uid pool


_UID_LOCK_DIR = os.path.join(tempfile.gettempdir(), "intbench-sandbox-uids")


def _acquire_uid() -> tuple[int, int]:
    """Reserve a sandbox uid for this run: ``(uid, lock_fd)``.

    An exclusive ``flock`` per uid makes the reservation hold across threads
    *and* processes (several evaluation workers may run sandboxes at once).
    """
    os.makedirs(_UID_LOCK_DIR, mode=0o700, exist_ok=True)
    offset = random.randrange(_UID_POOL_SIZE)  # spreads concurrent callers apart
    for i in range(_UID_POOL_SIZE):
        uid = _UID_BASE + (offset + i) % _UID_POOL_SIZE
        fd = os.open(
            os.path.join(_UID_LOCK_DIR, str(uid)), os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600
        )
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            continue
        if _kill_uid(uid):  # a crashed earlier owner left processes we cannot kill
            os.close(fd)
            continue
        return uid, fd
    raise SandboxError("too many concurrent sandboxes: uid pool exhausted")


def _pids_of_uid(uid: int) -> list[int]:
    """Processes whose real uid is ``uid`` (read from /proc)."""
    pids = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/status", encoding="ascii", errors="replace") as fh:
                fields = dict(line.split(":", 1) for line in fh if ":" in line)
            # Zombies are already dead; they only wait for their parent to reap them.
            if int(fields["Uid"].split()[0]) == uid and not fields["State"].strip().startswith("Z"):
                pids.append(int(entry))
        except (OSError, ValueError, IndexError, KeyError):
            continue
    return pids


def _kill_uid(uid: int, timeout_s: float = 2.0) -> list[int]:
    """SIGKILL every process of ``uid`` until none is left; returns survivors."""
    deadline = time.monotonic() + timeout_s
    while True:
        pids = _pids_of_uid(uid)
        if not pids or time.monotonic() > deadline:
            return pids
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        time.sleep(0.01)


# ---------------------------------------------------------------- session


class _Session:
    """One sandboxed runner process and its framed pipe protocol."""

    def __init__(self, level: IsolationLevel, limits: SandboxLimits) -> None:
        self.level = level
        self.limits = limits
        self.as_root = os.geteuid() == 0
        self.uid: int | None = None
        self.uid_lock: int | None = None
        self.workdir: str | None = None
        self.proc: subprocess.Popen | None = None
        self.stderr = bytearray()
        self._buffer = bytearray()

    def __enter__(self) -> _Session:
        try:
            self.uid = os.getuid()
            if self.as_root and self.level != "rlimits":
                self.uid, self.uid_lock = _acquire_uid()
            cwd = None
            if self.level == "bwrap":
                cmd = _bwrap_command(self.uid, self.limits, self.as_root)
            else:
                self.workdir = cwd = tempfile.mkdtemp(prefix="intbench-sandbox-")
                if self.as_root:
                    os.chown(cwd, self.uid, self.uid)
                cmd = (
                    _unshare_command(self.uid, self.as_root)
                    if self.level == "unshare"
                    # rlimits only: the runner keeps our uid (no namespaces to
                    # make the interpreter reachable for another one).
                    else _runner_argv(os.getuid())
                )
            env = {
                "PATH": "/usr/bin:/bin",
                "LANG": "C.UTF-8",
                "HOME": cwd or "/",
                "TMPDIR": cwd or "/tmp",
            }
            self.proc = subprocess.Popen(
                cmd,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                cwd=cwd,
                env=env,
                start_new_session=True,
                umask=0o022,
            )
        except BaseException:
            self.__exit__(None, None, None)
            raise
        for pipe in (self.proc.stdin, self.proc.stdout, self.proc.stderr):
            os.set_blocking(pipe.fileno(), False)
        return self

    def __exit__(self, *exc_info: object) -> None:
        if self.proc is not None:
            # EOF tells a healthy runner to exit, which ends its PID namespace
            # and everything in it; the group kill covers the other cases.
            try:
                self.proc.stdin.close()
                self.proc.wait(timeout=0.5)
            except (OSError, subprocess.TimeoutExpired):
                pass
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
            self.proc.wait()
            self.proc.stdout.close()
            self.proc.stderr.close()
        if self.uid_lock is not None:
            survivors = _kill_uid(self.uid)
            if survivors:  # keep the uid reserved: never hand it to another run
                logger.error("sandbox uid %d keeps processes %s alive", self.uid, survivors)
            else:
                os.close(self.uid_lock)
        if self.workdir:
            shutil.rmtree(self.workdir, ignore_errors=True)

    def run(self, config: dict, payloads: list[dict]) -> SandboxRun:
        start = time.monotonic()
        total_deadline = start + self.limits.total_time_s
        outcomes: list[CaseOutcome] = []
        run = SandboxRun(outcomes=outcomes, isolation=self.level, uid=self.uid)
        try:
            self._send(config, min(total_deadline, start + _STARTUP_TIMEOUT_S))
            ready = self._receive(min(total_deadline, start + _STARTUP_TIMEOUT_S))
            if not ready.get("ready"):
                raise SandboxError(f"unexpected runner greeting {ready!r}")
        except (SandboxError, TimeoutError, EOFError, OSError) as exc:
            run.error = f"sandbox failed to start: {type(exc).__name__}: {exc}"
            outcomes += [CaseOutcome("not_run") for _ in payloads]
            return self._finish(run, start)
        for payload in payloads:
            if time.monotonic() >= total_deadline:
                run.total_timeout = True
                break
            case_deadline = time.monotonic() + self.limits.time_limit_s + _RESPONSE_GRACE_S
            deadline = min(case_deadline, total_deadline)
            try:
                self._send(payload, deadline)
                outcomes.append(_outcome_from(self._receive(deadline)))
            except TimeoutError:
                # The runner enforces the per-test limit itself, so silence means
                # the total budget ran out or the runner is wedged: stop here.
                run.total_timeout = deadline < case_deadline
                outcomes.append(CaseOutcome("timeout", time_s=self.limits.time_limit_s))
                break
            except (EOFError, OSError, SandboxError) as exc:
                outcomes.append(CaseOutcome("crashed", stderr=f"sandbox died: {exc}"))
                break
        outcomes += [CaseOutcome("not_run") for _ in payloads[len(outcomes) :]]
        return self._finish(run, start)

    def _finish(self, run: SandboxRun, start: float) -> SandboxRun:
        run.seconds = round(time.monotonic() - start, 4)
        run.runner_stderr = self.stderr.decode("utf-8", "replace")
        if run.error:
            logger.warning("%s; runner stderr: %s", run.error, run.runner_stderr[-500:])
        return run

    def _send(self, message: dict, deadline: float) -> None:
        data = json.dumps(message).encode()
        view = memoryview(_HEADER.pack(len(data)) + data)
        fd = self.proc.stdin.fileno()
        with selectors.DefaultSelector() as selector:
            selector.register(fd, selectors.EVENT_WRITE)
            while view:
                remaining = deadline - time.monotonic()
                if remaining <= 0 or not selector.select(remaining):
                    raise TimeoutError("runner does not read its input")
                try:
                    view = view[os.write(fd, view) :]
                except BlockingIOError:
                    continue

    def _receive(self, deadline: float) -> dict:
        limit = self.limits.max_output_bytes * 6 + self.limits.max_stderr_bytes * 6 + 4096
        out_fd, err_fd = self.proc.stdout.fileno(), self.proc.stderr.fileno()
        with selectors.DefaultSelector() as selector:
            selector.register(out_fd, selectors.EVENT_READ)
            selector.register(err_fd, selectors.EVENT_READ)
            while True:
                if len(self._buffer) >= _HEADER.size:
                    (size,) = _HEADER.unpack_from(self._buffer)
                    if size > limit:
                        raise SandboxError(f"runner sent an oversized frame ({size} bytes)")
                    if len(self._buffer) >= _HEADER.size + size:
                        frame = bytes(self._buffer[_HEADER.size : _HEADER.size + size])
                        del self._buffer[: _HEADER.size + size]
                        return json.loads(frame)
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise TimeoutError("no answer from the sandbox in time")
                for key, _ in selector.select(remaining):
                    try:
                        chunk = os.read(key.fd, 65536)
                    except BlockingIOError:
                        continue
                    if key.fd == err_fd:
                        if not chunk:
                            selector.unregister(err_fd)
                        elif len(self.stderr) < _MAX_RUNNER_STDERR:
                            self.stderr += chunk[: _MAX_RUNNER_STDERR - len(self.stderr)]
                    elif not chunk:
                        raise EOFError("the sandbox runner exited")
                    else:
                        self._buffer += chunk


def _outcome_from(frame: dict) -> CaseOutcome:
    names = {f.name for f in dataclasses.fields(CaseOutcome)}
    return CaseOutcome(**{k: v for k, v in frame.items() if k in names})


__all__ = [
    "ISOLATION_LEVELS",
    "CaseOutcome",
    "IsolationLevel",
    "SandboxError",
    "SandboxLimits",
    "SandboxRun",
    "isolation_level",
    "run_program",
]
