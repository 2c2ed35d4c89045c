"""The ``transfer`` reward component: does the student solve a fresh variant alone?

After the teacher's message the student meets a variant of the problem (same
skill, new numbers or wording) with that message in its context, the
original problem beside it, and no further help; the variant is graded by
the domain's verifier.  It asks of one message what Int-Bench's G (§3.5)
asks of a whole run: Intervention-Context accuracy on variants against
No-Context accuracy.  Without a message the student meets the variant
alone, which is the No-Context term, so a teacher gains transfer only by
teaching something that carries over; stating the original answer does not.

Variants come from the domain's procedural generator (offline generated
problems) or from a variant set written by ``intbench variants`` (the env
option ``variants``); an env whose reward needs transfer and has neither
fails when it is built.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from intbench.agents.base import SamplingParams
from intbench.cache import JsonCache
from intbench.envs.domains.prompting import render_messages
from intbench.envs.student_calls import cached_student_call
from intbench.records import Attempt, Problem

PROCEDURAL_TRIES = 4
"""Seeds tried for a procedural variant before giving up (a generator may reject a draw)."""


class VariantSource:
    """The variants an env's transfer attempts use: procedural, or from a variant set.

    Raises ``ValueError`` (one line, naming the fix) when some problem has no variant.
    """

    def __init__(self, problems: list[Problem], variants: str | Path | None = None):
        from intbench.generalization.procedural import is_procedural
        from intbench.generalization.variant_set import read_variant_set, variants_by_original

        self._memo: dict[tuple[str, int], Problem] = {}
        self._sets: dict[str, list[Problem]] = {}
        if variants is not None:
            self._sets = variants_by_original(read_variant_set(variants, problems[0].domain))
            missing = [p.id for p in problems if p.id not in self._sets]
            if missing:
                raise ValueError(
                    f"the variant set {variants} has no variant of {len(missing)} problem(s) "
                    f"(e.g. {missing[0]!r}); write one for these problems with intbench variants"
                )
            return
        foreign = [p.id for p in problems if not is_procedural(p)]
        if foreign:
            domain = problems[0].domain
            raise ValueError(
                f"the transfer reward needs variants of each problem, and {foreign[0]!r} is not "
                f"generated offline: write a variant set with `intbench variants {domain} "
                "--model SPEC --out FILE.jsonl` and pass the env option variants=FILE.jsonl"
            )

    def variant(self, problem: Problem, seed: int) -> Problem:
        """The episode's variant of ``problem``; the same for the same ``seed``."""
        key = (problem.id, seed)
        if key not in self._memo:
            self._memo[key] = self._draw(problem, seed)
        return self._memo[key]

    def _draw(self, problem: Problem, seed: int) -> Problem:
        if self._sets:
            group = self._sets[problem.id]
            return group[seed % len(group)]
        from intbench.generalization.procedural import procedural_variants

        for attempt in range(PROCEDURAL_TRIES):
            made = procedural_variants([problem], 1, seed + attempt).variants
            if made:
                return made[0]
        raise ValueError(
            f"the generator made no valid variant of {problem.id!r} in {PROCEDURAL_TRIES} draws"
        )


def transfer_messages(variant: Problem, original: Problem, message: str | None) -> list[dict]:
    """The student's prompt for the transfer attempt: the teacher's message about the
    original problem, then the variant (the variant alone without a message)."""
    if not message:
        return render_messages(variant.domain, "variant_no_context", problem=variant)
    return render_messages(
        variant.domain, "variant_transfer", problem=variant, original=original, message=message
    )


def transfer_attempt(
    cache: JsonCache,
    student: str,
    variant: Problem,
    original: Problem,
    message: str | None,
    sampling: SamplingParams,
    seed: int,
    verifier,
):
    """Flow: the student's graded attempt at ``variant`` -> its :class:`Attempt`.

    Cached like every first student call: the attempt without a message is shared
    by every teacher of the episode's problem and seed."""
    messages = transfer_messages(variant, original, message)
    attempt: Attempt
    attempt, _ = yield from cached_student_call(
        cache, student, messages, replace(sampling, seed=seed), variant, verifier
    )
    return attempt
