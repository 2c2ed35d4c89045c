"""Runner executed *inside* the sandbox (standard library only).

The trusted parent starts this script with ``python -I -S -c <source> <uid>``
and talks to it over the runner's stdin/stdout with length-prefixed JSON frames:

1. parent -> runner: ``{"kind", "program", "entry_point", "limits", "scratch_dirs"}``; runner ->
   parent: ``{"ready": true, ...}``, or ``{"error": str}`` when the sandbox cannot
   be made safe (it then exits before running anything).
2. stdio tests, per test: parent -> ``{"input": str}``; runner -> ``{"outcome": {...}}``.
3. function tests, per test: parent -> ``{"call": str}`` (encoded arguments) any
   number of times, each answered by ``{"reply": str}`` (what the program's process
   answered, relayed as is) or ``{"stopped": status}`` once it cannot answer; then
   parent -> ``{"end": true}``; runner -> ``{"outcome": {...}}``.

Nothing here decides a verdict, and neither expected outputs nor test code ever
reach this process: the parent compares the output and runs the function tests
itself, calling the program's function through this runner.  Each test runs in a
freshly forked child, in a new empty work directory that is removed afterwards.
The child keeps only its stdin, stdout and stderr (and, for function tests, its
request and reply pipes), never the runner's channel to the parent.  When the
runner is PID 1 of its own PID namespace (bwrap/unshare levels) the program
cannot signal it (the kernel drops signals to init that it has no handler for)
and ``kill(-1)`` reliably removes every process the program left behind.

:func:`encode_value` and :func:`decode_value` are also imported by the parent,
which decodes return values into plain builtin values before comparing them.
"""

import json
import os
import re
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

MAX_VALUE_BYTES = _MIB
"""Largest encoded return value (or call) of a function test."""
MAX_VALUE_DEPTH = 100
"""Deepest nesting of containers in an encoded value."""

# ---------------------------------------------------------------- value codec
#
# A value travels as a ``[tag, data]`` pair; only plain builtin types exist, so an
# object with rigged comparisons, hashing or a lying ``__class__`` cannot cross.

_INTEGER = re.compile(r"-?[0-9]{1,4300}")
_FLOAT = re.compile(r"-?(?:inf|nan|[0-9]+(?:\.[0-9]+)?(?:e[+-]?[0-9]+)?)")
_SEQUENCES = {"list": list, "tuple": tuple, "set": set, "frozenset": frozenset}


def encode_value(value, depth=0):
    """``value`` as a JSON-ready tagged pair; ``TypeError`` for anything not plain builtin."""
    if depth > MAX_VALUE_DEPTH:
        raise ValueError("value nested too deeply")
    kind = type(value)  # exact types: subclasses can override comparisons
    if value is None:
        return ["none", None]
    if kind is bool or kind is str:
        return [kind.__name__, value]
    if kind is int:
        return ["int", str(value)]
    if kind is float:
        return ["float", repr(value)]
    if kind is complex:
        return ["complex", [repr(value.real), repr(value.imag)]]
    if kind is bytes:
        return ["bytes", value.hex()]
    for tag, sequence in _SEQUENCES.items():
        if kind is sequence:
            return [tag, [encode_value(item, depth + 1) for item in value]]
    if kind is dict:
        pairs = [[encode_value(k, depth + 1), encode_value(v, depth + 1)] for k, v in value.items()]
        return ["dict", pairs]
    raise TypeError(
        f"a {kind.__name__} cannot be returned to the tests (plain builtin values only)"
    )


def decode_value(node, depth=0, deadline=None):
    """The plain value of a tagged pair; ``ValueError``/``TypeError`` if malformed.

    With a ``deadline`` (a ``time.monotonic()`` value) decoding raises
    ``TimeoutError`` once past it: building a set or dict of hash-colliding items
    takes time quadratic in their number, so untrusted replies are decoded under
    the time limit of the call that produced them.
    """
    if depth > MAX_VALUE_DEPTH:
        raise ValueError("value nested too deeply")
    if type(node) is not list or len(node) != 2 or type(node[0]) is not str:
        raise ValueError("malformed value")
    tag, data = node
    decoder = _DECODERS.get(tag)
    if decoder is None or not decoder[0](data):
        raise ValueError(f"malformed value of tag {tag[:20]!r}")
    return decoder[1](data, depth, deadline)


def _decode_items(data, depth, deadline):
    return (decode_value(item, depth + 1, deadline) for item in data)


