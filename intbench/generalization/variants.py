"""The four-step LLM pipeline that writes variant problems (Int-Bench).

1. :class:`SkillExtractor` — one fine-grained skill label per problem
   (template ``skill_extract``).
2. :class:`SkillClusterer` — groups the labels into a taxonomy of categories
   (``skill_cluster``).
3. :class:`ProblemGenerator` — N candidate variants per problem (5, as in
   App. C.2) that keep the problem's skill *category* and change surface
   form, context and parameters (``variant_generate``).
4. :class:`Validator` — drops candidates that fall outside the target skill
   category (the validator sees the whole taxonomy) or whose reference answer
   is wrong (``variant_validate``); a candidate whose own worked solution ends
   in a different answer than the one it states is dropped as well, without
   asking the model.

Steps 3 and 4 work on the clustered category, as Table 3 specifies, with the
fine-grained label beside it; a problem whose label the clusterer left
uncategorised falls back to the label alone (the log says so).  Finally one
validated variant per original is sampled, seeded and reproducibly
(:func:`~intbench.generalization.variant_set.sample_per_original`), as §3.4
does; ``keep="all"`` keeps every validated variant instead.

Every stage works with any chat backend, sends one batched ``generate`` call
for all its prompts, and caches raw replies on disk (``JsonCache`` namespace
``variant-pipeline``) keyed by model, prompt and sampling, so a re-run costs
nothing and a better parser applies to old replies.  Failed calls are not
cached.  Replies are parsed defensively; every failure is recorded in the
pipeline log rather than raised.

Only domains whose reference answer is a short text can be checked this way
(``Domain.llm_variants``, true for text domains; :data:`LLM_DOMAINS` lists
them); code and grid domains need tests or grids a model cannot be trusted to
write, so they are refused with a clear error.
"""

from __future__ import annotations

import dataclasses
import logging
import os
import re
from dataclasses import dataclass, field
from typing import Any

from intbench.agents.backends import backend_name, shared_backend
from intbench.agents.base import ChatBackend, SamplingParams
from intbench.cache import JsonCache, stable_hash
from intbench.envs.domains import registry
from intbench.envs.domains.prompting import render_messages
from intbench.generalization.answers import SHARED_ANSWER, shares_answer
from intbench.generalization.parsing import (
    UNCATEGORIZED,
    Candidate,
    SkillLabel,
    Taxonomy,
    Validation,
    parse_candidates,
    parse_skill,
    parse_taxonomy,
    parse_validation,
)
from intbench.generalization.variant_set import sample_per_original
from intbench.records import Problem
from intbench.verifiers import verify

logger = logging.getLogger(__name__)


def llm_variant_domains() -> tuple[str, ...]:
    """The registered domains the LLM pipeline supports (text answers a verifier can check)."""
    return tuple(d.name for d in registry.domains() if d.llm_variants)


def __getattr__(name: str) -> Any:
    # LLM_DOMAINS follows the registry, which third-party domains join after import.
    if name == "LLM_DOMAINS":
        return llm_variant_domains()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


CACHE_NAMESPACE = "variant-pipeline"
VARIANT_SOURCE = "intbench-variants-llm"
DEFAULT_CANDIDATES = 5
"""Candidates generated per reference problem (Int-Bench App. C.2)."""
KEEP = ("one", "all")
"""What the pipeline returns: one sampled validated variant per original, or all validated ones."""

# Labelling and checking want the model's single best reply; writing problems wants variety.
DEFAULT_SAMPLING = {
    "skill_extract": SamplingParams(temperature=0.0, max_tokens=128, seed=0),
    "skill_cluster": SamplingParams(temperature=0.0, max_tokens=1024, seed=0),
    "variant_generate": SamplingParams(temperature=0.7, top_p=0.95, max_tokens=1536, seed=0),
    "variant_validate": SamplingParams(temperature=0.0, max_tokens=384, seed=0),
}


class UnsupportedDomainError(ValueError):
    """The LLM pipeline cannot produce checkable variants for this domain."""


