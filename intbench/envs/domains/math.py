"""Competition math: MATH-500 on the hub, procedural problems offline.

Hub schema (``HuggingFaceH4/MATH-500``, split ``test``, checked against the
dataset card/files): ``problem``, ``solution``, ``answer``, ``subject``,
``level`` (int 1-5), ``unique_id`` (e.g. ``"test/precalculus/807.json"``).
"""

from __future__ import annotations

from typing import Any

from intbench.envs.domains.base import (
    BUILTIN_TEMPLATES,
    Domain,
    HubRef,
    hub_provenance,
    procedural_n,
    require,
)
from intbench.envs.domains.registry import EloConfig, ProceduralVariants
from intbench.records import Problem

HUB_ID = "HuggingFaceH4/MATH-500"
LICENSE = "MIT"


def math_row_problem(domain: str, key: str, row: dict, metadata: dict) -> Problem:
    """A Problem of ``domain`` from a row in the MATH columns: ``problem``, the LaTeX
    reference ``answer`` and the worked ``solution``."""
    require(row, "problem", "answer")
    return Problem(
        id=f"{domain}/{key}",
        domain=domain,
        question=str(row["problem"]),
        answer=str(row["answer"]),
        solution=row.get("solution"),
        metadata=metadata,
    )


def row_to_problem(row: dict, split: str, index: int) -> Problem:
    """Map a MATH-500 row to a Problem (``answer`` is the LaTeX reference answer)."""
    uid = str(row.get("unique_id") or index)
    metadata = hub_provenance(
        HUB_ID,
        split,
        LICENSE,
        subject=row.get("subject"),
        level=row.get("level"),
        difficulty=row.get("level"),
        topic=row.get("subject"),
        unique_id=uid,
    )
    return math_row_problem("math", f"{split}/{uid}", row, metadata)


def load_offline(split: str, n: int | None, seed: int) -> list[Problem]:
    """Procedural MATH-style problems from :mod:`intbench.envs.domains.generators`."""
    from intbench.envs.domains.generators import generate_math

    return generate_math(procedural_n(n), seed=seed, split=split)


def boxed_answer(problem: Problem) -> str:
    """The reference answer in the answer format, as a correct response would state it."""
    return f"\\boxed{{{problem.answer}}}"


BOXED_FORMAT = (
    "End with exactly one final line containing your answer in the form \\boxed{your answer}."
)
"""The MATH domain's answer format: the final answer in \\boxed{}."""


def boxed_math_domain(answer_format: str = BOXED_FORMAT, **spec: Any) -> Domain:
    """A competition-math domain: a final answer in \\boxed{}, graded and leak-checked as
    math, and procedural problems with exact variants."""
    return Domain(
        kind="text",
        answer_format=answer_format,
        verifier="intbench.verifiers.math:verify_math",
        leak_check="intbench.verifiers.leakage.math:math_leaked",
        procedural=True,
        procedural_variants=ProceduralVariants(
            make_variant="intbench.envs.domains.generators.math_problems:make_math_variant",
            rebuild="intbench.envs.domains.generators.math_problems:rebuild_math",
            reference_response=boxed_answer,
        ),
        **spec,
    )


DOMAIN = boxed_math_domain(
    name="math",
    env_name="Math",
    description="competition math (MATH-500 style), LaTeX final answers",
    templates=BUILTIN_TEMPLATES / "math",
    hub={"test": HubRef(HUB_ID, "test")},
    row_to_problem=row_to_problem,
    offline_loader=load_offline,
    offline_splits=("test", "train"),
    offline_source="procedural MATH-style generator (intbench-procedural)",
    # KITE App. C.8, math: K=0.8, S=1, ratings in [1, 10], next task 0.75-1.25 above.
    # The paper rates problems on the AoPS scale; a MATH level L is placed at
    # 2.5 + 0.75 (L - 3), i.e. levels 1-5 at 1.0-4.0, and a new student at 2.5
    # (this project's choice: the paper starts from a self-reported level).
    elo=EloConfig(
        k=0.8, scale=1.0, initial=2.5, lower=1.0, upper=10.0, band=(0.75, 1.25), level_step=0.75
    ),
    license=LICENSE,
)
