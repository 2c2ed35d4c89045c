"""Every teacher kind implements the typed :class:`~intbench.teachers.Teacher` interface."""

from __future__ import annotations

import pytest

from intbench.agents.backends.scripted import ScriptedBackend
from intbench.agents.base import is_remote
from intbench.records import Episode
from intbench.teachers import (
    HumanTeacher,
    ModelTeacher,
    PolicyTeacher,
    ReplayedIntervention,
    ReplayTeacher,
    Teacher,
    make_teacher,
)

WAIT = {"intervene": 0, "message": ""}
PROMPT = [{"role": "user", "content": "Should the teacher step in now?"}]


def episode() -> Episode:
    return Episode(protocol="monitor", problem_id="p", domain="math", student="s")


def kinds() -> dict[str, Teacher]:
    plan = {"0:0": ReplayedIntervention(position=0, message="Look again.", baseline=None,
                                        episode_id=None)}  # fmt: skip
    return {
        "policy": make_teacher("at:0.5", "monitor", "standard"),
        "model": make_teacher("scripted:text=Intervene: No", "monitor", "standard"),
        "replay": ReplayTeacher(plan, "runs/standard"),
        "human": HumanTeacher(1, {"intervene": 1, "message": "Look again."}),
    }


@pytest.mark.parametrize("kind", ["policy", "model", "replay", "human"])
def test_every_kind_is_a_teacher_and_plays_an_episode(kind):
    teacher = kinds()[kind]
    assert isinstance(teacher, Teacher)
    teacher.reset(0, "0:0")
    step = ({}, {"messages": PROMPT, "revealed_chars": 50, "privileged": {"total_chars": 100}})
    (action,) = teacher.act([0], [step], [7])
    assert set(action) >= {"intervene", "message"}
    record = episode()
    teacher.finish(0, record)  # every kind may be asked, whatever it adds


def test_only_model_teachers_name_a_backend():
    """The scheduler decides inline for ``backend is None`` and on the model's worker otherwise."""
    assert {kind: t.backend is not None for kind, t in kinds().items()} == {
        "policy": False,
        "model": True,
        "replay": False,
        "human": False,
    }


def test_model_teacher_finish_records_its_replies_and_tokens():
    teacher = ModelTeacher(ScriptedBackend(lambda messages: "Intervene: No"), "monitor", "standard")
    teacher.reset(3)
    teacher.act([3], [({}, {"messages": PROMPT})], [0])
    teacher.act([3], [({}, {"messages": PROMPT})], [1])
    record = episode()
    teacher.finish(3, record)
    assert record.metadata["teacher_outputs"] == ["Intervene: No", "Intervene: No"]
    # the scripted backend counts words: 6 per prompt, 2 per reply
    assert record.tokens == {"teacher_prompt": 12, "teacher_completion": 4}


def test_python_teachers_add_nothing_to_the_record():
    record = episode()
    teacher = PolicyTeacher("never", "monitor", None)
    teacher.reset(0)
    teacher.finish(0, record)
    assert record.metadata == {} and record.tokens == {}


def test_human_teacher_waits_its_reveals_then_acts():
    action = {"intervene": 1, "message": "Check the sign."}
    teacher = HumanTeacher(2, action)
    teacher.reset(0)
    taken = [teacher.act([0], [({}, {})], [0])[0] for _ in range(3)]
    assert taken == [WAIT, WAIT, action]
    assert [teacher.decides_at(step) for step in range(3)] == [False, False, True]


def test_a_server_backend_is_remote_and_a_plain_one_is_not():
    class Server(ScriptedBackend):
        remote = True

    server = Server(lambda messages: "Intervene: No")
    assert is_remote(server) and not is_remote(ScriptedBackend(lambda messages: ""))
    assert ModelTeacher(server, "monitor", "standard").decide_first
    assert not ModelTeacher(server, "monitor", "oracle").decide_first


def study_config(condition: str = "standard"):
    from intbench.human.study import StudyConfig
    from intbench.records import Problem

    trace = "Add the two numbers one step at a time. " * 4 + "So \\boxed{9}."  # 173 chars
    problem = Problem(id="h/0", domain="math", question="What is 2 + 3?", answer="5")
    student = ScriptedBackend(lambda messages: trace, spec="scripted:human-trial")
    return StudyConfig(env_id="IntBench-Math-v0", condition=condition, problems=[problem],
                       student=student, practice=0)  # fmt: skip


def test_a_human_trial_is_played_by_its_teacher(tmp_path, monkeypatch):
    from intbench.human.study import play_trial

    monkeypatch.setenv("INTBENCH_CACHE", str(tmp_path / "cache"))
    action = {"intervene": 1, "message": "Is 9 right?"}
    record = play_trial(study_config(), "h/0", 0, {"reveals": 2, "action": action}, defer=True)
    assert [s.action for s in record.steps] == ["wait", "wait", "intervene"]
    assert record.intervention.position == 150 and record.intervention.message == "Is 9 right?"
    with pytest.raises(ValueError, match="more reveals than the trace has increments"):
        play_trial(study_config(), "h/0", 0, {"reveals": 4, "action": action}, defer=True)
    with pytest.raises(ValueError, match="did not end the episode"):
        play_trial(study_config(), "h/0", 0, {"reveals": 1, "action": WAIT}, defer=False)
    oracle = {"reveals": 3, "action": {**action, "quote": "", "position": 40}}
    record = play_trial(study_config("oracle"), "h/0", 0, oracle, defer=True)
    assert len(record.steps) == 1 and record.intervention.position == 40