def _decode_set(data, depth, deadline):
    items = set()
    for item in data:
        value = decode_value(item, depth + 1, deadline)
        _check_deadline(deadline)
        items.add(value)  # one insertion at a time: a collision costs time, checked above
    return items


def _decode_dict(data, depth, deadline):
    pairs = {}
    for pair in data:
        key, value = _decode_pair(pair, depth + 1, deadline)
        _check_deadline(deadline)
        pairs[key] = value
    return pairs


def _is_str(data):
    return type(data) is str


def _is_list(data):
    return type(data) is list


# tag -> (is the data well shaped, its value from ``(data, depth, deadline)``)
_DECODERS = {
    "none": (lambda data: data is None, lambda data, depth, deadline: None),
    "bool": (lambda data: type(data) is bool, lambda data, depth, deadline: data),
    "str": (_is_str, lambda data, depth, deadline: data),
    "int": (
        lambda data: _is_str(data) and _INTEGER.fullmatch(data),
        lambda data, depth, deadline: int(data),
    ),
    "float": (_is_str, lambda data, depth, deadline: _decode_float(data)),
    "complex": (
        lambda data: _is_list(data) and len(data) == 2,
        lambda data, depth, deadline: complex(_decode_float(data[0]), _decode_float(data[1])),
    ),
    "bytes": (_is_str, lambda data, depth, deadline: bytes.fromhex(data)),
    "list": (_is_list, lambda data, depth, deadline: list(_decode_items(data, depth, deadline))),
    "tuple": (_is_list, lambda data, depth, deadline: tuple(_decode_items(data, depth, deadline))),
    "set": (_is_list, _decode_set),
    "frozenset": (
        _is_list,
        lambda data, depth, deadline: frozenset(_decode_set(data, depth, deadline)),
    ),
    "dict": (_is_list, _decode_dict),
}


def _check_deadline(deadline):
    if deadline is not None and time.monotonic() > deadline:
        raise TimeoutError("decoding the value ran past the time limit")


def _decode_float(text):
    if type(text) is not str or not _FLOAT.fullmatch(text):
        raise ValueError("malformed float")
    return float(text)


def _decode_pair(pair, depth, deadline):
    if type(pair) is not list or len(pair) != 2:
        raise ValueError("malformed dict item")
    return decode_value(pair[0], depth, deadline), decode_value(pair[1], depth, deadline)


# ---------------------------------------------------------------- framing


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


def _write_all(fd, data):
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def _frame(message):
    data = json.dumps(message).encode()
    return _HEADER.pack(len(data)) + data


def _send(fd, message):
    _write_all(fd, _frame(message))


# ---------------------------------------------------------------- the runner's own safety


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


def _seccomp_failure():
    """Install the seccomp filter, whose definitions the parent puts before this script.

    Returns why it could not be installed, or ``None``.  A runner started
    without the filter's source refuses to run anything (fail closed).
    """
    install = globals().get("install_seccomp_filter")
    if install is None:
        return "seccomp filter missing from the runner's source"
    try:
        install()
    except OSError as exc:
        return f"seccomp filter not installed: {exc}"
    return None


# ---------------------------------------------------------------- the test child


def _user_traceback(exc):
    """Format ``exc`` without the runner's own frames."""
    tb = exc.__traceback__
    while tb is not None and tb.tb_frame.f_code.co_filename == _RUNNER_FILE:
        tb = tb.tb_next
    return "".join(traceback.format_exception(type(exc), exc, tb))


def _close_fds_except(keep):
    low = 0
    for fd in sorted(keep):
        if fd > low:  # an empty range is no no-op: os.closerange(0, 0) closes fd 0
            os.closerange(low, fd)
        low = fd + 1
    os.closerange(low, 65536)


def _limit_resources(limits):
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


def _enter_child(config, case_dir, stdio, channel):
    """Give the forked child its directory, standard streams and limits, nothing else."""
    os.setpgid(0, 0)
    os.chdir(case_dir)
    os.environ["HOME"] = os.environ["TMPDIR"] = case_dir
    for fd, target in zip(stdio, (0, 1, 2), strict=True):
        os.dup2(fd, target)
    _close_fds_except({0, 1, 2, *channel})
    _limit_resources(config["limits"])
    sys.stdin = open(0, encoding="utf-8", errors="replace", closefd=False)
    sys.stdout = open(1, "w", encoding="utf-8", closefd=False)
    sys.stderr = open(2, "w", encoding="utf-8", closefd=False)


