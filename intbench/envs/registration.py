"""Environment ids, registered with Gymnasium when ``intbench`` is imported.

Every registered domain has one id per registered protocol (:mod:`intbench.protocols`),
``IntBench-<EnvName><id_tag>-v0``: ``IntBench-<EnvName>-v0``,
``IntBench-<EnvName>-Feedback-v0`` and ``IntBench-<EnvName>-Tutor-v0`` for the built-in
ones (``EnvName`` is the domain's ``Domain.env_name``).  They exist after ``import
intbench``, ``gym.make("intbench:<id>")`` imports the package itself,
:func:`register_domain` adds a third-party domain's ids and
:func:`~intbench.protocols.register_protocol` a new protocol's.

Installed packages publish domains in the entry-point group
:data:`ENTRY_POINT_GROUP`; each entry point names a :class:`Domain` (or a
module defining ``DOMAIN``) and is registered with the built-in domains.
"""

from __future__ import annotations

import logging
import types
from importlib.metadata import entry_points

import gymnasium as gym

from intbench.envs.domains import registry
from intbench.envs.domains.registry import Domain
from intbench.protocols import PROTOCOLS, ProtocolSpec, get_protocol, protocol_of_env_id


def env_id(domain: str, protocol: str = "monitor") -> str:
    return get_protocol(protocol).env_id(registry.get_domain(domain).env_name)


def _register(domain: str, spec: ProtocolSpec) -> None:
    name = spec.env_id(registry.get_domain(domain).env_name)
    if name in gym.registry:
        return
    gym.register(
        id=name,
        entry_point=spec.entry_point,
        vector_entry_point=spec.vector_entry_point,
        kwargs={"domain": domain},
        disable_env_checker=False,
    )


def _register_ids(domain: str) -> None:
    for spec in PROTOCOLS.values():
        _register(domain, spec)


def register_protocol_ids(spec: ProtocolSpec) -> None:
    """Register ``spec``'s id for every registered domain (``register_protocol`` calls it)."""
    for domain in registry.domain_names():
        _register(domain, spec)


ENTRY_POINT_GROUP = "intbench.domains"
"""The entry-point group in which installed packages declare their domains."""

_log = logging.getLogger(__name__)


def _plugin_domain(target: object) -> Domain:
    """The :class:`Domain` an entry point names: the object itself or a module's ``DOMAIN``."""
    domain = getattr(target, "DOMAIN", None) if isinstance(target, types.ModuleType) else target
    if not isinstance(domain, Domain):
        raise TypeError(f"names a {type(domain).__name__}, not an intbench Domain")
    return domain


def discover_domains() -> list[str]:
    """Register the domains that installed packages declare in :data:`ENTRY_POINT_GROUP`.

    A plugin that fails to load or clashes with a registered domain is skipped
    with a warning naming it, so one broken package cannot break ``import intbench``.
    Returns the names of the domains registered by this call.
    """
    added = []
    for point in entry_points(group=ENTRY_POINT_GROUP):
        try:
            domain = _plugin_domain(point.load())
            if registry.is_registered(domain.name) and registry.get_domain(domain.name) is domain:
                continue
            registry.add(domain)
        except Exception as error:  # a third party's bug: report it, keep the rest working
            _log.warning(
                "skipped the IntBench domain plugin %r (%s): %s; fix or uninstall %s",
                point.name,
                point.value,
                error,
                point.dist.name if point.dist else "its package",
            )
            continue
        added.append(domain.name)
    return added


def register_envs() -> None:
    """Register every IntBench id, plugin domains' included (idempotent)."""
    discover_domains()
    for domain in registry.domain_names():
        _register_ids(domain)


def register_domain(domain: Domain) -> Domain:
    """Add a third-party ``domain`` to IntBench, with its monitor, feedback and tutor ids.

    After the call its problems validate, :func:`intbench.verify` grades them,
    prompts render with its answer format and templates, and
    ``gym.make(env_id(domain.name, protocol))`` works for every protocol.
    Registering the same object again does nothing.

    Raises:
        ValueError: another domain has its name or env name.
    """
    registry.add(domain)
    _register_ids(domain.name)
    return domain


def protocol_of(spec_id: str) -> str:
    """The name of the protocol of an IntBench env id (``"monitor"``, ``"feedback"``, ...)."""
    return protocol_of_env_id(spec_id).name


def all_env_ids(protocol: str | None = None) -> list[str]:
    protocols = [protocol] if protocol else list(PROTOCOLS)
    return [env_id(d, p) for p in protocols for d in registry.domain_names()]
