"""LLM analyses of runs: leakage audit and the three-stage intervention categorisation
(functional role and solution leakage, Int-Bench App. C.3 and F.7).

Judges are scripted callables that read the prompt, so every number below is
computed by hand from the records built here.
"""

from __future__ import annotations

import argparse
import json
import math
import re

import pytest

from intbench.agents.backends.scripted import ScriptedBackend
from intbench.agents.base import Completion
from intbench.analysis import (
    AnalysisError,
    category_shares,
    collect_messages,
    load_taxonomy,
    paper_taxonomy,
    parse_category,
    parse_leakage,
    parse_reason,
    parse_taxonomy,
    run_categorization,
    run_leakage_audit,
)
from intbench.cache import JsonCache
from intbench.commands import analyze
from intbench.records import Episode, Problem

PROBLEMS = [
    Problem(id=f"p{i}", domain="math", question=f"What is {i} + 5?", answer=str(i + 5),
            solution=f"SOLUTION-{i}: {i} + 5 = {i + 5}.")
    for i in range(4)
]  # fmt: skip
TRACE = "First I add the units digit. Then I carry the one. So the answer is \\boxed{9}."


def monitor_record(
    eid: str, pid: str, teacher: str, message: str, leaked: bool, error: str | None = None
) -> dict:
    return Episode(
        protocol="monitor", problem_id=pid, domain="math", student="s", teacher=teacher,
        condition="standard", episode_id=eid, error=error, metadata={"run_key": eid},
        baseline={"text": TRACE, "answer": "9", "verdict": {"status": "incorrect"}},
        intervention={"message": message, "tau_abs": 12, "tau_rel": 0.2, "leaked": leaked},
    ).to_dict()  # fmt: skip


def feedback_record(eid: str, pid: str, teacher: str, turns: list[tuple[str | None, bool]]) -> dict:
    attempts = [
        {"text": f"ATTEMPT-{k} so \\boxed{{{k}0}}", "answer": f"{k}0"}
        for k in range(1, len(turns) + 2)
    ]
    feedback = [
        {"turn": k, "message": msg, "source": "teacher" if msg else "none", "leaked": leaked}
        for k, (msg, leaked) in enumerate(turns, 1)
    ]
    return Episode(
        protocol="feedback", problem_id=pid, domain="math", student="s", teacher=teacher,
        condition="teacher", episode_id=eid, metadata={"run_key": eid}, attempts=attempts, feedback=feedback,
    ).to_dict()  # fmt: skip


def write_run(directory, records: list[dict]):
    directory.mkdir(parents=True, exist_ok=True)
    with open(directory / "episodes.jsonl", "w") as handle:
        for record in records:
            handle.write(json.dumps(record) + "\n")
    return directory


def update_of(messages: list[dict]) -> str:
    return re.search(r"<update>(.*?)</update>", messages[-1]["content"], re.DOTALL).group(1)


def leak_judge(messages: list[dict]) -> str:
    """True for 'answer is' and 'substitute', an unreadable reply for 'JUNK', else False."""
    update = update_of(messages).lower()
    if "junk" in update:
        return "I am not sure what you mean."
    leaked = "answer is" in update or "substitute" in update
    return f"Leaked: {leaked}\nExplanation: scripted."


# teacher A (monitor): True, False, True, unreadable; detector flags T, F, F, F
# teacher B (feedback, one episode): False, (no message), True; detector flags F, -, T
# (the records' own flags are not read: the audit runs the detector again)
AUDIT_RECORDS = [
    monitor_record("a0", "p0", "hf:A", "The answer is 5.", True),
    monitor_record("a1", "p1", "hf:A", "Check the carry.", False),
    monitor_record("a2", "p2", "hf:A", "Substitute x = 2 first.", False),
    monitor_record("a3", "p3", "hf:A", "JUNK", True),
    monitor_record(
        "a4", "p3", "hf:A", "The answer is 8.", True, error="grader error on the baseline"
    ),
    feedback_record(
        "b0",
        "p0",
        "hf:B",
        [("Look again at step 2.", False), (None, False), ("The answer is 5.", True)],
    ),
]


