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
    example_turns,
    render,
    render_messages,
    render_system,
)
from intbench.envs.env_options import TEACHER_PROMPTS
from intbench.envs.monitor import continuation_messages
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
        "arithmetic": Problem(
            id="arithmetic/test/0/0",
            domain="arithmetic",
            question="What is $17 - 9$?",
            answer=SECRET_ANSWER,
            solution=SECRET_SOLUTION,
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
        "teacher_standard_v1": {**monitor, "reference": _reference(problem)},
        "teacher_standard_v2": {**monitor, "reference": None},
        "teacher_standard_append": {**monitor, "reference": _reference(problem)},
        "teacher_oracle": {
            "problem": problem,
            "transcript": TRANSCRIPT,
            "student_answer": "1",
            "verdict": "incorrect",
            "reference": _reference(problem),
        },
        "student_continue": {"problem": problem, "message": MESSAGE},
        "student_stop_answer": {"problem": problem, "message": MESSAGE},
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
        "feedback_self_critique": {
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
        "variant_transfer": {
            "problem": problem,
            "original": original,
            "attempt_trace": TRANSCRIPT,
            "attempt_answer": "1",
            "attempt_verdict": "incorrect",
            "message": MESSAGE,
        },
        "skill_extract": {"problem": problem},
        "skill_cluster": {"skills": ["modular exponentiation", "Fermat's little theorem"]},
        "variant_generate": {"problem": problem, "skill": "modular exponentiation", "n": 3},
        "variant_validate": {
            "original": problem,
            "candidate": {"question": "Find 3^50 mod 7.", "answer": "2"},
            "skill": "modular exponentiation",
        },
        "categorize_role": _categorize_context(problem),
        "categorize_leakage": _categorize_context(problem),
        "categorize_cluster_role": {"labels": ["points out an error", "suggests a strategy"]},
        "categorize_cluster_leakage": {"labels": ["reveals the key step", "reveals nothing"]},
        "categorize_relabel": {
            "taxonomy": [{"name": "Error flag", "description": "names a mistake"}, "Strategy"],
            "reason": "points out an error",
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


def _categorize_context(problem: Problem) -> dict:
    """The variables of the shared context block of the two categorisation labelling prompts."""
    return {"problem": problem, "reference": _reference(problem), "chunk_size": 50, "at_chunk": 2,
            "chunks_shown": 2, "total_chunks": 5, "prefix": TRANSCRIPT[:80], "message": MESSAGE}  # fmt: skip


@pytest.mark.parametrize("domain", DOMAINS)
@pytest.mark.parametrize("name", TEMPLATE_NAMES)
def test_every_template_renders_for_every_domain(domain, name):
    messages = render_messages(domain, name, **template_vars(name, PROBLEMS[domain]))
    assert messages[-1]["role"] == "user"
    example = ["user", "assistant"] if example_turns(domain, name) else []  # a demo domain's
    assert [m["role"] for m in messages[:-1]] in (example, ["system", *example])
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
    "arithmetic": "\\boxed{",
}
POST_INTERVENTION = ("student_continue", "student_stop_answer")
ANSWERING_TEMPLATES = (
    "student_baseline",
    "student_continue",
    "student_stop_answer",
    "feedback_student",
    "feedback_student_retry",
    "variant_no_context",
    "variant_problem_context",
    "variant_intervention_context",
    "variant_transfer",
    "tutor_solve",
)


@pytest.mark.parametrize("domain", DOMAINS)
@pytest.mark.parametrize("name", ANSWERING_TEMPLATES)
def test_student_prompts_ask_for_the_domain_answer_format(domain, name):
    if name in POST_INTERVENTION:  # the answer format is in user 1 of the conversation
        messages = continuation_messages(PROBLEMS[domain], TRANSCRIPT[:80], MESSAGE, "continue")
        text = "\n".join(m["content"] for m in messages)
    else:
        text = render(domain, name, **template_vars(name, PROBLEMS[domain]))
    assert DOMAIN_FORMAT[domain] in text
    assert answer_format(domain, problem=PROBLEMS[domain]) in text


STANDARD_TAGS = ["Intervene: [Yes/No]\nIntervention: <If 'Yes', write", "Student reasoning so far:"]


@pytest.mark.parametrize(
    "name, tags",
    [
        ("teacher_standard", STANDARD_TAGS),
        ("teacher_standard_v1", STANDARD_TAGS),
        ("teacher_standard_v2", STANDARD_TAGS),
        ("teacher_standard_append", STANDARD_TAGS),
        (
            "teacher_oracle",
            ["Intervene: [Yes/No]\nQuote: <If 'Yes', provide the 5 words", "\nIntervention: <"],
        ),
        ("student_continue", [f"<update>{MESSAGE}</update>", "Please continue your reasoning"]),
        ("student_stop_answer", [f"<update>{MESSAGE}</update>", "final answer immediately"]),
        ("judge", ["Verdict: Correct/Incorrect", "\nExplanation:", "Candidate solution:"]),
        ("feedback_student", ["<think>...</think>"]),
        ("feedback_student_retry", ["<think>...</think>", "Your cycle length is wrong."]),
        (
            "feedback_teacher",
            ["<feedback>...</feedback>", "Passed 1/3 tests", "without telling me the final answer"],
        ),
        ("feedback_self_critique", ["<feedback>...</feedback>"]),
        ("skill_extract", ["Skill:"]),
        ("skill_cluster", ['{"categories"', "Fermat's little theorem"]),
        ("variant_generate", ["Write 3 new problems", "<variant>", "<answer>"]),
        (
            "variant_validate",
            ["Same skill: Yes or No", "Answer correct: Yes or No", "Find 3^50 mod 7."],
        ),
        ("categorize_role", ["# Problem Context", "# Your Task", "\nReason: <"]),
        ("categorize_leakage", ["# Problem Context", "# Your Task", "\nSolution Revealed: <"]),
        (
            "categorize_cluster_role",
            ['{"categories"', "suggests a strategy", "NOT domain-specific"],
        ),
        ("categorize_cluster_leakage", ['{"categories"', "reveals nothing", "NOT domain-specific"]),
        ("categorize_relabel", ["- Error flag: names a mistake\n- Strategy", "Category: <"]),
        ("leakage_judge", ["Leaked: True or False", MESSAGE]),
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
    "feedback_self_critique",
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
    for name in ("teacher_standard", "teacher_standard_v1", "teacher_standard_v2"):
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
    ["teacher_standard", "teacher_standard_v1", "teacher_standard_v2", "teacher_standard_append"],
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
    text = render_system(
        "math",
        "teacher_standard",
        problem=PROBLEMS["math"],
        transcript="x",
        chunk_size="sentence",
        reference=None,
    )
    assert "in increments of one sentence at a time" in text
    assert "in increments of 50 characters at a time" in render_system(
        "math",
        "teacher_standard",
        problem=PROBLEMS["math"],
        transcript="x",
        chunk_size=50,
        reference=None,
    )


def test_renders_are_memoised_only_by_the_scalar_variables_they_read():
    """A system prompt is rendered once per value of what it reads (its includes too);
    a prompt that reads the problem is rendered every time."""
    prompting._render_memo.cache_clear()
    kwargs = {"problem": PROBLEMS["math"], "transcript": "x", "reference": None}
    first = render_system("math", "teacher_standard", chunk_size=50, **kwargs)
    again = render_system(
        "math", "teacher_standard", chunk_size=50, **{**kwargs, "transcript": "y"}
    )
    assert again == first and prompting._render_memo.cache_info().hits == 1
    other = render_system("math", "teacher_standard", chunk_size=60, **kwargs)
    assert (
        "increments of 60 characters" in other and prompting._render_memo.cache_info().misses == 2
    )
    render("math", "teacher_standard", chunk_size=50, **kwargs)
    render("math", "teacher_standard", chunk_size=50, **kwargs)
    assert prompting._render_memo.cache_info().misses == 2  # reads the problem: not memoised
    assert prompting._variables_read("math", "teacher_standard.system.j2") == (
        "chunk_size",
        "reference",
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
    assert "produce a corrected solution" in text and "uses the feedback" not in text
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
    assert "Attempt 1:\nA1" in text and "do not have access to the ground truth" in text


@pytest.mark.parametrize(
    "kind, shown",
    [
        ("answer", "Here is the ground-truth final answer:"),
        ("solution", "Here is the ground-truth solution:"),
    ],
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


# --------------------------------------------------------------------------
# Paper wording (Int-Bench App. F; feedback paper App. A.8).  The sentences
# below are the papers' own, as printed for the brain-teaser domain.

F2_STANDARD = [
    "You are an expert teacher watching a student attempt a brain teaser.",
    "Your goal is to teach the student how to solve brain teasers effectively and efficiently.",
    "You will be shown a brain teaser, portions of the student's reasoning transcript, "
    "and a reference solution.",
    "Only you as the teacher have access to the reference solution; the student does not.",
]
F2_MECHANICS = [
    "You will see the reasoning in increments of 50 characters at a time.",
    "After each increment, you will be asked whether you would like to intervene.",
    "If you choose not to intervene, you will then receive the next 50 characters, "
    "along with all previously shown text.",
    "You may only intervene once.",
    "If you choose to intervene, the task ends immediately and your intervention message "
    "will be sent to the student.",
    "You may also choose not to intervene.",
    "Your response must follow this format. Do not include any explanations or additional text.",
]
F2_ORACLE = [
    "You are an expert teacher.",
    "Your goal is to teach the student how to solve brain teasers effectively.",
    "You will be shown (1) a brain teaser, (2) the full transcript of the student's reasoning "
    "process, (3) the student's final answer, (4) a reference solution, and (5) whether the "
    "student's answer is correct/incorrect.",
    "Your task is to read the student reasoning transcript and decide whether to intervene, "
    "and if so, when and what you would say.",
    "You may only intervene once during the student's reasoning process and before the "
    "student submits their final answer.",
    "If you choose to intervene, your intervention message will be sent to the student.",
    "provide the 5 words in the reasoning transcript immediately preceding the point where "
    "you would intervene in the reasoning transcript (not in the student's final answer).",
    'Format as a single string: "word1 word2 word3 word4 word5"',
]
F8_V1 = "Only intervene if truly necessary."
F8_V2 = (
    "Your goal is to enable the student to reason independently and learn, not simply help "
    "the student get the correct answer quickly. You should only intervene when absolutely "
    "necessary, and your message should scaffold and guide the student."
)
F1_BASELINE = [
    "Your task is to solve a brain teaser.",
    "You must think step-by-step and show your full reasoning. Do not summarize it.",
    "Your response must follow this format. Do not mix your reasoning with the final answer.",
    "Reasoning: <your step-by-step reasoning>\nFinal Answer: <answer>",
]
F3_UPDATE = (
    "During your reasoning process, a teacher may intervene and provide updates in the format: "
    "<update>...</update>. Please incorporate the teacher's update into your reasoning process."
)
F3_CONTINUE = (
    "Please continue your reasoning from where you left off, incorporating the teacher's "
    "feedback, and provide your final answer."
)
F3_STOP = (
    "Please incorporate the teacher's feedback and provide your final answer immediately "
    "using the format specified in the system prompt."
)
F4_JUDGE = [
    "You are an expert evaluator. You will be given a brain teaser and its solution.",
    "Your task is to determine whether the candidate solution is correct.",
    "Verdict: Correct/Incorrect\nExplanation: <One sentence explaining why correct or incorrect.>",
]
# Guidance the paper's prompts do not have (it biased phi and tau).
BIASING = [
    "unnecessary intervention",
    "costs them the chance",
    "only intervene when your help is needed",
    "never copy it",
    "state its final answer",
    "needed no help",
    "do not intervene",
]

TEASER = Problem(id="bt/1", domain="brainteaser", question="What has keys but no locks?")


def _standard(name: str, reference: str | None = "A piano.", domain: str = "brainteaser"):
    problem = TEASER if domain == "brainteaser" else PROBLEMS[domain]
    return render_messages(
        domain, name, problem=problem, transcript=TRANSCRIPT, chunk_size=50, reference=reference
    )


def _text(messages) -> str:
    return "\n".join(m["content"] for m in messages)


@pytest.mark.parametrize("name", ["teacher_standard", "teacher_standard_append"])
def test_default_standard_prompt_is_the_papers(name):
    system, user = _standard(name)
    for sentence in F2_STANDARD + F2_MECHANICS:
        assert sentence in system["content"], sentence
    assert system["content"].endswith(
        "Intervene: [Yes/No]\nIntervention: <If 'Yes', write your intervention message to the "
        "student at this moment. If 'No', leave this blank.>"
    )
    assert (
        "Student reasoning so far:" in user["content"]
        and "Reference solution:\nA piano." in (user["content"])
    )


@pytest.mark.parametrize("domain", DOMAINS)
@pytest.mark.parametrize("name", ["teacher_standard", "teacher_oracle"])
def test_default_prompts_carry_no_guidance_the_paper_lacks(domain, name):
    if name == "teacher_oracle":
        messages = render_messages(domain, name, **template_vars(name, PROBLEMS[domain]))
    else:
        messages = _standard(name, domain=domain)
    text = _text(messages).lower()
    for phrase in BIASING + [F8_V1.lower(), "absolutely necessary"]:
        assert phrase not in text, f"{domain}/{name}: {phrase!r}"


def test_oracle_prompt_is_the_papers():
    messages = render_messages(
        "brainteaser",
        "teacher_oracle",
        problem=TEASER,
        transcript=TRANSCRIPT,
        student_answer="a map",
        verdict="incorrect",
        reference="A piano.",
    )
    system, user = (m["content"] for m in messages)
    for sentence in F2_ORACLE:
        assert sentence in system, sentence
    for field in ("Student reasoning:", "Student final answer:\na map", "Reference solution:"):
        assert field in user
    assert user.endswith("Evaluation: Incorrect")


@pytest.mark.parametrize(("variant", "section"), [("v1", F8_V1), ("v2", F8_V2)])
def test_variations_are_the_papers_f8_texts(variant, section):
    system, user = _standard(TEACHER_PROMPTS[variant])
    text = system["content"]
    assert text.startswith("You are watching a user attempt a brain teaser.")
    assert section in text
    for sentence in F2_MECHANICS:
        assert sentence in text, sentence
    assert "expert teacher" not in text  # the variations replace the Standard role
    # F.8: the variations share the Standard teacher's user message
    assert user == _standard("teacher_standard")[1]
    other = F8_V2 if variant == "v1" else F8_V1
    assert other not in text
    if variant == "v1":  # the [Variation 1] slot sits before "You may also choose not to"
        assert text.index(F8_V1) < text.index("You may also choose not to intervene.")
    else:  # the [Variation 2] slot sits before the increment mechanics
        assert text.index(F8_V2) < text.index("You will see the reasoning")


def test_teacher_prompt_names():
    assert TEACHER_PROMPTS == {
        "paper": "teacher_standard",
        "v1": "teacher_standard_v1",
        "v2": "teacher_standard_v2",
        "append": "teacher_standard_append",
    }


def test_without_a_reference_the_teacher_is_not_told_of_one():
    system, user = _standard("teacher_standard", reference=None)
    assert "reference solution" not in system["content"].lower()
    assert "Reference solution" not in user["content"]


def test_student_baseline_asks_for_the_papers_fields():
    system, user = render_messages("brainteaser", "student_baseline", problem=TEASER)
    for sentence in F1_BASELINE:
        assert sentence in system["content"], sentence
    assert user["content"].startswith("Problem:\nWhat has keys but no locks?")


@pytest.mark.parametrize("post", ["continue", "stop"])
def test_continuation_is_system_user_assistant_user(post):
    messages = continuation_messages(TEASER, "Reasoning: Keys open locks", MESSAGE, post)
    assert [m["role"] for m in messages] == ["system", "user", "assistant", "user"]
    system, first, reasoning, update = (m["content"] for m in messages)
    baseline = render_messages("brainteaser", "student_baseline", problem=TEASER)
    assert system.startswith(baseline[0]["content"]) and system.endswith(F3_UPDATE)
    assert first == baseline[1]["content"]
    assert reasoning == "Reasoning: Keys open locks"
    assert update == f"<update>{MESSAGE}</update>\n" + (
        F3_CONTINUE if post == "continue" else F3_STOP
    )
    # a prefix without the F.1 label gets it
    unlabelled = continuation_messages(TEASER, "Keys open", MESSAGE, post)
    assert unlabelled[2]["content"] == "Reasoning: Keys open"


def test_judge_prompt_is_the_papers_and_sees_the_final_answer():
    system, user = render_messages(
        "brainteaser",
        "judge",
        question="What has keys but no locks?",
        reference="A piano.",
        response="<student_answer>a piano</student_answer>",
    )
    for sentence in F4_JUDGE:
        assert sentence in system["content"], sentence
    text = user["content"]
    assert text.index("Problem:") < text.index("Candidate solution:\n<student_answer>a piano")
    assert text.index("Candidate solution:") < text.index("Reference solution:\nA piano.")


A8_TEACHER_SYSTEM = (
    "You are a careful tutor. Read the student's latest attempt, identify the most important "
    "mistake, and give targeted feedback without revealing the final answer."
)
A8_RULES = (
    "Pinpoint the step in which I am making a mistake.\n"
    "Provide the most informative piece of information for me to succeed on the next try, "
    "without telling me the final answer.\n"
    "You may reason about the mistake first inside <think>...</think> tags.\n"
    "Your final feedback message must appear exactly once inside <feedback>...</feedback> tags.\n"
    "\nReturn only:\n<feedback>\nyour feedback\n</feedback>"
)


@pytest.mark.parametrize(
    ("kind", "context"),
    [
        ("none", "You do not have access to the ground truth solution or final answer."),
        ("answer", "Here is the ground-truth final answer:\nREF"),
        ("solution", "Here is the ground-truth solution:\nREF"),
    ],
)
def test_feedback_teacher_prompt_is_the_papers_a8(kind, context):
    system, user = render_messages(
        "omni_math",
        "feedback_teacher",
        problem=PROBLEMS["omni_math"],
        history=[],
        latest_attempt="ATTEMPT",
        execution_context=None,
        reference="REF",
        reference_kind=kind,
    )
    assert system["content"] == A8_TEACHER_SYSTEM
    question = PROBLEMS["omni_math"].question
    assert user["content"] == (
        f"I am trying to solve this question:\n{question}\n\n"
        f"Here is my current attempt:\nATTEMPT\n\n{context}\n\n{A8_RULES}"
    )


def test_feedback_student_prompts_are_the_papers_a8():
    problem = PROBLEMS["omni_math"]
    system, user = render_messages("omni_math", "feedback_student", problem=problem)
    assert system["content"] == "You are a mathematician solving competition-level math problems."
    fmt = answer_format("omni_math", problem=problem)
    assert user["content"] == (
        f"Problem:\n{problem.question}\n\nSolve the problem carefully.\n\n"
        f"You may reason in <think>...</think>. {fmt}"
    )
    with_feedback = render(
        "omni_math",
        "feedback_student_retry",
        problem=problem,
        history=HISTORY[:1],
        feedback_text="FB",
    )
    assert with_feedback.endswith(
        "Feedback:\nFB\n\nRevise your previous solution so it uses the feedback.\n\n"
        f"You may reason in <think>...</think>. {fmt}"
    )
    plain = render(
        "omni_math",
        "feedback_student_retry",
        problem=problem,
        history=HISTORY[:1],
        feedback_text=None,
    )
    assert plain.endswith(
        "Revise your previous solution and produce a corrected solution.\n\n"
        f"You may reason in <think>...</think>. {fmt}"
    )


@pytest.mark.parametrize("folder", ["monitor", "judge", "feedback"])
def test_paper_template_headers_name_their_section(folder):
    for path in sorted((prompting.TEMPLATE_DIR / folder).glob("[!_]*.j2")):
        text = path.read_text(encoding="utf-8")
        if text.startswith("{% include"):  # a system prompt that is one shared partial
            continue
        header = text.split("#}", 1)[0]
        assert header.startswith("{#"), f"{path.name} has no header"
        assert any(word in header for word in ("App.", "IntBench", "paper")), path.name
