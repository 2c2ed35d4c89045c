"""Tests for the procedural offline generators (math, omni_math, linguini)."""

from __future__ import annotations

import re
import time

import pytest
from math_verify import parse
from math_verify import verify as mv_verify

from intbench.envs.domains.generators import (
    SKILLS,
    GeneratorError,
    generate_linguini,
    generate_math,
    generate_omni_math,
    make_variant,
    rebuild,
)
from intbench.envs.domains.generators import math_problems as mp
from intbench.envs.domains.generators.linguini_puzzles import uncovered
from intbench.records import Problem
from intbench.verifiers import verify

GENERATORS = {
    "math": generate_math,
    "omni_math": generate_omni_math,
    "linguini": generate_linguini,
}

N = 500
REQUIRED_METADATA = {"source", "generator", "skill", "difficulty", "split", "seed", "license"}


@pytest.fixture(scope="module")
def generated() -> dict[str, tuple[list[Problem], float]]:
    """500 problems of each kind, with the seconds each batch took."""
    batches = {}
    for domain, generate in GENERATORS.items():
        start = time.perf_counter()
        problems = generate(N, seed=0)
        batches[domain] = (problems, time.perf_counter() - start)
    return batches


def _one_per_skill(problems: list[Problem]) -> list[Problem]:
    by_skill: dict[str, Problem] = {}
    for problem in problems:
        by_skill.setdefault(problem.metadata["skill"], problem)
    return list(by_skill.values())


@pytest.mark.parametrize("domain", ["math", "omni_math", "linguini"])
def test_500_problems_with_unique_ids_and_metadata(generated, domain):
    problems, seconds = generated[domain]
    assert len(problems) == N
    assert len({p.id for p in problems}) == N
    assert len({p.question for p in problems}) == N
    assert seconds < 30, f"{domain}: {seconds:.1f}s for {N} problems"
    for index, problem in enumerate(problems):
        assert problem.domain == domain
        assert problem.id == f"{domain}/procedural/test/0/{index}"
        assert REQUIRED_METADATA <= problem.metadata.keys()
        assert problem.metadata["source"] == "intbench-procedural"
        assert problem.metadata["license"] == "Apache-2.0"
        assert problem.metadata["split"] == "test" and problem.metadata["seed"] == 0
        assert "params" in problem.fields
        assert problem.answer and problem.solution
        # to_dict must round-trip through JSON-ready types
        assert Problem.from_dict(problem.to_dict()) == problem


def test_math_covers_topics_and_levels(generated):
    problems, _ = generated["math"]
    assert len({p.metadata["generator"] for p in problems}) >= 5
    assert {p.metadata["difficulty"] for p in problems} == {1, 2, 3, 4, 5}
    assert len({p.metadata["skill"] for p in problems}) >= 20


def test_omni_math_difficulty_and_domain_labels(generated):
    problems, _ = generated["omni_math"]
    for problem in problems:
        difficulty = problem.metadata["difficulty"]
        assert isinstance(difficulty, float) and 4.0 <= difficulty <= 8.0
        (label,) = problem.metadata["domain"]
        assert label.startswith("Mathematics -> ")
    assert len({p.metadata["skill"] for p in problems}) >= 8


@pytest.mark.parametrize("domain", ["math", "omni_math"])
def test_math_reference_answers_pass_the_verifier(generated, domain):
    problems, _ = generated[domain]
    for problem in problems:
        boxed = f"\\boxed{{{problem.answer}}}"
        assert problem.solution.rstrip("$").endswith(boxed)
        assert verify(problem, problem.solution).correct, problem.id
        assert verify(problem, boxed).correct, problem.id
        # Independent of intbench's verifier: math-verify agrees with itself.
        assert mv_verify(parse(boxed), parse(problem.solution)), problem.id


