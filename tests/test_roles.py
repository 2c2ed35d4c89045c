"""Student, Teacher and Judge roles with scripted backends: prompts, batching,
verification and malformed output."""

from __future__ import annotations

import logging

import pytest

from intbench.agents.backends.scripted import ScriptedBackend
from intbench.agents.base import Completion, SamplingParams
from intbench.agents.roles import (
    AttemptRequest,
    ContinueRequest,
    FeedbackRequest,
    Judge,
    MonitorRequest,
    OracleRequest,
    Student,
    Teacher,
)
from intbench.envs.domains.prompting import render_messages
from intbench.records import Problem
from intbench.verifiers.judge import quote_answer

PROBLEMS = [
    Problem(id="p1", domain="math", question="What is 2 + 3?", answer="5", solution="2 + 3 = 5."),
    Problem(id="p2", domain="math", question="What is 4 * 6?", answer="24", solution="4 * 6 = 24."),
]

# Malformed outputs every role must survive: empty, truncated, missing tags/fields, other language.
MALFORMED = [
    "",
    "Intervene: Ye",
    "I think the student is doing fine overall.",
    "Intervenir: Sí\nIntervención: revisa el paso 2",
    "<feedback>the second step is",
    "Verdict:",
]


class Recorder:
    """A scripted responder that records every batch it is called with."""

    def __init__(self, reply):
        self.reply = reply
        self.calls: list[tuple[list, SamplingParams]] = []
        self.backend = ScriptedBackend(self._respond)
        original = self.backend.generate

        def generate(batch, params):
            self.calls.append((batch, params))
            return original(batch, params)

        self.backend.generate = generate

    def _respond(self, messages, params):
        return self.reply(messages) if callable(self.reply) else self.reply


def test_student_baseline_is_one_batched_call_with_the_baseline_template():
    recorder = Recorder(lambda m: "5 and 24 ... so \\boxed{5}")
    attempts = Student(recorder.backend).baseline(PROBLEMS)
    assert len(recorder.calls) == 1
    batch, params = recorder.calls[0]
    assert batch == [render_messages("math", "student_baseline", problem=p) for p in PROBLEMS]
    assert params.temperature == SamplingParams().temperature
    assert [a.answer for a in attempts] == ["5", "5"]
    assert [a.status for a in attempts] == ["correct", "incorrect"]
    assert attempts[0].completion_tokens == 6  # scripted backends count words
    assert attempts[0].prompt_tokens > 0


def test_student_continue_and_stop_use_update_templates():
    recorder = Recorder("So the answer is \\boxed{5}")
    student = Student(recorder.backend)
    requests = [ContinueRequest(PROBLEMS[0], "2 + 3 is", "Add carefully.")]
    continued = student.continue_after(requests)
    stopped = student.stop_and_answer(requests)
    sent_continue, sent_stop = recorder.calls[0][0][0], recorder.calls[1][0][0]
    vars_ = {"problem": PROBLEMS[0], "prefix": "2 + 3 is", "message": "Add carefully."}
    assert sent_continue == render_messages("math", "student_continue", **vars_)
    assert sent_stop == render_messages("math", "student_stop_answer", **vars_)
    assert "<update>Add carefully.</update>" in sent_continue[-1]["content"]
    assert continued[0].status == "correct"
    assert stopped[0].text == "So the answer is \\boxed{5}"


def test_student_attempts_follow_the_feedback_protocol():
    recorder = Recorder("\\boxed{5}")
    student = Student(recorder.backend, "math")
    history = [{"attempt": "\\boxed{6}", "feedback": None}]
    student.attempt(
        [
            AttemptRequest(PROBLEMS[0]),
            AttemptRequest(PROBLEMS[0], history, "Recount."),
            AttemptRequest(PROBLEMS[0], history, None),
        ]
    )
    first, with_feedback, self_refine = recorder.calls[0][0]
    assert len(recorder.calls) == 1
    assert first == render_messages("math", "feedback_student", problem=PROBLEMS[0])
    assert with_feedback == render_messages(
        "math",
        "feedback_student_retry",
        problem=PROBLEMS[0],
        history=history,
        feedback_text="Recount.",
    )
    assert self_refine == render_messages(
        "math", "feedback_student_retry", problem=PROBLEMS[0], history=history, feedback_text=None
    )
    assert "Recount." in with_feedback[-1]["content"]
    assert "Recount." not in self_refine[-1]["content"]