@pytest.fixture()
def cache(tmp_path):
    return JsonCache("analysis", root=tmp_path / "cache")


# ------------------------------------------------------------------ parsers
@pytest.mark.parametrize(
    ("text", "leaked"),
    [
        ("Leaked: True\nExplanation: gives 5.", True),
        ("**Leaked:** false.", False),
        ("- Leaked: False (only a hint)", False),
        ("<think>Leaked: True</think>\nLeaked: False", False),
        ("True", True),
    ],
)
def test_parse_leakage_reads_true_or_false(text, leaked):
    parsed = parse_leakage(text)
    assert (parsed.leaked, parsed.error) == (leaked, None)


@pytest.mark.parametrize(
    ("text", "error"),
    [
        ("", "empty"),
        ("The message is fine.", "missing"),
        ("Leaked: True or False", "both"),
        ("Leaked: True\nLeaked: False", "conflicting"),
        ("Leaked: maybe", "must be"),
        ("Leakage: Partial", "missing"),
        (None, "empty"),
    ],
)
def test_parse_leakage_errors_are_never_a_verdict(text, error):
    parsed = parse_leakage(text)
    assert parsed.leaked is None
    assert error in parsed.error


def test_parse_taxonomy_finds_json_among_chatter():
    text = 'Sure!\n```json\n{"categories": [{"name": "Hint", "description": "d1"}, {"name": "Answer"}]}\n```'
    parsed = parse_taxonomy(text)
    assert parsed.error is None
    assert parsed.categories == [
        {"name": "Hint", "description": "d1"},
        {"name": "Answer", "description": ""},
    ]
    assert "no JSON" in parse_taxonomy("{not json} and no categories").error
    assert "twice" in parse_taxonomy('{"categories": ["Hint", "hint"]}').error
    assert "non-empty" in parse_taxonomy('{"categories": []}').error


def test_parse_category_matches_names_or_reports_an_error():
    names = ["Error identification", "Strategy suggestion", "Answer giving"]
    assert (
        parse_category("Category: error identification.", names).category == "Error identification"
    )
    assert parse_category('**Category:** "Answer giving"', names).category == "Answer giving"
    assert (
        parse_category("Category: mostly Strategy suggestion here", names).category
        == "Strategy suggestion"
    )
    assert "not one of" in parse_category("Category: Small talk", names).error
    both = parse_category("Category: Answer giving or Strategy suggestion", names)
    assert both.category is None and both.error
    assert "missing" in parse_category("Strategy suggestion", names).error


# ------------------------------------------------------------ leakage audit
def test_collect_messages_takes_interventions_and_feedback_and_skips_errors():
    collected = collect_messages(AUDIT_RECORDS)
    assert (collected.n_episodes, collected.n_error_episodes) == (6, 1)
    assert [m.key for m in collected.messages] == ["a0:0", "a1:0", "a2:0", "a3:0", "b0:1", "b0:3"]
    monitor, feedback = collected.messages[0], collected.messages[-1]
    assert (
        monitor.prefix == TRACE[:12] and monitor.student_answer == "9" and monitor.teacher == "hf:A"
    )
    assert (
        feedback.turn == 3
        and feedback.prefix.startswith("ATTEMPT-3")
        and feedback.student_answer == "30"
    )
    with pytest.raises(AnalysisError, match="problem_id"):
        collect_messages([{"episode_id": "x", "domain": "math"}])


