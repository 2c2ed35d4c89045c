"""Generalization: the three context conditions, their records, and the metric G."""

from __future__ import annotations

import math
import re

import gymnasium as gym
import pytest

import intbench  # noqa: F401  (registers the ids)
from intbench.agents.backends.scripted import ScriptedBackend
from intbench.agents.base import Completion
from intbench.generalization import (
    CONTEXTS,
    ContextUnavailable,
    context_messages,
    evaluate_generalization,
    generalization_scores,
    generalization_table,
)
from intbench.records import Episode, Problem

BASELINE = "Let me add. 2 plus 3 is 6, I believe, after carrying the one. " * 2 + "So \\boxed{6}."
REVISED = "Right, no carry is needed: 2 + 3 = 5. \\boxed{5}"


def originals() -> list[Problem]:
    return [Problem(f"t/{i}", "math", f"What is {i} + 3?", str(i + 3)) for i in range(3)]


def variants() -> list[Problem]:
    """Two variants of t/0 and t/1, one of t/2; answers a + b."""
    pairs = {"t/0": [(4, 5), (6, 7)], "t/1": [(10, 1), (2, 2)], "t/2": [(8, 8)]}
    return [
        Problem(
            f"{pid}/variant/{k}",
            "math",
            f"How much is {a} plus {b}?",
            str(a + b),
            metadata={"variant_of": pid, "skill": "adding integers"},
        )
        for pid, items in pairs.items()
        for k, (a, b) in enumerate(items)
    ]


def monitor_student(messages):
    text = messages[-1]["content"]
    return REVISED if "<update>" in text else BASELINE


def monitor_episodes(intervene_on=(0, 1)) -> list[dict]:
    """Real monitor records: the teacher intervenes at the first step on ``intervene_on``."""
    env = gym.make(
        "IntBench-Math-v0", student=ScriptedBackend(monitor_student), problems=originals()
    )
    records = []
    for index in range(3):
        env.reset(seed=index, options={"problem_index": index})
        done = False
        while not done:
            action = {"intervene": int(index in intervene_on), "message": "Check the carry."}
            _, _, done, _, _ = env.step(action)
        record = env.unwrapped.last_episode.to_dict()
        record["teacher"] = "at:0"
        records.append(record)
    return records


def variant_answer(text: str, right: bool) -> str:
    a, b = map(int, re.search(r"How much is (\d+) plus (\d+)\?", text).groups())
    return f"\\boxed{{{a + b if right else a + b + 1}}}"


FIRST_VARIANTS = ("4 plus 5", "10 plus 1", "8 plus 8")


def context_student(messages):
    """Right on every variant with the intervention in context, on the first variant
    of each problem with the problem in context, never without context."""
    text = messages[-1]["content"]
    if "<update>" in text:
        return variant_answer(text, True)
    if "Earlier problem" in text:
        return variant_answer(text, any(q in text for q in FIRST_VARIANTS))
    return variant_answer(text, False)


@pytest.fixture(autouse=True)
def _cache(tmp_path, monkeypatch):
    monkeypatch.setenv("INTBENCH_CACHE", str(tmp_path / "cache"))


# ------------------------------------------------------------------ prompts
def test_each_context_shows_what_the_paper_describes():
    episode = monitor_episodes()[0]
    original, variant = originals()[0], variants()[0]
    position = episode["intervention"]["position"]
    assert position == 50

    plain = context_messages("no_context", variant)[-1]["content"]
    assert "How much is 4 plus 5?" in plain and "What is 0 + 3?" not in plain

    problem = context_messages("problem_context", variant, original, episode)[-1]["content"]
    assert "Earlier problem:\nWhat is 0 + 3?" in problem
    assert BASELINE.strip() in problem and "Your answer: 6" in problem
    assert "It was judged incorrect." in problem and "<update>" not in problem
    assert problem.index("What is 0 + 3?") < problem.index("How much is 4 plus 5?")

    assisted = context_messages("intervention_context", variant, original, episode)[-1]["content"]
    assert f"<student_reasoning>\n{BASELINE[:position]}\n</student_reasoning>" in assisted
    assert "<update>Check the carry.</update>" in assisted
    assert REVISED in assisted and "Your answer: 5" in assisted
    assert "It was judged incorrect: Extracted answer 5 does not match the reference 3" in assisted
    assert assisted.rstrip().endswith("\\boxed{your answer}.")


