"""Row mappers on rows shaped like the real dataset cards (tests/fixtures/cards/).

The fixture files copy each card's column names, types and nesting with
invented content; they load through the local-file path, which uses the same
row mapper as the hub path.  Hub-path tests route ``datasets.load_dataset`` to
in-memory rows (tests/hub_fakes.py).
"""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

import intbench
from intbench.envs.domains import (
    DataSourceError,
    brainteaser,
    get_domain,
    load_problems,
    omni_math,
)
from intbench.envs.domains.base import HubSubset, SchemaMismatchError
from tests import hub_fakes

CARDS = Path(__file__).parent / "fixtures" / "cards"


def rows_of(name: str) -> list[dict]:
    return [json.loads(line) for line in (CARDS / name).read_text().splitlines() if line.strip()]


# --- brain teasers: Braingle exports ----------------------------------------------


def test_braingle_csv_applies_the_paper_filters_and_cuts_short_answers():
    problems = load_problems("brainteaser", source=str(CARDS / "braingle.csv"))
    # Too hard (2.45 > 2.0), not fun enough (1.70 < 2.0) and the image row are dropped;
    # difficulty exactly 2.0 and fun 2.05 stay.
    assert [p.fields["title"] for p in problems] == [
        "Dry Run",
        "Empty Hole",
        "Odd Letters",
        "Listed",
    ]
    assert [p.answer for p in problems] == ["A towel", "None", "E", "a clock; a map; a candle"]
    towel = problems[0]
    assert towel.solution == "A towel. The more it dries you, the wetter it gets."
    assert towel.question == "Dry Run\n\nWhat gets wetter the more it dries?"
    assert towel.fields["hint"] == "Think of the bathroom."
    assert "hint" not in problems[1].fields  # empty cell
    assert towel.metadata["difficulty"] == 1.32 and towel.metadata["fun"] == 2.85
    assert towel.metadata["popularity"] == 0.91
    assert "terms of use" in towel.metadata["license"] and towel.metadata["source"] == "local"
    assert [p.id for p in problems] == [f"brainteaser/local/{i}" for i in range(4)]


def test_braingle_answers_verify_against_the_short_answer():
    problems = load_problems("brainteaser", source=str(CARDS / "braingle.csv"))
    towel = problems[0]
    assert intbench.verify(towel, "Answer: a towel").correct
    assert not intbench.verify(towel, "Answer: a sponge").correct


def test_braingle_filters_are_options():
    every = brainteaser.load_braingle(CARDS / "braingle.csv", brainteaser.NO_FILTER)
    assert len(every) == 7
    lenient = brainteaser.load_braingle(
        CARDS / "braingle.csv", brainteaser.BraingleFilter(max_difficulty=2.5)
    )
    assert "Too Hard" in {p.fields["title"] for p in lenient}
    assert "Not Fun" not in {p.fields["title"] for p in lenient}
    with_images = brainteaser.load_braingle(
        CARDS / "braingle.csv", brainteaser.BraingleFilter(drop_images=False)
    )
    assert "Picture" in {p.fields["title"] for p in with_images}


def test_braingle_columns_are_case_insensitive(tmp_path):
    rows = rows_of("braingle_categories.jsonl")
    shouted = tmp_path / "upper.jsonl"
    shouted.write_text(
        "".join(json.dumps({k.upper(): v for k, v in r.items()}) + "\n" for r in rows)
    )
    lower = tmp_path / "lower.jsonl"
    lower.write_text("".join(json.dumps({k.lower(): v for k, v in r.items()}) + "\n" for r in rows))
    as_is = [
        p.to_dict()
        for p in load_problems("brainteaser", source=str(CARDS / "braingle_categories.jsonl"))
    ]
    assert [p.to_dict() for p in load_problems("brainteaser", source=str(shouted))] == as_is
    assert [p.to_dict() for p in load_problems("brainteaser", source=str(lower))] == as_is


def test_braingle_category_filter_where_a_category_column_exists():
    problems = load_problems("brainteaser", source=str(CARDS / "braingle_categories.jsonl"))
    # "Math" is not one of the paper's categories; "language" matches case-insensitively.
    assert [(p.metadata["category"], p.answer) for p in problems] == [
        ("Riddle", "Silence"),
        ("language", "Short"),
    ]
    every = brainteaser.load_braingle(
        CARDS / "braingle_categories.jsonl", brainteaser.BraingleFilter(categories=None)
    )
    assert [p.answer for p in every] == ["Silence", "Short", "100"]


