"""Codeforces and APPS rows: which become problems, with which tests, on every load path.

The rows are invented but shaped like the dataset cards (``open-r1/codeforces``
and ``codeparrot/apps``): the same column names, types and nesting.
"""

from __future__ import annotations

import json
import logging

import pytest

import intbench
from intbench.envs.domains import DataSourceError, load_problems
from intbench.envs.domains.codeforces import DOMAIN, case_timeout_s, load_codeforces
from intbench.verifiers.code_split import visible_indices

LOGGER = "intbench.envs.domains.codeforces"
PLUS_ONE = "print(int(input()) + 1)"


def card_row(problem_id: str, **overrides) -> dict:
    """One open-r1/codeforces row (every column of the card) of an "add one" problem."""
    row = {
        "id": problem_id,
        "aliases": [f"gym{problem_id}"],
        "contest_id": problem_id[:-1],
        "contest_name": f"Practice Round {problem_id[:-1]}",
        "contest_type": "CF",
        "contest_start": 1_700_000_000,
        "contest_start_year": 2023,
        "index": problem_id[-1],
        "time_limit": 1.0,
        "memory_limit": 256.0,
        "title": f"Successor {problem_id}",
        "description": "Read an integer $n$ and print $n + 1$.",
        "input_format": "One integer $n$ ($1 \\le n \\le 1000$).",
        "output_format": "Print one integer.",
        "interaction_format": None,
        "note": None,
        "examples": [{"input": "7\n", "output": "8\n"}],
        "editorial": None,
        "rating": 1200,
        "tags": ["implementation"],
        "testset_size": 3,
        "official_tests": official_tests(3),
        "official_tests_complete": True,
        "input_mode": "stdio",
        "generated_checker": None,
        "executable": True,
        "generated_tests": 0,
    }
    row.update(overrides)
    return row


def official_tests(count: int) -> list[dict]:
    return [{"input": f"{k}\n", "output": f"{k + 1}\n"} for k in range(1, count + 1)]


def apps_row(problem_id: int, tests: int = 3, **io_extra) -> dict:
    """One codeparrot/apps row; ``input_output`` and ``solutions`` are JSON text as on the hub."""
    inputs = [f"{k}\n" for k in range(1, tests + 1)]
    # APPS stores some expected outputs as lists of lines.
    outputs = [[str(k + 1)] if k % 2 else f"{k + 1}\n" for k in range(1, tests + 1)]
    return {
        "problem_id": problem_id,
        "question": "Given an integer n, output n + 1.",
        "solutions": json.dumps([PLUS_ONE, "n = int(input())\nprint(n + 1)"]),
        "input_output": json.dumps({"inputs": inputs, "outputs": outputs, **io_extra}),
        "difficulty": "interview",
        "url": f"https://example.org/apps/{problem_id}",
        "starter_code": "",
    }


def write_rows(path, rows: list[dict]) -> str:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return str(path)


def fenced(program: str) -> str:
    return f"```python\n{program}\n```"


def tail_ids(problems) -> list[str]:
    return [p.id.rsplit("/", 1)[1] for p in problems]


@pytest.fixture
def mixed_file(tmp_path):
    """One row to keep and one row for each reason a row is skipped."""
    return write_rows(
        tmp_path / "codeforces.jsonl",
        [
            card_row("9100A"),
            card_row("9100B", input_mode="file"),
            card_row("9100C", generated_checker="import sys\n# accepts any valid order\n"),
            card_row("9100D", official_tests_complete=False),
            card_row("9100E", official_tests=[], testset_size=0),
            card_row("9100F", interaction_format="Ask '? x'; the judge answers."),
        ],
    )


def test_unusable_rows_are_skipped_and_counted_in_one_log_line(mixed_file, caplog):
    caplog.set_level(logging.INFO, logger=LOGGER)
    problems = load_codeforces(mixed_file)
    assert [p.id for p in problems] == ["codeforces/local/9100A"]
    lines = [r for r in caplog.records if r.name == LOGGER]
    assert len(lines) == 1 and lines[0].levelno == logging.INFO
    message = lines[0].getMessage()
    assert "kept 1 of 6 rows" in message
    for reason in ("file input", "needs checker", "incomplete tests", "no tests", "interactive"):
        assert f"{reason} 1" in message


