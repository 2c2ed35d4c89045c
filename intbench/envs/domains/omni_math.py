"""Olympiad math: Omni-MATH on the hub, harder procedural problems offline.

Hub schema (``KbsdJames/Omni-MATH``, split ``test``, 4,428 rows; checked
against the card of a derived copy with the same features): ``domain`` (list
of strings such as ``"Mathematics -> Algebra -> ..."``), ``difficulty``
(float 1-10), ``problem``, ``solution``, ``answer``, ``source`` (competition).
"""

from __future__ import annotations

from intbench.envs.domains.base import BUILTIN_TEMPLATES, Domain, HubRef, as_list, provenance
from intbench.envs.domains.math import boxed_answer
from intbench.envs.domains.registry import ProceduralVariants
from intbench.records import Problem

HUB_ID = "KbsdJames/Omni-MATH"
LICENSE = "Apache-2.0"


def row_to_problem(row: dict, split: str, index: int) -> Problem:
    """Map an Omni-MATH row to a Problem; ``difficulty`` stays a float."""
    difficulty = row.get("difficulty")
    return Problem(
        id=f"omni_math/{split}/{index}",
        domain="omni_math",
        question=str(row["problem"]),
        answer=str(row["answer"]),
        solution=row.get("solution"),
        metadata=provenance(
            HUB_ID if split != "local" else "local",
            split,
            LICENSE,
            f"https://huggingface.co/datasets/{HUB_ID}",
            difficulty=float(difficulty) if difficulty is not None else None,
            domain=as_list(row.get("domain")),
            competition=row.get("source"),
        ),
    )


def load_offline(split: str, n: int | None, seed: int) -> list[Problem]:
    """Procedural olympiad-style problems from the generators package."""
    from intbench.envs.domains.generators import generate_omni_math

    return generate_omni_math(n, seed=seed, split=split)


DOMAIN = Domain(
    name="omni_math",
    env_name="OmniMath",
    description="olympiad-level math (Omni-MATH), LaTeX final answers",
    kind="text",
    # Feedback paper / Int-Bench math format: the final answer in \boxed{}.
    answer_format="End with exactly one final line containing your answer in the form \\boxed{your answer}.",
    verifier="intbench.verifiers.math:verify_math",
    leak_check="intbench.verifiers.leakage:math_leaked",
    templates=BUILTIN_TEMPLATES / "omni_math",
    hub={"test": HubRef(HUB_ID, "test")},
    row_to_problem=row_to_problem,
    offline_loader=load_offline,
    offline_splits=("test", "train"),
    offline_source="procedural olympiad-style generator (intbench-procedural)",
    procedural=True,
    procedural_variants=ProceduralVariants(
        make_variant="intbench.envs.domains.generators.math_problems:make_math_variant",
        rebuild="intbench.envs.domains.generators.math_problems:rebuild_math",
        reference_response=boxed_answer,
    ),
    license=LICENSE,
)
