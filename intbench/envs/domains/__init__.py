"""The built-in domains, the registry's lookups and problem loading.

Every module of this package that defines ``DOMAIN`` (a
:class:`~intbench.envs.domains.registry.Domain`) is a built-in domain and
is registered when this package is imported; third-party domains join with
:func:`intbench.register_domain`.

>>> from intbench.envs.domains import domain_names, get_domain, load_problems
>>> domain = get_domain(domain_names()[0])
>>> problems = load_problems(domain.name, n=3, seed=1)

Sources: ``"offline"`` (packaged data or procedural generators, no network),
``"hub"`` (the papers' datasets through ``datasets.load_dataset``; raises
:class:`HubUnavailableError` within seconds when the hub is out of reach) or a
path to a local JSONL/JSON/Parquet file in the hub schema.  Domain modules
import their heavy parts (datasets, generators, graders) on first use, so
importing this package stays cheap.
"""

from __future__ import annotations

import importlib
import json
import os
import pkgutil
from typing import Any

from intbench.envs.domains import registry
from intbench.envs.domains.base import DEFAULT_PROCEDURAL_N, HubUnavailableError, load_from_source
from intbench.envs.domains.registry import (
    KINDS,
    DataSourceError,
    Domain,
    EloConfig,
    HubRef,
    ProceduralVariants,
    domain_names,
    get_domain,
)
from intbench.extras import require
from intbench.records import Problem

# Problem fields that hold nested values: stored as JSON text in a Dataset so
# that every row has the same flat Arrow schema whatever the domain.
_JSON_COLUMNS = ("answer", "tests", "fields", "metadata")


# The modules of this package that serve every domain (no need to import them here).
_SUPPORT_MODULES = {"base", "bug_injection", "prompting", "registry"}


def _register_builtin_domains() -> None:
    """Register the ``DOMAIN`` of every other module of this package, in name order."""
    for module in pkgutil.iter_modules(__path__):
        if module.ispkg or module.name in _SUPPORT_MODULES:
            continue
        domain = getattr(importlib.import_module(f"{__name__}.{module.name}"), "DOMAIN", None)
        if isinstance(domain, Domain):
            registry.add(domain)


_register_builtin_domains()


def load_problems(
    domain: str,
    source: str | os.PathLike = "offline",
    split: str | None = None,
    n: int | None = None,
    seed: int = 0,
) -> list[Problem]:
    """Load problems of ``domain``.

    Args:
        domain: a domain name (see :func:`domain_names`).
        source: ``"offline"``, ``"hub"`` or a path to a JSONL/JSON/Parquet file
            in the domain's hub schema.
        split: one split of the source; ``None`` means every split (for
            procedural sources: the ``"test"`` stream).
        n: a seeded random subset of this size (kept in source order); for
            procedural sources, how many problems to generate (default
            :data:`DEFAULT_PROCEDURAL_N`).
        seed: seeds the subset (and the generators).

    Raises:
        DataSourceError: unknown domain/split/file, malformed rows, bad ``n``.
        HubUnavailableError: ``source="hub"`` while the hub is unreachable.
    """
    return load_from_source(get_domain(domain), source, split, n, seed)


def problems_to_dataset(problems: list[Problem]):
    """A ``datasets.Dataset`` with one row per problem; nested fields are JSON strings."""
    require("datasets", "datasets", "problems_to_dataset")
    import datasets

    rows: dict[str, list[Any]] = {name: [] for name in ("id", "domain", "question", "solution")}
    rows.update({name: [] for name in _JSON_COLUMNS})
    for problem in problems:
        data = problem.to_dict()
        for name in rows:
            value = data[name]
            rows[name].append(
                json.dumps(value, ensure_ascii=False) if name in _JSON_COLUMNS else value
            )
    features = datasets.Features({name: datasets.Value("string") for name in rows})
    return datasets.Dataset.from_dict(rows, features=features)


def dataset_to_problems(dataset) -> list[Problem]:
    """Inverse of :func:`problems_to_dataset`."""
    problems = []
    for row in dataset:
        data = dict(row)
        for name in _JSON_COLUMNS:
            data[name] = json.loads(data[name])
        problems.append(Problem.from_dict(data))
    return problems


__all__ = [
    "DEFAULT_PROCEDURAL_N",
    "KINDS",
    "DataSourceError",
    "Domain",
    "EloConfig",
    "HubRef",
    "HubUnavailableError",
    "ProceduralVariants",
    "dataset_to_problems",
    "domain_names",
    "get_domain",
    "load_problems",
    "problems_to_dataset",
]
