"""Verdicts remembered within a run, keyed by what the verifier actually grades.

Many responses end in the same answer (``\\boxed{7}`` after different
reasoning) or repeat a program, and grading them again costs a sympy
subprocess or a sandboxed test run each time.  A verifier that can name what
it grades exposes ``cache_key(problem, text)``: the extracted answers for
math, a hash of the extracted program for code.  Two responses with the same
key get the same verdict, so the memo gives exactly the verdict grading would.

Only decided verdicts (``correct`` / ``incorrect``) are kept: an ``error``
(a timeout, a sandbox failure) may be transient and is graded again.
A verifier without ``cache_key`` (a judge model, a user's function) is
never memoised.
"""

from __future__ import annotations

import copy
import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable

from intbench.cache import stable_hash
from intbench.records import Problem, Verdict

MAX_VERDICTS = 100_000  # a bound on memory for very long runs; old entries go first


class VerdictMemo:
    """A bounded map from (verifier, problem, graded part) to a decided verdict."""

    def __init__(self, max_entries: int = MAX_VERDICTS):
        self.max_entries = max_entries
        self._verdicts: OrderedDict[Hashable, Verdict] = OrderedDict()
        # id(problem) -> (problem, fingerprint); the problem is held so its id is not reused
        self._fingerprints: dict[int, tuple[Problem, str]] = {}
        self.hits = 0
        self.misses = 0
        self._lock = threading.Lock()  # gradings run in several threads

    def key(self, verifier: Callable, problem: Problem, text: str) -> Hashable | None:
        """The memo key of grading ``text`` on ``problem``, or ``None`` when it is not memoised."""
        cache_key = getattr(verifier, "cache_key", None)
        if cache_key is None:
            return None
        graded = cache_key(problem, text)
        if graded is None:
            return None
        return (id(verifier), self._fingerprint(problem), graded)

    def _fingerprint(self, problem: Problem) -> str:
        # The reference and the tests decide a verdict, not just the id.
        with self._lock:
            known = self._fingerprints.get(id(problem))
        if known is None or known[0] is not problem:
            known = (problem, stable_hash(problem.id, problem.answer, problem.tests))
            with self._lock:
                self._fingerprints[id(problem)] = known
        return known[1]

    def get(self, key: Hashable | None) -> Verdict | None:
        if key is None:
            return None
        with self._lock:
            verdict = self._verdicts.get(key)
            if verdict is None:
                self.misses += 1
                return None
            self.hits += 1
            self._verdicts.move_to_end(key)
        return copy.deepcopy(verdict)  # records may be edited later; the memo's copy is not

    def put(self, key: Hashable | None, verdict: Verdict) -> None:
        if key is None or verdict.status not in ("correct", "incorrect"):
            return
        kept = copy.deepcopy(verdict)
        with self._lock:
            self._verdicts[key] = kept
            if len(self._verdicts) > self.max_entries:
                self._verdicts.popitem(last=False)
