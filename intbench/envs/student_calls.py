"""The student's answer to a prompt, cached by what determines it (a flow step).

Its own module so that the env base (:mod:`intbench.envs.common`) and the
parts it loads on demand (:mod:`intbench.envs.transfer`) share it without an
import cycle.
"""

from __future__ import annotations

from intbench.agents.base import Completion, SamplingParams
from intbench.cache import JsonCache, stable_hash
from intbench.envs.flows import Generate, Verify
from intbench.records import Attempt, Problem, Verdict
from intbench.verifiers import verify


def cached_student_call(
    cache: JsonCache,
    student: str,
    messages: list[dict],
    sampling: SamplingParams,
    problem: Problem,
    verifier=verify,
):
    """Flow: the student's answer to ``messages``, from the cache or generated.

    The key covers the student, the exact prompt, the sampling parameters and
    the seed, never the teacher, so any teacher and condition reuse it.  The
    verdict is recomputed on every use (verifiers are cheap and may improve).
    Returns ``(attempt, from_cache)``; failed generations are not cached.
    """
    key = stable_hash("student-call", student, messages, sampling.__dict__)
    entry = cache.get(key)
    from_cache = entry is not None
    if entry is None:
        completion: Completion = yield Generate("student", messages, sampling)
        if completion.error:
            return Attempt(text="", finish_reason="error", error=completion.error), False
        entry = {
            "text": completion.text,
            "prompt_tokens": completion.prompt_tokens,
            "completion_tokens": completion.completion_tokens,
            "finish_reason": completion.finish_reason,
        }
        cache.put(key, entry)
    verdict: Verdict = yield Verify(problem, entry["text"], verifier)
    attempt = Attempt(
        text=entry["text"],
        answer=verdict.answer,
        verdict=verdict,
        prompt_tokens=entry["prompt_tokens"],
        completion_tokens=entry["completion_tokens"],
        finish_reason=entry["finish_reason"],
    )
    return attempt, from_cache
