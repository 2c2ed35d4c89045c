"""Incremental monitor decisions: KV-cache reuse on a tiny random model must give
the same decisions and probabilities as recomputing everything, and the server
path must ask only for what it needs."""

from __future__ import annotations

import json
import logging
import tempfile

import gymnasium as gym
import pytest
import torch

import intbench  # noqa: F401  (registers the ids)
from intbench.agents.backends import load_backend
from intbench.agents.backends.scripted import ScriptedBackend
from intbench.agents.base import SamplingParams
from intbench.agents.incremental import (
    KVCacheDecider,
    NaiveDecider,
    ServerDecider,
    decide_batch,
)
from intbench.records import Problem

PROBLEM = Problem(
    id="inc/1",
    domain="math",
    question="A rectangle has perimeter 54 and length 2w + 3. What is its area?",
    answer="152",
    solution="6w + 6 = 54 so w = 8, length 19, area 152.",
)
TRACE = (
    "Let w be the width. The length is 2w + 3, so the perimeter is 2(3w + 3) = 6w + 6. "
    "Setting 6w + 6 = 54 gives 6w = 46, so w is about 7.67. Then the length is about 18.3 "
    "and the area is about 140. So the answer is \\boxed{140}."
)
CUTS = list(range(50, len(TRACE), 50)) + [len(TRACE)]


@pytest.fixture(scope="module")
def tiny(tiny_model_dir):
    return load_backend(f"hf:{tiny_model_dir}", dtype="float32")


def monitor_prompts(variant: str, problem: Problem = PROBLEM) -> list[list[dict]]:
    """The Standard teacher's prompt at each increment of TRACE, as the monitor env shows it."""
    student = ScriptedBackend(lambda messages: TRACE, spec="scripted:trace")
    with tempfile.TemporaryDirectory() as cache:
        env = gym.make(
            "IntBench-Math-v0",
            student=student,
            problems=[problem],
            teacher_prompt=variant,
            cache_dir=cache,
        )
        obs, info = env.reset(seed=0)
        shown = [info["messages"]]
        while not obs["finished"]:
            obs, *_, info = env.step(0)
            shown.append(info["messages"])
        env.close()
    return shown


def full_recompute_p_yes(backend, decider, messages) -> float:
    """P(Yes vs No) at the decision slot from one uncached forward pass."""
    text = backend.render(messages) + "Intervene:"
    ids = backend.tokenizer(text, add_special_tokens=False, return_tensors="pt").input_ids
    with torch.no_grad():
        logits = backend.model(input_ids=ids).logits[0, -1]
    pair = torch.stack([logits[decider.yes_id], logits[decider.no_id]])
    return float(torch.softmax(pair, dim=-1)[0])


@pytest.mark.parametrize("variant", ["paper", "append"])
def test_cached_decisions_equal_full_recomputation(tiny, variant):
    decider = KVCacheDecider(tiny.model, tiny.tokenizer, max_message_tokens=4, render=tiny.render)
    for messages in monitor_prompts(variant):
        result = decider.decide(messages)
        expected = full_recompute_p_yes(tiny, decider, messages)
        assert result.p_intervene == pytest.approx(expected, abs=1e-4)
        assert result.intervene == (expected > 0.5) or result.error  # Yes may still be malformed
        assert result.prefilled_tokens + result.details["reused_tokens"] == result.prompt_tokens


def test_prefix_reuse_saves_prefill_and_append_saves_more(tiny):
    saved = {}
    for variant in ("paper", "append"):
        decider = KVCacheDecider(
            tiny.model, tiny.tokenizer, max_message_tokens=2, render=tiny.render
        )
        for messages in monitor_prompts(variant):
            decider.decide(messages)
        stats = decider.stats
        assert stats.calls == len(CUTS)
        assert stats.prefilled_tokens < stats.prompt_tokens
        saved[variant] = stats.prompt_tokens - stats.prefilled_tokens
    # The faithful template re-reads the reference after the transcript each time.
    assert saved["append"] > saved["paper"]


def test_decider_and_naive_agree_on_text_under_greedy(tiny):
    """Make the model's own greedy first token the 'Yes' token, so the cached
    decider intervenes and its continuation must equal generate()'s output."""
    messages = monitor_prompts("append")[2]
    text = tiny.render(messages) + "Intervene:"
    ids = tiny.tokenizer(text, add_special_tokens=False, return_tensors="pt").input_ids
    with torch.no_grad():
        first = int(tiny.model(input_ids=ids).logits[0, -1].argmax())
    yes = tiny.tokenizer.decode([first])
    no = " No" if yes != " No" else " Yes"
    if tiny.tokenizer.encode(yes, add_special_tokens=False) != [first]:
        pytest.skip("greedy token does not round-trip through decode")
    naive = NaiveDecider(tiny.model, tiny.tokenizer, max_new_tokens=9, render=tiny.render)
    cached = KVCacheDecider(
        tiny.model, tiny.tokenizer, max_message_tokens=8, yes=yes, no=no, render=tiny.render
    )
    cached.decide(monitor_prompts("append")[1])  # warm the cache with the previous increment
    result = cached.decide(messages)
    reference = naive.decide(messages)
    assert result.p_intervene > 0.5
    assert result.text == reference.text
    assert result.generated_tokens == reference.generated_tokens
    assert result.prefilled_tokens < reference.prefilled_tokens


