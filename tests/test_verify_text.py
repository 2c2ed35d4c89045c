"""Text-match verifier (Linguini) and its normalisation helpers."""

from __future__ import annotations

import pytest

from intbench.records import Problem
from intbench.verifiers import verify
from intbench.verifiers.text import (
    answers_match,
    canonical_answer,
    extract_final_answer,
    final_answer_candidates,
    find_last_boxed,
    normalize_answer,
    normalize_free_text,
    strip_answer_prefix,
    strip_latex,
    verify_text,
)


def _problem(answer, aliases=None) -> Problem:
    fields = {} if aliases is None else {"aliases": aliases}
    return Problem(id="t", domain="linguini", question="q", answer=answer, fields=fields)


# (response, reference, expected correct)
CASES = [
    # plain and case
    ("the dog sleeps", "the dog sleeps", True),
    ("The Dog Sleeps", "the dog sleeps", True),
    ("the  dog\tsleeps", "the dog sleeps", True),
    ("the dog slept", "the dog sleeps", False),
    # LaTeX wrappers
    ("\\boxed{kuma}", "kuma", True),
    ("$\\boxed{kuma}$", "kuma", True),
    ("\\boxed{\\text{kuma}}", "kuma", True),
    ("$kuma$", "kuma", True),
    ("\\text{kuma}, \\text{lapo}", "kuma, lapo", True),
    ("\\boxed{kuma}, or so I thought.\nAnswer: lapo", "kuma", False),
    ("\\text{kuma lapo}", "kuma", False),
    # answer prefixes
    ("The answer is kuma.", "kuma", True),
    ("Answer: kuma", "kuma", True),
    ("Final answer: kuma", "kuma", True),
    ("FINAL ANSWER: Kuma", "kuma", True),
    ("So the final answer is $\\boxed{12}$.", "12", True),
    ("**Answer:** kuma", "kuma", True),
    ("Answer: lapo", "kuma", False),
    # parenthesised choices
    ("(a)", "a", True),
    ("(B)", "b", True),
    ("The answer is (c).", "(C)", True),
    ("(a)", "b", False),
    ("(ab)", "ab", False),
    # numbers
    ("3.0", "3", True),
    ("3", "3.00", True),
    ("0.50", ".5", True),
    ("-2", "-2.0", True),
    ("3.01", "3", False),
    ("3.0.1", "3", False),
    ("1e3", "1000", True),
    # quotes, brackets, trailing punctuation
    ('"kuma"', "kuma", True),
    ("'kuma'", "kuma", True),
    ("\u201ckuma\u201d", "kuma", True),
    ("`kuma`", "kuma", True),
    ("ka'ta", "kata", True),
    ("[kuma, lapo]", "kuma, lapo", True),
    ("kuma,lapo", "kuma, lapo", True),
    ("lapo, kuma", "kuma, lapo", False),
    ("kuma?", "kuma", True),
    ("kuma...", "kuma", True),
    ("kumas", "kuma", False),
    ("kuma!", "kuma", False),
    # extraction: last boxed / answer line / last line
    ("Reasoning here.\nFinal answer:\n\nkuma\n", "kuma", True),
    ("Some reasoning.\nkuma\n\n", "kuma", True),
    ("kuma\nmore reasoning afterwards", "kuma", False),
    # several marked answers must all agree with the last one
    ("I first thought \\boxed{lapo}.\nActually \\boxed{kuma}.", "kuma", False),
    ("Answer: lapo\nWait.\nFinal answer: kuma", "kuma", False),
    ("\\boxed{lapo}\nFinal answer: kuma", "kuma", False),
    ("Final answer: lapo\nLet me box it: \\boxed{kuma}", "kuma", False),
    ("Answer: Kuma\nLet me box it: $\\boxed{\\text{kuma}}$", "kuma", True),
    ("\\boxed{}\nAnswer: kuma", "kuma", True),
]


@pytest.mark.parametrize(("response", "reference", "expected"), CASES)
def test_text_match_table(response, reference, expected):
    verdict = verify(_problem(reference), response)
    assert verdict.correct is expected, (verdict, normalize_answer(response))
    assert verdict.status in ("correct", "incorrect")
    assert verdict.score == (1.0 if expected else 0.0)


def test_table_is_large_enough_and_balanced():
    assert len(CASES) >= 30
    assert sum(expected for *_, expected in CASES) >= 10
    assert sum(not expected for *_, expected in CASES) >= 10


def test_aliases_are_accepted():
    problem = _problem("the big dog", aliases=["the large dog", "a big dog"])
    assert verify_text(problem, "Answer: the large dog").correct
    assert verify_text(problem, "a big dog").correct
    verdict = verify_text(problem, "the small dog")
    assert verdict.status == "incorrect"
    assert verdict.details["reason"] == "mismatch"


def test_single_string_alias_and_non_string_answer():
    assert verify_text(_problem("x", aliases="why"), "why").correct
    assert verify_text(_problem(42), "42.0").correct


def test_feedback_does_not_reveal_reference():
    verdict = verify_text(_problem("secretword"), "Answer: guess")
    assert "secretword" not in verdict.feedback
    assert "guess" in verdict.feedback
    assert verdict.answer == "guess"


@pytest.mark.parametrize("response", ["", "   \n\n", "Answer:", "\\boxed{}", "$$"])
def test_no_answer_is_incorrect(response):
    verdict = verify_text(_problem("kuma"), response)
    assert verdict.status == "incorrect"
    assert verdict.details["reason"] == "no_answer"


@pytest.mark.parametrize("answer", [None, "", "   "])
def test_missing_reference_is_grader_error(answer):
    assert verify_text(_problem(answer), "kuma").status == "error"


