"""The monitor env: dynamics, Oracle quotes, caching, vectorisation, bad actions."""

from __future__ import annotations

import json
import math

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

import intbench  # noqa: F401  (registers the ids)
from intbench.agents.backends.scripted import ScriptedBackend
from intbench.envs.domains.prompting import render_messages
from intbench.envs.registration import all_env_ids
from intbench.envs.wrappers import TeacherTextActions
from intbench.records import Episode, Problem

TRACE = "First, add the numbers carefully. " * 12 + "So the final answer is \\boxed{5}."


def math_problems(k: int = 4) -> list[Problem]:
    return [
        Problem(
            id=f"t/{i}",
            domain="math",
            question=f"What is {i} + 3?",
            answer=str(i + 3),
            solution=f"{i} + 3 = {i + 3}, so the answer is \\boxed{{{i + 3}}}.",
        )
        for i in range(k)
    ]


def fixed_student(
    baseline: str = TRACE, continuation: str = "Fixed it: \\boxed{5}."
) -> ScriptedBackend:
    """Baseline prompts get ``baseline``; prompts with a teacher update get ``continuation``."""

    def respond(messages):
        text = messages[-1]["content"]
        return continuation if "<update>" in text else baseline

    return ScriptedBackend(respond)


def make(condition="standard", student=None, problems=None, **kwargs):
    return gym.make(
        "IntBench-Math-v0",
        student=student or fixed_student(),
        problems=problems or math_problems(),
        condition=condition,
        **kwargs,
    )


@pytest.fixture(autouse=True)
def _cache(tmp_path, monkeypatch):
    monkeypatch.setenv("INTBENCH_CACHE", str(tmp_path / "cache"))


def test_never_sees_whole_trace_in_ceil_steps():
    env = make()
    obs, info = env.reset(seed=1)
    assert obs["revealed_chars"] == 50 and obs["transcript"] == TRACE[:50]
    steps, done = 0, False
    while not done:
        obs, reward, done, truncated, info = env.step({"intervene": 0, "message": ""})
        steps += 1
    assert steps == math.ceil(len(TRACE) / 50)
    assert obs["transcript"] == TRACE and obs["finished"] == 1
    record = info["record"]
    assert record["intervention"] is None and reward == 0.0
    assert all(s["action"] == "wait" for s in record["steps"])


def test_intervention_at_half_records_tau_and_reward():
    env = make()
    obs, info = env.reset(seed=0, options={"problem_index": 2})  # answer 5: baseline right
    total = info["privileged"]["total_chars"]
    done = False
    while not done:
        crossing = info["revealed_chars"] >= total / 2
        obs, reward, done, _, info = env.step(
            {"intervene": int(crossing), "message": "Double-check the sum."}
        )
    inter = info["record"]["intervention"]
    assert inter["tau_rel"] == pytest.approx(0.5, abs=50 / total)
    assert inter["tau_abs"] == inter["position"]
    # right before and right after: H = 0; success preset would give 1
    assert info["reward_components"]["baseline_correct"] == 1.0
    assert info["reward_components"]["post_correct"] == 1.0
    assert reward == 0.0


def test_helpfulness_wrong_to_right_and_stop_strategy():
    problems = math_problems()
    student = fixed_student(continuation="Oh, it is \\boxed{3}.")
    env = make(student=student, problems=problems, post="stop")
    env.reset(seed=0, options={"problem_index": 0})  # answer 3; baseline says 5
    _, reward, done, _, info = env.step({"intervene": 1, "message": "Recheck the first step."})
    assert done and reward == 1.0
    assert info["record"]["intervention"]["post"] == "stop"
    assert info["reward_components"]["helpfulness"] == 1.0


def test_reward_presets_and_leak_flag():
    env = make(reward="pedagogical")
    env.reset(seed=0, options={"problem_index": 0})  # answer 3
    _, reward, _, _, info = env.step({"intervene": 1, "message": "The answer is 3."})
    assert info["reward_components"]["leaked"] == 1.0
    assert reward == pytest.approx(-0.1 - 1.0)  # still wrong (continuation says 5), cost, leak
    with pytest.raises(ValueError, match="unknown monitor reward preset"):
        make(reward="nope")


def test_malformed_actions_are_waits():
    env = make()
    env.reset(seed=0)
    for bad in [
        "yes",
        {"intervene": 7},
        {"intervene": 1, "message": "   "},
        {"intervene": "x"},
        None,
        3.5,
    ]:
        obs, reward, done, _, info = env.step(bad)
        assert not done and reward == 0.0
        assert info["action_error"]
    assert all(s.action == "wait" for s in env.unwrapped._episode.steps)


def test_raw_teacher_text_wrapper():
    env = TeacherTextActions(make())
    env.reset(seed=0)
    _, _, done, _, info = env.step("Intervene: No\nTime: N/A\nIntervention: N/A")
    assert not done and "action_error" not in info
    _, _, done, _, info = env.step("I am not sure what to say")
    assert not done and "unparsable" in info["action_error"]
    _, _, done, _, info = env.step("Intervene: Yes\nTime: now\nIntervention: Check the carry.")
    assert done and info["record"]["intervention"]["message"] == "Check the carry."


