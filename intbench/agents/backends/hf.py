"""Local transformers backend: batched chat generation with left padding.

Prompts are rendered with the tokenizer's chat template
(``add_generation_prompt=True``), grouped into micro-batches of similar
length (fewer pad tokens) and generated together.  Left padding keeps every
prompt's last token at the same position, which decoder-only generation needs.

``.model`` and ``.tokenizer`` are public so callers can build on them (e.g.
KV-cache prefix reuse).  ``stop`` strings use transformers' stop-string
criteria and the text is cut before the stop string, as OpenAI does.
Completion token counts exclude the end-of-sequence token and padding.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

from intbench.agents.backends.base import BackendError, BaseBackend, cut_at_stop
from intbench.agents.base import Completion, Conversation, SamplingParams
from intbench.extras import LOCAL_MODULES, require

require("local", LOCAL_MODULES, "the hf: backend")
import torch  # noqa: E402 -- after the check that names the missing extra

DTYPES = {
    "float32": torch.float32,
    "float16": torch.float16,
    "bfloat16": torch.bfloat16,
}


def resolve_dtype(dtype: str | torch.dtype | None) -> torch.dtype | str:
    """Map a dtype name (``float32``, ``bfloat16``, ``auto``...) to what transformers takes."""
    if dtype is None or dtype == "auto":
        return "auto"
    if isinstance(dtype, torch.dtype):
        return dtype
    if dtype not in DTYPES:
        raise ValueError(f"unknown dtype {dtype!r}; use one of {sorted(DTYPES)} or 'auto'")
    return DTYPES[dtype]


class HFBackend(BaseBackend):
    """A causal LM loaded with ``AutoModelForCausalLM`` (safetensors or GGUF).

    Options: ``dtype`` ("auto", "float32", "bfloat16", "float16"), ``device``
    (e.g. "cpu", "cuda:0") or ``device_map`` (e.g. "auto", placed by
    accelerate), ``batch_size`` (micro-batch size), ``gguf_file``.
    A ready ``model`` and ``tokenizer`` can be passed instead of loading.
    """

    def __init__(
        self,
        path: str | Path | None = None,
        *,
        gguf_file: str | None = None,
        dtype: str | torch.dtype | None = "auto",
        device: str | None = None,
        device_map: str | dict | None = None,
        batch_size: int = 8,
        model: Any = None,
        tokenizer: Any = None,
        spec: str | None = None,
    ) -> None:
        super().__init__(spec or f"hf:{path}" + (f"::{gguf_file}" if gguf_file else ""))
        if not isinstance(batch_size, int) or batch_size < 1:
            raise ValueError(f"batch_size must be a positive int, got {batch_size!r}")
        if device is not None and device_map is not None:
            raise ValueError("give either device or device_map, not both")
        self.batch_size = batch_size
        if model is None or tokenizer is None:
            if path is None:
                raise ValueError("HFBackend needs a model path (or both model and tokenizer)")
            model, tokenizer = _load(path, gguf_file, resolve_dtype(dtype), device, device_map)
        self.model = model
        self.tokenizer = tokenizer
        self.model.eval()
        if self.tokenizer.pad_token_id is None:
            # Padding positions are masked out, so any id works; eos is always there.
            self.tokenizer.pad_token = self.tokenizer.eos_token
        self._end_ids = _end_token_ids(self.model, self.tokenizer)
        self._lock = threading.Lock()

    @property
    def device(self) -> torch.device:
        """Where inputs go (the embedding layer's device under a device_map)."""
        return self.model.get_input_embeddings().weight.device

    def render(self, conversation: Conversation) -> str:
        """The prompt text for one conversation, ending where the assistant speaks."""
        if self.tokenizer.chat_template:
            return self.tokenizer.apply_chat_template(
                conversation, add_generation_prompt=True, tokenize=False
            )
        # Base models without a template: a plain transcript the model can continue.
        lines = [f"{m['role'].capitalize()}: {m['content']}" for m in conversation]
        return "\n".join(lines) + "\nAssistant:"

    def _generate(
        self, batch: list[Conversation], params: SamplingParams
    ) -> tuple[list[Completion], int]:
        if self.model is None:
            raise BackendError(f"{self.spec}: backend is closed")
        prompts = [self.render(conversation) for conversation in batch]
        lengths = [len(self.tokenizer(p, add_special_tokens=False).input_ids) for p in prompts]
        # Longest first, so each micro-batch holds prompts of similar length.
        order = sorted(range(len(prompts)), key=lambda i: -lengths[i])
        results: dict[int, Completion] = {}
        # The seed goes through torch's global RNG: forked so the caller's RNG is
        # untouched, and locked so concurrent calls cannot reseed each other.
        with self._lock, torch.random.fork_rng(devices=self._cuda_devices()):
            if params.seed is not None:
                torch.manual_seed(params.seed)
            for start in range(0, len(order), self.batch_size):
                chunk = order[start : start + self.batch_size]
                for index, completion in zip(
                    chunk, self._generate_chunk([prompts[i] for i in chunk], params), strict=True
                ):
                    results[index] = completion
        return [results[i] for i in range(len(prompts))], sum(lengths)

    def _cuda_devices(self) -> list[int]:
        devices = {p.device for p in self.model.parameters()}
        return sorted(d.index or 0 for d in devices if d.type == "cuda")

    @torch.inference_mode()
    def _generate_chunk(self, prompts: list[str], params: SamplingParams) -> list[Completion]:
        inputs = self.tokenizer(
            prompts,
            return_tensors="pt",
            padding=True,
            padding_side="left",
            add_special_tokens=False,
        ).to(self.device)
        sampling: dict[str, Any] = {"do_sample": False}
        if params.temperature > 0:
            sampling = {"do_sample": True, "temperature": params.temperature, "top_p": params.top_p}
        if params.stop:
            sampling.update(stop_strings=list(params.stop), tokenizer=self.tokenizer)
        try:
            output = self.model.generate(
                **inputs,
                max_new_tokens=params.max_tokens,
                pad_token_id=self.tokenizer.pad_token_id,
                eos_token_id=self._end_ids,
                return_dict_in_generate=True,
                output_logits=params.logprobs,
                top_k=None,
                **sampling,
            )
        except (RuntimeError, ValueError) as exc:
            raise BackendError(f"{self.spec}: generation failed: {exc}") from exc
        prompt_width = inputs["input_ids"].shape[1]
        generated = output.sequences[:, prompt_width:]
        token_logprobs = None
        if params.logprobs:
            # Raw model log-probabilities of the chosen tokens (before sampling warpers).
            logits = torch.stack(output.logits, dim=1).float()
            token_logprobs = torch.log_softmax(logits, dim=-1).gather(-1, generated.unsqueeze(-1))[
                ..., 0
            ]
        prompt_counts = inputs["attention_mask"].sum(dim=1).tolist()
        return [
            self._completion(
                generated[row],
                int(prompt_counts[row]),
                params,
                None if token_logprobs is None else token_logprobs[row],
            )
            for row in range(len(prompts))
        ]

    def _completion(
        self,
        tokens: torch.Tensor,
        prompt_tokens: int,
        params: SamplingParams,
        logprobs: torch.Tensor | None,
    ) -> Completion:
        ids = tokens.tolist()
        # Finished rows are padded after their last real token; with pad == eos
        # (common) the first end/pad id marks the end either way.
        ends = set(self._end_ids) | {self.tokenizer.pad_token_id}
        length = next((i for i, t in enumerate(ids) if t in ends), len(ids))
        text = self.tokenizer.decode(ids[:length], skip_special_tokens=True)
        text, hit_stop = cut_at_stop(text, params.stop)
        stopped = hit_stop or length < params.max_tokens
        return Completion(
            text=text,
            prompt_tokens=prompt_tokens,
            completion_tokens=length,
            finish_reason="stop" if stopped else "length",
            logprobs=None if logprobs is None else logprobs[:length].tolist(),
        )

    def close(self) -> None:
        """Drop references to the model so its memory can be freed."""
        self.model = None
        self.tokenizer = None


def _load(
    path: str | Path,
    gguf_file: str | None,
    dtype: torch.dtype | str,
    device: str | None,
    device_map: str | dict | None,
) -> tuple[Any, Any]:
    from transformers import AutoModelForCausalLM, AutoTokenizer

    path = str(path)
    local = Path(path)
    if gguf_file and not (local / gguf_file).is_file():
        raise FileNotFoundError(f"GGUF file not found: {local / gguf_file}")
    if not gguf_file and _looks_local(path) and not local.is_dir():
        raise FileNotFoundError(f"model directory not found: {path}")
    kwargs: dict[str, Any] = {"dtype": dtype}
    if gguf_file:
        kwargs["gguf_file"] = gguf_file
    if device_map is not None:
        kwargs["device_map"] = device_map
    try:
        tokenizer = AutoTokenizer.from_pretrained(
            path, **({"gguf_file": gguf_file} if gguf_file else {})
        )
        model = AutoModelForCausalLM.from_pretrained(path, **kwargs)
    except OSError as exc:
        raise BackendError(
            f"cannot load model {path!r}: {exc}. The model hub may be unreachable; "
            "pass a local directory (or 'smollm2' for the embedded model)."
        ) from exc
    if device is not None:
        # transformers types ``to`` through a decorator that loses its signature.
        model = model.to(device)  # type: ignore[arg-type]
    return model, tokenizer


def _looks_local(path: str) -> bool:
    # Hub ids are "name" or "org/name"; anything else is a filesystem path.
    return path.startswith((".", "/", "~")) or path.count("/") > 1 or Path(path).exists()


def _end_token_ids(model: Any, tokenizer: Any) -> list[int]:
    ids: set[int] = set()
    configured = getattr(model.generation_config, "eos_token_id", None)
    if isinstance(configured, int):
        ids.add(configured)
    elif configured:
        ids.update(configured)
    if tokenizer.eos_token_id is not None:
        ids.add(tokenizer.eos_token_id)
    if not ids:
        raise BackendError("the model defines no end-of-sequence token")
    return sorted(ids)
