"""Hub sources of the ``debug`` domain: DebugEval and DebugBench rows as repair problems.

**DebugEval** (Yang et al., COAST; hub ``yangweiqing/DebugEval``) is the set
Int-Bench used.  Its code-repair rows (``eval/debugevalsuite_task3.jsonl``)
carry ``question_id``, ``question_content``, ``buggy_code``, ``correct_code``,
``language`` (``python``, ``cpp``, ``java``) and ``platform``; the tests of the
Python rows (AtCoder tasks) are a separate file,
``atcoder_private_test_cases.jsonl``, one ``{"question_id", "private_test_cases":
[{"input", "output"}, ...]}`` per line, joined here by ``question_id``.  A
problem shows ``buggy_code``; its reference is ``correct_code``; its tests are
stdin/stdout with the limits of DebugEval's own judge (10 s, 1024 MB).  The
tests of a row come from, first found first:

1. the row's own non-empty ``private_test_cases`` (a list or its JSON text), as
   in a local file that was joined beforehand;
2. the JSONL that ``$INTBENCH_DEBUGEVAL_TESTS`` names: this is how a local
   DebugEval-shaped file gets its tests
   (``INTBENCH_DEBUGEVAL_TESTS=atcoder_private_test_cases.jsonl``);
3. for hub rows, the dataset's test-case file, fetched with ``hf_hub_download``.

:func:`load_debugeval` reads both files explicitly (from the hub, or local
paths).  The file layout and the columns come from DebugEval's evaluation code
(COAST's ``check.py`` and ``main.py``); the dataset card could not be read here.

**DebugBench** (``Rtian/DebugBench``, split ``test``, Apache-2.0; load it with
:func:`load_debugbench`, or pass its file as a local source) has LeetCode rows:
``slug``, ``question``, ``examples``, ``constraints``, ``solution``,
``buggy_code``, ``bug_explanation``, ``category``, ``subtype``, ``level``,
``language`` (``python3``, ``cpp``, ``java``).  It has no tests, so they are
built from the statement's examples and kept only where the reference agrees:

- each ``Input: a = 1, b = [2]`` / ``Output: 3`` example becomes one function
  test, ``assert same(candidate(a=1, b=[2]), 3)`` (``true``/``false``/``null``
  read as Python's; ``same`` allows LeetCode's 1e-5 on floats);
- both programs get LeetCode's implicit imports on top and, at the end, a
  function named after the ``Solution`` method that calls it on a fresh
  ``Solution``: the tests call that function;
- the reference runs on the examples in the sandbox; the examples it does not
  reproduce are dropped, and so is the row when none is left or when the
  buggy program passes all that are left (the examples miss the bug).
  Classes without one clear ``Solution`` method (design problems), inputs
  that are not literals and linked-list/tree types drop rows this way.

The tests are the statement's own examples, so the student sees them all (and
they are marked so: ``tests["examples"]``, all visible to a feedback teacher).
The outcome of each check is cached (``$INTBENCH_CACHE``), so only the first
load runs the sandbox.  Rows with their own ``tests`` column in IntBench's
format keep those tests and programs as they are.

Only Python rows are kept.  Every dropped row is counted: the loaders here log
one line per load with the counts by reason; :func:`row_to_problem` (the
domain's row mapper, also used for local files) raises :class:`Dropped`, a
:class:`~intbench.envs.domains.base.SkipRow` whose ``reason`` is the count key.
No problem without working tests is ever kept.
"""

from __future__ import annotations

import ast
import concurrent.futures
import functools
import json
import logging
import os
import re
from collections import Counter
from collections.abc import Iterable
from pathlib import Path

from intbench.envs.domains import base
from intbench.envs.domains.base import (
    DataSourceError,
    HubUnavailableError,
    SkipRow,
    as_list,
    hub_provenance,
)
from intbench.extras import require
from intbench.records import Problem

logger = logging.getLogger(__name__)

DEBUGEVAL_ID = "yangweiqing/DebugEval"
DEBUGEVAL_LICENSE = "see dataset card"  # the card names no licence that could be checked here
DEBUGEVAL_ROWS_FILE = "eval/debugevalsuite_task3.jsonl"  # the code-repair task's rows
DEBUGEVAL_TESTS_FILE = "atcoder_private_test_cases.jsonl"
TESTS_ENV = "INTBENCH_DEBUGEVAL_TESTS"
# DebugEval's judge runs every repair with these limits (COAST OJ_Evaluation config).
JUDGE_TIME_LIMIT_S = 10.0
JUDGE_MEMORY_MB = 1024

