"""The transfer reward components: does the teacher's message help on a problem it never saw?

After a teacher message the student meets a variant of the problem (same
skill, new numbers or wording, an answer the verifier has checked to differ
from the original's: :mod:`intbench.generalization.answers`) twice, with one
sampling seed:

* **alone**: Int-Bench's Problem-Context (§3.5): the original problem and the
  student's own attempt at it (its reasoning, answer and verdict), then the
  variant;
* **with the message**: the same prompt with the teacher's message added.

Both arms render one template (``variant_transfer``), so the message is the
only difference between them, and ``transfer_gain`` = with − alone measures
what the message taught that carries over.  A message whose only content is
the original's answer gives the student nothing to use on the variant, whose
answer is different, so it cannot raise the gain in expectation; a
content-free message ("Keep going.") changes nothing either.  The alone arm
does not depend on the teacher: it is cached per (problem, attempt, seed) and
shared by every teacher and rollout of that state.  Waiting has no message,
so its gain is 0 by definition and no variant call is made for it unless a
weight reads the raw arms.

Variants come from the domain's procedural generator (offline generated
problems) or from a variant set written by ``intbench variants`` (the env
option ``variants``); an env whose reward needs transfer and has neither
fails when it is built.  Variants of a set that share the original's answer
are dropped when the set is read and counted in the run summary
(``variants_sharing_answer``).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
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
        self._sharing: dict[str, set[str]] = {}
        """Original id -> its variants dropped because the original's answer answers them."""
        if variants is not None:
            self._sets = self._distinct(
                problems, variants_by_original(read_variant_set(variants, problems[0].domain))
            )
            missing = [p.id for p in problems if not self._sets.get(p.id)]
            if missing:
                raise ValueError(
                    f"the variant set {variants} has no usable variant of {len(missing)} "
                    f"problem(s) (e.g. {missing[0]!r}; variants that share the original's "
                    "answer are dropped); write one for these problems with intbench variants"
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

    def _distinct(
        self, problems: list[Problem], groups: dict[str, list[Problem]]
    ) -> dict[str, list[Problem]]:
        """``groups`` without the variants that share their original's answer."""
        from intbench.generalization.answers import shares_answer

        originals = {p.id: p for p in problems}
        kept: dict[str, list[Problem]] = {}
        for original_id, group in groups.items():
            original = originals.get(original_id)
            if original is None:
                continue
            kept[original_id] = []
            for variant in group:
                if shares_answer(original, variant):
                    self._sharing.setdefault(original_id, set()).add(variant.id)
                else:
                    kept[original_id].append(variant)
        return kept

    def variant(self, problem: Problem, seed: int) -> Problem:
        """The episode's variant of ``problem``; the same for the same ``seed``."""
        key = (problem.id, seed)
        if key not in self._memo:
            self._memo[key] = self._draw(problem, seed)
        return self._memo[key]

    def sharing_answer(self, problem: Problem) -> list[str]:
        """The variants of ``problem`` dropped so far because they share its answer."""
        return sorted(self._sharing.get(problem.id, ()))

    def drawn(self) -> list[Problem]:
        """The variants drawn so far, in the order they were first drawn."""
        return list({id(v): v for v in self._memo.values()}.values())

    def _draw(self, problem: Problem, seed: int) -> Problem:
        if self._sets:
            group = self._sets[problem.id]
            return group[seed % len(group)]
        from intbench.generalization.answers import SHARED_ANSWER
        from intbench.generalization.procedural import procedural_variants

        for attempt in range(PROCEDURAL_TRIES):
            made = procedural_variants([problem], 1, seed + attempt)
            for entry in made.log:
                self._sharing.setdefault(problem.id, set()).update(
                    f"{problem.id}/variant/{d['seed']}"
                    for d in entry["dropped"]
                    if d["reason"] == SHARED_ANSWER
                )
            if made.variants:
                return made.variants[0]
        raise ValueError(
            f"the generator made no valid variant of {problem.id!r} in {PROCEDURAL_TRIES} draws"
        )


@dataclass(frozen=True)
class TransferContext:
    """What both arms show before the variant: the original and the student's own attempt."""

    original: Problem
    attempt: Attempt | None


def transfer_messages(
    variant: Problem, context: TransferContext, message: str | None
) -> list[dict]:
    """The student's prompt for one arm: the Problem-Context, the teacher's message
    (the message arm only), then the variant."""
    attempt = context.attempt
    return render_messages(
        variant.domain,
        "variant_transfer",
        problem=variant,
        original=context.original,
        attempt_trace=(attempt.text if attempt else "") or "",
        attempt_answer=(attempt.answer if attempt else "") or "",
        attempt_verdict=(attempt.status if attempt else "") or "",
        message=message or "",
    )


def transfer_attempt(
    cache: JsonCache,
    student: str,
    variant: Problem,
    context: TransferContext,
    message: str | None,
    sampling: SamplingParams,
    seed: int,
    verifier,
):
    """Flow: the student's graded attempt at ``variant`` in one arm -> its :class:`Attempt`.

    Cached like every first student call: the alone arm is shared by every
    teacher of the same problem, attempt and seed."""
    messages = transfer_messages(variant, context, message)
    attempt: Attempt
    attempt, _ = yield from cached_student_call(
        cache, student, messages, replace(sampling, seed=seed), variant, verifier
    )
    return attempt
