"""Standard teachers on a server ask for the decision line first, the message only on Yes."""

from __future__ import annotations

import zlib

import pytest

from intbench.agents.backends import load_backend
from intbench.runner import RunConfig, load_run, run_eval
from intbench.teachers import DECISION_TOKENS
from tests.fake_openai_server import FakeOpenAIServer

TRACE = "First we add the tens, then the units, and we check the carry. " * 5


def reply(messages: list[dict]) -> str:
    """Students give a trace; the teacher says Yes on a fixed share of the prompts it sees."""
    prompt = "\n".join(m["content"] for m in messages)
    if "Intervene: [" not in prompt:
        return TRACE + "So \\boxed{7}."
    if zlib.crc32(prompt.encode()) % 17 == 0:
        return "Intervene: Yes\nIntervention: Check the carry in the second step."
    return "Intervene: No"


def _run(server, tmp_path, name: str, remote: bool) -> list[dict]:
    teacher = f"openai:teacher@{server.base_url}"
    student = f"openai:student@{server.base_url}"
    config = RunConfig(env_id="IntBench-Math-v0", teacher=teacher, student=student, n=12, seed=1)
    backend = load_backend(teacher)
    backend.remote = remote  # False: the full-reply path, as for a local non-incremental model
    import intbench.agents.backends.loading as loading

    loading._SHARED[teacher] = backend
    try:
        run_eval(config, tmp_path / name, concurrency=3, progress=False)
    finally:
        loading._SHARED.pop(teacher, None)
        backend.close()
    return load_run(tmp_path / name)


@pytest.fixture
def server():
    with FakeOpenAIServer(reply=reply) as running:
        yield running


def test_decisions_are_those_of_the_full_reply_path(server, tmp_path, monkeypatch):
    monkeypatch.setenv("INTBENCH_CACHE", str(tmp_path / "cache"))
    full = _run(server, tmp_path, "full", remote=False)
    full_requests = [r for r in server.requests if r["model"] == "teacher"]
    server.requests.clear()
    first = _run(server, tmp_path, "first", remote=True)
    first_requests = [r for r in server.requests if r["model"] == "teacher"]

    def decisions(episodes):
        return {
            e["metadata"]["run_key"]: e["intervention"]
            and (e["intervention"]["position"], e["intervention"]["message"])
            for e in episodes
        }

    assert decisions(first) == decisions(full)
    assert any(decisions(full).values()) and not all(decisions(full).values())
    short = [r for r in first_requests if r["max_tokens"] == DECISION_TOKENS]
    longer = [r for r in first_requests if r["max_tokens"] != DECISION_TOKENS]
    assert all(r.get("stop") == ["\n"] for r in short)
    # one long request per intervention; every wait costed at most 8 tokens
    assert len(longer) == sum(1 for m in decisions(first).values() if m)
    waits = len(short) - len(longer)
    assert waits > 0 and DECISION_TOKENS <= 8
    requested = sum(r["max_tokens"] for r in first_requests)
    assert requested < sum(r["max_tokens"] for r in full_requests) / 4
    assert all(r["max_tokens"] > DECISION_TOKENS for r in full_requests)