def test_leak_rates_agreement_and_counts_by_hand(tmp_path, cache):
    prompts = []

    def judge(messages):
        prompts.append(messages[-1]["content"])
        return leak_judge(messages)

    run = write_run(tmp_path / "run", AUDIT_RECORDS)
    audit = run_leakage_audit(run, ScriptedBackend(judge, spec="scripted:leak"), problems=PROBLEMS,
                              cache=cache, samples=200)  # fmt: skip
    a, b, everyone = audit.summary["hf:A"], audit.summary["hf:B"], audit.summary["all"]
    assert list(audit.summary) == ["hf:A", "hf:B", "all"]
    counts = ("n_messages", "n_responses", "n_unreadable", "n_errors")
    assert tuple(a[k] for k in counts) == (4, 4, 1, 0)
    # A.6: leaks / all judge responses, the unreadable reply included: 2 / 4
    assert a["leak_rate"].value == pytest.approx(2 / 4)
    assert a["detector_leak_rate"].value == pytest.approx(1 / 3)
    assert a["agreement"].value == pytest.approx(2 / 3)  # over the 3 readable replies
    assert a["confusion"] == {"both": 1, "llm_only": 1, "detector_only": 0, "neither": 1}
    assert (
        a["leak_rate"].low <= a["leak_rate"].value <= a["leak_rate"].high and a["leak_rate"].n == 4
    )
    assert b["leak_rate"].value == pytest.approx(0.5) and b["agreement"].value == 1.0
    assert b["leak_rate"].n == 1 and math.isnan(b["leak_rate"].low)  # one problem: no interval
    assert everyone["leak_rate"].value == pytest.approx(3 / 6) and everyone["n_unreadable"] == 1
    assert audit.n_error_episodes == 1 and audit.judge_calls == 6
    # the audit runs the detector again: a3's record says leaked, its message gives nothing away
    assert {r["key"]: r for r in audit.rows}["a3:0"]["detector_leaked"] is False

    # the judge saw the reference and the student's answer before each message
    assert "SOLUTION-0" in prompts[0] and "Final answer: 5" in prompts[0] and "\n9\n" in prompts[0]
    assert "\n30\n" in prompts[-1]
    rows = [
        json.loads(line) for line in (run / "analysis" / "leakage.jsonl").read_text().splitlines()
    ]
    junk = next(r for r in rows if r["key"] == "a3:0")
    assert junk["leaked"] is None and junk["unreadable"] and "missing" in junk["error"]
    assert junk["output"]
    summary = json.loads((run / "analysis" / "leakage_summary.json").read_text())
    assert summary["teachers"]["hf:B"]["leak_rate"]["low"] is None  # NaN written as null
    markdown = (run / "analysis" / "leakage_audit.md").read_text()
    assert "| hf:A | 4 | 4 | 1 | 0 | 0.500 [" in markdown
    assert (
        (run / "analysis" / "leakage_audit.csv")
        .read_text()
        .startswith("teacher,messages,judge_responses,unreadable,judge_errors,leak_rate,")
    )


def test_leak_rate_is_leaks_over_all_judge_responses_paper_a6(tmp_path, cache):
    # Feedback paper App. A.6: "the ratio of identified leaks to the total number of judge
    # responses".  Five responses (True, False, True, unreadable, False) and one failed call:
    # 2 / 5 = 0.4 (dropping the unreadable reply would give 2 / 4 = 0.5); the failed call is
    # no response and the unreadable reply is counted on its own.
    replies = {"The answer is 5.": "Leaked: True", "Check the carry.": "Leaked: False",
               "Substitute x = 2 first.": "True", "JUNK": "no idea",
               "Look again at step 2.": "Leaked: False"}  # fmt: skip

    def judge(messages):
        if "\n30\n" in messages[-1]["content"]:  # b0's last message (student answer 30)
            return Completion(text="", error="timeout")
        return replies[update_of(messages)]

    run = write_run(tmp_path / "run", AUDIT_RECORDS)
    audit = run_leakage_audit(
        run, ScriptedBackend(judge), problems=PROBLEMS, cache=cache, samples=10
    )
    everyone = audit.summary["all"]
    assert everyone["leak_rate"].value == pytest.approx(0.4)
    assert (everyone["n_responses"], everyone["n_unreadable"], everyone["n_errors"]) == (5, 1, 1)


