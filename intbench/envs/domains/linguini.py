"""BBEH Linguini: linguistic reasoning puzzles; invented-language puzzles offline.

Hub schema (``BBEH/bbeh``, split ``train``, one row per example of every BIG-Bench
Extra Hard task; checked against the dataset card): ``input`` (the puzzle text),
``target`` (the answer), ``task`` (``"linguini"`` for this task) and ``mini``
(bool: the example is in BBEH's mini subset).  Rows of other tasks are
skipped, as the feedback paper filters BBEH to Linguini; local files may omit
``task`` and ``mini``.  Upstream: github.com/google-deepmind/bbeh
(``bbeh_linguini``, ``{"examples": [{"input", "target"}]}``).
"""

from __future__ import annotations

from intbench.envs.domains.base import (
    BUILTIN_TEMPLATES,
    Domain,
    HubRef,
    SkipRow,
    hub_provenance,
    procedural_n,
    require,
)
from intbench.envs.domains.registry import ProceduralVariants
from intbench.records import Problem

HUB_ID = "BBEH/bbeh"
LICENSE = "Apache-2.0"
TASK_NAMES = {"linguini", "bbeh_linguini"}


def row_to_problem(row: dict, split: str, index: int) -> Problem:
    """Map a BBEH row (``input`` puzzle text, ``target`` answer) to a Problem."""
    task = row.get("task")
    if task is not None and str(task).lower() not in TASK_NAMES:
        raise SkipRow(f"BBEH task {task!r}")
    require(row, "input", "target")
    mini = row.get("mini")
    if isinstance(mini, str):  # CSV exports write booleans as text
        mini = mini.strip().lower() in {"true", "1", "yes"}
    return Problem(
        id=f"linguini/{split}/{index}",
        domain="linguini",
        question=str(row["input"]),
        answer=str(row["target"]),
        metadata=hub_provenance(
            HUB_ID,
            split,
            LICENSE,
            "https://github.com/google-deepmind/bbeh",
            task="bbeh_linguini",
            mini=bool(mini) if mini is not None else None,
        ),
    )


def load_offline(split: str, n: int | None, seed: int) -> list[Problem]:
    """Procedural invented-language translation puzzles."""
    from intbench.envs.domains.generators import generate_linguini

    return generate_linguini(procedural_n(n), seed=seed, split=split)


def answer_line(problem: Problem) -> str:
    """The reference answer in the answer format, as a correct response would state it."""
    return f"Answer: {problem.answer}"


DOMAIN = Domain(
    name="linguini",
    env_name="Linguini",
    description="BBEH Linguini linguistic puzzles (translation / rule induction)",
    kind="text",
    # BBEH Linguini: the feedback paper's code asks for <answer>...</answer>; IntBench uses a
    # final "Answer:" line instead because the text verifier reads that line.
    answer_format=(
        "Give only the answer (for example the translated sentence) on a final line "
        'of the form "Answer: your answer".'
    ),
    verifier="intbench.verifiers.text:verify_text",
    leak_check="intbench.verifiers.leakage.text:text_leaked",
    templates=BUILTIN_TEMPLATES / "linguini",
    hub={"test": HubRef(HUB_ID, "train")},
    row_to_problem=row_to_problem,
    offline_loader=load_offline,
    offline_splits=("test", "train"),
    offline_source="procedural invented-language puzzles (intbench-procedural)",
    procedural=True,
    procedural_variants=ProceduralVariants(
        make_variant="intbench.envs.domains.generators.linguini_puzzles:make_linguini_variant",
        rebuild="intbench.envs.domains.generators.linguini_puzzles:rebuild_linguini",
        reference_response=answer_line,
    ),
    license=LICENSE,
)