def test_contexts_refuse_what_the_episode_cannot_show():
    episodes = monitor_episodes(intervene_on=())
    with pytest.raises(ContextUnavailable, match="no applied intervention"):
        context_messages("intervention_context", variants()[0], originals()[0], episodes[0])
    with pytest.raises(ContextUnavailable, match="needs the original"):
        context_messages("problem_context", variants()[0])
    with pytest.raises(ValueError, match="unknown context"):
        context_messages("full_context", variants()[0])


# ------------------------------------------------------------------ records
def test_evaluation_writes_one_record_per_episode_variant_and_context(tmp_path):
    episodes = monitor_episodes()
    student = ScriptedBackend(context_student, spec="scripted:ctx")
    result = evaluate_generalization(
        episodes, variants(), originals(), student, out_dir=tmp_path / "gen"
    )
    # Episodes 0 and 1 have an intervention (2 variants each); episode 2 is skipped.
    assert result.ran == len(result.records) == 2 * 2 * 3
    assert result.skipped == [
        {"episode_id": episodes[2]["episode_id"], "reason": "no applied intervention"}
    ]
    record = next(r for r in result.records if r["condition"] == "intervention_context")
    assert record["protocol"] == "generalization" and record["teacher"] == "at:0"
    assert record["student"] == "scripted:ctx" and record["problem_id"].startswith("t/0/variant/")
    meta = record["metadata"]
    assert meta["original_episode_id"] == episodes[0]["episode_id"]
    assert meta["original_problem_id"] == "t/0" and meta["variant_id"] == record["problem_id"]
    assert meta["skill"] == "adding integers" and meta["original_condition"] == "standard"
    (attempt,) = record["attempts"]
    assert attempt["verdict"]["status"] == "correct" and record["solved_at"] == 1
    Episode.from_dict(record)  # a valid episode record
    # The three contexts of one (episode, variant) share their sampling seed.
    seeds = {(r["metadata"]["original_episode_id"], r["problem_id"]): set() for r in result.records}
    for r in result.records:
        seeds[(r["metadata"]["original_episode_id"], r["problem_id"])].add(r["seed"])
    assert all(len(s) == 1 for s in seeds.values()) and len({min(s) for s in seeds.values()}) == 4
    # Re-running resumes: nothing new is generated.
    again = evaluate_generalization(
        episodes,
        variants(),
        originals(),
        ScriptedBackend(lambda m: 1 / 0),
        out_dir=tmp_path / "gen",
    )
    assert again.ran == 0 and len(again.records) == 12


def test_all_episodes_mode_skips_only_the_missing_intervention_context():
    episodes = monitor_episodes(intervene_on=(0,))
    student = ScriptedBackend(context_student, spec="scripted:ctx")
    result = evaluate_generalization(
        episodes, variants(), originals(), student, contexts=["no_context", "intervention_context"],
        only_intervened=False,
    )  # fmt: skip
    counted = {}
    for r in result.records:
        key = (r["metadata"]["original_problem_id"], r["condition"])
        counted[key] = counted.get(key, 0) + 1
    assert counted == {
        ("t/0", "no_context"): 2, ("t/0", "intervention_context"): 2,
        ("t/1", "no_context"): 2, ("t/2", "no_context"): 1,
    }  # fmt: skip
    assert [
        r["metadata"]["original_intervened"]
        for r in result.records
        if r["metadata"]["original_problem_id"] == "t/2"
    ] == [False]


