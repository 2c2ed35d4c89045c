"""LLM-judge verifier, and the deterministic fallback used without a judge model.

The judge is any chat model: a plain callable ``chat_fn(messages) -> str`` or
an object with intbench's :class:`~intbench.agents.base.ChatBackend`
interface.  Its output must contain exactly one ``Verdict: Correct`` or
``Verdict: Incorrect`` line; anything else is an ``error`` verdict (with the
raw output kept in the details), never a silent "wrong".

The judge never sees the student's reasoning: only the extracted final answer
(at most :data:`~intbench.verifiers.text.MAX_ANSWER_CHARS` characters of the
response's graded part), flattened to one line and wrapped in
``<student_answer>`` tags.  So text the student writes can never start a line
of the prompt, and an injected ``Verdict: Correct`` that a judge echoes back
cannot be read as the verdict.

The prompt is the user message of the problem's domain's ``judge`` template
(a single user message); a custom ``template`` string with ``{question}``,
``{reference}`` and ``{response}`` placeholders replaces it.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from intbench.envs.domains.prompting import render, render_messages
from intbench.records import DOMAINS, Problem, Verdict
from intbench.verifiers.text import (
    canonical_answer,
    conflicting_answer,
    conflicting_answers_verdict,
    extract_final_answer,
    no_answer_verdict,
    reference_answers,
    unusable_answer_verdict,
)

PLACEHOLDERS = ("question", "reference", "response")
_SLOTS = {name: "{" + name + "}" for name in PLACEHOLDERS}
# Every domain shares the judge prompt, so any domain renders it.
JUDGE_TEMPLATE = render(DOMAINS[0], "judge", **_SLOTS)
"""The ``judge`` template's user message with the placeholders, to build custom ones on."""
_PLACEHOLDER = re.compile(r"\{(question|reference|response)\}")
# Tolerates markdown bold and a trailing period, nothing else.
_VERDICT_LINE = re.compile(r"^[\s*_]*verdict[\s*_]*:(.*)$", re.IGNORECASE)
_VERDICT_VALUE = re.compile(r"^[\s*_]*(correct|incorrect)[\s*_.]*$", re.IGNORECASE)
_EXPLANATION_LINE = re.compile(r"^[\s*_]*explanation[\s*_]*:(.*)$", re.IGNORECASE)
_ANSWER_TAG = re.compile(r"<\s*/?\s*student_answer\s*>", re.IGNORECASE)

ChatFn = Callable[[list[dict[str, str]]], str]


def fill_template(template: str, question: str, reference: str, response: str) -> str:
    """Substitute the three placeholders in one pass.

    One pass matters: a student response that itself contains ``{reference}``
    must not get the reference pasted into it.  Other braces are left alone.
    """
    values = {"question": question, "reference": reference, "response": response}
    return _PLACEHOLDER.sub(lambda match: values[match.group(1)], template)


