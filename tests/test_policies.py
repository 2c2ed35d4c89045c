"""Baseline teacher policies: specs, decisions and the observation contract."""

from __future__ import annotations

import numpy as np
import pytest

from intbench.agents.policies import DEFAULT_MESSAGE, AtFraction, RandomPolicy, make_policy


def run_episode(policy, total: int = 1500, increment: int = 50, **extra) -> int | None:
    """Reveal the trace like the monitor env; return revealed chars at the intervention."""
    policy.reset()
    cuts = list(range(increment, total, increment)) + [total]
    for revealed in cuts:
        action = policy.decide({"revealed_chars": revealed, "total_chars": total, **extra})
        assert set(action) == {"intervene", "message"}
        if action["intervene"]:
            assert action["message"]
            return revealed
        assert action["message"] == ""
    return None


def test_never_never_intervenes():
    policy = make_policy("never")
    assert run_episode(policy) is None
    assert run_episode(policy, baseline_correct=False) is None


def test_always_intervenes_at_first_increment():
    assert run_episode(make_policy("always")) == 50


@pytest.mark.parametrize(
    ("spec", "total", "expected"),
    [
        ("at:0.5", 1500, 750),  # exactly half is revealed at increment 15
        ("at:0.5", 1510, 800),  # 755 is crossed by the increment ending at 800
        ("at:0", 1500, 50),
        ("at:1", 1510, 1510),  # the last (short) increment
        ("at:0.34", 100, 50),
    ],
)
def test_at_fraction_intervenes_at_the_crossing_increment(spec, total, expected):
    assert run_episode(make_policy(spec), total=total) == expected


def test_at_fraction_reads_privileged_info_like_the_env_gives_it():
    policy = make_policy("at:0.5")
    obs = {"revealed_chars": np.array(700, dtype=np.int64)}
    info = {"privileged": {"total_chars": 1400, "baseline_correct": True}}
    assert policy.decide({**obs, **info})["intervene"] == 1
    assert policy.decide({"revealed_chars": np.int64(650), **info})["intervene"] == 0


def test_random_is_seeded_and_reproducible():
    def decisions(spec):
        policy = make_policy(spec)
        return [policy.decide({"revealed_chars": 50 * i})["intervene"] for i in range(200)]

    first = decisions("random:0.3?seed=7")
    assert first == decisions("random:0.3?seed=7")
    assert first != decisions("random:0.3?seed=8")
    assert 30 < sum(first) < 90  # about 60 of 200
    assert sum(decisions("random:0")) == 0
    assert sum(decisions("random:1")) == 200


def test_random_reset_restarts_the_stream():
    policy = RandomPolicy(0.5, seed=1)
    run_a = [policy.decide({})["intervene"] for _ in range(20)]
    policy.reset()
    assert [policy.decide({})["intervene"] for _ in range(20)] == run_a


@pytest.mark.parametrize(("correct", "expected"), [(False, 50), (True, None), (None, None)])
def test_oracle_intervenes_iff_baseline_wrong(correct, expected):
    assert run_episode(make_policy("oracle"), baseline_correct=correct) == expected


def test_oracle_needs_the_baseline_verdict():
    with pytest.raises(ValueError, match="baseline_correct"):
        make_policy("oracle").decide({"revealed_chars": 50})


def test_messages_fixed_and_templated():
    assert make_policy("always").decide({})["message"] == DEFAULT_MESSAGE
    policy = make_policy("at:0.5?message=Check step {revealed_chars} of {total_chars} ({fraction})")
    action = policy.decide({"revealed_chars": 800, "total_chars": 1600})
    assert action == {"intervene": 1, "message": "Check step 800 of 1600 (0.50)"}
    fixed = make_policy("oracle?message=Recheck the perimeter.")
    assert fixed.decide({"baseline_correct": False})["message"] == "Recheck the perimeter."


@pytest.mark.parametrize(
    ("spec", "error"),
    [
        ("", "non-empty"),
        ("sometimes", "unknown policy"),
        ("at:half", "not a number"),
        ("at:1.5", "0 <= fraction <= 1"),
        ("random:-0.1", "0 <= p <= 1"),
        ("random:0.5?seed=x", "seed must be an integer"),
        ("never:3", "takes no argument"),
        ("at:0.5?seed=3", "unknown option"),
        ("random:0.5?colour=red", "unknown option"),
    ],
)
def test_bad_specs_give_clear_errors(spec, error):
    with pytest.raises(ValueError, match=error):
        make_policy(spec)


def test_bad_observations_give_clear_errors():
    policy = AtFraction(0.5)
    with pytest.raises(ValueError, match="total_chars"):
        policy.decide({"revealed_chars": 10})
    with pytest.raises(ValueError, match="must be an integer"):
        policy.decide({"revealed_chars": "ten", "total_chars": 100})
    with pytest.raises(ValueError, match=">= 0"):
        policy.decide({"revealed_chars": -1, "total_chars": 100})
    with pytest.raises(TypeError, match="mapping"):
        policy.decide([10, 100])
