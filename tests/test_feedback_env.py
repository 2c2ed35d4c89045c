"""The feedback env: attempts, history, privileged reference, execution context, modes."""

from __future__ import annotations

import json

import gymnasium as gym
import pytest
from gymnasium.utils.env_checker import check_env

import intbench  # noqa: F401
from intbench.agents.backends.scripted import ScriptedBackend
from intbench.envs.registration import all_env_ids
from intbench.records import Episode, Problem

PROBLEM = Problem(
    id="f/0",
    domain="math",
    question="What is 17 * 3?",
    answer="51",
    solution="17 * 3 = 51, so \\boxed{51}.",
)


@pytest.fixture(autouse=True)
def _cache(tmp_path, monkeypatch):
    monkeypatch.setenv("INTBENCH_CACHE", str(tmp_path / "cache"))


class CountingStudent(ScriptedBackend):
    """Wrong (\\boxed{40+k} at attempt k) until attempt ``right_at``; records every prompt."""

    def __init__(self, right_at: int = 3):
        self.prompts: list[list[dict]] = []
        self.right_at = right_at
        # a spec of its own: attempt 1 is cached per student spec
        super().__init__(self.respond, spec=f"scripted:counting-{id(self)}")

    def respond(self, messages):
        self.prompts.append(messages)
        text = messages[-1]["content"]
        if "<feedback>" in text and "Review your own attempt" in text:
            return "<feedback>Recheck the multiplication.</feedback>"
        attempt = sum(1 for p in self.prompts if "Review your own attempt" not in p[-1]["content"])
        return "\\boxed{51}" if attempt >= self.right_at else f"I get \\boxed{{{40 + attempt}}}"


def make(student, **kwargs):
    return gym.make("IntBench-Math-Feedback-v0", student=student, problems=[PROBLEM], **kwargs)


def run_episode(env, action):
    env.reset(seed=0)
    steps, done = 0, False
    while not done:
        _, reward, done, _, info = env.step(action)
        steps += 1
    return steps, reward, info


def test_right_on_attempt_three_ends_at_step_two():
    env = make(CountingStudent(right_at=3))
    steps, reward, info = run_episode(env, {"intervene": 1, "message": "Check 17*3 again."})
    assert steps == 2 and reward == 1.0
    record = info["record"]
    assert record["solved_at"] == 3 and len(record["attempts"]) == 3
    assert [f["message"] for f in record["feedback"]] == ["Check 17*3 again."] * 2
    assert [a["verdict"]["status"] for a in record["attempts"]] == [
        "incorrect",
        "incorrect",
        "correct",
    ]


def test_k_max_ends_unsolved_and_auc_reward():
    env = make(CountingStudent(right_at=99), k_max=4)
    steps, reward, info = run_episode(env, 0)
    assert steps == 3 and reward == 0.0 and info["record"]["solved_at"] is None
    env = make(CountingStudent(right_at=2), k_max=4, reward="auc")
    steps, reward, _ = run_episode(env, 0)
    assert steps == 1 and reward == pytest.approx(3 / 4)


def test_history_controls_what_student_and_teacher_see():
    seen = {}
    for h in (1, 3):
        student = CountingStudent(right_at=99)
        env = make(student, history=h, k_max=6)
        env.reset(seed=0)
        for turn in range(
            1, 5
        ):  # reset plays attempt 1; "hint number k" is the feedback on attempt k
            _, _, _, _, info = env.step({"intervene": 1, "message": f"hint number {turn}"})
        seen[h] = (student.prompts[-1][-1]["content"], info["messages"][-1]["content"])
    student_h1, teacher_h1 = seen[1]
    student_h3, teacher_h3 = seen[3]
    # the prompt of attempt 5 shows attempt 4 (h=1) or attempts 2..4 (h=3), with their feedback
    assert "\\boxed{44}" in student_h1 and "\\boxed{43}" not in student_h1
    assert (
        all(f"\\boxed{{{v}}}" in student_h3 for v in (42, 43, 44))
        and "\\boxed{41}" not in student_h3
    )
    assert "hint number 4" in student_h1 and "hint number 3" not in student_h1
    assert (
        all(f"hint number {k}" in student_h3 for k in (2, 3, 4))
        and "hint number 1" not in student_h3
    )
    # the teacher, after attempt 5: that attempt alone (h=1) or with the two before it (h=3)
    assert "\\boxed{45}" in teacher_h1 and "\\boxed{44}" not in teacher_h1
    assert (
        all(f"\\boxed{{{v}}}" in teacher_h3 for v in (43, 44, 45))
        and "\\boxed{42}" not in teacher_h3
    )
    # the original task is always kept
    assert all(PROBLEM.question in text for pair in seen.values() for text in pair)


def test_answer_reference_reaches_only_the_teacher():
    student = CountingStudent(right_at=99)
    env = make(student, teacher_reference="answer", k_max=3)
    obs, info = env.reset(seed=0)
    teacher_prompts = [info["messages"][-1]["content"]]
    obs, _, _, _, info = env.step({"intervene": 1, "message": "Try again."})
    teacher_prompts.append(info["messages"][-1]["content"])
    assert obs["reference"] == "51"
    assert all("ground-truth final answer" in t and "51" in t for t in teacher_prompts)
    for prompt in student.prompts:
        assert all("Reference" not in m["content"] for m in prompt)