def quote_answer(answer: str) -> str:
    """The student's answer as the judge sees it: one line inside ``<student_answer>`` tags.

    Tags inside the answer are removed, so it cannot close the quote early.
    """
    flat = " ".join(_ANSWER_TAG.sub(" ", answer).split())
    return f"<student_answer>{flat}</student_answer>"


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
        template: a prompt with ``{question}``, ``{reference}`` and ``{response}``
            placeholders sent as the only message; by default the ``judge``
            template of the problem's domain.  ``JUDGE_TEMPLATE`` is that
            template's user message with the placeholders, to build on.
        max_tokens: generation budget for backends.

    Raises:
        TypeError: if ``judge`` is neither callable nor a backend.
        ValueError: if the template lacks ``{question}`` or ``{response}``.
    """

    def __init__(
        self,
        judge: ChatFn | Any,
        template: str | None = None,
        max_tokens: int = 128,
    ) -> None:
        if not (hasattr(judge, "generate") or callable(judge)):
            raise TypeError("judge must be a chat callable or a backend with .generate()")
        if template is not None:
            missing = [name for name in ("question", "response") if _SLOTS[name] not in template]
            if missing:
                raise ValueError(f"judge template lacks placeholder(s): {missing}")
        self.judge = judge
        self.template = template
        self.max_tokens = max_tokens

    def build_messages(self, problem: Problem, response: str) -> list[dict[str, str]]:
        """The messages sent to the judge: the ``judge`` template's system and user
        messages, holding the problem, the reference and the response's quoted final
        answer (nothing else of the response).  A custom ``template`` is one user message."""
        answer = quote_answer(extract_final_answer(response) or "")
        reference = format_reference(problem)
        if self.template is not None:
            prompt = fill_template(self.template, problem.question, reference, answer)
            return [{"role": "user", "content": prompt}]
        # Rendered by Jinja, which never re-reads a value as template text.
        return render_messages(
            problem.domain, "judge", question=problem.question, reference=reference, response=answer
        )

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
        """Judge ``response``; never raises (judge failures give ``error``).

        Without a usable final answer, or with marked answers that disagree
        (see :mod:`intbench.verifiers.text`), it is ``incorrect`` and the judge
        is not asked.
        """
        response = response or ""
        extracted = extract_final_answer(response) or ""
        refused = unusable_answer_verdict(extracted)
        if refused is None and conflicting_answer(response, extracted, _teaser_form):
            refused = conflicting_answers_verdict(extracted, {"extracted": extracted})
        if refused is not None:
            refused.details["method"] = "judge"
            return refused
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
            answer=extracted,
            feedback=explanation,
            details={"reason": "judge", "judge_output": raw, "explanation": explanation},
        )


_ARTICLES = re.compile(r"^(?:a|an|the)\s+")
# Words that may surround the reference in a fallback answer without changing
# what it names ("I think it's a piano"); any other word, such as a second
# candidate or a "not", makes the answer differ from the reference.
FILLER_WORDS = frozenset(
    "a an the it its is was must be would will i think believe guess say my our answer final "
    "this that thats so well then simply just called".split()
)


def _strip_article(text: str) -> str:
    return _ARTICLES.sub("", text)


def _teaser_form(text: str) -> str:
    """The comparable form of a brain-teaser answer: canonical, without a leading article."""
    return _strip_article(canonical_answer(text))


def _reference_with_filler(answer: str, reference: str) -> bool:
    """Whether ``answer`` is ``reference`` (as whole words) plus only filler words."""
    words, wanted = re.findall(r"\w+", answer), re.findall(r"\w+", reference)
    if not wanted:
        return False
    for start in range(len(words) - len(wanted) + 1):
        if words[start : start + len(wanted)] == wanted:
            rest = words[:start] + words[start + len(wanted) :]
            return all(word in FILLER_WORDS for word in rest)
    return False


def verify_with_fallback(problem: Problem, response: str) -> Verdict:
    """Deterministic brain-teaser check for when no judge model is configured.

    Reads the graded part (last 64 KB) of the response.  Correct when the
    normalised final answer equals the reference or an alias (ignoring a
    leading article), or when it is a reference as whole words surrounded
    only by :data:`FILLER_WORDS` ("It must be a piano" for "piano"; not
    "piano guitar violin").  Marked answers that disagree are incorrect.
    """
    references = reference_answers(problem)
    if not references:
        return Verdict.error("problem has no reference answer", reason="no_reference")
    extracted = extract_final_answer(response or "") or ""
    unusable = unusable_answer_verdict(extracted)
    answer = _teaser_form(extracted) if unusable is None else ""
    if not answer:
        unusable = unusable or no_answer_verdict()
        unusable.details["method"] = "fallback_match"
        return unusable
    if conflicting_answer(response, extracted, _teaser_form):
        refused = conflicting_answers_verdict(extracted, {"normalized": answer})
        refused.details["method"] = "fallback_match"
        return refused
    for reference in references:
        wanted = _teaser_form(reference)
        if not wanted:
            continue
        if answer == wanted or _reference_with_filler(answer, wanted):
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
    "FILLER_WORDS",
    "JUDGE_TEMPLATE",
    "JudgeVerifier",
    "fill_template",
    "format_reference",
    "parse_judge_output",
    "quote_answer",
    "verify_with_fallback",
]
