"""Verifiers: one entry point, :func:`verify`, dispatching on the problem's domain.

No verifier raises to its caller: a grader that crashes or times out yields a
``Verdict`` with ``status="error"``, which metrics count separately from wrong
answers.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from intbench.records import Problem, Verdict

logger = logging.getLogger(__name__)

VerifierFn = Callable[[Problem, str], Verdict]

# Filled lazily so that importing intbench does not import sympy, the sandbox, ...
_DOMAIN_VERIFIERS: dict[str, str] = {
    "math": "intbench.verifiers.math:verify_math",
    "omni_math": "intbench.verifiers.math:verify_math",
    "codeforces": "intbench.verifiers.code:verify_code",
    "debug": "intbench.verifiers.code:verify_code",
    "linguini": "intbench.verifiers.text:verify_text",
    "arc": "intbench.verifiers.arc:verify_arc",
    "brainteaser": "intbench.verifiers.judge:verify_with_fallback",
}


def get_verifier(domain: str) -> VerifierFn:
    """Return the verifier function registered for ``domain``."""
    import importlib

    try:
        target = _DOMAIN_VERIFIERS[domain]
    except KeyError:
        raise ValueError(f"no verifier for domain {domain!r}") from None
    module, name = target.split(":")
    return getattr(importlib.import_module(module), name)


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


__all__ = ["verify", "get_verifier", "Verdict"]
