"""Variant problems: the four-step LLM pipeline, procedural variants, the variant-set file, the CLI."""

from __future__ import annotations

import json

import pytest

from intbench.agents.backends.scripted import ScriptedBackend
from intbench.agents.base import Completion, SamplingParams
from intbench.envs.domains.generators import generate_linguini, generate_math, generate_omni_math
from intbench.generalization import (
    UnsupportedDomainError,
    VariantPipeline,
    VariantSetError,
    procedural_variants,
    read_variant_set,
    write_variant_set,
)
from intbench.generalization.answers import SHARED_ANSWER
from intbench.generalization.parsing import (
    UNCATEGORIZED,
    parse_candidates,
    parse_skill,
    parse_taxonomy,
    parse_validation,
)
from intbench.generalization.procedural import check_variant, reference_response
from intbench.generalization.variant_set import sample_per_original
from intbench.records import Problem
from intbench.verifiers import verify


def originals() -> list[Problem]:
    return [
        Problem("o/0", "math", "What is $2+3$?", "5", "2+3=5, so \\boxed{5}."),
        Problem("o/1", "math", "Solve $x+1=4$.", "3", "x=3, so \\boxed{3}."),
        Problem("o/2", "math", "What is $7 \\cdot 6$?", "42"),
    ]


# The canned model: one reply per pipeline prompt, recognised by its wording.
GENERATED = {
    "o/0": (
        "<variant><problem>What is $4+9$?</problem><solution>4+9=13 \\boxed{13}</solution>"
        "<answer>$13$</answer></variant>\n"
        "<variant><problem>What is $1+1$? (same skill? no)</problem><answer>2</answer></variant>\n"
        "<variant><problem>What is $5+5$?</problem><solution>\\boxed{11}</solution>"
        "<answer>10</answer></variant>"
    ),
    "o/1": "<variant><problem>Solve $x+2=9$.</problem><answer>\\boxed{7}</answer>",  # cut off
}


def responder(messages):
    text = messages[-1]["content"]
    if "name the single most specific skill" in text:
        if "7 \\cdot 6" in text:
            return "I think multiplication."  # no 'Skill:' line: a parse failure
        skill = "adding integers" if "2+3" in text else "solving a one-step linear equation"
        return f"**Skill:** {skill}\nExplanation: it is the key step."
    if "Group them into" in text:
        return (
            'Sure:\n```json\n{"categories": [{"name": "Arithmetic", "description": "sums", '
            '"skills": ["Adding integers"]}]}\n```'
        )
    if "new problem" in text:
        return GENERATED["o/0" if "2+3" in text else "o/1"]
    if "A candidate problem was written" in text:
        if "same skill? no" in text:
            return "Same skill: No\nAnswer correct: Yes\nReason: it is trivial."
        if "x+2=9" in text:
            return "Same skill: maybe"  # malformed
        return "Same skill: Yes\nAnswer correct: Yes\nReason: fine."
    raise AssertionError(f"unexpected prompt: {text[:80]}")


class CountingBackend(ScriptedBackend):
    """A scripted backend that records each batched ``generate`` call."""

    def __init__(self, respond=responder):
        super().__init__(respond, spec="scripted:test-pipeline")
        self.batches: list[list] = []

    def generate(self, batch, params=None):
        self.batches.append(batch)
        return super().generate(batch, params)


@pytest.fixture()
def cache_dir(tmp_path):
    return tmp_path / "cache"


