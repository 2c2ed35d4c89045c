"""Run untrusted Python programs against test cases, all cases in one sandbox.

One call of :func:`run_program` starts one fresh sandboxed process (the
runner, ``_sandbox_runner.py``), sends it the program, then each test's input
over a pipe one at a time; the runner executes the program per test in a
forked child under rlimits and answers with the raw outcome.  Expected
outputs, other problems' tests and reference solutions stay in this (trusted)
process, which does all comparisons.

Isolation levels, strongest first.  :func:`isolation_level` picks the first
that passes its probe; it **fails closed**: when neither ``bwrap`` nor
``unshare`` works it raises :class:`SandboxError` (install bubblewrap) and no
untrusted code runs, unless ``INTBENCH_SANDBOX_ALLOW_WEAK=1`` is set (read at
each call) or a caller passes ``isolation="rlimits"`` explicitly.  Every run
records the level it used (``SandboxRun.isolation``).

``bwrap``
    bubblewrap: a minimal read-only filesystem (system libraries and the base
    Python prefix without site-packages), a size-limited private tmpfs as the
    working directory and a small private ``/dev/shm``, new PID/network/IPC/UTS
    namespaces, runner as PID 1.  Started as root, the runner drops to a
    per-run unprivileged uid; started as a normal user, bwrap uses a user
    namespace (with ``--disable-userns``) instead.
``unshare``
    util-linux ``unshare`` makes the same namespaces plus a mount namespace;
    before dropping privileges the runner builds the same read-only root as
    bwrap on a tmpfs and switches to it with ``pivot_root`` (``_sandbox_mounts.py``), so
    this level passes the same escape tests, including where the interpreter
    lives under a home directory only its owner may enter.
``rlimits``
    rlimits, a new session and a private temp dir only: no network or
    filesystem isolation, and the runner keeps our uid.  Opt-in only.

At the ``bwrap`` and ``unshare`` levels the runner installs a seccomp filter
(``_sandbox_seccomp.py``) after its privilege drop: namespace creation,
mounts, ``ptrace``, ``io_uring``, BPF, keyrings and module loading fail with
``EPERM`` for the program and everything it starts.

Total memory and processes of a run (``SandboxLimits.total_memory_mb``,
``max_processes``): each run gets its own cgroup (v2 with the memory and pids
controllers, else v1 memory and pids hierarchies) that the runner joins
before it starts, removed after the run.  Where no cgroup can be made, the
bound is RLIMIT_NPROC on the run's own uid times RLIMIT_AS: ``max_processes``
is lowered to ``max(2, total_memory_mb // memory_mb)`` tasks (runner
included) of ``memory_mb`` each, plus the runner's headroom.  The kernel does
not apply RLIMIT_NPROC to root, so the ``rlimits`` level as root has no total
bound without a cgroup.  The session records which bound held
(``cgroup2``, ``cgroup1``, ``rlimit`` or ``none``).

Thread-safe: each call owns its process, pipes, temp dir and (as root) uid.
"""

from __future__ import annotations

import builtins
import dataclasses
import fcntl
import functools
import json
import logging
import marshal
import os
import random
import select
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
import traceback
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import CodeType
from typing import IO, Any, Literal

from intbench.verifiers._sandbox_runner import MAX_VALUE_BYTES, decode_value, encode_value

logger = logging.getLogger(__name__)

IsolationLevel = Literal["bwrap", "unshare", "rlimits"]
ISOLATION_LEVELS: tuple[IsolationLevel, ...] = ("bwrap", "unshare", "rlimits")

_HEADER = struct.Struct(">I")


def _sibling_source(name: str) -> str:
    return Path(__file__).with_name(name).read_text(encoding="utf-8")


# The seccomp filter's definitions come first so the runner can install it.
_RUNNER_SOURCE = _sibling_source("_sandbox_seccomp.py") + _sibling_source("_sandbox_runner.py")
# The runner arrives compiled: a short bootstrap reads its marshalled code from
# stdin, so no run pays for compiling the runner again.  The sandbox runs the
# base interpreter of this one, so the marshal format is the same.
_BOOTSTRAP = """
import marshal, os
def _take(size):
    data = b""
    while len(data) < size:
        chunk = os.read(0, size - len(data))
        if not chunk:
            raise SystemExit(3)
        data += chunk
    return data
exec(marshal.loads(_take(int.from_bytes(_take(4), "big"))))
"""


@functools.cache
def _runner_code(source: str) -> bytes:
    """``source`` compiled and marshalled, as the bootstrap expects it (length-prefixed)."""
    code = marshal.dumps(compile(source, "<sandbox runner>", "exec"))
    return _HEADER.pack(len(code)) + code


