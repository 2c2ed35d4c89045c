"""Human-study defaults the papers fix: scored trials per participant (Int-Bench §4.2)."""

from __future__ import annotations

from intbench.cli import build_parser
from intbench.human.schedule import new_participant
from intbench.human.study import StudyConfig
from intbench.records import Problem


def _problems(k: int) -> list[Problem]:
    return [Problem(id=f"d/{i}", domain="math", question=f"What is {i} + 1?", answer=str(i + 1))
            for i in range(k)]  # fmt: skip


def test_each_participant_gets_six_trials_by_default():
    # Int-Bench §4.2: "Each participant completed 6 trials (episodes), which were randomly ordered."
    config = StudyConfig(env_id="IntBench-Math-v0", condition="standard", problems=_problems(32),
                         student="scripted:text=x")  # fmt: skip
    assert config.trials == 6
    state = new_participant(config, "alice", "random")
    assert len(state["trials"]) == 6 and len(state["practice"]) == 2
    assert len({t["problem_id"] for t in state["trials"]}) == 6


def test_serve_defaults_to_six_trials():
    args = build_parser().parse_args(
        ["serve", "--env", "IntBench-Math-v0", "--condition", "oracle", "--out", "study"]
    )
    assert args.trials == 6
