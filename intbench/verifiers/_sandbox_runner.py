"""Runner executed *inside* the sandbox (standard library only).

The trusted parent starts this script with ``python -I -S -c <source> <uid>``
and talks to it over stdin/stdout with length-prefixed JSON frames:

1. parent -> runner: ``{"kind", "program", "entry_point", "setup", "limits"}``
2. runner -> parent: ``{"ready": true}``
3. for each test, parent -> runner: ``{"input": str}`` (stdio) or ``{"code": str}``
   (function); runner -> parent: the outcome of running the program on it.

Each test runs in a freshly forked child, so tests cannot see each other's
state, and expected outputs never reach this process: the parent compares.
When the runner is PID 1 of its own PID namespace (bwrap/unshare levels) the
program cannot kill it (the kernel drops SIGKILL sent to init from inside)
and ``kill(-1)`` reliably removes every process the program left behind.
"""

import json
import os
import resource
import selectors
import signal
import struct
import sys
import time
import traceback

_HEADER = struct.Struct(">I")
# Frames of this script (run with ``-c``) are hidden from the program's tracebacks.
_RUNNER_FILE = sys._getframe().f_code.co_filename
_MIB = 1024 * 1024


def _read_exact(fd, size):
    chunks = []
    while size:
        chunk = os.read(fd, size)
        if not chunk:
            raise EOFError
        chunks.append(chunk)
        size -= len(chunk)
    return b"".join(chunks)


def _recv(fd):
    (size,) = _HEADER.unpack(_read_exact(fd, _HEADER.size))
    return json.loads(_read_exact(fd, size))


def _send(fd, message):
    data = json.dumps(message).encode()
    os.write(fd, _HEADER.pack(len(data)))
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def _drop_privileges(uid):
    """Become ``uid`` (the runner may start as root with only SETUID/SETGID)."""
    if os.getuid() != uid or os.geteuid() != uid:
        os.setgroups([])
        os.setresgid(uid, uid, uid)
        os.setresuid(uid, uid, uid)
    # Non-dumpable: the program (same uid) cannot ptrace this process or read
    # its /proc/<pid>/mem, fd or environ entries.
    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(4, 0, 0, 0, 0)  # PR_SET_DUMPABLE
    except Exception:  # noqa: BLE001 - best effort: other layers still hold
        pass


def _user_traceback(exc):
    """Format ``exc`` without the runner's own frames."""
    tb = exc.__traceback__
    while tb is not None and tb.tb_frame.f_code.co_filename == _RUNNER_FILE:
        tb = tb.tb_next
    return "".join(traceback.format_exception(type(exc), exc, tb))


def _child(config, case, stdin_fd, out_fd, err_fd):
    """Body of the forked test process; never returns."""
    try:
        os.setpgid(0, 0)
        os.dup2(stdin_fd, 0)
        os.dup2(out_fd, 1)
        os.dup2(err_fd, 2)
        os.closerange(3, 65536)
        limits = config["limits"]
        cpu = int(limits["time_limit_s"]) + 1
        memory = limits["memory_mb"] * _MIB
        for res, value in (
            (resource.RLIMIT_CPU, cpu),
            (resource.RLIMIT_AS, memory),
            (resource.RLIMIT_DATA, memory),
            (resource.RLIMIT_FSIZE, limits["file_size_mb"] * _MIB),
            (resource.RLIMIT_NPROC, limits["max_processes"]),
            (resource.RLIMIT_NOFILE, limits["max_open_files"]),
            (resource.RLIMIT_CORE, 0),
        ):
            resource.setrlimit(res, (value, value))
        sys.stdin = open(0, encoding="utf-8", errors="replace", closefd=False)
        sys.stdout = open(1, "w", encoding="utf-8", closefd=False)
        sys.stderr = open(2, "w", encoding="utf-8", closefd=False)
    except BaseException:  # noqa: BLE001 - report harness failures as exit 3
        os._exit(3)
    code = 0
    try:
        import linecache

        # Let tracebacks quote the program's and tests' source lines.
        for name, source in (
            ("solution.py", config["program"]),
            ("setup.py", config["setup"]),
            ("test.py", case.get("code", "")),
        ):
            linecache.cache[name] = (len(source), None, source.splitlines(True), name)
        if config["kind"] == "stdio":
            program = compile(config["program"], "solution.py", "exec")
            exec(program, {"__name__": "__main__", "__builtins__": __builtins__})
        else:
            namespace = {"__name__": "solution", "__builtins__": __builtins__}
            exec(compile(config["program"], "solution.py", "exec"), namespace)
            if config["setup"]:
                exec(compile(config["setup"], "setup.py", "exec"), namespace)
            entry = config["entry_point"]
            if entry not in namespace or not callable(namespace[entry]):
                raise NameError(f"the program does not define a function named {entry!r}")
            namespace["candidate"] = namespace[entry]
            exec(compile(case["code"], "test.py", "exec"), namespace)
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    except BaseException as exc:  # noqa: BLE001 - any failure of the program
        try:
            sys.stderr.write(_user_traceback(exc))
        except BaseException:  # noqa: BLE001
            pass
        code = 1
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except BaseException:  # noqa: BLE001 - e.g. output size limit hit on flush
        code = code or 1
    os._exit(code)