DEBUGBENCH_ID = "Rtian/DebugBench"
DEBUGBENCH_LICENSE = "Apache-2.0"
CHECK_CACHE = "domains/debugbench_checks_v1"  # bump when the test building changes

PYTHON_LANGUAGES = {"python", "python3"}
_INFRA_REASONS = {"crashed", "not_run", "sandbox_error"}  # the harness failed, not the program

# What LeetCode's Python 3 judge provides without imports (``List``, ``Counter``,
# ``heappush``, ``inf``...); solutions rely on it, so both programs start with it.
LEETCODE_PRELUDE = """\
from typing import *
from collections import *
from functools import *
from itertools import *
from heapq import *
from bisect import *
from math import ceil, comb, factorial, floor, gcd, inf, isqrt, lcm, log, log2, sqrt
import bisect, collections, functools, heapq, itertools, math, operator, re, string
"""

# Trusted helper of the example tests: LeetCode accepts floats within 1e-5.
SAME_SETUP = '''\
def same(got, want):
    """Whether the returned value equals the example's output (floats within 1e-5)."""
    if isinstance(want, bool) or isinstance(got, bool):
        return type(got) is type(want) and got == want
    if isinstance(want, float) or isinstance(got, float):
        try:
            return abs(got - want) <= 1e-5 * max(1.0, abs(want))
        except TypeError:
            return False
    if isinstance(want, (list, tuple)) and isinstance(got, (list, tuple)):
        return len(got) == len(want) and all(map(same, got, want))
    return got == want
'''

_JSON_NAMES = {"true": True, "false": False, "null": None}
# One example: the text after "Input:" up to "Output:", then the output up to
# an explanation, the next example or a blank line.
_EXAMPLE = re.compile(
    r"Input:\s*(?P<input>.*?)\s*Output:\s*(?P<output>.*?)\s*"
    r"(?=Explanation:|Example\s*\d|Input:|\n\s*\n|\Z)",
    re.S,
)


class Dropped(SkipRow):
    """A row that cannot become a gradeable Python repair problem."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason  # the key it is counted under


# --------------------------------------------------------------------------- rows


def row_to_problem(row: dict, split: str, index: int, test_index: dict | None = None) -> Problem:
    """Map a DebugEval or a DebugBench row (told apart by their columns) to a Problem.

    ``test_index`` (``question_id`` -> test cases) joins DebugEval tests; without
    it they come from the row, ``$INTBENCH_DEBUGEVAL_TESTS`` or the hub.

    Raises:
        Dropped: the row is not Python, or no working test can be had for it.
    """
    if "correct_code" in row:
        return debugeval_problem(row, split, test_index)
    if "solution" in row or "oracle_code" in row:
        return debugbench_problem(row, split, index)
    if "private_test_cases" in row and "buggy_code" not in row:
        raise Dropped("test-case rows")
    raise KeyError("a DebugEval (correct_code) or DebugBench (solution) column")


def _require_python(row: dict) -> str:
    """The row's language; rows in another one are dropped (a missing one is kept)."""
    language = str(row.get("language") or "").strip().lower()
    if language and language not in PYTHON_LANGUAGES:
        raise Dropped(language)
    return language


def _fenced(code: str) -> str:
    return f"```python\n{code.rstrip()}\n```"


# ---------------------------------------------------------------------- DebugEval


def debugeval_problem(row: dict, split: str, test_index: dict | None = None) -> Problem:
    """A stdin/stdout repair problem from a DebugEval row and its joined tests."""
    language = _require_python(row)
    question_id = str(row["question_id"])
    cases = parse_cases(row.get("private_test_cases"))
    if not cases:
        index = test_index if test_index is not None else default_test_index(split)
        cases = parse_cases(index.get(question_id))
    if not cases:
        raise Dropped("without tests")
    buggy, correct = str(row["buggy_code"]), str(row["correct_code"])
    return Problem(
        id=f"debug/{split}/{question_id}",
        domain="debug",
        question=(
            f"{str(row['question_content']).strip()}\n\n"
            "The Python program below should solve this task, reading standard input and "
            "writing standard output, but it has a bug. Find the bug and fix it.\n\n"
            f"{_fenced(buggy)}"
        ),
        solution=correct,
        tests={
            "kind": "stdio",
            "time_limit_s": JUDGE_TIME_LIMIT_S,
            "memory_limit_mb": JUDGE_MEMORY_MB,
            "cases": cases,
        },
        fields={
            "buggy_code": buggy,
            "original_code": correct,
            "bug_type": row.get("minor_error_type") or row.get("major_error_type"),
        },
        metadata=hub_provenance(
            DEBUGEVAL_ID,
            split,
            DEBUGEVAL_LICENSE,
            question_id=question_id,
            language=language or None,
            platform=row.get("platform"),
            difficulty=row.get("difficulty"),
            major_error_type=row.get("major_error_type"),
        ),
    )