def test_pipeline_stages_send_their_prompts_in_one_batch_each(cache_dir):
    backend = CountingBackend()
    VariantPipeline(backend, n_variants=3, cache_dir=cache_dir).run(originals())
    extract, cluster, generate, validate = backend.batches
    assert len(extract) == 3 and "What is $2+3$?" in extract[0][-1]["content"]
    assert "2+3=5" in extract[0][-1]["content"]  # the reference solution is shown
    cluster_prompt = cluster[0][-1]["content"]
    assert len(cluster) == 1 and "- adding integers" in cluster_prompt
    assert "- solving a one-step linear equation" in cluster_prompt
    assert len(generate) == 2  # the problem without a skill label is not sent on
    # Table 3: the generator is conditioned on the clustered category, not only the label
    first = generate[0][-1]["content"]
    assert 'test the same skill category as the problem below: "Arithmetic"' in first
    assert "The category: sums" in first and '"adding integers"' in first
    # a label the clusterer left uncategorised falls back to the label alone
    assert (
        'test the same skill as the problem below: "solving a one-step linear equation"'
        in (generate[1][-1]["content"])
    )
    assert len(validate) == 4
    assert "Candidate problem:\nWhat is $4+9$?" in validate[0][-1]["content"]
    assert "Candidate's stated answer:\n13" in validate[0][-1]["content"]
    assert "Target skill category: Arithmetic (sums)" in validate[0][-1]["content"]
    assert "Skill: solving a one-step linear equation" in validate[3][-1]["content"]


def test_pipeline_keeps_only_validated_candidates_and_logs_every_failure(cache_dir):
    result = VariantPipeline(CountingBackend(), n_variants=3, cache_dir=cache_dir).run(originals())
    assert [v.id for v in result.variants] == ["o/0/variant/llm/0"]
    kept = result.variants[0]
    assert (kept.question, kept.answer) == ("What is $4+9$?", "13")
    assert kept.metadata["variant_of"] == "o/0"
    assert kept.metadata["skill"] == "adding integers"
    assert kept.metadata["skill_category"] == "Arithmetic"  # matched case-insensitively
    assert verify(kept, reference_response(kept)).correct

    log = {entry["problem_id"]: entry for entry in result.log}
    assert log["o/2"]["skill"] is None and "Skill:" in log["o/2"]["skill_error"]
    reasons = [c["rejected_because"] for c in log["o/0"]["candidates"]]
    assert reasons[0] == []
    assert reasons[1] == ["validator: tests another skill"]
    assert any("solution ends in '11'" in r for r in reasons[2])
    assert "validator reply unusable" in log["o/1"]["candidates"][0]["rejected_because"][0]
    assert log["o/1"]["skill_category"] == UNCATEGORIZED  # the clusterer did not place it
    assert result.taxonomy["categories"][-1]["skills"] == ["solving a one-step linear equation"]


def test_pipeline_replies_are_cached(cache_dir):
    first = VariantPipeline(CountingBackend(), n_variants=3, cache_dir=cache_dir).run(originals())
    again = CountingBackend()
    second = VariantPipeline(again, n_variants=3, cache_dir=cache_dir).run(originals())
    assert again.batches == []
    assert [v.to_dict() for v in second.variants] == [v.to_dict() for v in first.variants]


def test_failed_model_calls_are_recorded_and_not_cached(cache_dir):
    def broken(messages):
        return Completion(text="", finish_reason="error", error="server down")

    result = VariantPipeline(ScriptedBackend(broken, spec="scripted:x"), 2, cache_dir).run(
        originals()
    )
    assert result.variants == []
    assert all(entry["skill_error"] == "server down" for entry in result.log)
    assert not list(cache_dir.rglob("*.json"))
    healed = VariantPipeline(ScriptedBackend(responder, spec="scripted:x"), 3, cache_dir).run(
        originals()
    )
    assert [v.id for v in healed.variants] == ["o/0/variant/llm/0"]


