"""The tutor env (KITE): ideation with a checker, independent solving, batching."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

from intbench.agents.backends.scripted import ScriptedBackend
from intbench.envs.tutor import WITHHELD_NOTE, TutorEnv, batched_tutor
from intbench.records import Episode, Problem
from intbench.tutor.checker import rules_check

PROBLEM = Problem(
    id="tutor/0",
    domain="math",
    question="What is 17 * 3?",
    answer="51",
    solution="17 * 3 = 51, so \\boxed{51}.",
)
CODE_PROBLEM = Problem(
    id="tutor/code",
    domain="codeforces",
    question="Write add(a, b) returning a + b.",
    solution="def add(a, b):\n    return a + b  # the canonical solution line",
    tests={
        "kind": "function",
        "entry_point": "add",
        "setup": "",
        "cases": [{"code": "assert candidate(2, 3) == 5"}],
    },
)
HINT = "Think of 17 * 3 as 17 * 2 plus one more 17."
LEAK = "The answer is 51."


@pytest.fixture(autouse=True)
def _cache(tmp_path, monkeypatch):
    monkeypatch.setenv("INTBENCH_CACHE", str(tmp_path / "cache"))


class RecordingStudent(ScriptedBackend):
    """Asks questions, writes a plan, and solves at phase-2 submission ``right_at``."""

    def __init__(self, right_at: int = 1, answer: str = "\\boxed{51}"):
        self.prompts: list[list[dict]] = []
        self.right_at = right_at
        self.answer = answer
        super().__init__(self.respond, spec=f"scripted:tutor-student-{id(self)}")

    def respond(self, messages):
        self.prompts.append(messages)
        text = messages[-1]["content"]
        if "Write only the plan" in text:
            return "PLAN: double then add."
        if "Write your next message to the teacher" in text:
            return f"QUESTION {text.count('Student:') + 1}?"  # a function of the prompt alone
        submission = text.count("Submission ") + 1
        return (
            self.answer if submission >= self.right_at else f"I think \\boxed{{{40 + submission}}}"
        )

    def solve_prompts(self) -> list[str]:
        return [
            "\n".join(m["content"] for m in p)
            for p in self.prompts
            if "Solve the following problem" in p[-1]["content"]
        ]


def make(student=None, problems=(PROBLEM,), **kwargs) -> TutorEnv:
    return TutorEnv(
        domain=problems[0].domain,
        student=student or RecordingStudent(),
        problems=list(problems),
        **kwargs,
    )


def run(env, actions):
    obs, info = env.reset(seed=0)
    infos, rewards, done, i = [info], [], False, 0
    while not done:
        obs, reward, done, truncated, info = env.step(actions[min(i, len(actions) - 1)])
        rewards.append(reward)
        infos.append(info)
        i += 1
    return obs, rewards, infos


def test_check_env_passes():
    check_env(make(), skip_render_check=True)
    check_env(make(ideation_turns=0), skip_render_check=True)


def test_answer_is_withheld_counted_and_never_reaches_the_student():
    student = RecordingStudent()
    env = make(student, ideation_turns=3)
    obs, rewards, infos = run(
        env, [HINT, LEAK, {"intervene": 1, "message": "Check your doubling."}]
    )
    # solved, but the teacher tried to state the answer: charged although withheld
    assert len(rewards) == 3 and rewards[-1] == 1.0 - 2.0
    record = infos[-1]["record"]
    assert record["reward_components"]["leaked"] == 1.0
    assert record["protocol"] == "tutor" and record["condition"] == "ideation"
    assert [s["withheld"] for s in record["steps"]] == [False, True, False]
    assert record["metadata"]["withheld"] == 1 and int(obs["withheld"]) == 1
    assert infos[2]["check"]["leak"] and "answer" in infos[2]["check"]["reason"]
    student_text = "\n".join(m["content"] for p in student.prompts for m in p)
    assert "51" not in student_text.replace("17 * 3", "")  # only the problem's own numbers
    assert LEAK not in student_text and WITHHELD_NOTE in student_text
    # the teacher's own view shows the withheld message with the reason
    assert (
        "[withheld from the student: reveals the final answer"
        in infos[2]["messages"][-1]["content"]
    )


def test_phase_two_never_sees_phase_one_messages():
    student = RecordingStudent(right_at=3)
    env = make(student, ideation_turns=2, notes=True)
    _, rewards, infos = run(env, [HINT, "Another idea: use the distributive law."])
    assert rewards == [0.0, 1.0]
    solves = student.solve_prompts()
    assert len(solves) == 3 and infos[-1]["record"]["solved_at"] == 3
    for prompt in solves:
        for banned in (HINT, "distributive", "QUESTION 1?", "QUESTION 2?", "Teacher:", "Student:"):
            assert banned not in prompt
        assert "PLAN: double then add." in prompt  # the student's own notes only
    # earlier submissions come back with pass/fail only
    assert "Result: not accepted" in solves[2] and solves[2].count("Submission ") == 2


def test_no_notes_by_default_so_phase_two_is_the_solo_prompt():
    # KITE §4.1: participants may not take notes, so nothing of ideation reaches phase 2.
    strict_student = RecordingStudent()
    env = make(strict_student, ideation_turns=2)
    _, _, infos = run(env, [HINT])
    assert env.options.notes is False
    assert not any("Write only the plan" in p[-1]["content"] for p in strict_student.prompts)
    record = infos[-1]["record"]
    assert record["metadata"]["notes"] is None and record["config"]["notes"] is False
    solo_student = RecordingStudent()
    run(make(solo_student, ideation_turns=0), [0])
    assert solo_student.solve_prompts() == strict_student.solve_prompts()


def test_solo_condition_is_one_step_and_ignores_the_action():
    env = make(RecordingStudent(right_at=1), ideation_turns=0)
    obs, info = env.reset(seed=0)
    assert not info["teacher_turn"] and info["messages"] == []
    _, reward, done, _, info = env.step("anything at all")
    assert done and reward == 1.0
    record = info["record"]
    assert record["condition"] == "solo" and record["steps"] == [] and record["solved_at"] == 1


class TriesStudent(RecordingStudent):
    """Right only at its ``right_at``-th solve call, whatever the prompt says."""

    def respond(self, messages):
        self.prompts.append(messages)
        calls = len(self.solve_prompts())
        return self.answer if calls == self.right_at else f"I think \\boxed{{{40 + calls}}}"


@pytest.mark.parametrize("right_at, solved_at", [(3, 3), (4, None)])
def test_solo_is_solvable_when_one_of_three_independent_tries_is_correct(right_at, solved_at):
    # KITE §4.2: each model tries each task three times; solvable if one try is correct.
    student = TriesStudent(right_at=right_at)
    env = make(student, ideation_turns=0)  # math: phase 2 would allow 5 submissions
    _, rewards, infos = run(env, [0])
    record = infos[-1]["record"]
    assert len(record["attempts"]) == 3 and record["solved_at"] == solved_at
    assert rewards == [float(solved_at is not None)] and record["config"]["solo_tries"] == 3
    prompts = student.solve_prompts()
    assert len(prompts) == 3 and len(set(prompts)) == 1  # no try sees another
    assert "not accepted" not in prompts[-1] and "Submission " not in prompts[-1]


def test_solo_tries_none_uses_the_submission_budget_and_ideation_ignores_solo_tries():
    student = TriesStudent(right_at=5)
    _, _, infos = run(make(student, ideation_turns=0, solo_tries=None), [0])
    assert infos[-1]["record"]["solved_at"] == 5
    assert "Result: not accepted" in student.solve_prompts()[-1]
    ideation = TriesStudent(right_at=5)
    _, _, infos = run(make(ideation, ideation_turns=1, solo_tries=2), [HINT])
    record = infos[-1]["record"]
    assert record["solved_at"] == 5 and record["config"]["solo_tries"] is None
    with pytest.raises(ValueError, match="solo_tries"):
        make(solo_tries=0)


LEVELLED = [
    Problem(id=f"tutor/level{level}", domain="math", question="What is 17 * 3?", answer="51",
            metadata={"level": level})
    for level in range(1, 6)
]  # fmt: skip


def _p_e(student: float, task: float) -> float:
    return 1 / (1 + 10 ** ((task - student) / 1))  # KITE App. C.8, math S = 1


def test_elo_selection_calibrates_then_draws_from_the_band_above():
    # MATH levels 1-5 sit at 1.0, 1.75, 2.5, 3.25, 4.0; a new student at 2.5.
    env = make(RecordingStudent(), problems=LEVELLED, elo_selection=True, calibration_tasks=1)
    # calibration: band [3.25, 3.75] holds only level 4; a solo solve, action ignored
    obs, info = env.reset(seed=0)
    assert not info["teacher_turn"] and info["problem_id"] == "tutor/level4"
    *_, done, _, info = env.step("ignored")
    record = info["record"]
    assert done and record["condition"] == "calibration" and record["steps"] == []
    rating = 2.5 + 0.8 * (1 - _p_e(2.5, 3.25))
    assert record["metadata"]["elo"] == pytest.approx(
        {"student_before": 2.5, "student_after": rating, "task": 3.25}
    )
    # test phase: band [rating + 0.75, rating + 1.25] = [3.93, 4.43] holds only level 5
    _, _, infos = run(env, [HINT])
    record = infos[-1]["record"]
    assert record["problem_id"] == "tutor/level5" and record["condition"] == "ideation"
    after = rating + 0.8 * (1 - _p_e(rating, 4.0))
    assert record["metadata"]["elo"]["student_after"] == pytest.approx(after)
    assert env.ratings.student(env.student_spec) == pytest.approx(after)
    assert env.ratings.task("tutor/level5") == 4.0  # task ratings never move


def test_elo_selection_counts_a_spent_submission_budget_as_a_loss():
    env = make(RecordingStudent(right_at=99), problems=LEVELLED, elo_selection=True,
               calibration_tasks=1, submissions=2)  # fmt: skip
    env.reset(seed=0)
    *_, info = env.step("ignored")
    record = info["record"]
    assert record["solved_at"] is None and len(record["attempts"]) == 2
    assert record["metadata"]["elo"]["student_after"] == pytest.approx(2.5 - 0.8 * _p_e(2.5, 3.25))


def test_budget_defaults_and_unsolved_episode():
    assert make().submissions == 5
    assert make(problems=(CODE_PROBLEM,)).submissions == 10
    student = RecordingStudent(right_at=99)
    env = make(student, ideation_turns=1, submissions=4)
    _, rewards, infos = run(env, [HINT])
    record = infos[-1]["record"]
    assert rewards == [0.0] and record["solved_at"] is None and len(record["attempts"]) == 4
    assert record["reward_components"] == {
        "solved": 0.0, "withheld": 0.0, "submissions": 4.0,
        "success": 0.0, "leaked": 0.0, "leak_undetermined": 0.0, "judge_leaked": 0.0,
        "derailed": 0.0, "messages": 1.0, "transfer": 0.0, "transfer_alone": 0.0,
        "transfer_gain": 0.0,
    }  # fmt: skip
    assert "timings" not in record and set(env.last_episode.timings) == {"ideation_s", "solve_s"}
    Episode.from_dict(env.last_episode.to_dict())


def test_code_domain_withholds_code_and_solves_with_the_sandbox():
    answer = "```python\ndef add(a, b):\n    return a + b\n```"
    env = make(RecordingStudent(answer=answer), problems=(CODE_PROBLEM,), ideation_turns=2)
    _, rewards, infos = run(
        env, ["```python\nprint(1)\n```", "Use the + operator on the two arguments."]
    )
    record = infos[-1]["record"]
    assert [s["withheld"] for s in record["steps"]] == [True, False]
    assert record["steps"][0]["check"]["reason"] == "contains code"
    assert record["solved_at"] == 1  # each message the leak detector flags costs 2
    assert rewards[-1] == 1.0 - 2.0 * record["reward_components"]["leaked"]


def test_malformed_actions_are_reported_not_raised():
    env = make(ideation_turns=4)
    env.reset(seed=0)
    cases = [
        ({"intervene": 7}, "intervene must be 0 or 1"),
        (3.5, "intervene must be 0 or 1"),
        ({"intervene": 1, "message": ""}, "empty message"),
    ]
    for action, expected in cases:
        _, _, done, _, info = env.step(action)
        assert expected in info["action_error"] and not done
    _, _, done, _, info = env.step({"intervene": 0, "message": "ignored"})
    assert done and "action_error" not in info
    steps = info["record"]["steps"]
    assert [s["message"] for s in steps] == [None] * 4 and info["record"]["metadata"][
        "withheld"
    ] == 0
    with pytest.raises(RuntimeError, match="episode is over"):
        env.step(HINT)


def test_llm_checker_runs_on_top_of_the_rules():
    checked: list[str] = []

    def checker(messages):
        checked.append(messages[-1]["content"])
        return (
            "Leak: Yes\nReason: it gives the method away."
            if "distributive" in checked[-1]
            else "Leak: No\nReason: fine."
        )

    env = make(ideation_turns=3, checker=ScriptedBackend(checker, spec="scripted:checker"))
    _, _, infos = run(env, [HINT, LEAK, "Use the distributive law."])
    steps = infos[-1]["record"]["steps"]
    assert [s["withheld"] for s in steps] == [False, True, True]
    assert [s["check"]["source"] for s in steps] == ["llm", "rules", "llm"]
    assert len(checked) == 2  # the rules caught the answer without a model call
    assert infos[-1]["record"]["tokens"]["checker_prompt"] > 0

    garbled = make(
        ideation_turns=1, checker=ScriptedBackend(lambda m: "no idea", spec="scripted:garbled")
    )
    _, _, infos = run(garbled, [HINT])
    check = infos[-1]["record"]["steps"][0]["check"]
    assert check["leak"] and check["error"]


def test_failed_student_call_ends_the_episode_with_an_error():
    def broken(messages):
        raise RuntimeError("model down")

    env = make(ScriptedBackend(broken, spec="scripted:broken"), ideation_turns=3)
    env.reset(seed=0)
    _, reward, done, _, info = env.step(HINT)
    assert done and reward == 0.0 and "model down" in info["record"]["error"]


def test_seeded_runs_are_reproducible_and_ids_register():
    gym.register(id="IntBenchTest-Math-Tutor-v0", entry_point=TutorEnv, kwargs={"domain": "math"})
    try:
        student = RecordingStudent()
        first = run(
            gym.make("IntBenchTest-Math-Tutor-v0", student=student, problems=[PROBLEM]), [HINT]
        )[2][-1]
        second = run(
            gym.make("IntBenchTest-Math-Tutor-v0", student=student, problems=[PROBLEM]), [HINT]
        )[2][-1]
        assert first["record"]["steps"] == second["record"]["steps"]
        assert first["record"]["episode_id"] == second["record"]["episode_id"]
    finally:
        del gym.registry["IntBenchTest-Math-Tutor-v0"]


def test_batched_vector_env_batches_student_calls():
    batch_sizes: list[int] = []

    class BatchRecorder(RecordingStudent):
        def generate(self, batch, params):
            batch_sizes.append(len(batch))
            return super().generate(batch, params)

    problems = [
        Problem(id=f"tutor/{i}", domain="math", question=f"What is {i} + 1?", answer=str(i + 1))
        for i in range(3)
    ]
    envs = batched_tutor(num_envs=3, student=BatchRecorder(), problems=problems, ideation_turns=2)
    obs, info = envs.reset(seed=0)
    assert batch_sizes == [3] and list(obs["turn"]) == [0, 0, 0]
    envs.step({"intervene": np.ones(3, dtype=np.int64), "message": (HINT,) * 3})
    _, rewards, terminated, _, _ = envs.step(
        {"intervene": np.zeros(3, dtype=np.int64), "message": ("",) * 3}
    )
    assert terminated.all() and max(batch_sizes) == 3
    envs.close()


def test_bad_options_fail_at_construction():
    for kwargs, match in [
        ({"ideation_turns": -1}, "ideation_turns"),
        ({"submissions": 0}, "submissions"),
        ({"checker": ""}, "checker"),
        ({"render_mode": "human"}, "render_mode"),
    ]:
        with pytest.raises(ValueError, match=match):
            make(**kwargs)


@pytest.mark.parametrize(
    "message, leak",
    [
        ("The answer is 51.", True),
        ("17 * 3 = 51", True),
        ("Compute 2^10 = 1024 first.", True),
        ("```\nanything\n```", True),
        ("def f(x):\n    pass", True),
        ("dp[i] = max(dp[i - 1], a[i])", True),
        ("for i in range(n):", True),
        ("For each prefix, keep the best sum so far.", False),
        ("Think about what multiplying by 3 means.", False),
        ("Use a hash map; it gives O(n) time.", False),
        ("Let n be the length; try n = 5 by hand.", False),
    ],
)
def test_rules_checker(message, leak):
    assert rules_check(PROBLEM, message).leak is leak


def test_the_checker_is_a_model_when_one_is_configured_and_the_rules_offline():
    # KITE §3: a secondary checker model withholds flagged messages.  Without a model
    # configured the rules are the offline fallback, and the run's summary says so.
    offline = make(ideation_turns=1)
    assert offline.checker_spec == "rules"
    assert "offline fallback" in offline.summary_settings()["checker_note"]

    def judge(messages):
        text = messages[-1]["content"]
        return "Leak: No\nReason: fine." if "Leak:" in text else "Verdict: Correct\nExplanation: ok"

    model = ScriptedBackend(judge, spec="scripted:judge-checker")
    env = make(ideation_turns=1, judge=model)
    assert env.summary_settings() == {"checker": "scripted:judge-checker"}
    _, _, infos = run(env, [HINT])
    assert infos[-1]["record"]["steps"][0]["check"]["source"] == "llm"
    assert make(ideation_turns=1, judge=model, checker="rules").checker_spec == "rules"
