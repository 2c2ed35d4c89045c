"""Gymnasium conformance of every id, and malformed actions and reset options.

Scripted students keep these fast: no model runs, and code domains' students
write a (wrong) program so that verifier timings are exercised.
"""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.spaces import flatten, unflatten
from gymnasium.utils.env_checker import check_env
from gymnasium.wrappers import RecordEpisodeStatistics

import intbench  # noqa: F401  (registers the ids)
from intbench.agents.backends.scripted import ScriptedBackend
from intbench.envs.common import EpisodeRecord
from intbench.envs.domains import load_problems
from intbench.envs.domains.registry import get_domain
from intbench.envs.registration import all_env_ids, protocol_of
from intbench.envs.registration import env_id as registered_id
from intbench.envs.spaces import UnicodeText
from tests.test_monitor_env import _problem_for

# Curly quotes, dashes, emoji: what made shared-memory vector envs fail.
UNICODE_TRACE = "Let’s check each “step” — carefully, digit by digit 😀. " * 4 + "Answer: 42"
WRONG_PROGRAM = "```python\nprint(int(input()))\n```"
PROTOCOL_KWARGS = {
    "monitor": {},
    "feedback": {"k_max": 3},
    "tutor": {"ideation_turns": 2, "submissions": 2},
}


def scripted_student(domain: str = "math") -> ScriptedBackend:
    kind = get_domain(domain).kind
    text = UNICODE_TRACE + ("\n" + WRONG_PROGRAM if kind == "code" else "")
    return ScriptedBackend(lambda messages: text)


def make(env_id: str, tmp_path, problems=None, **kwargs) -> gym.Env:
    domain = gym.spec(env_id).kwargs["domain"]
    return gym.make(
        env_id,
        student=scripted_student(domain),
        problems=problems or [_problem_for(domain)],
        cache_dir=str(tmp_path),
        **{**PROTOCOL_KWARGS[protocol_of(env_id)], **kwargs},
    )


# ---------------------------------------------------------------- check_env
@pytest.mark.parametrize("env_id", all_env_ids())
def test_check_env(env_id, tmp_path):
    check_env(make(env_id, tmp_path).unwrapped, skip_render_check=True)


def test_step_infos_hold_no_wall_clock_times(tmp_path):
    env = make("IntBench-Codeforces-Feedback-v0", tmp_path)
    env.reset(seed=0)
    done, info = False, {}
    while not done:
        _, _, done, _, info = env.step({"intervene": 1, "message": "Read the output spec."})
    attempt = info["record"]["attempts"][0]
    assert "first_failure" in attempt["verdict"]["details"]
    assert "seconds" not in attempt["verdict"]["details"]
    assert "time_s" not in attempt["verdict"]["details"]["first_failure"]
    assert "timings" not in info["record"] and "student_s" in env.unwrapped.last_episode.timings


# ---------------------------------------------------------------- wrappers
@pytest.mark.parametrize(
    "env_id", ["IntBench-Math-v0", "IntBench-Math-Feedback-v0", "IntBench-Math-Tutor-v0"]
)
def test_record_episode_statistics(env_id, tmp_path):
    env = RecordEpisodeStatistics(make(env_id, tmp_path))
    env.reset(seed=0)
    done, steps, info = False, 0, {}
    while not done:
        _, _, terminated, truncated, info = env.step({"intervene": 0, "message": ""})
        done, steps = terminated or truncated, steps + 1
    assert info["episode"]["l"] == steps and set(info["episode"]) == {"r", "l", "t"}
    assert isinstance(info["record"], EpisodeRecord)
    assert info["record"]["episode_id"] == env.unwrapped.last_episode.episode_id


# ---------------------------------------------------------------- vector envs
MIXED = {"intervene": np.array([0, 1]), "message": ("", "Check the last step.")}
# Both sub-envs end at the same step, one having waited and one having intervened,
# so merged infos hold records of both kinds at once: env kwargs and which of
# the 3 steps end episodes (the step after an end autoresets).
SHORT_EPISODES = {
    "monitor": ({"increment": 10**6}, [True, False, True]),
    "feedback": ({"k_max": 2}, [True, False, True]),  # attempt 1 is played at reset
    "tutor": ({"ideation_turns": 1}, [True, False, True]),
}
VECTOR_MODES = [
    ("sync", {}),
    ("async", {"shared_memory": True}),
    ("vector_entry_point", {}),
]


