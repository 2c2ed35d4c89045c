"""Teachers the runner can put in an env: scripted policies, language models, replays.

A teacher turns a batch of ``(observation, info)`` pairs into one action per
pair.  Language-model teachers read ``info["messages"]`` (the paper's prompt
for that step), are called once per batch, and their replies are parsed with
the paper's formats; a reply that does not parse becomes a malformed action
that the env records (and treats as no intervention).

Every kind implements :class:`Teacher`, the interface the engine
(:mod:`intbench.envs.engine`, :mod:`intbench.runner`) calls; :class:`BaseTeacher`
gives the parts a kind may leave out.
"""

from __future__ import annotations

import copy
import difflib
import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, Protocol, runtime_checkable

from intbench.agents.backends.loading import KNOWN_KINDS, check_spec
from intbench.agents.base import ChatBackend, SamplingParams, is_remote
from intbench.agents.incremental import (
    KVCacheDecider,
    LocalChatModel,
    decide_batch,
    decision_line,
)
from intbench.agents.policies import POLICY_KINDS, AtFraction, make_policy
from intbench.protocols import PROTOCOLS, get_protocol
from intbench.records import Episode

logger = logging.getLogger(__name__)

DECISION_TOKENS = 6
"""Tokens a server teacher may write for its decision line (``Intervene: No`` and a newline)."""

Step = tuple[dict, dict]
"""An env's ``(observation, info)`` after a reset or step: what a teacher decides on."""


@runtime_checkable
class Teacher(Protocol):
    """What the engine asks of a teacher; every kind below implements it."""

    @property
    def backend(self) -> ChatBackend | None:
        """The model the teacher's decisions run on, or ``None`` for decisions made in
        Python (policies, replays, people): the scheduler makes those inline and sends
        the others to the model's worker; the run's summary counts the model's tokens."""
        ...

    def reset(self, slot: int, key: str | None = None) -> None:
        """Start a new episode in ``slot``; ``key`` is its run key (``"<problem>:<repeat>"``)."""
        ...

    def act(self, slots: Sequence[int], steps: Sequence[Step], seeds: Sequence[int]) -> list[Any]:
        """One action per step of the episodes in ``slots``; ``seeds`` seed each decision."""
        ...

    def finish(self, slot: int, episode: Episode) -> None:
        """Add what the teacher knows about the episode in ``slot`` to its record."""
        ...


class BaseTeacher:
    """The parts of :class:`Teacher` a kind may leave out: no model, no per-episode
    state, nothing to add to the record."""

    backend: ChatBackend | None = None

    def reset(self, slot: int, key: str | None = None) -> None:
        return None

    def finish(self, slot: int, episode: Episode) -> None:
        return None


def _kind(spec: str) -> str:
    return spec.split("?", 1)[0].partition(":")[0].strip()


def is_policy_spec(spec: str) -> bool:
    return _kind(spec) in POLICY_KINDS


def check_teacher_spec(spec: str) -> None:
    """Raise a one-line ValueError naming the fix if ``spec`` names no teacher.

    Only the spec is read (no model loads), so a typo fails before any work.
    """
    if not isinstance(spec, str) or not spec.strip():
        raise ValueError(f"teacher spec must be a non-empty string, got {spec!r}")
    kind = _kind(spec)
    if kind in POLICY_KINDS:
        make_policy(spec)
    elif kind in KNOWN_KINDS:
        check_spec(spec)
    else:
        raise ValueError(f"unknown teacher {spec!r}; {_suggestion(spec, kind)}")


def _suggestion(spec: str, kind: str) -> str:
    close = difflib.get_close_matches(kind, POLICY_KINDS + KNOWN_KINDS, n=1)
    if close:
        return f"did you mean {spec.strip().replace(kind, close[0], 1)!r}?"
    return (
        "use a policy (never, always, at:<fraction>, random:<p>, oracle) or a model spec "
        "(smollm2, hf:<model>, openai:<model>@<url>, llamacpp:<file>, scripted:...)"
    )


