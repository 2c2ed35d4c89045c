"""A domain defined outside IntBench, in one file: reverse a word.

Importing this module registers it, so every protocol's env, ``intbench
eval`` and ``intbench report`` work on it; ``reverser`` is a scripted student
that solves it (``scripted:tests.third_party_domain:reverser``).
"""

from __future__ import annotations

import random
import re
import string

from intbench import Problem, Verdict, register_domain
from intbench.envs.domains import Domain, ProceduralVariants

NAME = "reverse_word"
QUESTION = "Write the word {word!r} backwards."
_ANSWER_LINE = re.compile(r"^\s*Answer:\s*(\S*)\s*$", re.MULTILINE)


def make_problem(word: str, split: str, index: int) -> Problem:
    return Problem(
        id=f"{NAME}/{split}/{index}",
        domain=NAME,
        question=QUESTION.format(word=word),
        answer=word[::-1],
        fields={"params": {"word": word, "split": split, "index": index}},
        metadata={"source": "third-party example", "split": split, "skill": "reversal"},
    )


def _word(rng: random.Random) -> str:
    return "".join(rng.choice(string.ascii_lowercase) for _ in range(rng.randint(4, 9)))


def generate(split: str, n: int | None, seed: int) -> list[Problem]:
    rng = random.Random(f"{split}/{seed}")
    return [make_problem(_word(rng), split, index) for index in range(n or 20)]


def row_to_problem(row: dict, split: str, index: int) -> Problem:
    """A row of a local file: ``{"word": ...}``."""
    return make_problem(str(row["word"]), split, index)


def verify_reversal(problem: Problem, response: str) -> Verdict:
    """Exact match of the last ``Answer:`` line."""
    answers = _ANSWER_LINE.findall(response)
    if not answers:
        return Verdict(status="incorrect", score=0.0, feedback="no 'Answer:' line")
    right = answers[-1] == problem.answer
    return Verdict(status="correct" if right else "incorrect", score=float(right))


def make_variant(problem: Problem, seed: int) -> Problem:
    params = problem.fields["params"]
    word = _word(random.Random(f"{problem.id}/{seed}"))
    variant = make_problem(word, params["split"], params["index"])
    return Problem(**{**variant.to_dict(), "id": f"{problem.id}/variant/{seed}"})


def rebuild(problem: Problem) -> Problem:
    params = problem.fields["params"]
    rebuilt = make_problem(params["word"], params["split"], params["index"])
    return Problem(**{**rebuilt.to_dict(), "id": problem.id})


DOMAIN = register_domain(
    Domain(
        name=NAME,
        env_name="ReverseWord",
        description="reverse a word, letter by letter",
        kind="text",
        answer_format='End with a final line of the form "Answer: the reversed word".',
        verifier=verify_reversal,
        row_to_problem=row_to_problem,
        offline_loader=generate,
        offline_splits=("test", "train"),
        offline_source="random lowercase words",
        procedural=True,
        procedural_variants=ProceduralVariants(
            make_variant=make_variant,
            rebuild=rebuild,
            reference_response=lambda problem: f"Answer: {problem.answer}",
        ),
    )
)


def reverser(messages: list[dict]) -> str:
    """A student that reverses the last word the prompt asks about."""
    text = "\n".join(message["content"] for message in messages)
    words = re.findall(r"Write the word '([a-z]+)' backwards", text)
    return f"Reading the word from the end.\nAnswer: {words[-1][::-1] if words else ''}"
