"""Hostile programs against the code verifier: none may earn a passing test.

Function-test attacks run against several HumanEval problems whose every test
fails for a program that computes nothing (no test expects ``None``), so any
passed test would be a forged one.  Stdio attacks run against a problem whose
expected outputs are all integers near 1e9.
"""

from __future__ import annotations

import dataclasses
import textwrap
from concurrent.futures import ThreadPoolExecutor

import pytest

from intbench.envs.domains.codeforces import humaneval_problem, humaneval_problems, split_check
from intbench.records import Problem
from intbench.verifiers import sandbox
from intbench.verifiers.code import verify_code
from intbench.verifiers.sandbox import SandboxLimits, run_program

needs_bwrap = pytest.mark.skipif(
    sandbox._probe("bwrap") is not None, reason="bubblewrap sandbox unavailable here"
)
pytestmark = needs_bwrap

# /38 calls the prompt's encode_cyclic, /32 its poly: helpers the program could redefine.
FUNCTION_TASKS = ("HumanEval/0", "HumanEval/13", "HumanEval/32", "HumanEval/38")

# A forged frame of the runner->parent protocol, as a program would write it.
FORGE = textwrap.dedent(
    """
    import json, struct
    def forged(message):
        data = json.dumps(message).encode()
        return struct.pack(">I", len(data)) + data
    FRAMES = b"".join(forged(m) for m in (
        {"outcome": {"status": "ok"}}, {"stopped": "ok"}, {"passed": True}, {"ready": True},
    ))
    """
)

