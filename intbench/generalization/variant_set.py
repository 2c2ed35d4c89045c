"""The variant-set file: JSON lines of :class:`~intbench.records.Problem` dicts.

Each variant carries ``metadata["variant_of"]`` (the original problem's id) and
``metadata["skill"]`` (the skill it shares with the original).  The file is the
hand-off between ``intbench variants`` and the generalization evaluation, and
it is written atomically so that an interrupted run never leaves half a file.

Int-Bench (§3.4) evaluates generalization on a single valid variant per
original; :func:`sample_per_original` draws it reproducibly.
"""

from __future__ import annotations

import json
import os
import random
import tempfile
from collections import defaultdict
from pathlib import Path

from intbench.cache import stable_hash
from intbench.records import Problem

REQUIRED_METADATA = ("variant_of", "skill")


class VariantSetError(ValueError):
    """A variant-set file is missing, malformed, or holds a problem without its links."""


def check_variant(problem: Problem) -> None:
    """Raise :class:`VariantSetError` unless ``problem`` names its original and skill."""
    missing = [key for key in REQUIRED_METADATA if not problem.metadata.get(key)]
    if missing:
        raise VariantSetError(f"variant {problem.id!r} lacks metadata {missing}")


def write_variant_set(path: str | os.PathLike, variants: list[Problem]) -> Path:
    """Write ``variants`` to ``path`` as JSONL (atomically); returns the path."""
    for variant in variants:
        check_variant(variant)
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=".tmp-", suffix=".jsonl")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            for variant in variants:
                handle.write(json.dumps(variant.to_dict(), ensure_ascii=False) + "\n")
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return target


def read_variant_set(path: str | os.PathLike, domain: str | None = None) -> list[Problem]:
    """Read a variant set written by :func:`write_variant_set`.

    Args:
        path: the JSONL file.
        domain: if given, every variant must be of this domain.

    Raises:
        VariantSetError: the file is missing or a line is not a valid variant
            (the message names the line).
    """
    file = Path(path)
    if not file.is_file():
        raise VariantSetError(f"variant set not found: {str(file)!r}")
    variants = []
    for number, line in enumerate(file.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            problem = Problem.from_dict(json.loads(line))
        except (ValueError, TypeError) as exc:
            raise VariantSetError(f"{file}:{number}: not a Problem record: {exc}") from None
        try:
            check_variant(problem)
        except VariantSetError as exc:
            raise VariantSetError(f"{file}:{number}: {exc}") from None
        if domain is not None and problem.domain != domain:
            raise VariantSetError(
                f"{file}:{number}: variant {problem.id!r} is of domain {problem.domain!r}, "
                f"expected {domain!r}"
            )
        variants.append(problem)
    return variants


def variants_by_original(variants: list[Problem]) -> dict[str, list[Problem]]:
    """Group variants by ``metadata["variant_of"]``, keeping file order."""
    groups: dict[str, list[Problem]] = defaultdict(list)
    for variant in variants:
        groups[variant.metadata["variant_of"]].append(variant)
    return dict(groups)


def sample_per_original(variants: list[Problem], seed: int = 0) -> list[Problem]:
    """One variant of each original, drawn at random (Int-Bench §3.4: "a single
    valid variant is sampled"), in the order the originals first appear.

    The draw depends only on ``seed``, the original's id and its variants in
    file order, so the same set and seed always give the same choice, whatever
    else the set holds.
    """
    chosen = []
    for original, group in variants_by_original(variants).items():
        rng = random.Random(int(stable_hash("variant-sample", seed, original)[:16], 16))
        chosen.append(group[rng.randrange(len(group))])
    return chosen
