"""Human-study defaults the papers fix: scored trials per participant (Int-Bench §4.2)."""

from __future__ import annotations

from collections import Counter

from intbench.cli import build_parser
from intbench.commands.serve import STUDY_FLAGS
from intbench.human.schedule import assigned_questions, new_participant
from intbench.human.study import StudyConfig
from intbench.options import flag_values
from intbench.records import Problem


def _problems(k: int) -> list[Problem]:
    return [Problem(id=f"d/{i}", domain="math", question=f"What is {i} + 1?", answer=str(i + 1))
            for i in range(k)]  # fmt: skip


def test_each_participant_gets_six_trials_by_default():
    # Int-Bench §4.2: "Each participant completed 6 trials (episodes), which were randomly ordered."
    config = StudyConfig(env_id="IntBench-Math-v0", condition="standard", problems=_problems(32),
                         student="scripted:text=x")  # fmt: skip
    assert config.trials == 6
    state = new_participant(config, "alice", "random", index=0)
    assert len(state["trials"]) == 6 and len(state["practice"]) == 2
    assert len({t["problem_id"] for t in state["trials"]}) == 6


def test_serve_defaults_to_six_trials():
    args = build_parser().parse_args(
        ["serve", "--env", "IntBench-Math-v0", "--condition", "oracle", "--out", "study"]
    )
    flags = flag_values(args, STUDY_FLAGS)
    assert flags == {"condition": "oracle"}  # trials not given: StudyConfig's default
    assert StudyConfig.__dataclass_fields__["trials"].default == 6


def _counts(config: StudyConfig, participants: int) -> Counter:
    return Counter(q for i in range(participants) for q in assigned_questions(config, i))


def test_questions_are_balanced_by_design():
    # Int-Bench App. A: 25 participants x 6 episodes over 30 questions, "each question has
    # 5 human annotations": 150 slots, 5 per question exactly.
    config = StudyConfig(env_id="IntBench-Math-v0", condition="standard", problems=_problems(32),
                         student="scripted:text=x")  # fmt: skip
    counts = _counts(config, 25)
    assert len(counts) == 30 and set(counts.values()) == {5}
    # any other number of participants: counts differ by at most one (7 x 6 = 42 slots:
    # 12 questions twice, 18 once)
    assert sorted(Counter(_counts(config, 7).values()).items()) == [(1, 18), (2, 12)]
    for n in (1, 4, 13, 26):
        values = _counts(config, n)
        assert max(values.values()) - min(values.get(q.id, 0) for q in config.main_problems) <= 1
    # each participant's questions are distinct, in an order of their own
    a = new_participant(config, "alice", "random", index=3)
    b = new_participant(config, "bob", "random", index=3)
    assert {t["problem_id"] for t in a["trials"]} == set(assigned_questions(config, 3))
    assert len({t["problem_id"] for t in a["trials"]}) == 6
    assert [t["problem_id"] for t in a["trials"]] != [t["problem_id"] for t in b["trials"]]


def test_serve_refuses_an_unknown_condition_before_anything_starts(tmp_path, capsys):
    from intbench.cli import main

    out = tmp_path / "study"
    argv = ["serve", "--env", "IntBench-Math-v0", "--condition", "oracl", "--out", str(out)]
    assert main(argv) == 2
    assert "condition must be one of ('standard', 'oracle'), got 'oracl'" in capsys.readouterr().err
    assert not out.exists()