def test_registered_domain_maps_local_rows_with_the_same_defaults(mixed_file):
    plain = load_problems("codeforces", source=mixed_file)
    assert [p.to_dict() for p in plain] == [p.to_dict() for p in load_codeforces(mixed_file)]


def test_kept_problem_is_graded_on_its_official_tests(mixed_file):
    problem = load_codeforces(mixed_file)[0]
    assert problem.tests["cases"] == official_tests(3)
    assert problem.tests["time_limit_s"] == 10.0 and problem.tests["memory_limit_mb"] == 256
    assert problem.metadata["rating"] == 1200 and problem.metadata["tests_available"] == 3
    assert intbench.verify(problem, fenced(PLUS_ONE)).correct
    assert not intbench.verify(problem, fenced("print(8)")).correct  # passes the example only


def test_per_test_timeouts_are_the_feedback_papers(tmp_path):
    """A.4: "per-case timeout defaults to 10 seconds, is multiplied by 10 when a dataset
    time limit is available, and is clamped between 5 and 20 seconds"."""
    by_hand = {None: 10.0, 0: 10.0, 0.25: 5.0, 0.5: 5.0, 1.0: 10.0, 1.5: 15.0, 2.0: 20.0, 4: 20.0}
    assert {limit: case_timeout_s(limit) for limit in by_hand} == by_hand
    rows = [card_row("9300A", time_limit=2.5), card_row("9300B", time_limit=None)]
    problems = load_codeforces(write_rows(tmp_path / "cf.jsonl", rows))
    assert [p.tests["time_limit_s"] for p in problems] == [20.0, 10.0]
    assert "time limit 2.5 s per test" in problems[0].question  # the statement keeps the dataset's
    assert load_problems("codeforces", n=1)[0].tests["time_limit_s"] == 10.0  # HumanEval
    apps = load_codeforces(write_rows(tmp_path / "apps.jsonl", [apps_row(1)]))
    assert apps[0].tests["time_limit_s"] == 10.0


def test_official_tests_that_repeat_an_example_are_the_visible_ones(tmp_path):
    examples = [{"input": "2", "output": "3"}, {"input": "99\n", "output": "100\n"}]
    rows = [card_row("9400A", examples=examples), card_row("9400B", examples=[])]
    marked, unmarked = load_codeforces(write_rows(tmp_path / "cf.jsonl", rows))
    assert marked.tests["examples"] == [1]  # official test 2 is example 1; example 2 is not graded
    assert visible_indices(marked) == (1,)
    assert "examples" not in unmarked.tests and len(visible_indices(unmarked)) == 1


def test_incomplete_tests_are_kept_when_relaxed(mixed_file, caplog):
    caplog.set_level(logging.INFO, logger=LOGGER)
    problems = load_codeforces(mixed_file, require_complete=False)
    assert tail_ids(problems) == ["9100A", "9100D"]
    assert problems[1].metadata["official_tests_complete"] is False
    assert "no tests 1" in caplog.records[-1].getMessage()


def test_examples_never_stand_in_for_missing_tests(tmp_path):
    rows = [
        card_row("9200A", official_tests=[], official_tests_complete=False),
        card_row("9200B", official_tests=[]),
        card_row("9200C", examples=[{"input": "0\n", "output": "1\n"}]),
    ]
    file = write_rows(tmp_path / "cf.jsonl", rows)
    problems = load_codeforces(file, require_complete=False)
    assert tail_ids(problems) == ["9200C"]
    assert {"input": "0\n", "output": "1\n"} not in problems[0].tests["cases"]
    assert "Input:\n0\n" in problems[0].question  # the example stays in the statement