_MOUNTS_SOURCE = _sibling_source("_sandbox_mounts.py")
ALLOW_WEAK_ENV = "INTBENCH_SANDBOX_ALLOW_WEAK"
_SHM_BYTES = 16 * 1024 * 1024  # the sandbox's private /dev/shm
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
    """Resource limits of one sandboxed run (per test unless named total).

    ``memory_mb`` bounds each process's address space; ``total_memory_mb``
    bounds all processes of the run together (see the module docstring for
    how, when no cgroup can be made).
    """

    time_limit_s: float = 2.0
    total_time_s: float = 15.0
    memory_mb: int = 512
    file_size_mb: int = 16
    workdir_mb: int = 64
    max_processes: int = 32
    total_memory_mb: int = 2048
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

    ``status`` is ``"ok"``, ``"runtime_error"``, ``"timeout"``,
    ``"output_limit"`` (printed, or returned, more than allowed), ``"crashed"``
    (the sandbox itself failed during this case) or ``"not_run"`` (total time
    exhausted or the sandbox gone before this case).  For a stdio test ``"ok"``
    means the program exited 0 in time (its ``stdout`` still has to be
    compared); ``"runtime_error"`` a non-zero exit, uncaught exception or fatal
    signal.  For a function test ``"ok"`` is the verdict of the trusted test
    code: it ran to its end, every call was answered with a plain value and the
    program's process was still running; anything else (a failed assert, an
    exception, an exit, a malformed reply) is ``"runtime_error"``, with the
    test's traceback at the end of ``stderr``.
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
    memory_bound: str = "none"
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

    Function tests are trusted code (from the data set) and run in *this*
    process: ``setup``, then the test's code, with ``candidate`` (and the name
    ``entry_point``) bound to a proxy that calls ``entry_point`` in the sandbox.
    Each call's arguments travel there encoded; the return value comes back
    encoded and is decoded here into plain builtin values (int, float, complex,
    str, bytes, bool, None and lists, tuples, dicts, sets, frozensets of them,
    at most 1 MiB and 100 levels deep), so the test's own comparison runs on a
    copy the program cannot rig.  Nothing of the test reaches the sandbox.

    Args:
        program: Python source of the untrusted program.
        cases: ``{"input": str}`` per test for ``kind="stdio"``; ``{"code": str}``
            per test for ``kind="function"``.  Other keys (expected outputs)
            are ignored and never sent to the sandbox.
        setup: trusted code run before each function test (helpers the tests call).
        limits: resource limits; defaults to :class:`SandboxLimits`.
        isolation: force a level instead of the best available one.

    Returns:
        A :class:`SandboxRun`.  Problems of the sandbox itself (it could not
        start) set ``error`` and leave every case ``not_run``; they never raise.
        Test code or setup that does not compile raises ``ValueError``.
    """
    if kind not in ("stdio", "function"):
        raise ValueError(f"kind must be 'stdio' or 'function', got {kind!r}")
    if kind == "function" and not entry_point:
        raise ValueError("function tests need an entry_point")
    limits = limits or SandboxLimits()
    try:
        level = isolation or isolation_level()
    except SandboxError as exc:  # nothing isolates here: run nothing (fail closed)
        return SandboxRun([CaseOutcome("not_run") for _ in cases], isolation="none", error=str(exc))
    if level not in ISOLATION_LEVELS:
        raise ValueError(f"isolation must be one of {ISOLATION_LEVELS}, got {level!r}")
    payloads: list
    if kind == "stdio":
        payloads = [{"input": str(c.get("input", ""))} for c in cases]
    else:
        assert entry_point  # checked above, before any work
        payloads = _compile_function_tests(
            setup or "", [str(c.get("code", "")) for c in cases], entry_point
        )
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
# Why each level is unusable here (None: it works), filled by the first probe.
_probe_results: dict[IsolationLevel, str | None] = {}
_weak_warning_logged = False


def weak_isolation_allowed() -> bool:
    """Whether ``INTBENCH_SANDBOX_ALLOW_WEAK=1`` allows the ``rlimits`` level (read per call)."""
    return os.environ.get(ALLOW_WEAK_ENV, "").strip() == "1"


def isolation_level(*, allow_weak: bool | None = None) -> IsolationLevel:
    """Return the strongest isolation level that works on this machine.

    Each candidate is probed once per process by running a program through it
    that checks the isolation the level promises.  ``rlimits`` is a candidate
    only when ``allow_weak`` (default: :func:`weak_isolation_allowed`) says so;
    otherwise, with neither ``bwrap`` nor ``unshare`` working, this raises
    :class:`SandboxError` and no untrusted code runs.
    """
    global _weak_warning_logged
    allow_weak = weak_isolation_allowed() if allow_weak is None else allow_weak
    candidates = ISOLATION_LEVELS if allow_weak else ("bwrap", "unshare")
    with _level_lock:
        for level in candidates:
            if level not in _probe_results:
                _probe_results[level] = _probe(level)
                logger.info("sandbox isolation %r: %s", level, _probe_results[level] or "works")
            if _probe_results[level] is None:
                break
        else:
            reasons = "; ".join(f"{level}: {_probe_results[level]}" for level in candidates)
            raise SandboxError(
                f"no isolating sandbox works here ({reasons}): install bubblewrap "
                f"(apt-get install bubblewrap), or set {ALLOW_WEAK_ENV}=1 to accept "
                "rlimits only (no filesystem or network isolation)"
            )
        if level == "rlimits" and not _weak_warning_logged:
            _weak_warning_logged = True
            logger.warning(
                "sandbox runs untrusted code under rlimits only (%s=1): it can reach the "
                "network and read files visible to its user",
                ALLOW_WEAK_ENV,
            )
        return level


def _probe_program(check_isolation: bool) -> str:
    """A program that prints ``ok`` only where the sandbox isolates as promised.

    It imports stdlib modules after the uid drop (the interpreter is readable
    by the sandbox uid); with ``check_isolation`` it also checks that this
    package's directory, the site-packages and every network interface but
    the namespace's own loopback are out of reach.
    """
    return f"""