def _load_program(config):
    import linecache

    # Let tracebacks quote the program's source lines.
    lines = config["program"].splitlines(True)
    linecache.cache["solution.py"] = (len(config["program"]), None, lines, "solution.py")
    namespace = {"__name__": "__main__", "__builtins__": __builtins__}
    if config["kind"] == "function":
        namespace["__name__"] = "solution"
    exec(compile(config["program"], "solution.py", "exec"), namespace)
    return namespace


def _answer(function, request):
    """The reply to one call: the encoded return value, or the exception it raised."""
    try:
        args, kwargs = decode_value(json.loads(request))
        return {"return": encode_value(function(*args, **kwargs))}
    except Exception as exc:  # noqa: BLE001 - the function's own failure is its answer
        return {"raised": [type(exc).__name__, str(exc)[:2000], _user_traceback(exc)[-4000:]]}


def _serve_calls(config, requests_fd, replies_fd):
    """Load the program, then answer call requests until the runner closes the pipe."""
    namespace = _load_program(config)
    entry = config["entry_point"]
    function = namespace.get(entry)
    if not callable(function):
        raise NameError(f"the program does not define a function named {entry!r}")
    while True:
        try:
            (size,) = _HEADER.unpack(_read_exact(requests_fd, _HEADER.size))
            request = _read_exact(requests_fd, size)
        except EOFError:
            return
        _write_all(replies_fd, _frame(_answer(function, request)))


def _child(config, case_dir, stdio, channel):
    """Body of the forked test process; never returns."""
    try:
        _enter_child(config, case_dir, stdio, channel)
    except BaseException:  # noqa: BLE001 - report harness failures as exit 3
        os._exit(3)
    code = 0
    try:
        if config["kind"] == "stdio":
            _load_program(config)
        else:
            _serve_calls(config, *channel)
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


# ---------------------------------------------------------------- one test case


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


def _describe_exit(wait_status):
    """``(exit_code, signal_name)`` of a wait status."""
    if os.WIFEXITED(wait_status):
        return os.WEXITSTATUS(wait_status), None
    number = os.WTERMSIG(wait_status)
    name = signal.Signals(number).name if number in signal.valid_signals() else str(number)
    return None, name


