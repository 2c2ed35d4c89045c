"""Prompt templates: every template renders for every domain, carries its
format tags, keeps references out of student prompts, fails clearly on
missing variables, and the append-only Standard prompt only grows."""

from __future__ import annotations

import json

import pytest

from intbench.envs.domains import get_domain, prompting
from intbench.envs.domains.prompting import (
    TEMPLATE_NAMES,
    PromptTemplateError,
    answer_format,
    render,
    render_messages,
    render_system,
)
from intbench.records import DOMAINS, Problem

SECRET_ANSWER = "ZQX-ANSWER-417"
SECRET_SOLUTION = "ZQX-SOLUTION-STEPS"
SECRET_GRID = [[9, 8, 7, 6]]


def _problems() -> dict[str, Problem]:
    math = Problem(
        id="math/t/1",
        domain="math",
        question="Find the remainder when $7^{100}$ is divided by 5.",
        answer=SECRET_ANSWER,
        solution=f"By Fermat, 7^4 = 1 mod 5. {SECRET_SOLUTION}",
    )
    return {
        "math": math,
        "omni_math": Problem(
            id="omni/t/1",
            domain="omni_math",
            question="Let $n$ be a positive integer such that $n^2+1$ divides $n^5+3$. Find all $n$.",
            answer=SECRET_ANSWER,
            solution=SECRET_SOLUTION,
            metadata={"difficulty": 6.5},
        ),
        "codeforces": Problem(
            id="cf/1A",
            domain="codeforces",
            question="Given n and m, print the number of a x a flagstones needed to cover an n x m square.",
            solution=f"print(1)  # {SECRET_SOLUTION}",
            tests={
                "kind": "stdio",
                "cases": [{"input": "6 6 4\n", "output": "4\n"}],
                "time_limit_s": 1,
                "memory_limit_mb": 256,
            },
        ),
        "debug": Problem(
            id="debug/he/0",
            domain="debug",
            question="The function below should return True if any two numbers are closer than threshold. Fix it.",
            solution=f"def has_close(xs, t):\n    return False  # {SECRET_SOLUTION}",
            tests={
                "kind": "function",
                "entry_point": "has_close",
                "setup": "",
                "cases": [{"code": "assert candidate([1.0, 1.05], 0.1)"}],
            },
            fields={
                "buggy_code": "def has_close(xs, t):\n    return len(xs) < 1",
                "bug_type": "wrong_condition",
            },
        ),
        "linguini": Problem(
            id="ling/1",
            domain="linguini",
            question="kalo mi = I see. kalo tu = you see. Translate: you run (runo = run).",
            answer=SECRET_ANSWER,
            solution=SECRET_SOLUTION,
        ),
        "arc": Problem(
            id="arc/eval/0",
            domain="arc",
            question="Infer the transformation from the training examples and apply it to the test input.",
            answer=[SECRET_GRID],
            fields={
                "train": [{"input": [[0, 1], [1, 0]], "output": [[1, 0], [0, 1]]}],
                "test_inputs": [[[1, 1], [0, 0]]],
            },
        ),
        "brainteaser": Problem(
            id="riddle/1",
            domain="brainteaser",
            question="What has keys but can't open locks?",
            answer=SECRET_ANSWER,
            solution=SECRET_SOLUTION,
            fields={"aliases": ["a keyboard"]},
        ),
    }


PROBLEMS = _problems()
TRANSCRIPT = (
    "First, note that 7 is congruent to 2 mod 5. Then 2^4 = 16 = 1 mod 5, "
    "so the powers cycle with period 4. Since 100 = 4 * 25, we get 2^100 = 1."
)
MESSAGE = "Check the cycle length of powers of 2 modulo 5 again."
HISTORY = [
    {"attempt": "My answer is \\boxed{3}.", "feedback": "Recheck step two."},
    {"attempt": "Now I get \\boxed{2}.", "feedback": None},
]


def _reference(problem: Problem) -> str:
    return problem.solution or json.dumps(problem.answer)