import fractions, json, os, socket, sys, sysconfig
def leaks():
    if os.path.exists({str(Path(__file__).parent)!r}):
        yield "host files visible"
    site = sysconfig.get_paths()["purelib"]
    if os.path.isdir(site) and os.listdir(site):
        yield "site-packages visible"
    if [name for _, name in socket.if_nameindex() if name != "lo"]:
        yield "network interfaces visible"
found = list(leaks()) if {check_isolation} else []
print(input() if not found else found)
"""


def _probe(level: IsolationLevel) -> str | None:
    """Why ``level`` is unusable here, or ``None`` if the probe program ran through it."""
    tool = {"bwrap": "bwrap", "unshare": "unshare"}.get(level)
    if tool and shutil.which(tool) is None:
        return f"{tool} not found on PATH"
    limits = SandboxLimits(time_limit_s=5.0, total_time_s=10.0)
    program = _probe_program(check_isolation=level != "rlimits")
    try:
        with _Session(level, limits) as session:
            run = session.run(
                {"kind": "stdio", "program": program, "entry_point": None, "setup": "",
                 "limits": dataclasses.asdict(session.limits)},
                [{"input": "ok"}],
            )  # fmt: skip
    except (OSError, SandboxError) as exc:
        return str(exc)
    outcome = run.outcomes[0]
    if run.error or outcome.stdout != "ok\n":
        return run.error or (
            f"probe program failed: {outcome.status} {outcome.stdout[-300:]!r} "
            f"{outcome.stderr[-300:]!r}"
        )
    return None


def _base_interpreter() -> tuple[str, str]:
    """The base (non-venv) interpreter and its prefix: the sandbox runs stdlib only."""
    executable = os.path.realpath(getattr(sys, "_base_executable", None) or sys.executable)
    return executable, os.path.realpath(sys.base_prefix)


def _runner_argv(uid: int, prelude: str = "") -> list[str]:
    executable, _ = _base_interpreter()
    # -I: ignore env vars and user site; -S: no site-packages; -B: write no .pyc.
    return [executable, "-I", "-S", "-B", "-c", prelude + _BOOTSTRAP, str(uid)]


@functools.cache
def _visible_filesystem() -> tuple[tuple[str, str, str], ...]:
    """What the ``bwrap`` and ``unshare`` levels show, as ``(op, dest, source)``.

    ``op`` is ``ro-bind`` (read-only bind of ``source``), ``symlink`` (to
    ``source``), ``tmpfs`` (an empty directory hiding what ``dest`` holds) or
    ``dir`` (a 0755 directory, so the sandbox uid can traverse parents).
    Only system libraries and the base Python prefix without its
    site-packages are visible; parents come before their children.
    """
    mounts = _library_mounts() + _python_mounts()
    mounts.sort(key=lambda mount: mount[1].count("/"))
    return tuple(_parent_dirs(mounts) + mounts)


def _library_mounts() -> list[tuple[str, str, str]]:
    """The system library directories (or their symlinks) and the loader's cache."""
    mounts: list[tuple[str, str, str]] = []
    for lib in ("/usr/lib", "/usr/lib64", "/usr/lib32"):
        if os.path.isdir(lib) and not os.path.islink(lib):
            mounts.append(("ro-bind", lib, lib))
    for lib in ("/lib", "/lib64", "/lib32"):
        if os.path.islink(lib):
            mounts.append(("symlink", lib, os.readlink(lib)))
        elif os.path.isdir(lib):
            mounts.append(("ro-bind", lib, lib))
    if os.path.exists("/etc/ld.so.cache"):
        mounts.append(("ro-bind", "/etc/ld.so.cache", "/etc/ld.so.cache"))
    return mounts


def _python_mounts() -> list[tuple[str, str, str]]:
    """The base Python prefix and interpreter, its site-packages hidden."""
    executable, prefix = _base_interpreter()
    mounts = [("ro-bind", prefix, prefix)]
    exe_dir = os.path.dirname(executable)
    if not exe_dir.startswith(prefix + os.sep):
        mounts.append(("ro-bind", exe_dir, exe_dir))
    # Hide the base interpreter's installed packages (and any data sets in them).
    paths = sysconfig.get_paths(vars={"base": prefix, "platbase": prefix})
    for site in sorted({os.path.realpath(paths[key]) for key in ("purelib", "platlib")}):
        if os.path.isdir(site) and site.startswith(prefix + os.sep):
            mounts.append(("tmpfs", site, ""))
    return mounts


def _parent_dirs(mounts: list[tuple[str, str, str]]) -> list[tuple[str, str, str]]:
    """``dir`` entries for the missing parents of the mounts and the work directory.

    Missing parents would be created with mode 0700 by privileged bwrap, which
    the sandbox uid could not traverse: create them world-readable first.
    """
    targets = {dest for _, dest, _ in mounts} | {_WORKDIR}
    parents = sorted(
        {str(p) for t in targets for p in Path(t).parents if str(p) != "/"} - targets,
        key=lambda p: p.count("/"),
    )
    return [("dir", parent, "") for parent in parents]