def test_pipeline_refuses_unchecked_domains_and_bad_arguments(cache_dir):
    code = Problem("c/0", "codeforces", "Print 1.", tests={"kind": "stdio", "cases": []})
    with pytest.raises(UnsupportedDomainError, match="codeforces"):
        VariantPipeline(CountingBackend(), cache_dir=cache_dir).run([code])
    with pytest.raises(ValueError, match="mix domains"):
        VariantPipeline(CountingBackend(), cache_dir=cache_dir).run([originals()[0], code])
    with pytest.raises(ValueError, match="n_variants"):
        VariantPipeline(CountingBackend(), n_variants=0)
    with pytest.raises(ValueError, match="unknown pipeline step"):
        VariantPipeline(CountingBackend(), sampling={"generate": SamplingParams()})
    assert VariantPipeline(CountingBackend(), cache_dir=cache_dir).run([]).variants == []


def test_parsers_are_defensive():
    assert parse_skill('<think>hmm</think>Skill: "modular inverses".').skill == "modular inverses"
    assert parse_skill("Skill: " + "x" * 300).error
    assert parse_skill(None).error == "missing 'Skill:' line"
    taxonomy = parse_taxonomy("no json here", ["a", "b"])
    assert taxonomy.error and taxonomy.assignment == {"a": UNCATEGORIZED, "b": UNCATEGORIZED}
    twice = parse_taxonomy(
        '{"categories": [{"name": "X", "skills": ["a"]}, {"name": "Y", "skills": ["a", "b"]}]}',
        ["a", "b"],
    )
    assert twice.assignment == {"a": "X", "b": "Y"}
    candidates, issues = parse_candidates(
        "<variant><problem>Q</problem></variant><variant><problem>R<answer>4"
    )
    assert [(c.question, c.answer) for c in candidates] == [("R", "4")]
    assert issues == ["block 0: empty or missing <answer>"]
    assert parse_candidates("nothing") == ([], ["no <variant> block"])
    assert (
        parse_validation("Same skill: Yes\nAnswer correct: No\nReason: off by one").accepted
        is False
    )
    assert parse_validation("Same skill: Yes or No\nAnswer correct: Yes").error
    assert parse_validation("- **Same skill:** yes\n- **Answer correct:** yes").accepted


# ----------------------------------------------------------------- procedural
@pytest.mark.parametrize("make", [generate_math, generate_omni_math, generate_linguini])
def test_procedural_variants_keep_the_skill_and_pass_the_verifier(make):
    problems = make(4, seed=5)
    result = procedural_variants(problems, n=3, seed=1)
    by_original = {
        p.id: [v for v in result.variants if v.metadata["variant_of"] == p.id] for p in problems
    }
    for problem in problems:
        dropped = next(e for e in result.log if e["problem_id"] == problem.id)["dropped"]
        assert len(by_original[problem.id]) + len(dropped) == 3
        for variant in by_original[problem.id]:
            assert variant.metadata["skill"] == problem.metadata["skill"]
            assert variant.question != problem.question
            assert verify(variant, reference_response(variant)).correct
    # Small answer ranges repeat (Vieta sums in -4..4): such variants are dropped.
    shared = [d for e in result.log for d in e["dropped"] if d["reason"] == SHARED_ANSWER]
    assert len(result.variants) + len(shared) >= 10
    again = procedural_variants(problems, n=3, seed=1)
    assert [v.to_dict() for v in again.variants] == [v.to_dict() for v in result.variants]


def test_procedural_check_catches_a_wrong_answer_and_a_changed_skill():
    problem = generate_math(1, seed=0)[0]
    variant = procedural_variants([problem], 1).variants[0]
    assert check_variant(problem, variant) is None
    wrong = Problem.from_dict({**variant.to_dict(), "answer": "123456789"})
    assert "fails the verifier" in check_variant(problem, wrong)
    other = Problem.from_dict({**variant.to_dict(), "metadata": {**variant.metadata, "skill": "x"}})
    assert "skill changed" in check_variant(problem, other)


def test_procedural_refuses_foreign_problems_and_bad_n():
    with pytest.raises(ValueError, match="not made by the offline generators"):
        procedural_variants(originals(), 2)
    with pytest.raises(ValueError, match="positive integer"):
        procedural_variants(generate_math(1), 0)