# ``ENTRY`` becomes the problem's entry point.
FUNCTION_ATTACKS = {
    "os_exit_at_import": "import os\nos._exit(0)\n",
    "sys_exit_at_import": "import sys\nsys.exit(0)\n",
    "raise_systemexit_at_import": "raise SystemExit\n",
    "os_exit_in_function": "import os\ndef ENTRY(*a, **k):\n    os._exit(0)\n",
    "sys_exit_in_function": "import sys\ndef ENTRY(*a, **k):\n    sys.exit(0)\n",
    "keyboard_interrupt": "def ENTRY(*a, **k):\n    raise KeyboardInterrupt\n",
    "atexit_hook": (
        "import atexit, os, sys\natexit.register(lambda: os._exit(0))\n"
        "def ENTRY(*a, **k):\n    sys.exit(1)\n"
    ),
    "sigterm_to_self": (
        "import os, signal\ndef ENTRY(*a, **k):\n    os.kill(os.getpid(), signal.SIGTERM)\n"
    ),
    "patched_os_exit": (
        "import os\n_real = os._exit\nos._exit = lambda code: _real(0)\n"
        "def ENTRY(*a, **k):\n    raise ValueError('no idea')\n"
    ),
    "stdout_flush_exits": (
        "import os, sys\nclass Out:\n    def write(self, s):\n        return len(s)\n"
        "    def flush(self):\n        os._exit(0)\nsys.stdout = sys.stderr = Out()\n"
        "def ENTRY(*a, **k):\n    raise ValueError('no idea')\n"
    ),
    "exit_timer_after_return": (
        "import os, threading\ndef ENTRY(*a, **k):\n"
        "    threading.Timer(0.05, os._exit, (0,)).start()\n    return None\n"
    ),
    "always_equal": (
        "class Eq:\n    def __eq__(self, other):\n        return True\n"
        "def ENTRY(*a, **k):\n    return Eq()\n"
    ),
    "everything_rigged": (
        "class Any:\n"
        "    __eq__ = __le__ = __ge__ = __lt__ = __gt__ = lambda self, other: True\n"
        "    __ne__ = lambda self, other: False\n    __hash__ = lambda self: 0\n"
        "    __bool__ = lambda self: True\n    __len__ = lambda self: 0\n"
        "    __abs__ = __sub__ = __rsub__ = __neg__ = __float__ = lambda self, *o: 0.0\n"
        "    __iter__ = lambda self: iter(())\n"
        "def ENTRY(*a, **k):\n    return Any()\n"
    ),
    "int_subclass": (
        "class I(int):\n    def __eq__(self, other):\n        return True\n"
        "    __hash__ = int.__hash__\ndef ENTRY(*a, **k):\n    return I(0)\n"
    ),
    "str_subclass": (
        "class S(str):\n    def __eq__(self, other):\n        return True\n"
        "    __hash__ = str.__hash__\ndef ENTRY(*a, **k):\n    return S('')\n"
    ),
    "list_subclass": (
        "class L(list):\n    def __eq__(self, other):\n        return True\n"
        "def ENTRY(*a, **k):\n    return L()\n"
    ),
    "lying_class": (
        "class Fake:\n    __class__ = property(lambda self: bool)\n"
        "    def __eq__(self, other):\n        return True\n"
        "def ENTRY(*a, **k):\n    return Fake()\n"
    ),
    "raises_on_repr": (
        "class R:\n    def __repr__(self):\n        raise RuntimeError('no repr')\n"
        "    __str__ = __repr__\n    def __eq__(self, other):\n        return True\n"
        "def ENTRY(*a, **k):\n    return R()\n"
    ),
    "exception_with_hostile_str": (
        "import os\nclass E(Exception):\n    def __str__(self):\n        os._exit(0)\n"
        "def ENTRY(*a, **k):\n    raise E()\n"
    ),
    "huge_return_value": "def ENTRY(*a, **k):\n    return 'x' * (8 << 20)\n",
    "deeply_nested_return": (
        "def ENTRY(*a, **k):\n    v = []\n    for _ in range(500):\n        v = [v]\n    return v\n"
    ),
    "generator": "def ENTRY(*a, **k):\n    return (x for x in [True, 1, ''])\n",
    "stop_iteration": "def ENTRY(*a, **k):\n    raise StopIteration\n",
    "patched_builtins": (
        "import builtins\nbuiltins.AssertionError = type('Quiet', (BaseException,), {})\n"
        "builtins.isinstance = lambda *a: True\nbuiltins.abs = lambda x: 0\n"
        "builtins.len = lambda x: 0\ndef ENTRY(*a, **k):\n    return None\n"
    ),
    "patched_json_forges_reply": (
        FORGE + "json.dumps = lambda *a, **k: json.JSONEncoder().encode("
        "{'outcome': {'status': 'ok'}, 'passed': True})\n"
        "def ENTRY(*a, **k):\n    return None\n"
    ),
    "fake_json_module": (
        "import sys, types\nfake = types.ModuleType('json')\n"
        "fake.dumps = lambda *a, **k: '{\"passed\": true}'\nfake.loads = lambda *a, **k: {}\n"
        "sys.modules['json'] = sys.modules['pickle'] = fake\n"
        "def ENTRY(*a, **k):\n    return None\n"
    ),
    "caller_frames": (
        "import sys\ndef ENTRY(*a, **k):\n    f, seen = sys._getframe(1), []\n"
        "    while f is not None:\n        seen += list(f.f_locals.values())\n        f = f.f_back\n"
        "    for v in seen:\n        if isinstance(v, dict) and 'case' in v:\n"
        "            return v['case']\n    return None\n"
    ),
    "inspect_stack": (
        "import inspect, re\ndef ENTRY(*a, **k):\n    for info in inspect.stack():\n"
        "        for line in info.code_context or []:\n"
        "            m = re.search(r'==\\s*(.+)$', line)\n"
        "            if m and 'candidate' in line:\n                return eval(m.group(1))\n"
        "    return None\n"
    ),
    "gc_search_for_asserts": (
        "import gc, re\ndef ENTRY(*a, **k):\n    for o in gc.get_objects():\n"
        "        if isinstance(o, dict):\n            for v in list(o.values()):\n"
        "                if isinstance(v, str) and 'assert candidate' in v:\n"
        "                    m = re.search(r'==\\s*([^\\n]+)', v)\n"
        "                    if m:\n                        return eval(m.group(1))\n"
        "    return None\n"
    ),
    "frames_to_every_fd": (
        FORGE + "import os\ndef ENTRY(*a, **k):\n    for fd in range(0, 65):\n        try:\n"
        "            os.write(fd, FRAMES)\n        except OSError:\n            pass\n"
        "    return None\n"
    ),
    "runner_fds_via_proc": (
        FORGE + "import os\ndef ENTRY(*a, **k):\n"
        "    for path in ['/proc/1/fd/1', '/proc/1/fd/0', '/proc/self/fd/1']:\n"
        "        try:\n            fd = os.open(path, os.O_WRONLY | os.O_NONBLOCK)\n"
        "            os.write(fd, FRAMES)\n        except OSError:\n            pass\n"
        "    return None\n"
    ),
    "runner_memory": (
        "import os, re\ndef ENTRY(*a, **k):\n    text = b''\n"
        "    for path in ('/proc/1/mem', '/proc/1/environ', '/proc/1/cmdline',\n"
        "                 f'/proc/{os.getppid()}/cmdline', f'/proc/{os.getppid()}/environ'):\n"
        "        try:\n            text += open(path, 'rb').read(1 << 20)\n"
        "        except OSError:\n            pass\n"
        "    m = re.search(rb'== *([^\\n]+)', text)\n"
        "    return eval(m.group(1)) if m else None\n"
    ),
    "kill_parent_and_init": (
        "import os, signal\ndef ENTRY(*a, **k):\n"
        "    for pid, sig in ((os.getppid(), signal.SIGKILL), (1, signal.SIGTERM),\n"
        "                     (1, signal.SIGINT), (1, signal.SIGSTOP), (-1, signal.SIGKILL)):\n"
        "        try:\n            os.kill(pid, sig)\n        except OSError:\n            pass\n"
        "    return None\n"
    ),
    "ptrace_the_runner": (
        "import ctypes\ndef ENTRY(*a, **k):\n    libc = ctypes.CDLL(None)\n"
        "    libc.ptrace(16, 1, 0, 0)\n    return None\n"  # PTRACE_ATTACH
    ),
    "protocol_on_stdout": (
        FORGE + "import sys\ndef ENTRY(*a, **k):\n    sys.stdout.buffer.write(FRAMES)\n"
        "    sys.stdout.flush()\n    return None\n"
    ),
    "close_own_channel": (
        "import os\ndef ENTRY(*a, **k):\n    for fd in range(3, 65):\n        try:\n"
        "            os.close(fd)\n        except OSError:\n            pass\n    return None\n"
    ),
    "sleep_past_the_limit": "import time\ndef ENTRY(*a, **k):\n    time.sleep(60)\n",
    "forks_a_stand_in": (
        "import os\ndef ENTRY(*a, **k):\n    if os.fork():\n        os._exit(0)\n    return None\n"
    ),
}