def _bwrap_command(uid: int, limits: SandboxLimits, as_root: bool) -> list[str]:
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
        # --disable-userns: the program cannot nest a user namespace of its own.
        args += ["--unshare-user", "--disable-userns", "--uid", str(uid), "--gid", str(os.getgid())]
    bwrap_op = {"ro-bind": "--ro-bind", "symlink": "--symlink", "tmpfs": "--tmpfs"}
    for op, dest, source in _visible_filesystem():
        if op == "dir":
            args += ["--perms", "0755", "--dir", dest]
        elif op == "tmpfs":
            args += ["--tmpfs", dest]
        else:
            args += [bwrap_op[op], source, dest]
    args += [
        "--proc", "/proc", "--dev", "/dev",
        # multiprocessing's semaphores need a writable /dev/shm: a small private one.
        "--perms", "01777", "--size", str(_SHM_BYTES), "--tmpfs", "/dev/shm",
        "--perms", "01777", "--size", str(limits.workdir_mb * 1024 * 1024), "--tmpfs", _WORKDIR,
        "--chdir", _WORKDIR,
        "--setenv", "HOME", _WORKDIR, "--setenv", "TMPDIR", _WORKDIR,
        "--setenv", "LANG", "C.UTF-8", "--setenv", "PATH", "/usr/bin:/bin",
        "--",
    ]  # fmt: skip
    return args + _runner_argv(uid)


def _unshare_command(uid: int, limits: SandboxLimits, as_root: bool, root: str) -> list[str]:
    """``unshare`` namespaces, then the runner builds its root under ``root`` and pivots.

    The runner starts from the interpreter's host path, as root, in a new
    mount namespace; ``_sandbox_mounts.py`` (run before the runner drops its
    privileges) mounts the same read-only view bubblewrap gets on a tmpfs at
    ``root`` (a directory the parent created) and switches to it with ``pivot_root``.
    Paths keep their host names, so the interpreter needs no re-exec, and a
    prefix under a home directory only its owner may enter (``/root``, mode
    0700) becomes reachable: its parents are recreated mode 0755.
    """
    args = [shutil.which("unshare") or "unshare", "--mount", "--net", "--ipc", "--uts", "--pid"]
    args += ["--fork", "--kill-child"]
    if not as_root:
        args += ["--user", "--map-current-user"]
    spec = {
        "root": root,
        "mounts": _visible_filesystem(),
        "workdir": _WORKDIR,
        "workdir_bytes": limits.workdir_mb * 1024 * 1024,
        "shm_bytes": _SHM_BYTES,
    }
    prelude = f"{_MOUNTS_SOURCE}\n_mounts_enter_root({json.dumps(spec)!r})\n"
    return args + ["--"] + _runner_argv(uid, prelude)


# ---------------------------------------------------------------- memory bound


MemoryBound = Literal["cgroup2", "cgroup1", "rlimit", "none"]
# Tasks of the run beyond the program's own: bwrap's or unshare's parent and the runner.
_CGROUP_EXTRA_TASKS = 4
# The runner's own address space exceeds a test process's by this much.
_RUNNER_HEADROOM_MB = 256
_cgroup_lock = threading.Lock()
_cgroup_parents_cache: list[tuple[MemoryBound, list[str]] | None] = []


@dataclass
class _RunCgroup:
    """The cgroup(s) of one run: one directory per hierarchy (v1) or one (v2)."""

    mechanism: MemoryBound
    directories: list[str]

    @property
    def procs_files(self) -> list[str]:
        return [os.path.join(d, "cgroup.procs") for d in self.directories]


def _own_cgroups(self_cgroup: str) -> dict[str, str]:
    """Our cgroup per controller from ``/proc/self/cgroup`` text (``""`` for v2)."""
    own = {}
    for line in self_cgroup.splitlines():
        _, controllers, path = line.split(":", 2)
        for controller in controllers.split(",") if controllers else [""]:
            own[controller] = path
    return own


def _cgroup_mounts(mounts: str) -> dict[str, str]:
    """Mount point per v1 controller, and ``""`` for the v2 hierarchy, from /proc/self/mounts."""
    found: dict[str, str] = {}
    for line in mounts.splitlines():
        fields = line.split()
        if len(fields) < 4:
            continue
        if fields[2] == "cgroup2":
            found.setdefault("", fields[1])
        elif fields[2] == "cgroup":
            for option in fields[3].split(","):
                if option in ("memory", "pids"):
                    found.setdefault(option, fields[1])
    return found


def _cgroup_parents(mounts: str, self_cgroup: str) -> tuple[MemoryBound, list[str]] | None:
    """Where per-run cgroups with a memory (and pids) limit can be made, or ``None``.

    cgroup v2 needs ``memory`` and ``pids`` delegated to a child of our own
    cgroup (possible at the hierarchy's root, or where our cgroup holds no
    process); v1 makes per-run children of our memory and pids cgroups.
    """
    where, own = _cgroup_mounts(mounts), _own_cgroups(self_cgroup)
    if "" in where and "" in own:
        base = where[""] + own[""].rstrip("/")
        try:
            with open(os.path.join(base, "cgroup.controllers"), encoding="ascii") as fh:
                controllers = fh.read().split()
            if {"memory", "pids"} <= set(controllers):
                parent = os.path.join(base, "intbench-sandbox")
                _write(os.path.join(base, "cgroup.subtree_control"), "+memory +pids")
                os.makedirs(parent, exist_ok=True)
                _write(os.path.join(parent, "cgroup.subtree_control"), "+memory +pids")
                return "cgroup2", [parent]
        except OSError as exc:
            logger.info("cgroup v2 memory limits unavailable: %s", exc)
    if "memory" in where and "memory" in own:
        parents = [
            where[c] + own[c].rstrip("/") for c in ("memory", "pids") if c in where and c in own
        ]
        if all(os.access(p, os.W_OK) for p in parents):
            return "cgroup1", parents
    return None


