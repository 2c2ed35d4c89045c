"""Does a teacher message give the answer away?

A message leaks when some span of it is accepted by the domain's own
verifier as the answer: every number or expression span for math (graded by
the math verifier), the answer or an alias in the text grader's normal form
for short answers, the output grid in any layout for ARC, and the reference
solution's logic for code.  Each domain names its detector as
``Domain.leak_check`` in its module; a domain that names none gets its
kind's detector (:data:`KIND_LEAK_CHECKS`).

:func:`answer_leaked` is the one entry point: the env rewards, the leakage
audit, intervention categorisation, the tutor checker and the SFT filters
all call it.  Every detector reads the whole message (a leak anywhere
counts) in time linear in its length (``benchmarks/leak_detector_cost.py``).
"""

from __future__ import annotations

from intbench.envs.domains import registry
from intbench.records import Problem
from intbench.verifiers.leakage.code import code_leaked
from intbench.verifiers.leakage.grid import grid_leaked
from intbench.verifiers.leakage.text import text_leaked

KIND_LEAK_CHECKS = {"text": text_leaked, "code": code_leaked, "grid": grid_leaked}
"""The leak check of each domain kind, for domains that set no ``leak_check``."""


def answer_leaked(problem: Problem, message: str | None) -> bool:
    """Whether ``message`` reveals ``problem``'s reference answer or solution.

    Raises:
        ValueError: ``problem.domain`` is not registered.
    """
    domain = registry.get_domain(problem.domain)
    if not message:
        return False
    if domain.leak_check is not None:
        return bool(registry.resolve(domain.leak_check)(problem, message))
    return KIND_LEAK_CHECKS[domain.kind](problem, message)
