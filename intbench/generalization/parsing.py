"""Parsers for the replies of the four variant-pipeline prompts.

Model output is unreliable, so no parser raises: each returns a result whose
``error`` is ``None`` when the reply followed the format and a short reason
otherwise, and the pipeline records that reason next to the raw reply.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field

# A "Label: value" line, tolerating markdown decoration ("**Skill:** ...", "- Skill: ...").
_LINE = r"^[ \t>#*_\-]*{name}[ \t*_]*:[ \t*_]*(.*)$"
_THINK = re.compile(r"<think>.*?(</think>|$)", re.IGNORECASE | re.DOTALL)
_VARIANT = re.compile(r"<variant>(.*?)(?:</variant>|(?=<variant>)|\Z)", re.IGNORECASE | re.DOTALL)
MAX_SKILL_CHARS = 200  # a "skill label" longer than this is a paragraph, not a label


def _visible(text: str) -> str:
    return _THINK.sub("", text if isinstance(text, str) else "").strip()


def _clean(value: str) -> str:
    value = value.strip().strip("*_").strip()
    if len(value) >= 2 and value[0] + value[-1] in ('""', "''", "``"):
        value = value[1:-1].strip()
    return value


def _field(text: str, name: str) -> str | None:
    match = re.search(_LINE.format(name=name), text, re.IGNORECASE | re.MULTILINE)
    return _clean(match.group(1)) if match else None


@dataclass
class SkillLabel:
    """Step 1's reply: one fine-grained skill label."""

    skill: str | None
    explanation: str = ""
    error: str | None = None


def parse_skill(text: str) -> SkillLabel:
    """Read ``Skill: ...`` (and the optional ``Explanation: ...``) from a reply."""
    body = _visible(text)
    skill = _field(body, "skill")
    explanation = _field(body, "explanation") or ""
    if not skill:
        return SkillLabel(None, explanation, "missing 'Skill:' line")
    if len(skill) > MAX_SKILL_CHARS:
        return SkillLabel(None, explanation, f"skill label longer than {MAX_SKILL_CHARS} chars")
    return SkillLabel(_clean(skill.rstrip(".")), explanation)


@dataclass
class Taxonomy:
    """Step 2's reply: categories and the category of every skill label."""

    categories: list[dict] = field(default_factory=list)
    assignment: dict[str, str] = field(default_factory=dict)
    error: str | None = None


UNCATEGORIZED = "uncategorized"
"""The category of a skill the clusterer did not place (or could not, on a bad reply)."""


def _json_object(text: str) -> dict | None:
    """The first decodable JSON object in ``text`` (models wrap JSON in prose or fences)."""
    decoder = json.JSONDecoder()
    for start in (m.start() for m in re.finditer(r"\{", text)):
        try:
            value, _ = decoder.raw_decode(text, start)
        except ValueError:
            continue
        if isinstance(value, dict):
            return value
    return None


def parse_taxonomy(text: str, skills: list[str]) -> Taxonomy:
    """Read the clusterer's JSON; every label in ``skills`` gets a category.

    Labels the reply does not mention (or misspells) go to
    :data:`UNCATEGORIZED`; a label listed twice keeps its first category.
    """
    data = _json_object(_visible(text))
    taxonomy = Taxonomy()
    wanted = {skill.strip().lower(): skill for skill in skills}
    if data is None or not isinstance(data.get("categories"), list):
        taxonomy.error = "no JSON object with a 'categories' list"
    else:
        for item in data["categories"]:
            if isinstance(item, dict) and isinstance(item.get("name"), str):
                taxonomy.categories.append(_place(item, wanted, taxonomy.assignment))
    missing = [skill for skill in skills if skill not in taxonomy.assignment]
    if missing:
        taxonomy.categories.append(
            {"name": UNCATEGORIZED, "description": "not placed by the clusterer", "skills": missing}
        )
        taxonomy.assignment.update({skill: UNCATEGORIZED for skill in missing})
    return taxonomy


def _place(item: dict, wanted: dict[str, str], assignment: dict[str, str]) -> dict:
    """One reply category with the wanted skills it lists that no earlier category took
    (recorded in ``assignment``)."""
    name = item["name"].strip()
    members = [s for s in item.get("skills") or [] if isinstance(s, str)]
    placed = []
    for member in members:
        skill = wanted.get(member.strip().lower())
        if skill is not None and skill not in assignment:
            assignment[skill] = name
            placed.append(skill)
    description = item.get("description")
    return {
        "name": name,
        "description": description if isinstance(description, str) else "",
        "skills": placed,
    }


@dataclass
class Candidate:
    """One generated variant from step 3 (before validation)."""

    question: str
    answer: str
    solution: str = ""


def _tag(block: str, name: str) -> str | None:
    match = re.search(rf"<{name}>(.*?)(?:</{name}>|(?=<\w+>)|\Z)", block, re.IGNORECASE | re.DOTALL)
    return match.group(1).strip() if match else None


def parse_candidates(text: str) -> tuple[list[Candidate], list[str]]:
    """Read ``<variant>`` blocks; -> (candidates, one reason per unusable block).

    A block needs a non-empty ``<problem>`` and ``<answer>``; ``<solution>``
    is optional.  Missing closing tags (cut-off replies) are tolerated.
    """
    candidates, problems = [], []
    blocks = _VARIANT.findall(_visible(text))
    if not blocks:
        return [], ["no <variant> block"]
    for index, block in enumerate(blocks):
        question, answer = _tag(block, "problem"), _tag(block, "answer")
        if not question or not answer:
            missing = [n for n, v in (("problem", question), ("answer", answer)) if not v]
            problems.append(f"block {index}: empty or missing <{'>, <'.join(missing)}>")
            continue
        candidates.append(Candidate(question, answer, _tag(block, "solution") or ""))
    return candidates, problems


@dataclass
class Validation:
    """Step 4's reply about one candidate."""

    same_skill: bool | None
    answer_correct: bool | None
    reason: str = ""
    error: str | None = None

    @property
    def accepted(self) -> bool:
        """Kept only on a well-formed reply that says Yes to both questions."""
        return self.error is None and bool(self.same_skill) and bool(self.answer_correct)


def _yes_no(text: str, name: str) -> tuple[bool | None, str | None]:
    value = _field(text, name)
    if value is None:
        return None, f"missing '{name}:' line"
    words = re.findall(r"[a-z]+", value.lower())
    if not words or words[0] not in ("yes", "no") or {"yes", "no"} <= set(words[:3]):
        return None, f"'{name}:' must be Yes or No, got {value[:40]!r}"
    return words[0] == "yes", None


def parse_validation(text: str) -> Validation:
    """Read ``Same skill: Yes/No``, ``Answer correct: Yes/No`` and ``Reason: ...``."""
    body = _visible(text)
    same, error_same = _yes_no(body, "same skill")
    correct, error_correct = _yes_no(body, "answer correct")
    reason = _field(body, "reason") or ""
    error = "; ".join(e for e in (error_same, error_correct) if e) or None
    return Validation(same, correct, reason, error)
