"""The trainable policy: a plain transformers model from a spec, optionally with LoRA."""

from __future__ import annotations

from pathlib import Path
from typing import Any


def load_policy(spec: str, lora: dict[str, Any] | None = None) -> tuple[Any, Any]:
    """``(model, tokenizer)`` for ``"smollm2"``, ``"hf:<dir>"`` or a plain directory.

    The embedded model is rebuilt as an ordinary (not quantized-flagged) model,
    since transformers refuses to train a GGUF-loaded one.  ``lora`` holds
    peft ``LoraConfig`` arguments; peft is an optional dependency.
    """
    from transformers import AutoModelForCausalLM, AutoTokenizer

    if spec == "smollm2":
        from intbench.agents.embedded import load_embedded_plain

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


def _with_lora(model: Any, options: dict[str, Any]) -> Any:
    try:
        from peft import LoraConfig, get_peft_model
    except ImportError:
        raise ImportError("LoRA training needs peft: pip install peft") from None
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