def template_vars(name: str, problem: Problem) -> dict:
    """Realistic variables for each template (what the roles and envs pass)."""
    original = PROBLEMS.get(problem.domain, problem)
    monitor = {"problem": problem, "transcript": TRANSCRIPT, "chunk_size": 50}
    table = {
        "student_baseline": {"problem": problem},
        "teacher_standard": {**monitor, "reference": _reference(problem)},
        "teacher_standard_v2": {**monitor, "reference": _reference(problem)},
        "teacher_standard_v3": {**monitor, "reference": None},
        "teacher_standard_append": {**monitor, "reference": _reference(problem)},
        "teacher_oracle": {
            "problem": problem,
            "transcript": TRANSCRIPT,
            "student_answer": "1",
            "verdict": "incorrect",
            "reference": _reference(problem),
        },
        "student_continue": {"problem": problem, "prefix": TRANSCRIPT[:80], "message": MESSAGE},
        "student_stop_answer": {"problem": problem, "prefix": TRANSCRIPT[:80], "message": MESSAGE},
        "judge": {
            "question": problem.question,
            "reference": problem.answer,
            "response": "The answer is \\boxed{1}.",
        },
        "feedback_student": {"problem": problem},
        "feedback_student_retry": {
            "problem": problem,
            "history": HISTORY,
            "feedback_text": "Your cycle length is wrong.",
        },
        "feedback_teacher": {
            "problem": problem,
            "history": HISTORY[:1],
            "latest_attempt": HISTORY[1]["attempt"],
            "execution_context": "Passed 1/3 tests. First failure: expected 4, got 1.",
            "reference": _reference(problem),
            "reference_kind": "solution",
        },
        "feedback_self_feedback": {
            "problem": problem,
            "history": HISTORY[:1],
            "latest_attempt": HISTORY[1]["attempt"],
            "execution_context": None,
        },
        "variant_no_context": {"problem": problem},
        "variant_problem_context": {
            "problem": problem,
            "original": original,
            "baseline_trace": TRANSCRIPT,
            "baseline_answer": "1",
            "baseline_verdict": "incorrect",
        },
        "variant_intervention_context": {
            "problem": problem,
            "original": original,
            "prefix": TRANSCRIPT[:80],
            "message": MESSAGE,
            "revised_trace": "Right, the period is 4, so the remainder is 1.",
            "revised_answer": "1",
            "verdict": "correct",
            "explanation": "The final answer matches the reference.",
        },
        "skill_extract": {"problem": problem},
        "skill_cluster": {"skills": ["modular exponentiation", "Fermat's little theorem"]},
        "variant_generate": {"problem": problem, "skill": "modular exponentiation", "n": 3},
        "variant_validate": {
            "original": problem,
            "candidate": {"question": "Find 3^50 mod 7.", "answer": "2"},
            "skill": "modular exponentiation",
        },
        "categorize_label": {"problem": problem, "prefix": TRANSCRIPT[:80], "message": MESSAGE},
        "categorize_cluster": {"labels": ["points out an error", "suggests a strategy"]},
        "categorize_relabel": {
            "taxonomy": [{"name": "Error flag", "description": "names a mistake"}, "Strategy"],
            "message": MESSAGE,
        },
        "leakage_judge": {
            "solution": _reference(problem),
            "student_answer": "3",
            "message": MESSAGE,
        },
        "tutor_student_ideation": {"problem": problem, "dialogue": []},
        "tutor_teacher_ideation": {
            "problem": problem,
            "dialogue": [{"role": "student", "content": "Where should I start?"}],
        },
        "tutor_checker": {"problem": problem, "message": "Think about periodicity."},
        "tutor_solve": {"problem": problem},
    }
    return table[name]


@pytest.mark.parametrize("domain", DOMAINS)
@pytest.mark.parametrize("name", TEMPLATE_NAMES)
def test_every_template_renders_for_every_domain(domain, name):
    messages = render_messages(domain, name, **template_vars(name, PROBLEMS[domain]))
    assert messages[-1]["role"] == "user"
    assert [m["role"] for m in messages[:-1]] in ([], ["system"])
    for message in messages:
        assert message["content"].strip() == message["content"]
        assert message["content"], f"{domain}/{name} rendered an empty {message['role']} message"
        assert "\n\n\n" not in message["content"]
        assert "{{" not in message["content"] and "{%" not in message["content"]


def test_template_names_are_the_protocol_template_files():
    folders = {path.name for path in prompting.TEMPLATE_DIR.iterdir() if path.is_dir()}
    assert folders == {*prompting.PROTOCOL_FOLDERS, "domains"}
    on_disk = [
        path.name.removesuffix(".j2")
        for folder in prompting.PROTOCOL_FOLDERS
        for path in (prompting.TEMPLATE_DIR / folder).glob("*.j2")
        if not path.name.startswith("_") and not path.name.endswith(".system.j2")
    ]
    assert sorted(on_disk) == sorted(TEMPLATE_NAMES)
    assert len(on_disk) == len(set(on_disk))


