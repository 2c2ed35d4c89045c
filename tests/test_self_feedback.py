"""Self-feedback is the dense matrix's diagonal (feedback paper Table 7, §4.2): the student's
own model in the teacher role, with the teacher prompt.  The student-side critique prompt
is a separate control, ``self_critique``."""

from __future__ import annotations

import gymnasium as gym
import pytest

import intbench  # noqa: F401  (registers the ids)
from intbench.agents.backends.scripted import ScriptedBackend
from intbench.envs.domains.prompting import render_messages
from intbench.metrics import summarize
from intbench.metrics.feedback_analyses import feedback_controls, feedback_curves
from intbench.records import Problem
from intbench.runner import RunConfig, run_eval
from tests.scripted_students import _fixture_answers

PROBLEM = Problem(
    id="s/0", domain="math", question="What is 17 * 3?", answer="51", solution="\\boxed{51}"
)


def as_teacher(messages) -> bool:
    """Whether a prompt is the feedback teacher's (its A.8 system prompt)."""
    return "You are a careful tutor." in messages[0]["content"]


class Student(ScriptedBackend):
    """Wrong (\\boxed{40+k}) until attempt 3; as a teacher it asks to recheck the product."""

    def __init__(self):
        self.prompts: list[list[dict]] = []
        super().__init__(self.respond, spec=f"scripted:self-{id(self)}")

    def respond(self, messages):
        self.prompts.append(messages)
        if as_teacher(messages):
            return "<think>17*3</think><feedback>Recompute 17 * 3.</feedback>"
        attempts = sum(1 for p in self.prompts if not as_teacher(p))
        return "\\boxed{51}" if attempts >= 3 else f"\\boxed{{{40 + attempts}}}"


@pytest.fixture(autouse=True)
def _cache(tmp_path, monkeypatch):
    monkeypatch.setenv("INTBENCH_CACHE", str(tmp_path / "cache"))


def _episode(student, **options):
    env = gym.make("IntBench-Math-Feedback-v0", student=student, problems=[PROBLEM], **options)
    env.reset(seed=0)
    done, steps = False, 0
    while not done:
        _, _, done, _, info = env.step(0)
        steps += 1
    return env.unwrapped, steps, info["record"]


def test_self_feedback_is_the_student_in_the_teacher_role_with_the_teacher_prompt():
    student = Student()
    env, steps, record = _episode(student, mode="self_feedback", teacher_reference="answer")
    # attempts 1, 2 wrong, 3 right: two feedback turns, written by the student's model
    assert steps == 2 and record["solved_at"] == 3
    feedback_prompts = [p for p in student.prompts if as_teacher(p)]
    assert len(feedback_prompts) == 2
    # the feedback prompt is the teacher's (A.8), reference access included, for attempt 2
    # (history 1: attempt 1 and its feedback are in the window, §3)
    expected = render_messages(
        "math",
        "feedback_teacher",
        problem=PROBLEM,
        history=[{"index": 1, "attempt": "\\boxed{41}", "feedback": "Recompute 17 * 3."}],
        latest_attempt="\\boxed{42}",
        execution_context=None,
        reference="51",
        reference_kind="answer",
    )
    assert feedback_prompts[-1] == expected
    assert "Review your own attempt" not in expected[-1]["content"]
    # the diagonal cell: condition "teacher", teacher = the student's own spec
    assert record["condition"] == "teacher" and record["teacher"] == student.spec
    assert [f["message"] for f in record["feedback"]] == ["Recompute 17 * 3."] * 2
    assert [f["source"] for f in record["feedback"]] == ["self", "self"]


def test_self_critique_keeps_the_critique_prompt():
    student = Student()
    _, _, record = _episode(student, mode="self_critique")
    critique = [p for p in student.prompts if "Review your own attempt" in p[-1]["content"]]
    assert critique and record["condition"] == "self_critique" and record["teacher"] is None