def test_hub_rows_skip_the_category_filter(monkeypatch):
    # The hub set's categories (Math, Logic) are none of the paper's four: filtering
    # them by category would drop every row.
    hub = hub_fakes.install(monkeypatch)
    hub.add(brainteaser.HUB_ID, "train", rows_of("braingle_categories.jsonl"))
    problems = load_problems("brainteaser", source="hub")
    assert [p.answer for p in problems] == ["Silence", "Short", "100"]
    assert problems[0].id == "brainteaser/train/0"
    assert problems[0].metadata["source"] == brainteaser.HUB_ID


def test_braingle_sample_is_capped_and_seeded():
    a = load_problems("brainteaser", source=str(CARDS / "braingle.csv"), n=2, seed=3)
    b = load_problems("brainteaser", source=str(CARDS / "braingle.csv"), n=2, seed=3)
    assert len(a) == 2 and [p.id for p in a] == [p.id for p in b]
    with pytest.raises(DataSourceError, match="only 4 are available"):
        load_problems("brainteaser", source=str(CARDS / "braingle.csv"), n=5)


@pytest.mark.parametrize(
    "explanation, short",
    [
        ("A towel. The more it dries, the wetter it gets.", "A towel"),
        ("Answer: Nothing. A hole is empty.", "Nothing"),
        ("The answer is - seven. Count them.", "seven"),
        ("Answer:\nThe letter M.\nIt is in minute once.", "The letter M"),
        ("The words are:\napple\nbanana\n\nBoth are fruit.", "apple; banana"),
        ("1. Apple\n2. Pear\n\nBoth are fruit.", "1. Apple; 2. Pear"),
        ("1. Apple 2. Pear", "1. Apple 2. Pear"),
        ("E. They are the first letters of the numbers.", "E"),
        ("The letter E. It appears twice.", "The letter E"),
        ("J. R. R. Tolkien. He wrote it.", "J. R. R. Tolkien"),
        ("Mr. Smith was the butler. He lied.", "Mr. Smith was the butler"),
        ("It was 3.5 miles. Far.", "It was 3.5 miles"),
        ("100. The sum of the first ten odd numbers.", "100"),
        ("The man was bald<br>so his hair stayed dry.", "The man was bald"),
        ("&quot;Silence&quot;. Saying it breaks it.", '"Silence"'),
        ("Who? Me.", "Who?"),
        ("Nothing!", "Nothing"),
        ("none", "none"),
    ],
)
def test_short_answer_rule(explanation, short):
    assert brainteaser.short_answer(explanation) == short


def test_rows_with_a_short_answer_column_keep_it():
    problem = brainteaser.row_to_problem(
        {"question": "Q?", "answer": "none", "solution": "Because. It is so."}, "local", 0
    )
    assert problem.answer == "none" and problem.solution == "Because. It is so."
    plain = brainteaser.row_to_problem({"question": "Q?", "answer": "Nothing."}, "local", 1)
    assert plain.answer == "Nothing" and plain.solution is None


def test_empty_csv_cells_read_as_nan_are_missing():
    row = {"Question": "Q?", "Answer": "Yes. Because.", "Hint": float("nan"), "Title": float("nan")}
    problem = brainteaser.row_to_problem(row, "local", 0)
    assert (
        problem.question == "Q?" and "hint" not in problem.fields and "title" not in problem.fields
    )


# --- Omni-MATH: the full set and the feedback paper's held-out set -----------------


def test_omni_math_full_set_rows_map():
    problems = load_problems("omni_math", source=str(CARDS / "omni_math_test.jsonl"))
    assert [p.answer for p in problems] == ["3", "2", "32"]
    second = problems[1]
    assert second.metadata["difficulty"] == 7.5 and isinstance(second.metadata["difficulty"], float)
    assert second.metadata["domain"] == [
        "Mathematics -> Algebra -> Inequalities",
        "Mathematics -> Algebra -> Other",
    ]
    assert second.metadata["competition"] == "invented_olympiad"
    assert second.solution.startswith("By AM-HM")
    assert second.metadata["problem_id"] == omni_math.problem_key(second.question)
    assert len(load_problems("omni_math", source=str(CARDS / "omni_math_test.jsonl"), n=2)) == 2


