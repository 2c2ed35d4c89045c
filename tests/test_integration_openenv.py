"""OpenEnv server (intbench.integrations.openenv) played by openenv's own GenericEnvClient."""

from __future__ import annotations

import socket
import subprocess
import sys
import threading
import time

import pytest

pytest.importorskip("openenv.core", reason="needs openenv-core: pip install 'intbench[openenv]'")

from openenv.core.generic_client import GenericEnvClient  # noqa: E402

from intbench.agents.backends.scripted import ScriptedBackend  # noqa: E402
from intbench.integrations.openenv import IntBenchAction, IntBenchClient, build_app  # noqa: E402
from tests.test_training import TRACE, math_problems  # noqa: E402


@pytest.fixture(autouse=True)
def _cache(tmp_path, monkeypatch):
    monkeypatch.setenv("INTBENCH_CACHE", str(tmp_path / "cache"))


def carry_student() -> ScriptedBackend:
    """Wrong until the feedback mentions 'carry'."""

    def respond(messages):
        text = messages[-1]["content"]
        question = next(m["content"] for m in messages if "What is" in m["content"])
        i = int(question.split("What is ")[1].split(" ")[0])
        return f"So \\boxed{{{i + 3}}}." if "carry" in text else "So \\boxed{99}."

    return ScriptedBackend(respond, spec="scripted:carry-openenv")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def serve():
    """Serve an app on a loopback port in a thread; yields the base URL."""
    import uvicorn

    servers = []

    def start(app) -> str:
        port = free_port()
        server = uvicorn.Server(
            uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning")
        )
        threading.Thread(target=server.run, daemon=True).start()
        deadline = time.monotonic() + 30
        while not server.started:
            assert time.monotonic() < deadline, "server did not start"
            time.sleep(0.05)
        servers.append(server)
        return f"http://127.0.0.1:{port}"

    yield start
    for server in servers:
        server.should_exit = True


def test_generic_client_plays_a_feedback_episode(serve):
    url = serve(
        build_app(
            "IntBench-Math-Feedback-v0", student=carry_student(), problems=math_problems(2), k_max=3
        )
    )
    with GenericEnvClient(base_url=url).sync() as env:
        result = env.reset(seed=0, problem_index=1)
        prompt = result.observation["messages"]
        assert prompt[-1]["role"] == "user" and "What is 1 + 3?" in prompt[-1]["content"]
        assert result.observation["teacher_turn"] and not result.done
        result = env.step({"intervene": 1, "message": "Think again."})
        assert not result.done and result.reward == 0.0
        assert result.observation["fields"]["attempts"] == 2
        result = env.step({"intervene": 1, "message": "Remember to carry."})
        assert result.done and result.reward == 1.0
        record = result.observation["info"]["record"]
        assert record["solved_at"] == 3 and record["problem_id"] == "t/1"


def test_generic_client_plays_a_monitor_episode_and_sessions_are_separate(serve):
    student = ScriptedBackend(
        lambda m: "Fixed: \\boxed{3}." if "<update>" in m[-1]["content"] else TRACE
    )
    url = serve(
        build_app("IntBench-Math-v0", student=student, problems=math_problems(1), increment=40)
    )
    with GenericEnvClient(base_url=url).sync() as one, GenericEnvClient(base_url=url).sync() as two:
        first = one.reset(seed=0)
        two.reset(seed=0)
        waited = one.step({"intervene": 0})
        assert not waited.done and waited.observation["info"]["step"] == 1
        assert two.step({"intervene": 0}).observation["info"]["step"] == 1  # its own env
        assert "Student reasoning so far" in first.observation["messages"][-1]["content"]
        result = one.step({"intervene": 1, "message": "Check the sum again."})
        assert result.done and result.reward == 1.0  # helpfulness: wrong -> right
        assert (
            result.observation["info"]["record"]["intervention"]["message"]
            == "Check the sum again."
        )
        steps = 1
        while not two.step({"intervene": 0}).done:
            steps += 1
        assert steps > 2  # waited through the whole trace


def test_typed_client_and_malformed_actions(serve):
    url = serve(
        build_app(
            "IntBench-Math-Feedback-v0", student=carry_student(), problems=math_problems(1), k_max=2
        )
    )
    with IntBenchClient(base_url=url).sync() as env:
        result = env.reset(seed=0)
        assert result.observation.teacher_turn and result.observation.messages
        result = env.step(IntBenchAction(intervene=1, message=""))
        assert result.done and result.observation.info["action_error"]


def test_cli_refuses_an_unknown_env_id_up_front():
    done = subprocess.run(
        [sys.executable, "-m", "intbench.integrations.openenv", "--env", "IntBench-Nope-v0"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 2 and "not an IntBench env id" in done.stderr
