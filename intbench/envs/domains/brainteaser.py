"""Brain teasers: Braingle puzzles from the hub or a local file, ``pyriddle`` riddles offline.

Int-Bench (App. A.1) scraped Braingle.com itself: the categories Riddle,
Language, Rebus and Group, difficulty <= 2.0 and fun >= 2.0 (both out of 4),
no questions with images, then a random sample of 500.  That set is not
public, so two sources stand in for it:

* A local Braingle export (``source="braingle.csv"``, also JSONL/JSON/Parquet)
  with the public CSVs' columns ``Title, Question, Answer, Hint, Popularity,
  Fun, Difficulty`` (and ``Category`` where present).  The paper's filters
  apply by default (:data:`PAPER_FILTER`, see :class:`BraingleFilter`); the
  500-problem sample is ``n=500`` with a seed.  :func:`load_braingle` takes
  other filters.
* The hub set ``ChenLiu1996/Brainteaser`` of "Creativity or Brute Force?"
  (NeurIPS 2025), also scraped from Braingle.  It is gated (accept its terms,
  then log in) and its card shows no schema, so the columns are NOT
  confirmed.  Its categories are Math and Logic, none of the paper's four, so
  the category filter does not apply to it.

Columns are matched case-insensitively: the statement in
``question``/``content``/``problem`` (with an optional ``title``), the short
answer in ``answer``, a worked explanation in ``explanation``/``solution``,
optional ``aliases`` and ``hint``.  When a row has no explanation column,
``answer`` is taken as the explanation (Braingle's ``Answer`` is one) and the
short answer is cut from it by :func:`short_answer`.

Offline: the 386 riddle -> answer pairs of ``pyriddle`` (MIT).
"""

from __future__ import annotations

import dataclasses
import functools
import html
import math
import os
import re
from dataclasses import dataclass
from typing import Any

from intbench.envs.domains.base import (
    BUILTIN_TEMPLATES,
    Domain,
    HubRef,
    MissingColumns,
    SkipRow,
    as_list,
    hub_provenance,
    load_local,
    provenance,
)
from intbench.records import Problem

HUB_ID = "ChenLiu1996/Brainteaser"
PYRIDDLE_LICENSE = "MIT"
PYRIDDLE_URL = "https://pypi.org/project/pyriddle/"
BRAINGLE_TERMS = "Braingle content: the site's terms of use (not redistributed)"
PAPER_CATEGORIES = ("Riddle", "Language", "Rebus", "Group")
PAPER_SAMPLE = 500
"""Int-Bench's sample size: ``load_problems("brainteaser", source=PATH, n=500, seed=...)``."""
# A short final "Answer:" line that the judge and the text-match fallback read.
ANSWER_FORMAT = (
    'End with a final line of the form "Answer: your answer", stating the answer briefly.'
)


@dataclass(frozen=True)
class BraingleFilter:
    """Which Braingle rows to keep; ``None`` turns a criterion off.

    The filters apply to Braingle-shaped rows only: rows with numeric ``fun``
    and ``difficulty`` ratings (other sources' rows are kept whole).  The
    category filter needs a ``category`` column and skips the hub set, whose
    categories differ from the paper's.

    Attributes:
        max_difficulty: keep ``difficulty <= max_difficulty`` (paper: 2.0 of 4).
        min_fun: keep ``fun >= min_fun`` (paper: 2.0 of 4; the paper calls it popularity).
        categories: keep these categories (case-insensitive; paper: Riddle,
            Language, Rebus, Group).
        drop_images: drop questions that embed an image (an ``<img>`` tag or a
            link to an image file); the paper also dropped questions whose words
            suggested visuals, with a keyword list it does not give.
    """

    max_difficulty: float | None = 2.0
    min_fun: float | None = 2.0
    categories: tuple[str, ...] | None = PAPER_CATEGORIES
    drop_images: bool = True

    def rejects(self, row: dict, split: str) -> str | None:
        """Why the (lower-cased) ``row`` is dropped, or ``None`` if it is kept."""
        difficulty, fun = _number(row.get("difficulty")), _number(row.get("fun"))
        if difficulty is None or fun is None:
            return None  # not Braingle-shaped
        if self.max_difficulty is not None and difficulty > self.max_difficulty:
            return f"difficulty {difficulty:g} > {self.max_difficulty:g}"
        if self.min_fun is not None and fun < self.min_fun:
            return f"fun {fun:g} < {self.min_fun:g}"
        category = row.get("category")
        if self.categories is not None and category is not None and _from_file(split):
            wanted = {c.strip().lower() for c in self.categories}
            if str(category).strip().lower() not in wanted:
                return f"category {category!r} is not one of {list(self.categories)}"
        if self.drop_images and _IMAGE.search(str(_statement(row))):
            return "the question embeds an image"
        return None


PAPER_FILTER = BraingleFilter()
"""Int-Bench App. A.1: difficulty <= 2.0, fun >= 2.0, the four categories, no images."""
NO_FILTER = BraingleFilter(max_difficulty=None, min_fun=None, categories=None, drop_images=False)

