"""Episode logic as flows of requests, so many episodes can share one model.

An environment writes each model-dependent phase (drawing the baseline,
continuing after an intervention, a feedback retry) as a generator that
*yields* requests — :class:`Generate` for a model call, :class:`Verify` for a
verifier call — and receives their results.  The engine
(:mod:`intbench.envs.engine`) runs flows, one or many together, and a
:class:`RequestExecutor` serves their requests: one batched ``generate`` call
per model and sampling (:func:`batch_key`), a thread pool for the verifiers.
The episode logic is written once.

Requests that do not depend on each other (the student's continuation and
its transfer attempt) are run side by side with :func:`gather`: they reach
the driver as one :class:`Gather`, so they share the round's batch instead of
taking one round each.
"""

from __future__ import annotations

import copy
import dataclasses
import functools
import logging
from collections import defaultdict
from collections.abc import Callable, Generator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from intbench.agents.base import ChatBackend, Completion, SamplingParams
from intbench.records import Problem, Verdict
from intbench.verifiers.memo import VerdictMemo

logger = logging.getLogger(__name__)


@dataclass
class Generate:
    """Ask the model playing ``role`` to complete ``messages``."""

    role: str
    messages: list[dict]
    sampling: SamplingParams


@dataclass
class Verify:
    """Check ``text`` against ``problem`` with ``verifier``."""

    problem: Problem
    text: str
    verifier: Callable[[Problem, str], Verdict]


@dataclass
class Gather:
    """Several :class:`Generate`/:class:`Verify` requests of one flow, to be served
    together; the flow receives the list of their answers, in order.  (Typed as any
    request since :func:`gather` passes on what its sub-flows yield; executors
    refuse a nested Gather.)"""

    requests: list[Request]


Request = Generate | Verify | Gather
Flow = Generator[Request, Any, Any]


def batch_key(request: Generate) -> tuple:
    """Generations that may go to a model as one batch: one role, one sampling but the seed
    (a batch shares one seed, its first request's, so batched runs stay reproducible)."""
    sampling = request.sampling
    sampling_type: type = type(sampling)  # annotated: mypy takes this class for unhashable
    values = (getattr(sampling, name) for name in _batched_fields(sampling_type))
    return (request.role, *(tuple(v) if isinstance(v, list) else v for v in values))


@functools.cache
def _batched_fields(sampling_type: type) -> tuple[str, ...]:
    return tuple(f.name for f in dataclasses.fields(sampling_type) if f.name != "seed")


def gather(*subflows: Flow) -> Flow:
    """Flow: run ``subflows`` side by side -> the list of their return values.

    Each round, the requests the still-running sub-flows wait on go out as one
    :class:`Gather` (a lone request as itself), so they are batched together
    and with other episodes' requests.  Only for sub-flows that do not depend
    on each other's results.  Sub-flows may gather in turn.
    """
    values: list[Any] = [None] * len(subflows)
    pending: dict[int, Request] = {}
    for index in range(len(subflows)):
        _advance(subflows, index, None, pending, values, first=True)
    while pending:
        order = list(pending)
        if len(order) == 1:
            answers = [(yield pending[order[0]])]
        else:
            # A sub-flow that gathers itself is flattened into this round's Gather.
            parts = [_parts(pending[i]) for i in order]
            flat = yield Gather([request for part in parts for request in part])
            answers, start = [], 0
            for index, part in zip(order, parts, strict=True):
                chunk = flat[start : start + len(part)]
                answers.append(chunk if isinstance(pending[index], Gather) else chunk[0])
                start += len(part)
        pending.clear()
        for index, answer in zip(order, answers, strict=True):
            _advance(subflows, index, answer, pending, values)
    return values


def _parts(request: Request) -> list[Request]:
    return request.requests if isinstance(request, Gather) else [request]


def _advance(flows, index, answer, pending, results, first=False) -> None:
    """Send ``answer`` to ``flows[index]``: its next request goes to ``pending``, or its
    return value to ``results``."""
    try:
        request = next(flows[index]) if first else flows[index].send(answer)
    except StopIteration as stop:
        results[index] = stop.value
        return
    pending[index] = request


