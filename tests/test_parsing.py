"""Parsers of teacher outputs: well-formed replies, and malformed ones (empty,
truncated, missing tags, other languages) that must give a defined result."""

from __future__ import annotations

import pytest

from intbench.agents.parsing import (
    parse_feedback,
    parse_leak_check,
    parse_monitor_decision,
    parse_oracle_decision,
    strip_think,
)

# (text, intervene, time, message) for well-formed Standard replies
GOOD_MONITOR = [
    ("Intervene: No\nTime: N/A\nIntervention: N/A", False, None, None),
    ("Intervene: no", False, None, None),
    (
        "Intervene: Yes\nTime: the modulus step\nIntervention: Recheck 7 mod 5.",
        True,
        "the modulus step",
        "Recheck 7 mod 5.",
    ),
    (
        "**Intervene:** Yes\n**Time:** step 2\n**Intervention:** Check the sign.\nThen recompute.",
        True,
        "step 2",
        "Check the sign.\nThen recompute.",
    ),
    ("  INTERVENE :  YES.\nIntervention: Look again.", True, None, "Look again."),
    ('**Intervene: Yes**\nIntervention: "Try small cases."', True, None, "Try small cases."),
    (
        "<think>The student divides by zero. Intervene: No?</think>\nIntervene: Yes\nIntervention: x is 0 here.",
        True,
        None,
        "x is 0 here.",
    ),
    (
        "Some preamble.\n- Intervene: No, the reasoning is fine and no help is needed.",
        False,
        None,
        None,
    ),
    (
        "Intervene: Yes, there is no justification for step 3\nIntervention: Justify step 3.",
        True,
        None,
        "Justify step 3.",
    ),
    (
        "Intervene: Yes\nIntervention: Use the identity.\nTime: now",
        True,
        "now",
        "Use the identity.",
    ),
    ("Intervene: Yes\nIntervene: Yes\nIntervention: Twice said.", True, None, "Twice said."),
]


@pytest.mark.parametrize("text, intervene, time, message", GOOD_MONITOR)
def test_monitor_decision_good(text, intervene, time, message):
    decision = parse_monitor_decision(text)
    assert decision.error is None and decision.ok
    assert decision.intervene is intervene
    assert decision.should_intervene is intervene
    assert decision.time == time
    assert decision.message == message


# (text, fragment expected in the error)
MALFORMED_MONITOR = [
    ("", "empty"),
    ("   \n ", "empty"),
    ("<think>Let me look at the student's work and", "empty"),  # truncated inside think
    ("Intervene", "missing"),  # truncated before the value
    ("Intervene: ", "must be Yes or No"),
    ("Intervene: Yes/No\nTime: N/A\nIntervention: N/A", "both Yes and No"),
    ("Intervene: Yes or No", "both Yes and No"),
    ("Intervene: Yes\nIntervene: No\nIntervention: hmm", "conflicting"),
    ("Intervene: Yes\nTime: now", "without an 'Intervention:'"),
    ("Intervene: Yes\nIntervention: N/A", "without an 'Intervention:'"),
    ("Intervene: Yes\nIntervention:", "without an 'Intervention:'"),
    ("Intervenir: Oui\nIntervention: Vérifiez le calcul.", "missing"),  # other language
    ("介入: 是\n介入内容: 检查第二步", "missing"),
    ("Intervene: Maybe\nIntervention: x", "must be Yes or No"),
    ("I think the student is fine.", "missing"),
    (None, "expected text"),
    (42, "expected text"),
]


@pytest.mark.parametrize("text, fragment", MALFORMED_MONITOR)
def test_monitor_decision_malformed_counts_as_wait(text, fragment):
    decision = parse_monitor_decision(text)
    assert decision.error is not None and fragment in decision.error
    assert decision.intervene is None
    assert not decision.should_intervene and not decision.ok


GOOD_ORACLE = [
    (
        "Intervene: Yes\nQuote: so the powers cycle with\nIntervention: What is 2^2 mod 5?",
        True,
        "so the powers cycle with",
        "What is 2^2 mod 5?",
    ),
    (
        '**Intervene:** Yes\n**Quote:** "Since 100 = 4 *"\n**Intervention:** Recount.',
        True,
        "Since 100 = 4 *",
        "Recount.",
    ),
    ("Intervene: No\nQuote: N/A\nIntervention: N/A", False, None, None),
    # a missing quote is the env's "no quote" exclusion, not a format error
    ("Intervene: Yes\nIntervention: Recheck the period.", True, None, "Recheck the period."),
]


