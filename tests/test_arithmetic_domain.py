"""The arithmetic demo domain: its generated problems and the solved example its students see."""

from __future__ import annotations

import gymnasium as gym
import pytest

import intbench  # noqa: F401  (registers the ids)
from intbench.agents.backends.scripted import ScriptedBackend
from intbench.envs.domains import DataSourceError, load_problems
from intbench.envs.domains.arithmetic import EXAMPLE, generate_arithmetic
from intbench.envs.domains.prompting import render_messages
from intbench.envs.monitor import continuation_messages
from intbench.records import Problem
from intbench.verifiers import verify

EXAMPLE_TURNS = [
    {"role": "user", "content": EXAMPLE[0]},  # the question, as in the first prompt
    {"role": "assistant", "content": EXAMPLE[1]},
]


@pytest.fixture(autouse=True)
def _cache(tmp_path, monkeypatch):
    monkeypatch.setenv("INTBENCH_CACHE", str(tmp_path / "cache"))


def test_problems_are_seeded_distinct_and_answered_right():
    problems = load_problems("arithmetic", n=40, seed=3)
    assert [p.question for p in problems] == [
        p.question for p in load_problems("arithmetic", n=40, seed=3)
    ]
    assert len({p.question for p in problems}) == 40
    for problem in problems:
        a, op, b = problem.question.removeprefix("What is $").removesuffix("$?").split()
        assert int(problem.answer) == (int(a) + int(b) if op == "+" else int(a) - int(b))
        assert verify(problem, f"Final Answer: \\boxed{{{problem.answer}}}").correct
        assert not verify(problem, f"Final Answer: \\boxed{{{int(problem.answer) + 1}}}").correct
        assert verify(problem, problem.solution).correct


def test_splits_are_disjoint_and_never_ask_the_example():
    test = {p.question for p in generate_arithmetic("test", 500, 0)}
    train = {p.question for p in generate_arithmetic("train", 500, 0)}
    assert not test & train
    assert EXAMPLE[0] not in test | train
    with pytest.raises(DataSourceError, match="arithmetic questions; asked 5000"):
        generate_arithmetic("test", 5000, 0)


def _problem(question: str = "What is $7 + 8$?", domain: str = "arithmetic") -> Problem:
    return Problem(id="a/1", domain=domain, question=question, answer="15")


def test_student_prompts_show_the_example_before_the_problem():
    problem = _problem()
    messages = render_messages("arithmetic", "student_baseline", problem=problem)
    assert [m["role"] for m in messages] == ["system", "user", "assistant", "user"]
    assert EXAMPLE[0] in messages[1]["content"] and messages[2]["content"] == EXAMPLE[1]
    assert problem.question in messages[3]["content"]
    feedback = render_messages("arithmetic", "feedback_student", problem=problem)
    assert feedback[-2]["content"] == EXAMPLE[1]
    roles = [m["role"] for m in continuation_messages(problem, "7 + 8", "Check it.", "continue")]
    assert roles == ["system", "user", "assistant", "user", "assistant", "user"]


def test_teachers_and_the_papers_domains_see_no_example():
    teacher = render_messages(
        "arithmetic",
        "teacher_standard",
        problem=_problem(),
        transcript="7",
        chunk_size=50,
        reference=None,
    )
    assert not any(EXAMPLE[1] in m["content"] for m in teacher)
    math = render_messages("math", "student_baseline", problem=_problem(domain="math"))
    assert [m["role"] for m in math] == ["system", "user"]


def test_the_env_asks_its_student_with_the_example_first():
    seen: list[list[dict]] = []

    def student(messages):
        seen.append(messages)
        return "Reasoning: 7 + 8 = 15.\nFinal Answer: \\boxed{15}"

    env = gym.make(
        "IntBench-Arithmetic-v0", student=ScriptedBackend(student), problems=[_problem()]
    )
    _, info = env.reset(seed=0)
    done = False
    while not done:
        _, reward, done, _, info = env.step({"intervene": 0, "message": ""})
    assert info["record"]["baseline"]["verdict"]["correct"]
    assert seen and seen[0][2]["content"] == EXAMPLE[1]
    env.close()