def test_student_rejects_problems_of_another_domain():
    other = Problem(id="t", domain="brainteaser", question="Riddle?", answer="egg")
    with pytest.raises(ValueError, match="domain 'math'"):
        Student(Recorder("x").backend, "math").baseline([other])


def test_student_backend_error_is_an_error_verdict(caplog):
    backend = ScriptedBackend(
        lambda m: Completion(text="", error="server down", finish_reason="error")
    )
    with caplog.at_level(logging.WARNING):
        (attempt,) = Student(backend).baseline(PROBLEMS[:1])
    assert attempt.status == "error"
    assert attempt.finish_reason == "error"
    assert "server down" in caplog.text


@pytest.mark.parametrize("text", MALFORMED)
def test_student_malformed_output_is_verified_not_raised(text):
    (attempt,) = Student(Recorder(text).backend).baseline(PROBLEMS[:1])
    assert attempt.text == text
    assert attempt.status in ("incorrect", "error")


@pytest.mark.parametrize("variant", ["default", "v2", "v3", "append"])
def test_teacher_monitor_uses_the_variant_template(variant):
    recorder = Recorder("Intervene: Yes\nTime: step 1\nIntervention: Recheck the sum.")
    teacher = Teacher(recorder.backend, variant=variant, chunk_size=50)
    requests = [MonitorRequest(p, "The sum is", p.solution) for p in PROBLEMS]
    decisions = teacher.monitor(requests)
    assert len(recorder.calls) == 1
    name = {"default": "teacher_standard"}.get(variant, f"teacher_standard_{variant}")
    assert recorder.calls[0][0][1] == render_messages(
        "math",
        name,
        problem=PROBLEMS[1],
        transcript="The sum is",
        chunk_size=50,
        reference=PROBLEMS[1].solution,
    )
    assert recorder.calls[0][1].temperature == 0.0
    assert all(d.intervene and d.message == "Recheck the sum." for d in decisions)
    assert decisions[0].time == "step 1"


def test_teacher_rejects_unknown_variant():
    with pytest.raises(ValueError, match="variant"):
        Teacher(Recorder("x").backend, variant="v9")


@pytest.mark.parametrize("text", MALFORMED + ["Intervene: Yes\nTime: now\nIntervention: N/A"])
def test_teacher_malformed_monitor_output_is_a_logged_wait(text, caplog):
    teacher = Teacher(Recorder(text).backend)
    with caplog.at_level(logging.WARNING, logger="intbench.agents.roles"):
        (decision,) = teacher.monitor([MonitorRequest(PROBLEMS[0], "2 + 3", None)])
    assert decision.intervene is False and decision.message is None
    assert decision.error
    assert "treated as wait" in caplog.text


def test_teacher_wait_is_not_an_error():
    (decision,) = Teacher(Recorder("Intervene: No\nTime: N/A\nIntervention: N/A").backend).monitor(
        [MonitorRequest(PROBLEMS[0], "2 + 3", None)]
    )
    assert decision.intervene is False and decision.error is None


def test_teacher_oracle_prompt_and_parse():
    recorder = Recorder("Intervene: Yes\nQuote: so the sum is six\nIntervention: Count again.")
    request = OracleRequest(PROBLEMS[0], "2 + 3, so the sum is six.", "6", "incorrect", "5")
    (decision,) = Teacher(recorder.backend).oracle([request])
    assert recorder.calls[0][0][0] == render_messages(
        "math",
        "teacher_oracle",
        problem=PROBLEMS[0],
        transcript=request.transcript,
        student_answer="6",
        verdict="incorrect",
        reference="5",
    )
    assert (decision.intervene, decision.quote, decision.message) == (
        True,
        "so the sum is six",
        "Count again.",
    )


@pytest.mark.parametrize("text", MALFORMED)
def test_teacher_malformed_oracle_output_means_no_intervention(text):
    request = OracleRequest(PROBLEMS[0], "t", "6", "incorrect")
    (decision,) = Teacher(Recorder(text).backend).oracle([request])
    assert decision.intervene is False and decision.error and decision.message is None


