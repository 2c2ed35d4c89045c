"""Brain teasers: Braingle puzzles on the hub, ``pyriddle`` riddles offline.

Hub: the Braingle-derived BRAINTEASER set of "Creativity or Brute Force?"
(``ChenLiu1996/Brainteaser``) is gated and its card shows no schema, so the
columns are NOT confirmed.  The mapper accepts Braingle-style rows: the
statement in ``question``/``content``/``problem`` (with an optional
``title``), the short answer in ``answer`` (else ``solution``), a worked
explanation in ``solution``/``explanation`` and optional ``aliases``.

Offline: the 386 riddle -> answer pairs of ``pyriddle`` (MIT).
"""

from __future__ import annotations

from intbench.envs.domains.base import (
    BUILTIN_TEMPLATES,
    Domain,
    HubRef,
    as_list,
    hub_provenance,
    provenance,
)
from intbench.records import Problem

HUB_ID = "ChenLiu1996/Brainteaser"
PYRIDDLE_LICENSE = "MIT"
PYRIDDLE_URL = "https://pypi.org/project/pyriddle/"
# A short final "Answer:" line that the judge and the text-match fallback read.
ANSWER_FORMAT = (
    'End with a final line of the form "Answer: your answer", stating the answer briefly.'
)


def _first(row: dict, *keys: str):
    for key in keys:
        if row.get(key) not in (None, ""):
            return row[key]
    raise KeyError(f"none of the columns {list(keys)}")


def row_to_problem(row: dict, split: str, index: int) -> Problem:
    """Map a Braingle-style row to a Problem (column names are tolerant, see module doc)."""
    statement = str(_first(row, "question", "content", "problem"))
    if row.get("title"):
        statement = f"{row['title']}\n\n{statement}"
    answer = str(_first(row, "answer", "solution"))
    explanation = row.get("solution") if row.get("answer") else row.get("explanation")
    return Problem(
        id=f"brainteaser/{split}/{row.get('id', index)}",
        domain="brainteaser",
        question=statement,
        answer=answer,
        solution=explanation,
        fields={"aliases": [str(a) for a in as_list(row.get("aliases"))]},
        metadata=hub_provenance(
            HUB_ID,
            split,
            "see dataset card",
            category=row.get("category"),
            difficulty=row.get("difficulty"),
        ),
    )


def load_offline(split: str, n: int | None, seed: int) -> list[Problem]:
    """All 386 ``pyriddle`` riddles in the package's order; extra answers become aliases."""
    from pyriddle.data import data

    return [
        Problem(
            id=f"brainteaser/pyriddle/{index}",
            domain="brainteaser",
            question=question,
            answer=answers[0],
            fields={"aliases": list(answers[1:])},
            metadata=provenance("pyriddle", split, PYRIDDLE_LICENSE, PYRIDDLE_URL),
        )
        for index, (question, answers) in enumerate(data.items())
    ]


DOMAIN = Domain(
    name="brainteaser",
    env_name="BrainTeaser",
    description="brain teasers and riddles with short answers",
    kind="text",
    answer_format=ANSWER_FORMAT,
    verifier="intbench.verifiers.judge:verify_with_fallback",
    templates=BUILTIN_TEMPLATES / "brainteaser",
    hub={"train": HubRef(HUB_ID, "train")},
    row_to_problem=row_to_problem,
    offline_loader=load_offline,
    offline_splits=("test",),
    offline_source="riddles from the pyriddle package (386)",
    license="see dataset card (gated)",
    hub_schema_confirmed=False,
)