_IMAGE = re.compile(r"<\s*img\b|\.(?:gif|jpe?g|png|svg|webp|bmp)\b", re.I)


def _from_file(split: str) -> bool:
    return split == "local"


def _number(value) -> float | None:
    if value is None or isinstance(value, bool):
        return None
    try:
        number = float(str(value).strip())
    except ValueError:
        return None
    return number if math.isfinite(number) else None


def _lower_keys(row: dict) -> dict:
    """The row with lower-case column names (an exactly lower-case name wins a clash)."""
    lowered: dict = {}
    for key, value in row.items():
        name = str(key).strip().lower()
        if name not in lowered or str(key) == name:
            lowered[name] = value
    return lowered


def _text(row: dict, *keys: str) -> str | None:
    for key in keys:
        value = row.get(key)
        if isinstance(value, float) and math.isnan(value):
            continue  # an empty CSV cell read by pandas
        if value is not None and str(value).strip():
            return str(value)
    return None


def _statement(row: dict) -> str | None:
    return _text(row, "question", "content", "problem")


# --- the short answer inside an explanation ---------------------------------------

# "Answer: X", "The answer is - X", "Solution: X", "A: X" at the start of the text.
_LABEL = re.compile(
    r"^\s*(?:(?:the\s+)?(?:answer|solution)(?:\s+is)?\s*[:\-\u2013\u2014]|a\s*:)\s*", re.I
)
# Sentence ends: . ! ? (with closing quotes/brackets) before the next word.
_END = re.compile(r"[.!?]+[\"'\u201d\u2019)\]]*(?=\s)")
# A full stop after these words (or after a single letter or a number) ends no sentence.
_ABBREVIATIONS = {
    "mr", "mrs", "ms", "dr", "st", "jr", "sr", "mt", "no", "vs", "etc", "e.g", "i.e",
    "a.m", "p.m", "u.s", "approx", "ft", "in", "oz", "lb", "lbs", "sq",
}  # fmt: skip
_BREAK = re.compile(r"<\s*br\s*/?\s*>|</\s*p\s*>", re.I)
_TAG = re.compile(r"<[^>]+>")


def _plain(text: str) -> str:
    return html.unescape(_TAG.sub("", _BREAK.sub("\n", text)))


_INITIAL = re.compile(r"[A-Za-z]\.")
_LIST_ITEM = re.compile(r"^\(?\d{1,2}[.)]\s+")


def _first_sentence(line: str) -> str:
    tokens = line.split()
    for match in _END.finditer(line):
        before = line[: match.start()].split()
        word = before[-1].lower() if before else ""
        if match.group().startswith("."):
            if word.rstrip(".") in _ABBREVIATIONS:
                continue
            if len(word) == 1:  # an initial only next to another: "J. R. Tolkien"
                position = len(before) - 1
                neighbours = (
                    tokens[max(position - 1, 0) : position] + tokens[position + 1 : position + 2]
                )
                if any(_INITIAL.fullmatch(t) for t in neighbours):
                    continue
        rest = line[match.end() :].lstrip()
        if rest[:1].isupper() or rest[:1].isdigit() or rest[:1] in "\"'\u201c\u2018([":
            return line[: match.end()]
    return line


def short_answer(explanation: str) -> str:
    """The short answer at the start of a worked explanation (Braingle's ``Answer``).

    The rule, in order:

    1. HTML line breaks become new lines, other tags go, entities are decoded.
    2. A leading label (``Answer:``, ``The answer is -``, ``Solution:``, ``A:``)
       is removed; if nothing follows it on its line, the next line is used.
    3. The first non-empty line is kept.  If it ends with a colon and lines
       follow ("The words are:"), the answer is the next block of lines,
       joined with ``"; "``.
    4. A numbered list ("1. ...", "2) ...") is the answer whole: its lines
       joined with ``"; "``, or its one line if the items share a line.
    5. Otherwise, the first sentence of that line: up to the first ``.``, ``!``
       or ``?`` followed by a capitalised word or a digit, where a full stop
       after an abbreviation (``Mr.``, ``St.``, ``e.g.``) or after an initial
       (a single letter next to another one, as in ``J. R. Tolkien``) does not
       count; a single letter alone is an answer (``E. They are ...``).
    6. A final ``.`` or ``!`` is removed (a ``?`` stays).

    Explanations with no sentence break give their whole first line, so a
    short answer passes through unchanged (apart from step 6).
    """
    text = _plain(str(explanation)).strip()
    lines = [line.strip() for line in text.splitlines()]
    found = _answer_line(lines)
    if found is None:
        return text
    at, first = found
    block = _colon_block(first, lines[at + 1 :]) or _list_block(first, lines[at:])
    answer = "; ".join(block) if block else _first_sentence(first)
    answer = answer.strip().rstrip(".!").strip()
    return answer or text


def _answer_line(lines: list[str]) -> tuple[int, str] | None:
    """Index and text of the first non-empty line, past a leading label (rules 2 and 3)."""
    at = next((k for k, line in enumerate(lines) if line), None)
    if at is None:
        return None
    first = lines[at]
    labelled = _LABEL.match(first)
    if labelled:
        first = first[labelled.end() :].strip()
        if not first:  # the label stands on a line of its own
            at = next((k for k in range(at + 1, len(lines)) if lines[k]), None)
            if at is None:
                return None
            first = lines[at]
    return at, first