def test_failures_are_recorded_and_bad_input_is_refused():
    episodes = monitor_episodes()

    def flaky(messages):
        if "10 plus 1" in messages[-1]["content"]:
            return Completion(text="", finish_reason="error", error="timeout")
        return context_student(messages)

    result = evaluate_generalization(episodes, variants(), originals(), ScriptedBackend(flaky))
    failed = [r for r in result.records if r["error"]]
    assert len(failed) == 3 and all(
        "student failed on the variant: timeout" in r["error"] for r in failed
    )
    missing = evaluate_generalization(
        episodes, variants()[:2], originals()[:1], ScriptedBackend(flaky)
    )
    assert {s["reason"] for s in missing.skipped} == {
        "original problem not given",
        "no applied intervention",
    }
    no_variants = evaluate_generalization(
        episodes, variants()[:2], originals(), ScriptedBackend(flaky)
    )
    assert "no variants of this problem" in {s["reason"] for s in no_variants.skipped}
    with pytest.raises(ValueError, match="unknown context"):
        evaluate_generalization(
            episodes, variants(), originals(), ScriptedBackend(flaky), contexts=["x"]
        )


# ------------------------------------------------------------------ metric
def record(problem: str, variant: int, context: str, correct: bool | None) -> dict:
    """A minimal generalization record; ``correct=None`` is a failed (error) record."""
    status = "error" if correct is None else "correct" if correct else "incorrect"
    return Episode(
        protocol="generalization", problem_id=f"{problem}/v{variant}", domain="math",
        student="s", teacher="t", condition=context,
        attempts=[{"text": "", "verdict": {"status": status}}],
        metadata={"original_problem_id": problem, "original_condition": "standard"},
        error="grader error" if correct is None else None,
    ).to_dict()  # fmt: skip


def test_g_matches_hand_computed_values():
    records = [
        # problem A: 2 variants
        record("A", 0, "no_context", True), record("A", 1, "no_context", False),
        record("A", 0, "problem_context", True), record("A", 1, "problem_context", True),
        record("A", 0, "intervention_context", False), record("A", 1, "intervention_context", False),
        # problem B: 4 variants, one error record that must not count
        *[record("B", k, "no_context", k == 0) for k in range(4)],
        *[record("B", k, "problem_context", k < 2) for k in range(4)],
        record("B", 0, "intervention_context", True), record("B", 1, "intervention_context", None),
        # problem C: only under No-Context (so it is unpaired for ΔG)
        record("C", 0, "no_context", True),
    ]  # fmt: skip
    scores = generalization_scores(records, samples=200)
    # Int-Bench §3.5, per reference-variant pair.  No-Context: A/v0 1, A/v1 0,
    # B/v0 1, B/v1..3 0, C/v0 1 -> accuracy 3/7.
    assert scores["no_context"]["accuracy"].value == pytest.approx(3 / 7)
    # Problem-Context: A 1, 1; B 1, 1, 0, 0 -> accuracy 4/6;
    # G_i over the same 6 pairs: 0, 1, 0, 1, 0, 0 -> G = 2/6
    assert scores["problem_context"]["accuracy"].value == pytest.approx(4 / 6)
    assert scores["problem_context"]["G"].value == pytest.approx(2 / 6)
    # Intervention-Context: A 0, 0; B/v0 1 (B/v1's error record is left out) -> 1/3;
    # G_i: A/v0 -1, A/v1 0, B/v0 0 -> G = -1/3
    assert scores["intervention_context"]["accuracy"].value == pytest.approx(1 / 3)
    assert scores["intervention_context"]["G"].value == pytest.approx(-1 / 3)
    assert scores["intervention_context"]["n_errors"] == 1
    assert scores["intervention_context"]["n_records"] == 3
    assert scores["no_context"]["n_problems"] == 3 and scores["no_context"]["G"].value == 0.0
    assert scores["no_context"]["n_pairs"] == 7
    g = scores["problem_context"]["G"]
    assert g.low <= g.value <= g.high and (g.low, g.high) != (g.value, g.value) and g.n == 2
    # Resampling whole original problems: A's pairs give 1/2, B's 1/4.
    assert 0.25 <= g.low and g.high <= 0.5


