"""Incremental monitor decisions: ask the Standard teacher once per increment
without paying for the whole prompt every time.

The monitor protocol reveals the student's trace in small increments (50
characters by default) and asks the teacher at each one whether to intervene.
Successive prompts share most of their text, so recomputing them from scratch
makes the cost quadratic in the trace length.  Two deciders avoid that:

* :class:`KVCacheDecider` (local transformers models) keeps the KV cache of the
  previous prompt, crops it to the longest common *token* prefix with the new
  prompt and prefills only the rest.  It then reads the decision from the
  next-token distribution at the decision slot of the output format (right
  after ``Intervene:``), comparing the `` Yes`` and `` No`` tokens, and
  generates the message only when it intervenes, continuing from the cache.
  With the paper's template the reference solution and the output format
  come *after* the transcript, so only [instructions + problem + transcript
  so far] is reused and the rest is prefilled again each time; the
  append-only template (``teacher_standard_append``) puts everything fixed
  before the transcript, so only the new text and a few closing tokens are.
* :class:`ServerDecider` (any :class:`~intbench.agents.base.ChatBackend`, e.g.
  an OpenAI-compatible server with prefix caching) sends prompts whose text
  only grows and asks first for the decision line alone (a few tokens, stop at
  a newline), then for the message only when the answer is Yes.

:class:`NaiveDecider` is the reference both are measured against: it renders
the full prompt and generates the full teacher output every time.

All three return :class:`DecisionResult` and keep :class:`DecisionStats`.
"""

from __future__ import annotations

import inspect
import json
import logging
import re
import time
from collections.abc import Callable, Sequence
from dataclasses import KW_ONLY, dataclass, field
from typing import Any, Protocol, runtime_checkable

from intbench.agents.base import ChatBackend, Completion, Conversation, SamplingParams
from intbench.agents.kv_batch import MergedCache, can_merge, input_device

logger = logging.getLogger(__name__)

RenderFn = Callable[[Conversation], str]
"""Turns chat messages into the prompt text, ending where the assistant speaks."""


@runtime_checkable
class LocalChatModel(Protocol):
    """A backend whose transformers model and tokenizer live in this process
    (:class:`~intbench.agents.backends.hf.HFBackend`): what a
    :class:`KVCacheDecider` can reuse the KV cache of."""

    model: Any
    tokenizer: Any

    def render(self, conversation: Conversation) -> str: ...


DECISION_PREFIX = "Intervene:"
"""The text the teacher's output starts with; the decision token follows it."""

# The first line of a monitor answer, e.g. "Intervene: Yes" or "**Intervene:** no".
_DECISION_LINE = re.compile(r"^[\s*_#]*intervene[\s*_]*:[\s*_]*(yes|no)\b", re.IGNORECASE)


def decision_line(text: str) -> bool | None:
    """The decision an answer starts with: ``True`` (Yes), ``False`` (No), ``None`` (none)."""
    match = _DECISION_LINE.match(text or "")
    return None if match is None else match.group(1).lower() == "yes"


@dataclass(kw_only=True)
class DecisionCost:
    """Tokens and time spent deciding: one decision's, or a decider's running total.

    ``prompt_tokens`` counts every prompt token the calls needed; ``prefilled_tokens``
    only those actually computed (the rest came from the cache).
    """

    prompt_tokens: int = 0
    prefilled_tokens: int = 0
    generated_tokens: int = 0
    seconds: float = 0.0

    def add_cost(self, cost: DecisionCost) -> None:
        """Add ``cost``'s tokens and seconds to these."""
        self.prompt_tokens += cost.prompt_tokens
        self.prefilled_tokens += cost.prefilled_tokens
        self.generated_tokens += cost.generated_tokens
        self.seconds += cost.seconds


def _request_cost(completion: Completion) -> DecisionCost:
    """The cost of one server request: servers report no cache hits, so every prompt
    token counts as prefilled."""
    return DecisionCost(
        prompt_tokens=completion.prompt_tokens,
        prefilled_tokens=completion.prompt_tokens,
        generated_tokens=completion.completion_tokens,
    )


@dataclass(kw_only=True)
class DecisionStats(DecisionCost):
    """Running cost counters of a decider.

    Servers do not report their cache hits, so :class:`ServerDecider` records
    ``shared_prefix_chars``: how much of each prompt repeated the previous one
    byte for byte (what a server's prefix cache can reuse).
    """

    calls: int = 0
    prompt_chars: int = 0
    shared_prefix_chars: int = 0

    def to_dict(self) -> dict:
        return dict(self.__dict__)

    def count(self, result: DecisionResult) -> None:
        """Add one decision that was computed whole (not one request of several)."""
        self.calls += 1
        self.add_cost(result)


