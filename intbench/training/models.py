"""The trainable policy: a plain transformers model from a spec, optionally with LoRA."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from intbench.extras import require


def load_policy(spec: str, lora: dict[str, Any] | None = None) -> tuple[Any, Any]:
    """``(model, tokenizer)`` for ``"smollm2"``, ``"hf:<dir>"`` or a plain directory.

    The embedded model is rebuilt as an ordinary (not quantized-flagged) model,
    since transformers refuses to train a GGUF-loaded one.  ``lora`` holds
    peft ``LoraConfig`` arguments; peft is an optional dependency.
    """
    from transformers import AutoModelForCausalLM, AutoTokenizer

    if spec == "smollm2":
        from intbench.agents.backends.embedded import load_embedded_plain

        model, tokenizer = load_embedded_plain()
    else:
        directory = spec[len("hf:") :] if spec.startswith("hf:") else spec
        if not Path(directory).is_dir():
            raise ValueError(
                f"cannot train {spec!r}: use 'smollm2', 'hf:<dir>' or a local model directory "
                "(servers such as openai: specs serve models but cannot be trained)"
            )
        model = AutoModelForCausalLM.from_pretrained(directory)
        tokenizer = AutoTokenizer.from_pretrained(directory)
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    if lora is not None:
        model = _with_lora(model, lora)
    return model, tokenizer


def freeze_lower_layers(model: Any, trainable: int) -> int:
    """Train only the top ``trainable`` decoder layers and the final norm; returns
    the number of trainable parameters.

    Backpropagation then stops at the lowest trainable layer, which is what makes
    a step of a small model affordable on a CPU.  The embeddings (tied to the
    output head in small models) stay frozen."""
    decoder = model.get_decoder() if hasattr(model, "get_decoder") else None
    layers = getattr(decoder, "layers", None)
    norm = getattr(decoder, "norm", None)
    if layers is None or norm is None:
        raise ValueError(
            f"train_layers needs a decoder with .layers and .norm (as Llama-style models "
            f"have); {type(model).__name__} has none: set train_layers to null"
        )
    if not 1 <= trainable <= len(layers):
        raise ValueError(f"train_layers must be between 1 and {len(layers)}, got {trainable}")
    for parameter in model.parameters():
        parameter.requires_grad_(False)
    for module in [*layers[-trainable:], norm]:
        for parameter in module.parameters():
            parameter.requires_grad_(True)
    return sum(p.numel() for p in model.parameters() if p.requires_grad)


def _with_lora(model: Any, options: dict[str, Any]) -> Any:
    require("train", "peft", "LoRA training")
    from peft import LoraConfig, get_peft_model

    options = {
        "task_type": "CAUSAL_LM",
        "r": 16,
        "lora_alpha": 32,
        "target_modules": "all-linear",
        **options,
    }
    return get_peft_model(model, LoraConfig(**options))


def save_policy(model: Any, tokenizer: Any, directory: str | Path) -> Path:
    """Save a trained policy so that ``hf:<directory>`` loads it (LoRA adapters merged)."""
    directory = Path(directory)
    if hasattr(model, "merge_and_unload"):
        model = model.merge_and_unload()
    directory.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(directory)
    tokenizer.save_pretrained(directory)
    return directory
