"""verifiers (>= 0.4) loads IntBench by id and plays whole episodes against a scripted model server.

Each test goes through verifiers' own loader (``vf.resolve_env_config`` and
``vf.load_environment``) and its real machinery: the ``null`` chat harness runs
as a subprocess and reaches the model through verifiers' interception server,
which relays to :class:`tests.fake_openai_server.FakeOpenAIServer`.  The
recorded reward must be the return of the same episode played directly
through Gymnasium with the same teacher replies.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import sys
from pathlib import Path

import gymnasium as gym
import pytest

# CI runs this file in a venv with the extra and sets INTBENCH_REQUIRE_VERIFIERS=1 there,
# so a missing dependency fails instead of skipping.
REQUIRED = os.environ.get("INTBENCH_REQUIRE_VERIFIERS") == "1"
if REQUIRED:
    import verifiers.v1 as vf
else:
    vf = pytest.importorskip(
        "verifiers.v1",
        reason="verifiers >= 0.4 is not installed (pip install 'intbench[verifiers]')",
    )

import intbench  # noqa: E402,F401
from intbench.envs.wrappers import TeacherTextActions  # noqa: E402
from tests.fake_openai_server import FakeOpenAIServer  # noqa: E402

PROBLEMS = [
    {
        "id": f"t/{i}",
        "domain": "math",
        "question": f"What is {i} + {5 - i}?",
        "answer": "5",
        "solution": f"{i} + {5 - i} = 5, so \\boxed{{5}}.",
    }
    for i in (2, 3)
]
STUDENT = "scripted:tests.scripted_students:hinted"
WAIT = {"intervene": 0, "message": ""}

# The teacher's replies per protocol, in the papers' formats: wait once, then give a hint.
MONITOR = ["Intervene: No", "Intervene: Yes\nIntervention: Recheck the sum with the HINT."]
FEEDBACK = ["<feedback>Recheck the sum with the HINT.</feedback>"]
TUTOR = ["What do you know about sums?", "Try the HINT: count up from the first number."]
CASES = {
    "monitor": ("IntBench-Math-v0", MONITOR, {}),
    "feedback": ("IntBench-Math-Feedback-v0", FEEDBACK, {"k_max": 3}),
    "tutor": ("IntBench-Math-Tutor-v0", TUTOR, {"ideation_turns": 2, "notes": True}),
}


@pytest.fixture(autouse=True)
def _environment(tmp_path, monkeypatch):
    monkeypatch.setenv("INTBENCH_CACHE", str(tmp_path / "cache"))
    # verifiers' local harness runs its chat program with uv, found on PATH.
    bin_dir = str(Path(sys.executable).parent)
    monkeypatch.setenv("PATH", bin_dir + os.pathsep + os.environ.get("PATH", ""))
    if shutil.which("uv") is None:
        if REQUIRED:
            pytest.fail("verifiers' chat harness needs uv on PATH")
        pytest.skip("verifiers' chat harness needs uv (pip install 'intbench[verifiers]')")


class ScriptedTeacher:
    """The model server's reply function: the protocol's replies in turn (the last repeats)."""

    def __init__(self, replies: list[str]):
        self.replies = replies
        self.requests: list[list[dict]] = []

    def __call__(self, messages: list[dict]) -> str:
        self.requests.append(messages)
        return self.replies[min(len(self.requests), len(self.replies)) - 1]


def load(protocol: str, options: dict | None = None, **env: object):
    env_id, _, protocol_options = CASES[protocol]
    options = {"student": STUDENT, "problems": PROBLEMS, **protocol_options, **(options or {})}
    config = vf.resolve_env_config(
        {"taskset": {"id": f"intbench-{protocol}", "options": options}, **env}
    )
    return vf.load_environment(config)


def play(environment, task, teacher: ScriptedTeacher, faults: int = 0):
    """One episode of ``task`` with the scripted teacher behind a local model server
    whose first ``faults`` requests are refused (HTTP 429)."""

    async def episode():
        with FakeOpenAIServer(reply=teacher) as server:
            server.inject("429", count=faults)
            ctx = vf.ModelContext(
                model="fake-teacher",
                client=vf.EvalClientConfig(base_url=server.base_url, api_key_var="FAKE_API_KEY"),
            )
            async with environment.serving():
                return await environment.run_episode(task, ctx)

    return asyncio.run(episode())


def direct_play(protocol: str, task, replies: list) -> tuple[float, list[list[dict]]]:
    """The same episode through Gymnasium: its return and the teacher prompts it gave."""
    env_id, _, protocol_options = CASES[protocol]
    env = gym.make(env_id, student=STUDENT, problems=PROBLEMS, **protocol_options)
    if protocol == "monitor":
        env = TeacherTextActions(env)
    info = task.data.info
    _, reset_info = env.reset(seed=info["seed"], options={"problem_index": info["problem_index"]})
    prompts, total = [reset_info["messages"]], 0.0
    for reply in replies:
        _, reward, terminated, truncated, step_info = env.step(reply)
        total += float(reward)
        if terminated or truncated:
            break
        prompts.append(step_info["messages"])
    env.close()
    return total, prompts


@pytest.mark.parametrize("protocol", sorted(CASES))
def test_verifiers_loads_intbench_by_id_and_plays_an_episode(protocol):
    environment = load(protocol)
    assert type(environment).__name__ == "IntBenchEnv"
    assert type(environment.taskset).__name__ == f"{protocol.capitalize()}Taskset"
    tasks = list(environment.taskset)
    assert [t.data.id for t in tasks] == ["t/2", "t/3"]
    task = tasks[1]

    teacher = ScriptedTeacher(CASES[protocol][1])
    episode = play(environment, task, teacher)

    assert episode.ok, episode.errors
    (trace,) = episode.traces
    replies = [
        teacher.replies[min(i, len(teacher.replies) - 1)] for i in range(len(teacher.requests))
    ]
    expected, prompts = direct_play(protocol, task, replies)
    # Every request is the env's prompt at that turn, after the earlier turns.
    assert len(teacher.requests) == len(prompts)
    for n, request in enumerate(teacher.requests):
        system, *turns = request
        assert system == prompts[0][0]
        users = [m["content"] for m in turns if m["role"] == "user"]
        assert users == [p[1]["content"] for p in prompts[: n + 1]]
        assert [m["content"] for m in turns if m["role"] == "assistant"] == replies[:n]
    # The hint made the student right: a reward the env pays only for a solve.
    assert trace.rewards["intbench"].score == expected == 1.0
    assert trace.metrics["success"] == 1.0 and trace.metrics["leaked"] == 0.0
    record = trace.info["intbench_episode"]
    assert record["protocol"] == protocol and record["problem_id"] == "t/3"


@pytest.mark.parametrize(
    "protocol, first_reply",
    [("monitor", "Intervene: No"), ("feedback", "<feedback>Look again.</feedback>")],
)
def test_a_teacher_stopped_early_earns_what_waiting_earns(protocol, first_reply):
    """A turn limit ends the teacher's run after its first reply: the rest of the
    episode is played without help, so it scores as waiting from then on (0 here)."""
    environment = load(protocol, teacher={"max_turns": 1})
    task = next(iter(environment.taskset))
    teacher = ScriptedTeacher([first_reply, CASES[protocol][1][-1]])
    episode = play(environment, task, teacher)
    assert episode.ok, episode.errors
    (trace,) = episode.traces
    assert len(teacher.requests) == 1
    waiting, _ = direct_play(protocol, task, [first_reply] + [WAIT] * 20)
    assert trace.rewards["intbench"].score == waiting == 0.0
    assert trace.metrics["success"] == 0.0
    assert trace.info["intbench_episode"]["solved_at"] is None


def test_a_failed_intbench_episode_fails_instead_of_scoring():
    environment = load(
        "feedback", {"student": "scripted:tests.scripted_students:hinted_then_fails"}
    )
    task = next(iter(environment.taskset))
    episode = play(environment, task, ScriptedTeacher(FEEDBACK))
    assert not episode.ok
    assert any("injected student failure" in e.message for e in episode.errors)
    assert all("intbench" not in t.rewards for t in episode.traces)


def test_a_failed_teacher_run_is_not_scored():
    """A teacher whose model calls fail does not get the waiting reward."""
    environment = load("monitor")
    task = next(iter(environment.taskset))
    episode = play(environment, task, ScriptedTeacher(MONITOR), faults=100)
    assert not episode.ok
    (trace,) = episode.traces
    assert not trace.ok and "intbench" not in trace.rewards


def test_a_leaked_answer_is_charged():
    """Telling the answer scores below the hint (the env's leak charge reaches the trace)."""
    environment = load("feedback")
    task = next(iter(environment.taskset))
    episode = play(
        environment, task, ScriptedTeacher(["<feedback>HINT: the answer is 5.</feedback>"])
    )
    (trace,) = episode.traces
    assert trace.metrics["leaked"] == 1.0
    assert trace.rewards["intbench"].score < 1.0


def test_a_problem_without_a_teacher_turn_yields_no_task():
    """A feedback student right at attempt 1 leaves the teacher nothing to decide."""
    easy = {**PROBLEMS[0], "id": "t/easy", "answer": "0"}
    environment = load("feedback", {"problems": [easy, PROBLEMS[1]]})
    assert [t.data.id for t in environment.taskset] == ["t/3"]


def test_bad_options_fail_with_one_line_naming_the_fix():
    with pytest.raises(ValueError, match="unknown IntBench domain 'maths'; use one of .*math"):
        vf.resolve_env_config({"taskset": {"id": "intbench-monitor", "domain": "maths"}})
    with pytest.raises(TypeError, match="k_max"):  # a feedback option, before any rollout
        load("monitor", {"k_max": 3})
