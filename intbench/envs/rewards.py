"""Reward presets: what a teacher trained on an env optimises.

Every episode computes the same named components; a preset is a set of
weights over them, and the reward is the weighted sum.  ``info`` always
reports the raw components, so a run can be re-scored under any preset.

Components (all in {0, 1} except ``helpfulness`` in {-1, 0, 1}):
    baseline_correct: the unassisted student was right.
    post_correct: the student was right after the intervention (0 without one).
    intervened: the teacher intervened (and the intervention was applied).
    helpfulness: the paper's H_i = post_correct - baseline_correct with an
        intervention, 0 without one.
    success: the final answer was right (post-intervention if any, else baseline).
    leaked: the message revealed the reference answer or solution.
"""

from __future__ import annotations

from collections.abc import Mapping

COMPONENTS = ("baseline_correct", "post_correct", "intervened", "helpfulness", "success", "leaked")

PRESETS: dict[str, dict[str, float]] = {
    # The paper's immediate helpfulness: +1 for wrong->right, -1 for right->wrong.
    "helpfulness": {"helpfulness": 1.0},
    # Only the final outcome counts.
    "success": {"success": 1.0},
    # Solve the problem, but each intervention costs a little and giving the
    # answer away costs as much as a success is worth.
    "pedagogical": {"success": 1.0, "intervened": -0.1, "leaked": -1.0},
}


def resolve_weights(reward: str | Mapping[str, float]) -> dict[str, float]:
    """A preset name or a ``{component: weight}`` mapping -> validated weights."""
    if isinstance(reward, str):
        try:
            return dict(PRESETS[reward])
        except KeyError:
            raise ValueError(
                f"unknown reward preset {reward!r}; choose from {sorted(PRESETS)}"
            ) from None
    weights = {str(k): float(v) for k, v in dict(reward).items()}
    unknown = set(weights) - set(COMPONENTS)
    if unknown:
        raise ValueError(f"unknown reward component(s) {sorted(unknown)}; known: {COMPONENTS}")
    return weights


def monitor_components(
    baseline_correct: bool, intervened: bool, post_correct: bool | None, leaked: bool
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
    }


def weighted_reward(components: Mapping[str, float], weights: Mapping[str, float]) -> float:
    return float(sum(weight * components.get(name, 0.0) for name, weight in weights.items()))
