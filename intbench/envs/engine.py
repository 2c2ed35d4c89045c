"""The episode engine: every driver of IntBench's episodes runs them here.

Each episode (or phase of one) is a *program*: a generator that yields what it
needs next — a model call (:class:`~intbench.envs.flows.Generate`), a grading
(:class:`~intbench.envs.flows.Verify`), several of these at once
(:class:`~intbench.envs.flows.Gather`, each part sent like a request of its
own) or a teacher decision (:class:`TeacherAct`) — and receives the answer.
:class:`Engine` runs many programs, in one of two ways:

*Continuous* (the runner, :mod:`intbench.runner`): no round barriers.  Every
program's request is kept in flight and each answer handed back as soon as it
is there, so a slow grading or a slow server reply delays only its own episode.

* Gradings run in a thread pool, one per request.
* Requests for a *remote* model (an OpenAI-compatible server) are sent as soon
  as they are ready, as one batch per (role, sampling), from a pool as large
  as the run's concurrency: the server sees every ready request at once.
* Requests for a *local* model (transformers, llama.cpp, scripted) run one
  batch at a time on one worker; what becomes ready while a batch runs is
  batched together next (continuous batching), and the first batch waits
  until every slot has started, so a local model gets padded batches rather
  than one call per episode.
* Decisions of a scripted teacher are made inline; a model teacher's go to
  the worker of its backend, one batch at a time (its per-episode state is
  not shared between threads).

*Rounds* (:func:`run_flows`: a single env's ``reset``/``step``, vector envs,
training rollouts, the human study, generalization contexts): every program
advances one request per round and a round's requests are served together,
by one ``serve`` call.  Batches are then the same from run to run whatever the
timing, which keeps seeded runs reproducible.
"""

from __future__ import annotations

import queue
import time
from collections import defaultdict
from collections.abc import Callable, Generator, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from intbench.agents.base import is_remote
from intbench.envs.flows import Flow, Gather, Generate, Request, RequestExecutor, Verify, batch_key

if TYPE_CHECKING:  # teachers load the model-side modules, which the engine does not need
    from intbench.teachers import Teacher

VERIFY_THREADS = 8
STARTS_PER_ROUND = 8  # programs started before the ready requests go out, so setup stays short
WAIT_S = 0.5  # longest sleep between checks of the episode wall-clock limit
# While slots are still being filled, the loop pauses this long between rounds of
# starts: the threads sending the first requests get the interpreter meanwhile, so
# the first request does not wait until every slot has its env.
START_PAUSE_S = 0.001


@dataclass
class TeacherAct:
    """Ask the teacher for its action in ``slot`` given the env's ``obs`` and ``info``."""

    slot: int
    obs: Any
    info: dict
    seed: int


Program = Generator[Any, Any, Any]


class RequestServer(Protocol):
    """Answers plain requests (no :class:`Gather`) in order, all at once: a
    :class:`~intbench.envs.flows.RequestExecutor`, or a stand-in."""

    def serve(self, requests: list[Request]) -> list[Any]: ...


@dataclass
class _Running:
    """One program in a slot; ``serial`` tells a reused slot's programs apart."""

    program: Program
    serial: int
    started: float


