"""Model backends and the spec strings that name them.

``load_backend(spec, **options)`` turns a string into a :class:`ChatBackend`.
The same strings work from Python and from the command line.

Spec syntax::

    KIND:TARGET?key=value&key=value

==============================  ==================================================
``smollm2``                     the embedded SmolLM2-135M-Instruct (llama.cpp when
                                ``llama_cpp`` imports, else transformers; force
                                one with ``runtime=hf`` / ``runtime=llamacpp``)
``hf:<dir or hub id>``          transformers ``AutoModelForCausalLM``
``hf:<dir>::<file>.gguf``       the same, loading a GGUF file from ``<dir>``
``openai:<model>@<base_url>``   any OpenAI-compatible chat-completions server
                                (``openai:<model>`` uses ``OPENAI_BASE_URL`` or
                                the official API)
``llamacpp:<file.gguf>``        llama-cpp-python (optional extra ``llamacpp``)
``scripted:text=<text>``        always answers ``<text>``
``scripted:replay=<file.jsonl>``  replays recorded answers
``scripted:<module>:<function>``  answers with ``function(messages, params)``
==============================  ==================================================

Everything after the first ``?`` is options, ``&``-separated ``key=value``
pairs; values that look like ints, floats or ``true``/``false``/``none`` are
converted.  Keyword ``options`` passed to :func:`load_backend` override the
ones in the spec.  Example: ``hf:/models/tiny?dtype=float32&device=cpu&batch_size=4``.

:func:`load_backend` also accepts a ready backend object (returned unchanged)
or a plain callable (wrapped in a :class:`ScriptedBackend`).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from intbench.agents.base import (
    ChatBackend,
    Completion,
    Conversation,
    SamplingParams,
    UsageCounters,
)

KNOWN_KINDS = ("smollm2", "hf", "openai", "llamacpp", "scripted")
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


def _convert(value: str) -> Any:
    lowered = value.lower()
    if lowered in ("true", "false"):
        return lowered == "true"
    if lowered == "none":
        return None
    for kind in (int, float):
        try:
            return kind(value)
        except ValueError:
            pass
    return value


def parse_spec(spec: str) -> tuple[str, str, dict[str, Any]]:
    """Split ``KIND:TARGET?k=v&k=v`` into ``(kind, target, options)``."""
    if not isinstance(spec, str) or not spec.strip():
        raise ValueError(f"backend spec must be a non-empty string, got {spec!r}")
    head, _, query = spec.strip().partition("?")
    kind, _, target = head.partition(":")
    if kind not in KNOWN_KINDS:
        raise ValueError(
            f"unknown backend spec {spec!r}: it must start with one of "
            + ", ".join(f"'{k}'" for k in KNOWN_KINDS)
            + " (e.g. 'smollm2', 'hf:/path/to/model', 'openai:model@http://host:8000/v1')"
        )
    options: dict[str, Any] = {}
    for pair in filter(None, query.split("&")):
        key, eq, value = pair.partition("=")
        if not eq or not key:
            raise ValueError(f"bad option {pair!r} in spec {spec!r}: expected key=value")
        options[key] = _convert(value)
    return kind, target, options


def load_backend(spec: str | ChatBackend | Callable, **options: Any) -> ChatBackend:
    """Build the backend a spec string names (see the module docstring).

    A backend object is returned as is; a callable becomes a ScriptedBackend.
    """
    if isinstance(spec, ChatBackend):
        if options:
            raise ValueError("options cannot be applied to an already built backend")
        return spec
    if callable(spec):
        from intbench.agents.backends.scripted import ScriptedBackend

        return ScriptedBackend(spec, **options)
    kind, target, spec_options = parse_spec(spec)
    merged = {**spec_options, **options}
    # Imports are local: each backend pulls in heavy, partly optional packages.
    if kind == "smollm2":
        if target:
            raise ValueError(f"'smollm2' takes no target, got {spec!r}")
        from intbench.agents.embedded import load_embedded_backend

        return load_embedded_backend(**merged)
    if not target:
        raise ValueError(f"spec {spec!r} names no model after '{kind}:'")
    if kind == "hf":
        from intbench.agents.backends.hf import HFBackend

        path, _, gguf_file = target.partition("::")
        return HFBackend(path, gguf_file=gguf_file or None, spec=spec, **merged)
    if kind == "openai":
        from intbench.agents.backends.openai_compat import OpenAIBackend, parse_openai_target

        model, base_url = parse_openai_target(target)
        return OpenAIBackend(model, base_url, spec=spec, **merged)
    if kind == "llamacpp":
        from intbench.agents.backends.llamacpp import LlamaCppBackend

        return LlamaCppBackend(target, spec=spec, **merged)
    from intbench.agents.backends.scripted import scripted_from_target

    return scripted_from_target(target, spec=spec, **merged)


def __getattr__(name: str):
    # Lazy re-export so ``from intbench.agents.backends import ScriptedBackend``
    # works without importing torch or openai up front.
    lazy = {
        "HFBackend": "intbench.agents.backends.hf",
        "OpenAIBackend": "intbench.agents.backends.openai_compat",
        "LlamaCppBackend": "intbench.agents.backends.llamacpp",
        "ScriptedBackend": "intbench.agents.backends.scripted",
    }
    if name in lazy:
        import importlib

        return getattr(importlib.import_module(lazy[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "BackendError",
    "BaseBackend",
    "HFBackend",
    "LlamaCppBackend",
    "OpenAIBackend",
    "ScriptedBackend",
    "cut_at_stop",
    "load_backend",
    "parse_spec",
    "validate_batch",
    "validate_params",
]