@dataclass(kw_only=True)
class DecisionResult(DecisionCost):
    """One monitor decision and its cost (:class:`DecisionCost`).

    Attributes:
        intervene: the decision; malformed output always counts as wait.
        message: the intervention message (``None`` when waiting).
        time: the ``Time:`` field of the output format, if the model gave one.
        p_intervene: probability of Yes against No at the decision slot at
            temperature 1 (the model's own preference); ``None`` when the
            backend exposes no token probabilities.
        text: the teacher output, starting with ``Intervene:``.
        error: why the output was treated as malformed, else ``None``.
        details: ``reused_tokens`` and ``decision_seconds`` (time until the
            decision, before any message) from :class:`KVCacheDecider`;
            ``shared_prefix_chars`` from :class:`ServerDecider`.
    """

    intervene: bool
    message: str | None = None
    time: str | None = None
    p_intervene: float | None = None
    text: str = ""
    error: str | None = None
    details: dict = field(default_factory=dict)


def _apply_parsed_output(result: DecisionResult) -> DecisionResult:
    """Fill ``message``/``time`` from ``result.text``; an intervention the
    parser rejects (e.g. no ``Intervention:`` text) becomes a logged wait."""
    from intbench.agents.parsing import parse_monitor_decision

    parsed = parse_monitor_decision(result.text)
    if parsed.error or not parsed.intervene:
        result.error = parsed.error or "the output does not say Intervene: Yes"
        logger.warning("monitor output treated as wait: %s (%r)", result.error, result.text[:200])
        result.intervene = False
        result.message = None
        return result
    result.message = parsed.message
    result.time = parsed.time
    return result


def _common_prefix_length(a: list[int] | str, b: list[int] | str) -> int:
    n = min(len(a), len(b))
    i = 0
    while i < n and a[i] == b[i]:
        i += 1
    return i


def _chat_text(tokenizer: Any, messages: Conversation) -> str:
    return tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)


def _prompt_ids(
    tokenizer: Any, messages: Conversation, decision_prefix: str, render: RenderFn | None
) -> list[int]:
    """Token ids of the chat prompt followed by the decision prefix of the answer."""
    if not messages:
        raise ValueError("messages must be a non-empty list of chat messages")
    text = render(messages) if render is not None else _chat_text(tokenizer, messages)
    # The template already holds the special tokens (BOS, turn markers).
    return tokenizer(text + decision_prefix, add_special_tokens=False)["input_ids"]


def _single_token(tokenizer: Any, text: str) -> int:
    ids = tokenizer.encode(text, add_special_tokens=False)
    if len(ids) != 1:
        raise ValueError(
            f"{text!r} is {len(ids)} tokens for this tokenizer; the decision slot needs one"
        )
    return ids[0]