def test_judge_answers_are_cached_but_failures_are_retried(tmp_path, cache):
    calls = []

    def flaky(messages):
        calls.append(1)
        if "Check the carry" in update_of(messages):
            return Completion(text="", error="server down")
        return leak_judge(messages)

    run = write_run(tmp_path / "run", AUDIT_RECORDS)
    first = run_leakage_audit(
        run,
        ScriptedBackend(flaky, spec="scripted:flaky"),
        problems=PROBLEMS,
        cache=cache,
        samples=10,
    )
    failed = next(r for r in first.rows if r["key"] == "a1:0")
    assert failed["error"] == "judge call failed: server down" and failed["leaked"] is None
    assert (first.summary["hf:A"]["n_errors"], first.summary["hf:A"]["n_unreadable"]) == (1, 1)
    calls.clear()
    second = run_leakage_audit(
        run,
        ScriptedBackend(flaky, spec="scripted:flaky"),
        problems=PROBLEMS,
        cache=cache,
        samples=10,
    )
    assert len(calls) == 1 and second.judge_calls == 1  # only the failed prompt is asked again
    assert [r["leaked"] for r in second.rows] == [r["leaked"] for r in first.rows]


def test_a_crashing_judge_gives_errors_not_a_crash(tmp_path, cache):
    def broken(messages):
        raise RuntimeError("boom")

    run = write_run(tmp_path / "run", AUDIT_RECORDS[:2])
    audit = run_leakage_audit(
        run, ScriptedBackend(broken), problems=PROBLEMS, cache=cache, samples=10
    )
    assert all("boom" in r["error"] for r in audit.rows)
    assert math.isnan(audit.summary["all"]["leak_rate"].value)


def test_missing_problem_and_empty_run(tmp_path, cache):
    run = write_run(tmp_path / "run", AUDIT_RECORDS[:2])
    audit = run_leakage_audit(
        run, ScriptedBackend(leak_judge), problems=PROBLEMS[1:], cache=cache, samples=10
    )
    assert audit.rows[0]["error"] == "problem 'p0' not found" and audit.rows[1]["leaked"] is False
    with pytest.raises(AnalysisError, match="no episodes"):
        run_leakage_audit(
            write_run(tmp_path / "empty", []), ScriptedBackend(leak_judge), cache=cache
        )
    with pytest.raises(AnalysisError, match="config.json"):
        run_leakage_audit(run, ScriptedBackend(leak_judge), cache=cache)


def test_problems_are_rebuilt_from_a_real_run(tmp_path, cache, monkeypatch):
    from intbench.runner import RunConfig, run_eval

    monkeypatch.setenv("INTBENCH_CACHE", str(tmp_path / "student-cache"))
    config = RunConfig(env_id="IntBench-Math-v0", teacher="at:0.5?message=Check your last step.",
                       student=f"scripted:text={TRACE}", n=3, seed=1)  # fmt: skip
    run_eval(config, tmp_path / "run", concurrency=2, progress=False)
    seen = []

    def judge(messages):
        seen.append(messages[-1]["content"])
        return "Leaked: False"

    audit = run_leakage_audit(tmp_path / "run", ScriptedBackend(judge), cache=cache, samples=10)
    assert len(audit.rows) == 3 and all(
        r["leaked"] is False and r["detector_leaked"] is False for r in audit.rows
    )
    assert audit.summary["at:0.5?message=Check your last step."]["agreement"].value == 1.0
    assert all("Final answer:" in prompt for prompt in seen)  # the rebuilt problems' references

    # the saved audit shows up in `intbench report`
    from intbench.report import generate_report

    output = generate_report([tmp_path / "run"], tmp_path / "report", samples=10)
    assert "leakage_audit" in [table.name for table in output.data.tables]
    assert (tmp_path / "report" / "tables" / "leakage_audit.md").exists()