class PolicyTeacher(BaseTeacher):
    """A scripted baseline policy (``never``, ``always``, ``at:x``, ``random:p``, ``oracle``).

    The spec is parsed here, so a bad one fails before any episode.  Each
    episode's random draws come from the seed of its first step, which the
    runner derives from the run seed and the episode key.
    """

    def __init__(self, spec: str, protocol: str, condition: str | None):
        self.scripted = get_protocol(protocol).policy_teachers
        if not self.scripted and spec.split("?", 1)[0] != "never":
            scripted = " and ".join(p.name for p in PROTOCOLS.values() if p.policy_teachers)
            others = " and ".join(p.name for p in PROTOCOLS.values() if not p.policy_teachers)
            raise ValueError(
                f"policy teacher {spec!r} applies to the {scripted} protocol; for {others} runs "
                "use a model spec, 'never' (no feedback / silence) or the feedback env's "
                "mode=self_refine/self_feedback/self_critique"
            )
        self.spec = spec
        self.protocol = protocol
        self.condition = condition
        self._template = make_policy(spec)
        self._policies: dict[int, Any] = {}
        self._unseeded: set[int] = set()

    def reset(self, slot: int, key: str | None = None) -> None:
        self._policies[slot] = copy.deepcopy(self._template)
        self._unseeded.add(slot)

    def _policy(self, slot: int, seed: int) -> Any:
        policy = self._policies[slot]
        if slot in self._unseeded:  # the episode's first step: its seed is the episode's
            policy.reset(seed)
            self._unseeded.discard(slot)
        return policy

    def act(self, slots: Sequence[int], steps: Sequence[Step], seeds: Sequence[int]) -> list[Any]:
        actions = []
        for slot, (obs, info), seed in zip(slots, steps, seeds, strict=True):
            if not self.scripted:  # 'never': no feedback, silence
                actions.append({"intervene": 0, "message": ""})
                continue
            policy = self._policy(slot, seed)
            action = policy.decide({**obs, **info})
            if self.condition == "oracle" and action["intervene"]:
                total = info["privileged"]["total_chars"]
                # Oracle interventions need a place: an at:x (or random:p) fraction, else the start.
                fraction = policy.fraction if isinstance(policy, AtFraction) else 0.0
                action = {**action, "position": int(fraction * total), "quote": ""}
            actions.append(action)
        return actions