@dataclass
class Reply:
    """One model reply of a stage: text, or the error of a failed call."""

    text: str
    error: str | None = None
    from_cache: bool = False


class _Stage:
    """Shared plumbing: render prompts, answer from the cache, batch the rest."""

    template = ""

    def __init__(
        self,
        model: str | ChatBackend,
        sampling: SamplingParams | None = None,
        cache_dir: str | os.PathLike | None = None,
    ) -> None:
        self.backend = shared_backend(model)
        self.model = backend_name(model)
        self.sampling = sampling or DEFAULT_SAMPLING[self.template]
        self.cache = JsonCache(CACHE_NAMESPACE, cache_dir)

    def messages(self, domain: str, **variables: Any) -> list[dict]:
        """The chat messages this stage sends (for inspection and tests)."""
        return render_messages(domain, self.template, **variables)

    def complete(self, conversations: list[list[dict]]) -> list[Reply]:
        """Replies to ``conversations``: cached ones, then one batched call for the rest."""
        keys = [
            stable_hash(self.template, self.model, conv, self.sampling.__dict__)
            for conv in conversations
        ]
        replies: list[Reply | None] = []
        for key in keys:
            entry = self.cache.get(key)
            replies.append(Reply(entry["text"], from_cache=True) if entry else None)
        missing = [i for i, reply in enumerate(replies) if reply is None]
        if missing:
            try:
                outputs = self.backend.generate([conversations[i] for i in missing], self.sampling)
            except Exception as exc:  # a failed call is recorded per item, never raised
                logger.warning("%s: model call failed: %s", self.template, exc)
                outputs = None
            for position, index in enumerate(missing):
                if outputs is None:
                    replies[index] = Reply("", error="model call failed")
                    continue
                completion = outputs[position]
                if completion.error:
                    replies[index] = Reply("", error=completion.error)
                else:
                    self.cache.put(keys[index], {"text": completion.text})
                    replies[index] = Reply(completion.text)
        return replies  # type: ignore[return-value]


class SkillExtractor(_Stage):
    """Step 1: the single most specific skill each problem needs."""

    template = "skill_extract"

    def extract(self, problems: list[Problem]) -> list[tuple[SkillLabel, Reply]]:
        """One ``(label, raw reply)`` per problem; a failed call gives a label with ``error``."""
        conversations = [self.messages(p.domain, problem=p) for p in problems]
        results = []
        for reply in self.complete(conversations):
            label = SkillLabel(None, error=reply.error) if reply.error else parse_skill(reply.text)
            results.append((label, reply))
        return results


class SkillClusterer(_Stage):
    """Step 2: a taxonomy of categories over the skill labels (one call)."""

    template = "skill_cluster"

    def cluster(self, skills: list[str], domain: str) -> tuple[Taxonomy, Reply | None]:
        """Categories for the distinct labels in ``skills``; no call when there are none."""
        distinct = list(dict.fromkeys(skills))
        if not distinct:
            return Taxonomy(), None
        reply = self.complete([self.messages(domain, skills=distinct)])[0]
        if reply.error:
            taxonomy = parse_taxonomy("", distinct)
            taxonomy.error = reply.error
            return taxonomy, reply
        return parse_taxonomy(reply.text, distinct), reply


class ProblemGenerator(_Stage):
    """Step 3: ``n`` candidate variants per problem that keep its skill."""

    template = "variant_generate"

    def generate(
        self,
        problems: list[Problem],
        skills: list[str],
        n: int,
        categories: list[dict | None] | None = None,
    ) -> list[tuple[list[Candidate], list[str], Reply]]:
        """Per problem: (up to ``n`` candidates, reasons for unusable blocks, raw reply).

        ``categories`` are the problems' assigned skill categories
        (``{"name", "description"}``, or ``None`` for a label without one).
        """
        categories = categories or [None] * len(problems)
        conversations = [
            self.messages(p.domain, problem=p, skill=s, category=c, n=n)
            for p, s, c in zip(problems, skills, categories, strict=True)
        ]
        results: list[tuple[list[Candidate], list[str], Reply]] = []
        for reply in self.complete(conversations):
            if reply.error:
                results.append(([], [f"model call failed: {reply.error}"], reply))
                continue
            candidates, issues = parse_candidates(reply.text)
            if len(candidates) > n:
                issues.append(f"{len(candidates)} candidates for {n} asked; kept the first {n}")
                candidates = candidates[:n]
            results.append((candidates, issues, reply))
        return results