def test_helpers():
    assert find_last_boxed("a \\boxed{x{y}} b \\boxed{z") == (2, "x{y}")
    assert find_last_boxed("none") is None
    assert strip_latex("$\\boxed{\\textbf{x}}$") == "x"
    assert strip_latex("$5$ and $6$") == "$5$ and $6$"
    assert normalize_answer("The answer is $\\boxed{3}$.") == "3"
    assert canonical_answer("[(A)]") == "a"
    assert extract_final_answer("") is None
    assert extract_final_answer("x\n\\boxed{y}\n") == "y"
    assert answers_match("3.0", "3")
    assert not answers_match("", "")  # an empty answer never matches


def test_overlong_answer_is_incorrect_with_reason():
    verdict = verify_text(_problem("kuma"), "Answer: " + "kuma " * 300)
    assert verdict.status == "incorrect"
    assert verdict.details["reason"] == "answer_too_long"
    assert "give a short answer" in verdict.feedback


def test_normalize_free_text_keeps_every_line():
    message = 'Hint: think.\nIt\'s \\boxed{Kuma}, "Lapo"  and $x$'
    assert normalize_free_text(message) == "hint: think. its kuma,lapo and x"
    assert canonical_answer("Kuma, Lapo") in normalize_free_text(message)


# Responses an RL policy could try in order to be graded correct without
# committing to the answer "kuma".
HEDGES = [
    "Answer: kuma or lapo",
    "Answer: kuma, lapo, tesi",
    "Answer: lapo/kuma",
    "Answer: (a) kuma (b) lapo",
    "Answer: kuma lapo",
    "\\boxed{kuma\nlapo}",
    "\\boxed{kuma}\n\\boxed{lapo}",
    "\\boxed{lapo}\n\\boxed{kuma}",
    "Answer: kuma\nAnswer: lapo",
    "Answer: lapo\nAnswer: kuma",
    "Answer: lapo, unless the answer is kuma",
    "Answer: lapo. Final answer: kuma",
    "lapo (if not, the answer is kuma)",
    "$kuma$ $lapo$",
    "\\text{kuma} \\text{or} \\text{lapo}",
    "Answer: kuma" + "\n\\boxed{lapo}",
    "Answer: not kuma",
]


@pytest.mark.parametrize("response", HEDGES)
def test_hedged_answers_are_incorrect(response):
    verdict = verify_text(_problem("kuma"), response)
    assert verdict.status == "incorrect", verdict


def test_conflicting_marks_have_their_own_reason():
    verdict = verify_text(_problem("kuma"), "\\boxed{kuma}\nAnswer: lapo\nAnswer: kuma")
    assert verdict.details["reason"] == "conflicting_answers"
    assert "more than one different answer" in verdict.feedback


@pytest.mark.parametrize(
    ("predicted", "reference"),
    [
        ("12345678901234567", "12345678901234568"),
        ("1e16", "10000000000000001"),
        ("0.1", "0.10000000000000001"),
        ("1e400", "1e401"),
        ("ka ta", "kata"),
    ],
)
def test_distinct_answers_stay_distinct_after_normalisation(predicted, reference):
    assert not answers_match(predicted, reference)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("The answer is kuma", "kuma"),
        ("So, the final answer is: kuma", "kuma"),
        ("Answer: kuma", "kuma"),
        ("lapo, unless the answer is kuma", "lapo, unless the answer is kuma"),
        ("answers: kuma", "answers: kuma"),
    ],
)
def test_answer_prefix_is_stripped_only_at_the_start(text, expected):
    assert strip_answer_prefix(text) == expected


def test_exact_numbers_are_written_without_exponent():
    assert canonical_answer("1e3") == canonical_answer("1000") == "1000"
    assert canonical_answer("-0.0") == "0"
    assert canonical_answer("1e400") == "1e400"


def test_candidates_are_every_marked_answer_in_order():
    text = "Answer: a\nthen \\boxed{b}\nFinal answer:\n\n c \nAnswer: \\boxed{d}"
    assert final_answer_candidates(text) == ["a", "b", "c", "\\boxed{d}", "d"]


def test_only_the_graded_part_is_read():
    padding = "\n" + "x" * (64 * 1024)
    assert extract_final_answer("Answer: kuma" + padding) == "x" * (64 * 1024)
    assert verify_text(_problem("kuma"), padding + "\nAnswer: kuma").correct
    # An answer cut off the graded part cannot conflict with the final one.
    assert verify_text(_problem("kuma"), "Answer: lapo" + padding + "\nAnswer: kuma").correct


# Issue 38: a box is the marked answer and is graded alone, so words after it on the
# same line are not read (`$\boxed{cat}$ dog` is cat: the words earn nothing, since a
# second answer must be marked to be graded, and two marked answers must agree).  A box
# that is one operand of an expression is graded as that expression.
@pytest.mark.parametrize(
    ("answer", "response", "correct"),
    [
        ("cat", r"$\boxed{cat}$ dog", True),
        ("cat", r"\boxed{cat} or dog", True),
        ("dog", r"$\boxed{cat}$ dog", False),
        ("cat", r"\boxed{cat}, \boxed{dog}", False),
        ("cat", r"\boxed{\boxed{cat} dog}", False),
        ("3", r"$-\boxed{3}$", False),
        ("3", r"$\boxed{3}^2$", False),
        ("3", r"$\frac{1}{\boxed{3}}$", False),
        ("3", r"$2\boxed{3}$", False),
        ("3", r"$x = \boxed{3}$", True),
        ("3", r"**\boxed{3}**", True),
    ],
)
def test_probed_boxes(answer, response, correct):
    assert verify(_problem(answer), response).correct is correct
