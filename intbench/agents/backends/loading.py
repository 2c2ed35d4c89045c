"""Building model backends from the spec strings that name them, once per process.

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

import atexit
import threading
from collections.abc import Callable
from typing import Any

from intbench.agents.base import ChatBackend

KNOWN_KINDS = ("smollm2", "hf", "openai", "llamacpp", "scripted")


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
        from intbench.agents.backends.embedded import load_embedded_backend

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


_SHARED: dict[str, ChatBackend] = {}
_SHARED_LOCK = threading.Lock()


def shared_backend(model: str | ChatBackend) -> ChatBackend:
    """Load a model once per process, so many envs (a vector env) share its weights."""
    if not isinstance(model, str):
        return model
    with _SHARED_LOCK:
        if model not in _SHARED:
            _SHARED[model] = load_backend(model)
        return _SHARED[model]


@atexit.register
def _close_shared_backends() -> None:
    # Free native models (llama.cpp) before interpreter teardown, when their
    # finalisers can no longer run cleanly.
    with _SHARED_LOCK:
        for backend in _SHARED.values():
            close = getattr(backend, "close", None)
            if close is not None:
                close()
        _SHARED.clear()


def backend_name(model: str | ChatBackend) -> str:
    """The spec a model is recorded under: its spec string, else its class name."""
    return model if isinstance(model, str) else getattr(model, "spec", type(model).__name__)
