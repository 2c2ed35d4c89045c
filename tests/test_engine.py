"""The episode engine: each episode at its own pace (continuous), or in rounds."""

from __future__ import annotations

import threading
import time

import pytest

from intbench.agents.base import Completion, SamplingParams
from intbench.envs.engine import Engine, TeacherAct, run_flows
from intbench.envs.flows import Gather, Generate, RequestExecutor, Verify
from intbench.records import Problem, Verdict
from tests.fake_openai_server import FakeOpenAIServer

PROBLEM = Problem(id="math/t/0", domain="math", question="q", answer="1")
SAMPLING = SamplingParams(max_tokens=8)


class RecordingBackend:
    """A local model that records the size of every batch it is given."""

    spec = "recording"
    remote = False

    def __init__(self, seconds: float = 0.0):
        self.seconds = seconds
        self.batches: list[int] = []

    def generate(self, batch, params=None):
        self.batches.append(len(batch))
        time.sleep(self.seconds)
        return [Completion(text="ok") for _ in batch]


class ScriptedTeacher:
    backend = None

    def act(self, slots, steps, seeds):
        return ["wait" for _ in slots]


def program(log: list, name: str, slow_grading: bool = False):
    yield Generate("student", [{"role": "user", "content": name}], SAMPLING)
    action = yield TeacherAct(0, {}, {}, 0)
    assert action == "wait"
    verifier = _slow_verifier if slow_grading else _fast_verifier
    verdict = yield Verify(PROBLEM, name, verifier)
    log.append((name, time.monotonic()))
    return verdict.status


def _fast_verifier(problem, text):
    return Verdict("correct", 1.0)


def _slow_verifier(problem, text):
    time.sleep(1.0)
    return Verdict("incorrect")


def _run(scheduler: Engine, programs: list) -> dict:
    results: dict[int, str] = {}
    queue = list(programs)

    def next_program(slot):
        return queue.pop(0) if queue else None

    scheduler.run(next_program, lambda slot, value: results.setdefault(len(results), value))
    return results


def test_a_slow_grading_delays_only_its_own_episode():
    backend = RecordingBackend()
    scheduler = Engine(RequestExecutor({"student": backend}), ScriptedTeacher(), slots=4)
    log: list = []
    started = time.monotonic()
    programs = [program(log, "slow", slow_grading=True)] + [
        program(log, f"fast{i}") for i in range(7)
    ]
    try:
        results = _run(scheduler, programs)
    finally:
        scheduler.close()
    finished = dict(log)
    assert sorted(results.values()) == ["correct"] * 7 + ["incorrect"]
    # the other seven finish (three of them in slots freed meanwhile) before the slow one
    assert all(finished[f"fast{i}"] < finished["slow"] for i in range(7))
    assert finished["slow"] - started >= 1.0


def test_a_local_model_gets_what_is_ready_as_one_batch():
    backend = RecordingBackend(seconds=0.05)
    scheduler = Engine(RequestExecutor({"student": backend}), ScriptedTeacher(), slots=20)
    try:
        _run(scheduler, [program([], f"p{i}") for i in range(20)])
    finally:
        scheduler.close()
    # twenty first requests (slots start eight at a time), one padded batch
    assert backend.batches == [20]


def test_a_server_gets_every_ready_request_at_once():
    with FakeOpenAIServer(reply=lambda m: "ok", latency=0.2) as server:
        from intbench.agents.backends import load_backend

        backend = load_backend(f"openai:m@{server.base_url}?concurrency=16")
        scheduler = Engine(RequestExecutor({"student": backend}), ScriptedTeacher(), slots=16)
        started = time.monotonic()
        try:
            _run(scheduler, [program([], f"p{i}") for i in range(32)])
        finally:
            scheduler.close()
            backend.close()
        elapsed = time.monotonic() - started
        assert server.max_in_flight == 16
        assert elapsed < 2.0  # two waves of 0.2 s, not 32 requests one after another


