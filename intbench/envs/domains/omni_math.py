"""Olympiad math: Omni-MATH on the hub, harder procedural problems offline.

Two hub sets, both mapped by :func:`row_to_problem`:

* split ``test``: the full ``KbsdJames/Omni-MATH`` (its only split, ``test``,
  4,428 rows; checked against the dataset card): ``domain`` (list of strings
  such as ``"Mathematics -> Algebra -> ..."``), ``difficulty`` (float 1-10),
  ``problem``, ``solution``, ``answer``, ``source`` (competition).
* split ``paper``: the feedback paper's evaluation set.  Its code loads
  ``LLParallax/Omni-MATH-filtered`` (split ``train``) and holds out 512
  problems by a seeded split over problem ids (seed 0); the paper's Table 2
  runs 512 Omni-MATH episodes.  The columns used are the ones that code reads
  (``problem``, ``answer``, ``solution``, ``source``, ``difficulty``); ``domain``
  is optional.  See :func:`paper_heldout` for the selection.

``split=None`` loads both sets, which overlap: name the one you want.

Every problem carries ``metadata["problem_id"]``: ``"problem_"`` and the first 16
hex digits of the SHA-1 of its whitespace-normalised statement, the feedback
code's problem id.  Problems of the ``paper`` split use it in their id
(``omni_math/paper/problem_...``), so those ids do not depend on row order.
"""

from __future__ import annotations

import dataclasses
import hashlib
from collections.abc import Iterable

from intbench.envs.domains.base import (
    BUILTIN_TEMPLATES,
    DataSourceError,
    HubRef,
    HubSubset,
    as_list,
    hub_provenance,
    procedural_n,
    require,
)
from intbench.envs.domains.math import boxed_math_domain, math_row_problem
from intbench.records import Problem

HUB_ID = "KbsdJames/Omni-MATH"
FILTERED_HUB_ID = "LLParallax/Omni-MATH-filtered"
LICENSE = "Apache-2.0"
PAPER_SPLIT = "paper"
PAPER_HELDOUT_SIZE = 512
PAPER_SPLIT_SEED = 0


def problem_key(statement: str) -> str:
    """The feedback code's problem id: stable across machines and row orders
    (a SHA-1 of the statement with runs of whitespace made single spaces)."""
    normalised = " ".join(str(statement).split())
    return "problem_" + hashlib.sha1(normalised.encode("utf-8")).hexdigest()[:16]


def heldout_keys(
    keys: Iterable[str], size: int = PAPER_HELDOUT_SIZE, seed: int = PAPER_SPLIT_SEED
) -> set[str]:
    """The ``size`` problem ids held out from ``keys``, as the feedback code picks them.

    The distinct ids are sorted (so row order and duplicates do not matter),
    permuted by ``numpy.random.default_rng(seed)`` and the first ``size`` taken.
    NumPy's default generator (PCG64) gives the same permutation on every
    platform; a test pins it.
    """
    import numpy as np

    unique = sorted(set(keys))
    if not 0 < size < len(unique):
        raise DataSourceError(
            f"a held-out split of {size} problems needs more than {size} distinct problems; "
            f"got {len(unique)}"
        )
    permuted = np.random.default_rng(seed).permutation(unique)
    return {str(key) for key in permuted[:size]}


def paper_heldout(
    problems: list[Problem], size: int = PAPER_HELDOUT_SIZE, seed: int = PAPER_SPLIT_SEED
) -> list[Problem]:
    """The held-out problems of ``problems`` (see :func:`heldout_keys`), in their order.

    Every row of a held-out statement is kept, as in the feedback code; a repeated
    id gets a ``~2``, ``~3``... suffix so that ids stay unique.  Apply it to a local
    copy of the filtered set: ``paper_heldout(load_problems("omni_math", source=PATH))``.
    """
    chosen = heldout_keys((p.metadata["problem_id"] for p in problems), size, seed)
    kept: list[Problem] = []
    seen: dict[str, int] = {}
    for problem in problems:
        if problem.metadata["problem_id"] not in chosen:
            continue
        seen[problem.id] = seen.get(problem.id, 0) + 1
        if seen[problem.id] > 1:
            problem = dataclasses.replace(problem, id=f"{problem.id}~{seen[problem.id]}")
        kept.append(problem)
    return kept


def _difficulty(value):
    if value is None:
        return None
    try:
        return float(value)
    except (TypeError, ValueError):
        return value  # a label the card does not promise to be numeric: keep it as is


def _domains(value) -> list:
    if isinstance(value, str) and not value.lstrip().startswith("["):
        return [value]  # one plain label rather than a JSON list
    return as_list(value)


def row_to_problem(row: dict, split: str, index: int) -> Problem:
    """Map an Omni-MATH row to a Problem; ``difficulty`` stays a float."""
    require(row, "problem", "answer")
    key = problem_key(row["problem"])
    metadata = hub_provenance(
        FILTERED_HUB_ID if split == PAPER_SPLIT else HUB_ID,
        split,
        LICENSE,
        difficulty=_difficulty(row.get("difficulty")),
        domain=_domains(row.get("domain")),
        competition=row.get("source"),
        problem_id=key,
    )
    local_id = f"{split}/{key}" if split == PAPER_SPLIT else f"{split}/{index}"
    return math_row_problem("omni_math", local_id, row, metadata)


def load_offline(split: str, n: int | None, seed: int) -> list[Problem]:
    """Procedural olympiad-style problems from the generators package."""
    from intbench.envs.domains.generators import generate_omni_math

    return generate_omni_math(procedural_n(n), seed=seed, split=split)


OMNI_MATH_FORMAT = "End with exactly one final line in this format:\n\\boxed{your answer}"
"""Feedback paper App. A.8, the Omni-MATH student prompts' last sentence, verbatim."""

DOMAIN = boxed_math_domain(
    answer_format=OMNI_MATH_FORMAT,
    name="omni_math",
    env_name="OmniMath",
    description="olympiad-level math (Omni-MATH), LaTeX final answers",
    templates=BUILTIN_TEMPLATES / "omni_math",
    hub={
        "test": HubRef(HUB_ID, "test"),
        PAPER_SPLIT: HubSubset(
            FILTERED_HUB_ID,
            "train",
            select=paper_heldout,
            note=f"the {PAPER_HELDOUT_SIZE} held out by problem id (seed {PAPER_SPLIT_SEED})",
        ),
    },
    row_to_problem=row_to_problem,
    offline_loader=load_offline,
    offline_splits=("test", "train"),
    offline_source="procedural olympiad-style generator (intbench-procedural)",
    license=LICENSE,
)