def fenced(code: str) -> str:
    return f"```python\n{code}\n```"


def verify_all(pairs):
    with ThreadPoolExecutor(max_workers=2) as pool:
        return list(pool.map(lambda pair: verify_code(*pair), pairs))


@pytest.fixture(scope="module")
def function_problems():
    """With a 2 s per-test timeout: the attacks that sleep must not wait out the paper's 10 s."""
    problems = [humaneval_problem(humaneval_problems()[task]) for task in FUNCTION_TASKS]
    return [dataclasses.replace(p, tests={**p.tests, "time_limit_s": 2.0}) for p in problems]


@pytest.fixture(scope="module")
def function_verdicts(function_problems):
    """Every attack on every problem, graded in one batch."""
    pairs = [
        (problem, fenced(program.replace("ENTRY", problem.tests["entry_point"])))
        for name, program in FUNCTION_ATTACKS.items()
        for problem in function_problems
    ]
    verdicts = iter(verify_all(pairs))
    return {name: [next(verdicts) for _ in function_problems] for name in FUNCTION_ATTACKS}


@pytest.mark.parametrize("attack", sorted(FUNCTION_ATTACKS))
def test_function_attack_passes_no_test(attack, function_verdicts, function_problems):
    for problem, verdict in zip(function_problems, function_verdicts[attack], strict=True):
        assert verdict.status == "incorrect", (problem.id, verdict.details)
        assert verdict.details["passed"] == 0, (problem.id, verdict.details["statuses"])


