"""AST bug injection: determinism, minimal edits, and tests that catch the bugs."""

from __future__ import annotations

import ast
import difflib
import itertools

import pytest

from intbench.envs.domains.bug_injection import BUG_TYPES, iter_bugs
from intbench.envs.domains.codeforces import humaneval_problems

SAMPLE = '''\
def running_max(values, start=0):
    """Maximum of values[start:], or None when empty."""
    # keep this comment
    best = None
    for i in range(start, len(values)):
        if best is None or values[i] > best:
            best = values[i]
    return best


def countdown(n):
    out = []
    while n > 0:
        out.append(n)
        n -= 1
    return out
'''


def changed_lines(before: str, after: str) -> list[str]:
    diff = difflib.unified_diff(before.splitlines(), after.splitlines(), lineterm="", n=0)
    return [line for line in diff if line[:1] in "+-" and line[:3] not in ("+++", "---")]


def test_same_seed_same_bugs_and_seed_changes_order():
    first = list(iter_bugs(SAMPLE, "running_max", seed=0))
    again = list(iter_bugs(SAMPLE, "running_max", seed=0))
    other = list(iter_bugs(SAMPLE, "running_max", seed=1))
    assert first == again
    assert [b.code for b in first] != [b.code for b in other]
    assert {b.code for b in first} == {b.code for b in other}  # same pool, new order


def test_bugs_are_small_valid_edits_that_keep_comments():
    bugs = list(iter_bugs(SAMPLE, "running_max", seed=0))
    assert len(bugs) >= 8
    assert len({b.code for b in bugs}) == len(bugs)
    for bug in bugs:
        assert bug.bug_type in BUG_TYPES
        ast.parse(bug.code)
        assert bug.code != SAMPLE
        assert "# keep this comment" in bug.code and '"""Maximum of values' in bug.code
        changes = changed_lines(SAMPLE, bug.code)
        assert 1 <= len(changes) <= 2, (bug.description, changes)
        assert "countdown" in bug.code and bug.code.endswith("    return out\n")


def test_expected_mutations_are_offered():
    codes = {b.code for b in iter_bugs(SAMPLE, "running_max", seed=0)}
    assert SAMPLE.replace("range(start, len(values))", "range(start + 1, len(values))") in codes
    assert SAMPLE.replace("values[i] > best", "values[i] >= best") in codes
    assert SAMPLE.replace("best is None or", "best is None and") in codes
    assert SAMPLE.replace("best is None or", "best is not None or") in codes
    assert SAMPLE.replace("    best = None\n", "") in codes
    # the only statement of a block is never removed (the block would not parse)
    assert SAMPLE.replace("            best = values[i]\n", "") not in codes


def test_while_loops_and_docstrings_are_never_mutated():
    for bug in iter_bugs(SAMPLE, "countdown", seed=0):
        changes = changed_lines(SAMPLE, bug.code)
        assert all(
            "while" not in c and "n -= 1" not in c and "out.append" not in c for c in changes
        )
    assert not any(
        "Maximum of" in "".join(changed_lines(SAMPLE, b.code))
        for b in iter_bugs(SAMPLE, "running_max")
    )


def test_missing_function_is_a_clear_error():
    with pytest.raises(ValueError, match="no top-level function 'nope'"):
        next(iter_bugs(SAMPLE, "nope"))


def test_every_humaneval_problem_but_a_few_gets_candidates_of_many_types():
    types, empty = set(), 0
    for record in humaneval_problems().values():
        source = record["prompt"] + record["canonical_solution"]
        bugs = list(itertools.islice(iter_bugs(source, record["entry_point"]), 4))
        empty += not bugs
        types.update(b.bug_type for b in bugs)
    assert empty <= 10
    assert types == set(BUG_TYPES)


def test_verified_bugs_pass_the_sandboxed_filter():
    """The real verifier accepts the reference and rejects every kept bug."""
    pytest.importorskip("intbench.verifiers.code")
    import intbench
    from intbench.envs.domains.codeforces import humaneval_problem
    from intbench.envs.domains.debug import _bugs_for

    records = [humaneval_problems()[f"HumanEval/{i}"] for i in (0, 2, 12)]
    kept = [bug for record in records for bug in _bugs_for(record, intbench.verify)[0]]
    assert len(kept) >= 3
    for bug in kept:
        reference = humaneval_problem(humaneval_problems()[bug["task_id"]])
        verdict = intbench.verify(reference, f"```python\n{bug['buggy_code']}\n```")
        assert verdict.status == "incorrect"