def test_g_is_undefined_without_records_and_ignores_other_protocols():
    assert generalization_scores([]) == {}
    monitor = {**record("A", 0, "no_context", True), "protocol": "monitor"}
    assert generalization_scores([monitor]) == {}
    only_errors = generalization_scores([record("A", 0, "problem_context", None)])
    assert math.isnan(only_errors["problem_context"]["accuracy"].value)
    assert math.isnan(only_errors["problem_context"]["G"].value)


def test_table_shows_accuracy_and_g_per_group(tmp_path):
    student = ScriptedBackend(context_student, spec="scripted:ctx")
    result = evaluate_generalization(monitor_episodes(), variants(), originals(), student)
    table = generalization_table(result.records + monitor_episodes(), samples=100)
    assert table.name == "generalization" and len(table.rows) == 1
    row = dict(zip(table.ids, table.rows[0], strict=True))
    assert (row["domain"], row["student"], row["teacher"]) == ("math", "scripted:ctx", "at:0")
    # context_student: right on all Intervention-Context variants, never without context,
    # and under Problem-Context only on the first variant of t/0 and of t/1 -> 0.5 each.
    assert row["accuracy_no_context"].value == 0.0
    assert row["accuracy_intervention_context"].value == 1.0
    assert row["accuracy_problem_context"].value == pytest.approx(0.5)
    assert row["G_intervention_context"].value == 1.0
    assert row["G_problem_context"].value == pytest.approx(0.5)
    assert (row["n_problems"], row["n_records"], row["n_errors"]) == (2, 12, 0)
    assert "Intervention-Context" in table.to_markdown()
    assert set(CONTEXTS) <= {i.removeprefix("accuracy_") for i in table.ids}
    assert "G_no_context" not in table.ids  # G is 0 by definition there


# ---------------------------------------------------------------------- CLI
def test_cli_runs_variants_and_generalization_from_an_eval_run(tmp_path, capsys):
    import argparse

    from intbench.commands import variants as command
    from intbench.generalization import read_variant_set
    from intbench.runner import RunConfig, load_run, run_eval

    run = tmp_path / "run"
    student = "scripted:tests.test_generalization:monitor_student"
    run_eval(RunConfig("IntBench-Math-v0", "at:0", student, n=2, seed=4), run, progress=False)

    parser = argparse.ArgumentParser()
    command.add_parser(parser.add_subparsers(dest="command", required=True))

    def cli(*argv: str) -> int:
        args = parser.parse_args(list(argv))
        return args.func(args)

    variant_file = tmp_path / "v.jsonl"
    assert (
        cli("variants", "math", "--run", str(run), "--per-problem", "2", "--out", str(variant_file))
        == 0
    )
    originals_ids = {e["problem_id"] for e in load_run(run)}
    assert {v.metadata["variant_of"] for v in read_variant_set(variant_file)} == originals_ids
    assert cli("variants", "linguini", "--run", str(run), "--out", str(variant_file)) == 2
    assert "not 'linguini'" in capsys.readouterr().err

    out = tmp_path / "gen"
    assert (
        cli("generalize", "--run", str(run), "--variants", str(variant_file), "--out", str(out))
        == 0
    )
    printed = capsys.readouterr().out
    assert "12 record(s) run" in printed and "Generalization to variant problems" in printed
    records = load_run(out)
    assert len(records) == 12 and {r["student"] for r in records} == {student}
    assert (
        cli("generalize", "--run", str(run), "--variants", str(variant_file), "--out", str(out))
        == 0
    )
    assert "0 record(s) run, 12 already done" in capsys.readouterr().out
    assert (
        cli(
            "generalize", "--run", str(tmp_path), "--variants", str(variant_file), "--out", str(out)
        )
        == 2
    )
    assert "not an intbench run directory" in capsys.readouterr().err
