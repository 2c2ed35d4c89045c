"""The grader pool: idle workers serve before new ones start, waits are counted,
the runner sizes the math pool during setup and its workers start when an answer needs one."""

from __future__ import annotations

import os
import threading
import time

from intbench.verifiers.isolation import IsolatedPool


def _in_parallel(pool: IsolatedPool, seconds: float, calls: int) -> float:
    threads = [
        threading.Thread(target=pool.call, args=(time.sleep, seconds), kwargs={"timeout": 30})
        for _ in range(calls)
    ]
    started = time.perf_counter()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return time.perf_counter() - started


def test_an_idle_worker_serves_before_another_starts():
    with IsolatedPool(2) as pool:
        for _ in range(5):
            assert pool.call(divmod, 7, 2, timeout=30) == (3, 1)
        # one call at a time: the first worker, idle and ready, took every call
        assert pool._started == 1 and pool.queued == 0


def test_calls_wait_only_when_every_worker_is_busy():
    with IsolatedPool(1) as pool:
        pool.warm_up()
        _in_parallel(pool, 0.4, 2)
        assert pool.queued == 1 and pool.queue_wait_s >= 0.3
    with IsolatedPool(1) as pool:
        pool.grow(3)
        pool.warm_up()
        assert pool._started == 3
        _in_parallel(pool, 0.4, 3)
        assert pool.queued == 0 and pool.queue_wait_s == 0.0


def test_the_runner_sizes_the_math_pool_and_starts_no_worker_before_one_is_needed(monkeypatch):
    from intbench.records import Problem
    from intbench.runner import _size_grader
    from intbench.verifiers import math as math_verifier

    monkeypatch.delenv("INTBENCH_MATH_WORKERS", raising=False)
    monkeypatch.setattr(math_verifier, "_pool", None)
    monkeypatch.setattr(os, "cpu_count", lambda: 3)
    _size_grader("math", concurrency=64)
    pool = math_verifier.default_pool()
    try:
        assert pool.size == 3  # one per core, not one per episode in flight
        problem = Problem(id="p", domain="math", question="?", answer="7")
        # plain numbers are decided in process: no worker (and no sympy import) yet
        assert math_verifier.verify_math(problem, "\\boxed{-1}").status == "incorrect"
        assert pool.started == 0 and pool.calls == 0
        # an answer only the worker can decide starts one
        assert math_verifier.verify_math(problem, "\\boxed{\\sqrt{49}}").status == "correct"
        assert pool.started == 1 and pool.calls == 1
    finally:
        pool.close()
