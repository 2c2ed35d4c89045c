"""Held-out tests for code feedback: the teacher's execution context shows visible tests only,
grading runs all of them, and forwarding a held-out test's input and output is caught."""

from __future__ import annotations

import json
import re

import gymnasium as gym
import pytest

import intbench  # noqa: F401
from intbench.agents.backends.scripted import ScriptedBackend
from intbench.cli import build_parser
from intbench.commands.eval import env_options
from intbench.envs.domains import load_problems
from intbench.envs.domains.codeforces import humaneval_problem, humaneval_problems
from intbench.records import Problem
from intbench.verifiers.code import render_execution_context, verify_code
from intbench.verifiers.code_split import (
    forwards_held_out_io,
    held_out_tests,
    visible_indices,
    visible_tests,
)
from intbench.verifiers.leakage import answer_leaked


@pytest.fixture(autouse=True)
def _cache(tmp_path, monkeypatch):
    monkeypatch.setenv("INTBENCH_CACHE", str(tmp_path / "cache"))


def humaneval(number: int) -> Problem:
    return humaneval_problem(humaneval_problems()[f"HumanEval/{number}"])


def stdio_problem(cases, problem_id="s/0", question="Print the answer.", **extra) -> Problem:
    tests = {"kind": "stdio", "cases": [{"input": i, "output": o} for i, o in cases], **extra}
    return Problem(id=problem_id, domain="codeforces", question=question, tests=tests)


# ------------------------------------------------------------------ the split
def test_split_is_deterministic_and_both_sides_are_non_empty_from_two_tests():
    for count in range(1, 21):
        for n in range(5):
            problem = stdio_problem([(f"{i}\n", f"{i}\n") for i in range(count)], f"p/{n}")
            shown = visible_indices(problem)
            assert shown == visible_indices(problem)  # deterministic
            held = held_out_tests(problem)
            assert len(shown) + len(held) == count
            if count >= 2:
                assert shown and held
            else:
                assert shown == () and len(held) == 1  # a lone test is never shown
    every = [humaneval_problem(r) for r in humaneval_problems().values()]
    assert all(visible_indices(p) and held_out_tests(p) for p in every if len(p.tests["cases"]) > 1)


def test_split_differs_between_problems():
    cases = [(f"{i}\n", f"{i}\n") for i in range(9)]
    splits = {visible_indices(stdio_problem(cases, f"p/{n}")) for n in range(20)}
    assert len(splits) > 5


def test_examples_marked_by_the_loader_are_the_visible_tests():
    problem = stdio_problem([("1\n", "2\n"), ("2\n", "3\n"), ("3\n", "4\n")], examples=[0])
    assert visible_indices(problem) == (0,)
    assert visible_tests(problem) == [{"input": "1\n", "output": "2\n"}]
    assert [c["input"] for c in held_out_tests(problem)] == ["2\n", "3\n"]


def test_examples_naming_a_missing_case_fail_verification_clearly():
    problem = stdio_problem([("1\n", "2\n")], examples=[3])
    with pytest.raises(ValueError, match="case indices below 1"):
        visible_indices(problem)
    verdict = verify_code(problem, "```python\nprint(2)\n```")
    assert verdict.status == "error" and verdict.details["reason"] == "bad_tests"


# ------------------------------------------------------------ grading and view
# HumanEval/0 and /35 compare with a bool or an integer, in plain text or inside JSON
HARD_CODED = re.compile(r"assert candidate\((.*?)\) == (True|False|-?\d+)")


def hard_coding_program(entry_point: str, shown: str) -> str:
    """A program that answers exactly the asserts in ``shown`` and nothing else."""
    table = ", ".join(f"(({args},), {want})" for args, want in HARD_CODED.findall(shown))
    return (
        f"```python\nSEEN = [{table}]\n"
        f"def {entry_point}(*args):\n"
        "    for known, want in SEEN:\n"
        "        if list(args) == list(known):\n"
        "            return want\n"
        "    return None\n```"
    )


@pytest.mark.parametrize("number", [0, 35])
def test_grading_runs_every_test_while_the_teacher_sees_visible_ones(number):
    problem = humaneval(number)
    cases = problem.tests["cases"]
    shown = visible_indices(problem)
    visible_code = "\n".join(c["code"] for c in visible_tests(problem))
    verdict = verify_code(problem, hard_coding_program(problem.tests["entry_point"], visible_code))
    assert verdict.details["total"] == len(cases)  # all tests graded
    assert verdict.status == "incorrect" and verdict.details["passed"] == len(shown)
    structured = json.loads(render_execution_context(verdict.details, "structured"))
    assert structured["passed"] == structured["total"] == len(shown)
    assert structured["held_out"] == {
        "passed": 0,
        "total": len(cases) - len(shown),
        "status": "runtime_error",
    }
    for mode in ("structured", "feedback", "traceback"):
        context = render_execution_context(verdict.details, mode)
        assert not any(c["code"] in context for c in held_out_tests(problem))
        assert not forwards_held_out_io(problem, context)
    feedback = render_execution_context(verdict.details, "feedback")
    assert "held-out tests" in feedback and f"{len(shown)} of {len(shown)} visible" in feedback