def parse_cases(value) -> list[dict]:
    """``[{"input", "output"}]`` from a ``private_test_cases`` value (list or JSON text).

    Raises:
        Dropped: the value is unreadable or holds other than stdin tests.
    """
    if value is None or (isinstance(value, str) and not value.strip()):
        return []
    try:
        raw = as_list(value)
    except ValueError:
        raise Dropped("with unreadable tests") from None
    cases = []
    for case in raw:
        if not isinstance(case, dict) or case.get("testtype", "stdin") != "stdin":
            raise Dropped("with other than stdin tests")
        if not (isinstance(case.get("input"), str) and isinstance(case.get("output"), str)):
            raise Dropped("with unreadable tests")
        cases.append({"input": case["input"], "output": case["output"]})
    return cases


def read_jsonl(path: str | os.PathLike) -> list[dict]:
    """The objects of a JSONL file, one a line (blank lines skipped)."""
    rows = []
    with open(path, encoding="utf-8") as handle:
        for number, line in enumerate(handle, 1):
            if not line.strip():
                continue
            try:
                rows.append(json.loads(line))
            except ValueError as exc:
                raise DataSourceError(f"{path}: line {number} is not JSON: {exc}") from exc
    return rows


def read_test_index(path: str | os.PathLike) -> dict:
    """``question_id`` -> the raw ``private_test_cases`` of a DebugEval test-case JSONL.

    Values stay unparsed: a bad entry then drops only its own row.
    """
    try:
        rows = read_jsonl(path)
    except OSError as exc:
        raise DataSourceError(f"cannot read the DebugEval test file {str(path)!r}: {exc}") from exc
    index = {}
    for row in rows:
        if not isinstance(row, dict) or "question_id" not in row:
            raise DataSourceError(f"{path}: a line lacks question_id")
        index[str(row["question_id"])] = row.get("private_test_cases")
    return index


def default_test_index(split: str) -> dict:
    """DebugEval tests for rows that carry none: ``$INTBENCH_DEBUGEVAL_TESTS``, else
    (hub rows only) the dataset's test-case file."""
    path = os.environ.get(TESTS_ENV, "").strip()
    if path:
        file = Path(path)
        if not file.is_file():
            raise DataSourceError(f"{TESTS_ENV}={path!r} is not a file")
        stat = file.stat()
        return _file_test_index(str(file.resolve()), stat.st_mtime_ns, stat.st_size)
    if split == "local":
        _warn_no_tests_file()
        return {}
    return hub_test_index()


@functools.lru_cache(maxsize=4)
def _file_test_index(path: str, mtime_ns: int, size: int) -> dict:
    # mtime and size are part of the key, so an edited file is read again.
    return read_test_index(path)


@functools.lru_cache(maxsize=1)
def _warn_no_tests_file() -> None:
    logger.warning(
        "DebugEval rows without private_test_cases and no %s set: they are dropped "
        "(point %s at atcoder_private_test_cases.jsonl)",
        TESTS_ENV,
        TESTS_ENV,
    )


def clear_caches() -> None:
    """Forget the test indexes read so far (and warn again about a missing test file)."""
    for cached in (_file_test_index, _warn_no_tests_file, hub_test_index):
        cached.cache_clear()


@functools.lru_cache(maxsize=1)
def hub_test_index() -> dict:
    """The test index of DebugEval's test-case file on the hub (downloaded once)."""
    return read_test_index(download(DEBUGEVAL_ID, DEBUGEVAL_TESTS_FILE))


