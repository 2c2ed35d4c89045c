"""Procedural offline problem generators (no network, no data files).

``generate_math``, ``generate_omni_math`` and ``generate_linguini`` return
:class:`~intbench.records.Problem` lists that are deterministic in
``(n, seed, split)``; the train, validation and test streams never share a
question.  ``make_variant`` draws a new problem of the same skill for
generalization studies, and ``rebuild`` regenerates a problem from its
``fields["params"]``.
"""

from __future__ import annotations

from intbench.envs.domains.generators.linguini_puzzles import (
    generate_linguini,
    make_linguini_variant,
    rebuild_linguini,
)
from intbench.envs.domains.generators.math_problems import (
    SKILLS,
    SPLITS,
    DegenerateProblem,
    GeneratorError,
    generate_math,
    generate_omni_math,
    make_math_variant,
    rebuild_math,
)
from intbench.records import Problem

GENERATORS = {
    "math": generate_math,
    "omni_math": generate_omni_math,
    "linguini": generate_linguini,
}
"""Generator function by domain, for loaders that take ``source="offline"``."""


def make_variant(problem: Problem, seed: int) -> Problem:
    """A new problem from the same generator and skill with fresh parameters.

    The variant has id ``<problem.id>/variant/<seed>``, the same
    ``metadata["skill"]`` and level, a different question, and an answer that
    passed the generator's own checks.  Deterministic in ``(problem, seed)``.

    Raises:
        ValueError: ``problem`` was not made by these generators.
    """
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise ValueError(f"seed must be an int, got {seed!r}")
    if problem.domain in ("math", "omni_math"):
        return make_math_variant(problem, seed)
    if problem.domain == "linguini":
        return make_linguini_variant(problem, seed)
    raise ValueError(f"no procedural generator for domain {problem.domain!r}")


def rebuild(problem: Problem) -> Problem:
    """Regenerate a generated problem from ``fields["params"]`` (equal to the original)."""
    if problem.domain == "linguini":
        return rebuild_linguini(problem)
    return rebuild_math(problem)


__all__ = [
    "GENERATORS",
    "SKILLS",
    "SPLITS",
    "DegenerateProblem",
    "GeneratorError",
    "generate_linguini",
    "generate_math",
    "generate_omni_math",
    "make_variant",
    "rebuild",
]
