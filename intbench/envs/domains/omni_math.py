"""Olympiad math: Omni-MATH on the hub, harder procedural problems offline.

Hub schema (``KbsdJames/Omni-MATH``, split ``test``, 4,428 rows; checked
against the card of a derived copy with the same features): ``domain`` (list
of strings such as ``"Mathematics -> Algebra -> ..."``), ``difficulty``
(float 1-10), ``problem``, ``solution``, ``answer``, ``source`` (competition).
"""

from __future__ import annotations

from intbench.envs.domains.base import BUILTIN_TEMPLATES, HubRef, as_list, hub_provenance
from intbench.envs.domains.math import boxed_math_domain, math_row_problem
from intbench.records import Problem

HUB_ID = "KbsdJames/Omni-MATH"
LICENSE = "Apache-2.0"


def row_to_problem(row: dict, split: str, index: int) -> Problem:
    """Map an Omni-MATH row to a Problem; ``difficulty`` stays a float."""
    difficulty = row.get("difficulty")
    metadata = hub_provenance(
        HUB_ID,
        split,
        LICENSE,
        difficulty=float(difficulty) if difficulty is not None else None,
        domain=as_list(row.get("domain")),
        competition=row.get("source"),
    )
    return math_row_problem("omni_math", f"{split}/{index}", row, metadata)


def load_offline(split: str, n: int | None, seed: int) -> list[Problem]:
    """Procedural olympiad-style problems from the generators package."""
    from intbench.envs.domains.generators import generate_omni_math

    return generate_omni_math(n, seed=seed, split=split)


DOMAIN = boxed_math_domain(
    name="omni_math",
    env_name="OmniMath",
    description="olympiad-level math (Omni-MATH), LaTeX final answers",
    templates=BUILTIN_TEMPLATES / "omni_math",
    hub={"test": HubRef(HUB_ID, "test")},
    row_to_problem=row_to_problem,
    offline_loader=load_offline,
    offline_splits=("test", "train"),
    offline_source="procedural olympiad-style generator (intbench-procedural)",
    license=LICENSE,
)