class Validator(_Stage):
    """Step 4: does a candidate need the skill, and is its stated answer right?"""

    template = "variant_validate"

    def validate(
        self,
        items: list[tuple[Problem, str, Candidate]],
        categories: list[dict | None] | None = None,
        taxonomy: list[dict] | None = None,
    ) -> list[Validation]:
        """One verdict per ``(original, skill, candidate)``; failures are rejections with ``error``.

        ``categories`` are the items' target skill categories (``None``: the
        label alone) and ``taxonomy`` the dataset's categories, which the
        validator sees so that it can tell a candidate of another category.
        """
        categories = categories or [None] * len(items)
        conversations = [
            self.messages(original.domain, original=original, skill=skill, candidate=candidate,
                          category=category, categories=taxonomy or [])
            for (original, skill, candidate), category in zip(items, categories, strict=True)
        ]  # fmt: skip
        return [
            Validation(None, None, error=reply.error)
            if reply.error
            else parse_validation(reply.text)
            for reply in self.complete(conversations)
        ]


_BOXED = re.compile(r"^\\boxed\{(.*)\}$", re.DOTALL)


def clean_answer(answer: str) -> str:
    """A stated answer without the wrapping models add (``$...$``, ``\\boxed{...}``, "Answer:")."""
    value = answer.strip()
    value = re.sub(r"^(final\s+)?answer\s*:\s*", "", value, flags=re.IGNORECASE)
    if len(value) >= 2 and value.startswith("$") and value.endswith("$"):
        value = value.strip("$").strip()
    boxed = _BOXED.match(value)
    return boxed.group(1).strip() if boxed else value


def solution_disagrees(candidate: Problem) -> str | None:
    """Why the candidate's own solution contradicts its stated answer, or ``None``.

    Only a solution whose final answer the verifier can read counts: a
    solution without a readable final answer is no evidence either way.
    """
    if not candidate.solution:
        return None
    verdict = verify(candidate, candidate.solution)
    if verdict.status == "incorrect" and verdict.answer not in (None, ""):
        return f"its solution ends in {verdict.answer!r}, not the stated answer"
    return None


@dataclass
class PipelineResult:
    """What a pipeline run produced: the kept variants and a log of every decision."""

    variants: list[Problem]
    log: list[dict]
    taxonomy: dict = field(default_factory=dict)
    validated: list[Problem] = field(default_factory=list)  # every candidate that passed
    keep: str = "all"
    seed: int = 0

    def to_dict(self) -> dict:
        """The log and taxonomy as JSON (variants go to the variant-set file)."""
        return {"keep": self.keep, "seed": self.seed, "taxonomy": self.taxonomy,
                "problems": self.log}  # fmt: skip


