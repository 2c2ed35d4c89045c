"""Does a teacher message give the answer away?

A message leaks when the answer can be read out of it without solving the
problem: some candidate read from the message (a span, a number written in
words, a grid in any encoding, a program run on held-out tests) is accepted
by the domain's own verifier.  Each domain names its detector as
``Domain.leak_check`` in its module; a domain that names none gets its
kind's detector (:data:`KIND_LEAK_CHECKS`).

A detector answers with a :data:`LeakVerdict`: ``"leaked"`` (positive
evidence: a candidate the verifier accepted), ``"clean"`` (every candidate
was checked and rejected) or ``"undetermined"`` (a check could not finish,
such as a verifier timeout on a power tower).  The rewards treat an
undetermined message as waiting: never a penalty, never more.  A plugin
detector may still return a bool (``True`` is ``"leaked"``).

:func:`leak_verdict` is the one entry point; :func:`answer_leaked` is its
``== "leaked"`` for callers that need a flag (intervention categorisation,
the SFT filters).  Every detector reads the whole message (a leak anywhere
counts) in time linear in its length (``benchmarks/leak_detector_cost.py``).
"""

from __future__ import annotations

from intbench.envs.domains import registry
from intbench.records import Problem
from intbench.verifiers.leakage.code import code_leaked
from intbench.verifiers.leakage.grid import grid_leaked
from intbench.verifiers.leakage.text import text_leaked
from intbench.verifiers.leakage.verdicts import LEAK_VERDICTS, LeakVerdict, as_verdict

KIND_LEAK_CHECKS = {"text": text_leaked, "code": code_leaked, "grid": grid_leaked}
"""The leak check of each domain kind, for domains that set no ``leak_check``."""


def leak_verdict(problem: Problem, message: str | None) -> LeakVerdict:
    """Whether ``message`` reveals ``problem``'s reference answer or solution.

    Raises:
        ValueError: ``problem.domain`` is not registered.
    """
    domain = registry.get_domain(problem.domain)
    if not message:
        return "clean"
    if domain.leak_check is not None:
        return as_verdict(registry.resolve(domain.leak_check)(problem, message))
    return as_verdict(KIND_LEAK_CHECKS[domain.kind](problem, message))


def answer_leaked(problem: Problem, message: str | None) -> bool:
    """Whether ``message`` certainly reveals the answer (:func:`leak_verdict` is ``"leaked"``)."""
    return leak_verdict(problem, message) == "leaked"


__all__ = [
    "KIND_LEAK_CHECKS",
    "LEAK_VERDICTS",
    "LeakVerdict",
    "answer_leaked",
    "as_verdict",
    "leak_verdict",
]