def test_the_papers_setting_shows_the_first_failing_graded_test():
    problem = humaneval(0)
    verdict = verify_code(problem, "```python\ndef has_close_elements(n, t):\n    return None\n```")
    context = render_execution_context(verdict.details, "feedback", tests="all")
    assert problem.tests["cases"][0]["code"] in context and "7 tests" in context
    visible = render_execution_context(verdict.details, "feedback")
    assert problem.tests["cases"][0]["code"] not in visible
    with pytest.raises(ValueError, match="tests must be one of"):
        render_execution_context(verdict.details, "feedback", tests="hidden")


def test_a_program_that_fails_to_compile_is_described_in_both_settings():
    problem = humaneval(35)
    verdict = verify_code(problem, "```python\ndef max_element(l:\n```")
    for tests in ("visible", "all"):
        assert "does not compile" in render_execution_context(verdict.details, "feedback", tests)


def test_code_feedback_defaults_are_structured_context_and_visible_tests():
    """Table 2: the Codeforces dense matrix gives the teacher structured execution feedback
    (§4.3: it "already receives structured execution feedback"); `intbench matrix` passes no
    context of its own, so it runs with the env's default."""
    problem = humaneval(35)
    student = ScriptedBackend(
        lambda m: "```python\ndef max_element(l):\n    return max(l[:3])\n```"
    )
    env = gym.make("IntBench-Codeforces-Feedback-v0", student=student, problems=[problem])
    env.reset(seed=0)
    obs, *_ = env.step(0)
    config = env.unwrapped._episode.config
    assert (config["execution_context"], config["execution_tests"]) == ("structured", "visible")
    assert json.loads(obs["execution"]) == {
        "passed": 1,
        "total": 1,
        "status": "passed",
        "timed_out": False,
        "held_out": {"passed": 0, "total": 1, "status": "runtime_error"},
    }
    args = build_parser().parse_args(
        ["matrix", "--env", "IntBench-Codeforces-Feedback-v0", "--students", "a"]
        + ["--teachers", "b", "--out", "x"]
    )
    options = env_options(args)
    assert "execution_context" not in options and "execution_tests" not in options
    args = build_parser().parse_args(
        ["eval", "--env", "IntBench-Codeforces-Feedback-v0", "--teacher", "never", "--out", "x"]
        + ["--execution-tests", "all"]
    )
    assert env_options(args)["execution_tests"] == "all"


# ------------------------------------------------------ the exploit, end to end
class HardCodingStudent(ScriptedBackend):
    """Remembers every assert it has been shown and hard-codes exactly those."""

    def __init__(self, entry_point: str):
        self.entry_point = entry_point
        self.seen = ""
        super().__init__(self.respond, spec=f"scripted:hard-coding-{id(self)}")

    def respond(self, messages):
        self.seen += "\n".join(m["content"] for m in messages)
        return hard_coding_program(self.entry_point, self.seen)


def forwarding_episode(problem: Problem, execution_tests: str, mode: str):
    """The teacher forwards the execution context verbatim, every turn."""
    env = gym.make(
        "IntBench-Codeforces-Feedback-v0",
        student=HardCodingStudent(problem.tests["entry_point"]),
        problems=[problem],
        k_max=len(problem.tests["cases"]) + 1,
        execution_context=mode,
        execution_tests=execution_tests,
    )
    obs, info = env.reset(seed=0)  # reset plays attempt 1
    episode_return, done, messages = 0.0, False, []
    while not done:
        message = obs["execution"] if info["teacher_turn"] else ""
        if message:
            messages.append(message)
        obs, reward, done, _, info = env.step({"intervene": 1, "message": message})
        episode_return += reward
    env.close()
    return episode_return, messages, info["record"]


@pytest.mark.parametrize("number", [0, 35])
@pytest.mark.parametrize("mode", ["feedback", "structured", "traceback"])
def test_forwarding_the_failing_assertion_no_longer_solves_humaneval(number, mode):
    """Issue: a teacher forwarding the failing graded assert and a student hard-coding it
    solved HumanEval/0 and /35 with reward 1.00; with visible tests only it cannot."""
    problem = humaneval(number)
    reward, messages, record = forwarding_episode(problem, "visible", mode)
    assert reward == 0.0 and record["solved_at"] is None
    assert not any(forwards_held_out_io(problem, m) for m in messages)
    last = record["attempts"][-1]["verdict"]["details"]
    assert last["total"] == len(problem.tests["cases"])
    assert last["passed"] == len(visible_indices(problem))


@pytest.mark.parametrize("number", [0, 35])
def test_the_papers_setting_still_shows_held_out_io_and_the_reward_charges_it(number):
    problem = humaneval(number)
    episode_return, messages, record = forwarding_episode(problem, "all", "feedback")
    assert record["reward_components"]["success"] == 1.0  # the student does solve it
    assert any(forwards_held_out_io(problem, m) for m in messages)
    # the domain's leak detector includes the check, so every reward and audit sees the
    # leak: each forwarding turn costs more than the success pays
    assert any(answer_leaked(problem, m) for m in messages)
    leaks = sum(turn["leaked"] for turn in record["feedback"])
    assert leaks >= 1 and episode_return < 0.0