def test_domain_folders_only_override_generic_templates():
    for domain in DOMAINS:
        folder = get_domain(domain).templates
        assert folder == prompting.TEMPLATE_DIR / "domains" / domain
        for path in folder.iterdir():
            assert path.name in prompting.GENERIC_FILES, f"{path} overrides nothing"


DOMAIN_FORMAT = {
    "math": "\\boxed{",
    "omni_math": "\\boxed{",
    "codeforces": "```python",
    "debug": "```python",
    "linguini": '"Answer: your answer"',
    "arc": '<answer>...</answer> block containing only JSON of the form {"outputs": [grid, ...]}',
    "brainteaser": '"Answer: your answer"',
}
ANSWERING_TEMPLATES = (
    "student_baseline",
    "student_continue",
    "student_stop_answer",
    "feedback_student",
    "feedback_student_retry",
    "variant_no_context",
    "variant_problem_context",
    "variant_intervention_context",
    "tutor_solve",
)


@pytest.mark.parametrize("domain", DOMAINS)
@pytest.mark.parametrize("name", ANSWERING_TEMPLATES)
def test_student_prompts_ask_for_the_domain_answer_format(domain, name):
    text = render(domain, name, **template_vars(name, PROBLEMS[domain]))
    assert DOMAIN_FORMAT[domain] in text
    assert answer_format(domain, problem=PROBLEMS[domain]) in text


@pytest.mark.parametrize(
    "name, tags",
    [
        (
            "teacher_standard",
            ["Intervene: No\nTime: N/A", "Intervene: Yes\nTime:", "\nIntervention:"],
        ),
        (
            "teacher_standard_v2",
            ["Intervene: No\nTime: N/A", "Intervene: Yes\nTime:", "\nIntervention:"],
        ),
        (
            "teacher_standard_v3",
            ["Intervene: No\nTime: N/A", "Intervene: Yes\nTime:", "\nIntervention:"],
        ),
        (
            "teacher_standard_append",
            ["Intervene: No\nTime: N/A", "Intervene: Yes\nTime:", "\nIntervention:"],
        ),
        (
            "teacher_oracle",
            ["Intervene: No\nQuote: N/A", "Intervene: Yes\nQuote:", "5 consecutive words"],
        ),
        ("student_continue", [f"<update>{MESSAGE}</update>", "Continue your reasoning"]),
        ("student_stop_answer", [f"<update>{MESSAGE}</update>", "Stop reasoning now"]),
        ("judge", ["Verdict: Correct or Incorrect", "\nExplanation:"]),
        ("feedback_student", ["<think>...</think>"]),
        ("feedback_student_retry", ["<think>...</think>", "Your cycle length is wrong."]),
        (
            "feedback_teacher",
            ["<feedback>...</feedback>", "Passed 1/3 tests", "Do not state the final answer"],
        ),
        ("feedback_self_feedback", ["<feedback>...</feedback>"]),
        ("skill_extract", ["Skill:"]),
        ("skill_cluster", ['{"categories"', "Fermat's little theorem"]),
        ("variant_generate", ["Write 3 new problems", "<variant>", "<answer>"]),
        (
            "variant_validate",
            ["Same skill: Yes or No", "Answer correct: Yes or No", "Find 3^50 mod 7."],
        ),
        ("categorize_label", ["Role:", "Leakage: None, Partial or Full"]),
        ("categorize_cluster", ['{"categories"', "suggests a strategy"]),
        ("categorize_relabel", ["- Error flag: names a mistake\n- Strategy", "Category:"]),
        ("leakage_judge", ["Leakage: None, Partial or Full", MESSAGE]),
        ("tutor_teacher_ideation", ["Student: Where should I start?"]),
        ("tutor_checker", ["Leak: Yes or No", "Reason:", "Think about periodicity."]),
    ],
)
def test_format_tags_present(name, tags):
    problem = PROBLEMS["math"]
    text = "\n".join(
        m["content"] for m in render_messages("math", name, **template_vars(name, problem))
    )
    for tag in tags:
        assert tag in text, f"{name}: {tag!r} missing"


STUDENT_FACING = (
    *ANSWERING_TEMPLATES,
    "feedback_self_feedback",
    "tutor_student_ideation",
)


@pytest.mark.parametrize("domain", DOMAINS)
@pytest.mark.parametrize("name", STUDENT_FACING)
def test_reference_never_reaches_student_prompts(domain, name):
    text = "\n".join(
        m["content"] for m in render_messages(domain, name, **template_vars(name, PROBLEMS[domain]))
    )
    assert SECRET_ANSWER not in text
    assert SECRET_SOLUTION not in text
    assert json.dumps(SECRET_GRID[0]) not in text