# ----------------------------------------------------------- categorisation
ROLE_TAXONOMY = """Here is the taxonomy.
```json
{"categories": [
  {"name": "Error identification", "description": "Points at a mistake."},
  {"name": "Answer giving", "description": "States the answer."},
  {"name": "Strategy suggestion", "description": "Proposes a method."}
]}
```"""
LEAK_TAXONOMY = (
    '{"categories": [{"name": "Full solution revealed", "description": "All of it."}, '
    '{"name": "Broad process hint", "description": "Nothing specific."}]}'
)
# keyword of the message -> (stage-1 reason, stage-1 leakage description)
EXPLAIN = {
    "carry": ("points out an arithmetic error", "reveals nothing specific"),
    "answer is": ("gives the final answer", "reveals the whole answer"),
    "try": ("suggests a strategy", "reveals nothing specific"),
    "weather": ("small talk", "reveals nothing specific"),
}
# stage-1 explanation -> stage-3 category
RELABEL = {
    "points out an arithmetic error": "Error identification",
    "gives the final answer": "Answer giving",
    "suggests a strategy": "Strategy suggestion",
    "small talk": "Small talk",  # not in the taxonomy: a relabel error
    "reveals nothing specific": "Broad process hint",
    "reveals the whole answer": "Full solution revealed",
}
ROLE_TASK = "Your task is to understand how this intervention is helping the student."
LEAK_TASK = "determine how much of the solution it reveals to the student."


def _keyword(update: str) -> str:
    return next(k for k in EXPLAIN if k in update.lower())


def category_judge(messages: list[dict]) -> str:
    prompt = messages[-1]["content"]
    if prompt.startswith("Here is a list of reasons"):
        return ROLE_TAXONOMY
    if prompt.startswith("Here is a list of descriptions"):
        return LEAK_TAXONOMY
    if prompt.startswith("You are categorizing an intervention reason"):
        reason = re.search(r"\*\*Intervention reason to categorize:\*\* (.*)", prompt).group(1)
        return f"Category: {RELABEL[reason]}"
    update = update_of(messages)
    role, leakage = EXPLAIN[_keyword(update)]
    if ROLE_TASK in prompt:
        return "no idea" if "JUNK" in update else f"Reason: {role}."
    assert LEAK_TASK in prompt
    return f"**Solution Revealed:** {leakage}"


# A: carry, answer, try, carry
# B: answer, try, JUNK carry (no role reason; leakage still read), weather (role not in taxonomy)
CATEGORY_RECORDS = [
    monitor_record("a0", "p0", "hf:A", "Check the carry.", False),
    monitor_record("a1", "p1", "hf:A", "The answer is 6.", True),
    monitor_record("a2", "p2", "hf:A", "Let's try factoring.", False),
    monitor_record("a3", "p3", "hf:A", "Check the carry again.", False),
    monitor_record("b0", "p0", "hf:B", "The answer is 5.", True),
    monitor_record("b1", "p1", "hf:B", "Try a substitution.", False),
    monitor_record("b2", "p2", "hf:B", "JUNK carry", False),
    monitor_record("b3", "p3", "hf:B", "Nice weather today.", False),
]
NAMES = ["Error identification", "Answer giving", "Strategy suggestion"]


def test_parse_reason_reads_either_dimension_field():
    assert parse_reason("Reason: It flags the carry.").reason == "It flags the carry"
    revealed = parse_reason("**Solution Revealed:** the key step", "Solution Revealed")
    assert revealed.reason == "the key step" and revealed.error is None
    assert "missing 'Reason:'" in parse_reason("Solution Revealed: all").error
    assert parse_reason("").error == "empty judge output"