class KVCacheDecider:
    """Monitor decisions for one episode with a local transformers model,
    reusing the KV cache of the longest common token prefix between calls.

    Call :meth:`reset` (or make a new decider) between episodes.  Sampling:
    at ``temperature`` 0 the decision is the likelier of Yes/No and the
    message is greedy, so the results equal :class:`NaiveDecider`'s under
    greedy decoding; above 0 both are sampled at that temperature (message
    tokens also within the ``top_p`` nucleus) from a ``torch.Generator``
    seeded with ``seed``.  ``render`` turns messages into
    prompt text (default: the tokenizer's chat template); pass the backend's
    own renderer so both see the same prompt.
    """

    def __init__(
        self,
        model: Any,
        tokenizer: Any,
        *,
        temperature: float = 0.0,
        top_p: float = 1.0,
        max_message_tokens: int = 128,
        seed: int | None = None,
        decision_prefix: str = DECISION_PREFIX,
        yes: str = " Yes",
        no: str = " No",
        render: RenderFn | None = None,
    ) -> None:
        import torch

        if temperature < 0:
            raise ValueError(f"temperature must be >= 0, got {temperature}")
        if not 0 < top_p <= 1:
            raise ValueError(f"top_p must be in (0, 1], got {top_p}")
        if max_message_tokens < 1:
            raise ValueError(f"max_message_tokens must be >= 1, got {max_message_tokens}")
        self.model = model
        self.tokenizer = tokenizer
        self.temperature = temperature
        self.top_p = top_p
        self.max_message_tokens = max_message_tokens
        self.decision_prefix = decision_prefix
        self.yes_id = _single_token(tokenizer, yes)
        self.no_id = _single_token(tokenizer, no)
        self.yes, self.no = yes, no
        self.render = render
        self.stats = DecisionStats()
        self._generator = torch.Generator(device="cpu")
        if seed is not None:
            self._generator.manual_seed(seed)
        self._stop_ids = self._eos_ids()
        # transformers 5.x renamed the forward argument ``past_key_values`` to ``cache``.
        parameters = inspect.signature(model.forward).parameters
        self._cache_kw = "cache" if "cache" in parameters else "past_key_values"
        self.reset()

    def _eos_ids(self) -> set[int]:
        eos = getattr(self.model.generation_config, "eos_token_id", None)
        if eos is None:
            eos = self.tokenizer.eos_token_id
        ids = eos if isinstance(eos, list) else [eos]
        return {i for i in ids if i is not None}

    def reset(self) -> None:
        """Forget the cache (start of a new episode)."""
        from transformers import DynamicCache

        self._cache = DynamicCache(config=self.model.config)
        self._cached_ids: list[int] = []  # the tokens whose keys/values the cache holds

    def _truncate_cache(self, keep: int) -> None:
        extra = len(self._cached_ids) - keep
        if keep == 0:
            self.reset()
        elif extra > 0:
            # transformers 5 crops by a negative count of tokens to drop.
            self._cache.crop(-extra)
            self._cached_ids = self._cached_ids[:keep]

    def _pick(self, logits) -> int:
        import torch

        if self.temperature == 0:
            return int(torch.argmax(logits))
        probs = torch.softmax(logits / self.temperature, dim=-1)
        if self.top_p < 1:
            # Nucleus sampling: keep the smallest set of likeliest tokens whose mass reaches top_p.
            sorted_probs, order = torch.sort(probs, descending=True)
            outside = torch.cumsum(sorted_probs, dim=-1) - sorted_probs >= self.top_p
            sorted_probs[outside] = 0.0
            return int(order[torch.multinomial(sorted_probs, 1, generator=self._generator)])
        return int(torch.multinomial(probs, 1, generator=self._generator))

    def _decide_yes(self, logits) -> tuple[bool, float]:
        import torch

        pair = torch.stack([logits[self.yes_id], logits[self.no_id]])
        p_yes = float(torch.softmax(pair, dim=-1)[0])
        if self.temperature == 0:
            return p_yes > 0.5, p_yes
        p_sampled = torch.softmax(pair / self.temperature, dim=-1)
        draw = float(torch.rand((), generator=self._generator))
        return draw < float(p_sampled[0]), p_yes

    def decide(self, messages: Conversation) -> DecisionResult:
        """Decide wait/intervene for the prompt ``messages`` (the whole chat so far)."""
        return decide_batch([self], [messages])[0]


def decide_batch(
    deciders: Sequence[KVCacheDecider], prompts: Sequence[Conversation]
) -> list[DecisionResult]:
    """The decisions of several episodes' deciders on one model, batched.

    One forward pass prefills every episode's new tokens after its own cached
    prefix (:class:`~intbench.agents.kv_batch.MergedCache`), and the messages of
    those that intervene are generated together, one forward per token.  Each
    decider samples with its own generator, so an episode's decisions do not
    depend on which others share its batch.  Times in the results are the
    batch's.  Models whose cache cannot be merged run one episode at a time.
    """
    _check_batch(deciders, prompts)
    if not deciders:
        return []
    first = deciders[0]
    if len(deciders) > 1 and not all(can_merge(d._cache) for d in deciders):
        return [decide_batch([d], [p])[0] for d, p in zip(deciders, prompts, strict=True)]
    start = time.perf_counter()
    ids, keeps = _reuse_prefixes(deciders, prompts)
    merged = MergedCache(first.model, [d._cache for d in deciders], keeps, first._cache_kw)
    logits = merged.forward([p[k:] for p, k in zip(ids, keeps, strict=True)]).float().cpu()
    for row, decider in enumerate(deciders):
        decider._cache, decider._cached_ids = merged.split(row), list(ids[row])
    decisions = [d._decide_yes(logits[row]) for row, d in enumerate(deciders)]
    decision_seconds = time.perf_counter() - start
    yes = [row for row, (intervene, _) in enumerate(decisions) if intervene]
    generated = _generate_messages([deciders[row] for row in yes], merged, yes)
    seconds = time.perf_counter() - start
    return [
        _result(
            decider,
            decisions[row],
            generated.get(row, []),
            len(ids[row]),
            keeps[row],
            seconds,
            decision_seconds,
        )
        for row, decider in enumerate(deciders)
    ]


