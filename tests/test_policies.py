"""Baseline teacher policies: specs, decisions and the observation contract."""

from __future__ import annotations

import numpy as np
import pytest

from intbench.agents.policies import DEFAULT_MESSAGE, AtFraction, RandomPolicy, make_policy
from intbench.metrics.monitor import phi
from intbench.runner import RunConfig, run_eval
from intbench.teachers import PolicyTeacher, check_teacher_spec, make_teacher
from tests.scripted_students import TRACE


def run_episode(
    policy, total: int = 1500, increment: int = 50, reset: bool = True, **extra
) -> int | None:
    """Reveal the trace like the monitor env; return revealed chars at the intervention."""
    if reset:
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


def random_episodes(spec: str, seeds) -> list[int | None]:
    """Where ``spec`` intervenes (revealed chars, or None) in one episode per seed."""
    policy = make_policy(spec)
    results = []
    for seed in seeds:
        policy.reset(seed)
        results.append(run_episode(policy, reset=False))
    return results


def test_random_p_is_the_share_of_episodes_with_an_intervention():
    # φ of random:0.3 over 400 episodes (binomial sd 0.023): within 0.3 ± 0.05.
    outcomes = random_episodes("random:0.3", range(400))
    phi = sum(at is not None for at in outcomes) / 400
    assert 0.25 <= phi <= 0.35
    assert len({at for at in outcomes if at is not None}) > 10  # spread over the trace
    assert random_episodes("random:0", range(50)) == [None] * 50
    assert None not in random_episodes("random:1", range(50))


def test_random_is_reproducible_per_episode_seed():
    seeds = range(100, 200)
    first = random_episodes("random:0.5", seeds)
    assert first == random_episodes("random:0.5", seeds)
    assert first[::-1] == random_episodes("random:0.5", reversed(seeds))  # order-free
    assert first != random_episodes("random:0.5", range(200, 300))
    assert first != random_episodes("random:0.5?seed=8", seeds)


def test_random_reset_without_a_seed_varies_episodes_reproducibly():
    def unseeded_episodes(spec):
        policy = make_policy(spec)
        return [run_episode(policy) for _ in range(40)]

    first = unseeded_episodes("random:0.5?seed=7")
    assert first == unseeded_episodes("random:0.5?seed=7")
    assert len(set(first)) > 5
    assert first != unseeded_episodes("random:0.5?seed=8")


def test_random_needs_the_trace_length_like_at():
    policy = RandomPolicy(0.0)
    with pytest.raises(ValueError, match="total_chars"):
        policy.decide({"revealed_chars": 10})


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
        ("randon:0.3", "did you mean 'random'"),
        ("at:half", "'half' is not a number; write e.g. at:0.5"),
        ("at:x", "'x' is not a number; write e.g. at:0.5"),
        ("at", "needs a number, e.g. at:0.5"),
        ("at:1.5", "0 <= fraction <= 1, got 1.5; e.g. at:0.5"),
        ("at:nan", "0 <= fraction <= 1"),
        ("random:2", "0 <= p <= 1 \\(a probability\\), got 2.0; e.g. random:0.3"),
        ("random:-0.1", "0 <= p <= 1"),
        ("random:", "needs a number, e.g. random:0.3"),
        ("random:0.5?seed=x", "seed must be an integer"),
        ("never:3", "takes no argument"),
        ("at:0.5?seed=3", "unknown option"),
        ("random:0.5?colour=red", "unknown option"),
    ],
)
def test_bad_specs_give_clear_errors(spec, error):
    with pytest.raises(ValueError, match=error) as caught:
        make_policy(spec)
    assert "\n" not in str(caught.value)


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


# ---------------------------------------------------------------------------
# Policy teachers in the runner: per-episode seeds and specs checked at parse time.
# ---------------------------------------------------------------------------


def scripted_random_run(tmp_path, n: int, repeats: int, seed: int, name: str) -> list[dict]:
    config = RunConfig(
        env_id="IntBench-Math-v0",
        teacher="random:0.3",
        student="scripted:text=" + TRACE,  # about 5 increments of 50 characters
        n=n,
        repeats=repeats,
        seed=seed,
    )
    return run_eval(config, tmp_path / name, concurrency=8, progress=False).episodes


def intervention_points(episodes: list[dict]) -> dict[str, int | None]:
    return {
        e["metadata"]["run_key"]: e["intervention"] and e["intervention"]["tau_abs"]
        for e in episodes
    }


def test_random_phi_over_400_scripted_episodes_is_p(tmp_path, monkeypatch):
    monkeypatch.setenv("INTBENCH_CACHE", str(tmp_path / "cache"))
    episodes = scripted_random_run(tmp_path, n=100, repeats=4, seed=1, name="run")
    assert len(episodes) == 400 and not any(e["error"] for e in episodes)
    assert phi(episodes) == pytest.approx(0.3, abs=0.05)
    points = {tau for tau in intervention_points(episodes).values() if tau is not None}
    assert len(points) > 2  # interventions spread over the trace


def test_random_runs_repeat_with_their_seed_and_differ_across_seeds(tmp_path, monkeypatch):
    monkeypatch.setenv("INTBENCH_CACHE", str(tmp_path / "cache"))
    first = intervention_points(scripted_random_run(tmp_path, 20, 2, seed=3, name="a"))
    again = intervention_points(scripted_random_run(tmp_path, 20, 2, seed=3, name="b"))
    other = intervention_points(scripted_random_run(tmp_path, 20, 2, seed=4, name="c"))
    assert first == again
    assert first != other
    assert 0 < sum(tau is not None for tau in first.values()) < len(first)


def test_policy_teacher_draws_from_each_episodes_first_seed():
    teacher = PolicyTeacher("random:0.5", "monitor", None)
    obs, info = {"revealed_chars": 50}, {"privileged": {"total_chars": 50}}

    def decision(episode_seed: int) -> int:
        teacher.reset(0)
        [action] = teacher.act([0], [(obs, info)], [episode_seed])
        return action["intervene"]

    decisions = [decision(seed) for seed in range(200)]
    assert decisions == [decision(seed) for seed in range(200)]
    assert 70 < sum(decisions) < 130


@pytest.mark.parametrize(
    ("spec", "error"),
    [
        ("att:0.5", "unknown teacher 'att:0.5'; did you mean 'at:0.5'?"),
        ("randm:0.3", "did you mean 'random:0.3'?"),
        ("openia:gpt-4o@http://h/v1", "did you mean 'openai:gpt-4o@http://h/v1'?"),
        ("zzz", "use a policy \\(never, always"),
        ("at:1.5", "0 <= fraction <= 1"),
        ("at:x", "not a number"),
        ("random:2", "0 <= p <= 1"),
        ("random:-0.1", "0 <= p <= 1"),
        ("hf:/m?dtype", "expected key=value"),
    ],
)
def test_bad_teacher_specs_fail_at_parse_time_in_one_line(spec, error):
    with pytest.raises(ValueError, match=error) as caught:
        check_teacher_spec(spec)
    assert "\n" not in str(caught.value)
    with pytest.raises(ValueError, match=error):  # before any model loads
        make_teacher(spec, "monitor", None)


def test_good_teacher_specs_pass_the_check():
    for spec in ("never", "at:0.5", "random:0.3?seed=2", "oracle", "smollm2", "hf:/m"):
        check_teacher_spec(spec)