def test_both_labelling_prompts_share_the_papers_context_block(tmp_path, cache):
    # Int-Bench App. F.7: one shared context (problem, reference solution, the reasoning in
    # 50-character chunks up to the intervention, the message); only "# Your Task" differs.
    prompts = []

    def judge(messages):
        prompts.append(messages[-1]["content"])
        return category_judge(messages)

    run = write_run(tmp_path / "run", CATEGORY_RECORDS[:1])
    run_categorization(
        run, ScriptedBackend(judge, spec="scripted:ctx"), problems=PROBLEMS, cache=cache
    )
    role = next(p for p in prompts if ROLE_TASK in p)
    leakage = next(p for p in prompts if LEAK_TASK in p)

    def context(prompt):
        return prompt[prompt.index("# Problem Context") : prompt.index("# Your Task")]

    assert context(role) == context(leakage)
    shared = context(role)
    assert "Reference solution: SOLUTION-0: 0 + 5 = 5.\n\nFinal answer: 5" in shared
    assert "The reasoning is shown in chunks of 50 characters each." in shared
    # TRACE has 79 characters: chunks end at 50 and 79; the message came after 12 of them
    assert "Intervention occurred at chunk: 1\nChunks shown before intervention: 1\n" in shared
    assert "Total chunks in reasoning: 2" in shared
    assert f"<student_reasoning>\n{TRACE[:12]}\n</student_reasoning>" in shared
    assert "LLM intervention message: <update>Check the carry.</update>" in shared
    assert role.rstrip().endswith(
        "Reason: <your one-line explanation of how the intervention helps the student>"
    )
    assert leakage.rstrip().endswith(
        "Solution Revealed: <your one-line description of how much solution is revealed>"
    )
    # both clustering prompts tell the judge that categories are not domain-specific
    clusters = [p for p in prompts if p.startswith("Here is a list of")]
    assert len(clusters) == 2
    assert all("IMPORTANT: Ensure the categories are NOT domain-specific." in p for p in clusters)
    # the relabelling prompt categorises the stage-1 explanation, not the message
    relabels = [p for p in prompts if p.startswith("You are categorizing")]
    assert len(relabels) == 2 and not any("Check the carry." in p for p in relabels)
    assert any("**Intervention reason to categorize:** points out an arithmetic error" in p
               for p in relabels)  # fmt: skip


def test_three_stage_pipeline_for_both_dimensions_and_table_1_by_hand(tmp_path, cache):
    prompts = []

    def judge(messages):
        prompts.append(messages[-1]["content"])
        return category_judge(messages)

    run = write_run(tmp_path / "run", CATEGORY_RECORDS)
    result = run_categorization(
        run, ScriptedBackend(judge, spec="scripted:cat"), problems=PROBLEMS, cache=cache
    )
    taxonomies = result.result.taxonomies
    assert [c["name"] for c in taxonomies["role"]] == NAMES
    assert [c["name"] for c in taxonomies["leakage"]] == [
        "Full solution revealed",
        "Broad process hint",
    ]
    # stage 2 saw each distinct explanation once per dimension, the most frequent first
    role_cluster = next(p for p in prompts if p.startswith("Here is a list of reasons"))
    assert re.findall(r"^- (.*)$", role_cluster, re.MULTILINE) == [
        "gives the final answer",
        "points out an arithmetic error",
        "suggests a strategy",
        "small talk",
    ]
    leak_cluster = next(p for p in prompts if p.startswith("Here is a list of descriptions"))
    assert re.findall(r"^- (.*)$", leak_cluster, re.MULTILINE) == [
        "reveals nothing specific",
        "reveals the whole answer",
    ]
    assert result.result.labels["leakage"] == {
        "reveals nothing specific": 6,
        "reveals the whole answer": 2,
    }
    # stage 1: 8 x 2; stage 2: 2; stage 3: 7 role reasons + 8 leakage descriptions
    assert len(prompts) == 16 + 2 + 15 and result.judge_calls == 33

    rows = {r["key"]: r for r in result.result.rows}
    assert rows["b2:0"]["role_reason"] is None and "role_label" in rows["b2:0"]["errors"]
    assert rows["b2:0"]["leakage_category"] == "Broad process hint"
    assert rows["b3:0"]["role_category"] is None
    assert "not one of" in rows["b3:0"]["errors"]["role_relabel"]
    assert rows["a1:0"]["leakage_category"] == "Full solution revealed"
    assert rows["a1:0"]["detector_leaked"] is True and rows["a0:0"]["detector_leaked"] is False

    role = category_shares(result.result.rows, taxonomies["role"], "role")
    a, b = role["hf:A/standard"], role["hf:B/standard"]
    assert (a["n"], b["n"], b["n_errors"], role["all"]["n"]) == (4, 2, 2, 6)
    assert a["categories"]["Error identification"]["share"] == 0.5
    assert b["categories"]["Answer giving"]["share"] == 0.5
    assert role["all"]["categories"]["Strategy suggestion"]["share"] == pytest.approx(2 / 6)
    leak = category_shares(result.result.rows, taxonomies["leakage"], "leakage")
    assert leak["hf:A/standard"]["categories"]["Full solution revealed"]["share"] == 0.25
    assert leak["all"]["categories"]["Broad process hint"]["share"] == 0.75

    folder = run / "analysis"
    table = (folder / "intervention_role.md").read_text()
    assert "| Error identification | Points at a mistake. | 0.500 | 0.000 | 0.333 |" in table
    assert "| Messages (categorised / uncategorised) |  | 4 / 0 | 2 / 2 | 6 / 2 |" in table
    leak_table = (folder / "intervention_leakage.md").read_text()
    assert "| Full solution revealed | All of it. | 0.250 | 0.250 | 0.250 |" in leak_table
    detector = (
        "| Flagged by the leak detector | a span the domain's verifier accepts as the answer |"
    )
    assert detector + " 0.250 | 0.250 | 0.250 |" in leak_table
    assert (folder / "intervention_leakage.csv").read_text().splitlines()[0] == (
        "category,description,hf:A/standard,hf:B/standard,all"
    )
    saved = json.loads((folder / "categories.json").read_text())
    assert saved["dimensions"]["leakage"]["categories"][0]["name"] == "Full solution revealed"
    assert saved["dimensions"]["role"]["given"] is False
    assert len((folder / "categorized.jsonl").read_text().splitlines()) == 8
    # the report reads both tables back from the run directory
    from intbench.analysis.saved_tables import saved_analysis_tables

    saved_tables = saved_analysis_tables([run], samples=20)
    assert [t.name for t in saved_tables] == ["intervention_role", "intervention_leakage"]
    assert saved_tables[1].to_markdown() == result.tables[1].to_markdown()

    # the saved taxonomies are reusable: stage 2 is skipped, the same tables come out
    prompts.clear()
    again = run_categorization(run, ScriptedBackend(judge, spec="scripted:cat"), problems=PROBLEMS,
                               cache=cache, taxonomy=load_taxonomy(folder / "categories.json"))  # fmt: skip
    assert again.judge_calls == 0 and not prompts  # every answer came from the cache
    assert [t.to_markdown() for t in again.tables] == [t.to_markdown() for t in result.tables]


