"""The domain registry: what a domain is made of, and which domains exist.

A :class:`Domain` carries everything about its domain: where its problems
come from, how answers must look and are graded, how a leak of the answer is
detected, its kind (which decides the per-kind choices of the protocols),
procedural variant support and its Elo constants.  The built-in domains are
the modules of :mod:`intbench.envs.domains` that define ``DOMAIN``; third-party
domains join with :func:`intbench.register_domain`.

This module imports nothing else of IntBench, so that the records can check a
problem's domain against it.  Functions that a domain names may be callables
or ``"module:function"`` paths, imported on first use so that registering a
domain stays cheap (generators, for instance, import sympy).
"""

from __future__ import annotations

import importlib
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

KINDS = ("text", "code", "grid")
"""What a domain's answers are: a short text, a program, or output grids."""

_NAME = re.compile(r"[a-z][a-z0-9_]*")
_ENV_NAME = re.compile(r"[A-Za-z][A-Za-z0-9]*")

RowMapper = Callable[[dict, str, int], Any]
"""``(row, split, index) -> Problem``: maps one hub-schema row to a problem."""

OfflineLoader = Callable[[str, "int | None", int], list]
"""``(split, n, seed) -> problems``: ``n`` is only used by procedural sources."""


class DataSourceError(ValueError):
    """A data source was asked for something it cannot give (unknown domain, bad split, path, n...)."""


@dataclass(frozen=True)
class HubRef:
    """Where one split of a domain lives on the hub: ``load_dataset(path, name, split=split)``.

    ``data_files`` names the repository files that hold the split, for a
    dataset whose files the library would otherwise sort into splits by name.
    """

    path: str
    split: str
    name: str | None = None
    data_files: tuple[str, ...] | None = None

    def describe(self) -> str:
        config = f" ({self.name})" if self.name else ""
        return f"{self.path}{config}[{self.split}]"


@dataclass(frozen=True)
class EloConfig:
    """One domain's rating constants (see :mod:`intbench.tutor.elo`, KITE App. C.8).

    Attributes:
        k: ``K``, the rating change for an outcome that was not expected at all.
        scale: ``S``, the rating difference at which the odds are 10:1.
        initial: rating of a new student, and of a task without a known rating.
        lower, upper: the bounds a student's rating is clipped to (task ratings
            from metadata are clipped too).
        band: the next task is drawn from ``[rating + band[0], rating + band[1]]``.
        level_step: rating points per difficulty level when a task's metadata
            has a 1-5 ``level``/``difficulty`` (MATH-style) instead of a rating;
            level 3 maps to ``initial``.
    """

    k: float = 32.0
    scale: float = 400.0
    initial: float = 1500.0
    lower: float = 0.0
    upper: float = 3000.0
    band: tuple[float, float] = (0.0, 200.0)
    level_step: float = 200.0

    def __post_init__(self) -> None:
        if self.k <= 0 or self.scale <= 0:
            raise ValueError(f"k and scale must be positive, got k={self.k}, scale={self.scale}")
        if not self.lower < self.upper:
            raise ValueError(f"lower must be below upper, got {self.lower} >= {self.upper}")
        if not self.lower <= self.initial <= self.upper:
            raise ValueError(
                f"initial {self.initial} outside the bounds [{self.lower}, {self.upper}]"
            )
        if len(self.band) != 2 or self.band[0] > self.band[1]:
            raise ValueError(f"band must be (low, high) with low <= high, got {self.band}")


@dataclass(frozen=True)
class ProceduralVariants:
    """Exact variants of generated problems (see :mod:`intbench.generalization.procedural`).

    Attributes:
        make_variant: ``(problem, seed) -> Problem`` of the same skill with fresh parameters.
        rebuild: ``(problem) -> Problem`` regenerated from ``fields["params"]`` alone.
        reference_response: ``(problem) -> str``, a response that states the
            reference answer in the domain's answer format (the variant check
            grades it).
        any_problem: ``make_variant`` varies every problem of the domain, not
            only generated ones that carry ``fields["params"]`` (ARC recolours
            any task, from any source).
    """

    make_variant: Callable[..., Any] | str
    rebuild: Callable[..., Any] | str
    reference_response: Callable[..., Any] | str
    any_problem: bool = False