class Engine:
    """Run programs in ``slots`` slots until ``next_program`` has no more.

    ``next_program(slot)`` returns a new program for a free slot, or ``None``
    when there is nothing left to start; ``on_done(slot, value)`` receives what
    a program returned; ``on_overdue(slot)`` is called for a program still
    running ``limit_s`` seconds after it started (it is then dropped).

    Continuous by default, which needs a :class:`RequestExecutor` (it sends model
    calls and gradings itself); with ``rounds=True`` any :class:`RequestServer`
    answers each round's requests (see the module's docstring).
    """

    def __init__(
        self,
        executor: RequestExecutor | RequestServer,
        teacher: Teacher | None,
        slots: int,
        on_batch: Callable[[str, int], None] | None = None,
        rounds: bool = False,
    ):
        """``on_batch(role, n)`` hears of every batch of ``n`` model calls sent (for progress)."""
        self.executor = executor
        self.teacher = teacher
        self.slots = slots
        self.on_batch = on_batch
        self.rounds = rounds
        self._pools: dict[str, ThreadPoolExecutor] = {}
        self._local_busy: Future | None = None
        self._teacher_busy: Future | None = None
        # Finished futures arrive here, so the loop takes each answer in O(1)
        # instead of polling every request in flight.
        self._done: queue.SimpleQueue[Future] = queue.SimpleQueue()

    def _pool(self, name: str) -> ThreadPoolExecutor:
        """The continuous mode's worker pools, started on first use."""
        if name not in self._pools:
            workers = {"grade": VERIFY_THREADS, "remote": max(self.slots, 1), "local": 1}[name]
            self._pools[name] = ThreadPoolExecutor(workers, thread_name_prefix=f"intbench-{name}")
        return self._pools[name]

    def close(self) -> None:
        for pool in self._pools.values():
            pool.shutdown(wait=False, cancel_futures=True)

    # ------------------------------------------------------------------ loop
    def run(
        self,
        next_program: Callable[[int], Program | None],
        on_done: Callable[[int, Any], None],
        on_overdue: Callable[[int], None] | None = None,
        limit_s: float | None = None,
    ) -> None:
        running: dict[int, _Running] = {}
        # (slot, part) -> a request not yet sent; part: its place in the slot's
        # Gather, None for a plain request.
        ready: dict[tuple[int, int | None], Any] = {}
        gathering: dict[int, tuple[list, set[int]]] = {}  # slot -> (answers, parts awaited)
        # future -> the (slot, serial, part) of each request it answers
        in_flight: dict[Future, list[tuple[int, int, int | None]]] = {}
        serials = iter(range(1 << 62))
        exhausted = False

        def advance(slot: int, answer: Any, first: bool = False) -> None:
            state = running[slot]
            try:
                request = next(state.program) if first else state.program.send(answer)
            except StopIteration as stop:
                del running[slot]
                on_done(slot, stop.value)
                return
            if isinstance(request, Gather):
                parts = request.requests
                gathering[slot] = ([None] * len(parts), set(range(len(parts))))
                ready.update(((slot, part), sub) for part, sub in enumerate(parts))
            else:
                ready[(slot, None)] = request

        def receive(slot: int, part: int | None, answer: Any) -> None:
            if part is None:
                advance(slot, answer)
                return
            answers, awaited = gathering[slot]
            answers[part] = answer
            awaited.discard(part)
            if not awaited:
                del gathering[slot]
                advance(slot, answers)

        while True:
            if not exhausted:
                exhausted = self._start(next_program, running, serials, advance)
            if not running:
                return
            if self.rounds:
                self._serve_round(ready, receive)
                continue
            starting = not exhausted and len(running) < self.slots
            self._dispatch(ready, running, in_flight, hold_local=starting)
            if in_flight:
                # Slots still to fill: only a short look at what is done, then start more.
                self._answer(in_flight, running, receive, START_PAUSE_S if starting else WAIT_S)
            if limit_s is not None:
                _drop_overdue(running, ready, gathering, limit_s, on_overdue)

    def _start(self, next_program, running: dict, serials: Iterator[int], advance) -> bool:
        """Start programs in free slots, a few per round (all at once in rounds, so the
        first round holds every program's request); whether none are left to start."""
        free = [slot for slot in range(self.slots) if slot not in running]
        for slot in free if self.rounds else free[:STARTS_PER_ROUND]:
            program = next_program(slot)
            if program is None:
                return True
            running[slot] = _Running(program, next(serials), time.monotonic())
            advance(slot, None, first=True)
        return False

    def _answer(self, in_flight: dict, running: dict, receive, timeout: float) -> None:
        """Hand what is done within ``timeout`` to the programs still waiting for it."""
        for future in self._finished(timeout=timeout):
            owners = in_flight.pop(future, None)
            if owners is None:  # a previous run's request
                continue
            answers = future.result()
            for (slot, serial, part), answer in zip(owners, answers, strict=True):
                state = running.get(slot)
                if state is not None and state.serial == serial:  # not dropped meanwhile
                    receive(slot, part, answer)

    def _finished(self, timeout: float) -> list[Future]:
        """The futures done by now, waiting up to ``timeout`` seconds for the first."""
        try:
            first = self._done.get(timeout=timeout)
        except queue.Empty:
            return []
        finished = [first]
        while True:
            try:
                finished.append(self._done.get_nowait())
            except queue.Empty:
                return finished

    def _track(self, in_flight: dict, future: Future, owners: list[tuple]) -> None:
        in_flight[future] = owners
        future.add_done_callback(self._done.put)

    # -------------------------------------------------------------- dispatch
    def _dispatch(self, ready: dict, running: dict, in_flight: dict, hold_local: bool) -> None:
        """Send every ready request that can go now; the rest wait for a free worker.

        ``hold_local``: slots are still being filled, so a local model waits for
        their first requests too and gets them as one batch.
        """
        if self._local_busy is not None and self._local_busy.done():
            self._local_busy = None
        if self._teacher_busy is not None and self._teacher_busy.done():
            self._teacher_busy = None
        owner = {key: (key[0], running[key[0]].serial, key[1]) for key in ready}
        generations: dict[tuple, list[tuple]] = defaultdict(list)
        acts: list[tuple] = []
        for key, request in list(ready.items()):
            if isinstance(request, Verify):
                future: Future = self._pool("grade").submit(self._executor.verify, [request])
                self._track(in_flight, future, [owner[key]])
                del ready[key]
            elif isinstance(request, Generate):
                generations[batch_key(request)].append(key)
            elif isinstance(request, TeacherAct):
                acts.append(key)
            else:
                raise TypeError(f"an episode yielded {type(request).__name__}")
        for keys in generations.values():
            self._dispatch_generations(keys, ready, owner, in_flight, hold_local)
        if acts:
            self._dispatch_acts(acts, ready, owner, in_flight)

    def _dispatch_generations(
        self, keys: list[tuple], ready: dict, owner: dict, in_flight: dict, hold_local: bool
    ) -> None:
        """Send the generations of ``keys`` (one role and sampling) as one batch, unless
        they are for a local model that is busy or waits for the slots to fill."""
        role = ready[keys[0]].role
        remote = is_remote(self._executor.backends.get(role))
        if not remote and (self._local_busy is not None or hold_local):
            return  # batched with what arrives meanwhile, once the worker is free
        batch = [ready.pop(key) for key in keys]
        if self.on_batch is not None:
            self.on_batch(role, len(batch))
        future = self._pool("remote" if remote else "local").submit(self._executor.generate, batch)
        self._track(in_flight, future, [owner[key] for key in keys])
        if not remote:
            self._local_busy = future

    def _dispatch_acts(self, keys: list[tuple], ready: dict, owner: dict, in_flight: dict) -> None:
        backend = self._teacher.backend
        if backend is None:  # decisions made in Python (a policy, a replay): decide now
            requests = [ready.pop(key) for key in keys]
            future: Future = Future()
            future.set_result(self._act(requests))
            self._track(in_flight, future, [owner[key] for key in keys])
            return
        if self._teacher_busy is not None:
            return
        remote = is_remote(backend)
        if not remote and self._local_busy is not None:
            return
        requests = [ready.pop(key) for key in keys]
        future = self._pool("remote" if remote else "local").submit(self._act, requests)
        self._track(in_flight, future, [owner[key] for key in keys])
        self._teacher_busy = future
        if not remote:
            self._local_busy = future

    def _serve_round(self, ready: dict, receive: Callable) -> None:
        """Rounds: answer every ready request now, the teacher's decisions by the teacher
        and the rest by one ``serve`` call, and hand the answers back in request order."""
        keys = list(ready)
        requests = list(ready.values())
        ready.clear()
        acts = [i for i, request in enumerate(requests) if isinstance(request, TeacherAct)]
        if acts:
            answers = self._serve_with_acts(requests, acts)
        else:
            answers = self.executor.serve(requests)
        for (slot, part), answer in zip(keys, answers, strict=True):
            receive(slot, part, answer)

    def _serve_with_acts(self, requests: list, acts: list[int]) -> list[Any]:
        answers: list[Any] = [None] * len(requests)
        for i, action in zip(acts, self._act([requests[i] for i in acts]), strict=True):
            answers[i] = action
        acting = set(acts)
        plain = [i for i in range(len(requests)) if i not in acting]
        for i, answer in zip(plain, self.executor.serve([requests[i] for i in plain]), strict=True):
            answers[i] = answer
        return answers

    @property
    def _executor(self) -> RequestExecutor:
        """The continuous mode's executor (it calls ``generate``, ``verify``, ``backends``)."""
        assert isinstance(self.executor, RequestExecutor), "continuous mode needs a RequestExecutor"
        return self.executor

    @property
    def _teacher(self) -> Teacher:
        if self.teacher is None:
            raise TypeError("a program asked for a teacher decision, but the engine has no teacher")
        return self.teacher

    def _act(self, requests: list[TeacherAct]) -> list[Any]:
        return self._teacher.act(
            [r.slot for r in requests],
            [(r.obs, r.info) for r in requests],
            [r.seed for r in requests],
        )


