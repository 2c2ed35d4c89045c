"""What a protocol is to the rest of IntBench, and the registry of protocols.

A protocol (monitor, feedback, tutor, ...) registers one :class:`ProtocolSpec`.
Generic code (gym ids, teachers, rewards, metrics, reports, export, training)
loops over the registered specs or looks one up by name or env id, and reads
the spec's attributes instead of comparing protocol names.

Code a protocol supplies is named by ``"module:attribute"`` strings, as
Gymnasium's entry points are, and imported on first use (:func:`load`): a spec
imports nothing heavy and no module that imports the registry back.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from intbench.agents.base import SamplingParams

TEACHING_COMPONENTS = (
    "success",
    "leaked",
    "leak_undetermined",
    "judge_leaked",
    "transfer",
    "transfer_alone",
    "transfer_gain",
    "derailed",
    "messages",
)
"""The reward components every protocol's episodes report (:mod:`intbench.envs.rewards`);
a protocol adds its own to them."""


@dataclass(frozen=True)
class ProtocolSpec:
    """One protocol: its ids, env, teacher, reward, metrics, report, export and training."""

    name: str
    """The name records and configs carry (``Episode.protocol``)."""
    id_tag: str
    """Between the domain's env name and ``-v0`` in its gym ids (``""``, ``"-Feedback"``)."""
    entry_point: str
    """The env class, ``"module:Class"``."""
    vector_entry_point: str
    """The batched vector env factory, ``"module:function"``."""
    options: str
    """The env's options dataclass, ``"module:Class"``."""
    title: str
    """How reports and errors name it (``"the feedback protocol"``)."""
    teacher_templates: tuple[str, ...]
    """The teacher prompt templates it offers (names in ``envs/domains/templates``)."""
    teacher_sampling: SamplingParams
    """A model teacher's sampling unless the run gives its own."""
    parse_reply: str
    """``(text, condition) -> action``: a model teacher's reply as an env action."""
    reward_components: tuple[str, ...]
    """The reward components its episodes report (``envs/rewards.py``)."""
    telling_outcomes: str
    """``(alone, helped, variant_alone, variant_helped) -> (tell, wait)`` components of a
    leaking message and of silence, for ``rewards.telling_margin``."""
    summarize: str
    """``(summary, by_protocol, samples) -> None``: adds its groups and tables to a
    ``metrics.Summary``; ``by_protocol`` holds every protocol's episodes."""
    final_correct: str
    """``(episode) -> bool | None``: whether an episode ended correct."""
    report_outcome: str
    """``(episode) -> str``: the report browser's label of how an episode ended."""
    report_view: str
    """``(episode) -> dict``: the report browser's protocol-specific view of an episode."""
    export_columns: str
    """``(episode) -> dict``: the export columns only its episodes fill (the others are
    ``None`` for it)."""
    teacher_messages: str
    """``(record) -> list``: the teacher messages of an episode, for ``intbench analyze``."""
    policy_teachers: bool = False
    """Whether scripted policies other than ``never`` can play its teacher."""
    incremental: bool = False
    """Whether its teacher decides once per revealed increment of a solution (a local
    model then reuses its KV cache across an episode's decisions)."""
    parsed_actions: bool = False
    """Whether its env takes a parsed decision rather than the teacher's text."""
    interventions: bool = False
    """Whether its episodes hold one timed intervention into a student's solution
    (timing figures, replays, generalization contexts read them)."""
    forwards_execution: bool = False
    """Whether its observation carries the verifier's output a teacher may forward."""
    matrix: bool = False
    """Whether ``intbench matrix`` runs it (every student with every teacher)."""
    collaboration_condition: str | None = None
    """The condition of its episodes where teacher and student work together (an
    episode without a condition counts as it); ratings rank teachers by these."""
    solo_conditions: tuple[str, ...] = ()
    """The conditions of its episodes where the student solves alone (a skill rating)."""
    trl_tools: str | None = None
    """``(make_kwargs) -> class``: the TRL ``environment_factory`` tools class of its envs."""
    grpo: str | None = None
    """``(config, pool) -> GRPOTrainer``: how GRPO trains its teacher, or ``None`` when
    GRPO does not."""
    sft: str | None = None
    """An ``intbench.training.sft.SftProtocol``: how SFT selects records and makes
    examples of its teacher messages, or ``None`` when SFT does not train its teacher."""

    @property
    def id_suffix(self) -> str:
        """The end of its gym ids (``"-v0"``, ``"-Feedback-v0"``)."""
        return f"{self.id_tag}-v0"

    def env_id(self, env_name: str) -> str:
        """Its gym id for a domain's ``Domain.env_name``."""
        return f"IntBench-{env_name}{self.id_suffix}"

    def hook(self, field: str) -> Any:
        """The object (a function, or the SFT hooks) a ``"module:attribute"`` field names,
        imported on first use."""
        target = getattr(self, field)
        if target is None:
            raise ValueError(f"the {self.name} protocol has no {field}")
        return load(target)


