"""LLM-judge verifier, and the deterministic fallback used without a judge model.

The judge is any chat model: a plain callable ``chat_fn(messages) -> str`` or
an object with intbench's :class:`~intbench.agents.base.ChatBackend`
interface.  Its output must contain exactly one ``Verdict: Correct`` or
``Verdict: Incorrect`` line; anything else is an ``error`` verdict (with the
raw output kept in the details), never a silent "wrong".
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from intbench.records import Problem, Verdict
from intbench.verifiers.text import (
    canonical_answer,
    extract_final_answer,
    reference_answers,
    unusable_answer_verdict,
)

JUDGE_TEMPLATE = """You are grading a student's answer to a problem.

Problem:
{question}

Reference answer:
{reference}

Student's answer:
{response}

Decide whether the student's final answer is correct: it must mean the same \
as the reference answer, although it may be worded differently. Ignore the \
student's reasoning, style and formatting; judge only the final answer.

Reply with exactly two lines:
Verdict: Correct   (or: Verdict: Incorrect)
Explanation: <one sentence saying why>"""
"""The default judge prompt; custom templates use the same three placeholders."""

PLACEHOLDERS = ("question", "reference", "response")
_PLACEHOLDER = re.compile(r"\{(question|reference|response)\}")
# Tolerates markdown bold and a trailing period, nothing else.
_VERDICT_LINE = re.compile(r"^[\s*_]*verdict[\s*_]*:(.*)$", re.IGNORECASE)
_VERDICT_VALUE = re.compile(r"^[\s*_]*(correct|incorrect)[\s*_.]*$", re.IGNORECASE)
_EXPLANATION_LINE = re.compile(r"^[\s*_]*explanation[\s*_]*:(.*)$", re.IGNORECASE)

ChatFn = Callable[[list[dict[str, str]]], str]


def fill_template(template: str, question: str, reference: str, response: str) -> str:
    """Substitute the three placeholders in one pass.

    One pass matters: a student response that itself contains ``{reference}``
    must not get the reference pasted into it.  Other braces are left alone.
    """
    values = {"question": question, "reference": reference, "response": response}
    return _PLACEHOLDER.sub(lambda match: values[match.group(1)], template)


def parse_judge_output(text: str) -> tuple[str, str]:
    """Return ``(status, explanation)`` from a judge reply.

    Raises:
        ValueError: when there is not exactly one Verdict line or its value is
            not Correct/Incorrect.
    """
    lines = text.splitlines()
    verdicts = [m.group(1) for m in map(_VERDICT_LINE.match, lines) if m]
    if len(verdicts) != 1:
        raise ValueError(f"expected exactly one 'Verdict:' line, found {len(verdicts)}")
    value = _VERDICT_VALUE.match(verdicts[0])
    if value is None:
        raise ValueError(f"verdict must be Correct or Incorrect, got {verdicts[0].strip()!r}")
    explanations = [m.group(1).strip(" *_") for m in map(_EXPLANATION_LINE.match, lines) if m]
    return value.group(1).lower(), explanations[0] if explanations else ""


def format_reference(problem: Problem) -> str:
    """The reference shown to the judge: answer, accepted aliases, worked solution."""
    references = reference_answers(problem)
    parts = []
    if references:
        parts.append(references[0])
    if len(references) > 1:
        parts.append("Also accepted: " + "; ".join(references[1:]))
    if problem.solution:
        parts.append("Reference solution:\n" + problem.solution)
    return "\n".join(parts)


class JudgeVerifier:
    """Verify free-form answers with a judge model.

    Args:
        judge: ``chat_fn(messages) -> str``, or a backend with
            ``generate(batch, SamplingParams) -> [Completion]`` (called with
            temperature 0).
        template: prompt with ``{question}``, ``{reference}`` and ``{response}``
            placeholders; defaults to :data:`JUDGE_TEMPLATE`.
        max_response_chars: longer student responses are cut to their *end*
            (where the final answer is) so the prompt fits small judges.
        max_tokens: generation budget for backends.

    Raises:
        TypeError: if ``judge`` is neither callable nor a backend.
        ValueError: if the template lacks ``{question}`` or ``{response}``.
    """

    def __init__(
        self,
        judge: ChatFn | Any,
        template: str = JUDGE_TEMPLATE,
        max_response_chars: int = 4000,
        max_tokens: int = 128,
    ) -> None:
        if not (hasattr(judge, "generate") or callable(judge)):
            raise TypeError("judge must be a chat callable or a backend with .generate()")
        missing = [name for name in ("question", "response") if "{" + name + "}" not in template]
        if missing:
            raise ValueError(f"judge template lacks placeholder(s): {missing}")
        self.judge = judge
        self.template = template
        self.max_response_chars = max_response_chars
        self.max_tokens = max_tokens

    def build_messages(self, problem: Problem, response: str) -> list[dict[str, str]]:
        """The chat messages sent to the judge for this problem and response."""
        if len(response) > self.max_response_chars:
            response = "[...]\n" + response[-self.max_response_chars :]
        prompt = fill_template(self.template, problem.question, format_reference(problem), response)
        return [{"role": "user", "content": prompt}]

    def _ask(self, messages: list[dict[str, str]]) -> str:
        """Call the judge; raises on backend failures and non-text replies."""
        if hasattr(self.judge, "generate"):
            from intbench.agents.base import SamplingParams

            params = SamplingParams(temperature=0.0, max_tokens=self.max_tokens)
            completion = self.judge.generate([messages], params)[0]
            if completion.error:
                raise RuntimeError(f"judge backend failed: {completion.error}")
            text = completion.text
        else:
            text = self.judge(messages)
        if not isinstance(text, str):
            raise TypeError(f"judge returned {type(text).__name__}, not str")
        return text

    def __call__(self, problem: Problem, response: str) -> Verdict:
        """Judge ``response``; never raises (judge failures give ``error``)."""
        response = response or ""
        if not response.strip():
            return Verdict(
                status="incorrect",
                feedback="The response is empty.",
                details={"reason": "empty_response"},
            )
        try:
            raw = self._ask(self.build_messages(problem, response))
        except Exception as exc:  # any judge failure is the grader's, not the student's
            return Verdict.error(
                f"judge failed: {type(exc).__name__}: {exc}", reason="judge_exception"
            )
        if not raw.strip():
            return Verdict.error("judge returned an empty reply", reason="empty_judge_output")
        try:
            status, explanation = parse_judge_output(raw)
        except ValueError as exc:
            return Verdict.error(
                f"unparsable judge output: {exc}", reason="unparsable", judge_output=raw
            )
        return Verdict(
            status=status,  # type: ignore[arg-type]  # parse_judge_output yields a status
            score=1.0 if status == "correct" else 0.0,
            answer=extract_final_answer(response),
            feedback=explanation,
            details={"reason": "judge", "judge_output": raw, "explanation": explanation},
        )


MAX_PHRASE_ANSWER_WORDS = 12
"""A final answer up to this many words may *contain* the reference phrase."""

_ARTICLES = re.compile(r"^(?:a|an|the)\s+")


def _strip_article(text: str) -> str:
    return _ARTICLES.sub("", text)


def _contains_phrase(answer: str, phrase: str) -> bool:
    """Whole-word containment, so "age" is not found inside "page"."""
    return re.search(r"(?<!\w)" + re.escape(phrase) + r"(?!\w)", answer) is not None


def verify_with_fallback(problem: Problem, response: str) -> Verdict:
    """Deterministic brain-teaser check for when no judge model is configured.

    Correct when the normalised final answer equals the reference or an alias
    (ignoring a leading article), or when a short final answer (at most
    :data:`MAX_PHRASE_ANSWER_WORDS` words) contains a reference as a
    whole-word phrase ("It is a piano" for "piano").
    """
    references = reference_answers(problem)
    if not references:
        return Verdict.error("problem has no reference answer", reason="no_reference")
    extracted = extract_final_answer(response or "")
    unusable = unusable_answer_verdict(extracted)
    answer = _strip_article(canonical_answer(extracted)) if unusable is None else ""
    if not answer:
        unusable = unusable or unusable_answer_verdict(None)
        unusable.details["method"] = "fallback_match"
        return unusable
    short = len(answer.split()) <= MAX_PHRASE_ANSWER_WORDS
    for reference in references:
        wanted = _strip_article(canonical_answer(reference))
        if not wanted:
            continue
        if answer == wanted or (short and _contains_phrase(answer, wanted)):
            return Verdict(
                status="correct",
                score=1.0,
                answer=extracted,
                feedback="Correct.",
                details={
                    "reason": "match" if answer == wanted else "phrase_match",
                    "method": "fallback_match",
                    "matched_reference": reference,
                },
            )
    return Verdict(
        status="incorrect",
        answer=extracted,
        feedback=f"The answer {extracted!r} is not correct.",
        details={"reason": "mismatch", "method": "fallback_match", "normalized": answer},
    )


__all__ = [
    "JUDGE_TEMPLATE",
    "JudgeVerifier",
    "fill_template",
    "format_reference",
    "parse_judge_output",
    "verify_with_fallback",
]
