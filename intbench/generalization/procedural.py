"""Exact variants for procedurally generated problems, without any model.

:func:`intbench.envs.domains.generators.make_variant` redraws a problem's
parameters from the same generator and skill.  This module asks it for
``n`` variants per problem, then checks what the LLM pipeline can only ask a
validator about: the skill label is unchanged, the reference answer passes
the domain's own verifier against the problem recomputed from its stored
parameters, and the original's answer does not also answer the variant
(:mod:`.answers`).  A variant that fails a check is dropped and the reason recorded; generator errors (a parameter draw that cannot produce a new
question) are recorded the same way.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from intbench.envs.domains import registry
from intbench.envs.domains.generators import make_variant, rebuild
from intbench.generalization.answers import SHARED_ANSWER, shares_answer
from intbench.records import Problem
from intbench.verifiers import verify

# The first seed of variant k is k * SEED_STRIDE + seed, so variant sets made
# with different base seeds (< SEED_STRIDE apart) never share a draw.
SEED_STRIDE = 1_000


def procedural_domains() -> tuple[str, ...]:
    """Domains whose offline generator can make exact variants."""
    return tuple(d.name for d in registry.domains() if d.procedural_variants is not None)


def reference_response(problem: Problem) -> str:
    """A response that states the problem's reference answer in the domain's answer format.

    Raises:
        ValueError: the domain has no procedural variants.
    """
    variants = registry.get_domain(problem.domain).procedural_variants
    if variants is None:
        raise ValueError(f"domain {problem.domain!r} has no procedural variants")
    return registry.resolve(variants.reference_response)(problem)


def is_procedural(problem: Problem) -> bool:
    """True for problems the offline generators can vary: those they made (they carry
    their parameters), and any problem of a domain whose variants need none
    (``ProceduralVariants.any_problem``, e.g. ARC)."""
    variants = registry.get_domain(problem.domain).procedural_variants
    if variants is None:
        return False
    return variants.any_problem or isinstance((problem.fields or {}).get("params"), dict)


@dataclass
class ProceduralResult:
    """Kept variants and one log entry per dropped variant or generator failure."""

    variants: list[Problem]
    log: list[dict] = field(default_factory=list)

    def to_dict(self) -> dict:
        return {"problems": self.log}


def check_variant(original: Problem, variant: Problem) -> str | None:
    """Why ``variant`` is not an exact variant of ``original``, or ``None`` if it is."""
    if variant.metadata.get("skill") != original.metadata.get("skill"):
        return f"skill changed: {original.metadata.get('skill')!r} -> {variant.metadata.get('skill')!r}"
    if variant.question == original.question:
        return "same question as the original"
    # The stated answer is checked against a problem recomputed from the stored
    # parameters, so a wrong answer cannot pass by being compared with itself.
    try:
        rebuilt = rebuild(variant)
    except Exception as exc:  # parameters the generator cannot replay
        return f"cannot rebuild from its parameters: {type(exc).__name__}: {exc}"
    verdict = verify(rebuilt, reference_response(variant))
    if not verdict.correct:
        return f"reference answer fails the verifier ({verdict.status}: {verdict.feedback})"
    if shares_answer(original, variant):
        return SHARED_ANSWER
    return None


def procedural_variants(problems: list[Problem], n: int, seed: int = 0) -> ProceduralResult:
    """``n`` checked variants per generated problem (fewer where a check fails).

    Deterministic in ``(problems, n, seed)``.

    Raises:
        ValueError: ``n`` is not a positive integer, or a problem was not made
            by the offline generators (use the LLM pipeline for it).
    """
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise ValueError(f"n must be a positive integer, got {n!r}")
    if n > SEED_STRIDE:
        raise ValueError(f"n must be at most {SEED_STRIDE}, got {n}")
    foreign = [p.id for p in problems if not is_procedural(p)]
    if foreign:
        raise ValueError(
            f"{len(foreign)} problem(s) were not made by the offline generators "
            f"(e.g. {foreign[0]!r}); procedural variants exist for {list(procedural_domains())} "
            "offline problems only, use the LLM pipeline (--model) for others"
        )
    result = ProceduralResult([])
    for problem in problems:
        dropped: list[dict] = []
        for k in range(n):
            variant_seed = k * SEED_STRIDE + seed
            try:
                variant = make_variant(problem, variant_seed)
            except Exception as exc:  # generator give-ups are recorded, not fatal
                dropped.append({"seed": variant_seed, "reason": f"{type(exc).__name__}: {exc}"})
                continue
            reason = check_variant(problem, variant)
            if reason:
                dropped.append({"seed": variant_seed, "reason": reason})
            else:
                result.variants.append(variant)
        skill = problem.metadata.get("skill")
        result.log.append({"problem_id": problem.id, "skill": skill, "dropped": dropped})
    return result