def _result(
    decider: KVCacheDecider,
    decision: tuple[bool, float],
    message_ids: list[int],
    prompt_tokens: int,
    keep: int,
    seconds: float,
    decision_seconds: float,
) -> DecisionResult:
    """One episode's result, counted in its decider's stats; ``message_ids`` is empty unless
    it intervenes."""
    intervene, p_yes = decision
    result = DecisionResult(
        intervene=intervene,
        p_intervene=p_yes,
        text=_decision_text(decider, intervene, message_ids),
        prompt_tokens=prompt_tokens,
        prefilled_tokens=prompt_tokens - keep,
        generated_tokens=1 + len(message_ids) if intervene else 0,
        seconds=seconds,
        details={"reused_tokens": keep, "decision_seconds": decision_seconds},
    )
    decider.stats.count(result)
    return _apply_parsed_output(result) if intervene else result


def _check_batch(deciders: Sequence[KVCacheDecider], prompts: Sequence[Conversation]) -> None:
    if len(deciders) != len(prompts):
        raise ValueError(f"{len(deciders)} deciders for {len(prompts)} prompts")
    if any(d.model is not deciders[0].model for d in deciders):
        raise ValueError("a batch of decisions needs one model")


def _reuse_prefixes(
    deciders: Sequence[KVCacheDecider], prompts: Sequence[Conversation]
) -> tuple[list[list[int]], list[int]]:
    """Each prompt's token ids and how many of them its decider's cache keeps (cut to that)."""
    ids, keeps = [], []
    for decider, messages in zip(deciders, prompts, strict=True):
        prompt = _prompt_ids(decider.tokenizer, messages, decider.decision_prefix, decider.render)
        # Keep at least one token to run so the model yields the decision logits.
        keep = min(_common_prefix_length(decider._cached_ids, prompt), len(prompt) - 1)
        decider._truncate_cache(keep)
        ids.append(prompt)
        keeps.append(keep)
    return ids, keeps


def _decision_text(decider: KVCacheDecider, intervene: bool, message_ids: list[int]) -> str:
    if intervene:
        body = decider.tokenizer.decode(message_ids, skip_special_tokens=True)
        return decider.decision_prefix + decider.yes + body
    return decider.decision_prefix + decider.no


def _generate_messages(
    deciders: list[KVCacheDecider], merged: MergedCache, rows: list[int]
) -> dict[int, list[int]]:
    """Messages after `` Yes`` for the deciders of ``rows``, generated together; each
    decider's cache then holds what it was fed, as when it generates alone."""
    if not rows:
        return {}
    merged.select(rows)
    fed = [[d.yes_id] for d in deciders]  # the tokens each row has run, after its prompt
    out: list[list[int]] = [[] for _ in deciders]
    active = list(range(len(deciders)))
    while active:
        logits = merged.forward([[fed[j][-1]] for j in active]).float().cpu()
        going = []
        for position, j in enumerate(active):
            decider = deciders[j]
            token = decider._pick(logits[position])
            done = token in decider._stop_ids or len(fed[j]) >= decider.max_message_tokens
            if token not in decider._stop_ids:
                out[j].append(token)
            if done:
                decider._cache = merged.split(position)
                decider._cached_ids = decider._cached_ids + fed[j]
            else:
                fed[j].append(token)
                going.append(position)
        if going and len(going) < len(active):
            merged.select(going)
        active = [active[position] for position in going]
    return {row: out[j] for j, row in enumerate(rows)}