def test_omni_math_filtered_rows_map_without_a_domain_column():
    problems = load_problems("omni_math", source=str(CARDS / "omni_math_filtered.jsonl"))
    assert [p.answer for p in problems] == ["210", "24", "2"]
    assert problems[0].metadata["domain"] == [] and problems[0].metadata["difficulty"] == 1.5


def test_problem_key_is_the_feedback_codes_problem_id():
    # "problem_" + the first 16 hex digits of SHA-1 over the whitespace-normalised text.
    assert omni_math.problem_key("What is  1 +\n 1?") == "problem_ed434a97b946372e"
    assert omni_math.problem_key("What is 1 + 1?") == "problem_ed434a97b946372e"


def test_heldout_selection_is_pinned():
    # numpy.random.default_rng(0).permutation over the sorted ids; a change of NumPy's
    # stream would change the paper's 512 problems, so the selection is pinned here.
    keys = [f"problem_{i:02d}" for i in range(10)]
    assert sorted(omni_math.heldout_keys(keys, size=3, seed=0)) == [
        "problem_02",
        "problem_04",
        "problem_06",
    ]
    assert omni_math.heldout_keys(reversed(keys + keys), size=3, seed=0) == {
        "problem_02",
        "problem_04",
        "problem_06",
    }
    assert omni_math.heldout_keys(keys, size=3, seed=1) != omni_math.heldout_keys(keys, 3, 0)
    with pytest.raises(DataSourceError, match="more than 10 distinct"):
        omni_math.heldout_keys(keys, size=10)


def synthetic_filtered_rows(count: int) -> list[dict]:
    """Rows in the filtered set's columns, with invented problems."""
    return [
        {
            "problem": f"Compute ${i} \\times {i + 3}$.",
            "answer": str(i * (i + 3)),
            "solution": f"${i} \\times {i + 3} = {i * (i + 3)}$.",
            "source": "invented_olympiad",
            "difficulty": float(1 + i % 9),
        }
        for i in range(count)
    ]


def test_paper_split_holds_out_512_problems_independent_of_row_order(monkeypatch):
    rows = synthetic_filtered_rows(700)
    hub = hub_fakes.install(monkeypatch)
    hub.add(omni_math.FILTERED_HUB_ID, "train", rows)
    first = load_problems("omni_math", source="hub", split="paper")
    again = load_problems("omni_math", source="hub", split="paper")
    shuffled = rows[:]
    random.Random(5).shuffle(shuffled)
    hub.add(omni_math.FILTERED_HUB_ID, "train", shuffled)
    reordered = load_problems("omni_math", source="hub", split="paper")

    assert hub.calls[0] == (omni_math.FILTERED_HUB_ID, None, "train")
    assert len(first) == 512 and len({p.id for p in first}) == 512
    assert [p.id for p in first] == [p.id for p in again]
    assert sorted(p.id for p in reordered) == sorted(p.id for p in first)
    assert all(p.id == f"omni_math/paper/{p.metadata['problem_id']}" for p in first)
    assert first[0].metadata["source"] == omni_math.FILTERED_HUB_ID
    assert first[0].metadata["split"] == "paper"
    # The same 512 as the feedback code's selection over the statements.
    wanted = omni_math.heldout_keys(omni_math.problem_key(r["problem"]) for r in rows)
    assert {p.metadata["problem_id"] for p in first} == wanted


def test_paper_heldout_of_a_local_copy(tmp_path):
    rows = synthetic_filtered_rows(600)
    for order, name in ((rows, "a.jsonl"), (rows[::-1], "b.jsonl")):
        (tmp_path / name).write_text("".join(json.dumps(r) + "\n" for r in order))
    a = omni_math.paper_heldout(load_problems("omni_math", source=str(tmp_path / "a.jsonl")))
    b = omni_math.paper_heldout(load_problems("omni_math", source=str(tmp_path / "b.jsonl")))
    assert len(a) == 512
    assert {p.metadata["problem_id"] for p in a} == {p.metadata["problem_id"] for p in b}