def test_tests_are_capped_at_the_first_sixteen_unless_told(tmp_path):
    file = write_rows(tmp_path / "cf.jsonl", [card_row("9300A", official_tests=official_tests(20))])
    default = load_codeforces(file)[0]
    assert default.tests["cases"] == official_tests(16)
    assert default.metadata["tests_available"] == 20
    assert load_problems("codeforces", source=file)[0].tests["cases"] == official_tests(16)
    assert load_codeforces(file, max_tests=5)[0].tests["cases"] == official_tests(5)
    assert load_codeforces(file, max_tests=None)[0].tests["cases"] == official_tests(20)


def test_rating_filter_is_off_by_default_and_inclusive(tmp_path, caplog):
    rows = [card_row(f"94{n}0A", rating=rating) for n, rating in enumerate([800, 1500, 2400, None])]
    file = write_rows(tmp_path / "cf.jsonl", rows)
    ratings = lambda **kw: [p.metadata["rating"] for p in load_codeforces(file, **kw)]  # noqa: E731
    assert ratings() == [800, 1500, 2400, None]
    caplog.set_level(logging.INFO, logger=LOGGER)
    assert ratings(min_rating=1500) == [1500, 2400]
    assert "rating out of range 1" in caplog.records[-1].getMessage()
    assert "no rating 1" in caplog.records[-1].getMessage()
    assert ratings(max_rating=1500) == [800, 1500]
    assert ratings(min_rating=1000, max_rating=2000) == [1500]


@pytest.mark.parametrize(
    "options",
    [{"max_tests": 0}, {"max_tests": True}, {"min_rating": 2000, "max_rating": 1000}],
)
def test_bad_options_are_a_clear_error(mixed_file, options):
    with pytest.raises(DataSourceError):
        load_codeforces(mixed_file, **options)


def test_unknown_dataset_is_a_clear_error(mixed_file):
    with pytest.raises(DataSourceError, match="apps"):
        load_codeforces(mixed_file, dataset="atcoder")


def test_apps_rows_keep_stdio_problems_only(tmp_path, caplog):
    rows = [
        apps_row(4001, tests=20),
        apps_row(4002, fn_name="add_one"),
        {**apps_row(4003), "input_output": ""},
    ]
    file = write_rows(tmp_path / "apps.jsonl", rows)
    caplog.set_level(logging.INFO, logger=LOGGER)
    problems = load_codeforces(file)
    assert [p.id for p in problems] == ["codeforces/local/apps-4001"]
    message = caplog.records[-1].getMessage()
    assert "kept 1 of 3 rows" in message and "call-based 1" in message and "no tests 1" in message
    problem = problems[0]
    cases = problem.tests["cases"]
    assert len(cases) == 16 and cases[0] == {"input": "1\n", "output": "2\n"}
    assert cases[1] == {"input": "2\n", "output": "3\n"}  # a list of lines becomes text
    assert problem.solution == PLUS_ONE and problem.metadata["difficulty"] == "interview"
    assert problem.metadata["upstream"] == "https://huggingface.co/datasets/codeparrot/apps"
    assert problem.metadata["license"] == "MIT"
    assert intbench.verify(problem, fenced(problem.solution)).correct
    assert not intbench.verify(problem, fenced("print(2)")).correct
    assert len(load_codeforces(file, max_tests=4)[0].tests["cases"]) == 4


def test_one_file_may_hold_both_shapes(tmp_path):
    file = write_rows(tmp_path / "both.jsonl", [card_row("9500A"), apps_row(4100)])
    problems = load_problems("codeforces", source=file)
    assert [p.id for p in problems] == ["codeforces/local/9500A", "codeforces/local/apps-4100"]
    assert [p.metadata["dataset"] for p in problems] == ["codeforces", "apps"]


def test_a_row_of_neither_shape_is_a_schema_error(tmp_path):
    file = write_rows(tmp_path / "bad.jsonl", [card_row("9700A", description=None)])
    with pytest.raises(DataSourceError, match="does not fit the hub schema"):
        load_codeforces(file)


# --- the hub path, with `datasets` faked at its boundary ----------------------------