# ---------------------------------------------------------------- variant set
def test_variant_set_round_trip_and_errors(tmp_path):
    variants = procedural_variants(generate_math(2, seed=3), 2).variants
    path = write_variant_set(tmp_path / "set.jsonl", variants)
    assert [v.to_dict() for v in read_variant_set(path, domain="math")] == [
        v.to_dict() for v in variants
    ]
    with pytest.raises(VariantSetError, match="expected 'linguini'"):
        read_variant_set(path, domain="linguini")
    with pytest.raises(VariantSetError, match="lacks metadata"):
        write_variant_set(tmp_path / "bad.jsonl", originals())
    (tmp_path / "broken.jsonl").write_text('{"id": "x"}\n')
    with pytest.raises(VariantSetError, match="broken.jsonl:1"):
        read_variant_set(tmp_path / "broken.jsonl")
    with pytest.raises(VariantSetError, match="not found"):
        read_variant_set(tmp_path / "missing.jsonl")


# ------------------------------------------------------ one variant per original
def all_valid(messages):
    """Every problem: one skill, one category, three candidates, all of them valid."""
    text = messages[-1]["content"]
    if "name the single most specific skill" in text:
        return "Skill: adding integers"
    if "Group them into" in text:
        return '{"categories": [{"name": "Arithmetic", "description": "sums", "skills": ["adding integers"]}]}'
    if "new problem" in text:
        return "".join(
            f"<variant><problem>What is ${k}+{k}$? ({len(text)})</problem><answer>{2 * k}</answer></variant>"
            for k in (1, 2, 3)
        )
    return "Same skill: Yes\nAnswer correct: Yes\nReason: fine."


def test_one_validated_variant_per_original_is_sampled_reproducibly(cache_dir):
    # Int-Bench §3.4: "A single valid variant is sampled"; App. C.2: 5 candidates per problem.
    pipeline = VariantPipeline(CountingBackend(all_valid), cache_dir=cache_dir)
    assert pipeline.n_variants == 5 and pipeline.keep == "one"
    result = pipeline.run(originals()[:2])
    assert len(result.validated) == 6
    assert sorted(v.metadata["variant_of"] for v in result.variants) == ["o/0", "o/1"]
    assert [v.id for v in result.variants] == [
        v.id for v in sample_per_original(result.validated, 0)
    ]
    again = VariantPipeline(CountingBackend(all_valid), cache_dir=cache_dir).run(originals()[:2])
    assert [v.id for v in again.variants] == [v.id for v in result.variants]
    log = {entry["problem_id"]: entry for entry in result.log}
    sampled = [c["id"] for e in log.values() for c in e["candidates"] if c["sampled"]]
    assert sampled == [v.id for v in result.variants]
    assert log["o/0"]["conditioned_on"] == "skill_category"
    assert result.to_dict()["keep"] == "one"
    # the seed decides which one; "all" keeps every validated variant
    picks = {
        VariantPipeline(CountingBackend(all_valid), cache_dir=cache_dir, seed=seed)
        .run(originals()[:1])
        .variants[0]
        .id
        for seed in range(12)
    }
    assert len(picks) > 1
    everything = VariantPipeline(CountingBackend(all_valid), cache_dir=cache_dir, keep="all")
    assert len(everything.run(originals()[:2]).variants) == 6
    with pytest.raises(ValueError, match="keep"):
        VariantPipeline(CountingBackend(), keep="first")


def test_sampling_one_per_original_depends_on_the_seed_and_the_original_only():
    variants = [
        Problem(f"{o}/v{k}", "math", f"q{k}", str(k), metadata={"variant_of": o, "skill": "s"})
        for o in ("a", "b")
        for k in range(4)
    ]
    chosen = sample_per_original(variants, seed=7)
    assert [v.metadata["variant_of"] for v in chosen] == ["a", "b"]
    alone = sample_per_original([v for v in variants if v.metadata["variant_of"] == "b"], seed=7)
    assert alone == chosen[1:]  # other originals in the set do not change b's draw
    assert sample_per_original(variants, seed=7) == chosen