def test_a_program_past_the_limit_is_dropped_and_its_late_answer_ignored():
    release = threading.Event()

    def stuck(problem, text):
        release.wait(5)
        return Verdict("correct", 1.0)

    def slow_program():
        yield Verify(PROBLEM, "x", stuck)
        return "never"

    overdue: list[int] = []
    done: list = []
    scheduler = Engine(RequestExecutor({}), ScriptedTeacher(), slots=1)
    queue = [slow_program(), program([], "next")]
    try:
        scheduler.run(
            lambda slot: queue.pop(0) if queue else None,
            lambda slot, value: done.append(value),
            on_overdue=overdue.append,
            limit_s=0.3,
        )
    finally:
        release.set()
        scheduler.close()
    assert overdue == [0] and done == ["correct"]


def gathering_program(name: str):
    """A continuation and its transfer attempt at once, then both gradings at once."""
    texts = yield Gather(
        [
            Generate("student", [{"role": "user", "content": name}], SAMPLING),
            Generate("student", [{"role": "user", "content": f"{name} variant"}], SAMPLING),
        ]
    )
    verdicts = yield Gather([Verify(PROBLEM, c.text, _fast_verifier) for c in texts])
    return [v.status for v in verdicts]


def test_a_gathers_parts_share_the_batch_with_other_episodes():
    backend = RecordingBackend(seconds=0.05)
    scheduler = Engine(RequestExecutor({"student": backend}), ScriptedTeacher(), slots=4)
    try:
        results = _run(scheduler, [gathering_program(f"g{i}") for i in range(3)] + [
            program([], "plain")
        ])  # fmt: skip
    finally:
        scheduler.close()
    # 3 episodes x 2 parts + 1 plain request: one padded batch, not one per part
    assert backend.batches == [7]
    assert sorted(map(str, results.values())) == ["['correct', 'correct']"] * 3 + ["correct"]


class RoundServer:
    """A stand-in server: answers each round's plain requests and records the rounds."""

    def __init__(self):
        self.rounds: list[list[str]] = []

    def serve(self, requests):
        self.rounds.append([type(r).__name__ for r in requests])
        return [
            Completion(text="ok") if isinstance(r, Generate) else _fast_verifier(None, r.text)
            for r in requests
        ]


def test_rounds_serve_every_flows_requests_together_in_order():
    server = RoundServer()
    flows = [gathering_program("a"), gathering_program("b"), program([], "c")]
    teacher_free = flows[:2]  # run_flows has no teacher: only Generate/Verify flows
    assert run_flows(teacher_free, server) == [["correct", "correct"]] * 2
    # Round 1: both flows' two generations; round 2: their four gradings.
    assert server.rounds == [["Generate"] * 4, ["Verify"] * 4]
    with pytest.raises(TypeError, match="no teacher"):
        run_flows([flows[2]], server)


def test_a_rounds_batches_are_the_same_whatever_the_grading_time():
    """Rounds wait for every request of a round, so a slow grading cannot split the next
    round's batch (it does in continuous mode, by design)."""
    backend = RecordingBackend()
    executor = RequestExecutor({"student": backend})

    def two_calls(slow: bool):
        yield Generate("student", [{"role": "user", "content": "x"}], SAMPLING)
        yield Verify(PROBLEM, "x", _slow_verifier if slow else _fast_verifier)
        yield Generate("student", [{"role": "user", "content": "y"}], SAMPLING)

    run_flows([two_calls(slow=i == 0) for i in range(3)], executor)
    assert backend.batches == [3, 3]


def test_generations_with_stop_sequences_share_a_batch():
    backend = RecordingBackend()
    with_stop = SamplingParams(max_tokens=8, stop=["\n"], seed=1)
    requests = [
        Generate("student", [{"role": "user", "content": str(i)}], with_stop) for i in range(3)
    ]
    assert [c.text for c in RequestExecutor({"student": backend}).generate(requests)] == ["ok"] * 3
    assert backend.batches == [3]