class VariantPipeline:
    """Runs the four steps over a list of problems with one chat model.

    Args:
        model: a model spec or backend used for every step.
        n_variants: candidates asked for per problem, before validation [5, App. C.2].
        cache_dir: root of the reply cache [``$INTBENCH_CACHE`` or ``~/.cache/intbench``].
        sampling: per-step overrides, keyed by template name
            (``skill_extract``, ``skill_cluster``, ``variant_generate``, ``variant_validate``).
        keep: ``"one"`` validated variant per original, sampled with ``seed`` (§3.4),
            or ``"all"`` of them [``"one"``].
        seed: seeds the choice of the kept variant [0].
    """

    def __init__(
        self,
        model: str | ChatBackend,
        n_variants: int = DEFAULT_CANDIDATES,
        cache_dir: str | os.PathLike | None = None,
        sampling: dict[str, SamplingParams] | None = None,
        keep: str = "one",
        seed: int = 0,
    ) -> None:
        if isinstance(n_variants, bool) or not isinstance(n_variants, int) or n_variants < 1:
            raise ValueError(f"n_variants must be a positive integer, got {n_variants!r}")
        if keep not in KEEP:
            raise ValueError(f"keep must be one of {KEEP}, got {keep!r}")
        if isinstance(seed, bool) or not isinstance(seed, int):
            raise ValueError(f"seed must be an int, got {seed!r}")
        self.keep, self.seed = keep, seed
        unknown = set(sampling or {}) - set(DEFAULT_SAMPLING)
        if unknown:
            raise ValueError(
                f"unknown pipeline step(s) {sorted(unknown)}; use {list(DEFAULT_SAMPLING)}"
            )
        chosen = {**DEFAULT_SAMPLING, **(sampling or {})}
        self.n_variants = n_variants
        self.model = backend_name(model)
        self.extractor = SkillExtractor(model, chosen["skill_extract"], cache_dir)
        self.clusterer = SkillClusterer(model, chosen["skill_cluster"], cache_dir)
        self.generator = ProblemGenerator(model, chosen["variant_generate"], cache_dir)
        self.validator = Validator(model, chosen["variant_validate"], cache_dir)

    def run(self, problems: list[Problem]) -> PipelineResult:
        """Extract, cluster, generate and validate; returns the kept variants and the log.

        Raises:
            UnsupportedDomainError: a problem's domain has no LLM variants (:data:`LLM_DOMAINS`).
            ValueError: ``problems`` mixes domains.
        """
        if not problems:
            return PipelineResult([], [], keep=self.keep, seed=self.seed)
        domain = _single_llm_domain(problems)
        labels = self.extractor.extract(problems)
        log = _skill_log(problems, labels)
        labelled, skills = _labelled_skills(labels)
        taxonomy, cluster_reply = self.clusterer.cluster(skills, domain)
        named = {c["name"]: c for c in taxonomy.categories if c["name"] != UNCATEGORIZED}
        target = _targets(labelled, labels, taxonomy, named, log)
        generated = self.generator.generate(
            [problems[i] for i in labelled],
            skills,
            self.n_variants,
            [target[i] for i in labelled],
        )
        pending = self._pending(problems, labelled, generated, log)
        validations = self.validator.validate(
            [
                (problems[i], log[i]["skill"], Candidate(v.question, v.answer, v.solution or ""))
                for i, _, v in pending
            ],
            [target[i] for i, _, _ in pending],
            _shown(named),
        )
        kept = _judge(problems, pending, validations, log)
        chosen = sample_per_original(kept, self.seed) if self.keep == "one" else list(kept)
        _mark_sampled(log, {v.id for v in chosen})
        taxonomy_dict = {
            "categories": taxonomy.categories,
            "error": taxonomy.error,
            "reply": cluster_reply.text if cluster_reply else None,
        }
        return PipelineResult(chosen, log, taxonomy_dict, kept, self.keep, self.seed)

    def _pending(
        self, problems: list[Problem], labelled: list[int], generated: list, log: list[dict]
    ) -> list[tuple[int, int, Problem]]:
        """``(problem index, candidate index, variant)`` of every generated candidate, logged."""
        pending = []
        for i, (candidates, issues, _) in zip(labelled, generated, strict=True):
            log[i]["generation_issues"] = issues
            for k, candidate in enumerate(candidates):
                variant = self._as_problem(problems[i], k, candidate, log[i])
                pending.append((i, k, variant))
                log[i]["candidates"].append(
                    {"id": variant.id, "question": variant.question, "answer": variant.answer,
                     "solution": variant.solution, "kept": False, "rejected_because": []}
                )  # fmt: skip
        return pending

    def _as_problem(
        self, original: Problem, index: int, candidate: Candidate, entry: dict
    ) -> Problem:
        return Problem(
            id=f"{original.id}/variant/llm/{index}",
            domain=original.domain,
            question=candidate.question,
            answer=clean_answer(candidate.answer),
            solution=candidate.solution or None,
            metadata={
                "source": VARIANT_SOURCE,
                "generator": self.model,
                "variant_of": original.id,
                "skill": entry["skill"],
                "skill_category": entry.get("skill_category"),
                "split": original.metadata.get("split"),
                "license": original.metadata.get("license"),
            },
        )