def _write(path: str, text: str) -> None:
    with open(path, "w", encoding="ascii") as fh:
        fh.write(text)


def _cached_cgroup_parents() -> tuple[MemoryBound, list[str]] | None:
    with _cgroup_lock:
        if not _cgroup_parents_cache:
            try:
                with open("/proc/self/mounts", encoding="utf-8") as mounts:
                    with open("/proc/self/cgroup", encoding="utf-8") as own:
                        _cgroup_parents_cache.append(_cgroup_parents(mounts.read(), own.read()))
            except (OSError, ValueError) as exc:
                logger.info("cgroups unreadable: %s", exc)
                _cgroup_parents_cache.append(None)
        return _cgroup_parents_cache[0]


def _create_run_cgroup(
    limits: SandboxLimits, parents: tuple[MemoryBound, list[str]] | None
) -> _RunCgroup | None:
    """A fresh cgroup with this run's memory and pids limits, or ``None`` if none can be made."""
    if parents is None:
        return None
    mechanism, directories = parents
    name = f"run-{uuid.uuid4().hex[:16]}"
    run = _RunCgroup(mechanism, [])
    memory = str(limits.total_memory_mb * 1024 * 1024)
    pids = str(limits.max_processes + _CGROUP_EXTRA_TASKS)
    settings = (
        [("memory.max", memory), ("memory.swap.max", "0"), ("pids.max", pids)]
        if mechanism == "cgroup2"
        else [("memory.limit_in_bytes", memory), ("memory.memsw.limit_in_bytes", memory),
              ("pids.max", pids)]
    )  # fmt: skip
    try:
        for parent in directories:
            directory = os.path.join(parent, name)
            os.mkdir(directory)
            run.directories.append(directory)
            for file, value in settings:
                path = os.path.join(directory, file)
                if os.path.exists(path):  # e.g. no swap accounting, or no pids here
                    _write(path, value)
        if not os.path.exists(os.path.join(run.directories[0], settings[0][0])):
            raise OSError(f"{settings[0][0]} missing in {run.directories[0]}")
    except OSError as exc:
        logger.warning("cannot create a sandbox cgroup, using the rlimit bound: %s", exc)
        _remove_run_cgroup(run)
        return None
    return run


def _remove_run_cgroup(run: _RunCgroup) -> None:
    """Remove the run's cgroups once its processes are gone (they may still be exiting)."""
    for directory in run.directories:
        for _ in range(50):
            try:
                os.rmdir(directory)
                break
            except FileNotFoundError:
                break
            except OSError:
                time.sleep(0.01)
        else:
            logger.error("cannot remove sandbox cgroup %s", directory)


def _enter_cgroup_command(cmd: list[str], run: _RunCgroup) -> list[str]:
    """``cmd`` behind a shell that first moves itself into the run's cgroups.

    The process joins before it execs ``cmd``, so the runner and all it forks
    are inside from the start; if joining fails, nothing runs.
    """
    script = 'while [ "$1" != -- ]; do echo $$ > "$1" || exit 126; shift; done; shift; exec "$@"'
    return [shutil.which("sh") or "/bin/sh", "-c", script, "sh", *run.procs_files, "--", *cmd]


