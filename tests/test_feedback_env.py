"""The feedback env: attempts, history, privileged reference, execution context, modes."""

from __future__ import annotations

import json

import gymnasium as gym
import pytest
from gymnasium.utils.env_checker import check_env

import intbench  # noqa: F401
from intbench.agents.backends.scripted import ScriptedBackend
from intbench.envs.feedback import history_window
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


def test_history_window_is_turns_k_to_n():
    # Feedback paper §3: turns k..n with k = max(n - h, 0); turn 0 is the problem, always shown.
    assert list(history_window(4, 0)) == [4]
    assert list(history_window(4, 1)) == [3, 4]
    assert list(history_window(4, 2)) == [2, 3, 4]
    assert list(history_window(4, 4)) == list(history_window(4, 9)) == [1, 2, 3, 4]
    assert list(history_window(1, 1)) == [1]


# After 4 attempts (attempt k writes \boxed{40+k}, "hint number k" is the feedback on it),
# by hand from §3 (k = max(n - h, 0)) and A.1/A.8 (the teacher's original prompt keeps attempt 1):
# the student writing attempt 5 sees turns k..4 with their feedback (n = 4);
# the teacher commenting on attempt 4 sees attempt 1, turns k..3 with their feedback, attempt 4.
HISTORY_CASES = {
    0: {"student": ([4], [4]), "teacher": ([1, 4], [])},
    1: {"student": ([3, 4], [3, 4]), "teacher": ([1, 3, 4], [3])},
    2: {"student": ([2, 3, 4], [2, 3, 4]), "teacher": ([1, 2, 3, 4], [2, 3])},
    4: {"student": ([1, 2, 3, 4], [1, 2, 3, 4]), "teacher": ([1, 2, 3, 4], [1, 2, 3])},
    9: {"student": ([1, 2, 3, 4], [1, 2, 3, 4]), "teacher": ([1, 2, 3, 4], [1, 2, 3])},
}


@pytest.mark.parametrize("h", sorted(HISTORY_CASES))
def test_history_controls_what_student_and_teacher_see(h):
    student = CountingStudent(right_at=99)
    env = make(student, history=h, k_max=6)
    _, info = env.reset(seed=0)  # reset plays attempt 1
    for turn in range(1, 4):  # "hint number t" is the feedback on attempt t
        _, _, _, _, info = env.step({"intervene": 1, "message": f"hint number {turn}"})
    teacher = info["messages"][-1]["content"]
    env.step({"intervene": 1, "message": "hint number 4"})
    prompts = {"student": student.prompts[-1][-1]["content"], "teacher": teacher}
    for role, (attempts, hints) in HISTORY_CASES[h].items():
        text = prompts[role]
        assert PROBLEM.question in text  # the task prompt is always kept
        shown = [k for k in range(1, 5) if f"\\boxed{{{40 + k}}}" in text]
        given = [k for k in range(1, 5) if f"hint number {k}" in text]
        assert (shown, given) == (attempts, hints), role
    # attempts keep their real number, also after a gap in the window
    for k in HISTORY_CASES[h]["student"][0]:
        assert f"Attempt {k}:\nI get \\boxed{{{40 + k}}}" in prompts["student"]
    for k in HISTORY_CASES[h]["teacher"][1]:
        assert f"Feedback on attempt {k}:\nhint number {k}" in prompts["teacher"]


def test_history_0_is_allowed_and_negative_history_is_refused():
    make(CountingStudent(), history=0)
    with pytest.raises(ValueError, match="history"):
        make(CountingStudent(), history=-1)


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
        "examples": [0],  # the visible test, so "Test 1" reaches the teacher
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
