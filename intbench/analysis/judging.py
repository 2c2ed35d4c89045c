"""Batched, cached calls to the LLM judge that the analyses use.

Every analysis prompt is answered once per (judge, prompt, sampling): answers
are kept in a :class:`~intbench.cache.JsonCache`, so re-running an analysis
(or running a second one over the same messages) costs no model calls.  Only
successful answers are cached; a backend error is returned as an error and
retried on the next run.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass

from intbench.agents.backends import backend_name, shared_backend
from intbench.agents.base import ChatBackend, Conversation, SamplingParams
from intbench.cache import JsonCache, stable_hash

logger = logging.getLogger(__name__)

CACHE_NAMESPACE = "analysis"
DEFAULT_BATCH_SIZE = 16


@dataclass(frozen=True)
class JudgeReply:
    """The judge's raw answer to one prompt, or why there is none (``text`` is then empty)."""

    text: str
    error: str | None = None
    cached: bool = False


class CachedJudge:
    """Sends prompts to a judge model in batches, answering repeats from the cache.

    Args:
        judge: a backend spec (``"smollm2"``, ``"openai:..."``, ...) or a built backend.
        cache: where answers are kept; ``None`` uses ``JsonCache("analysis")``
            under ``$INTBENCH_CACHE``.
        batch_size: conversations per ``generate`` call.
    """

    def __init__(
        self,
        judge: str | ChatBackend,
        cache: JsonCache | None = None,
        batch_size: int = DEFAULT_BATCH_SIZE,
    ) -> None:
        if batch_size < 1:
            raise ValueError(f"batch_size must be at least 1, got {batch_size}")
        self.spec = backend_name(judge)
        self._judge = judge
        self._backend: ChatBackend | None = None
        self.cache = cache if cache is not None else JsonCache(CACHE_NAMESPACE)
        self.batch_size = batch_size
        self.calls = 0  # prompts actually sent to the model (cache misses)

    @property
    def backend(self) -> ChatBackend:
        """The model, loaded on first use so that fully cached runs load nothing."""
        if self._backend is None:
            self._backend = shared_backend(self._judge)
        return self._backend

    def _key(self, conversation: Conversation, sampling: SamplingParams) -> str:
        return stable_hash("analysis-judge", self.spec, conversation, sampling.__dict__)

    def ask(
        self, conversations: Sequence[Conversation], sampling: SamplingParams
    ) -> list[JudgeReply]:
        """One reply per conversation, in order; model calls only for cache misses."""
        replies: list[JudgeReply | None] = [None] * len(conversations)
        missing: list[int] = []
        for i, conversation in enumerate(conversations):
            entry = self.cache.get(self._key(conversation, sampling))
            if isinstance(entry, dict) and isinstance(entry.get("text"), str):
                replies[i] = JudgeReply(entry["text"], cached=True)
            else:
                missing.append(i)
        for start in range(0, len(missing), self.batch_size):
            chunk = missing[start : start + self.batch_size]
            for i, reply in zip(
                chunk, self._generate([conversations[i] for i in chunk], sampling), strict=True
            ):
                replies[i] = reply
                if reply.error is None:
                    self.cache.put(self._key(conversations[i], sampling), {"text": reply.text})
        return [r for r in replies if r is not None]

    def _generate(self, batch: list[Conversation], sampling: SamplingParams) -> list[JudgeReply]:
        self.calls += len(batch)
        try:
            completions = self.backend.generate(batch, sampling)
        except Exception as exc:  # a failed batch is recorded per item, never a crash
            logger.warning("judge %s failed on a batch of %d: %s", self.spec, len(batch), exc)
            return [JudgeReply("", f"judge call failed: {exc}") for _ in batch]
        return [
            JudgeReply("", f"judge call failed: {c.error}") if c.error else JudgeReply(c.text)
            for c in completions
        ]
