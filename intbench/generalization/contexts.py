"""The student on variant problems under the three context conditions (Int-Bench).

* **No-Context** (``no_context``): the variant alone.
* **Problem-Context** (``problem_context``): the original problem with the
  student's own baseline trace, answer and verdict, then the variant.
* **Intervention-Context** (``intervention_context``): the whole assisted
  episode on the original — the trace prefix before the teacher stepped in,
  the teacher's message, the revised trace, its answer, verdict and the
  verifier's explanation — then the variant.

Input is monitor episode records (``intbench.runner.load_run``) and a variant
set.  Output is one :class:`~intbench.records.Episode` record per
(original episode, variant, context) with ``protocol="generalization"``,
``condition`` = the context, ``attempts`` = [the variant attempt],
``solved_at`` = 1 when it is correct, and in ``metadata``: ``run_key``,
``original_episode_id``, ``original_problem_id``, ``original_condition``,
``original_intervened``, ``variant_id``, ``skill``.  ``teacher`` is the
original episode's teacher, so records group by the teacher whose help is
being tested.

Student calls go through the shared student cache and are batched across
records.  The sampling seed depends on (seed, variant, the original
episode's baseline seed) but not on the context: the three contexts of one
variant share their random numbers, which makes the paired differences
against No-Context less noisy, and No-Context answers are shared by every
teacher's episodes of a problem.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace

from intbench.agents.backends import backend_name, shared_backend
from intbench.agents.base import ChatBackend, SamplingParams
from intbench.cache import JsonCache, stable_hash
from intbench.envs import flows
from intbench.envs.common import STUDENT_DEFAULTS, cached_student_call, sampling_from
from intbench.envs.domains.prompting import render_messages
from intbench.envs.engine import run_flows
from intbench.generalization.variant_set import variants_by_original
from intbench.metrics.generalization import CONTEXTS, PROTOCOL
from intbench.protocols import PROTOCOLS, has
from intbench.records import (
    Attempt,
    Episode,
    Intervention,
    Problem,
    Verdict,
    as_episode,
    as_episodes,
)
from intbench.rundir import EpisodeLog, RunDir
from intbench.verifiers import verify

logger = logging.getLogger(__name__)

BATCH_SIZE = 16  # records whose student calls go out together


class ContextUnavailable(ValueError):
    """The original episode lacks what a context shows (no baseline, no intervention)."""


def applied_intervention(episode: Episode) -> Intervention | None:
    """The episode's intervention if it was applied and the student answered after it."""
    intervention = episode.applied_intervention
    if intervention is None or intervention.attempt is None or intervention.attempt.error:
        return None
    return intervention


def _status(attempt: Attempt) -> str:
    return attempt.status or "unknown"


def _explanation(attempt: Attempt) -> str:
    feedback = (attempt.verdict.feedback if attempt.verdict else "").strip()
    return feedback or "no explanation was given."


def context_messages(
    context: str,
    variant: Problem,
    original: Problem | None = None,
    episode: Episode | dict | None = None,
) -> list[dict]:
    """The student's chat messages for ``variant`` under ``context``.

    Raises:
        ValueError: unknown context.
        ContextUnavailable: ``original``/``episode`` missing, or the episode has
            no baseline (Problem-Context) or no applied intervention
            (Intervention-Context).
    """
    if context not in CONTEXTS:
        raise ValueError(f"unknown context {context!r}; expected one of {CONTEXTS}")
    template = f"variant_{context}"
    if context == "no_context":
        return render_messages(variant.domain, template, problem=variant)
    if original is None or episode is None:
        raise ContextUnavailable(f"{context} needs the original problem and episode")
    episode = as_episode(episode)
    baseline = episode.baseline
    if not baseline or baseline.error:
        raise ContextUnavailable(f"episode {episode.episode_id} has no baseline")
    if context == "problem_context":
        return render_messages(
            variant.domain,
            template,
            problem=variant,
            original=original,
            baseline_trace=baseline.text,
            baseline_answer=baseline.answer or "",
            baseline_verdict=_status(baseline),
        )
    intervention = applied_intervention(episode)
    attempt = intervention.attempt if intervention else None
    if intervention is None or attempt is None:
        raise ContextUnavailable(f"episode {episode.episode_id} has no applied intervention")
    return render_messages(
        variant.domain,
        template,
        problem=variant,
        original=original,
        prefix=baseline.text[: intervention.position],
        message=intervention.message or "",
        revised_trace=attempt.text,
        revised_answer=attempt.answer or "",
        verdict=_status(attempt),
        explanation=_explanation(attempt),
    )