def _drop_overdue(
    running: dict,
    ready: dict,
    gathering: dict,
    limit_s: float,
    on_overdue: Callable[[int], None] | None,
) -> None:
    """Drop the programs running longer than ``limit_s`` seconds, telling ``on_overdue``."""
    now = time.monotonic()
    for slot in [s for s, r in running.items() if now - r.started > limit_s]:
        del running[slot]
        gathering.pop(slot, None)
        for key in [key for key in ready if key[0] == slot]:
            del ready[key]
        if on_overdue is not None:
            on_overdue(slot)


def episode_program(
    env: Any, reset_seed: int, reset_options: dict, seeds: Iterator[int], slot: int
) -> Program:
    """One episode of ``env``: reset, then teacher decisions and steps until it ends.

    Returns the env's episode record.
    """
    obs, info = yield from env.reset_flow(seed=reset_seed, options=reset_options)
    while True:
        action = yield TeacherAct(slot, obs, info, next(seeds))
        obs, _, terminated, truncated, info = yield from env.step_flow(action)
        if terminated or truncated:
            return env.last_episode


def run_flows(flows: list[Flow], server: RequestServer) -> list[Any]:
    """Run ``flows`` together, in rounds served by ``server`` -> their return values."""
    results: list[Any] = [None] * len(flows)
    waiting: list[tuple[int, Program]] = []
    for index, flow in enumerate(flows):
        # Most env steps (a wait, a cached baseline) need no request: no engine for them.
        try:
            waiting.append((index, _resumed(flow, next(flow))))
        except StopIteration as stop:
            results[index] = stop.value
    if waiting:
        programs = iter(program for _, program in waiting)

        def done(slot: int, value: Any) -> None:  # slot i runs the i-th waiting flow
            results[waiting[slot][0]] = value

        Engine(server, None, len(waiting), rounds=True).run(lambda _: next(programs, None), done)
    return results


def _resumed(flow: Flow, request: Any) -> Program:
    """``flow``, already started and waiting on ``request``, as a program."""
    while True:
        answer = yield request
        try:
            request = flow.send(answer)
        except StopIteration as stop:
            return stop.value


def run_flow(flow: Flow, server: RequestServer) -> Any:
    """Run one flow to completion -> its return value."""
    return run_flows([flow], server)[0]