# ------------------------------------------------------------------------ CLI
def cli(*argv: str) -> int:
    import argparse

    from intbench.commands import variants

    parser = argparse.ArgumentParser()
    variants.add_parser(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(list(argv))
    return args.func(args)


def test_cli_writes_procedural_variant_sets(tmp_path, capsys):
    out = tmp_path / "v.jsonl"
    assert cli("variants", "math", "-n", "3", "--per-problem", "2", "--out", str(out)) == 0
    variants = read_variant_set(out)
    assert "[procedural]" in capsys.readouterr().out
    log = json.loads(out.with_suffix(".log.json").read_text())
    dropped = [d for entry in log["problems"] for d in entry["dropped"]]
    assert len(variants) + len(dropped) == 6
    assert all(d["reason"] == SHARED_ANSWER for d in dropped)
    assert log["method"] == "procedural" and len(log["problems"]) == 3


def test_cli_llm_pipeline_and_clear_errors(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("INTBENCH_CACHE", str(tmp_path / "cache"))
    out = tmp_path / "t.jsonl"
    assert cli("variants", "brainteaser", "-n", "2", "--out", str(out)) == 2
    assert "--model" in capsys.readouterr().err
    assert cli("variants", "math", "--out", str(tmp_path / "v.txt")) == 2
    spec = "scripted:text=Skill: riddles about objects"
    assert cli("variants", "brainteaser", "-n", "2", "--model", spec, "--out", str(out)) == 0
    log = json.loads(out.with_suffix(".log.json").read_text())
    assert log["method"].startswith("LLM pipeline") and read_variant_set(out) == []
    assert all(entry["generation_issues"] == ["no <variant> block"] for entry in log["problems"])


def test_cli_keeps_one_variant_per_problem_unless_asked_for_all(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("INTBENCH_CACHE", str(tmp_path / "cache"))
    spec = "scripted:tests.test_variants:all_valid"
    one, every = tmp_path / "one.jsonl", tmp_path / "all.jsonl"
    assert cli("variants", "math", "-n", "2", "--model", spec, "--out", str(one)) == 0
    # One of the six candidates shares its original's answer and is dropped.
    assert "2 variant(s) (5 validated, kept one)" in capsys.readouterr().out
    assert len({v.metadata["variant_of"] for v in read_variant_set(one)}) == 2
    log = json.loads(one.with_suffix(".log.json").read_text())
    assert log["keep"] == "one" and log["seed"] == 0
    assert (
        cli("variants", "math", "-n", "2", "--model", spec, "--keep", "all", "--out", str(every))
        == 0
    )
    assert len(read_variant_set(every)) == 5


@pytest.mark.slow
def test_llm_pipeline_end_to_end_with_the_embedded_model(tmp_path):
    import os

    os.environ.setdefault("OMP_NUM_THREADS", "1")
    short = {
        "skill_extract": SamplingParams(temperature=0.0, max_tokens=48, seed=0),
        "skill_cluster": SamplingParams(temperature=0.0, max_tokens=96, seed=0),
        "variant_generate": SamplingParams(temperature=0.7, max_tokens=160, seed=0),
        "variant_validate": SamplingParams(temperature=0.0, max_tokens=48, seed=0),
    }
    problems = generate_math(2, seed=0)
    result = VariantPipeline("smollm2", 1, tmp_path / "cache", short).run(problems)
    assert [entry["problem_id"] for entry in result.log] == [p.id for p in problems]
    for variant in result.variants:  # quality aside: whatever survived is well-formed
        assert (
            variant.metadata["variant_of"] in {p.id for p in problems} and variant.metadata["skill"]
        )
    write_variant_set(tmp_path / "v.jsonl", result.variants)
    assert len(read_variant_set(tmp_path / "v.jsonl")) == len(result.variants)