def test_paper_taxonomy_is_table_1s_categories(tmp_path, cache):
    # Int-Bench Table 1(b): the solution-leakage clusters; 1(a): the functional roles.
    taxonomy = paper_taxonomy()
    assert [c["name"] for c in taxonomy["leakage"]] == [
        "Full solution revealed",
        "Strong narrowing or near-solution scaffold",
        "Key mechanism disclosure",
        "Minor local correction",
        "Answer revealed without full explanation",
        "Partial worked solution",
        "General reframing hint",
        "Wrong-path rejection",
        "Validation only",
        "Broad process hint",
    ]
    assert len(taxonomy["role"]) == 16
    assert taxonomy["role"][0]["name"] == "Redirecting away from an unproductive path"
    prompts = []

    def judge(messages):
        prompts.append(messages[-1]["content"])
        if messages[-1]["content"].startswith("You are categorizing"):
            return "Category: Key mechanism disclosure"
        return category_judge(messages)

    run = write_run(tmp_path / "run", CATEGORY_RECORDS[:2])
    result = run_categorization(run, ScriptedBackend(judge, spec="scripted:paper"),
                                problems=PROBLEMS, cache=cache, taxonomy="paper")  # fmt: skip
    assert not any(p.startswith("Here is a list of") for p in prompts)  # no clustering
    assert all(r["leakage_category"] == "Key mechanism disclosure" for r in result.result.rows)
    relabels = [p for p in prompts if p.startswith("You are categorizing")]
    assert sum("- Wrong-path rejection\n" in p for p in relabels) == 2  # the leakage ones
    assert sum("- Correcting local errors\n" in p for p in relabels) == 2  # the role ones
    assert load_taxonomy("paper") == taxonomy


