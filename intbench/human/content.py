"""The study's fixed wording: comprehension check and exit questionnaire (with validation)."""

from __future__ import annotations

from collections.abc import Mapping

MAX_TEXT = 4_000
"""Longest accepted message or free-text answer, in characters."""

# question id -> (question, [(value, label), ...], correct value)
_CHECK_COMMON = {
    "messages": (
        "How many messages can you send the student on one question?",
        [("one", "One, after which the student carries on alone"), ("many", "As many as I like")],
        "one",
    ),
}
CHECK = {
    "standard": {
        "reveal": (
            "What does “Reveal more” do?",
            [
                ("next", "Shows the next part (about 50 characters) of the student's reasoning"),
                ("end", "Ends the question"),
                ("send", "Sends my message to the student"),
            ],
            "next",
        ),
        "when": (
            "When can you send a message to the student?",
            [
                ("any", "At any point while the reasoning is shown"),
                ("end", "Only after the whole reasoning"),
            ],
            "any",
        ),
        **_CHECK_COMMON,
    },
    "oracle": {
        "see": (
            "What do you see for each question?",
            [
                (
                    "all",
                    "The student's whole reasoning, its answer, and whether the answer is correct",
                ),
                ("part", "Only the first sentence of the reasoning"),
            ],
            "all",
        ),
        "where": (
            "How do you choose where your message reaches the student?",
            [
                ("click", "I click the place in the student's text"),
                ("end", "It always goes at the end"),
            ],
            "click",
        ),
        **_CHECK_COMMON,
    },
}

# The exit questionnaire asks what Int-Bench App. B.2 lists: years of teaching
# experience, parent or guardian of children (their age ranges), AI tools used during
# the experiment (and how), how the participant decided to intervene, other feedback.
QUESTIONNAIRE_CHOICES = {
    "teaching_years": (
        "How many years of teaching experience do you have (including tutoring)?",
        [
            ("none", "None"),
            ("under_1", "Less than 1 year"),
            ("1_to_3", "1 to 3 years"),
            ("over_3", "More than 3 years"),
        ],
    ),
    "parent": (
        "Are you a parent or guardian of children?",
        [("yes", "Yes"), ("no", "No"), ("undisclosed", "Prefer not to say")],
    ),
    "ai_during": (
        "Did you use AI tools (such as chatbots) during this experiment?",
        [("yes", "Yes"), ("no", "No")],
    ),
}
QUESTIONNAIRE_TEXTS = {
    "children_ages": "If you are a parent or guardian: the age ranges of your children "
    "(for example 0-5, 6-12, 13-17, 18+).",
    "ai_how": "If you used AI tools during the experiment: how did you use them?",
    "strategy": "How did you decide whether and when to help the student?",
    "comments": "Anything else you would like to tell us? (optional)",
}
FOLLOW_UPS = {"children_ages": ("parent", "yes"), "ai_how": ("ai_during", "yes")}
"""Text answers required by a choice: the children's age ranges of a parent or guardian,
how the AI tools were used by someone who used them."""


def check_answers(condition: str, form: Mapping[str, str]) -> list[str]:
    """The ids of the comprehension questions answered wrongly (empty when all are right)."""
    return [qid for qid, (_, _, correct) in CHECK[condition].items() if form.get(qid) != correct]


def questionnaire_answers(form: Mapping[str, str]) -> tuple[dict, list[str]]:
    """-> (cleaned answers, problems to show the participant); answers are valid when no problems."""
    answers, problems = {}, []
    for name, (question, options) in QUESTIONNAIRE_CHOICES.items():
        value = form.get(name, "")
        if value not in {v for v, _ in options}:
            problems.append(f"Please answer: {question}")
        answers[name] = value
    for name, question in QUESTIONNAIRE_TEXTS.items():
        value = form.get(name, "").strip()
        if len(value) > MAX_TEXT:
            problems.append(
                f"Your answer to “{question}” is {len(value)} characters; the limit is {MAX_TEXT}."
            )
        answers[name] = value
    for name, (choice, value) in FOLLOW_UPS.items():
        if answers[choice] == value and not answers[name]:
            problems.append(f"Please answer: {QUESTIONNAIRE_TEXTS[name]}")
    return answers, problems