class _Case:
    """One test's child process, its pipes and its work directory.

    ``status`` stays ``"ok"`` while the child may still answer; it becomes
    ``"exited"`` when the child ends by itself, ``"timeout"`` or
    ``"output_limit"`` when the runner stops it.
    """

    def __init__(self, config, case_dir, stdin_text):
        limits = config["limits"]
        self.kind = config["kind"]
        self.status = "ok"
        self.wait_status = None
        self.note = ""
        self.replies = bytearray()
        os.mkdir(case_dir, 0o700)
        stdin_fd = os.memfd_create("stdin")
        os.write(stdin_fd, stdin_text.encode())
        os.lseek(stdin_fd, 0, os.SEEK_SET)
        out_r, out_w = os.pipe()
        err_r, err_w = os.pipe()
        child_ends, self.requests, self.replies_fd = [], None, None
        if self.kind == "function":
            req_r, self.requests = os.pipe()
            self.replies_fd, rep_w = os.pipe()
            child_ends = [req_r, rep_w]
            os.set_blocking(self.requests, False)
        self.start = time.monotonic()
        self.deadline = self.start + limits["time_limit_s"]
        self.pid = os.fork()
        if self.pid == 0:
            _child(config, case_dir, (stdin_fd, out_w, err_w), child_ends)
        for fd in (stdin_fd, out_w, err_w, *child_ends):
            os.close(fd)
        self.caps = {out_r: limits["max_output_bytes"], err_r: limits["max_stderr_bytes"]}
        self.buffers = {out_r: bytearray(), err_r: bytearray()}
        self.out_fd, self.err_fd = out_r, err_r
        # The pidfd turns readable when the test child exits, even if a process it
        # left behind still holds the output pipes open.
        self.pidfd = os.pidfd_open(self.pid)
        self.selector = selectors.DefaultSelector()
        for readable in (out_r, err_r, self.replies_fd):
            if readable is not None:
                os.set_blocking(readable, False)
                self.selector.register(readable, selectors.EVENT_READ)
        self.selector.register(self.pidfd, selectors.EVENT_READ)

    @property
    def _request_fd(self) -> int:
        """The write end of the request pipe, which only a function test has."""
        if self.requests is None:
            raise RuntimeError("only a function test's case takes calls")
        return self.requests

    # -- waiting

    def run_to_exit(self):
        """Stdio tests: wait until the child ends, is too slow or prints too much."""
        while self.status == "ok":
            self._wait_once()

    def call(self, request):
        """Function tests: send one call; the reply frame, or ``None`` once stopped."""
        pending = memoryview(_HEADER.pack(len(request)) + request)
        if self.status == "ok":
            pending = self._write_some(pending)
        if pending:
            self.selector.register(self._request_fd, selectors.EVENT_WRITE)
        try:
            while self.status == "ok":
                reply = self._complete_reply()
                if reply is not None:
                    return reply
                pending = self._wait_once(pending)
        finally:
            if self.requests in self.selector.get_map():
                self.selector.unregister(self._request_fd)
        return None

    def _complete_reply(self):
        if len(self.replies) < _HEADER.size:
            return None
        (size,) = _HEADER.unpack_from(self.replies)
        if size > MAX_VALUE_BYTES:
            self._stop("output_limit", "the function's reply is larger than 1 MiB")
            return None
        if len(self.replies) < _HEADER.size + size:
            return None
        reply = bytes(self.replies[_HEADER.size : _HEADER.size + size])
        del self.replies[: _HEADER.size + size]
        return reply

    def _wait_once(self, pending=None):
        """Handle one batch of events; returns what of ``pending`` is still unsent."""
        remaining = self.deadline - time.monotonic()
        if remaining <= 0:
            self._stop("timeout")
            return pending
        for key, _ in self.selector.select(remaining):
            if key.fd == self.pidfd:
                self._collect_exit()
            elif key.fd == self.requests:
                pending = self._write_some(pending)
            elif key.fd == self.replies_fd:
                if self._read_into(key.fd, self.replies, MAX_VALUE_BYTES + _HEADER.size):
                    self._stop("output_limit", "the function's reply is larger than 1 MiB")
            else:
                self._drain_output(key.fd)
        return pending

    def _write_some(self, pending):
        try:
            pending = pending[os.write(self._request_fd, pending) :]
        except BlockingIOError:
            return pending
        except BrokenPipeError:  # the child closed its request pipe
            self._stop("exited")
            return pending
        if not pending and self.requests in self.selector.get_map():
            self.selector.unregister(self._request_fd)
        return pending

    def _read_into(self, fd, buffer, cap):
        """Read what ``fd`` has now into ``buffer``; returns whether it went past ``cap``."""
        while True:
            try:
                chunk = os.read(fd, 65536)
            except BlockingIOError:
                return False
            if not chunk:
                self.selector.unregister(fd)
                return False
            buffer += chunk
            if len(buffer) > cap:
                del buffer[cap:]
                self.selector.unregister(fd)
                return True

    def _drain_output(self, fd):
        if self._read_into(fd, self.buffers[fd], self.caps[fd]) and fd == self.out_fd:
            self._stop("output_limit")  # too much stderr is only cut short

    def _collect_exit(self):
        self.selector.unregister(self.pidfd)
        self.wait_status = os.waitpid(self.pid, 0)[1]
        for fd in (self.out_fd, self.err_fd):  # what the child wrote before it ended
            if fd in self.selector.get_map():
                self._drain_output(fd)
        if self.status == "ok":
            self.status = "exited"

    def _stop(self, status, note=""):
        if self.status == "ok":
            self.status, self.note = status, note

    def stop_reason(self):
        """Why a function test's child cannot answer, as an outcome status."""
        return "runtime_error" if self.status == "exited" else self.status

    # -- ending

    def finish(self):
        """Kill what is left of the test, close everything, and describe the outcome."""
        if self.kind == "function" and self.status == "ok":
            self._poll_exit()
        elapsed = time.monotonic() - self.start
        reaped = _reap_all(self.pid)
        if self.wait_status is None and self.status != "ok":
            self.wait_status = reaped  # our own kill after a timeout or output limit
        self.selector.close()
        for fd in (self.out_fd, self.err_fd, self.pidfd, self.requests, self.replies_fd):
            if fd is not None:
                os.close(fd)
        return self._outcome(elapsed)

    def _poll_exit(self):
        """A function test's child must still be running when its test ends."""
        for fd in (self.out_fd, self.err_fd):
            if fd in self.selector.get_map():
                self._drain_output(fd)
        pid, wait_status = os.waitpid(self.pid, os.WNOHANG)
        if pid:
            self.wait_status = wait_status
            self.selector.unregister(self.pidfd)
            self._stop("exited")

    def _outcome(self, elapsed):
        exit_code = signal_name = None
        if self.wait_status is not None:
            exit_code, signal_name = _describe_exit(self.wait_status)
        status = self.status
        if signal_name == "SIGXCPU":
            status = "timeout"
        elif status == "exited":
            clean = self.kind == "stdio" and exit_code == 0
            status = "ok" if clean else "runtime_error"
        stderr = self.buffers[self.err_fd].decode("utf-8", "replace")
        if self.kind == "function" and status == "runtime_error" and not stderr.strip():
            self.note = self.note or "the program's process ended during the test"
        if self.note:
            stderr += f"\n[sandbox] {self.note}\n"
        return {
            "status": status,
            "exit_code": exit_code,
            "signal": signal_name,
            "stdout": self.buffers[self.out_fd].decode("utf-8", "replace"),
            "stderr": stderr,
            "time_s": round(elapsed, 4),
        }