@pytest.mark.parametrize(
    "quote,stage,excluded",
    [
        ("add the numbers carefully.", "exact", "multiple_matches"),
        ("ADD THE NUMBERS carefully.", "case_insensitive", "multiple_matches"),
        ("add  the\nnumbers carefully.", "flexible_whitespace", "multiple_matches"),
        ("", None, "no_quote"),
        ("words that never appear", None, "not_found"),
        ("So the final answer is", "exact", "in_final_answer"),
        ("answer is \\boxed{5}", "exact", "in_final_answer"),
    ],
)
def test_oracle_quote_exclusions(quote, stage, excluded):
    env = make(condition="oracle")
    obs, _ = env.reset(seed=0, options={"problem_index": 0})
    assert obs["transcript"] == TRACE and obs["verdict"] == 0 and obs["student_answer"] == "5"
    _, reward, done, _, info = env.step(
        {"intervene": 1, "message": "Look again.", "quote": quote, "position": -1}
    )
    inter = info["record"]["intervention"]
    assert done and inter["excluded"] == excluded and inter["attempt"] is None and reward == 0.0
    if stage:
        assert inter["quote_stage"] == stage


@pytest.mark.parametrize(
    "trace,quote,stage",
    [
        (
            "We start. Then we compute seven times six here. \\boxed{42}",
            "we compute seven times six",
            "exact",
        ),
        (
            "We start. Then We Compute Seven Times six here. \\boxed{42}",
            "we compute seven times six",
            "case_insensitive",
        ),
        (
            "We start. Then we compute\nseven   times six here. \\boxed{42}",
            "we compute seven times six",
            "flexible_whitespace",
        ),
    ],
)
def test_oracle_quote_stages_apply_the_intervention(trace, quote, stage):
    problem = Problem(id="q", domain="math", question="6*7?", answer="42", solution="\\boxed{42}")
    env = make(condition="oracle", student=fixed_student(trace, "\\boxed{42}"), problems=[problem])
    env.reset(seed=0)
    _, reward, _, _, info = env.step(
        {"intervene": 1, "message": "Careful.", "quote": quote, "position": -1}
    )
    inter = info["record"]["intervention"]
    assert inter["quote_stage"] == stage and inter["excluded"] is None
    assert trace[: inter["position"]].endswith("six")
    assert inter["tau_rel"] == pytest.approx(inter["position"] / len(trace))
    assert inter["attempt"]["verdict"]["status"] == "correct" and reward == 0.0  # right -> right


def test_oracle_position_action():
    env = make(condition="oracle")
    env.reset(seed=0, options={"problem_index": 0})
    _, _, _, _, info = env.step({"intervene": 1, "message": "Hmm.", "position": 100, "quote": ""})
    assert info["record"]["intervention"]["tau_abs"] == 100


def test_baseline_is_generated_once_across_teachers():
    student = fixed_student()
    problems = math_problems(3)
    for teacher_wait in (True, False):  # two "teachers" over the same problems
        env = make(student=student, problems=problems)
        generated = student.usage.completion_tokens
        for i in range(3):
            env.reset(seed=0, options={"problem_index": i})
            env.step({"intervene": int(not teacher_wait), "message": "hint"})
        if not teacher_wait:
            # only continuation tokens were generated, no baseline tokens
            continuation_tokens = 3 * len("Fixed it: \\boxed{5}.".split())
            assert student.usage.completion_tokens - generated == continuation_tokens
    first_calls = student.usage.calls
    assert first_calls == 3 + 3  # 3 baselines + 3 continuations


def test_all_ids_pass_check_env():
    for env_id in all_env_ids("monitor"):
        domain = gym.spec(env_id).kwargs["domain"]
        problem = _problem_for(domain)
        env = gym.make(
            env_id,
            student=fixed_student("Some reasoning here. " * 5 + "Answer: x"),
            problems=[problem],
        )
        check_env(env.unwrapped, skip_render_check=True)
        assert env.unwrapped.domain == domain


def _problem_for(domain: str) -> Problem:
    tests = {"kind": "stdio", "cases": [{"input": "1\n", "output": "2\n"}]}
    return Problem(
        id=f"{domain}/0",
        domain=domain,
        question="Read n and print n+1.",
        answer=[[[1]]] if domain == "arc" else "x",
        solution="print(int(input()) + 1)",
        tests=tests if domain in ("codeforces", "debug") else None,
        fields={"train": [{"input": [[0]], "output": [[1]]}], "test_inputs": [[[0]]]}
        if domain == "arc"
        else {},
    )