def _single_llm_domain(problems: list[Problem]) -> str:
    """The one domain of ``problems``; errors when they mix domains or it has no LLM variants."""
    domains = {p.domain for p in problems}
    if len(domains) > 1:
        raise ValueError(f"problems mix domains {sorted(domains)}; run one domain at a time")
    domain = domains.pop()
    if not registry.get_domain(domain).llm_variants:
        raise UnsupportedDomainError(
            f"the LLM variant pipeline supports {list(llm_variant_domains())}, not {domain!r}: "
            "its variants would need tests or grids that cannot be checked here"
        )
    return domain


def _labelled_skills(labels: list[tuple[SkillLabel, Reply]]) -> tuple[list[int], list[str]]:
    """The indices of the problems given a skill, and their skills."""
    pairs = [(i, label.skill) for i, (label, _) in enumerate(labels) if label.skill]
    return [i for i, _ in pairs], [skill for _, skill in pairs]


def _skill_log(problems: list[Problem], labels: list) -> list[dict]:
    """One log entry per problem, holding its skill label so far."""
    return [
        {
            "problem_id": p.id,
            "skill": label.skill,
            "skill_explanation": label.explanation,
            "skill_error": label.error,
            "skill_reply": reply.text,
            "candidates": [],
            "generation_issues": [],
        }
        for p, (label, reply) in zip(problems, labels, strict=True)
    ]


def _targets(
    labelled: list[int], labels: list, taxonomy, named: dict[str, dict], log: list[dict]
) -> dict[int, dict | None]:
    """Per labelled problem, the category generation is conditioned on (``None``: the label)."""
    target: dict[int, dict | None] = {}
    for i in labelled:
        name = taxonomy.assignment.get(labels[i][0].skill)
        log[i]["skill_category"] = name
        category = named.get(name)
        # What steps 3 and 4 were conditioned on: the category, or the label alone.
        log[i]["conditioned_on"] = "skill_category" if category else "skill"
        target[i] = (
            {"name": category["name"], "description": category["description"]} if category else None
        )
    return target


def _shown(named: dict[str, dict]) -> list[dict]:
    """The categories as the generator and validator see them: name and description."""
    return [{"name": c["name"], "description": c["description"]} for c in named.values()]


def _judge(
    problems: list[Problem],
    pending: list[tuple[int, int, Problem]],
    validations: list[Validation],
    log: list[dict],
) -> list[Problem]:
    """The candidates with no reason to reject them; logs each verdict."""
    kept = []
    for (i, k, variant), validation in zip(pending, validations, strict=True):
        entry = log[i]["candidates"][k]
        entry["validation"] = dataclasses.asdict(validation)
        reasons = _rejections(variant, problems[i], validation)
        entry["rejected_because"] = reasons
        entry["kept"] = not reasons
        entry["sampled"] = False
        if not reasons:
            variant.metadata["validation"] = {"reason": validation.reason}
            kept.append(variant)
    return kept


def _mark_sampled(log: list[dict], chosen_ids: set[str]) -> None:
    for entry in log:
        for candidate in entry["candidates"]:
            if candidate["id"] in chosen_ids:
                candidate["sampled"] = True


def _rejections(variant: Problem, original: Problem, validation: Validation) -> list[str]:
    """Every reason to drop a candidate (empty: keep it)."""
    reasons = []
    if validation.error:
        reasons.append(f"validator reply unusable: {validation.error}")
    else:
        if not validation.same_skill:
            reasons.append("validator: tests another skill")
        if not validation.answer_correct:
            reasons.append("validator: stated answer is wrong")
    if not variant.answer:
        reasons.append("empty answer")
    if variant.question.strip() == original.question.strip():
        reasons.append("same question as the original")
    disagreement = solution_disagrees(variant)
    if disagreement:
        reasons.append(disagreement)
    if variant.answer and shares_answer(original, variant):
        reasons.append(SHARED_ANSWER)
    return reasons