def _colon_block(first: str, following: list[str]) -> list[str]:
    """The block of lines after a line ending with a colon (rule 3); empty if none."""
    block: list[str] = []
    if first.endswith(":"):
        for line in following:
            if line:
                block.append(line)
            elif block:
                break
    return block


def _list_block(first: str, lines: list[str]) -> list[str]:
    """The lines of a numbered list starting at ``first`` (rule 4); empty if none."""
    block: list[str] = []
    if _LIST_ITEM.match(first):
        for line in lines:
            if not _LIST_ITEM.match(line):
                break
            block.append(line)
        if len(block) == 1 and not re.search(r"\s\(?2[.)]\s", first):
            block = []  # one numbered line, not a list
    return block


def _same_answer(short: str, explanation: str) -> bool:
    return short.strip().rstrip(".!").strip() == explanation.strip().rstrip(".!").strip()


def row_to_problem(
    row: dict, split: str, index: int, filters: BraingleFilter = PAPER_FILTER
) -> Problem:
    """Map a Braingle-style row to a Problem (columns: see the module doc).

    Rows that ``filters`` rejects are skipped (:class:`BraingleFilter`).
    """
    row = _lower_keys(row)
    statement, answer, explanation = _columns(row)
    reason = filters.rejects(row, split)
    if reason is not None:
        raise SkipRow(reason)
    if explanation is None:
        explanation = answer
        answer = short_answer(explanation)
    title = _text(row, "title")
    return Problem(
        id=f"brainteaser/{split}/{row.get('id', index)}",
        domain="brainteaser",
        question=f"{title}\n\n{statement}" if title else statement,
        answer=answer.strip(),
        solution=None if _same_answer(answer, explanation) else explanation,
        fields=_fields(row, title),
        metadata=_metadata(row, split),
    )


def _columns(row: dict) -> tuple[str, str, str | None]:
    """Statement, answer and explanation (``None``: cut the answer from the explanation)."""
    statement = _statement(row)
    answer = _text(row, "answer")
    explanation = _text(row, "explanation") or (_text(row, "solution") if answer else None)
    if answer is None:
        answer = _text(row, "solution")  # an explanation alone: the short answer is cut from it
    if statement is None or answer is None:
        missing = [
            name for name, value in (("question", statement), ("answer", answer)) if value is None
        ]
        raise MissingColumns(missing)
    return statement, answer, explanation


def _fields(row: dict, title: str | None) -> dict:
    fields: dict[str, Any] = {"aliases": [str(a) for a in as_list(row.get("aliases"))]}
    if title:
        fields["title"] = title.strip()
    hint = _text(row, "hint")
    if hint:
        fields["hint"] = hint
    return fields


def _metadata(row: dict, split: str) -> dict:
    braingle = _number(row.get("fun")) is not None
    return hub_provenance(
        HUB_ID,
        split,
        BRAINGLE_TERMS if braingle else "see dataset card",
        "https://www.braingle.com/" if braingle and _from_file(split) else None,
        category=row.get("category"),
        difficulty=row.get("difficulty"),
        fun=row.get("fun"),
        popularity=row.get("popularity"),
    )


def load_braingle(path: str | os.PathLike, filters: BraingleFilter = PAPER_FILTER) -> list[Problem]:
    """Problems of a local Braingle export, kept by ``filters`` (e.g. :data:`NO_FILTER`)."""
    domain = dataclasses.replace(
        DOMAIN, row_to_problem=functools.partial(row_to_problem, filters=filters)
    )
    return load_local(domain, path)


def load_offline(split: str, n: int | None, seed: int) -> list[Problem]:
    """All 386 ``pyriddle`` riddles in the package's order; extra answers become aliases."""
    from pyriddle.data import data

    return [
        Problem(
            id=f"brainteaser/pyriddle/{index}",
            domain="brainteaser",
            question=question,
            answer=answers[0],
            fields={"aliases": list(answers[1:])},
            metadata=provenance("pyriddle", split, PYRIDDLE_LICENSE, PYRIDDLE_URL),
        )
        for index, (question, answers) in enumerate(data.items())
    ]


DOMAIN = Domain(
    name="brainteaser",
    env_name="BrainTeaser",
    description="brain teasers and riddles with short answers",
    kind="text",
    answer_format=ANSWER_FORMAT,
    verifier="intbench.verifiers.judge:verify_with_fallback",
    leak_check="intbench.verifiers.leakage.text:text_leaked",
    templates=BUILTIN_TEMPLATES / "brainteaser",
    hub={"train": HubRef(HUB_ID, "train")},
    row_to_problem=row_to_problem,
    offline_loader=load_offline,
    offline_splits=("test",),
    offline_source="riddles from the pyriddle package (386)",
    license="see dataset card (gated); Braingle exports: the site's terms of use",
    # Gated, and its card shows no features: the columns above are not confirmed.
    hub_schema_confirmed=False,
)