@dataclass
class GeneralizationResult:
    """Records written (or found done) and what was skipped, with the reason."""

    records: list[dict]
    skipped: list[dict] = field(default_factory=list)
    ran: int = 0


def _eligible(episode: Episode, only_intervened: bool) -> str | None:
    """Why an original episode is not used, or ``None``."""
    if not has(str(episode.protocol), "interventions"):
        timed = " or ".join(repr(p.name) for p in PROTOCOLS.values() if p.interventions)
        return f"protocol {episode.protocol!r} is not {timed}"
    if episode.error:
        return f"the original episode failed: {episode.error}"
    if only_intervened and applied_intervention(episode) is None:
        return "no applied intervention"
    return None


def _sample_seed(seed: int, variant: Problem, episode: Episode) -> int:
    return int(stable_hash("generalization", seed, variant.id, episode.seed)[:8], 16)


def _record_flow(cache, student: str, context, variant, original, episode, sampling, verifier):
    """Flow: one student attempt on ``variant`` under ``context`` -> its record."""
    started = time.perf_counter()
    messages = context_messages(context, variant, original, episode)
    attempt, from_cache = yield from cached_student_call(
        cache, student, messages, sampling, variant, verifier
    )
    error = None
    if attempt.error:
        error = f"student failed on the variant: {attempt.error}"
    elif attempt.status == "error":
        error = f"grader error on the variant: {attempt.verdict.feedback}"
    correct = attempt.correct
    record = Episode(
        protocol=PROTOCOL,
        problem_id=variant.id,
        domain=variant.domain,
        student=student,
        teacher=episode.teacher,
        judge=episode.judge,
        condition=context,
        seed=sampling.seed,
        config={"context": context, "student_sampling": dict(sampling.__dict__)},
        attempts=[attempt],
        solved_at=1 if correct else None,
        reward=float(correct),
        tokens={
            "prompt": attempt.prompt_tokens,
            "completion": attempt.completion_tokens,
            "generated": 0 if from_cache else attempt.completion_tokens,
        },
        timings={"seconds": time.perf_counter() - started},
        metadata={
            "run_key": run_key(episode, variant, context),
            "original_episode_id": episode.episode_id,
            "original_problem_id": variant.metadata["variant_of"],
            "original_condition": episode.condition,
            "original_intervened": applied_intervention(episode) is not None,
            "variant_id": variant.id,
            "skill": variant.metadata.get("skill"),
            "skill_category": variant.metadata.get("skill_category"),
        },
        error=error,
    )
    return record


def run_key(episode: Episode, variant: Problem, context: str) -> str:
    """The identity of one generalization record: (original episode, variant, context)."""
    return f"{episode.episode_id}|{variant.id}|{context}"


_Job = tuple[str, Problem, Problem, Episode, SamplingParams]
"""One record to run: (context, variant, original problem, original episode, sampling)."""