@pytest.mark.parametrize("mode, vector_kwargs", VECTOR_MODES, ids=[m for m, _ in VECTOR_MODES])
@pytest.mark.parametrize("protocol", ["monitor", "feedback", "tutor"])
def test_vector_envs_with_mixed_actions(protocol, mode, vector_kwargs, tmp_path):
    envs = gym.make_vec(
        registered_id("brainteaser", protocol),
        num_envs=2,
        vectorization_mode=mode,
        vector_kwargs=vector_kwargs,
        student=scripted_student("brainteaser"),
        source="offline",
        n=4,
        cache_dir=str(tmp_path),
        **{**PROTOCOL_KWARGS[protocol], **SHORT_EPISODES[protocol][0]},
    )
    try:
        obs, _ = envs.reset(seed=0)
        for ended in SHORT_EPISODES[protocol][1]:
            obs, _, terminated, _, infos = envs.step(MIXED)
            assert envs.observation_space.contains(obs)
            assert terminated.tolist() == [ended, ended]
            if ended:
                assert infos["_record"].tolist() == [True, True]
                assert [r["protocol"] for r in infos["record"]] == [protocol, protocol]
    finally:
        envs.close()


# ---------------------------------------------------------------- text spaces
def _offline_problems(domain: str):
    for split in get_domain(domain).offline_splits:
        yield from load_problems(domain, source="offline", split=split)