def test_reset_gives_the_teacher_prompt_on_attempt_one():
    obs, info = make(CountingStudent(right_at=2)).reset(seed=0)
    assert info["teacher_turn"] and info["attempt"] == 1 and obs["attempt"] == "I get \\boxed{41}"
    assert "\\boxed{41}" in info["messages"][-1]["content"]


def test_attempt_one_right_ends_at_the_first_step_whatever_the_action():
    env = make(CountingStudent(right_at=1))
    obs, info = env.reset(seed=0)
    assert not info["teacher_turn"] and info["messages"] == [] and obs["solved"] == 1
    _, reward, done, _, info = env.step({"intervene": 1, "message": "The answer is 51."})
    assert done and reward == 1.0 and info["record"]["feedback"] == []
    with pytest.raises(RuntimeError, match="episode is over"):
        env.step(0)


def test_leaking_feedback_is_flagged():
    env = make(CountingStudent(right_at=2))
    _, _, info = run_episode(env, {"intervene": 1, "message": "The product is 51."})
    assert info["record"]["feedback"][0]["leaked"] is True


def test_modes_self_refine_and_self_critique():
    student = CountingStudent(right_at=3)
    env = make(student, mode="self_refine")
    steps, _, info = run_episode(env, {"intervene": 1, "message": "ignored"})
    assert steps == 2 and all(f["message"] is None for f in info["record"]["feedback"])
    assert info["record"]["condition"] == "self_refine"

    # the separate critique prompt is the self_critique control (self-feedback is the
    # matrix diagonal: tests/test_self_feedback.py)
    student = CountingStudent(right_at=3)
    env = make(student, mode="self_critique")
    steps, _, info = run_episode(env, 0)
    assert steps == 2 and info["record"]["condition"] == "self_critique"
    assert [f["source"] for f in info["record"]["feedback"]] == ["self", "self"]
    assert info["record"]["feedback"][0]["message"] == "Recheck the multiplication."


def test_raw_text_and_malformed_actions():
    env = make(CountingStudent(right_at=99), k_max=4)
    env.reset(seed=0)
    _, _, _, _, info = env.step("<think>hmm</think><feedback>Carry the one.</feedback>")
    assert env.unwrapped._feedback[-1] == "Carry the one."
    _, _, _, _, info = env.step({"intervene": 1, "message": ""})
    assert info["action_error"] and env.unwrapped._feedback[-1] is None
    _, _, done, _, info = env.step(["not", "valid"])
    assert done and info["action_error"]


CODE_PROBLEM = Problem(
    id="c/0",
    domain="codeforces",
    question="Read n and print n+1.",
    solution="print(int(input()) + 1)",
    tests={
        "kind": "stdio",
        "cases": [{"input": "1\n", "output": "2\n"}, {"input": "5\n", "output": "6\n"}],
    },
)


@pytest.mark.parametrize(
    "mode,expect",
    [
        ("structured", '"passed": 0'),
        ("feedback", "Test 1"),
        ("traceback", "ZeroDivisionError"),
        ("none", None),
    ],
)
def test_execution_context_modes_reach_the_teacher(mode, expect):
    student = ScriptedBackend(lambda m: "```python\nn = int(input())\nprint(n // 0)\n```")
    env = gym.make(
        "IntBench-Codeforces-Feedback-v0",
        student=student,
        problems=[CODE_PROBLEM],
        execution_context=mode,
    )
    obs, info = env.reset(seed=0)
    teacher = info["messages"][-1]["content"]
    if expect is None:
        assert "Execution results" not in teacher and obs["execution"] == ""
    else:
        assert "Execution results" in teacher and expect in teacher and expect in obs["execution"]


def test_all_feedback_ids_pass_check_env():
    from tests.test_monitor_env import _problem_for

    for env_id in all_env_ids("feedback"):
        domain = gym.spec(env_id).kwargs["domain"]
        env = gym.make(
            env_id,
            student=ScriptedBackend(lambda m: "Answer: x"),
            problems=[_problem_for(domain)],
            k_max=3,
        )
        check_env(env.unwrapped, skip_render_check=True)


def test_records_round_trip_json():
    env = make(CountingStudent(right_at=2))
    run_episode(env, {"intervene": 1, "message": "hint"})
    record = env.unwrapped.last_episode
    assert Episode.from_dict(json.loads(record.to_json())) == record


@pytest.mark.slow
def test_offline_run_with_embedded_student(tmp_path):
    """20 problems, the embedded SmolLM2 student, a scripted teacher."""
    from intbench.envs.domains import load_problems

    problems = load_problems("math", source="offline", n=20, seed=0)
    env = gym.make(
        "IntBench-Math-Feedback-v0",
        problems=problems,
        k_max=2,
        student_sampling={"max_tokens": 96},
        cache_dir=str(tmp_path),
    )
    records = []
    for i in range(len(problems)):
        env.reset(seed=0, options={"problem_index": i})
        done = False
        while not done:
            _, _, done, _, _ = env.step(
                {"intervene": 1, "message": "Check each step and box the answer."}
            )
        records.append(env.unwrapped.last_episode)
    assert len({r.problem_id for r in records}) == 20
    for record in records:
        assert Episode.from_dict(json.loads(record.to_json())) == record
        assert 1 <= len(record.attempts) <= 2