def evaluate_generalization(
    episodes: Iterable[Episode | dict],
    variants: list[Problem],
    originals: Iterable[Problem],
    student: str | ChatBackend,
    contexts: Iterable[str] = CONTEXTS,
    sampling: SamplingParams | dict | None = None,
    seed: int = 0,
    only_intervened: bool = True,
    out_dir: str | os.PathLike | None = None,
    cache_dir: str | os.PathLike | None = None,
    verifier: Callable[[Problem, str], Verdict] = verify,
) -> GeneralizationResult:
    """Run the student on every variant of every usable original episode, per context.

    Args:
        episodes: monitor episode records (typed, or dicts as ``load_run`` returns).
        variants: the variant set (``metadata["variant_of"]`` links to originals).
        originals: the original problems (their statements appear in the contexts).
        student: model spec or backend of the student.
        contexts: which of :data:`CONTEXTS` to run.
        sampling: student sampling [the original episode's, else T=0.7,
            top_p=0.95, max_tokens=1024]; its seed is replaced per record.
        seed: base seed of the per-record sampling seeds.
        only_intervened: use only episodes with an applied intervention, so
            that all contexts cover the same (episode, variant) pairs [True].
            With ``False`` every finished episode is used and
            Intervention-Context runs where there was an intervention.
        out_dir: if given, a run directory the records are appended to as they finish, and records already there (without an error) are
            not run again, so an interrupted evaluation resumes.
        cache_dir: root of the student cache.
        verifier: scores the variant attempts [the domain verifier].

    Raises:
        ValueError: an unknown context.
    """
    contexts = list(contexts)
    unknown = [c for c in contexts if c not in CONTEXTS]
    if unknown:
        raise ValueError(f"unknown context(s) {unknown}; expected some of {CONTEXTS}")
    by_original = variants_by_original(variants)
    problems = {p.id: p for p in originals}
    log = None
    if out_dir is not None:
        log = RunDir(out_dir).log()
        log.drop_failed()
    name = backend_name(student)
    result = GeneralizationResult([])
    jobs: list[_Job] = []
    for episode in as_episodes(episodes):
        reason = _skip_reason(episode, only_intervened, problems, by_original)
        if reason is not None:
            result.skipped.append({"episode_id": episode.episode_id, "reason": reason})
            continue
        original = problems[episode.problem_id]
        base = sampling_from(sampling or episode.config.get("student_sampling"), **STUDENT_DEFAULTS)
        jobs += _episode_jobs(
            episode, original, by_original[original.id], contexts, base, seed, log, result
        )
    if jobs:
        _run_jobs(jobs, student, name, cache_dir, verifier, log, result)
    return result


def _skip_reason(
    episode: Episode,
    only_intervened: bool,
    problems: dict[str, Problem],
    by_original: dict[str, list[Problem]],
) -> str | None:
    """Why an original episode is not used (also: its problem or variants not given), or ``None``."""
    reason = _eligible(episode, only_intervened)
    if reason is not None:
        return reason
    original = problems.get(episode.problem_id)
    if original is None:
        return "original problem not given"
    if not by_original.get(original.id):
        return "no variants of this problem"
    return None


def _episode_jobs(
    episode: Episode,
    original: Problem,
    variants: list[Problem],
    contexts: list[str],
    base: SamplingParams,
    seed: int,
    log: EpisodeLog | None,
    result: GeneralizationResult,
) -> list[_Job]:
    """The records still to run for one original episode; those ``log`` holds finished
    go to ``result`` instead.  Intervention-Context only where there was an intervention."""
    intervened = applied_intervention(episode) is not None
    jobs = []
    for variant in variants:
        chosen = replace(base, seed=_sample_seed(seed, variant, episode))
        for context in contexts:
            if context == "intervention_context" and not intervened:
                continue
            key = run_key(episode, variant, context)
            if log is not None and log.finished(key):
                result.records.append(log.records[key].to_dict())
                continue
            jobs.append((context, variant, original, episode, chosen))
    return jobs


def _run_jobs(
    jobs: list[_Job],
    student: str | ChatBackend,
    name: str,
    cache_dir: str | os.PathLike | None,
    verifier: Callable[[Problem, str], Verdict],
    log: EpisodeLog | None,
    result: GeneralizationResult,
) -> None:
    """Run the jobs in batches of :data:`BATCH_SIZE`, appending each record to ``log``
    (when given) and ``result`` as it finishes."""
    cache = JsonCache("student", cache_dir)  # the envs' shared student cache
    executor = flows.RequestExecutor({"student": shared_backend(student)})
    try:
        for start in range(0, len(jobs), BATCH_SIZE):
            batch = [
                _record_flow(cache, name, c, v, o, e, s, verifier)
                for c, v, o, e, s in jobs[start : start + BATCH_SIZE]
            ]
            for record in run_flows(batch, executor):
                if log is not None:
                    log.append(record)
                result.records.append(record.to_dict())
                result.ran += 1
    finally:
        executor.close()