@dataclass(eq=False, repr=False)
class NaiveDecider:
    """The reference: render the whole prompt and ``generate()`` the whole
    teacher output at every increment, then parse it.  Used by tests and the
    prefix-reuse benchmark to check the incremental deciders."""

    model: Any
    tokenizer: Any
    _: KW_ONLY
    max_new_tokens: int = 129
    decision_prefix: str = DECISION_PREFIX
    render: RenderFn | None = None
    stats: DecisionStats = field(default_factory=DecisionStats, init=False)

    def decide(self, messages: Conversation) -> DecisionResult:
        """Greedy full generation for ``messages``; the decision is parsed from the text."""
        import torch

        start = time.perf_counter()
        ids = _prompt_ids(self.tokenizer, messages, self.decision_prefix, self.render)
        input_ids = torch.tensor([ids], dtype=torch.long, device=input_device(self.model))
        with torch.no_grad():
            output = self.model.generate(
                input_ids=input_ids,
                attention_mask=torch.ones_like(input_ids),
                max_new_tokens=self.max_new_tokens,
                do_sample=False,
                pad_token_id=self.tokenizer.pad_token_id or self.tokenizer.eos_token_id,
            )
        new_ids = output[0, len(ids) :].tolist()
        body = self.tokenizer.decode(new_ids, skip_special_tokens=True)
        result = DecisionResult(
            intervene=True,  # provisional: the parser below decides
            text=self.decision_prefix + body,
            prompt_tokens=len(ids),
            prefilled_tokens=len(ids),
            generated_tokens=len(new_ids),
            seconds=time.perf_counter() - start,
        )
        self.stats.count(result)
        return _decision_from_text(result)


def _decision_from_text(result: DecisionResult) -> DecisionResult:
    """Set the decision of a full teacher output by parsing it."""
    match = _DECISION_LINE.match(result.text)
    if match and match.group(1).lower() == "no":
        result.intervene = False
        return result
    if not match:
        result.intervene = False
        result.error = "no 'Intervene: Yes/No' line at the start of the output"
        logger.warning("monitor output treated as wait: %s (%r)", result.error, result.text[:200])
        return result
    result.intervene = True
    return _apply_parsed_output(result)


def _flatten(messages: Conversation) -> str:
    """A canonical serialisation to compare prompts byte for byte."""
    return json.dumps(messages, ensure_ascii=False)[:-1]  # drop "]" so prompts can extend


@dataclass(eq=False, repr=False)
class ServerDecider:
    """Monitor decisions through any chat backend, shaped for server prefix caching.

    Each increment sends the chat prompt (whose text must only grow: nothing
    that changes per call may come before the transcript) and asks for the
    decision line alone (``decision_max_tokens`` tokens, stop at a newline).
    Only on Yes does a second request with the same prompt ask for the full
    answer, from which the message is parsed; if that answer carries no
    intervention (possible when sampling) the increment counts as a logged
    wait, so a decision never comes without a message.
    """

    backend: ChatBackend
    _: KW_ONLY
    temperature: float = 0.0
    seed: int | None = None
    decision_max_tokens: int = 6
    message_max_tokens: int = 256
    stats: DecisionStats = field(default_factory=DecisionStats, init=False)
    _previous: str = field(default="", init=False)  # the last prompt, flattened

    def reset(self) -> None:
        """Start a new episode."""
        self._previous = ""

    def _call(self, messages: Conversation, max_tokens: int, stop: list[str] | None):
        params = SamplingParams(
            temperature=self.temperature, max_tokens=max_tokens, stop=stop, seed=self.seed
        )
        completion = self.backend.generate([messages], params)[0]
        self.stats.calls += 1
        self.stats.add_cost(_request_cost(completion))
        return completion

    def decide(self, messages: Conversation) -> DecisionResult:
        """Decide wait/intervene for the prompt ``messages``."""
        if not messages:
            raise ValueError("messages must be a non-empty list of chat messages")
        start = time.perf_counter()
        flat = _flatten(messages)
        shared = _common_prefix_length(self._previous, flat)
        self.stats.prompt_chars += len(flat)
        self.stats.shared_prefix_chars += shared
        self._previous = flat

        first = self._call(messages, self.decision_max_tokens, ["\n"])
        result = DecisionResult(
            intervene=False, text=first.text, details={"shared_prefix_chars": shared}
        )
        result.add_cost(_request_cost(first))
        match = _DECISION_LINE.match(first.text or "")
        if first.error or not match:
            result.error = first.error or "no 'Intervene: Yes/No' line at the start of the output"
            logger.warning("monitor output treated as wait: %s (%r)", result.error, first.text)
        elif match.group(1).lower() == "yes":
            full = self._call(messages, self.message_max_tokens, None)
            result.add_cost(_request_cost(full))
            result.text = full.text
            if full.error:
                result.error = full.error
                logger.warning("monitor message request failed: %s", full.error)
            else:
                result = _decision_from_text(result)
                if not result.intervene and result.error is None:
                    result.error = "the decision said Yes but the full answer said No"
                    logger.warning("monitor output treated as wait: %s", result.error)
        result.seconds = time.perf_counter() - start
        self.stats.seconds += result.seconds
        return result