# ---------------------------------------------------------------- work directories


def _make_private(path):
    try:
        os.chmod(path, 0o700)
    except OSError:
        pass  # e.g. the root-owned sandbox directory itself


def _empty_directory(path):
    """Remove everything inside ``path``, whatever modes the program left; whether it is empty."""
    _make_private(path)
    stack, directories = [path], []
    while stack:
        current = stack.pop()
        try:
            entries = list(os.scandir(current))
        except OSError:
            continue
        for entry in entries:
            try:
                if entry.is_dir(follow_symlinks=False):
                    _make_private(entry.path)
                    stack.append(entry.path)
                    directories.append(entry.path)
                else:
                    os.unlink(entry.path)
            except OSError:
                pass
    for directory in reversed(directories):
        try:
            os.rmdir(directory)
        except OSError:
            pass
    try:
        return not os.listdir(path)
    except OSError:
        return False


class _Workspace:
    """Hands each test a new empty directory and removes it all afterwards, along
    with whatever the test left in the run's other writable directories."""

    def __init__(self, base, scratch_dirs):
        self.base = base
        self.writable = [base, *scratch_dirs]
        self.count = 0

    def next_case_dir(self):
        self.count += 1
        return os.path.join(self.base, f"case-{self.count}")

    def clear_or_exit(self):
        """A test must never see a file of an earlier one: end the run if one survives."""
        if not all([_empty_directory(path) for path in self.writable]):
            sys.stderr.write("sandbox: a writable directory could not be emptied; stopping\n")
            sys.stderr.flush()
            os._exit(1)


# ---------------------------------------------------------------- serving tests


def _serve_stdio(config, workspace):
    while True:
        try:
            message = _recv(0)
        except EOFError:
            return
        case = _Case(config, workspace.next_case_dir(), str(message.get("input", "")))
        case.run_to_exit()
        _send(1, {"outcome": case.finish()})
        workspace.clear_or_exit()


def _serve_function(config, workspace):
    case = None
    while True:
        try:
            message = _recv(0)
        except EOFError:
            return
        if "call" in message:
            if case is None:
                case = _Case(config, workspace.next_case_dir(), "")
            reply = case.call(str(message["call"]).encode())
            if reply is None:
                _send(1, {"stopped": case.stop_reason()})
            else:
                _send(1, {"reply": reply.decode("utf-8", "replace")})
        else:  # end of the test
            outcome = case.finish() if case is not None else {"status": "ok"}
            case = None
            _send(1, {"outcome": outcome})
            workspace.clear_or_exit()


def main():
    _drop_privileges(int(sys.argv[1]))
    refusal = _seccomp_failure()
    if refusal:
        _send(1, {"error": refusal})
        return
    # Python's SIGINT handler would let the program interrupt its init (this runner).
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    config = _recv(0)
    runner_memory = (config["limits"]["memory_mb"] + 256) * _MIB
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    resource.setrlimit(resource.RLIMIT_AS, (runner_memory, runner_memory))
    workspace = _Workspace(os.getcwd(), config["scratch_dirs"])
    workspace.clear_or_exit()
    _send(1, {"ready": True, "pid": os.getpid(), "uid": os.getuid()})
    serve = _serve_stdio if config["kind"] == "stdio" else _serve_function
    serve(config, workspace)


if __name__ == "__main__":
    main()