# ------------------------------------------------------------- the leak check
def test_held_out_asserts_forwarded_in_any_layout_are_flagged():
    problem = humaneval(0)
    held = set(range(7)) - set(visible_indices(problem))
    assert 1 in held and 3 in held  # the cases quoted below
    leaks = [
        "assert candidate([1.0, 2.0, 3.9, 4.0, 5.0, 2.2], 0.05) == False",
        "has_close_elements([1.0, 2.0, 3.9, 4.0, 5.0, 2.2], 0.05) must return False.",
        "With numbers = [1.0, 2.0, 3.9, 4.0, 5.0, 2.2] and threshold = 0.05 you should get false",
        "Expected False for input 1, 2, 3.9, 4, 5, 2.2 with threshold 0.05.",
        "Try threshold=0.8 on [1, 2, 5.9, 4, 5]: the answer is False, you return True.",
        "Input: [1.0,2.0,5.9,4.0,5.0], 0.8\nExpected output: False",
    ]
    for message in leaks:
        assert forwards_held_out_io(problem, message), message


def test_stdio_held_out_io_in_any_layout_is_flagged_but_short_outputs_alone_are_not():
    problem = stdio_problem(
        [
            ("3\n1 2 3\n", "6\n"),
            ("4\n10 20 30 40\n", "100\n"),
            ("5\n7 7 7 7 7\n", "35\n"),
            ("2\n0 0\n", "0\n"),
            ("1\nabc\n", "YES\n"),
            ("6\n1 2 3 4 5 6\n", "1 3 5 2 4 6\n"),
        ],
        question="Print the sum of n numbers.",
        examples=[0],
    )
    leaks = [
        "Input:\n4\n10 20 30 40\nExpected output:\n100",
        "On input `4 / 10 20 30 40` you must print 100.",
        "n=4, a=[10, 20, 30, 40] -> 100",
        "The expected answer is 100 for the test 4 10 20 30 40.",
        "When every value is 7 and n = 5 (5 / 7 7 7 7 7) print 35.",
        "For 2 zeros (input 2 / 0 0) the output is 0.",
        "Test: 1 abc, expected YES",
        "The expected output there is 1 3 5 2 4 6.",  # a substantial output on its own
    ]
    for message in leaks:
        assert forwards_held_out_io(problem, message), message
    honest = [
        "The answer is 0 when everything cancels.",
        "Print YES only when the string qualifies.",
        "Your program prints 100 for small inputs; think about overflow.",
        "Remember that n can be 4 or more; read all 4 numbers.",
        "Input: 3 / 1 2 3 gives 6 - that is the example, and you get it right.",  # visible
        "Sum the numbers with a loop and print the total.",
        "",
    ]
    for message in honest:
        assert not forwards_held_out_io(problem, message), message


def test_held_out_values_already_in_the_statement_are_not_a_leak():
    problem = stdio_problem(
        [("2 3\n", "5\n"), ("10 20\n", "30\n")],
        question="Add two numbers. For instance 10 20 gives 30.",
        examples=[0],
    )
    assert forwards_held_out_io(problem, "on 10 20 print 30") is False
    assert len(held_out_tests(problem)) == 1


def test_short_word_only_cases_need_quoted_values_not_prose():
    """Issue: the Debug problem humaneval/143 holds out ``candidate("here is") == "is"``,
    and the check flagged honest prose such as "Here is your code"."""
    problems = load_problems("debug", source="offline", seed=0)
    problem = next(p for p in problems if p.id == "debug/humaneval/143/0")
    held = [case["code"] for case in held_out_tests(problem)]
    assert 'assert candidate("here is") == "is"' in held
    honest = [
        "Here is your code, with the bug fixed.",
        "Here is the issue: look at how the length of each word is checked.",
        "There is no place in your loop where you check the length.",
        'Here is the fix:\n```python\nreturn " ".join(new_lst)\n```',
    ]
    for message in honest:
        assert not forwards_held_out_io(problem, message), message
    leaks = [
        'assert candidate("here is") == "is"',
        'For the input "here is" your function should return "is".',
        "`words_in_sentence('here is')` must return `'is'`",
        'Given "Hi I am Hussein", return "Hi am Hussein".',
        'The expected output is "there is no place".',  # a substantial output, quoted
        "```\nhere is\n```\nshould give\n```\nis\n```",
    ]
    for message in leaks:
        assert forwards_held_out_io(problem, message), message
    # the same rule for stdio: word-only values must be quoted or shown as code
    problem = stdio_problem([("hi there\n", "there\n"), ("here is\n", "is\n")], examples=[0])
    assert not forwards_held_out_io(problem, "Here is a hint: read the whole line.")
    assert forwards_held_out_io(problem, 'On input "here is" print "is".')
    assert forwards_held_out_io(problem, "Input:\n```\nhere is\n```\nOutput: `is`")