def test_a_batch_of_deciders_decides_as_each_alone(tiny, monkeypatch):
    """Episodes at different lengths, one batched forward per step: the same
    decisions, P(Yes), messages and reuse as each decider run by itself."""
    episodes = [monitor_prompts("paper"), monitor_prompts("append"), monitor_prompts("paper")[1:]]

    def deciders():
        return [
            KVCacheDecider(
                tiny.model,
                tiny.tokenizer,
                temperature=0.7,
                top_p=0.95,
                max_message_tokens=6,
                seed=seed,
                render=tiny.render,
            )
            for seed in (1, 2, 3)
        ]

    alone, batched = deciders(), deciders()  # made first: they read forward's signature
    calls = []
    forward = type(tiny.model).forward

    def counted(self, *args, **kwargs):
        calls.append(kwargs["input_ids"].shape[0])
        return forward(self, *args, **kwargs)

    monkeypatch.setattr(type(tiny.model), "forward", counted)
    steps = min(len(e) for e in episodes)
    solo = [[d.decide(e[t]) for t in range(steps)] for d, e in zip(alone, episodes, strict=True)]
    solo_calls, calls[:] = len(calls), []
    together = [decide_batch(batched, [e[t] for e in episodes]) for t in range(steps)]
    assert len(calls) < solo_calls and max(calls) == 3  # one forward serves all three
    assert any(r.generated_tokens for results in together for r in results)  # messages batched
    for t in range(steps):
        for row in range(3):
            a, b = solo[row][t], together[t][row]
            assert (a.intervene, a.text, a.generated_tokens) == (
                b.intervene,
                b.text,
                b.generated_tokens,
            )
            assert a.p_intervene == pytest.approx(b.p_intervene, abs=1e-5)
            assert a.details["reused_tokens"] == b.details["reused_tokens"]
    for a, b in zip(alone, batched, strict=True):  # the caches hold the same tokens and values
        assert a._cached_ids == b._cached_ids
        for x, y in zip(a._cache.layers, b._cache.layers, strict=True):
            assert torch.allclose(x.keys, y.keys, atol=1e-5) and x.keys.shape == y.keys.shape


def test_model_teacher_decides_its_episodes_in_one_batch(tiny, monkeypatch):
    from intbench.teachers import ModelTeacher

    teacher = ModelTeacher(tiny, "monitor", "standard")
    for slot in (0, 1):
        teacher.reset(slot)
    seen = []
    monkeypatch.setattr(
        "intbench.teachers.decide_batch",
        lambda deciders, prompts: seen.append(len(deciders)) or decide_batch(deciders, prompts),
    )
    first, second = monitor_prompts("paper")[:2]
    actions = teacher.act([0, 1], [({}, {"messages": first}), ({}, {"messages": second})], [5, 6])
    assert seen == [2] and len(actions) == 2 and set(teacher._deciders) == {0, 1}


def test_sampling_is_seeded(tiny):
    def run(seed):
        decider = KVCacheDecider(
            tiny.model,
            tiny.tokenizer,
            temperature=1.0,
            seed=seed,
            max_message_tokens=3,
            render=tiny.render,
        )
        return [(r.intervene, r.text) for r in map(decider.decide, monitor_prompts("append"))]

    assert run(3) == run(3)


def test_reset_and_a_different_prompt_start_over(tiny):
    decider = KVCacheDecider(tiny.model, tiny.tokenizer, max_message_tokens=2, render=tiny.render)
    decider.decide(monitor_prompts("append")[0])
    other = Problem(id="x", domain="math", question="Something else entirely?", answer="1")
    messages = monitor_prompts("paper", other)[0]
    result = decider.decide(messages)
    assert result.p_intervene == pytest.approx(
        full_recompute_p_yes(tiny, decider, messages), abs=1e-4
    )
    decider.reset()
    again = decider.decide(messages)
    assert again.details["reused_tokens"] == 0 and again.prefilled_tokens == again.prompt_tokens


def test_bad_arguments(tiny):
    with pytest.raises(ValueError, match="temperature"):
        KVCacheDecider(tiny.model, tiny.tokenizer, temperature=-1)
    with pytest.raises(ValueError, match="one"):
        KVCacheDecider(tiny.model, tiny.tokenizer, yes=" Yes indeed")
    with pytest.raises(ValueError, match="non-empty"):
        KVCacheDecider(tiny.model, tiny.tokenizer).decide([])


class ScriptedMonitor:
    """A server stand-in: says Yes once ``trigger`` shows up in the transcript."""

    def __init__(self, trigger: str, message_reply: str):
        self.trigger = trigger
        self.message_reply = message_reply
        self.params = []
        self.backend = ScriptedBackend(self.respond)

    def respond(self, messages, params):
        self.params.append(params)
        says_yes = self.trigger in messages[-1]["content"].split("<student_reasoning>")[-1]
        if params.stop == ["\n"]:
            return "Intervene: Yes" if says_yes else "Intervene: No"
        return self.message_reply


