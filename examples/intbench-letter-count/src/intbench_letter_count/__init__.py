"""An IntBench domain shipped as a separate package: how often does a letter occur in a word?

Installing the package is all a user does: IntBench reads the entry point in
``pyproject.toml`` at import, so the domain is in ``intbench.DOMAINS``,
``intbench data list`` and the ``IntBench-LetterCount-*`` env ids.
``counter`` is a scripted student that always answers right
(``--student scripted:intbench_letter_count:counter``).
"""

from __future__ import annotations

import random
import re

from intbench import Problem, Verdict
from intbench.envs.domains import Domain

NAME = "letter_count"
QUESTION = "How many times does the letter {letter!r} occur in the word {word!r}?"
_ANSWER_LINE = re.compile(r"^\s*Answer:\s*(\d+)\s*$", re.MULTILINE)
_ASKED = re.compile(r"the letter '([a-z])' occur in the word '([a-z]+)'")


def make_problem(word: str, letter: str, split: str, index: int) -> Problem:
    return Problem(
        id=f"{NAME}/{split}/{index}",
        domain=NAME,
        question=QUESTION.format(letter=letter, word=word),
        answer=str(word.count(letter)),
        metadata={"source": "intbench-letter-count example", "split": split},
    )


def generate(split: str, n: int | None, seed: int) -> list[Problem]:
    rng = random.Random(f"{split}/{seed}")
    problems = []
    for index in range(n or 20):
        word = "".join(rng.choice("abcde") for _ in range(rng.randint(5, 12)))
        problems.append(make_problem(word, rng.choice(word), split, index))
    return problems


def row_to_problem(row: dict, split: str, index: int) -> Problem:
    """A row of a local file: ``{"word": ..., "letter": ...}``."""
    return make_problem(str(row["word"]), str(row["letter"]), split, index)


def verify_count(problem: Problem, response: str) -> Verdict:
    """The last ``Answer: N`` line equals the count."""
    answers = _ANSWER_LINE.findall(response)
    if not answers:
        return Verdict(status="incorrect", score=0.0, feedback="no 'Answer: N' line")
    right = answers[-1] == problem.answer
    return Verdict(status="correct" if right else "incorrect", score=float(right))


def counter(messages: list[dict]) -> str:
    """A scripted student that counts the letter the last question asks about."""
    asked = _ASKED.findall("\n".join(message["content"] for message in messages))
    letter, word = asked[-1] if asked else ("", "")
    return f"Counting one letter at a time.\nAnswer: {word.count(letter) if letter else 0}"


DOMAIN = Domain(
    name=NAME,
    env_name="LetterCount",
    description="count how often a letter occurs in a word (example plugin)",
    kind="text",
    answer_format='End with a final line of the form "Answer: N".',
    verifier=verify_count,
    row_to_problem=row_to_problem,
    offline_loader=generate,
    offline_splits=("test", "train"),
    offline_source="random words over a-e",
    procedural=True,
)

__all__ = ["DOMAIN", "counter"]
