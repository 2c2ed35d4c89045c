"""Every protocol gives the teacher's prompt as chat messages at reset (info["messages"])."""

from __future__ import annotations

import gymnasium as gym
import pytest

import intbench  # noqa: F401
from intbench.agents.backends.scripted import ScriptedBackend
from intbench.envs.registration import all_env_ids
from tests.test_monitor_env import _problem_for

WRONG = "I am not sure. My answer: \\boxed{7}"


@pytest.fixture(autouse=True)
def _cache(tmp_path, monkeypatch):
    monkeypatch.setenv("INTBENCH_CACHE", str(tmp_path / "cache"))


@pytest.mark.parametrize("env_id", all_env_ids())
def test_reset_gives_the_teachers_chat_prompt(env_id):
    domain = gym.spec(env_id).kwargs["domain"]
    env = gym.make(
        env_id, student=ScriptedBackend(lambda m: WRONG), problems=[_problem_for(domain)]
    )
    _, info = env.reset(seed=0)
    messages = info["messages"]
    assert messages and all(set(m) == {"role", "content"} for m in messages)
    assert messages[-1]["role"] == "user" and "Read n and print n+1." in messages[-1]["content"]
    assert info.get("teacher_turn", True)  # monitor envs always have a turn and no flag
    env.close()