def test_sync_and_batched_vector_envs_agree():
    problems = math_problems(4)
    calls = []

    def respond(messages):
        calls.append(1)
        return TRACE

    kwargs = dict(student=ScriptedBackend(respond), problems=problems)
    sync = gym.make_vec("IntBench-Math-v0", num_envs=3, vectorization_mode="sync", **kwargs)
    batched = gym.make_vec(
        "IntBench-Math-v0", num_envs=3, vectorization_mode="vector_entry_point", **kwargs
    )
    obs_s, _ = sync.reset(seed=5)
    obs_b, _ = batched.reset(seed=5)
    assert obs_s["transcript"] == obs_b["transcript"]
    actions = {"intervene": np.array([0, 1, 0]), "message": ("", "hint", "")}
    out_s = sync.step(actions)
    out_b = batched.step(actions)
    assert np.array_equal(out_s[2], out_b[2]) and out_b[2].tolist() == [False, True, False]
    assert np.array_equal(out_s[1], out_b[1])
    # next step autoresets env 1 in both
    out_s = sync.step({"intervene": np.zeros(3, dtype=np.int64), "message": ("", "", "")})
    out_b = batched.step({"intervene": np.zeros(3, dtype=np.int64), "message": ("", "", "")})
    assert out_s[0]["revealed_chars"].tolist() == out_b[0]["revealed_chars"].tolist()


def test_batched_path_batches_student_calls():
    batches = []

    class Recording(ScriptedBackend):
        def generate(self, batch, params):
            batches.append(len(batch))
            return super().generate(batch, params)

    student = Recording(lambda messages: TRACE)
    envs = gym.make_vec("IntBench-Math-v0", num_envs=4, student=student, problems=math_problems(8))
    envs.reset(seed=0)
    # Four baselines in one call; envs that drew the same problem ask for the same
    # seeded baseline, which goes out once.
    assert len(batches) == 1 and 1 <= batches[0] <= 4
    envs.step({"intervene": np.ones(4, dtype=np.int64), "message": ("a", "b", "c", "d")})
    assert batches[1:] == [4]  # four continuations (different messages), one call


def test_episode_record_round_trips_json():
    env = make()
    env.reset(seed=0)
    _, _, _, _, info = env.step({"intervene": 1, "message": "hint"})
    full = env.unwrapped.last_episode
    again = Episode.from_dict(json.loads(full.to_json()))
    assert again == full
    assert "timings" not in info["record"] and full.timings["post_s"] >= 0


@pytest.mark.parametrize(
    ("variant", "template"),
    [
        ("paper", "teacher_standard"),
        ("v1", "teacher_standard_v1"),
        ("v2", "teacher_standard_v2"),
        ("append", "teacher_standard_append"),
    ],
)
def test_teacher_prompt_variants_render_their_template(variant, template):
    problem = math_problems(1)[0]
    env = make(problems=[problem], teacher_prompt=variant)
    _, info = env.reset(seed=0)
    assert info["messages"] == render_messages(
        "math",
        template,
        problem=problem,
        transcript=TRACE[:50],
        chunk_size=50,
        reference=problem.solution,
    )


def test_oracle_prompt_shows_the_whole_trace_answer_and_verdict():
    problem = math_problems(1)[0]  # answer 3; the trace answers 5
    _, info = make("oracle", problems=[problem]).reset(seed=0)
    assert info["messages"] == render_messages(
        "math",
        "teacher_oracle",
        problem=problem,
        transcript=TRACE,
        student_answer="5",
        verdict="incorrect",
        reference=problem.solution,
    )


def test_student_failure_is_recorded_not_raised():
    def broken(messages):
        raise RuntimeError("server down")

    env = make(student=ScriptedBackend(broken))
    obs, info = env.reset(seed=0)
    assert obs["transcript"] == ""
    _, _, done, _, info = env.step({"intervene": 0, "message": ""})
    assert done and "server down" in info["record"]["error"]


def test_bad_options_fail_at_construction():
    for bad in (
        {"condition": "x"},
        {"post": "y"},
        {"increment": 0},
        {"increment": "tokens:x"},
        {"teacher_prompt": "z"},
    ):
        with pytest.raises(ValueError):
            make(**bad)


def test_all_ids_make_offline_with_defaults():
    """Defaults: the embedded student and offline problems; nothing is generated until reset."""
    for env_id in all_env_ids("monitor"):
        env = gym.make(env_id)
        assert env.unwrapped.student_spec == "smollm2"
        assert len(env.unwrapped.problems) > 0


def test_at_half_policy_intervenes_where_the_trace_crosses_half():
    from intbench.agents.policies import make_policy

    env = make()
    policy = make_policy("at:0.5")
    obs, info = env.reset(seed=0, options={"problem_index": 1})
    done = False
    while not done:
        obs, _, done, _, info = env.step(policy.decide({**obs, **info}))
    inter = info["record"]["intervention"]
    total = len(TRACE)
    assert inter["tau_abs"] == math.ceil(total / 2 / 50) * 50  # the first increment reaching half
    assert inter["tau_rel"] == pytest.approx(0.5, abs=50 / total)


def test_module_prefix_makes_without_importing_intbench_first():
    import subprocess
    import sys

    code = (
        "import sys, gymnasium as gym\n"
        "assert 'intbench' not in sys.modules\n"
        "p = {'id': 'x', 'domain': 'math', 'question': '1+1?', 'answer': '2'}\n"
        "env = gym.make('intbench:IntBench-Math-v0', student='scripted:text=ok', problems=[p])\n"
        "print(type(env.unwrapped).__name__)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "MonitorEnv"