def test_canonical_solutions_pass_where_tests_use_helpers_or_the_entry_name():
    # /33 compares with sort_third (the entry point's own name), /50 calls encode_shift.
    tasks = (*FUNCTION_TASKS, "HumanEval/33", "HumanEval/50", "HumanEval/53")
    problems = [humaneval_problem(humaneval_problems()[task]) for task in tasks]
    verdicts = verify_all([(p, fenced(p.solution)) for p in problems])
    assert [v.status for v in verdicts] == ["correct"] * len(problems)


@pytest.mark.slow
def test_every_humaneval_canonical_solution_passes():
    problems = [humaneval_problem(record) for record in humaneval_problems().values()]
    verdicts = verify_all([(p, fenced(p.solution)) for p in problems])
    assert [p.id for p, v in zip(problems, verdicts, strict=True) if v.status != "correct"] == []


def test_exits_are_reported_as_runtime_errors(function_verdicts):
    for attack in ("os_exit_in_function", "sys_exit_in_function", "exit_timer_after_return"):
        assert set(function_verdicts[attack][0].details["statuses"]) == {"runtime_error"}


# ---------------------------------------------------------------- stdio

BIG_SUM = Problem(
    id="hostile/stdio",
    domain="codeforces",
    question="Print a + b.",
    tests={
        "kind": "stdio",
        "time_limit_s": 1.0,
        "cases": [
            {"input": "1000000000 7\n", "output": "1000000007\n"},
            {"input": "999999999 1\n", "output": "1000000000\n"},
            {"input": "123456789 876543211\n", "output": "1000000000\n"},
        ],
    },
)
SUM = "a, b = map(int, input().split())\n"

STDIO_ATTACKS = {
    "os_exit_silently": "import os\nos._exit(0)\n",
    "sys_exit_silently": "import sys\nsys.exit(0)\n",
    "right_output_then_crash": SUM + "print(a + b, flush=True)\nraise SystemExit(1)\n",
    "right_output_then_os_exit_1": SUM + "import os\nprint(a + b, flush=True)\nos._exit(1)\n",
    "right_output_then_segfault": (
        SUM + "import ctypes\nprint(a + b, flush=True)\nctypes.string_at(0)\n"
    ),
    "off_by_one": SUM + "print(a + b + 1)\n",
    "off_by_one_below": SUM + "print(a + b - 1)\n",
    "float_form": SUM + "print(float(a + b))\n",
    "exponent_form": SUM + "print(f'{a + b:e}')\n",
    "short_exponent": SUM + "print('1e9')\n",
    "inf_token": "print('inf')\n",
    "nan_token": "print('nan')\n",
    "fullwidth_digits": SUM
    + "print(str(a + b).translate(str.maketrans('0123456789', '０１２３４５６７８９')))\n",
    "arabic_indic_digits": SUM
    + "print(str(a + b).translate(str.maketrans('0123456789', '٠١٢٣٤٥٦٧٨٩')))\n",
    "zero_width_space": SUM + "print(str(a + b)[:5] + '\\u200b' + str(a + b)[5:])\n",
    "unicode_space_split": SUM + "print(str(a + b)[:5] + '\\u2003' + str(a + b)[5:])\n",
    "protocol_on_stdout": (
        FORGE + "import sys\nsys.stdout.buffer.write(FRAMES)\nsys.stdout.flush()\n"
    ),
    "frames_to_every_fd": (
        FORGE + "import os\nfor fd in range(0, 65):\n    try:\n        os.write(fd, FRAMES)\n"
        "    except OSError:\n        pass\n"
    ),
    "kill_parent_and_init": (
        "import os, signal\nfor pid in (os.getppid(), 1):\n    for sig in (signal.SIGKILL, signal.SIGINT, signal.SIGTERM):\n"
        "        try:\n            os.kill(pid, sig)\n        except OSError:\n            pass\n"
    ),
    "huge_output": "import sys\nsys.stdout.write('1000000007 ' * (1 << 18))\n",
}


@pytest.fixture(scope="module")
def stdio_verdicts():
    verdicts = verify_all([(BIG_SUM, fenced(program)) for program in STDIO_ATTACKS.values()])
    return dict(zip(STDIO_ATTACKS, verdicts, strict=True))