def test_teacher_feedback_prompt_and_parse():
    recorder = Recorder(
        "<think>They added wrong.</think><feedback>Recheck the addition.</feedback>"
    )
    request = FeedbackRequest(PROBLEMS[0], "\\boxed{6}", reference="5", reference_kind="answer")
    (result,) = Teacher(recorder.backend).feedback([request])
    assert recorder.calls[0][0][0] == render_messages(
        "math",
        "feedback_teacher",
        problem=PROBLEMS[0],
        history=[],
        latest_attempt="\\boxed{6}",
        execution_context=None,
        reference="5",
        reference_kind="answer",
    )
    assert (result.message, result.tagged, result.error) == ("Recheck the addition.", True, None)
    with pytest.raises(ValueError, match="reference_kind"):
        Teacher(recorder.backend).feedback(
            [FeedbackRequest(PROBLEMS[0], "x", reference_kind="all")]
        )


@pytest.mark.parametrize(
    ("text", "message", "has_error"),
    [
        ("", "", True),
        ("<feedback>the second step is", "the second step is", True),
        ("Check step two.", "Check step two.", False),  # untagged: the raw reply is used
        ("<feedback></feedback>", "", True),
    ],
)
def test_teacher_feedback_malformed(text, message, has_error):
    (result,) = Teacher(Recorder(text).backend).feedback([FeedbackRequest(PROBLEMS[0], "x")])
    assert result.message == message
    assert bool(result.error) == has_error


def test_student_self_feedback_uses_its_template():
    recorder = Recorder("<feedback>I multiplied instead of adding.</feedback>")
    (result,) = Student(recorder.backend).self_feedback(
        [FeedbackRequest(PROBLEMS[0], "\\boxed{6}")]
    )
    assert recorder.calls[0][0][0] == render_messages(
        "math",
        "feedback_self_feedback",
        problem=PROBLEMS[0],
        history=[],
        latest_attempt="\\boxed{6}",
        execution_context=None,
    )
    assert result.message == "I multiplied instead of adding."


def test_judge_batches_and_scores():
    def reply(messages):
        return (
            "Verdict: Correct\nExplanation: same."
            if "five" in messages[-1]["content"]
            else ("Verdict: Incorrect\nExplanation: differs.")
        )

    recorder = Recorder(reply)
    judge = Judge(recorder.backend, "brainteaser")
    riddles = [
        Problem(id=f"r{i}", domain="brainteaser", question="How many?", answer="5")
        for i in range(3)
    ]
    verdicts = judge.judge(riddles, ["It is five.", "It is six.", ""])
    assert len(recorder.calls) == 1 and len(recorder.calls[0][0]) == 2  # the empty one is not sent
    assert [v.status for v in verdicts] == ["correct", "incorrect", "incorrect"]
    sent = recorder.calls[0][0][0]
    expected = render_messages(
        "brainteaser", "judge", question="How many?", reference="5",
        response=quote_answer("It is five."),
    )  # fmt: skip
    assert sent[-1]["content"] == expected[-1]["content"]
    assert sent[:-1] == expected[:-1]


@pytest.mark.parametrize("text", MALFORMED + ["Verdict: Correct\nVerdict: Incorrect"])
def test_judge_malformed_output_is_an_error_verdict(text, caplog):
    with caplog.at_level(logging.WARNING, logger="intbench.agents.roles"):
        (verdict,) = Judge(Recorder(text).backend, "brainteaser").judge(
            [Problem(id="r", domain="brainteaser", question="Q?", answer="egg")], ["an egg"]
        )
    assert verdict.status == "error"
    assert "no verdict" in caplog.text


def test_judge_backend_failure_is_an_error_verdict():
    backend = ScriptedBackend(lambda m: Completion(text="", error="timeout", finish_reason="error"))
    (verdict,) = Judge(backend).judge([PROBLEMS[0]], ["5"])
    assert verdict.status == "error" and "timeout" in verdict.feedback
    with pytest.raises(ValueError, match="responses"):
        Judge(backend).judge(PROBLEMS, ["5"])
