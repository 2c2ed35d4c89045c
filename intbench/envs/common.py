"""Machinery every protocol env shares: problems, models, cached student calls."""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import gymnasium as gym
import numpy as np

from intbench.agents.backends.loading import backend_name, shared_backend
from intbench.agents.base import ChatBackend, Completion, SamplingParams
from intbench.cache import JsonCache, stable_hash
from intbench.envs import flows
from intbench.envs.flows import Generate, Verify
from intbench.records import Attempt, Problem, Verdict
from intbench.verifiers import verify

logger = logging.getLogger(__name__)


def resolve_problems(
    domain: str,
    problems: Sequence[Problem | dict] | None,
    source: str,
    split: str | None,
    n: int | None,
    data_seed: int,
) -> list[Problem]:
    """The env's problem list: given explicitly, or loaded from a source."""
    if problems is not None:
        resolved = [p if isinstance(p, Problem) else Problem.from_dict(p) for p in problems]
    else:
        from intbench.envs.domains import load_problems

        resolved = load_problems(domain, source=source, split=split, n=n, seed=data_seed)
    if not resolved:
        raise ValueError(f"no problems for domain {domain!r} (source={source!r}, split={split!r})")
    wrong = [p.id for p in resolved if p.domain != domain]
    if wrong:
        raise ValueError(f"problems {wrong[:3]} are not of domain {domain!r}")
    return resolved


class ProblemPool:
    """Draws problems in a seeded random order, each once per pass.

    ``reset(seed=s)`` restarts the order for seed ``s``; ``reset()`` moves on.
    ``options={"problem_index": i}`` or ``{"problem_id": "..."}`` picks one
    (the envs also accept ``{"student_seed": s}`` to pick the baseline sample).
    """

    def __init__(self, problems: list[Problem]):
        self.problems = problems
        self._index = {p.id: i for i, p in enumerate(problems)}
        self._order: np.ndarray | None = None
        self._cursor = 0

    def draw(self, np_random: np.random.Generator, reseeded: bool, options: dict | None) -> Problem:
        options = options or {}
        if "problem_id" in options:
            try:
                return self.problems[self._index[options["problem_id"]]]
            except KeyError:
                raise ValueError(f"unknown problem_id {options['problem_id']!r}") from None
        if "problem_index" in options:
            index = int(options["problem_index"])
            if not 0 <= index < len(self.problems):
                raise ValueError(f"problem_index {index} out of range 0..{len(self.problems) - 1}")
            return self.problems[index]
        if reseeded or self._order is None or self._cursor >= len(self._order):
            self._order = np_random.permutation(len(self.problems))
            self._cursor = 0
        problem = self.problems[int(self._order[self._cursor])]
        self._cursor += 1
        return problem


def sampling_from(options: dict | SamplingParams | None, **defaults: Any) -> SamplingParams:
    """Build sampling parameters from an options dict over per-role defaults."""
    if isinstance(options, SamplingParams):
        return options
    merged = {**defaults, **(options or {})}
    try:
        return SamplingParams(**merged)
    except TypeError as exc:
        raise ValueError(f"bad sampling options {options!r}: {exc}") from None


def attempt_from(completion: Completion, verdict: Verdict | None, seconds: float = 0.0) -> Attempt:
    return Attempt(
        text=completion.text,
        answer=verdict.answer if verdict else None,
        verdict=verdict,
        prompt_tokens=completion.prompt_tokens,
        completion_tokens=completion.completion_tokens,
        seconds=seconds,
        finish_reason=completion.finish_reason,
        error=completion.error,
    )


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


def parse_message_action(
    action: Any, parse_text: Callable[[str], str], max_chars: int
) -> tuple[str | None, str | None]:
    """Read a message-only action (feedback, tutor) -> (message or None, error).

    Accepted: ``{"intervene": 0|1, "message": str}``, a bare 0/1, or a raw
    string (the teacher's reply, cleaned by ``parse_text``).  ``None`` means the
    teacher says nothing; a malformed action also says nothing and comes back
    with an error for ``info["action_error"]``.
    """
    if isinstance(action, str):
        return (parse_text(action).strip()[:max_chars] or None), None
    if isinstance(action, (int, np.integer)) and not isinstance(action, bool):
        action = {"intervene": int(action)}
    if not isinstance(action, Mapping):
        return None, f"action must be a dict, a string or 0/1, got {type(action).__name__}"
    if action.get("error"):  # set by wrappers that could not parse a raw reply
        return None, str(action["error"])
    try:
        intervene = int(np.asarray(action.get("intervene", 0)).item())
    except (TypeError, ValueError) as exc:
        return None, f"bad intervene value: {exc}"
    message = action.get("message", "")
    if intervene not in (0, 1) or not isinstance(message, str):
        return None, f"intervene must be 0/1 and message a string, got {action!r:.200}"
    if not intervene:
        return None, None
    if not message.strip():
        return None, "intervene=1 with an empty message"
    return message.strip()[:max_chars], None


class FlowEnv(gym.Env):
    """Base of the protocol envs: their episode logic is written as flows.

    Subclasses implement ``reset_flow`` and ``step_flow`` (generators that
    yield model and verifier requests); ``reset``/``step`` run them directly,
    and batched drivers (the vector env, the runner) run many at once.
    """

    def _init_models(
        self,
        domain: str,
        student: str | ChatBackend,
        problems,
        source: str,
        split: str | None,
        n: int | None,
        data_seed: int,
        judge: str | ChatBackend | None,
        cache_dir: str | None,
        extra_backends: dict | None = None,
    ) -> None:
        """Problems, the student (and judge) models, the cache and the request executor."""
        self.student_spec = backend_name(student)
        self.judge_spec = None if judge is None else backend_name(judge)
        self._pool = ProblemPool(resolve_problems(domain, problems, source, split, n, data_seed))
        self._cache = JsonCache("student", cache_dir)
        self._verifier = verify
        if judge is not None:
            from intbench.verifiers.judge import JudgeVerifier

            self._verifier = JudgeVerifier(shared_backend(judge))
        backends = {"student": shared_backend(student), **(extra_backends or {})}
        self._executor = flows.RequestExecutor(backends)

    @property
    def problems(self) -> list[Problem]:
        """The env's problems, in their source order."""
        return self._pool.problems

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        return flows.run_flow(self.reset_flow(seed=seed, options=options), self._executor)

    def step(self, action):
        return flows.run_flow(self.step_flow(action), self._executor)

    def reset_flow(self, *, seed: int | None = None, options: dict | None = None):
        raise NotImplementedError

    def step_flow(self, action):
        raise NotImplementedError

    def close(self):
        self._executor.close()
        super().close()