@pytest.mark.parametrize("text, intervene, quote, message", GOOD_ORACLE)
def test_oracle_decision_good(text, intervene, quote, message):
    decision = parse_oracle_decision(text)
    assert decision.ok
    assert (decision.intervene, decision.quote, decision.message) == (intervene, quote, message)


@pytest.mark.parametrize(
    "text, fragment",
    [
        ("", "empty"),
        ("Quote: the powers cycle with period\nIntervention: hi", "missing"),
        ("Intervene: Yes\nQuote: a b c d e", "without an 'Intervention:'"),
        ("Intervenir: Sí\nCita: las potencias", "missing"),
    ],
)
def test_oracle_decision_malformed(text, fragment):
    decision = parse_oracle_decision(text)
    assert fragment in decision.error
    assert decision.intervene is None and not decision.should_intervene


@pytest.mark.parametrize(
    "text, expected, tagged, error",
    [
        ("<feedback>Check step 2.</feedback>", "Check step 2.", True, None),
        (
            "<think>step 2 is wrong</think>\n<feedback>\nRecheck the sign.\n</feedback>",
            "Recheck the sign.",
            True,
            None,
        ),
        ("<feedback>first</feedback> then <FEEDBACK>second</FEEDBACK>", "second", True, None),
        ("<think><feedback>draft</feedback></think>Plain advice.", "Plain advice.", False, None),
        ("  Just recheck your algebra.  ", "Just recheck your algebra.", False, None),
        ("<feedback>Check the base ca", "Check the base ca", False, "unclosed"),
        ("<feedback>  </feedback>", "", True, "empty"),
        ("", "", False, "empty"),
        ("<think>only thinking, then cut off", "", False, "empty"),
        ("Revisa el paso dos.", "Revisa el paso dos.", False, None),
        (None, "", False, "expected text"),
    ],
)
def test_parse_feedback(text, expected, tagged, error):
    result = parse_feedback(text)
    assert result.text == expected
    assert result.tagged is tagged
    if error is None:
        assert result.ok
    else:
        assert error in result.error


@pytest.mark.parametrize(
    "text, expected",
    [
        ("<think>a</think>answer", "answer"),
        ("<THINK>a\nb</THINK>\n  answer  ", "answer"),
        ("<think>a</think>x<think>b</think>y", "xy"),
        ("answer <think>cut off", "answer"),
        ("hidden reasoning</think>visible", "visible"),
        ("no tags", "no tags"),
        ("", ""),
        (None, ""),
    ],
)
def test_strip_think(text, expected):
    assert strip_think(text) == expected


@pytest.mark.parametrize(
    "text, leak, reason, error",
    [
        ("Leak: Yes\nReason: It states the answer 4.", True, "It states the answer 4.", None),
        ("**Leak:** no\n**Reason:** Only strategy.", False, "Only strategy.", None),
        ("Leak: Yes/No", None, None, "both"),
        ("Fuite: Oui", None, None, "missing"),
        ("", None, None, "empty"),
    ],
)
def test_parse_leak_check(text, leak, reason, error):
    result = parse_leak_check(text)
    assert result.leak is leak
    assert result.reason == reason
    if error is None:
        assert result.ok
    else:
        assert error in result.error


def test_parsers_read_the_formats_the_templates_ask_for():
    """The output-format lines in the templates, filled in, parse back."""
    from intbench.envs.domains.prompting import render_system
    from intbench.records import Problem

    problem = Problem(id="p", domain="math", question="1+1?", answer="2", solution="1+1=2")
    standard = render_system(
        "math", "teacher_standard", problem=problem, transcript="t", chunk_size=50, reference=None
    )
    oracle = render_system(
        "math",
        "teacher_oracle",
        problem=problem,
        transcript="t",
        student_answer="3",
        verdict="incorrect",
        reference=None,
    )
    assert "Intervene: [Yes/No]\nIntervention:" in standard and "Quote:" in oracle
    reply = "Intervene: Yes\nTime: the first line\nIntervention: Count again."
    assert parse_monitor_decision(reply).should_intervene
    reply = "Intervene: Yes\nQuote: one two three four five\nIntervention: Count again."
    assert parse_oracle_decision(reply).quote == "one two three four five"