@pytest.mark.parametrize("domain", DOMAINS)
def test_arc_style_hidden_outputs_only_with_teacher_access(domain):
    problem = PROBLEMS[domain]
    base = {"problem": problem, "transcript": TRANSCRIPT, "chunk_size": 50}
    without = render(domain, "teacher_standard", **base, reference=None)
    with_ref = render(domain, "teacher_standard", **base, reference=_reference(problem))
    assert SECRET_SOLUTION not in without and SECRET_ANSWER not in without
    assert _reference(problem) in with_ref


def test_reference_position_faithful_after_append_before_transcript():
    problem = PROBLEMS["math"]
    args = {
        "problem": problem,
        "transcript": TRANSCRIPT,
        "chunk_size": 50,
        "reference": problem.solution,
    }
    for name in ("teacher_standard", "teacher_standard_v2", "teacher_standard_v3"):
        text = render("math", name, **args)
        assert text.index(TRANSCRIPT) < text.index(problem.solution), name
    append = render("math", "teacher_standard_append", **args)
    assert append.index(problem.solution) < append.index(TRANSCRIPT)


def _prefix_through_transcript(text: str, transcript: str) -> str:
    end = text.index(transcript) + len(transcript)
    return text[:end]


@pytest.mark.parametrize("domain", DOMAINS)
@pytest.mark.parametrize(
    "name",
    ["teacher_standard", "teacher_standard_v2", "teacher_standard_v3", "teacher_standard_append"],
)
def test_increments_share_a_byte_identical_prefix(domain, name):
    problem = PROBLEMS[domain]
    previous = None
    for end in range(50, len(TRANSCRIPT) + 50, 50):
        revealed = TRANSCRIPT[:end]
        messages = render_messages(
            domain,
            name,
            problem=problem,
            transcript=revealed,
            chunk_size=50,
            reference=_reference(problem),
        )
        user = messages[-1]["content"]
        if previous is not None:
            prev_system, prev_user, prev_revealed = previous
            assert messages[:-1] == prev_system
            assert user.startswith(_prefix_through_transcript(prev_user, prev_revealed))
        previous = (messages[:-1], user, revealed)


def test_append_variant_prefix_covers_the_reference():
    problem = PROBLEMS["math"]
    first = render(
        "math",
        "teacher_standard_append",
        problem=problem,
        transcript=TRANSCRIPT[:50],
        chunk_size=50,
        reference=problem.solution,
    )
    shared = _prefix_through_transcript(first, TRANSCRIPT[:50])
    assert problem.solution in shared
    faithful = render(
        "math",
        "teacher_standard",
        problem=problem,
        transcript=TRANSCRIPT[:50],
        chunk_size=50,
        reference=problem.solution,
    )
    assert problem.solution not in _prefix_through_transcript(faithful, TRANSCRIPT[:50])


def test_chunk_size_may_name_a_non_character_increment():
    text = render(
        "math",
        "teacher_standard",
        problem=PROBLEMS["math"],
        transcript="x",
        chunk_size="sentence",
        reference=None,
    )
    assert "one increment (sentence) at a time" in text
    assert "50 characters at a time" in render(
        "math",
        "teacher_standard",
        problem=PROBLEMS["math"],
        transcript="x",
        chunk_size=50,
        reference=None,
    )


def test_missing_variable_error_names_domain_template_and_variable():
    with pytest.raises(PromptTemplateError) as info:
        render("math", "teacher_standard", problem=PROBLEMS["math"], transcript="x", chunk_size=50)
    message = str(info.value)
    assert "math/teacher_standard.j2" in message
    assert "'reference' is undefined" in message
    assert "chunk_size" in message  # the variables that were passed are listed


def test_missing_nested_attribute_is_reported():
    with pytest.raises(PromptTemplateError, match="variant_validate"):
        render("math", "variant_validate", original=PROBLEMS["math"], candidate={}, skill="x")


def test_unknown_domain_and_template_are_clear_errors():
    with pytest.raises(PromptTemplateError, match="unknown domain 'chess'"):
        render("chess", "judge", question="q", reference="r", response="s")
    with pytest.raises(PromptTemplateError, match="unknown prompt template 'teacher_socratic'"):
        render_messages("math", "teacher_socratic")
    with pytest.raises(PromptTemplateError, match="unknown domain"):
        answer_format("chess")