def test_paper_heldout_keeps_repeated_statements_with_unique_ids(monkeypatch):
    rows = synthetic_filtered_rows(520)
    rows.append(dict(rows[0]))  # the same statement twice
    hub = hub_fakes.install(monkeypatch)
    hub.add(omni_math.FILTERED_HUB_ID, "train", rows)
    problems = load_problems("omni_math", source="hub", split="paper")
    assert len({p.id for p in problems}) == len(problems)
    repeated = omni_math.problem_key(rows[0]["problem"])
    count = sum(p.metadata["problem_id"] == repeated for p in problems)
    assert count in (0, 2)  # both rows of a held-out statement, or neither


def test_omni_math_hub_splits():
    hub = get_domain("omni_math").hub
    assert (hub["test"].path, hub["test"].split) == ("KbsdJames/Omni-MATH", "test")
    paper = hub["paper"]
    assert isinstance(paper, HubSubset)
    assert (paper.path, paper.split) == ("LLParallax/Omni-MATH-filtered", "train")
    assert "512" in paper.describe() and "seed 0" in paper.describe()


# --- BBEH Linguini, MATH-500, ARC -----------------------------------------------------


def test_bbeh_rows_keep_only_linguini():
    problems = load_problems("linguini", source=str(CARDS / "bbeh.jsonl"))
    assert [p.answer for p in problems] == ["kakaka", "mokori"]
    assert [p.id for p in problems] == ["linguini/local/0", "linguini/local/2"]
    assert [p.metadata["mini"] for p in problems] == [True, False]
    assert problems[0].metadata["task"] == "bbeh_linguini"
    assert len(load_problems("linguini", source=str(CARDS / "bbeh.jsonl"), n=1)) == 1


def test_bbeh_hub_split_is_train(monkeypatch):
    hub = hub_fakes.install(monkeypatch)
    hub.add("BBEH/bbeh", "train", rows_of("bbeh.jsonl"))
    problems = load_problems("linguini", source="hub")
    assert hub.calls == [("BBEH/bbeh", None, "train")]
    assert [p.id for p in problems] == ["linguini/test/0", "linguini/test/2"]


def test_math500_rows_map():
    problems = load_problems("math", source=str(CARDS / "math500.jsonl"))
    assert [p.id for p in problems] == [
        "math/local/test/algebra/7001.json",
        "math/local/test/number_theory/7002.json",
        "math/local/test/precalculus/7003.json",
    ]
    gcd = problems[1]
    assert (
        gcd.answer == "12"
        and gcd.metadata["level"] == 2
        and gcd.metadata["subject"] == "Number Theory"
    )
    assert intbench.verify(problems[2], "\\boxed{\\frac{1}{2}}").correct
    assert len(load_problems("math", source=str(CARDS / "math500.jsonl"), n=2, seed=1)) == 2


def test_arc_rows_map_and_verify():
    problems = load_problems("arc", source=str(CARDS / "arc_agi.jsonl"))
    assert [p.id for p in problems] == [
        "arc/local/0a1b2c3d",
        "arc/local/4e5f6a7b",
        "arc/local/8c9d0e1f",
    ]
    two = problems[1]
    assert two.answer == [[[6, 6], [6, 6]], [[7, 7], [7, 7]]]
    assert two.fields["test_inputs"] == [[[6]], [[7]]]
    assert two.fields["train"] == [{"input": [[5]], "output": [[5, 5], [5, 5]]}]
    assert all(intbench.verify(p, json.dumps({"outputs": p.answer})).correct for p in problems)
    assert len(load_problems("arc", source=str(CARDS / "arc_agi.jsonl"), n=2)) == 2


def test_arc_hub_reads_the_mirrors_test_split(monkeypatch):
    hub = hub_fakes.install(monkeypatch)
    hub.add("lee64/arc-agi-evaluation", "test", rows_of("arc_agi.jsonl"))
    problems = load_problems("arc", source="hub", split="evaluation")
    assert hub.calls == [("lee64/arc-agi-evaluation", None, "test")]
    assert problems[0].id == "arc/evaluation/0a1b2c3d"  # the offline id of the same task
    assert problems[0].metadata["source"] == "lee64/arc-agi-evaluation"
    offline = {p.id for p in load_problems("arc", split="evaluation")}
    assert all(p.id.startswith("arc/evaluation/") for p in problems) and offline