@dataclass(frozen=True, kw_only=True)
class Domain:
    """Everything IntBench needs to know about one domain.

    Attributes:
        name: the domain id used in :class:`~intbench.records.Problem`
            (lower case, digits and ``_``).
        env_name: the environment name part (``"Chess"`` -> ``IntBench-Chess-v0``).
        description: one line for listings.
        kind: ``"text"``, ``"code"`` or ``"grid"`` (:data:`KINDS`).  It picks
            the default leak check, execution feedback for code, the tutor's
            submission budget and whether LLM-written variants can be checked.
        answer_format: what a final answer must look like, as Jinja text
            (plain text shows as is; ``problem`` may be ``None``).  An
            ``answer_format.j2`` in ``templates`` overrides it.
        verifier: ``(problem, response) -> Verdict``.
        row_to_problem: maps a hub-schema row (also local files) to a Problem.
        offline_loader: loads (or generates) the offline problems of a split.
        offline_splits: splits the offline source has.
        default_split: the split a load without ``split`` reads, offline and on
            the hub (``None``: every split; generated problems: the first).
        max_output_tokens: the default token limit of a student or feedback-teacher
            call (the feedback paper, App. A.2: 8,192; ARC-AGI 16,000).
        offline_source: human-readable name of the offline source.
        hub: our split name -> :class:`HubRef` (empty: no hub source).
        leak_check: ``(problem, message) -> bool``; ``None`` uses the kind's
            check in :mod:`intbench.verifiers.leakage`.
        templates: a folder of prompt template overrides (``_problem.j2``,
            ``_solver_role.j2``, any protocol template); a file missing there
            falls back to the protocol's generic one.
        procedural: whether the offline source generates problems on demand.
        procedural_variants: exact-variant support of generated problems.
        elo: rating constants for the tutor protocol (``None``: the defaults).
        license: licence of the hub dataset; offline problems carry their own.
        hub_schema_confirmed: ``False`` when the hub schema could not be checked
            against a dataset card.
        offline_needs_build: returns True while the first offline load still has
            to build (and cache) its data, which takes a while.
        student_example: ``(question, response)`` of one solved problem that every
            monitor and feedback student conversation shows first, as an earlier
            user and assistant turn; for domains meant for small models, which
            follow an answer format from an example but not from instructions
            (``None``: the papers' prompts, no example).
    """

    name: str
    env_name: str
    description: str
    kind: str
    answer_format: str
    verifier: Callable[..., Any] | str
    row_to_problem: RowMapper
    offline_loader: OfflineLoader
    offline_splits: tuple[str, ...]
    offline_source: str
    hub: Mapping[str, HubRef] = field(default_factory=dict)
    leak_check: Callable[..., Any] | str | None = None
    templates: Path | None = None
    procedural: bool = False
    procedural_variants: ProceduralVariants | None = None
    elo: EloConfig | None = None
    license: str = ""
    hub_schema_confirmed: bool = True
    offline_needs_build: Callable[[], bool] | None = None
    default_split: str | None = None
    max_output_tokens: int = 8192
    student_example: tuple[str, str] | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not _NAME.fullmatch(self.name):
            raise ValueError(f"domain name {self.name!r}: use lower case letters, digits and _")
        if not isinstance(self.env_name, str) or not _ENV_NAME.fullmatch(self.env_name):
            raise ValueError(
                f"domain {self.name!r}: env_name {self.env_name!r} must be alphanumeric"
            )
        if self.kind not in KINDS:
            raise ValueError(f"domain {self.name!r}: kind {self.kind!r} is not one of {KINDS}")
        if not self.offline_splits:
            raise ValueError(f"domain {self.name!r}: offline_splits is empty")
        if self.default_split is not None and self.default_split not in self.offline_splits:
            raise ValueError(
                f"domain {self.name!r}: default_split {self.default_split!r} is not one of "
                f"its offline splits {self.offline_splits}"
            )

    @property
    def llm_variants(self) -> bool:
        """Whether the LLM variant pipeline can check variants: only short text answers."""
        return self.kind == "text"

    @property
    def hub_splits(self) -> tuple[str, ...]:
        return tuple(self.hub)

    @property
    def sources(self) -> tuple[str, ...]:
        """Source kinds accepted by the loaders (``local`` = a file path)."""
        return ("offline", "hub", "local")

    def splits(self, source: str = "offline") -> tuple[str, ...]:
        """The splits of ``source`` (``"offline"``, ``"hub"``; local files have one split)."""
        if source == "offline":
            return self.offline_splits
        if source == "hub":
            return self.hub_splits
        return ("local",)


def resolve(target: Callable[..., Any] | str) -> Callable[..., Any]:
    """The function ``target`` names: itself, or the import of a ``"module:function"`` path."""
    if callable(target):
        return target
    module, sep, name = str(target).partition(":")
    if not sep or not module or not name:
        raise ValueError(f"{target!r} is neither a callable nor a 'module:function' path")
    return getattr(importlib.import_module(module), name)


_REGISTRY: dict[str, Domain] = {}


def _key(name: str) -> str:
    return str(name).strip().lower().replace("-", "_")


def add(domain: Domain) -> Domain:
    """Put ``domain`` in the registry (Gymnasium ids: :func:`intbench.register_domain`).

    Raises:
        ValueError: another domain has its name or env name.
    """
    if not isinstance(domain, Domain):
        raise TypeError(f"expected a Domain, got {type(domain).__name__}")
    for other in _REGISTRY.values():
        if other is domain:
            return domain
        if domain.name == other.name or domain.env_name.lower() == other.env_name.lower():
            raise ValueError(
                f"domain {domain.name!r} (env name {domain.env_name!r}) clashes with the "
                f"registered domain {other.name!r} (env name {other.env_name!r})"
            )
    _REGISTRY[domain.name] = domain
    return domain


def is_registered(name: str) -> bool:
    return name in _REGISTRY


def domain_names() -> tuple[str, ...]:
    """Every registered domain: the built-in ones (by name), then others in registration order."""
    return tuple(_REGISTRY)


def get_domain(name: str) -> Domain:
    """The :class:`Domain` registered as ``name`` (case-insensitive; ``-`` == ``_``).

    Raises:
        DataSourceError: no domain of that name is registered (the message lists them).
    """
    domain = _REGISTRY.get(_key(name))
    if domain is None:
        raise DataSourceError(f"unknown domain {name!r}; expected one of {list(_REGISTRY)}")
    return domain


def domains() -> tuple[Domain, ...]:
    """Every registered :class:`Domain`, in :func:`domain_names` order."""
    return tuple(_REGISTRY.values())
