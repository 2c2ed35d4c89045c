"""Reward presets: what a teacher trained on an env optimises, and why telling cannot pay.

Every episode computes named components; a preset is a set of weights over
them, and the reward is the weighted sum.  ``info`` reports the raw
components, so a run can be re-scored under any preset.

Components (in {0, 1} unless said otherwise):
    success: the student's final answer was right (monitor: after the
        intervention if one was applied, else the baseline; feedback: solved
        within ``k_max`` attempts; tutor: solved in phase 2).
    leaked: the teacher's message gave the answer away: the domain's leak
        detector (:func:`~intbench.verifiers.leakage.leak_verdict`) read an
        answer its verifier accepts out of it; in feedback and tutor
        episodes the number of leaking teacher turns.
    leak_undetermined: a leak check could not finish (a verifier timeout);
        such a message is scored as waiting: never a penalty, never more.
    judge_leaked: the optional LLM leak judge (env option ``leak_judge``,
        :mod:`intbench.envs.leak_judge`) said the message gives the answer
        away; always 0 without a judge; feedback and tutor: such turns.
    messages: the teacher messages the student saw (monitor: 1 for an
        intervention with a message; feedback: the turns with a message;
        tutor: the messages the checker delivered).
    transfer, transfer_alone, transfer_gain: the student's attempt at a
        variant the teacher never saw, whose answer differs from the
        original's, in Int-Bench's Problem-Context (the original and the
        student's own attempt), with the teacher's message (``transfer``) and
        without it (``transfer_alone``); ``transfer_gain`` = transfer −
        transfer_alone in {-1, 0, 1}, 0 without a message
        (:mod:`intbench.envs.transfer`).  Feedback: means over the teacher
        turns.  Computed only when the weights read one of them.
    monitor only: baseline_correct (the unassisted student was right),
        post_correct (right after the intervention; 0 without one),
        intervened (the intervention was applied), helpfulness (the paper's
        H_i = post_correct - baseline_correct, in {-1, 0, 1}; 0 without an
        intervention) and derailed (the intervention turned a right answer
        wrong: the negative part of H_i; 0 in feedback and tutor episodes,
        where no right answer precedes the teacher).
    feedback only: auc ((k_max - k + 1) / k_max when solved at attempt k,
        the episode's share of the mean of acc@1..acc@k_max).

Why telling cannot pay under ``teaching`` and ``transfer``, by construction.
Let m be a message whose only content is the original problem's answer, in
any form, flagged by the detector or not.  The two variant arms see the same
prompt but for m and use one sampling seed, so the message is the only
difference; the variant's answer was checked to differ from the original's,
so copying m's answer onto it is graded wrong, and m says nothing else about
the variant.  Hence E[transfer | m] <= E[transfer_alone], i.e.
E[transfer_gain | m] <= 0 = the gain of waiting.  The positive part of both
presets reads only these arms; the original's outcome, which a tell does
raise, enters ``teaching`` only through ``derailed``, which a tell cannot
lower below waiting's 0.  (Paying success × transfer_gain was rejected: a
good hint with the answer appended would then earn more than the hint
alone.)  The leak penalty is a second line: a message the detector flags
scores at least 1 below waiting whatever the arms say
(:func:`telling_margin`).  :func:`telling_cannot_pay` checks the
construction for any weights; every shipped training config passes it.

Per preset:
    teaching = transfer_gain − derailed − 0.1·messages − 2·leaked −
        2·judge_leaked, the default of every GRPO config.  Waiting scores 0; a method hint that
        carries over scores up to 0.9; a content-free message scores −0.1
        (it changes neither arm), and so does a tell that changes nothing:
        a tell scores < 0 in expectation, and <= −1.1 when detected.
    transfer = transfer − 2·leaked: the message arm itself (waiting scores
        the alone arm), the same expectation argument with more variance.
    success, helpfulness, auc, pedagogical: the papers' outcome measures,
        less a leak.  They pay the original's outcome, which telling raises,
        so they are telling-proof only as far as the leak detector reaches:
        for evaluation and for contrast runs, not for training a teacher.

The papers' metrics (H, φ, τ, acc@k, AUC) are computed from the episode
records and do not depend on the preset.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Mapping

from intbench.protocols import PROTOCOLS, get_protocol


class _Components(Mapping[str, tuple[str, ...]]):
    """Protocol -> the components its episodes report (``ProtocolSpec.reward_components``),
    for every registered protocol."""

    def __getitem__(self, protocol: str) -> tuple[str, ...]:
        return PROTOCOLS[protocol].reward_components

    def __iter__(self) -> Iterator[str]:
        return iter(PROTOCOLS)

    def __len__(self) -> int:
        return len(PROTOCOLS)


COMPONENTS: Mapping[str, tuple[str, ...]] = _Components()


PRESETS: dict[str, dict[str, float]] = {
    # The paper's immediate helpfulness (+1 wrong->right, -1 right->wrong), less a leak.
    "helpfulness": {"helpfulness": 1.0, "leaked": -2.0},
    # The final outcome, less a leak.
    "success": {"success": 1.0, "leaked": -2.0},
    # Feedback: earlier solves count more (the episode's part of the AUC), less a leak.
    "auc": {"auc": 1.0, "leaked": -2.0},
    # Solve the problem, but each intervention costs a little and a leak costs
    # as much as a success is worth (+0.1 for the intervention it needed).
    "pedagogical": {"success": 1.0, "intervened": -0.1, "leaked": -1.0},
    # Teaching (see the module docstring): what the message adds on an unseen
    # variant, less derailing a right answer, less a leak.
    "teaching": {
        "transfer_gain": 1.0,
        "derailed": -1.0,
        "messages": -0.1,
        "leaked": -2.0,
        "judge_leaked": -2.0,
    },
    # The message arm of the variant attempt, less a leak.
    "transfer": {"transfer": 1.0, "leaked": -2.0},
}

TELL_PROOF_GAINS = frozenset({"transfer", "transfer_gain"})
"""Components a message carrying only the original's answer cannot raise above
waiting in expectation (module docstring)."""
TELL_PROOF_COSTS = frozenset({"leaked", "judge_leaked", "derailed", "intervened", "messages"})
"""Components a tell cannot lower below waiting's value, so a cost on them never pays it."""