@pytest.mark.parametrize("domain", ["math", "omni_math"])
def test_wrong_math_answers_are_rejected(generated, domain):
    problems, _ = generated[domain]
    integer_answers = [p for p in problems if re.fullmatch(r"-?\d+", p.answer)][:50]
    assert integer_answers
    for problem in integer_answers:
        assert verify(problem, f"\\boxed{{{int(problem.answer) + 1}}}").status == "incorrect"


def test_linguini_answers_pass_the_verifier(generated):
    problems, _ = generated["linguini"]
    for problem in problems:
        assert verify(problem, problem.answer).correct, problem.id
        assert verify(problem, f"Answer: {problem.answer}").correct, problem.id
    wrong = problems[0].answer.split()
    assert not verify(problems[0], " ".join(reversed(wrong))).correct


def test_math_answers_are_never_degenerate(generated):
    for domain in ("math", "omni_math"):
        for problem in generated[domain][0]:
            assert not re.search(r"zoo|nan|\\infty|oo|\\text", problem.answer), problem.answer
            values = parse(f"\\boxed{{{problem.answer}}}")
            assert values, problem.answer


def test_every_skill_cross_checks_across_levels():
    """Each skill's answer agrees with its second computation on many draws."""
    for name, skill in SKILLS.items():
        for level in range(1, 6):
            for draw in range(4):
                rng = mp.stream_rng("test", name, level, draw)
                params = skill.sample(rng, level)
                try:
                    built, latex = mp._realise(skill, params)
                except mp.DegenerateProblem:
                    continue
                assert mp._same(built.answer, built.check), (name, params)
                assert latex


def test_cross_check_failure_is_an_error(monkeypatch):
    skill = SKILLS["gcd_lcm"]
    broken = mp.Skill(
        skill.name,
        skill.kind,
        skill.generator,
        skill.subject,
        skill.sample,
        lambda p: mp.Built("q?", mp.sympy.Integer(3), mp.sympy.Integer(4), "s"),
    )
    monkeypatch.setitem(SKILLS, "gcd_lcm", broken)
    with pytest.raises(GeneratorError, match="disagrees"):
        mp._realise(broken, {})
    zero = mp.Skill(
        "x", "math", "g", "S", skill.sample, lambda p: mp.Built("q", mp.sympy.zoo, mp.sympy.zoo, "")
    )
    with pytest.raises(GeneratorError, match="degenerate"):
        mp._realise(zero, {})


def test_latex_format_matches_math500_style():
    s = mp.sympy
    assert mp.to_latex(s.Rational(3, 4)) == "\\frac{3}{4}"
    assert mp.to_latex(2 * s.sqrt(3)) == "2\\sqrt{3}"
    assert mp.to_latex((s.Integer(2), s.Integer(-1))) == "(2, -1)"
    assert mp.to_latex(s.Rational(-19, 8)) == "-\\frac{19}{8}"
    assert mp.to_latex(3 - 2 * s.I) == "3 - 2i"
    assert mp.to_latex(s.Rational(1, 5) + s.Rational(7, 5) * s.I) == "\\frac{1}{5} + \\frac{7}{5}i"
    assert mp.to_latex(25 * s.pi) == "25\\pi"


@pytest.mark.parametrize("domain", ["math", "omni_math", "linguini"])
def test_params_regenerate_the_problem(generated, domain):
    for problem in _one_per_skill(generated[domain][0]):
        assert rebuild(problem).to_dict() == problem.to_dict()


@pytest.mark.parametrize("generate", [generate_math, generate_omni_math, generate_linguini])
def test_determinism_and_seeds(generate):
    first = [p.to_dict() for p in generate(25, seed=7)]
    again = [p.to_dict() for p in generate(25, seed=7)]
    other = [p.to_dict() for p in generate(25, seed=8)]
    assert first == again
    assert [p["question"] for p in first] != [p["question"] for p in other]
    # problem i does not depend on n
    assert [p.to_dict() for p in generate(10, seed=7)] == first[:10]


