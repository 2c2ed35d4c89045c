"""Code verifier for the ``codeforces`` and ``debug`` domains.

The student's program is extracted from the response and run on all of the
problem's tests in one sandbox (:mod:`intbench.verifiers.sandbox`).  Expected
outputs and test code never reach untrusted code: stdio outputs are compared
here (:func:`outputs_match`), and function tests run here, in the trusted
process, calling the program's function in the sandbox and comparing plain
copies of its return values.  An exit status never passes a test.
:func:`render_execution_context` turns the result into the execution-feedback
modes of the feedback protocol.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
import traceback
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from intbench.records import Problem, Verdict, VerdictStatus
from intbench.verifiers.bounds import graded_part
from intbench.verifiers.code_split import visible_indices
from intbench.verifiers.sandbox import CaseOutcome, SandboxLimits, run_program

EXECUTION_CONTEXT_MODES = ("structured", "feedback", "traceback", "none")
EXECUTION_TESTS = ("visible", "all")
FLOAT_TOLERANCE = 1e-6
_SHOW_CHARS = 500  # how much of an input/output a failure report shows
_TOTAL_TIME_RANGE_S = (10.0, 20.0)

_FENCE = "```"
# The language tag right after an opening fence; the rest of that line is ignored.
_FENCE_TAG = re.compile(r"[ \t]*([\w+#.-]*)")
# Output tokens are split on ASCII whitespace only and numbers use ASCII digits only,
# as judges do: other Unicode spaces and digits are text that must match exactly.
_TOKEN_SEPARATOR = re.compile(r"[ \t\n\r\f\v]+")
_INTEGER = re.compile(r"[+-]?[0-9]+")
_DECIMAL = re.compile(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")
_PYTHON_TAGS = {"python", "py", "python3", "py3"}


@dataclass
class ExecutionResult:
    """Outcome of running a program on a problem's tests.

    ``status`` names the first failure (``"passed"``, ``"wrong_answer"``,
    ``"runtime_error"``, ``"timeout"``, ``"output_limit"``, ``"crashed"``,
    ``"not_run"``, ``"syntax_error"`` or ``"no_code"``); ``first_failure``
    holds its test index (0-based), input, expected and actual output and
    error text, each truncated.  ``visible`` lists the tests the teacher may
    see (:mod:`intbench.verifiers.code_split`; ``None``: not known, so none) and
    ``visible_failure`` is the first of them that failed, with its error output.
    """

    passed: int
    total: int
    status: str
    timed_out: bool = False
    first_failure: dict | None = None
    traceback: str = ""
    statuses: list[str] = field(default_factory=list)
    isolation: str | None = None
    seconds: float = 0.0
    visible: list[int] | None = None
    visible_failure: dict | None = None

    @property
    def pass_rate(self) -> float:
        return self.passed / self.total if self.total else 0.0

    def to_dict(self) -> dict:
        data = asdict(self)
        data["pass_rate"] = self.pass_rate
        return data


def extract_code(response: str) -> str | None:
    """The program in ``response``: the last ```python block, else the last
    fenced block of any language, else the raw text; ``None`` if empty.

    Only :func:`~intbench.verifiers.bounds.graded_part` of the response is read.
    A fence opens a block when a newline follows it; the block ends at the next
    fence, or at the end of the text when it is never closed.
    """
    text = graded_part(response)
    blocks = _fenced_blocks(text)
    python = [body for tag, body in blocks if tag.lower() in _PYTHON_TAGS]
    if python:
        code = python[-1]
    elif blocks:
        code = blocks[-1][1]
    else:
        code = text
    return code if code.strip() else None


def _fenced_blocks(text: str) -> list[tuple[str, str]]:
    """``(tag, body)`` of each fenced block, in order, found in one left-to-right pass."""
    blocks = []
    position = text.find(_FENCE)
    while position != -1:
        newline = text.find("\n", position + len(_FENCE))
        if newline == -1:  # no later fence has a newline after it either
            break
        tag_match = _FENCE_TAG.match(text, position + len(_FENCE), newline)
        assert tag_match is not None  # every part of the pattern is optional
        tag = tag_match.group(1)
        closing = text.find(_FENCE, newline + 1)
        body_end = len(text) if closing == -1 else closing
        blocks.append((tag, text[newline + 1 : body_end]))
        if closing == -1:
            break
        position = text.find(_FENCE, closing + len(_FENCE))
    return blocks


def outputs_match(expected: str, got: str, tolerance: float = FLOAT_TOLERANCE) -> bool:
    """Whether ``got`` matches ``expected`` token by token (ASCII-whitespace separated).

    What kind of token the *expected* one is decides how it compares:

    - an integer (ASCII digits, optional sign) matches only an integer of the
      same value, exactly: ``007`` and ``+7`` match ``7``, but ``8``, ``7.0`` and
      ``7e0`` do not, however large the number;
    - a float (a decimal number with a ``.`` or an exponent) matches any decimal
      number within ``tolerance``, absolute or relative; both must be finite;
    - anything else (words, ``inf``, ``nan``) matches only the same text.
    """
    want, have = _tokens(expected), _tokens(got)
    if len(want) != len(have):
        return False
    return all(_token_matches(a, b, tolerance) for a, b in zip(want, have, strict=True))


def _tokens(text: str) -> list[str]:
    return [token for token in _TOKEN_SEPARATOR.split(text) if token]


def _token_matches(want: str, have: str, tolerance: float) -> bool:
    if want == have:
        return True
    if _INTEGER.fullmatch(want):
        return bool(_INTEGER.fullmatch(have)) and _integer_digits(want) == _integer_digits(have)
    if not (_DECIMAL.fullmatch(want) and _DECIMAL.fullmatch(have)):
        return False
    a, b = float(want), float(have)
    finite = math.isfinite(a) and math.isfinite(b)
    return finite and math.isclose(a, b, rel_tol=tolerance, abs_tol=tolerance)


def _integer_digits(token: str) -> str:
    """An integer token's value as canonical text (no int() of a huge token)."""
    digits = token.lstrip("+-").lstrip("0") or "0"
    return digits if token[0] != "-" or digits == "0" else "-" + digits


def _truncate(text: str, limit: int = _SHOW_CHARS) -> str:
    if len(text) <= limit:
        return text
    return text[:limit] + f"... [{len(text) - limit} more characters]"


def _limits_for(tests: Mapping) -> SandboxLimits:
    """Sandbox limits from the problem's optional ``time_limit_s``/``memory_limit_mb``."""
    defaults = SandboxLimits()
    time_limit = float(tests.get("time_limit_s") or defaults.time_limit_s)
    memory = int(tests.get("memory_limit_mb") or defaults.memory_mb)
    low, high = _TOTAL_TIME_RANGE_S
    total = min(high, max(low, time_limit * len(tests["cases"])))
    return SandboxLimits(time_limit_s=time_limit, total_time_s=total, memory_mb=memory)


def _check_tests(tests: Any) -> str | None:
    """Why ``tests`` is unusable, or ``None``."""
    if not isinstance(tests, Mapping):
        return "problem has no tests"
    kind = tests.get("kind")
    if kind not in ("stdio", "function"):
        return f"unknown test kind {kind!r}"
    cases = tests.get("cases")
    if not isinstance(cases, list) or not cases:
        return "problem has no test cases"
    need = ("input", "output") if kind == "stdio" else ("code",)
    for i, case in enumerate(cases):
        if not isinstance(case, Mapping) or any(not isinstance(case.get(k), str) for k in need):
            return f"test case {i} lacks string field(s) {need}"
    if kind == "function" and not tests.get("entry_point"):
        return "function tests need an entry_point"
    return None


def run_tests(
    program: str, tests: Mapping, visible: Sequence[int] | None = None
) -> ExecutionResult:
    """Run ``program`` on ``tests`` (the ``Problem.tests`` format) and score it.

    ``visible``: indices of the tests the teacher may see; the first of them
    that fails is kept as ``visible_failure``.  Raises ``ValueError`` for
    malformed tests; a sandbox that cannot start raises :class:`RuntimeError`.
    """
    problem_error = _check_tests(tests)
    if problem_error:
        raise ValueError(problem_error)
    cases = tests["cases"]
    shown = None if visible is None else sorted(visible)
    try:
        compile(program, "solution.py", "exec", dont_inherit=True)
    except (SyntaxError, ValueError, RecursionError, MemoryError) as exc:
        text = "".join(traceback.format_exception_only(type(exc), exc))
        failure = {"test": None, "error": _truncate(text, 2000)}
        return ExecutionResult(
            0, len(cases), "syntax_error", first_failure=failure, traceback=text, visible=shown
        )
    run = run_program(
        program,
        cases,
        kind=tests["kind"],
        entry_point=tests.get("entry_point"),
        setup=tests.get("setup", ""),
        limits=_limits_for(tests),
    )
    if run.error:
        raise RuntimeError(run.error)
    statuses = [
        _case_status(tests["kind"], case, out)
        for case, out in zip(cases, run.outcomes, strict=True)
    ]
    result = ExecutionResult(
        passed=statuses.count("passed"),
        total=len(cases),
        status="passed",
        timed_out=run.total_timeout or "timeout" in statuses,
        statuses=statuses,
        isolation=run.isolation,
        seconds=run.seconds,
        visible=shown,
    )
    failed = next((i for i, s in enumerate(statuses) if s != "passed"), None)
    if failed is not None:
        case, outcome = cases[failed], run.outcomes[failed]
        result.status = statuses[failed]
        result.traceback = outcome.stderr
        result.first_failure = _failure(failed, tests["kind"], case, outcome, statuses[failed])
    failed = next((i for i in shown or () if statuses[i] != "passed"), None)
    if failed is not None:
        case, outcome = cases[failed], run.outcomes[failed]
        result.visible_failure = {
            **_failure(failed, tests["kind"], case, outcome, statuses[failed]),
            "traceback": outcome.stderr,
        }
    return result


def _case_status(kind: str, case: Mapping, outcome: CaseOutcome) -> str:
    if outcome.status != "ok":
        return outcome.status
    if kind == "stdio" and not outputs_match(case["output"], outcome.stdout):
        return "wrong_answer"
    return "passed"


def _failure(index: int, kind: str, case: Mapping, outcome: CaseOutcome, status: str) -> dict:
    failure: dict[str, Any] = {"test": index, "status": status}
    if kind == "stdio":
        failure["input"] = _truncate(case["input"])
        failure["expected"] = _truncate(case["output"])
    else:
        failure["code"] = _truncate(case["code"])
    failure["got"] = _truncate(outcome.stdout)
    failure["error"] = (
        _truncate(outcome.stderr.strip().splitlines()[-1]) if outcome.stderr.strip() else ""
    )
    if outcome.signal and status == "runtime_error":  # not our own timeout kill
        failure["signal"] = outcome.signal
    failure["time_s"] = outcome.time_s
    return failure


def verify_code(problem: Problem, response: str) -> Verdict:
    """Verify a program (``codeforces``: a solution; ``debug``: the fixed program).

    ``score`` is the pass rate; ``status`` is ``"correct"`` only when every
    test passes.  No code gives ``"incorrect"`` with ``details["reason"] ==
    "no_code"``; malformed tests or a sandbox failure give ``"error"``.
    """
    tests = problem.tests
    problem_error = _check_tests(tests)
    if problem_error or tests is None:
        return Verdict.error(f"cannot verify {problem.id}: {problem_error}", reason="bad_tests")
    code = extract_code(response)
    if code is None:
        result = ExecutionResult(0, len(tests["cases"]), "no_code")
        details = {"reason": "no_code", **result.to_dict()}
        return Verdict("incorrect", 0.0, None, "No code found in the response.", details)
    try:
        result = run_tests(code, tests, visible_indices(problem))
    except (ValueError, TypeError) as exc:  # e.g. a non-numeric time_limit_s
        return Verdict.error(f"cannot verify {problem.id}: {exc}", reason="bad_tests")
    except (RuntimeError, OSError) as exc:
        return Verdict.error(f"sandbox error: {exc}", reason="sandbox_error")
    status: VerdictStatus = "correct" if result.passed == result.total else "incorrect"
    details = {"reason": result.status, **result.to_dict()}
    feedback = render_execution_context(result, "feedback", tests="all")
    return Verdict(status, result.pass_rate, code, feedback, details)


def code_cache_key(problem: Problem, response: str) -> str | None:
    """What :func:`verify_code` grades: a hash of the extracted program (``None``: no code)."""
    code = extract_code(response)
    return (
        None if code is None else hashlib.sha256(code.encode("utf-8", "surrogatepass")).hexdigest()
    )


# A function attribute that intbench.verifiers.memo looks up (mypy does not model them).
verify_code.cache_key = code_cache_key  # type: ignore[attr-defined]


def render_execution_context(
    result: ExecutionResult | Mapping, mode: str, tests: str = "visible"
) -> str:
    """Render an execution result for a prompt.

    Modes: ``"structured"`` (compact JSON summary), ``"feedback"`` (a
    natural-language account of which test failed and how), ``"traceback"``
    (the raw error output of the first failing test, or a one-line status
    when it raised none) and ``"none"`` (empty).  ``result`` may also be the
    dict stored in ``Verdict.details``.

    ``tests``: ``"visible"`` shows the inputs, outputs and errors of visible
    tests only (:mod:`intbench.verifiers.code_split`) and, of the held-out
    ones, how many passed and the first one's status; ``"all"`` shows the
    first failing test whichever it is (the feedback paper's setting, A.5).
    """
    if mode not in EXECUTION_CONTEXT_MODES:
        raise ValueError(f"mode must be one of {EXECUTION_CONTEXT_MODES}, got {mode!r}")
    if tests not in EXECUTION_TESTS:
        raise ValueError(f"tests must be one of {EXECUTION_TESTS}, got {tests!r}")
    data = result.to_dict() if isinstance(result, ExecutionResult) else dict(result)
    if mode == "none":
        return ""
    if tests == "visible":
        data = _visible_view(data)
    failure = data.get("first_failure") or {}
    return _RENDERERS[mode](data, failure)


def _structured_text(data: Mapping, failure: Mapping) -> str:
    summary = {
        "passed": data["passed"],
        "total": data["total"],
        "status": data["status"],
        "timed_out": data.get("timed_out", False),
    }
    if "held_out" in data:
        summary["held_out"] = data["held_out"]
    if failure:
        # No wall-clock time: the same program must give the same observation.
        summary["first_failure"] = {
            k: v for k, v in failure.items() if v not in ("", None) and k != "time_s"
        }
    return json.dumps(summary, ensure_ascii=False)


def _traceback_text(data: Mapping, failure: Mapping) -> str:
    if data.get("traceback"):
        return data["traceback"]
    if data["status"] == "passed":
        held_out = data.get("held_out")
        return "" if not held_out or held_out["status"] == "passed" else _held_out_line(held_out)
    return _describe_failure(data, failure).splitlines()[0]


def _visible_view(data: Mapping) -> dict:
    """``data`` as the teacher may see it: counts, status and first failure over the
    visible tests, and only counts and a status of the held-out ones."""
    if data["status"] in ("no_code", "syntax_error"):  # no test ran: nothing to hide
        return dict(data)
    statuses = data.get("statuses") or []
    shown = set(data.get("visible") or ())
    mine = [s for i, s in enumerate(statuses) if i in shown]
    hidden = [s for i, s in enumerate(statuses) if i not in shown]
    visible_failure = dict(data.get("visible_failure") or {})
    traceback_text = visible_failure.pop("traceback", "")
    return {
        "passed": mine.count("passed"),
        "total": len(mine),
        "status": visible_failure.get("status", "passed"),
        "timed_out": data.get("timed_out", False),
        "held_out": {
            "passed": hidden.count("passed"),
            "total": len(hidden),
            "status": next((s for s in hidden if s != "passed"), "passed"),
        },
        "first_failure": visible_failure or None,
        "traceback": traceback_text,
    }


_STATUS_TEXT = {
    "wrong_answer": "produced the wrong output",
    "runtime_error": "crashed with an error",
    "timeout": "exceeded the time limit",
    "output_limit": "printed more output than allowed",
    "crashed": "killed the test harness",
    "not_run": "was not run because the total time limit ran out",
}


def _describe_failure(data: Mapping, failure: Mapping) -> str:
    status = data["status"]
    if status == "no_code":
        return "No code was found in the response."
    if status == "syntax_error":
        return f"The program does not compile:\n{failure.get('error', '').strip()}"
    number = failure.get("test", 0) + 1
    lines = [f"Test {number} {_STATUS_TEXT.get(status, status)}."]
    if "input" in failure:
        lines.append(f"Input:\n{failure['input']}")
        lines.append(f"Expected output:\n{failure['expected']}")
    if "code" in failure:
        lines.append(f"Test code:\n{failure['code']}")
    if failure.get("got") and status != "timeout":
        lines.append(f"Your output:\n{failure['got']}")
    elif "input" in failure and status == "wrong_answer":
        lines.append("Your output: (empty)")
    if failure.get("error"):
        lines.append(f"Error: {failure['error']}")
    if failure.get("signal"):
        lines.append(f"The process was killed by {failure['signal']}.")
    return "\n".join(lines)


def _feedback_text(data: Mapping, failure: Mapping) -> str:
    if data["status"] in ("no_code", "syntax_error"):
        return _describe_failure(data, failure)
    held_out = data.get("held_out")
    if held_out is None:
        if data["status"] == "passed":
            return f"All {data['total']} tests passed."
        head = f"Your program passed {data['passed']} of {data['total']} tests."
        return f"{head}\n{_describe_failure(data, failure)}"
    lines = [
        f"Your program passed {data['passed']} of {data['total']} visible tests."
        if data["total"]
        else "No test of this problem is visible."
    ]
    if data["status"] != "passed":
        lines.append(_describe_failure(data, failure))
    lines.append(_held_out_line(held_out))
    return "\n".join(lines)


# The renderer of each mode but "none".
_RENDERERS = {
    "structured": _structured_text,
    "traceback": _traceback_text,
    "feedback": _feedback_text,
}


def _held_out_line(held_out: Mapping) -> str:
    status = held_out["status"]
    how = (
        "" if status == "passed" else f"; the first failing one {_STATUS_TEXT.get(status, status)}"
    )
    return (
        f"It passed {held_out['passed']} of {held_out['total']} held-out tests{how}. "
        "Held-out tests' inputs and outputs are not shown."
    )


__all__ = [
    "EXECUTION_CONTEXT_MODES",
    "EXECUTION_TESTS",
    "ExecutionResult",
    "extract_code",
    "outputs_match",
    "render_execution_context",
    "run_tests",
    "verify_code",
]