def test_hub_schema_confirmed_per_domain():
    confirmed = {
        name: get_domain(name).hub_schema_confirmed
        for name in ("arc", "brainteaser", "linguini", "math", "omni_math")
    }
    assert confirmed == {
        "arc": True,
        "brainteaser": False,  # gated, no features on its card
        "linguini": True,
        "math": True,
        "omni_math": True,
    }


# --- schema mismatches and CSV files ------------------------------------------------


def test_schema_mismatch_names_the_row_and_every_missing_column(tmp_path):
    rows = rows_of("math500.jsonl")
    rows[1] = {"subject": "Algebra", "level": 1, "unique_id": "x", "problem": None, "answer": None}
    bad = tmp_path / "bad.jsonl"
    bad.write_text("".join(json.dumps(r) + "\n" for r in rows))
    with pytest.raises(SchemaMismatchError) as info:
        load_problems("math", source=str(bad))
    error = info.value
    assert isinstance(error, DataSourceError)
    assert error.row_index == 1 and error.missing == ["problem", "answer"]
    message = str(error)
    assert "row 1 of file" in message and "missing column(s) ['problem', 'answer']" in message
    assert "\n" not in message and "Fix:" in message


def test_csv_files_load_for_any_domain(tmp_path):
    import datasets

    path = tmp_path / "math.csv"
    datasets.Dataset.from_list(rows_of("math500.jsonl")).to_csv(str(path))
    expected = [p.to_dict() for p in load_problems("math", source=str(CARDS / "math500.jsonl"))]
    assert [p.to_dict() for p in load_problems("math", source=str(path))] == expected


def test_skipped_rows_are_counted_by_reason_in_one_line(tmp_path, caplog):
    import logging

    rows = [
        {"input": "a", "target": "b", "task": "linguini", "mini": False},
        {"input": "c", "target": "d", "task": "dyck_languages", "mini": False},
        {"input": "e", "target": "f", "task": "dyck_languages", "mini": False},
    ]
    path = tmp_path / "bbeh.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    with caplog.at_level(logging.INFO, logger="intbench.envs.domains.base"):
        problems = load_problems("linguini", source=str(path))
    assert len(problems) == 1
    lines = [r.getMessage() for r in caplog.records if "skipped" in r.getMessage()]
    assert len(lines) == 1 and "kept 1 of 3 rows" in lines[0] and ": 2" in lines[0], lines


def _outcome(read) -> list[dict] | str:
    try:
        return [p.to_dict() for p in read()]
    except SchemaMismatchError as exc:
        return str(exc)


@pytest.mark.parametrize(
    "domain, card",
    [
        ("arc", "arc_agi.jsonl"),
        ("brainteaser", "braingle_categories.jsonl"),
        ("linguini", "bbeh.jsonl"),
        ("math", "math500.jsonl"),
        ("omni_math", "omni_math_filtered.jsonl"),
        ("omni_math", "omni_math_test.jsonl"),
    ],
)
def test_local_jsonl_reads_as_datasets_reads_it(domain, card, tmp_path):
    # a JSONL source is read with json (no seconds-long datasets import): the same
    # problems, or the same error, as through datasets
    import datasets

    from intbench.envs.domains.base import _rows_to_problems, load_local
    from intbench.envs.domains.registry import get_domain

    spec = get_domain(domain)
    rows = [json.loads(line) for line in (CARDS / card).read_text().splitlines() if line.strip()]
    file = tmp_path / card
    for dropped in [None, *rows[0]]:  # a row without a column: datasets gives it None
        edited = [dict(r) for r in rows]
        edited[-1].pop(dropped, None)
        file.write_text("".join(json.dumps(r) + "\n" for r in edited))
        loaded = datasets.load_dataset("json", data_files=str(file), split="train")
        where = f"file {str(file)!r}"
        via_datasets = _outcome(lambda: _rows_to_problems(spec, loaded, "local", where))  # noqa: B023
        assert _outcome(lambda: load_local(spec, file)) == via_datasets, dropped