def presets_for(protocol: str) -> list[str]:
    """The presets whose components all exist in ``protocol``'s episodes."""
    known = set(COMPONENTS[protocol])
    return sorted(name for name, weights in PRESETS.items() if set(weights) <= known)


def resolve_weights(
    reward: str | Mapping[str, float], protocol: str = "monitor"
) -> dict[str, float]:
    """A preset name or a ``{component: weight}`` mapping -> validated weights for ``protocol``."""
    if isinstance(reward, str):
        if reward not in presets_for(protocol):
            raise ValueError(
                f"unknown {protocol} reward preset {reward!r}; choose from {presets_for(protocol)}"
            )
        return dict(PRESETS[reward])
    if not isinstance(reward, Mapping):
        raise ValueError(f"reward must be a preset name or a mapping, got {type(reward).__name__}")
    weights = {str(k): float(v) for k, v in reward.items()}
    unknown = set(weights) - set(COMPONENTS[protocol])
    if unknown:
        raise ValueError(
            f"unknown {protocol} reward component(s) {sorted(unknown)}; "
            f"known: {list(COMPONENTS[protocol])}"
        )
    return weights


TRANSFER_COMPONENTS = ("transfer", "transfer_alone", "transfer_gain")


def needs_transfer(weights: Mapping[str, float]) -> bool:
    """Whether the reward reads a transfer arm (only then are variant attempts made)."""
    return any(weights.get(name, 0.0) != 0.0 for name in TRANSFER_COMPONENTS)


def telling_cannot_pay(weights: Mapping[str, float]) -> bool:
    """Whether ``weights`` pay only what a tell cannot raise and charge only what a
    tell cannot lower (the construction of the module docstring)."""
    return all(
        name in (TELL_PROOF_GAINS if weight > 0 else TELL_PROOF_COSTS)
        for name, weight in weights.items()
        if weight != 0
    )


NO_TRANSFER = {name: 0.0 for name in TRANSFER_COMPONENTS}


def monitor_components(
    baseline_correct: bool,
    intervened: bool,
    post_correct: bool | None,
    leaked: bool,
    transfer: Mapping[str, float] = NO_TRANSFER,
    spoke: bool | None = None,
) -> dict[str, float]:
    """The components of one monitor episode (``transfer``: :data:`TRANSFER_COMPONENTS`;
    ``spoke``: the teacher sent a message, by default when it intervened)."""
    post = bool(post_correct) if intervened else False
    return {
        "baseline_correct": float(baseline_correct),
        "post_correct": float(post),
        "intervened": float(intervened),
        "helpfulness": float(post) - float(baseline_correct) if intervened else 0.0,
        "derailed": float(intervened and baseline_correct and not post),
        "messages": float(intervened if spoke is None else spoke),
        "success": float(post if intervened else baseline_correct),
        "leaked": float(leaked),
        "leak_undetermined": 0.0,
        "judge_leaked": 0.0,
        **{name: float(transfer.get(name, 0.0)) for name in TRANSFER_COMPONENTS},
    }


def weighted_reward(components: Mapping[str, float], weights: Mapping[str, float]) -> float:
    return float(sum(weight * components.get(name, 0.0) for name, weight in weights.items()))


def telling_margin(weights: Mapping[str, float], protocol: str = "monitor") -> float:
    """The most a leaking message can score above saying nothing, over every outcome.

    Enumerates what the student would do without the message (right or
    wrong, variant solved or not) and with it (any outcome), and returns
    ``max(reward(tell) - reward(wait))`` for a message the detector flags.  A
    reward where a flagged tell always loses has a negative margin.  Monitor:
    waiting is the baseline outcome; feedback and tutor: the episode without
    the teacher's message (success and transfer of the student alone), one
    leaking turn against none.  An unflagged tell is what
    :func:`telling_cannot_pay` covers.
    """
    outcomes = get_protocol(protocol).hook("telling_outcomes")
    worst = float("-inf")
    for alone, helped, variant_alone, variant_helped in itertools.product((0, 1), repeat=4):
        tell, wait = outcomes(alone, helped, variant_alone, variant_helped)
        worst = max(worst, weighted_reward(tell, weights) - weighted_reward(wait, weights))
    return worst
