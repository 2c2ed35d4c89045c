"""llama.cpp backend through llama-cpp-python (optional extra ``intbench[llamacpp]``).

Chat prompts go through ``Llama.create_chat_completion``, which applies the
chat template stored in the GGUF.  llama-cpp-python has no batch API, so the
conversations of a batch are generated one after another; single-stream
generation is still several times faster than transformers on CPU.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path
from typing import Any

from intbench.agents.backends.base import BackendError, BaseBackend
from intbench.agents.base import Completion, Conversation, SamplingParams
from intbench.extras import require


class LlamaCppBackend(BaseBackend):
    """A GGUF model run by llama.cpp.

    Options: ``n_ctx`` (context window, default 4096), ``n_threads`` (default:
    all cores), ``logprobs`` (keep per-token logits so ``SamplingParams.logprobs``
    works; costs memory), ``verbose``.
    """

    def __init__(
        self,
        path: str | Path,
        *,
        n_ctx: int = 4096,
        n_threads: int | None = None,
        logprobs: bool = False,
        verbose: bool = False,
        spec: str | None = None,
    ) -> None:
        super().__init__(spec or f"llamacpp:{path}")
        path = Path(path)
        if not path.is_file():
            raise FileNotFoundError(f"GGUF file not found: {path}")
        require("llamacpp", "llama_cpp", "the llamacpp backend")
        from llama_cpp import Llama

        self.path = path
        self.model = Llama(
            model_path=str(path),
            n_ctx=n_ctx,
            n_threads=n_threads or os.cpu_count(),
            logits_all=logprobs,
            verbose=verbose,
        )
        self._keeps_logits = logprobs
        # A Llama object holds one KV cache: calls must not interleave.
        self._lock = threading.Lock()

    def _generate(
        self, batch: list[Conversation], params: SamplingParams
    ) -> tuple[list[Completion], int]:
        if params.logprobs and not self._keeps_logits:
            raise ValueError(
                "logprobs need the model loaded with logprobs=True "
                "(e.g. 'llamacpp:model.gguf?logprobs=true')"
            )
        with self._lock:
            completions = [self._one(conversation, params) for conversation in batch]
        return completions, sum(c.prompt_tokens for c in completions)

    def _one(self, conversation: Conversation, params: SamplingParams) -> Completion:
        kwargs: dict[str, Any] = {
            "messages": conversation,
            "max_tokens": params.max_tokens,
            "temperature": params.temperature,
            "top_p": params.top_p,
            "stop": params.stop or [],
        }
        if params.seed is not None:
            kwargs["seed"] = params.seed
        if params.logprobs:
            # llama-cpp-python returns no logprobs at all unless top_logprobs >= 1.
            kwargs.update(logprobs=True, top_logprobs=1)
        try:
            response = self.model.create_chat_completion(**kwargs)
        except (RuntimeError, ValueError) as exc:
            raise BackendError(f"{self.spec}: generation failed: {exc}") from exc
        choice = response["choices"][0]
        usage = response.get("usage") or {}
        logprobs = None
        if params.logprobs and choice.get("logprobs"):
            logprobs = [
                float(token["logprob"]) for token in choice["logprobs"].get("content") or []
            ]
        return Completion(
            text=choice["message"].get("content") or "",
            prompt_tokens=usage.get("prompt_tokens", 0),
            completion_tokens=usage.get("completion_tokens", 0),
            finish_reason=choice.get("finish_reason") or "stop",
            logprobs=logprobs,
        )

    def close(self) -> None:
        """Free the llama.cpp context (idempotent)."""
        model, self.model = self.model, None
        if model is not None:
            model.close()
