"""Each env's options dataclass, found from its registered id or protocol."""

from __future__ import annotations

import gymnasium as gym

from intbench.protocols import PROTOCOLS
from intbench.protocols.spec import load as _load


def env_options_class(env_id: str) -> type:
    """The options dataclass of the env that ``env_id`` builds (a gym error for an unknown id)."""
    return _load(str(gym.spec(env_id).entry_point)).options_class


def protocol_options() -> dict[str, type]:
    """Each protocol's name -> its env's options dataclass, in registration order."""
    return {name: _load(spec.options) for name, spec in PROTOCOLS.items()}