class ModelTeacher(BaseTeacher):
    """A language model prompted with ``info["messages"]``; replies parsed per protocol.

    A local transformers model as Standard monitor teacher answers through one
    :class:`~intbench.agents.incremental.KVCacheDecider` per episode: each
    increment prefills only the newly revealed text, the decision is sampled
    from the Yes/No probabilities after ``Intervene:`` and a message is
    generated only on Yes (benchmarks/results/monitor_prefix_reuse.md).  Other
    backends and protocols get one batched ``generate`` call per round.
    """

    def __init__(
        self,
        backend: ChatBackend,
        protocol: str,
        condition: str | None,
        sampling: SamplingParams | None = None,
    ):
        self.backend: ChatBackend = backend
        self.spec = backend.spec
        self.protocol = protocol
        self.condition = condition
        spec = get_protocol(protocol)
        self.sampling = sampling or spec.teacher_sampling
        self._parse_reply = spec.hook("parse_reply")
        self.outputs: dict[int, list[str]] = {}
        self.tokens: dict[int, list[int]] = {}
        local = isinstance(backend, LocalChatModel)
        standard = spec.incremental and condition != "oracle"
        self.incremental = local and standard
        # On a server, a Standard wait costs a few tokens: the decision line comes first.
        self.decide_first = standard and not local and is_remote(backend)
        self._deciders: dict[int, KVCacheDecider] = {}

    def reset(self, slot: int, key: str | None = None) -> None:
        self.outputs[slot] = []
        self.tokens[slot] = [0, 0]
        self._deciders.pop(slot, None)

    def finish(self, slot: int, episode: Episode) -> None:
        """Record the teacher's raw replies and its token usage in the episode."""
        episode.metadata["teacher_outputs"] = self.outputs[slot]
        prompt, completion = self.tokens[slot]
        episode.tokens.update(teacher_prompt=prompt, teacher_completion=completion)

    def _decider(self, slot: int, seed: int) -> KVCacheDecider:
        if slot not in self._deciders:
            local = self.backend
            assert isinstance(local, LocalChatModel)  # self.incremental says so
            self._deciders[slot] = KVCacheDecider(
                local.model,
                local.tokenizer,
                temperature=self.sampling.temperature,
                top_p=self.sampling.top_p,
                max_message_tokens=self.sampling.max_tokens,
                seed=seed,
                render=local.render,
            )
        return self._deciders[slot]

    def _record(self, slot: int, text: str, prompt_tokens: int, completion_tokens: int) -> None:
        self.outputs[slot].append(text)
        self.tokens[slot][0] += prompt_tokens
        self.tokens[slot][1] += completion_tokens

    def act(self, slots: Sequence[int], steps: Sequence[Step], seeds: Sequence[int]) -> list[Any]:
        actions: list[Any] = [{"intervene": 0, "message": ""}] * len(steps)
        asking = [i for i, (_, info) in enumerate(steps) if info.get("messages")]
        if not asking:
            return actions
        if self.incremental:
            decided = self._decide(
                [slots[i] for i in asking],
                [steps[i][1] for i in asking],
                [seeds[i] for i in asking],
            )
            for i, action in zip(asking, decided, strict=True):
                actions[i] = action
            return actions
        if self.decide_first:
            return self._decide_first(slots, steps, seeds, asking, actions)
        # One batch shares a seed; per-episode seeds keep runs reproducible.
        sampling = replace(self.sampling, seed=seeds[asking[0]])
        completions = self._generate_or_fail([steps[i][1]["messages"] for i in asking], sampling)
        if isinstance(completions, str):
            for i in asking:
                actions[i] = {"intervene": 0, "message": "", "error": completions}
            return actions
        for i, completion in zip(asking, completions, strict=True):
            self._record(
                slots[i], completion.text, completion.prompt_tokens, completion.completion_tokens
            )
            actions[i] = self.parse(completion.text, completion.error)
        return actions

    def _generate_or_fail(self, prompts: list, sampling: SamplingParams) -> list | str:
        """The batch's completions, or why the teacher backend failed as a whole."""
        try:
            return self.backend.generate(prompts, sampling)
        except Exception as exc:  # a teacher outage is an episode error, recorded by the env
            logger.exception("teacher backend %s failed", self.spec)
            return f"teacher failed: {exc}"

    def _decide_first(self, slots, steps, seeds, asking, actions) -> list[Any]:
        """Standard decisions on a server: the decision line alone (at most
        ``DECISION_TOKENS`` tokens, stopped at the newline), then the full reply
        only for a Yes.  A full reply that then says No is a logged wait."""
        seed = seeds[asking[0]]  # one batch shares a seed, as in the full-reply path
        short = replace(self.sampling, seed=seed, max_tokens=DECISION_TOKENS, stop=["\n"])
        firsts = self._generate_or_fail([steps[i][1]["messages"] for i in asking], short)
        if isinstance(firsts, str):
            for i in asking:
                actions[i] = {"intervene": 0, "message": "", "error": firsts}
            return actions
        yes = []
        for i, first in zip(asking, firsts, strict=True):
            self._record(slots[i], first.text, first.prompt_tokens, first.completion_tokens)
            decision = None if first.error else decision_line(first.text)
            if decision is None:  # an error, or no decision line: what the full reply would give
                actions[i] = self.parse(first.text, first.error)
            elif decision:
                yes.append(i)
        if not yes:
            return actions
        fulls = self._generate_or_fail(
            [steps[i][1]["messages"] for i in yes], replace(self.sampling, seed=seed)
        )
        for n, i in enumerate(yes):
            if isinstance(fulls, str):
                actions[i] = {"intervene": 0, "message": "", "error": fulls}
                continue
            full = fulls[n]
            self._record(slots[i], full.text, full.prompt_tokens, full.completion_tokens)
            actions[i] = self.parse(full.text, full.error)
            if not actions[i].get("intervene") and not actions[i].get("error"):
                logger.warning("teacher said Yes, then No in its full reply: a wait")
        return actions

    def _decide(self, slots: list[int], infos: list[dict], seeds: list[int]) -> list[dict | str]:
        """Incremental Standard decisions of several episodes in one batch (local models)."""
        deciders = [self._decider(slot, seed) for slot, seed in zip(slots, seeds, strict=True)]
        try:
            results = decide_batch(deciders, [info["messages"] for info in infos])
        except Exception as exc:  # like a backend failure: an episode error, not a crash
            logger.exception("teacher %s failed", self.spec)
            for slot in slots:
                self._deciders.pop(slot, None)  # the caches may be half updated
            return [{"intervene": 0, "message": "", "error": f"teacher failed: {exc}"}] * len(slots)
        for slot, result in zip(slots, results, strict=True):
            self._record(slot, result.text, result.prompt_tokens, result.generated_tokens)
        return [self.parse(result.text) for result in results]

    def parse(self, text: str, error: str | None = None) -> dict | str:
        if error:
            return {"intervene": 0, "message": "", "error": f"teacher failed: {error}"}
        return self._parse_reply(text, self.condition)


