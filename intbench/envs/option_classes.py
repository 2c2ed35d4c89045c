"""Each env's options dataclass, found from its registered id or protocol."""

from __future__ import annotations

import importlib
from typing import Any

import gymnasium as gym

from intbench.envs.registration import PROTOCOLS


def _load(entry_point: str) -> Any:
    module, _, name = entry_point.partition(":")
    return getattr(importlib.import_module(module), name)


def env_options_class(env_id: str) -> type:
    """The options dataclass of the env that ``env_id`` builds (a gym error for an unknown id)."""
    return _load(str(gym.spec(env_id).entry_point)).options_class


def protocol_options() -> dict[str, type]:
    """Each protocol's name -> its env's options dataclass, in registration order."""
    return {name: _load(entry[1]).options_class for name, entry in PROTOCOLS.items()}
