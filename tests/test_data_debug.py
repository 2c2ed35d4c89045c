"""Debug data: DebugEval rows joined with their tests, DebugBench rows with tests from
their examples, the hub and local paths, and the rows that are dropped and counted.

The rows are invented programs in the two datasets' shapes.  Grading runs the
project's code verifier in the real sandbox, as tests/test_verify_code.py does.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path

import datasets
import huggingface_hub
import pytest

from intbench.envs.domains import base, debug_sources, load_problems
from intbench.envs.domains.debug_sources import (
    DEBUGBENCH_ID,
    DEBUGEVAL_ID,
    DEBUGEVAL_ROWS_FILE,
    DEBUGEVAL_TESTS_FILE,
    TESTS_ENV,
    Dropped,
    load_debugbench,
    load_debugeval,
    parse_cases,
    row_to_problem,
)
from intbench.records import Verdict
from intbench.verifiers import verify

FIXTURES = Path(__file__).parent / "fixtures"
ROWS = FIXTURES / "debugeval_rows.jsonl"
TESTS = FIXTURES / "debugeval_tests.jsonl"
KEPT = ["abc900_a", "abc900_b", "abc900_c"]  # the Python rows that have tests
LOGGER = "intbench.envs.domains.debug_sources"


def fenced(code: str) -> str:
    return f"```python\n{code}\n```"


def count_line(caplog) -> str:
    (line,) = [
        r.getMessage() for r in caplog.records if r.name == LOGGER and "kept" in r.getMessage()
    ]
    return line


@pytest.fixture(autouse=True)
def isolated(tmp_path, monkeypatch):
    """A fresh check cache, no test file from the environment, no remembered indexes."""
    monkeypatch.setenv("INTBENCH_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv(TESTS_ENV, raising=False)
    debug_sources.clear_caches()
    yield
    debug_sources.clear_caches()


@pytest.fixture
def fake_hub(monkeypatch):
    """The hub as the two datasets' files and rows; records what was asked for."""
    asked: list[tuple] = []
    files = {DEBUGEVAL_ROWS_FILE: ROWS, DEBUGEVAL_TESTS_FILE: TESTS}

    def hf_hub_download(repo_id, filename, *, repo_type=None, **_):
        asked.append(("download", repo_id, filename, repo_type))
        assert repo_id == DEBUGEVAL_ID and repo_type == "dataset"
        return str(files[filename])

    real_load_dataset = datasets.load_dataset
    hub_rows = {DEBUGEVAL_ID: read_rows(ROWS), DEBUGBENCH_ID: DEBUGBENCH_ROWS}

    def load_dataset(path, name=None, split=None, **kwargs):
        if path not in hub_rows:  # local files are read for real
            return real_load_dataset(path, name, split=split, **kwargs)
        asked.append(("load_dataset", path, name, split))
        asked.append(("data_files", path, kwargs.get("data_files")))
        assert split == "test"
        return datasets.Dataset.from_list(hub_rows[path])

    for var in ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setattr(base, "check_hub_reachable", lambda *a, **k: None)
    monkeypatch.setattr(huggingface_hub, "hf_hub_download", hf_hub_download)
    monkeypatch.setattr(datasets, "load_dataset", load_dataset)
    return asked