def helped_student(messages):
    """Wrong alone; right after its own feedback ("Recompute"), still wrong after anyone
    else's.  As a teacher (the tutor's system prompt) it writes that feedback."""
    if as_teacher(messages):
        return "<feedback>Recompute the last step.</feedback>"
    last = messages[-1]["content"]
    if "Recompute the last step." not in last:
        return "\\boxed{1000003}"
    answer = next(a for q, (_, a) in _fixture_answers().items() if q in last)
    return f"\\boxed{{{answer}}}"


SELF = "scripted:tests.test_self_feedback:helped_student"


def test_a_self_feedback_run_is_the_diagonal_of_the_matrix_and_table_7(tmp_path):
    records = []
    for mode, teacher in [
        ("self_feedback", "never"),
        ("teacher", "scripted:text=<feedback>Look again.</feedback>"),
    ]:
        config = RunConfig(
            env_id="IntBench-Math-Feedback-v0", teacher=teacher, student=SELF, n=4, seed=0,
            env_options={"mode": mode, "k_max": 2},
        )  # fmt: skip
        records += run_eval(config, tmp_path / mode, concurrency=2, progress=False).episodes
    own = [r for r in records if r["teacher"] == SELF]
    assert len(own) == 4 and {r["condition"] for r in own} == {"teacher"}
    # By hand: with its own feedback the student is wrong at attempt 1 and right at 2 on
    # all 4 problems (acc@2 = 1, gain@2 = 1 - 0); with the outside teacher never (0, 0).
    controls = feedback_controls(feedback_curves(records))
    (row,) = controls.values()
    assert row["self_feedback"] == pytest.approx((1.0, 1.0))
    assert row["best_feedback"] == pytest.approx((1.0, 1.0)) and row["best_teacher"] == SELF
    tables = {t.name: t for t in summarize(records, samples=10).tables}
    matrix = tables["matrix_accK_math_k2"]
    assert matrix.columns == [
        "student",
        *sorted([SELF, "scripted:text=<feedback>Look again.</feedback>"]),
    ]
    assert "diagonal (teacher = student) is self-feedback" in matrix.note
    diagonal = {
        r[1]: r[4]
        for r in tables["matrix_analysis_math_k2"].rows
        if r[0] == "self-feedback (diagonal)"
    }
    assert diagonal == pytest.approx({"acc@K": 1.0, "gain": 1.0})


def test_older_self_feedback_records_are_the_self_critique_column():
    # Records from before self-feedback became the diagonal were written with the critique
    # prompt: their column is self_critique; the diagonal is read from the teacher cells.
    def group(teacher, condition, solved):
        return [
            {
                "protocol": "feedback",
                "problem_id": f"p{i}",
                "domain": "math",
                "student": "A",
                "teacher": teacher,
                "condition": condition,
                "solved_at": s,
                "config": {
                    "k_max": 2,
                    "history": 1,
                    "teacher_reference": "none",
                    "execution_context": "structured",
                    "execution_tests": "visible",
                },
            }  # fmt: skip
            for i, s in enumerate(solved)
        ]

    records = [
        *group("A", "teacher", (1, 2)),  # diagonal: acc@2 = 1
        *group("B", "teacher", (None, 2)),  # acc@2 = 1/2
        *group("never", "self_feedback", (None, None)),  # critique: acc@2 = 0
    ]
    tables = {t.name: t for t in summarize(records, samples=10).tables}
    matrix = tables["matrix_accK_math_k2"]
    assert matrix.columns == ["student", "A", "B", "self_critique"]
    assert matrix.rows == [["A", pytest.approx(1.0), pytest.approx(0.5), pytest.approx(0.0)]]
    diagonal = [
        r for r in tables["matrix_analysis_math_k2"].rows if r[0] == "self-feedback (diagonal)"
    ]
    assert [(r[1], r[4]) for r in diagonal] == [("acc@K", 1.0), ("gain", 0.5)]
