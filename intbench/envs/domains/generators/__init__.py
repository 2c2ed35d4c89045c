"""Procedural offline problem generators (no network, no data files).

``generate_math``, ``generate_omni_math`` and ``generate_linguini`` return
:class:`~intbench.records.Problem` lists that are deterministic in
``(n, seed, split)``; the train, validation and test streams never share a
question.  ``make_variant`` draws a new problem of the same skill for
generalization studies, and ``rebuild`` regenerates a problem from its
``fields["params"]``; both dispatch on the problem's
``Domain.procedural_variants``, so they serve any registered domain that has them
(ARC's recoloured tasks too: ``make_arc_variant``, ``rebuild_arc``).
"""

from __future__ import annotations

from intbench.envs.domains import registry
from intbench.envs.domains.generators.arc_variants import make_arc_variant, rebuild_arc
from intbench.envs.domains.generators.linguini_puzzles import generate_linguini
from intbench.envs.domains.generators.math_problems import (
    SKILLS,
    SPLITS,
    DegenerateProblem,
    GeneratorError,
    generate_math,
    generate_omni_math,
)
from intbench.envs.domains.registry import ProceduralVariants
from intbench.records import Problem


def _variants_of(problem: Problem) -> ProceduralVariants:
    variants = registry.get_domain(problem.domain).procedural_variants
    if variants is None:
        raise ValueError(f"no procedural generator for domain {problem.domain!r}")
    return variants


def make_variant(problem: Problem, seed: int) -> Problem:
    """A new problem from the same generator and skill with fresh parameters.

    The variant has id ``<problem.id>/variant/<seed>``, the same
    ``metadata["skill"]`` and level, a different question, and an answer that
    passed the generator's own checks.  Deterministic in ``(problem, seed)``.

    Raises:
        ValueError: ``problem``'s domain has no procedural variants.
    """
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise ValueError(f"seed must be an int, got {seed!r}")
    return registry.resolve(_variants_of(problem).make_variant)(problem, seed)


def rebuild(problem: Problem) -> Problem:
    """Regenerate a generated problem from ``fields["params"]`` (equal to the original)."""
    return registry.resolve(_variants_of(problem).rebuild)(problem)


__all__ = [
    "SKILLS",
    "SPLITS",
    "DegenerateProblem",
    "GeneratorError",
    "generate_linguini",
    "generate_math",
    "generate_omni_math",
    "make_arc_variant",
    "make_variant",
    "rebuild",
    "rebuild_arc",
]