def download(repo_id: str, filename: str) -> str:
    """The local path of ``filename`` of the hub dataset ``repo_id`` (``hf_hub_download``).

    A file that is not at that path is looked for by its name in the repository.

    Raises:
        HubUnavailableError: the hub (or, offline, its cache) cannot give the file.
        DataSourceError: the repository has no file of that name.
    """
    require("datasets", "huggingface_hub", "the debug domain's hub files")
    import huggingface_hub
    from huggingface_hub.errors import EntryNotFoundError

    try:
        try:
            return huggingface_hub.hf_hub_download(repo_id, filename, repo_type="dataset")
        except EntryNotFoundError:
            name = filename.rpartition("/")[2]
            files = huggingface_hub.list_repo_files(repo_id, repo_type="dataset")
            found = [f for f in files if f.rpartition("/")[2] == name]
            if not found:
                raise DataSourceError(f"{repo_id} has no file named {name!r}") from None
            return huggingface_hub.hf_hub_download(repo_id, found[0], repo_type="dataset")
    except OSError as exc:  # network, offline cache miss, HTTP errors
        raise HubUnavailableError(
            f"cannot fetch {filename} of {repo_id} from the Hugging Face hub: "
            f"{type(exc).__name__}: {exc}"
        ) from exc


# --------------------------------------------------------------------- DebugBench


def debugbench_problem(row: dict, split: str, index: int) -> Problem:
    """A function-test repair problem from a DebugBench row (tests from its examples)."""
    language = _require_python(row)
    reference = str(row.get("solution") or row.get("oracle_code") or "")
    buggy = str(row["buggy_code"])
    statement = str(row["question"])
    for key, title in (("examples", "Examples"), ("constraints", "Constraints")):
        if row.get(key):
            value = row[key]
            text = "\n".join(map(str, value)) if isinstance(value, list) else str(value)
            statement += f"\n\n{title}:\n{text}"
    tests = _given_tests(row.get("tests"))
    if tests is not None:
        instruction = "The code below has a bug. Find the bug and fix it."
    else:
        examples = _examples(row.get("examples"))
        method = solution_method(reference, examples)
        reference, buggy = leetcode_program(reference, method), leetcode_program(buggy, method)
        cases = checked_cases(reference, buggy, method, [example_test(*e) for e in examples])
        tests = function_tests(method, cases)
        tests["examples"] = list(range(len(cases)))  # the statement shows every one
        instruction = (
            "The Python program below should solve this problem, but it has a bug. Find "
            f"the bug and fix it. Keep the imports at the top and the function `{method}` "
            "at the end: the tests call it."
        )
    return Problem(
        id=f"debug/{split}/{row.get('slug') or 'row'}/{index}",
        domain="debug",
        question=f"{statement}\n\n{instruction}\n\n{_fenced(buggy)}",
        solution=reference,
        tests=tests,
        fields={
            "buggy_code": buggy,
            "bug_type": row.get("subtype") or row.get("category") or row.get("Category"),
            "original_code": reference,
            "bug_explanation": row.get("bug_explanation"),
        },
        metadata=hub_provenance(
            DEBUGBENCH_ID,
            split,
            DEBUGBENCH_LICENSE,
            language=language or None,
            difficulty=row.get("level"),
            category=row.get("category") or row.get("Category"),
            tags=as_list(row.get("tags")),
        ),
    )


def _given_tests(value) -> dict | None:
    """A row's own tests in IntBench's format, or ``None`` when it has none."""
    if isinstance(value, str):
        value = json.loads(value) if value.strip() else None
    if value is None:
        return None
    usable = (
        isinstance(value, dict)
        and value.get("kind") in ("stdio", "function")
        and isinstance(value.get("cases"), list)
        and value["cases"]
    )
    if not usable:
        raise Dropped("with unusable tests")
    return value


def _examples(value) -> list[tuple[list, dict, object]]:
    """``(args, kwargs, expected)`` of every example whose input and output are literals."""
    if isinstance(value, str):
        value = json.loads(value) if value.lstrip().startswith("[") else [value]
    text = "\n\n".join(str(item) for item in value or [])
    examples = []
    for match in _EXAMPLE.finditer(text):
        try:
            args, kwargs = _call_arguments(match["input"])
            expected = _literal(ast.parse(match["output"].strip(), mode="eval").body)
        except (SyntaxError, ValueError, TypeError, RecursionError, MemoryError):
            continue  # not a literal: this example cannot be a test
        examples.append((args, kwargs, expected))
    if not examples:
        raise Dropped("without examples that parse")
    return examples