def _rlimit_bounded(limits: SandboxLimits) -> SandboxLimits:
    """``limits`` with few enough processes that their address spaces fit the total.

    Without a cgroup, RLIMIT_NPROC on the run's own uid times RLIMIT_AS is the
    bound: at most ``n = max(2, total_memory_mb // memory_mb)`` tasks (runner
    and test process included) of ``memory_mb`` each, plus the runner's
    headroom.
    """
    processes = max(2, min(limits.max_processes, limits.total_memory_mb // limits.memory_mb))
    return dataclasses.replace(limits, max_processes=processes)


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
        # Only an owner that died mid-run can have left processes behind: a clean
        # release marks the lock file, so the /proc scan is needed only without it.
        released_clean = os.pread(fd, len(_RELEASED_CLEAN), 0) == _RELEASED_CLEAN
        os.pwrite(fd, b"in use", 0)
        os.ftruncate(fd, len(b"in use"))
        if not released_clean and _kill_uid(uid):  # survivors we cannot kill: skip this uid
            os.close(fd)
            continue
        return uid, fd
    raise SandboxError("too many concurrent sandboxes: uid pool exhausted")


_RELEASED_CLEAN = b"released clean"


def _release_uid(uid: int, lock_fd: int) -> None:
    """Give the uid back once no process of it is left; otherwise keep it reserved."""
    survivors = _kill_uid(uid)
    if survivors:  # never hand a uid with live processes to another run
        logger.error("sandbox uid %d keeps processes %s alive", uid, survivors)
        return
    os.pwrite(lock_fd, _RELEASED_CLEAN, 0)
    os.ftruncate(lock_fd, len(_RELEASED_CLEAN))
    os.close(lock_fd)


def _pids_of_uid(uid: int) -> list[int]:
    """Processes whose real uid is ``uid`` (read from /proc)."""
    pids = []
    wanted = f"\nUid:\t{uid}\t".encode()
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/status", "rb") as fh:
                status = fh.read()
        except OSError:
            continue
        # Zombies are already dead; they only wait for their parent to reap them.
        if wanted in status and b"\nState:\tZ" not in status:
            pids.append(int(entry))
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


def _wait_for_exit(pid: int, timeout_s: float) -> None:
    """Block until ``pid`` exits or ``timeout_s`` passes, without reaping it.

    A pidfd wakes us the moment the process ends, where ``Popen.wait(timeout)``
    would poll with growing sleeps.
    """
    pidfd = os.pidfd_open(pid)
    try:
        select.select([pidfd], [], [], timeout_s)
    finally:
        os.close(pidfd)


# ---------------------------------------------------------------- session


class _Session:
    """One sandboxed runner process and its framed pipe protocol."""

    def __init__(self, level: IsolationLevel, limits: SandboxLimits) -> None:
        self.level = level
        # The limits the runner must apply: __enter__ may lower max_processes.
        self.limits = limits
        self.as_root = os.geteuid() == 0
        self.uid: int | None = None
        self.uid_lock: int | None = None
        self.workdir: str | None = None
        self.cgroup: _RunCgroup | None = None
        self.memory_bound: MemoryBound = "none"
        self.proc: subprocess.Popen[bytes] | None = None
        self.stderr = bytearray()
        self._buffer = bytearray()

    def __enter__(self) -> _Session:
        try:
            self.uid = os.getuid()
            if self.as_root and self.level != "rlimits":
                self.uid, self.uid_lock = _acquire_uid()
            self._bound_memory()
            cwd = None
            if self.level == "bwrap":
                cmd = _bwrap_command(self.uid, self.limits, self.as_root)
            elif self.level == "unshare":
                # An empty mount point for the sandbox's root, private to its namespace.
                self.workdir = tempfile.mkdtemp(prefix="intbench-sandbox-root-")
                cmd = _unshare_command(self.uid, self.limits, self.as_root, self.workdir)
            else:
                self.workdir = cwd = tempfile.mkdtemp(prefix="intbench-sandbox-")
                # rlimits only: the runner keeps our uid (no namespaces to
                # make the interpreter reachable for another one).
                cmd = _runner_argv(os.getuid())
            if self.cgroup is not None:
                cmd = _enter_cgroup_command(cmd, self.cgroup)
            env = {
                "PATH": "/usr/bin:/bin",
                "LANG": "C.UTF-8",
                "HOME": cwd or _WORKDIR,
                "TMPDIR": cwd or _WORKDIR,
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
        for pipe in self._pipes():
            os.set_blocking(pipe.fileno(), False)
        return self

    def _pipes(self) -> tuple[IO[bytes], IO[bytes], IO[bytes]]:
        """The runner's stdin, stdout and stderr (started with all three piped)."""
        proc = self.proc
        if proc is None or proc.stdin is None or proc.stdout is None or proc.stderr is None:
            raise SandboxError("the sandbox runner is not running")
        return proc.stdin, proc.stdout, proc.stderr

    def _bound_memory(self) -> None:
        """Bound the run's total memory: its own cgroup, else the rlimit product bound.

        The product bound needs RLIMIT_NPROC, which the kernel does not apply to root.
        """
        self.cgroup = _create_run_cgroup(self.limits, _cached_cgroup_parents())
        if self.cgroup is not None:
            self.memory_bound = self.cgroup.mechanism
        elif self.uid != 0:
            self.limits = _rlimit_bounded(self.limits)
            self.memory_bound = "rlimit"

    def __exit__(self, *exc_info: object) -> None:
        if self.proc is not None:
            # EOF tells a healthy runner to exit, which ends its PID namespace
            # and everything in it; the group kill covers the other cases.
            try:
                self._pipes()[0].close()
                _wait_for_exit(self.proc.pid, timeout_s=0.5)
            except OSError:
                pass
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
            self.proc.wait()
            for pipe in self._pipes()[1:]:
                pipe.close()
        if self.uid is not None and self.uid_lock is not None:
            _release_uid(self.uid, self.uid_lock)
        if self.cgroup is not None:
            _remove_run_cgroup(self.cgroup)
        if self.workdir:
            shutil.rmtree(self.workdir, ignore_errors=True)

    def run(self, config: dict, payloads: list) -> SandboxRun:
        """Run every payload: ``{"input": str}`` dicts (stdio) or :class:`_FunctionTest` objects."""
        start = time.monotonic()
        total_deadline = start + self.limits.total_time_s
        outcomes: list[CaseOutcome] = []
        run = SandboxRun(
            outcomes=outcomes, isolation=self.level, uid=self.uid, memory_bound=self.memory_bound
        )
        try:
            self._start(config, min(total_deadline, start + _STARTUP_TIMEOUT_S))
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
                if isinstance(payload, _FunctionTest):
                    outcomes.append(self._run_function_test(payload, deadline))
                else:
                    outcomes.append(_outcome_from(self._exchange(payload, deadline)))
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

    def _start(self, config: dict, deadline: float) -> None:
        """Send the runner its configuration (never the tests) and await its greeting."""
        runner_config = {key: config[key] for key in _RUNNER_CONFIG_KEYS}
        # The session may have tightened the limits (e.g. processes, to bound total memory).
        runner_config["limits"] = dataclasses.asdict(self.limits)
        runner_config["scratch_dirs"] = [] if self.level == "rlimits" else _PRIVATE_SCRATCH_DIRS
        self._write(_runner_code(_RUNNER_SOURCE), deadline)
        self._send(runner_config, deadline)
        greeting = self._receive(deadline)
        if "error" in greeting:
            raise SandboxError(f"the sandbox refused to start: {greeting['error']}")
        if greeting.get("ready") is not True:
            raise SandboxError(f"unexpected runner greeting {greeting!r}")

    def _run_function_test(self, test: _FunctionTest, deadline: float) -> CaseOutcome:
        """Run one test's trusted code here against the program's function in the sandbox."""
        function = _SandboxedFunction(self, deadline)
        failure = test.run(function)
        if function.broken is not None:
            raise function.broken  # the runner is gone or wedged: the run stops
        # Ending the test only kills and reaps, so it needs little time of its own.
        end = self._exchange({"end": True}, time.monotonic() + _RESPONSE_GRACE_S)
        return _function_outcome(_outcome_from(end), function, failure, test)

    def _exchange(self, message: dict, deadline: float) -> dict:
        self._send(message, deadline)
        return self._receive(deadline)

    def _finish(self, run: SandboxRun, start: float) -> SandboxRun:
        run.seconds = round(time.monotonic() - start, 4)
        run.runner_stderr = self.stderr.decode("utf-8", "replace")
        if run.error:
            logger.warning("%s; runner stderr: %s", run.error, run.runner_stderr[-500:])
        return run

    def _send(self, message: dict, deadline: float) -> None:
        data = json.dumps(message).encode()
        self._write(_HEADER.pack(len(data)) + data, deadline)

    def _write(self, data: bytes, deadline: float) -> None:
        view = memoryview(data)
        fd = self._pipes()[0].fileno()
        try:  # a frame usually fits the pipe at once: no selector needed
            view = view[os.write(fd, view) :]
        except BlockingIOError:
            pass
        if not view:
            return
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
        """The runner's next frame (a JSON object); ``SandboxError`` if malformed."""
        limits = self.limits
        # JSON escaping can make a string up to 6 times longer.
        limit = 6 * (limits.max_output_bytes + limits.max_stderr_bytes + MAX_VALUE_BYTES) + 4096
        _, stdout, stderr = self._pipes()
        out_fd, err_fd = stdout.fileno(), stderr.fileno()
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
                        return _json_object(frame)
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


def _json_object(frame: bytes) -> dict:
    try:
        message = json.loads(frame)
    except ValueError as exc:
        raise SandboxError(f"runner sent a malformed frame: {exc}") from None
    if not isinstance(message, dict):
        raise SandboxError("runner sent a frame that is not an object")
    return message


def _outcome_from(frame: dict) -> CaseOutcome:
    """The outcome in a runner's ``{"outcome": {...}}`` frame; ``SandboxError`` otherwise."""
    outcome = frame.get("outcome") if set(frame) == {"outcome"} else None
    if not isinstance(outcome, dict) or outcome.get("status") not in _RUNNER_STATUSES:
        raise SandboxError(f"runner sent no outcome: {str(frame)[:200]}")
    names = {f.name for f in dataclasses.fields(CaseOutcome)}
    return CaseOutcome(**{k: v for k, v in outcome.items() if k in names})


# ---------------------------------------------------------------- function tests

_RUNNER_CONFIG_KEYS = ("kind", "program", "entry_point")
# Writable directories the bwrap and unshare levels make private to one run (beside
# the work directory): the runner empties them after every test.
_PRIVATE_SCRATCH_DIRS = ["/dev/shm"]
_RUNNER_STATUSES = {"ok", "runtime_error", "timeout", "output_limit"}
_STOP_STATUSES = _RUNNER_STATUSES - {"ok"}
_TEST_FILE, _SETUP_FILE = "test.py", "setup.py"


class _CaseStopped(BaseException):
    """The program's function cannot answer any more: the test fails.

    A ``BaseException``, so that test code catching ``Exception`` cannot
    swallow an exit, a timeout or a malformed reply of the program.
    """

    def __init__(self, status: str, detail: str = "") -> None:
        super().__init__(detail or status)
        self.status = status
        self.detail = detail


class _ProgramError(Exception):
    """An exception of the program's function that is no builtin exception here."""


class _FunctionTest:
    """One function test: trusted code, compiled here and run in this process."""

    def __init__(self, setup: CodeType, setup_source: str, source: str, entry_point: str) -> None:
        self.setup = setup
        self.code = _compile_trusted(source, _TEST_FILE)
        self.sources = {_SETUP_FILE: setup_source, _TEST_FILE: source}
        self.entry_point = entry_point

    def run(self, function: _SandboxedFunction) -> BaseException | None:
        """Run the test; the exception that ended it early, or ``None`` if it ran to its end."""
        namespace: dict = {"__name__": "__test__"}
        try:
            exec(self.setup, namespace)
            # Tests may call the function by its own name too (HumanEval/33 does).
            namespace["candidate"] = namespace[self.entry_point] = function
            exec(self.code, namespace)
        except (Exception, _CaseStopped) as exc:  # noqa: BLE001 - any failure fails the test
            return exc
        return None

    def traceback(self, exc: BaseException) -> str:
        """``exc`` as a traceback through the test's own lines (never this module's)."""
        lines = ["Traceback (most recent call last):\n"]
        for frame, lineno in traceback.walk_tb(exc.__traceback__):
            filename = frame.f_code.co_filename
            if filename not in self.sources:
                continue
            lines.append(f'  File "{filename}", line {lineno}, in {frame.f_code.co_name}\n')
            source_lines = self.sources[filename].splitlines()
            if 0 < lineno <= len(source_lines) and source_lines[lineno - 1].strip():
                lines.append(f"    {source_lines[lineno - 1].strip()}\n")
        return "".join(lines + traceback.format_exception_only(type(exc), exc))


def _compile_trusted(source: str, filename: str) -> CodeType:
    try:
        return compile(source, filename, "exec", dont_inherit=True)
    except (SyntaxError, ValueError) as exc:
        raise ValueError(f"the tests' {filename} does not compile: {exc}") from None


def _compile_function_tests(
    setup: str, sources: list[str], entry_point: str
) -> list[_FunctionTest]:
    setup_code = _compile_trusted(setup, _SETUP_FILE)
    return [_FunctionTest(setup_code, setup, source, entry_point) for source in sources]


class _SandboxedFunction:
    """``candidate`` of trusted test code: each call runs the program's function in
    the sandbox and returns a plain-value copy of its return value.

    The first call that gets no plain value (the process ended, timed out or
    answered garbage) stops the test, and every later call raises the same stop.
    """

    def __init__(self, session: _Session, deadline: float) -> None:
        self.session = session
        self.deadline = deadline
        self.stop: _CaseStopped | None = None
        self.broken: BaseException | None = None  # the runner itself failed
        self.tracebacks: list[str] = []  # of exceptions the program's function raised

    def __call__(self, *args: object, **kwargs: object) -> object:
        if self.stop is None:
            try:
                return self._call(args, kwargs)
            except _CaseStopped as stop:
                self.stop = stop
        raise self.stop

    def _call(self, args: tuple, kwargs: dict) -> object:
        if time.monotonic() >= self.deadline:
            raise _CaseStopped("timeout", "the test ran past its time limit")
        try:
            request = json.dumps(encode_value([list(args), kwargs]))
        except (TypeError, ValueError) as exc:
            raise _CaseStopped("crashed", f"a test argument cannot be sent: {exc}") from None
        try:
            frame = self.session._exchange({"call": request}, self.deadline)
        except (TimeoutError, EOFError, OSError, SandboxError) as exc:
            self.broken = exc
            raise _CaseStopped("crashed", f"sandbox died: {exc}") from None
        if set(frame) == {"stopped"} and frame["stopped"] in _STOP_STATUSES:
            raise _CaseStopped(frame["stopped"])
        if set(frame) != {"reply"} or not isinstance(frame["reply"], str):
            self.broken = SandboxError(f"runner sent no reply: {str(frame)[:200]}")
            raise _CaseStopped("crashed", str(self.broken))
        kind, value = _parse_reply(frame["reply"], self.deadline)
        if kind == "raised":
            name, message, student_traceback = value
            self.tracebacks.append(student_traceback)
            raise _program_exception(name, message)
        return value


def _parse_reply(text: str, deadline: float) -> tuple[str, Any]:
    """``("return", plain value)`` or ``("raised", (name, message, traceback))``.

    The reply comes from the program's process, so anything but exactly these
    shapes stops the test, and so does a value still being decoded at ``deadline``
    (the call's time limit: hash-colliding set items make decoding quadratic).
    """
    try:
        if len(text) > MAX_VALUE_BYTES:
            raise ValueError("larger than 1 MiB")
        reply = json.loads(text)
        if type(reply) is dict and set(reply) == {"return"}:
            return "return", decode_value(reply["return"], deadline=deadline)
        raised = reply.get("raised") if type(reply) is dict and set(reply) == {"raised"} else None
        if type(raised) is list and len(raised) == 3 and all(type(x) is str for x in raised):
            return "raised", tuple(raised)
        raise ValueError("neither a return value nor an exception")
    except TimeoutError as exc:
        raise _CaseStopped("timeout", str(exc)) from None
    except (ValueError, TypeError, RecursionError) as exc:
        detail = f"the function's reply is not a plain value: {exc}"
        raise _CaseStopped("runtime_error", detail) from None


def _program_exception(name: str, message: str) -> Exception:
    """The exception the program's function raised, rebuilt as the builtin of that
    name (so a test may expect it), else as a :class:`_ProgramError`."""
    cls = getattr(builtins, name, None)
    iteration = (StopIteration, StopAsyncIteration)  # would end a test's loop quietly
    if isinstance(cls, type) and issubclass(cls, Exception) and not issubclass(cls, iteration):
        try:
            return cls(message)
        except Exception:  # noqa: BLE001 - e.g. UnicodeDecodeError needs other arguments
            pass
    return _ProgramError(f"{name}: {message}")


def _function_outcome(
    end: CaseOutcome, function: _SandboxedFunction, failure: BaseException | None,
    test: _FunctionTest,
) -> CaseOutcome:  # fmt: skip
    """The verdict of one function test, from its trusted run and the runner's account."""
    end.stderr += "".join(function.tracebacks)
    if end.status != "ok":  # the process ended, ran too long or printed too much
        return end
    stop = function.stop
    if stop is not None:
        end.status = stop.status
        end.stderr += f"\n[sandbox] {stop.detail}\n" if stop.detail else ""
    elif failure is not None:
        end.status = "runtime_error"
        end.stderr += test.traceback(failure)
    return end


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