def test_unusable_taxonomy_stops_with_a_clear_error(tmp_path, cache):
    def judge(messages):
        if messages[-1]["content"].startswith("Here is a list of descriptions"):
            return "Categories: hints, answers"
        return category_judge(messages)

    run = write_run(tmp_path / "run", CATEGORY_RECORDS[:2])
    with pytest.raises(AnalysisError, match="solution leakage taxonomy is unusable.*--taxonomy"):
        run_categorization(run, ScriptedBackend(judge), problems=PROBLEMS, cache=cache)
    with pytest.raises(AnalysisError, match="nothing to cluster"):
        run_categorization(run, ScriptedBackend(lambda m: "??"), problems=PROBLEMS, cache=cache)
    with pytest.raises(AnalysisError, match="no teacher messages"):
        run_categorization(write_run(tmp_path / "quiet", [feedback_record("f", "p0", "hf:A", [(None, False)])]),
                           ScriptedBackend(judge), problems=PROBLEMS, cache=cache)  # fmt: skip
    (tmp_path / "bad.json").write_text('{"categories": [{"description": "no name"}]}')
    with pytest.raises(AnalysisError, match="without a name"):
        load_taxonomy(tmp_path / "bad.json")
    (tmp_path / "odd.json").write_text('{"tone": ["Warm"]}')
    with pytest.raises(AnalysisError, match="unknown categorisation dimension"):
        load_taxonomy(tmp_path / "odd.json")


# ---------------------------------------------------------------------- CLI
def _cli(argv: list[str]) -> int:
    parser = argparse.ArgumentParser()
    analyze.add_parser(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(argv)
    return args.func(args)


def test_cli_runs_both_analyses(tmp_path, capsys):
    run = write_run(tmp_path / "run", CATEGORY_RECORDS)
    (run / "problems.jsonl").write_text("".join(json.dumps(p.to_dict()) + "\n" for p in PROBLEMS))
    cache = str(tmp_path / "cache")
    assert _cli(["analyze", "leakage", str(run), "--judge", "scripted:tests.test_analysis:leak_judge",
                 "--cache", cache, "--samples", "20"]) == 0  # fmt: skip
    out = capsys.readouterr().out
    assert (
        "8 teacher message(s) from 8 episode(s); 1 unreadable judge reply(ies), 0 judge error(s)"
        in out
        and "leakage_audit.md" in out
    )
    assert _cli(["analyze", "categorize", str(run), "--judge", "scripted:tests.test_analysis:category_judge",
                 "--cache", cache]) == 0  # fmt: skip
    out = capsys.readouterr().out
    assert (
        "8 teacher message(s): 3 role categories, 2 uncategorised; "
        "2 leakage categories, 0 uncategorised" in out
    )
    assert "Table 1(a)" in out and "Table 1(b)" in out
    assert _cli(["analyze", "leakage", str(tmp_path / "nowhere"), "--judge", "smollm2"]) == 2
    assert "not a run directory" in capsys.readouterr().err
    assert (
        _cli(
            [
                "analyze",
                "categorize",
                str(run),
                "--judge",
                "x",
                "--taxonomy",
                str(tmp_path / "none.json"),
            ]
        )
        == 2
    )


# ------------------------------------------------------------ real model
@pytest.mark.slow
def test_embedded_model_as_judge_end_to_end(tmp_path, cache):
    """SmolLM2-135M judges a few messages; whatever it says is parsed or counted as an error."""
    pytest.importorskip("gguf")
    run = write_run(tmp_path / "run", CATEGORY_RECORDS[:2])
    audit = run_leakage_audit(run, "smollm2", problems=PROBLEMS, cache=cache, samples=20)
    assert len(audit.rows) == 2
    assert all((r["leaked"] is not None) != bool(r["error"]) for r in audit.rows)
    result = run_categorization(run, "smollm2", problems=PROBLEMS, cache=cache, taxonomy="paper")
    names = {d: {c["name"] for c in t} for d, t in result.result.taxonomies.items()}
    for row in result.result.rows:
        for d in ("role", "leakage"):
            assert (
                row[f"{d}_category"] in names[d]
                or row["errors"].get(f"{d}_relabel")
                or (row["errors"].get(f"{d}_label"))
            )
    assert (run / "analysis" / "intervention_leakage.md").is_file()