def _call_arguments(text: str) -> tuple[list, dict]:
    """``nums = [1,2], k = 3`` as the arguments of a call (lines may replace commas)."""
    for source in (text, re.sub(r"\s*\n\s*", ", ", text.strip())):
        try:
            call = ast.parse(f"f({source})", mode="eval").body
        except SyntaxError:
            continue
        if isinstance(call, ast.Call):  # not so when the text closes the call: "1), (2"
            break
    else:
        raise SyntaxError(f"not call arguments: {text!r}")
    args = [_literal(node) for node in call.args]
    kwargs = {keyword.arg: _literal(keyword.value) for keyword in call.keywords}
    if None in kwargs:
        raise ValueError("** arguments")
    return args, kwargs


class _JsonNames(ast.NodeTransformer):
    """LeetCode writes ``true``, ``false`` and ``null``: read them as Python constants."""

    def visit_Name(self, node: ast.Name) -> ast.AST:
        if node.id in _JSON_NAMES:
            return ast.copy_location(ast.Constant(_JSON_NAMES[node.id]), node)
        return node


def _literal(node: ast.expr):
    return ast.literal_eval(_JsonNames().visit(node))


def solution_method(reference: str, examples: list[tuple[list, dict, object]]) -> str:
    """The ``Solution`` method the examples call: the only public one, else the only one
    whose parameters take the examples' keywords."""
    try:
        module = ast.parse(reference)
    except (SyntaxError, ValueError):
        raise Dropped("whose reference does not compile") from None
    classes = [n for n in module.body if isinstance(n, ast.ClassDef) and n.name == "Solution"]
    methods = [
        node
        for cls in classes[-1:]
        for node in cls.body
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
        and not node.name.startswith("_")
    ]
    if len(methods) > 1:
        keywords = set(examples[0][1])
        methods = [m for m in methods if keywords <= {a.arg for a in m.args.args[1:]}]
    if len(methods) != 1:
        raise Dropped("without one Solution method")
    return methods[0].name


def leetcode_program(code: str, method: str) -> str:
    """``code`` as a runnable program: LeetCode's imports, then an entry function."""
    return (
        f"{LEETCODE_PRELUDE}\n\n{code.strip()}\n\n\n"
        "# The tests call this function: it runs the method on a new Solution.\n"
        f"def {method}(*args, **kwargs):\n"
        f"    return Solution().{method}(*args, **kwargs)\n"
    )


def example_test(args: list, kwargs: dict, expected) -> dict:
    """One function test case: the call of an example checked against its output."""
    arguments = ", ".join([*map(repr, args), *(f"{k}={v!r}" for k, v in kwargs.items())])
    return {"code": f"assert same(candidate({arguments}), {expected!r})"}


def function_tests(method: str, cases: list[dict]) -> dict:
    return {"kind": "function", "entry_point": method, "setup": SAME_SETUP, "cases": cases}


def checked_cases(reference: str, buggy: str, method: str, cases: list[dict]) -> list[dict]:
    """The example tests the reference passes, run once and then cached.

    Raises:
        Dropped: none is left, the buggy program passes them all, or the sandbox failed.
    """
    from intbench.cache import JsonCache, stable_hash

    cache = JsonCache(CHECK_CACHE)
    key = stable_hash(reference, buggy, method, cases, SAME_SETUP)
    outcome = cache.get(key)
    if outcome is None:
        outcome = _run_checks(reference, buggy, method, cases)
        cache.put(key, outcome)
    if not outcome["passed"]:
        raise Dropped("whose reference fails its examples")
    if not outcome["buggy_fails"]:
        raise Dropped("whose bug the examples miss")
    return [cases[i] for i in outcome["passed"]]


def _run_checks(reference: str, buggy: str, method: str, cases: list[dict]) -> dict:
    """Run the reference on every case and the buggy program on those it passes."""
    verdict = grade(_check_problem(method, cases), reference)
    if grader_failed(verdict):
        raise Dropped("the sandbox could not check")  # not cached: may work next time
    statuses = (verdict.details or {}).get("statuses") or []
    passed = [i for i, status in enumerate(statuses) if status == "passed"]
    if not passed:
        return {"passed": [], "buggy_fails": False}
    verdict = grade(_check_problem(method, [cases[i] for i in passed]), buggy)
    if grader_failed(verdict):
        raise Dropped("the sandbox could not check")
    return {"passed": passed, "buggy_fails": verdict.status == "incorrect"}