@pytest.mark.parametrize("attack", sorted(STDIO_ATTACKS))
def test_stdio_attack_passes_no_test(attack, stdio_verdicts):
    verdict = stdio_verdicts[attack]
    assert verdict.status == "incorrect", verdict.details
    assert verdict.details["passed"] == 0, verdict.details["statuses"]


def test_the_honest_stdio_program_passes():
    assert verify_code(BIG_SUM, fenced(SUM + "print(a + b)\n")).status == "correct"


# ---------------------------------------------------------------- state across tests

LEAVE_TRACES = r"""
import os, sys
data = sys.stdin.read()
seen = []
for root in (".", "..", "/sandbox", "/dev/shm", os.environ.get("HOME", "."), "/tmp"):
    for base, dirs, files in os.walk(root):
        for name in files:
            try:
                seen.append(open(os.path.join(base, name)).read())
            except OSError:
                pass
print("LEAK" if any("secret-" in text for text in seen) else "clean")
for place in (".", "/sandbox", "/dev/shm"):
    try:
        os.makedirs(f"{place}/locked/deeper", exist_ok=True)
        open(f"{place}/locked/deeper/input.txt", "w").write(data)
        open(f"{place}/top.txt", "w").write(data)
        os.chmod(f"{place}/locked/deeper", 0)
        os.chmod(f"{place}/locked", 0)
    except OSError:
        pass
"""


def test_no_test_sees_files_of_an_earlier_one():
    limits = SandboxLimits(time_limit_s=2.0, total_time_s=10.0)
    cases = [{"input": f"secret-{i}"} for i in range(3)]
    run = run_program(LEAVE_TRACES, cases, limits=limits, isolation="bwrap")
    assert run.error is None
    assert [o.stdout for o in run.outcomes] == ["clean\n"] * 3, [o.stderr for o in run.outcomes]


def test_each_test_gets_a_new_private_directory():
    program = "import os\nprint(os.getcwd(), oct(os.stat('.').st_mode & 0o777), os.listdir('.'))\n"
    run = run_program(program, [{"input": ""}] * 2, isolation="bwrap")
    first, second = (o.stdout.split() for o in run.outcomes)
    assert first[0] != second[0]
    assert first[1:] == second[1:] == ["0o700", "[]"]


# ---------------------------------------------------------------- fail closed


def test_a_refused_seccomp_filter_runs_nothing(monkeypatch):
    refusing = sandbox._RUNNER_SOURCE.replace(
        '\nif __name__ == "__main__":',
        '\ndef install_seccomp_filter():\n    raise OSError("refused")\n\nif __name__ == "__main__":',
    )
    monkeypatch.setattr(sandbox, "_RUNNER_SOURCE", refusing)
    run = run_program("open('ran', 'w')\nprint(1)", [{"input": ""}], isolation="bwrap")
    assert "refused" in run.error
    assert [o.status for o in run.outcomes] == ["not_run"]
    verdict = verify_code(BIG_SUM, fenced(SUM + "print(a + b)\n"))
    assert verdict.status == "error" and verdict.details["reason"] == "sandbox_error"


# ---------------------------------------------------------------- test construction


def test_asserts_that_never_call_candidate_are_no_tests():
    source = (
        "def check(candidate):\n"
        "    assert True, 'always'\n"
        "    assert candidate(1) == 2\n"
        "    assert helper(3) == 3\n"
    )
    tests = split_check(
        source, "f", prompt="def helper(x):\n    return x\n\ndef f(x):\n    '''stub'''\n"
    )
    assert len(tests["cases"]) == 1
    assert "def helper" in tests["setup"] and "stub" not in tests["setup"]


def test_prompt_helpers_come_from_the_problem_not_the_program(function_problems):
    cyclic = function_problems[FUNCTION_TASKS.index("HumanEval/38")]
    # A program whose own encode_cyclic is the identity, decoding likewise.
    cheat = "def encode_cyclic(s):\n    return s\n\ndef decode_cyclic(s):\n    return s\n"
    verdict = verify_code(cyclic, fenced(cheat))
    assert verdict.details["passed"] == 0
