"""What every model backend shares: input checks, stop strings and usage counting."""

from __future__ import annotations

import time

from intbench.agents.base import (
    Completion,
    Conversation,
    SamplingParams,
    UsageCounters,
)

VALID_ROLES = frozenset({"system", "user", "assistant", "tool", "developer"})


class BackendError(RuntimeError):
    """A backend could not produce an answer (after any retries it makes)."""


def validate_batch(batch: object) -> list[Conversation]:
    """Check that ``batch`` is a list of non-empty chat conversations.

    Raises ``TypeError``/``ValueError`` naming the bad conversation and message,
    so malformed input never reaches a model or a server.
    """
    if not isinstance(batch, list):
        raise TypeError(f"batch must be a list of conversations, got {type(batch).__name__}")
    for i, conversation in enumerate(batch):
        if not isinstance(conversation, list):
            raise TypeError(
                f"conversation {i} must be a list of messages, got {type(conversation).__name__}"
            )
        if not conversation:
            raise ValueError(f"conversation {i} is empty: it needs at least one message")
        for j, message in enumerate(conversation):
            where = f"conversation {i}, message {j}"
            if not isinstance(message, dict):
                raise TypeError(f"{where} must be a dict, got {type(message).__name__}")
            role, content = message.get("role"), message.get("content")
            if role not in VALID_ROLES:
                raise ValueError(
                    f"{where} has role {role!r}; expected one of {sorted(VALID_ROLES)}"
                )
            if not isinstance(content, str):
                raise TypeError(f"{where} content must be a string, got {type(content).__name__}")
    return batch


def validate_params(params: object) -> SamplingParams:
    """Check sampling parameters; ``None`` means the defaults."""
    if params is None:
        return SamplingParams()
    if not isinstance(params, SamplingParams):
        raise TypeError(f"params must be SamplingParams, got {type(params).__name__}")
    if not isinstance(params.max_tokens, int) or params.max_tokens < 1:
        raise ValueError(f"max_tokens must be a positive int, got {params.max_tokens!r}")
    if params.temperature < 0:
        raise ValueError(f"temperature must be >= 0, got {params.temperature}")
    if not 0 < params.top_p <= 1:
        raise ValueError(f"top_p must be in (0, 1], got {params.top_p}")
    if params.stop is not None and not all(isinstance(s, str) and s for s in params.stop):
        raise ValueError(f"stop must be a list of non-empty strings, got {params.stop!r}")
    return params


def cut_at_stop(text: str, stop: list[str] | None) -> tuple[str, bool]:
    """Cut ``text`` before the earliest stop string; report whether one was found."""
    cut = min((i for i in (text.find(s) for s in stop or []) if i >= 0), default=-1)
    return (text[:cut], True) if cut >= 0 else (text, False)


class BaseBackend:
    """Shared plumbing: input checks, usage counting, timing, ``close``.

    Subclasses implement ``_generate`` (already-validated input) and return
    ``(completions, prefilled_tokens)``.
    """

    spec: str

    def __init__(self, spec: str) -> None:
        self.spec = spec
        self.usage = UsageCounters()

    def generate(
        self, batch: list[Conversation], params: SamplingParams | None = None
    ) -> list[Completion]:
        """Generate one completion per conversation, in order."""
        batch = validate_batch(batch)
        params = validate_params(params)
        if not batch:
            return []
        start = time.perf_counter()
        completions, prefilled = self._generate(batch, params)
        self.usage.add_batch(completions, time.perf_counter() - start, prefilled)
        return completions

    def _generate(
        self, batch: list[Conversation], params: SamplingParams
    ) -> tuple[list[Completion], int]:
        raise NotImplementedError

    def close(self) -> None:
        """Release resources (threads, connections, model memory references)."""

    def __enter__(self):
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.spec!r})"
