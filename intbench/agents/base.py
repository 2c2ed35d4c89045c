"""The one small interface every model backend implements.

A backend takes a batch of chat conversations (lists of ``{"role", "content"}``
messages) and returns one :class:`Completion` per conversation.  Roles
(student, teacher, judge) and environments only ever talk to this interface,
so a transformers model, a vLLM server and a scripted policy are
interchangeable.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import ClassVar, Protocol, runtime_checkable

Message = dict[str, str]
Conversation = list[Message]


@dataclass
class SamplingParams:
    """Sampling options shared by all backends (OpenAI-style names)."""

    temperature: float = 0.7
    top_p: float = 1.0
    max_tokens: int = 512
    stop: list[str] | None = None
    seed: int | None = None
    logprobs: bool = False


@dataclass
class Completion:
    """One generated answer with its cost."""

    text: str
    prompt_tokens: int = 0
    completion_tokens: int = 0
    finish_reason: str | None = None  # "stop", "length", "error", ...
    logprobs: list[float] | None = None
    error: str | None = None  # set when the backend gave up on this request


@dataclass
class UsageCounters:
    """Running totals a backend keeps, so callers can assert what was spent."""

    calls: int = 0
    prompt_tokens: int = 0
    prefilled_tokens: int = 0  # prompt tokens actually computed (after cache reuse)
    completion_tokens: int = 0
    seconds: float = 0.0
    errors: int = 0
    extra: dict = field(default_factory=dict)

    # One lock for all counters (a class attribute, not a field, so the
    # dataclass stays copyable and ``asdict``-able); updates are tiny.
    _lock: ClassVar[threading.Lock] = threading.Lock()

    def add(self, completion: Completion) -> None:
        """Count one finished request (thread-safe)."""
        with self._lock:
            self.calls += 1
            self.prompt_tokens += completion.prompt_tokens
            self.completion_tokens += completion.completion_tokens
            if completion.error:
                self.errors += 1

    def add_batch(
        self, completions: list[Completion], seconds: float, prefilled_tokens: int
    ) -> None:
        """Count a whole ``generate`` call: its requests, wall time and prefill work."""
        for completion in completions:
            self.add(completion)
        with self._lock:
            self.seconds += seconds
            self.prefilled_tokens += prefilled_tokens


@runtime_checkable
class ChatBackend(Protocol):
    """What every backend provides."""

    spec: str
    usage: UsageCounters

    def generate(self, batch: list[Conversation], params: SamplingParams) -> list[Completion]:
        """Generate one completion per conversation, in order."""
        ...


def is_remote(backend: object) -> bool:
    """Whether ``backend`` is a server (its class sets ``remote = True``), whose requests
    are best kept in flight together.  Backends need not declare it: most are local."""
    return bool(getattr(backend, "remote", False))