@pytest.mark.parametrize("generate", [generate_math, generate_omni_math, generate_linguini])
def test_splits_are_disjoint(generate):
    train = generate(150, seed=0, split="train")
    test = generate(150, seed=0, split="test")
    assert all(p.metadata["split"] == "train" and "/train/" in p.id for p in train)
    assert not {p.question for p in train} & {p.question for p in test}
    assert mp.split_of(train[0].question) == "train" or train[0].domain == "linguini"


@pytest.mark.parametrize("domain", ["math", "omni_math", "linguini"])
def test_make_variant(generated, domain):
    for problem in _one_per_skill(generated[domain][0]):
        variant = make_variant(problem, seed=3)
        assert variant.id == f"{problem.id}/variant/3" and variant.id != problem.id
        assert variant.metadata["skill"] == problem.metadata["skill"]
        assert variant.metadata["difficulty"] == problem.metadata["difficulty"]
        assert variant.metadata["variant_of"] == problem.id
        assert variant.question != problem.question
        reference = variant.solution if domain != "linguini" else variant.answer
        assert verify(variant, reference).correct, variant.id
        assert make_variant(problem, seed=3).to_dict() == variant.to_dict()


def test_linguini_queries_are_solvable_from_examples(generated):
    """Every stem and affix of the query's target form occurs in the examples."""
    for problem in generated["linguini"][0]:
        params = problem.fields["params"]
        lang, query = params["language"], params["query"]
        assert not uncovered(lang, query, params["examples"])
        examples_text = problem.question.split("Translate the following")[0].lower()
        morphemes = [lang["verbs"][query["verb"]]["stem"], lang["tense"][query["tense"]]]
        phrases = [query["subj"]] + ([query["obj"]] if "obj" in query else [])
        for phrase in phrases:
            noun = lang["nouns"][phrase["noun"]]
            morphemes.append(noun["stem"])
            if phrase["plural"]:
                morphemes.append(lang["plural"][noun["class"]])
            if phrase["adj"] is not None:
                morphemes.append(lang["adjectives"][phrase["adj"]]["stem"])
                if lang["agreement"]:
                    morphemes.append(lang["agreement"][noun["class"]])
        if "obj" in query:
            morphemes.append(lang["case"])
        if query["subj"]["plural"]:
            morphemes.append(lang["verb_plural"])
        for morpheme in filter(None, morphemes):
            assert morpheme in examples_text, (problem.id, morpheme)


def test_linguini_question_format(generated):
    problems, _ = generated["linguini"]
    assert {p.metadata["direction"] for p in problems} == {"to_english", "from_english"}
    assert {p.metadata["difficulty"] for p in problems} == {1, 2, 3, 4, 5}
    for problem in problems[:50]:
        name = problem.metadata["language"]
        assert problem.question.startswith(f"{name} is a language. Here are some sentences")
        assert problem.question.count("English: ") >= 6
        assert problem.question.rstrip().endswith("with no explanation.")
        assert problem.answer.endswith(".") and "\n" not in problem.answer


@pytest.mark.parametrize("generate", [generate_math, generate_omni_math, generate_linguini])
@pytest.mark.parametrize(
    "kwargs", [{"n": -1}, {"n": 2.5}, {"n": True}, {"n": 3, "split": "dev"}, {"n": 3, "seed": "x"}]
)
def test_bad_arguments_raise_value_error(generate, kwargs):
    with pytest.raises(ValueError):
        generate(**kwargs)


def test_zero_problems():
    assert generate_math(0) == [] and generate_linguini(0) == []


def test_make_variant_refuses_foreign_problems():
    foreign = Problem(id="math/test/1", domain="math", question="1+1?", answer="2")
    with pytest.raises(ValueError):
        make_variant(foreign, seed=0)
    with pytest.raises(ValueError):
        make_variant(Problem(id="a", domain="arc", question="?"), seed=0)
    generated = generate_math(1)[0]
    with pytest.raises(ValueError):
        make_variant(generated, seed="1")