@dataclass(frozen=True)
class ReplayedIntervention:
    """What a Standard run's teacher did in one episode.

    ``position`` is ``None`` when it did not intervene; ``baseline`` is the
    student trace it watched, so a replay can tell that it sees the same one.
    """

    position: int | None
    message: str
    baseline: str | None
    episode_id: str | None


class ReplayTeacher(BaseTeacher):
    """Replays, per episode key, the interventions of an earlier Standard monitor run.

    Int-Bench §3.3 compares Standard-Continue with Stop-and-Answer on the same
    intervention messages: the replay intervenes with the recorded message as
    soon as the revealed prefix reaches the recorded position (the same
    baseline and increments reveal the same prefixes), and never intervenes in
    an episode where the Standard teacher did not.
    """

    def __init__(self, plan: Mapping[object, ReplayedIntervention], source: str):
        """``plan``: what the teacher did, by run key."""
        self.plan = plan
        self.source = source
        self._current: dict[int, tuple[str | None, ReplayedIntervention | None]] = {}

    def reset(self, slot: int, key: str | None = None) -> None:
        self._current[slot] = (key, self.plan.get(key))

    def act(self, slots: Sequence[int], steps: Sequence[Step], seeds: Sequence[int]) -> list[Any]:
        actions = []
        for slot, (_, info) in zip(slots, steps, strict=True):
            _, entry = self._current[slot]
            if (
                entry is not None
                and entry.position is not None
                and int(info["revealed_chars"]) >= entry.position
            ):
                actions.append({"intervene": 1, "message": entry.message})
            else:
                actions.append({"intervene": 0, "message": ""})
        return actions

    def finish(self, slot: int, episode: Episode) -> None:
        """Note where the episode's interventions came from; a baseline other than the
        one the Standard teacher watched makes them meaningless, so the episode fails."""
        key, entry = self._current.get(slot, (None, None))
        episode.metadata["replayed_from"] = {
            "run": self.source,
            "episode_id": entry.episode_id if entry else None,
        }
        baseline = episode.baseline.text if episode.baseline is not None else None
        if entry is not None and entry.baseline is not None and baseline != entry.baseline:
            episode.error = episode.error or (
                f"the student's baseline for episode {key} differs from the one in {self.source}, "
                "so its intervention cannot be replayed (same student, sampling and cache needed)"
            )


class HumanTeacher(BaseTeacher):
    """A participant's decision in a human study (:mod:`intbench.human`), played on the env.

    The participant watched ``reveals`` increments go by and then chose
    ``action`` (an Oracle participant decides at once: ``reveals=0``); the study
    replays that on a fresh env to build the trial's record.
    """

    WAIT = {"intervene": 0, "message": ""}

    def __init__(self, reveals: int, action: dict):
        self.reveals = reveals
        self.action = action
        self._seen: dict[int, int] = {}

    def reset(self, slot: int, key: str | None = None) -> None:
        self._seen[slot] = 0

    def act(self, slots: Sequence[int], steps: Sequence[Step], seeds: Sequence[int]) -> list[Any]:
        actions = []
        for slot in slots:
            seen = self._seen[slot]
            self._seen[slot] = seen + 1
            actions.append(self.action if seen >= self.reveals else self.WAIT)
        return actions

    def decides_at(self, step: int) -> bool:
        """Whether the participant's own action is the one taken at ``step``."""
        return step == self.reveals


def make_teacher(
    spec: str, protocol: str, condition: str | None, sampling: SamplingParams | None = None
) -> Teacher:
    """A teacher from its spec: a policy name or any model spec (``hf:``, ``openai:``, ...)."""
    check_teacher_spec(spec)
    if is_policy_spec(spec):
        return PolicyTeacher(spec, protocol, condition)
    from intbench.agents.backends import shared_backend

    return ModelTeacher(shared_backend(spec), protocol, condition, sampling)