def read_rows(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def same_problems(left, right) -> None:
    """Equal problems apart from the split in the id and the provenance."""
    assert len(left) == len(right)
    for a, b in zip(left, right, strict=True):
        assert a.id.split("/")[2:] == b.id.split("/")[2:]
        assert (a.question, a.solution, a.tests, a.fields) == (
            b.question,
            b.solution,
            b.tests,
            b.fields,
        )


# --- DebugEval --------------------------------------------------------------------


def test_debugeval_rows_and_test_file_give_stdio_problems(monkeypatch):
    monkeypatch.setenv(TESTS_ENV, str(TESTS))
    problems = load_problems("debug", source=str(ROWS))
    assert [p.id for p in problems] == [f"debug/local/{q}" for q in KEPT]
    rows = {r["question_id"]: r for r in read_rows(ROWS) if r["language"] == "python"}
    tests = {r["question_id"]: parse_cases(r["private_test_cases"]) for r in read_rows(TESTS)}
    for problem in problems:
        row = rows[problem.metadata["question_id"]]
        assert problem.solution == problem.fields["original_code"] == row["correct_code"]
        assert problem.fields["buggy_code"] == row["buggy_code"]
        assert row["buggy_code"].strip() in problem.question
        assert row["correct_code"].strip() not in problem.question
        assert problem.tests["kind"] == "stdio"
        assert problem.tests["cases"] == tests[problem.metadata["question_id"]]
        assert problem.metadata["source"] == "local" and problem.metadata["language"] == "python"
    assert len(problems[2].tests["cases"]) == 2  # read from the test file's JSON text


def test_debugeval_reference_passes_and_buggy_program_fails(monkeypatch):
    monkeypatch.setenv(TESTS_ENV, str(TESTS))
    problems = load_problems("debug", source=str(ROWS))
    fixed = [verify(p, fenced(p.solution)) for p in problems]
    buggy = [verify(p, fenced(p.fields["buggy_code"])) for p in problems]
    assert [v.status for v in fixed] == ["correct"] * len(KEPT), [v.feedback for v in fixed]
    assert [v.status for v in buggy] == ["incorrect"] * len(KEPT), [v.feedback for v in buggy]


def test_debugeval_drops_other_languages_and_untested_rows_with_one_count_line(caplog):
    caplog.set_level(logging.INFO, logger=LOGGER)
    problems = load_debugeval(ROWS, TESTS)
    assert [p.metadata["question_id"] for p in problems] == KEPT
    assert count_line(caplog) == (
        "debug (local): kept 3 of 6 rows; dropped cpp: 1, java: 1, without tests: 1"
    )


def test_debugeval_row_mapper_drops_with_a_reason():
    cpp, java, untested = read_rows(ROWS)[3:]
    for row, reason in ((cpp, "cpp"), (java, "java"), (untested, "without tests")):
        with pytest.raises(Dropped) as dropped:
            row_to_problem(row, "local", 0, test_index={})
        assert dropped.value.reason == reason


def test_local_rows_without_a_test_file_are_all_dropped(caplog):
    caplog.set_level(logging.WARNING, logger=LOGGER)
    assert load_problems("debug", source=str(ROWS)) == []  # never a problem without tests
    assert any(TESTS_ENV in r.getMessage() for r in caplog.records)


def test_rows_may_carry_their_own_tests(tmp_path):
    cases = [{"input": "4\n", "output": "10\n"}]
    row = {**read_rows(ROWS)[0], "private_test_cases": cases}
    path = tmp_path / "joined.jsonl"
    path.write_text(json.dumps(row) + "\n")
    (problem,) = load_problems("debug", source=str(path))
    assert problem.tests["cases"] == cases


def test_unreadable_or_non_stdin_tests_drop_the_row():
    with pytest.raises(Dropped, match="unreadable"):
        parse_cases("not json")
    with pytest.raises(Dropped, match="stdin"):
        parse_cases([{"input": "1", "output": "1", "testtype": "functional"}])
    assert parse_cases("") == [] and parse_cases(None) == []


def test_hub_path_maps_like_the_local_file(monkeypatch, fake_hub):
    hub = load_problems("debug", source="hub")
    assert ("load_dataset", DEBUGEVAL_ID, None, "test") in fake_hub
    # only the code-repair rows, not the repository's other files sorted into splits
    assert ("data_files", DEBUGEVAL_ID, {"test": [DEBUGEVAL_ROWS_FILE]}) in fake_hub
    assert ("download", DEBUGEVAL_ID, DEBUGEVAL_TESTS_FILE, "dataset") in fake_hub
    assert [p.id for p in hub] == [f"debug/test/{q}" for q in KEPT]
    assert all(p.metadata["source"] == DEBUGEVAL_ID for p in hub)
    monkeypatch.setenv(TESTS_ENV, str(TESTS))
    same_problems(hub, load_problems("debug", source=str(ROWS)))
    # The explicit-file loader downloads both files and gives the same problems.
    assert [p.to_dict() for p in load_debugeval()] == [p.to_dict() for p in hub]
    assert ("download", DEBUGEVAL_ID, DEBUGEVAL_ROWS_FILE, "dataset") in fake_hub


def test_a_file_not_at_its_path_is_found_by_name(monkeypatch):
    from huggingface_hub.errors import EntryNotFoundError

    def hf_hub_download(repo_id, filename, **_):
        if filename != "eval/atcoder_private_test_cases.jsonl":
            raise EntryNotFoundError(f"{filename} not found")
        return str(TESTS)

    listing = ["train/data.json", "eval/atcoder_private_test_cases.jsonl"]
    monkeypatch.setattr(huggingface_hub, "hf_hub_download", hf_hub_download)
    monkeypatch.setattr(huggingface_hub, "list_repo_files", lambda *a, **k: listing)
    assert debug_sources.download(DEBUGEVAL_ID, DEBUGEVAL_TESTS_FILE) == str(TESTS)


def test_hub_download_failures_are_hub_errors(monkeypatch):
    def offline(*a, **k):
        raise OSError("no network")

    monkeypatch.setattr(huggingface_hub, "hf_hub_download", offline)
    with pytest.raises(base.HubUnavailableError, match="no network"):
        debug_sources.download(DEBUGEVAL_ID, DEBUGEVAL_TESTS_FILE)


# --- DebugBench -------------------------------------------------------------------


def debugbench_row(slug, language, question, examples, solution, buggy, **more):
    return {
        "slug": slug, "category": "logic error", "subtype": "condition error",
        "language": language, "level": "easy", "release_time": 1700000000,
        "question": question, "examples": examples, "constraints": "small inputs",
        "solution": solution, "buggy_code": buggy, "bug_explanation": "see the diff", **more,
    }  # fmt: skip


DEBUGBENCH_ROWS = [
    debugbench_row(  # List comes from LeetCode's implicit imports
        "count-evens",
        "python3",
        "Return how many even numbers nums holds.",
        [
            "Input: nums = [1,2,4]\nOutput: 2",
            "Input: nums = [7]\nOutput: 0\nExplanation: 7 is odd.",
        ],
        "class Solution:\n    def countEvens(self, nums: List[int]) -> int:\n"
        "        return sum(1 for x in nums if x % 2 == 0)\n",
        "class Solution:\n    def countEvens(self, nums: List[int]) -> int:\n"
        "        return sum(1 for x in nums if x % 2 == 1)\n",
    ),
    debugbench_row(  # the third example's output is wrong: that example is left out
        "is-sorted",
        "python3",
        "Return true when nums never decreases.",
        [
            "Input: nums = [1,2,2]\nOutput: true",
            "Input: nums = [3,1]\nOutput: false",
            "Input: nums = [5]\nOutput: false",
        ],
        "class Solution:\n    def isSorted(self, nums):\n"
        "        return all(a <= b for a, b in pairwise(nums))\n",
        "class Solution:\n    def isSorted(self, nums):\n"
        "        return all(a < b for a, b in pairwise(nums))\n",
    ),
    debugbench_row(  # a design problem: its examples are no calls
        "min-stack",
        "python3",
        "Design a stack that returns its minimum.",
        ['Input\n["MinStack","push","getMin"]\n[[],[1],[]]\nOutput\n[null,null,1]'],
        "class MinStack:\n    def __init__(self):\n        self.items = []\n",
        "class MinStack:\n    def __init__(self):\n        self.item = []\n",
    ),
    debugbench_row(  # the examples never reach the bug
        "absolute",
        "python3",
        "Return the absolute value of x.",
        ["Input: x = 5\nOutput: 5", "Input: x = -3\nOutput: 3"],
        "class Solution:\n    def absolute(self, x):\n        return abs(x)\n",
        "class Solution:\n    def absolute(self, x):\n        return x if x >= -1 else -x\n",
    ),
    debugbench_row(  # ListNode is not defined: the reference cannot run
        "reverse-list",
        "python3",
        "Reverse the linked list.",
        ["Input: head = [1,2]\nOutput: [2,1]"],
        "class Solution:\n    def reverseList(self, head: Optional[ListNode]) -> Optional[ListNode]:\n"
        "        return head\n",
        "class Solution:\n    def reverseList(self, head: Optional[ListNode]) -> Optional[ListNode]:\n"
        "        return None\n",
    ),
    debugbench_row(
        "count-evens",
        "cpp",
        "Return how many even numbers nums holds.",
        ["Input: nums = [1,2,4]\nOutput: 2"],
        "class Solution { public: int countEvens(vector<int>& n) { int c = 0; "
        "for (int x : n) c += x % 2 == 0; return c; } };",
        "class Solution { public: int countEvens(vector<int>& n) { int c = 0; "
        "for (int x : n) c += x % 2 == 1; return c; } };",
    ),
    debugbench_row(
        "count-evens",
        "java",
        "Return how many even numbers nums holds.",
        ["Input: nums = [1,2,4]\nOutput: 2"],
        "class Solution { public int countEvens(int[] n) { int c = 0; "
        "for (int x : n) if (x % 2 == 0) c++; return c; } }",
        "class Solution { public int countEvens(int[] n) { int c = 0; "
        "for (int x : n) if (x % 2 == 1) c++; return c; } }",
    ),
]
DEBUGBENCH_COUNTS = (
    "debug (local): kept 2 of 7 rows; dropped cpp: 1, java: 1, whose bug the examples miss: 1, "
    "whose reference fails its examples: 1, without examples that parse: 1"
)


@pytest.fixture
def debugbench_file(tmp_path) -> Path:
    path = tmp_path / "debugbench.jsonl"
    path.write_text("".join(json.dumps(row) + "\n" for row in DEBUGBENCH_ROWS))
    return path


def test_debugbench_keeps_python_rows_whose_examples_grade(debugbench_file, caplog):
    caplog.set_level(logging.INFO, logger=LOGGER)
    problems = load_debugbench(debugbench_file)
    assert [p.id for p in problems] == ["debug/local/count-evens/0", "debug/local/is-sorted/1"]
    assert count_line(caplog) == DEBUGBENCH_COUNTS
    evens, ordered = problems
    assert evens.tests["kind"] == "function" and evens.tests["entry_point"] == "countEvens"
    assert [c["code"] for c in evens.tests["cases"]] == [
        "assert same(candidate(nums=[1, 2, 4]), 2)",
        "assert same(candidate(nums=[7]), 0)",
    ]
    assert len(ordered.tests["cases"]) == 2  # the example with the wrong output is gone
    assert "def countEvens(*args, **kwargs)" in evens.fields["buggy_code"]
    assert evens.fields["buggy_code"] in evens.question and "x % 2 == 1" in evens.question
    assert evens.metadata["source"] == "local" and evens.metadata["language"] == "python3"


def test_debugbench_reference_passes_and_buggy_program_fails(debugbench_file):
    problems = load_debugbench(debugbench_file)
    assert [verify(p, fenced(p.solution)).status for p in problems] == ["correct"] * 2
    assert [verify(p, fenced(p.fields["buggy_code"])).status for p in problems] == ["incorrect"] * 2


def test_debugbench_local_file_and_hub_map_alike(debugbench_file, fake_hub):
    direct = load_debugbench(debugbench_file)
    assert [p.to_dict() for p in load_problems("debug", source=str(debugbench_file))] == [
        p.to_dict() for p in direct
    ]  # the project's local-file path uses the same row mapper
    hub = load_debugbench()
    assert ("load_dataset", DEBUGBENCH_ID, None, "test") in fake_hub
    assert all(p.metadata["source"] == DEBUGBENCH_ID for p in hub)
    same_problems(hub, direct)


def test_debugbench_checks_are_cached(debugbench_file, monkeypatch):
    first = load_debugbench(debugbench_file)

    def no_sandbox(*args, **kwargs):
        raise AssertionError("the sandbox ran again")

    monkeypatch.setattr("intbench.verifiers.verify", no_sandbox)
    assert [p.to_dict() for p in load_debugbench(debugbench_file)] == [p.to_dict() for p in first]


def test_debugbench_rows_are_dropped_when_the_sandbox_cannot_check(
    debugbench_file, monkeypatch, caplog
):
    caplog.set_level(logging.INFO, logger=LOGGER)
    down = Verdict.error("sandbox error: no isolation", reason="sandbox_error")
    monkeypatch.setattr("intbench.verifiers.verify", lambda problem, response: down)
    assert load_debugbench(debugbench_file) == []
    assert "the sandbox could not check: 4" in count_line(caplog)
    monkeypatch.undo()  # the failure was not cached: with the sandbox back, rows are kept
    monkeypatch.setenv("INTBENCH_CACHE", str(debugbench_file.parent / "cache"))
    assert len(load_debugbench(debugbench_file)) == 2


def test_debugbench_rows_with_their_own_tests_keep_them():
    tests = {"kind": "stdio", "cases": [{"input": "", "output": "1"}]}
    row = {**DEBUGBENCH_ROWS[0], "tests": json.dumps(tests)}
    problem = row_to_problem(row, "local", 0)
    assert problem.tests == tests and problem.solution == row["solution"]
    with pytest.raises(Dropped, match="unusable"):
        row_to_problem({**row, "tests": json.dumps({"kind": "stdio", "cases": []})}, "local", 0)


def test_an_example_input_that_closes_the_call_is_no_example():
    # Inside f(...) "1), (2" parses as a tuple, not as a call's arguments.
    examples = debug_sources._examples(["Input: 1), (2\nOutput: 3", "Input: nums = [7]\nOutput: 0"])
    assert examples == [([], {"nums": [7]}, 0)]