def test_server_decider_asks_for_the_message_only_on_yes():
    server = ScriptedMonitor(
        "6w = 46", "Intervene: Yes\nTime: 6w = 46\nIntervention: Recheck 54 - 6."
    )
    decider = ServerDecider(server.backend)
    shown = monitor_prompts("append")
    results = [decider.decide(messages) for messages in shown]
    first_yes = next(i for i, r in enumerate(results) if r.intervene)
    assert TRACE[: CUTS[first_yes]].count("6w = 46") == 1
    assert results[first_yes].message == "Recheck 54 - 6."
    decision_calls = [p for p in server.params if p.stop == ["\n"]]
    message_calls = [p for p in server.params if p.stop != ["\n"]]
    assert len(decision_calls) == len(CUTS)
    assert all(p.max_tokens <= 8 for p in decision_calls)
    assert len(message_calls) == sum(r.intervene for r in results)
    # Append-only prompts grow: each repeats the previous one up to its transcript end.
    for previous, messages, result in zip(CUTS[:-1], shown[:-1], results[1:], strict=True):
        flat = json.dumps(messages, ensure_ascii=False)
        transcript = json.dumps(TRACE[:previous], ensure_ascii=False)[1:-1]
        assert result.details["shared_prefix_chars"] >= flat.index(transcript) + len(transcript)


@pytest.mark.parametrize(
    ("decision", "full", "error"),
    [
        ("", None, "no 'Intervene"),
        ("Intervenir: Sí", None, "no 'Intervene"),
        ("Intervene: Yes", "Intervene: No\nTime: N/A\nIntervention: N/A", "said No"),
        ("Intervene: Yes", "Intervene: Yes\nTime: now\nIntervention:", "Intervention"),
        ("Intervene: Yes", "", "Intervene"),
    ],
)
def test_server_decider_malformed_output_is_a_logged_wait(decision, full, error, caplog):
    def respond(messages, params):
        return decision if params.stop == ["\n"] else full

    decider = ServerDecider(ScriptedBackend(respond))
    with caplog.at_level(logging.WARNING, logger="intbench.agents.incremental"):
        result = decider.decide([{"role": "user", "content": "watch"}])
    assert result.intervene is False and result.message is None
    assert error in result.error
    assert "treated as wait" in caplog.text


def test_model_teacher_uses_one_cached_decider_per_episode(tiny):
    from intbench.teachers import ModelTeacher

    greedy = SamplingParams(temperature=0.0, max_tokens=8)
    teacher = ModelTeacher(tiny, "monitor", "standard", sampling=greedy)
    assert teacher.incremental
    naive = NaiveDecider(tiny.model, tiny.tokenizer, max_new_tokens=9, render=tiny.render)
    teacher.reset(0)
    for messages in monitor_prompts("paper"):
        (action,) = teacher.act([0], [({}, {"messages": messages})], [7])
        assert bool(action["intervene"]) == naive.decide(messages).intervene
    stats = teacher._deciders[0].stats
    assert stats.calls == len(CUTS) and stats.prefilled_tokens < stats.prompt_tokens
    assert len(teacher.outputs[0]) == len(CUTS) and teacher.tokens[0][0] == stats.prompt_tokens
    teacher.reset(0)  # a new episode starts from an empty cache
    assert 0 not in teacher._deciders


def test_model_teacher_incremental_failure_is_an_episode_error(tiny, monkeypatch, caplog):
    from intbench.teachers import ModelTeacher

    teacher = ModelTeacher(tiny, "monitor", "standard")
    teacher.reset(3)
    messages = monitor_prompts("paper")[0]
    teacher._decider(3, seed=0)

    def broken(*args, **kwargs):
        raise RuntimeError("out of memory")

    monkeypatch.setattr("intbench.agents.kv_batch.MergedCache.forward", broken)
    with caplog.at_level(logging.ERROR):
        (action,) = teacher.act([3], [({}, {"messages": messages})], [0])
    assert action["intervene"] == 0 and "out of memory" in action["error"]
    assert 3 not in teacher._deciders  # a half-updated cache is not reused


def test_model_teacher_batches_when_incremental_does_not_apply(tiny):
    from intbench.teachers import ModelTeacher

    assert not ModelTeacher(tiny, "monitor", "oracle").incremental
    assert not ModelTeacher(tiny, "feedback", None).incremental
    assert not ModelTeacher(
        ScriptedBackend(lambda messages: "Intervene: No"), "monitor", "standard"
    ).incremental


def test_top_p_keeps_sampling_inside_the_nucleus(tiny):
    decider = KVCacheDecider(tiny.model, tiny.tokenizer, temperature=1.0, top_p=1e-6, seed=0)
    logits = torch.tensor([0.0, 3.0, 1.0, 2.0])
    assert {decider._pick(logits) for _ in range(20)} == {1}
    with pytest.raises(ValueError, match="top_p"):
        KVCacheDecider(tiny.model, tiny.tokenizer, top_p=0.0)
