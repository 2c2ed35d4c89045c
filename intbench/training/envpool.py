"""Reusable env instances whose episodes advance together as flows.

A GRPO batch needs one live episode per sampled completion.  Building envs is
not free (problem lists, caches, thread pools), so a pool keeps them and
hands out as many as a batch needs; :meth:`EnvPool.run` advances their flows
together so all student calls of a round go to the model as one batch.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym

from intbench.envs import flows
from intbench.envs.engine import run_flows
from intbench.protocols import PROTOCOLS, ProtocolSpec


def env_protocol(env_id: str) -> ProtocolSpec:
    """The protocol of a registered env id, by its env class (ids registered by hand too)."""
    import intbench.envs  # noqa: F401  (registers the ids)

    try:
        entry_point = gym.spec(env_id).entry_point
    except gym.error.Error as exc:
        raise ValueError(f"unknown env id {env_id!r}: {exc}") from None
    for spec in PROTOCOLS.values():
        if entry_point == spec.entry_point:
            return spec
    raise ValueError(f"{env_id!r} is not an IntBench env (entry point {entry_point!r})")


class EnvPool:
    """Envs of one id and configuration, created on demand and reused."""

    def __init__(self, env_id: str, env_kwargs: dict[str, Any] | None = None):
        self.env_id = env_id
        self.spec = env_protocol(env_id)
        self.protocol = self.spec.name
        self.env_kwargs = dict(env_kwargs or {})
        self._envs: list[Any] = []

    def take(self, count: int) -> list[Any]:
        """``count`` unwrapped envs (flows run on the unwrapped env)."""
        while len(self._envs) < count:
            self._envs.append(gym.make(self.env_id, **self.env_kwargs).unwrapped)
        return self._envs[:count]

    def run(self, env_flows: list[flows.Flow]) -> list[Any]:
        """Advance ``env_flows`` together, batching their model and verifier calls."""
        if not env_flows:
            return []
        # Every env of the pool shares the same backends (shared_backend), so
        # the first env's executor serves them all, as in the batched vector env.
        return run_flows(env_flows, self.take(1)[0].executor)

    def problem_count(self) -> int:
        """How many problems the envs draw from."""
        return len(self.take(1)[0].problems)

    def close(self) -> None:
        for env in self._envs:
            env.close()
        self._envs.clear()