def _check_problem(method: str, cases: list[dict]) -> Problem:
    return Problem(
        id="debug/check", domain="debug", question="", tests=function_tests(method, cases)
    )


def grade(problem: Problem, code: str, verify=None, tries: int = 2):
    """Verify ``code`` (with ``verify``, default the project's verifier); a verdict
    caused by the sandbox itself is retried, never trusted."""
    if verify is None:
        from intbench.verifiers import verify as project_verify

        verify = project_verify
    verdict = verify(problem, _fenced(code))
    for _ in range(tries - 1):
        if not grader_failed(verdict):
            break
        verdict = verify(problem, _fenced(code))
    return verdict


def grader_failed(verdict) -> bool:
    """Whether the harness, not the program, decided ``verdict``."""
    return verdict.status == "error" or (verdict.details or {}).get("reason") in _INFRA_REASONS


# ------------------------------------------------------------------------ loaders


def map_rows(
    rows: Iterable[dict], split: str, test_index: dict | None = None, workers: int | None = None
) -> list[Problem]:
    """:func:`row_to_problem` over ``rows`` (a few at a time: DebugBench rows run the
    sandbox), in order; logs one line with the counts of dropped rows."""
    rows = [dict(row) for row in rows]

    def attempt(item: tuple[int, dict]) -> Problem | Dropped:
        index, row = item
        try:
            return row_to_problem(row, split, index, test_index)
        except Dropped as dropped:
            return dropped
        except (KeyError, TypeError, ValueError) as exc:
            raise DataSourceError(
                f"debug: row {index} of split {split!r} fits neither DebugEval nor "
                f"DebugBench: {type(exc).__name__}: {exc}"
            ) from exc

    workers = workers or max(2, min(8, os.cpu_count() or 1))
    with concurrent.futures.ThreadPoolExecutor(max_workers=workers) as pool:
        results = list(pool.map(attempt, enumerate(rows)))
    problems = [r for r in results if isinstance(r, Problem)]
    dropped = Counter(r.reason for r in results if isinstance(r, Dropped))
    log_counts(split, len(rows), len(problems), dropped)
    return problems


def log_counts(split: str, total: int, kept: int, dropped: Counter) -> None:
    """One line: how many rows were kept and why the others were dropped."""
    reasons = ", ".join(f"{reason}: {count}" for reason, count in sorted(dropped.items()))
    logger.info("debug (%s): kept %d of %d rows; dropped %s", split, kept, total, reasons or "none")


def _require_hub() -> None:
    if not base.hub_offline_flag():  # offline, the libraries answer from their cache
        reason = base.check_hub_reachable()
        if reason is not None:
            raise HubUnavailableError(f"cannot load the debug data from the hub: {reason}")


def load_debugeval(
    rows_file: str | os.PathLike | None = None, tests_file: str | os.PathLike | None = None
) -> list[Problem]:
    """Int-Bench's Debug set: DebugEval's Python repair rows with their tests joined.

    Each file not given is downloaded from ``yangweiqing/DebugEval``; with
    ``rows_file`` given the problems are of split ``local``.
    """
    if rows_file is None or tests_file is None:
        _require_hub()
    rows = read_jsonl(rows_file or download(DEBUGEVAL_ID, DEBUGEVAL_ROWS_FILE))
    index = read_test_index(tests_file or download(DEBUGEVAL_ID, DEBUGEVAL_TESTS_FILE))
    return map_rows(rows, "test" if rows_file is None else "local", index)


def load_debugbench(path: str | os.PathLike | None = None) -> list[Problem]:
    """DebugBench's Python rows with tests from their examples (see the module doc).

    ``path``: a local copy (JSON/JSONL, split ``local``); else the hub's split ``test``.
    A JSONL copy is read without ``datasets``.
    """
    if path is not None and Path(path).suffix.lower() == ".jsonl":
        return map_rows(base.jsonl_rows(Path(path)), "local")
    require("datasets", "datasets", "DebugBench from the hub or a JSON file")
    import datasets

    if path is None:
        _require_hub()
        rows = datasets.load_dataset(DEBUGBENCH_ID, split="test")
        return map_rows(rows, "test")
    rows = datasets.load_dataset("json", data_files=str(path), split="train")
    return map_rows(rows, "local")