@pytest.fixture
def fake_hub(monkeypatch):
    """Serve rows as ``datasets.load_dataset`` would; returns the calls made."""
    import datasets

    from intbench.envs.domains import base

    served: dict[str, list[dict]] = {}
    calls: list[tuple] = []
    real_load_dataset = datasets.load_dataset

    def load_dataset(path, name=None, split=None, **kwargs):
        if path not in served:  # local files still go through the real builders
            return real_load_dataset(path, name, split=split, **kwargs)
        calls.append((path, name, split))
        return datasets.Dataset.from_list(served[path])

    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.delenv("HF_DATASETS_OFFLINE", raising=False)
    monkeypatch.setattr(base, "check_hub_reachable", lambda *a, **k: None)
    monkeypatch.setattr(datasets, "load_dataset", load_dataset)
    return served, calls


def comparable(problem) -> dict:
    """A problem without the parts that name where it was loaded from."""
    data = problem.to_dict()
    data["id"] = data["id"].rsplit("/", 1)[1]
    data["metadata"] = {k: v for k, v in data["metadata"].items() if k not in ("source", "split")}
    return data


def test_hub_rows_map_exactly_like_local_rows(fake_hub, tmp_path, caplog):
    served, calls = fake_hub
    rows = [
        card_row("9600A", official_tests=official_tests(20)),
        card_row("9600B", generated_checker="print('checker')"),
        card_row("9600C", input_mode="file"),
        card_row("9600D", official_tests_complete=False),
    ]
    served["open-r1/codeforces"] = rows
    local_file = write_rows(tmp_path / "cf.jsonl", rows)
    caplog.set_level(logging.INFO, logger=LOGGER)
    hub = load_codeforces("hub", "test")
    hub_line = caplog.records[-1].getMessage()
    local = load_codeforces(local_file)
    assert calls == [("open-r1/codeforces", "default", "test")]
    assert [p.id for p in hub] == ["codeforces/test/9600A"]
    assert hub[0].metadata["source"] == "open-r1/codeforces"
    assert [comparable(p) for p in hub] == [comparable(p) for p in local]
    assert hub_line.split(": ", 1)[1] == caplog.records[-1].getMessage().split(": ", 1)[1]
    plain = load_problems("codeforces", source="hub", split="test")
    assert [p.to_dict() for p in plain] == [p.to_dict() for p in hub]


def test_apps_comes_from_its_parquet_copy_on_the_hub(fake_hub, tmp_path):
    served, calls = fake_hub
    rows = [apps_row(4201, tests=18), apps_row(4202, fn_name="solve")]
    served["metr-evals/apps"] = rows
    hub = load_codeforces("hub", "test", dataset="apps")
    assert calls == [("metr-evals/apps", None, "test")]
    assert [p.id for p in hub] == ["codeforces/test/apps-4201"]
    assert hub[0].metadata["source"] == "metr-evals/apps" and len(hub[0].tests["cases"]) == 16
    local = load_codeforces(write_rows(tmp_path / "apps.jsonl", rows))
    assert [comparable(p) for p in hub] == [comparable(p) for p in local]


def test_hub_schema_is_the_confirmed_card():
    assert DOMAIN.hub_schema_confirmed
    assert {ref.describe() for ref in DOMAIN.hub.values()} == {
        "open-r1/codeforces (default)[train]",
        "open-r1/codeforces (default)[test]",
        "metr-evals/apps[train]",
        "metr-evals/apps[test]",
    }


def test_the_plain_loader_and_the_cli_reach_apps_as_split_apps_test(fake_hub):
    served, calls = fake_hub
    served["metr-evals/apps"] = [apps_row(4201, tests=18), apps_row(4202, fn_name="solve")]
    served["open-r1/codeforces"] = [card_row("9600A")]
    apps = load_problems("codeforces", source="hub", split="apps_test")
    assert calls == [("metr-evals/apps", None, "test")]
    assert [p.id for p in apps] == ["codeforces/apps_test/apps-4201"]
    assert len(apps[0].tests["cases"]) == 16
    calls.clear()
    assert [p.id for p in load_problems("codeforces", source="hub")] == ["codeforces/test/9600A"]
    assert calls == [("open-r1/codeforces", "default", "test")]  # the default: not all four