@pytest.mark.parametrize("domain", sorted({gym.spec(i).kwargs["domain"] for i in all_env_ids()}))
def test_text_spaces_hold_every_offline_problem(domain, tmp_path):
    problems = list(_offline_problems(domain))
    space = UnicodeText()
    texts = [
        text for p in problems for text in (p.question, str(p.solution or ""), str(p.answer or ""))
    ]
    assert all(space.contains(text) for text in texts)
    # Shared memory stores a text as its flattened character indices.
    characters = "".join(sorted(set("".join(texts))))
    assert unflatten(space, flatten(space, characters)) == characters
    env = make(registered_id(domain), tmp_path, problems=problems)
    for index in range(0, len(problems), max(1, len(problems) // 3)):
        obs, _ = env.reset(options={"problem_index": index})
        assert env.observation_space.contains(obs)


# ---------------------------------------------------------------- malformed actions
MALFORMED = [
    None,
    [1, 2],
    (0, "message"),
    {1, 2},
    b"bytes",
    object(),
    float("inf"),
    float("nan"),
    1.7,
    -1,
    10**30,
    np.array([1, 1]),
    {},
    {"message": "no intervene key"},
    {"intervene": float("inf"), "message": "hint"},
    {"intervene": float("nan"), "message": "hint"},
    {"intervene": 1.7, "message": "hint"},
    {"intervene": -1, "message": "hint"},
    {"intervene": 10**30, "message": "hint"},
    {"intervene": "1", "message": "hint"},
    {"intervene": None, "message": "hint"},
    {"intervene": [1], "message": "hint"},
    {"intervene": np.array([1, 0]), "message": "hint"},
    {"intervene": {"nested": [1]}, "message": "hint"},
    {"intervene": 1, "message": None},
    {"intervene": 1, "message": 42},
    {"intervene": 1, "message": {"nested": ["junk"]}},
    {"intervene": 1, "message": "   "},
    {"intervene": 1, "message": "hint", "extra": 1},
    {"intervene": 1, "message": "hint", None: "junk"},
    {"intervene": 1, "message": "hint", "error": ["junk"]},
    {"intervene": 1, "message": "hint", "error": "unparsable teacher reply"},
]
MALFORMED_ORACLE = [
    {"intervene": 1, "message": "hint", "position": float("inf")},
    {"intervene": 1, "message": "hint", "position": float("nan")},
    {"intervene": 1, "message": "hint", "position": 1.5},
    {"intervene": 1, "message": "hint", "position": -5},
    {"intervene": 1, "message": "hint", "position": 10**30},
    {"intervene": 1, "message": "hint", "position": "12"},
    {"intervene": 1, "message": "hint", "position": None},
    {"intervene": 1, "message": "hint", "position": True},
    {"intervene": 1, "message": "hint", "quote": 5},
    {"intervene": 1, "message": "hint", "quote": ["a", "b"]},
]


def _teacher_turn(env_id: str, tmp_path, **kwargs) -> gym.Env:
    """An env reset to a step where the action is read (every protocol: at reset)."""
    env = make(env_id, tmp_path, **kwargs)
    env.reset(seed=0)
    return env


def _said_nothing(env_id: str, env: gym.Env) -> bool:
    episode = env.unwrapped._episode
    if protocol_of(env_id) == "feedback":
        return episode.feedback[-1].message is None
    if protocol_of(env_id) == "tutor":
        return episode.steps[-1].message is None
    return episode.steps[-1].action == "wait" and episode.intervention is None


@pytest.mark.parametrize(
    "env_id, kwargs, actions",
    [
        ("IntBench-Math-v0", {}, MALFORMED),
        ("IntBench-Math-v0", {"condition": "oracle"}, MALFORMED + MALFORMED_ORACLE),
        ("IntBench-Math-Feedback-v0", {}, MALFORMED),
        ("IntBench-Math-Tutor-v0", {}, MALFORMED),
    ],
    ids=["standard", "oracle", "feedback", "tutor"],
)
def test_malformed_actions_are_waits_with_an_action_error(env_id, kwargs, actions, tmp_path):
    assert len(actions) >= 20
    for action in actions:
        env = _teacher_turn(env_id, tmp_path, **kwargs)
        _, _, _, _, info = env.step(action)
        error = info.get("action_error")
        assert isinstance(error, str) and 0 < len(error) <= 500, f"{action!r}: {error!r}"
        assert _said_nothing(env_id, env), f"{action!r} was not read as saying nothing"


ACCEPTED = [
    {"intervene": 1, "message": "Check the carry."},
    {"intervene": np.int64(1), "message": "Check the carry."},
    {"intervene": np.array(1), "message": "Check the carry."},
    {"intervene": True, "message": "Check the carry."},
    {"intervene": 1.0, "message": "Check the carry."},
]


@pytest.mark.parametrize("action", ACCEPTED, ids=range(len(ACCEPTED)))
def test_well_formed_actions_intervene(action, tmp_path):
    env = _teacher_turn("IntBench-Math-v0", tmp_path)
    _, _, done, _, info = env.step(action)
    assert done and "action_error" not in info
    assert info["record"]["intervention"]["message"] == "Check the carry."


def test_oracle_position_accepts_sampled_and_integral_values(tmp_path):
    for position in (np.array(3, dtype=np.int64), 3.0, np.int32(3)):
        env = _teacher_turn("IntBench-Math-v0", tmp_path, condition="oracle")
        _, _, done, _, info = env.step({"intervene": 1, "message": "Look.", "position": position})
        assert done and "action_error" not in info
        assert info["record"]["intervention"]["position"] == 3


# ---------------------------------------------------------------- reset options
@pytest.mark.parametrize("env_id", ["IntBench-Math-v0", "IntBench-Math-Tutor-v0"])
def test_reset_options_are_checked(env_id, tmp_path):
    env = make(env_id, tmp_path)
    with pytest.raises(TypeError, match="must be a dict"):
        env.reset(options=[1, 2])
    for options, match in [
        ({"problem_idx": 0}, "unknown reset option"),
        ({"problem_index": "0"}, "problem_index must be an int"),
        ({"problem_index": 1.5}, "problem_index must be an int"),
        ({"problem_index": 5}, "out of range"),
        ({"problem_id": 3}, "problem_id must be a string"),
        ({"problem_id": "nope"}, "unknown problem_id"),
        ({"student_seed": -1}, "student_seed must be >= 0"),
        ({"student_seed": None}, "student_seed must be an int"),
    ]:
        with pytest.raises(ValueError, match=match):
            env.reset(options=options)
    env.reset(options={"problem_index": 0, "student_seed": 1})