def test_domain_overrides_common():
    math_system = render_system("math", "student_baseline", problem=PROBLEMS["math"])
    code_system = render_system("codeforces", "student_baseline", problem=PROBLEMS["codeforces"])
    assert "mathematician" in math_system and "programmer" in code_system
    assert render_system("math", "judge", question="q", reference="r", response="s")
    assert render_system("math", "skill_extract", problem=PROBLEMS["math"]) is None


def test_problem_blocks_show_domain_fields():
    arc = render("arc", "student_baseline", problem=PROBLEMS["arc"])
    assert "Training example 1" in arc and "[[0, 1],\n [1, 0]]" in arc and "Test input 1:" in arc
    # grids already written into the question (as the loaders do) are not repeated
    loaded = Problem(
        id="arc/x",
        domain="arc",
        question="Example 1\nInput:\n0 1\nOutput:\n1 0\n\nTest input 1:\n1 1",
        answer=[SECRET_GRID],
        fields=PROBLEMS["arc"].fields,
    )
    assert "Training example" not in render("arc", "student_baseline", problem=loaded)
    debug = render("debug", "student_baseline", problem=PROBLEMS["debug"])
    assert debug.count("return len(xs) < 1") == 1
    inline = Problem(
        id="d",
        domain="debug",
        question="Fix:\n```python\nx = 1 +\n```",
        fields={"buggy_code": "x = 1 +"},
    )
    assert render("debug", "student_baseline", problem=inline).count("x = 1 +") == 1
    code = render("codeforces", "student_baseline", problem=PROBLEMS["codeforces"])
    assert "Time limit: 1 s per test." in code and "Memory limit: 256 MB." in code
    assert "standard input" in code


def test_code_answer_format_follows_test_kind():
    function_problem = Problem(
        id="he/1",
        domain="codeforces",
        question="def add(a, b): ...",
        tests={"kind": "function", "entry_point": "add", "setup": "", "cases": []},
    )
    assert "`add`" in answer_format("codeforces", problem=function_problem)
    assert "standard input" in answer_format("codeforces")


def test_retry_without_feedback_uses_self_refinement_wording():
    problem = PROBLEMS["math"]
    text = render(
        "math", "feedback_student_retry", problem=problem, history=HISTORY[:1], feedback_text=None
    )
    assert "Look for the mistakes" in text and "makes use of the feedback" not in text
    assert "Your previous attempt was not accepted." in text
    with_feedback = render(
        "math",
        "feedback_student_retry",
        problem=problem,
        history=HISTORY,
        feedback_text="Try mod 4.",
    )
    # earlier feedback is shown with its attempt; the latest attempt gets feedback_text
    assert with_feedback.index("Recheck step two.") < with_feedback.index("Now I get")
    assert with_feedback.index("Now I get") < with_feedback.index("Try mod 4.")


def test_history_entries_without_feedback_key():
    text = render(
        "math",
        "feedback_teacher",
        problem=PROBLEMS["math"],
        history=[{"attempt": "A1"}],
        latest_attempt="A2",
        execution_context=None,
        reference=None,
        reference_kind="none",
    )
    assert "Attempt 1:\nA1" in text and "no access to the reference" in text


@pytest.mark.parametrize(
    "kind, shown", [("answer", "Reference final answer"), ("solution", "Reference solution")]
)
def test_feedback_teacher_reference_kinds(kind, shown):
    text = render(
        "math",
        "feedback_teacher",
        problem=PROBLEMS["math"],
        history=[],
        latest_attempt="A",
        execution_context=None,
        reference="REF",
        reference_kind=kind,
    )
    assert shown in text and "REF" in text


def test_tutor_solve_never_shows_the_dialogue():
    dialogue = [{"role": "teacher", "content": "DIALOGUE-MARKER use periodicity"}]
    messages = render_messages("math", "tutor_solve", problem=PROBLEMS["math"], dialogue=dialogue)
    assert all("DIALOGUE-MARKER" not in m["content"] for m in messages)
    with_attempts = render(
        "math",
        "tutor_solve",
        problem=PROBLEMS["math"],
        attempts=[{"attempt": "\\boxed{3}", "feedback": "incorrect"}],
    )
    assert "Submission 1:" in with_attempts and "Result: incorrect" in with_attempts


def test_environment_is_cached_and_strict():
    env = prompting.get_environment()
    assert env is prompting.get_environment()
    assert env.autoescape is False and env.trim_blocks
    # no HTML escaping of code or comparisons
    text = render("debug", "student_baseline", problem=PROBLEMS["debug"])
    assert "len(xs) < 1" in text and "&lt;" not in text