class RequestExecutor:
    """Serves flow requests: model calls by role, verifier calls in a thread pool.

    A failing backend call does not raise into the flow: the flow receives a
    :class:`Completion` with ``error`` set and ``finish_reason="error"`` and
    decides what the episode records.
    """

    def __init__(self, backends: dict[str, ChatBackend], verify_threads: int = 8):
        self.backends = backends
        self._pool = ThreadPoolExecutor(
            max_workers=verify_threads, thread_name_prefix="intbench-verify"
        )
        self.verdicts = VerdictMemo()  # one per executor, so per run

    def generate(self, requests: list[Generate]) -> list[Completion]:
        results: list[Completion | None] = [None] * len(requests)
        groups: dict[tuple, list[int]] = defaultdict(list)
        for index, request in enumerate(requests):
            groups[batch_key(request)].append(index)
        for indices in groups.values():
            first = requests[indices[0]]
            backend = self.backends.get(first.role)
            # The same prompt with the same seed asked twice in one round (the shared
            # no-message transfer arm of a GRPO group) is generated once; unseeded
            # requests are independent draws and all go out.
            distinct: dict[object, list[int]] = defaultdict(list)
            for i in indices:
                seed = requests[i].sampling.seed
                key = i if seed is None else (_prompt_key(requests[i].messages), seed)
                distinct[key].append(i)
            batch = [requests[same[0]].messages for same in distinct.values()]
            if backend is None:
                outputs = [_failed(f"no model configured for role {first.role!r}")] * len(batch)
            else:
                outputs = _generate_isolating_failures(backend, batch, first.sampling, first.role)
            for same, output in zip(distinct.values(), outputs, strict=True):
                for index in same:
                    results[index] = output
        return results  # type: ignore[return-value]

    def verify(self, requests: list[Verify]) -> list[Verdict]:
        """Grade each request; a response whose graded part was graded before reuses its verdict."""
        keys = [self.verdicts.key(r.verifier, r.problem, r.text) for r in requests]
        results: list[Verdict | None] = [self.verdicts.get(key) for key in keys]
        todo: dict[object, list[int]] = defaultdict(list)  # one grading per distinct key
        for index, (key, result) in enumerate(zip(keys, results, strict=True)):
            if result is None:
                todo[index if key is None else key].append(index)
        firsts = [indices[0] for indices in todo.values()]
        if len(firsts) == 1:
            request = requests[firsts[0]]
            graded = [request.verifier(request.problem, request.text)]
        else:
            futures = [
                self._pool.submit(requests[i].verifier, requests[i].problem, requests[i].text)
                for i in firsts
            ]
            graded = [future.result() for future in futures]
        for indices, verdict in zip(todo.values(), graded, strict=True):
            self.verdicts.put(keys[indices[0]], verdict)
            results[indices[0]] = verdict
            for index in indices[1:]:
                results[index] = self.verdicts.get(keys[index]) or copy.deepcopy(verdict)
        return results  # type: ignore[return-value]

    def serve(self, requests: list[Request]) -> list[Any]:
        """Answer a mixed list of :class:`Generate` and :class:`Verify` requests, in order."""
        answers: list[Any] = [None] * len(requests)
        generates = [(i, r) for i, r in enumerate(requests) if isinstance(r, Generate)]
        verifies = [(i, r) for i, r in enumerate(requests) if isinstance(r, Verify)]
        if len(generates) + len(verifies) != len(requests):
            bad = next(r for r in requests if not isinstance(r, Generate | Verify))
            raise TypeError(f"a flow yielded {type(bad).__name__}, expected Generate or Verify")
        completions = self.generate([r for _, r in generates])
        verdicts = self.verify([r for _, r in verifies])
        for (i, _), answer in zip([*generates, *verifies], [*completions, *verdicts], strict=True):
            answers[i] = answer
        return answers

    def close(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)


def _prompt_key(messages) -> tuple:
    return tuple((m.get("role"), m.get("content")) for m in messages)


def _generate_isolating_failures(
    backend: ChatBackend, batch, sampling, role: str
) -> list[Completion]:
    """Generate a batch; if it fails, retry its items one by one so that one
    bad request fails only its own episode."""
    try:
        return backend.generate(batch, sampling)
    except Exception as exc:  # a backend failure becomes an episode error, not a crash
        if len(batch) == 1:
            logger.warning("%s backend failed: %s: %s", role, type(exc).__name__, exc)
            return [_failed(f"{type(exc).__name__}: {exc}")]
        logger.warning("%s backend failed on a batch of %d; retrying one by one", role, len(batch))
        return [_generate_isolating_failures(backend, [item], sampling, role)[0] for item in batch]


def _failed(message: str) -> Completion:
    return Completion(text="", finish_reason="error", error=message)