def load(target: str) -> Any:
    """The object ``"module:attribute"`` names."""
    module, _, attribute = target.partition(":")
    return getattr(importlib.import_module(module), attribute)


_REGISTRY: dict[str, ProtocolSpec] = {}


class _LiveView(Mapping[str, ProtocolSpec]):
    """Name -> spec of every registered protocol, in registration order, as of now."""

    def __getitem__(self, name: str) -> ProtocolSpec:
        return _REGISTRY[name]

    def __iter__(self) -> Iterator[str]:
        return iter(list(_REGISTRY))

    def __len__(self) -> int:
        return len(_REGISTRY)

    def __repr__(self) -> str:
        return f"PROTOCOLS({', '.join(_REGISTRY)})"


PROTOCOLS: Mapping[str, ProtocolSpec] = _LiveView()
"""Every registered protocol by name; protocols registered later appear too."""


def register_protocol(spec: ProtocolSpec) -> ProtocolSpec:
    """Add ``spec`` to the registry; its gym ids are registered for every domain.

    Registering the same spec again does nothing.

    Raises:
        ValueError: another protocol has its name or id tag.
    """
    if _REGISTRY.get(spec.name) == spec:
        return spec
    for other in _REGISTRY.values():
        if spec.name == other.name or spec.id_tag == other.id_tag:
            raise ValueError(
                f"protocol {spec.name!r} (ids *{spec.id_suffix}) clashes with the registered "
                f"{other.name!r} (ids *{other.id_suffix}); give it another name and id tag"
            )
    _REGISTRY[spec.name] = spec
    _register_ids(spec)
    return spec


def unregister_protocol(name: str) -> None:
    """Remove a protocol (tests that register one of their own clean up with this)."""
    get_protocol(name)
    del _REGISTRY[name]


def _register_ids(spec: ProtocolSpec) -> None:
    # Gym ids need gymnasium: a loaded id registration registers this protocol's ids;
    # one not loaded yet (or still loading) registers every spec's ids itself.
    registration = sys.modules.get("intbench.envs.registration")
    register_ids = getattr(registration, "register_protocol_ids", None)
    if register_ids is not None:
        register_ids(spec)


def get_protocol(name: str) -> ProtocolSpec:
    """The spec of the protocol called ``name``.

    Raises:
        ValueError: one line naming the registered protocols.
    """
    try:
        return _REGISTRY[name]
    except KeyError:
        raise ValueError(f"unknown protocol {name!r}; registered: {', '.join(_REGISTRY)}") from None


def has(protocol: str, attribute: str) -> bool:
    """Whether ``protocol`` is registered and its spec's flag ``attribute`` is set
    (records of other protocols, such as generalization runs, have no spec)."""
    spec = _REGISTRY.get(protocol)
    return spec is not None and bool(getattr(spec, attribute))


def protocol_of_env_id(env_id: str) -> ProtocolSpec:
    """The spec of the protocol an IntBench gym id belongs to (``intbench:`` prefix allowed).

    Raises:
        ValueError: one line naming the registered ids, for an id that is not one.
    """
    from intbench.envs.domains import registry

    name = env_id.split(":")[-1]  # "intbench:IntBench-Math-v0" -> "IntBench-Math-v0"
    domains = [registry.get_domain(d).env_name for d in registry.domain_names()]
    for spec in _REGISTRY.values():
        if name in {spec.env_id(d) for d in domains}:
            return spec
    known = ", ".join(spec.env_id(d) for spec in _REGISTRY.values() for d in domains)
    raise ValueError(f"{env_id!r} is not an IntBench env id; known: {known}")
