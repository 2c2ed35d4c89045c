"""Verifiers: one entry point, :func:`verify`, dispatching on the problem's domain.

Each domain names its verifier in the registry (``Domain.verifier``), so
importing this package does not import sympy, the sandbox, ...

No verifier raises to its caller: a grader that crashes or times out yields a
``Verdict`` with ``status="error"``, which metrics count separately from wrong
answers.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from intbench.envs.domains import registry
from intbench.records import Problem, Verdict

logger = logging.getLogger(__name__)

VerifierFn = Callable[[Problem, str], Verdict]


def get_verifier(domain: str) -> VerifierFn:
    """Return the verifier of ``domain`` (its ``Domain.verifier``, imported on first use).

    Raises:
        ValueError: ``domain`` is not registered.
    """
    return registry.resolve(registry.get_domain(domain).verifier)


def verify(problem: Problem, response: str) -> Verdict:
    """Check ``response`` against ``problem``; never raises.

    Non-string responses are converted with ``str``; ``None`` counts as empty.
    """
    try:
        verifier = get_verifier(problem.domain)
        text = "" if response is None else response if isinstance(response, str) else str(response)
        verdict = verifier(problem, text)
        if not isinstance(verdict, Verdict):
            raise TypeError(f"verifier returned {type(verdict).__name__}, not Verdict")
        return verdict
    except Exception as exc:  # a grader bug must not end an episode
        logger.exception("verifier for %s crashed on problem %s", problem.domain, problem.id)
        return Verdict.error(f"grader error: {type(exc).__name__}: {exc}", exception=repr(exc))


def _cache_key(problem: Problem, response: str):
    """What the domain's verifier grades in ``response``, when it says (see :mod:`.memo`)."""
    key_of = getattr(get_verifier(problem.domain), "cache_key", None)
    if key_of is None:
        return None
    text = "" if response is None else response if isinstance(response, str) else str(response)
    try:
        return problem.domain, key_of(problem, text)
    except Exception:  # noqa: BLE001 - no key means "grade it", never a failure
        return None


# A function attribute that intbench.verifiers.memo looks up (mypy does not model them).
verify.cache_key = _cache_key  # type: ignore[attr-defined]


__all__ = ["verify", "get_verifier", "Verdict"]
