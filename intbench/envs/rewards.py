"""Reward presets: what a teacher trained on an env optimises.

Every episode computes named components; a preset is a set of weights over
them, and the reward is the weighted sum.  ``info`` reports the raw
components, so a run can be re-scored under any preset.

Components (in {0, 1} unless said otherwise):
    success: the student's final answer was right (monitor: after the
        intervention if one was applied, else the baseline; feedback: solved
        within ``k_max`` attempts; tutor: solved in phase 2).
    leaked: the teacher's message gave the answer away, as the domain's leak
        detector (:func:`~intbench.verifiers.leakage.answer_leaked`) finds;
        in feedback and tutor episodes the number of leaking teacher turns.
    transfer: with the teacher's message in its context and no further help,
        the student solved a fresh variant of the problem
        (:mod:`intbench.envs.transfer`); with no message, the variant alone.
        Feedback: the mean over the episode's teacher turns.  Computed (one
        extra student call per message) only when the weights use it.
    monitor only: baseline_correct (the unassisted student was right),
        post_correct (right after the intervention; 0 without one),
        intervened (the intervention was applied) and helpfulness (the
        paper's H_i = post_correct - baseline_correct, in {-1, 0, 1}; 0
        without an intervention).
    feedback only: auc ((k_max - k + 1) / k_max when solved at attempt k,
        the episode's share of the mean of acc@1..acc@k_max).

Why every preset charges for ``leaked``: the papers find that teachers
over-assist, and a reward that pays for the final outcome pays most for
stating the answer.  Zeroing a leaked success is not enough (0 against 0
still lets a policy gamble), so each preset's leak weight exceeds the most
that telling can gain over saying nothing on the same problem: the sum of
the preset's other positive weights, each component moving by at most 1.
For every preset but ``pedagogical`` (which keeps its published weights and
a margin of 0.1) it is one more, so a leaking message scores at least 1
below saying nothing, whatever the student would have done alone
(:func:`telling_margin` checks every preset).  The papers' metrics (H,
acc@k, AUC) are computed from the episode records and do not depend on the
preset.

``teaching`` = success + transfer − 3·leaked, the default of every GRPO
config: success pays for getting the student right now, transfer for what
the student can then do alone, with equal weight because both are one
solved problem.  A method hint that fixes the problem and carries over to
the variant earns 2; waiting earns what the student does alone (0 to 2);
stating the answer earns at most 1 + 1 − 3 = −1, below waiting's worst (0).
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
    # Teaching (see the module docstring): success and transfer, a leak costs 3.
    "teaching": {"success": 1.0, "transfer": 1.0, "leaked": -3.0},
    # Only what the student can do alone afterwards, less a leak.
    "transfer": {"transfer": 1.0, "leaked": -2.0},
}


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


def needs_transfer(weights: Mapping[str, float]) -> bool:
    """Whether the reward reads ``transfer`` (only then are variant attempts made)."""
    return weights.get("transfer", 0.0) != 0.0


def monitor_components(
    baseline_correct: bool,
    intervened: bool,
    post_correct: bool | None,
    leaked: bool,
    transfer: bool = False,
) -> dict[str, float]:
    """The components of one monitor episode."""
    post = bool(post_correct) if intervened else False
    return {
        "baseline_correct": float(baseline_correct),
        "post_correct": float(post),
        "intervened": float(intervened),
        "helpfulness": float(post) - float(baseline_correct) if intervened else 0.0,
        "success": float(post if intervened else baseline_correct),
        "leaked": float(leaked),
        "transfer": float(transfer),
    }


def weighted_reward(components: Mapping[str, float], weights: Mapping[str, float]) -> float:
    return float(sum(weight * components.get(name, 0.0) for name, weight in weights.items()))


def telling_margin(weights: Mapping[str, float], protocol: str = "monitor") -> float:
    """The most a leaking message can score above saying nothing, over every outcome.

    Enumerates what the student would do without the message (right or
    wrong, variant solved or not) and with it (any outcome), and returns
    ``max(reward(tell) - reward(wait))``.  A reward where telling loses has a
    negative margin.  Monitor: waiting is the baseline outcome; feedback and
    tutor: the episode without the teacher's message (success and transfer
    of the student alone), one leaking turn against none.
    """
    outcomes = get_protocol(protocol).hook("telling_outcomes")
    worst = float("-inf")
    for alone, helped, variant_alone, variant_helped in itertools.product((0, 1), repeat=4):
        tell, wait = outcomes(alone, helped, variant_alone, variant_helped)
        worst = max(worst, weighted_reward(tell, weights) - weighted_reward(wait, weights))
    return worst