def _drain(fd, buffer, cap, selector, open_fds):
    """Read what ``fd`` has now into ``buffer`` (at most ``cap`` bytes kept).

    Returns whether the writer went past ``cap``.
    """
    while True:
        try:
            chunk = os.read(fd, 65536)
        except BlockingIOError:
            return False
        if not chunk:
            if fd in open_fds:
                selector.unregister(fd)
                open_fds.discard(fd)
            return False
        buffer += chunk
        if len(buffer) > cap:
            del buffer[cap:]
            return True


def _reap_all(child_pid):
    """Kill every leftover process of this sandbox and collect the test child's status."""
    status = None
    if os.getpid() == 1:
        # As init of the namespace, kill(-1) reaches every other process here.
        try:
            os.kill(-1, signal.SIGKILL)
        except ProcessLookupError:
            pass
    else:
        try:
            os.killpg(child_pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
    while True:
        try:
            pid, st = os.waitpid(-1, 0)
        except ChildProcessError:
            break
        if pid == child_pid:
            status = st
    return status


def _run_case(config, case):
    limits = config["limits"]
    stdin_fd = os.memfd_create("stdin")
    os.write(stdin_fd, case.get("input", "").encode())
    os.lseek(stdin_fd, 0, os.SEEK_SET)
    out_r, out_w = os.pipe()
    err_r, err_w = os.pipe()
    start = time.monotonic()
    pid = os.fork()
    if pid == 0:
        _child(config, case, stdin_fd, out_w, err_w)
    for fd in (stdin_fd, out_w, err_w):
        os.close(fd)

    caps = {out_r: limits["max_output_bytes"], err_r: limits["max_stderr_bytes"]}
    buffers = {out_r: bytearray(), err_r: bytearray()}
    # The pidfd turns readable when the test child exits, even if a process it
    # left behind still holds the output pipes open.
    pidfd = os.pidfd_open(pid)
    selector = selectors.DefaultSelector()
    for fd in caps:
        os.set_blocking(fd, False)
        selector.register(fd, selectors.EVENT_READ)
    selector.register(pidfd, selectors.EVENT_READ)
    deadline = start + limits["time_limit_s"]
    status = "ok"
    wait_status = None
    open_fds = set(caps)
    while status == "ok" and (open_fds or wait_status is None):
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            status = "timeout"
            break
        ready = [key.fd for key, _ in selector.select(remaining)]
        if pidfd in ready:
            selector.unregister(pidfd)
            wait_status = os.waitpid(pid, 0)[1]
            ready = list(open_fds)  # collect what the child wrote, then stop
            open_fds.clear()
        for fd in ready:
            if fd in caps:
                overflow = _drain(fd, buffers[fd], caps[fd], selector, open_fds)
                if overflow and fd == out_r:  # too much stderr is only cut short
                    status = "output_limit"
    elapsed = time.monotonic() - start
    reaped_status = _reap_all(pid)
    if wait_status is None:
        wait_status = reaped_status
    selector.close()
    for fd in (*caps, pidfd):
        os.close(fd)
    exit_code = signal_name = None
    if wait_status is not None:
        if os.WIFEXITED(wait_status):
            exit_code = os.WEXITSTATUS(wait_status)
        elif os.WIFSIGNALED(wait_status):
            number = os.WTERMSIG(wait_status)
            signal_name = (
                signal.Signals(number).name if number in signal.valid_signals() else str(number)
            )
            if number == signal.SIGXCPU:
                status = "timeout"
    if status == "ok" and (exit_code != 0 or signal_name):
        status = "runtime_error"
    return {
        "status": status,
        "exit_code": exit_code,
        "signal": signal_name,
        "stdout": buffers[out_r].decode("utf-8", "replace"),
        "stderr": buffers[err_r].decode("utf-8", "replace"),
        "time_s": round(elapsed, 4),
    }


def _clear_workdir():
    """Empty the working directory so a test cannot leave files for the next."""
    for root, dirs, files in os.walk(".", topdown=False):
        for name in files:
            try:
                os.unlink(os.path.join(root, name))
            except OSError:
                pass
        for name in dirs:
            path = os.path.join(root, name)
            try:
                os.unlink(path) if os.path.islink(path) else os.rmdir(path)
            except OSError:
                pass


def main():
    _drop_privileges(int(sys.argv[1]))
    config = _recv(0)
    runner_memory = (config["limits"]["memory_mb"] + 256) * _MIB
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    resource.setrlimit(resource.RLIMIT_AS, (runner_memory, runner_memory))
    _send(1, {"ready": True, "pid": os.getpid(), "uid": os.getuid()})
    while True:
        try:
            case = _recv(0)
        except EOFError:
            return
        _send(1, _run_case(config, case))
        _clear_workdir()


main()
