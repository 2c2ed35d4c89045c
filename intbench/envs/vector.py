"""A vector env that batches the model calls of its sub-envs.

``gym.make_vec(id, num_envs=N, vectorization_mode="sync")`` gives Gymnasium's
``SyncVectorEnv``: correct, but each sub-env calls the student model on its
own.  ``vectorization_mode="vector_entry_point"`` (the default for IntBench ids)
gives :class:`BatchedVectorEnv`: the same API and autoreset semantics
(``NEXT_STEP``), but it advances the sub-envs' flows together, so all pending
student generations go to the model as one batch (one padded forward pass
locally, many requests in flight on a server) and verifiers run in parallel.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium.vector import AutoresetMode, SyncVectorEnv
from gymnasium.vector.utils import concatenate, iterate

from intbench.envs.common import flow_env
from intbench.envs.engine import run_flows


class BatchedVectorEnv(SyncVectorEnv):
    """``SyncVectorEnv`` over flow-based envs, with batched model calls."""

    def __init__(self, env_fns: Sequence[Callable[[], gym.Env]], copy: bool = True):
        super().__init__(env_fns, copy=copy, autoreset_mode=AutoresetMode.NEXT_STEP)
        self._flow_envs = [flow_env(env) for env in self.envs]
        self.executor = self._flow_envs[0].executor

    def reset(
        self, *, seed: int | list[int | None] | None = None, options: dict[str, Any] | None = None
    ):
        seeds = _seed_list(seed, self.num_envs)
        options = dict(options or {})
        mask = options.pop("reset_mask", None)
        if mask is None:
            mask = np.ones(self.num_envs, dtype=np.bool_)
        elif not (
            isinstance(mask, np.ndarray)
            and mask.dtype == np.bool_
            and mask.shape == (self.num_envs,)
        ):
            raise ValueError(
                f"options['reset_mask'] must be a bool array of shape ({self.num_envs},)"
            )
        indices = np.flatnonzero(mask)
        self._terminations[indices] = False
        self._truncations[indices] = False
        self._autoreset_envs[indices] = False
        results = run_flows(
            [self._flow_envs[i].reset_flow(seed=seeds[i], options=options) for i in indices],
            self.executor,
        )
        infos: dict[str, Any] = {}
        for i, (obs, info) in zip(indices.tolist(), results, strict=True):
            self._env_obs[i] = obs
            infos = self._add_info(infos, info, i)
        return self._batched_observations(), infos

    def step(self, actions):
        single_actions = list(iterate(self.action_space, actions))
        resetting = self._autoreset_envs.copy()
        env_flows = [
            env.reset_flow() if resetting[i] else env.step_flow(single_actions[i])
            for i, env in enumerate(self._flow_envs)
        ]
        infos: dict[str, Any] = {}
        for i, result in enumerate(run_flows(env_flows, self.executor)):
            if resetting[i]:
                self._env_obs[i], info = result
                self._rewards[i], self._terminations[i], self._truncations[i] = 0.0, False, False
            else:
                (
                    self._env_obs[i],
                    self._rewards[i],
                    self._terminations[i],
                    self._truncations[i],
                    info,
                ) = result
            infos = self._add_info(infos, info, i)
        self._autoreset_envs = np.logical_or(self._terminations, self._truncations)
        return (
            self._batched_observations(),
            np.copy(self._rewards),
            np.copy(self._terminations),
            np.copy(self._truncations),
            infos,
        )

    def _batched_observations(self):
        self._observations = concatenate(
            self.single_observation_space, self._env_obs, self._observations
        )
        return _copy(self._observations) if self.copy else self._observations


def _copy(data):
    from copy import deepcopy

    return deepcopy(data)


def _seed_list(seed, num_envs: int) -> list[int | None]:
    if seed is None:
        return [None] * num_envs
    if isinstance(seed, int):
        return [seed + i for i in range(num_envs)]
    if len(seed) != num_envs:
        raise ValueError(f"got {len(seed)} seeds for {num_envs} envs")
    return list(seed)


def batched_monitor(num_envs: int = 1, **kwargs) -> BatchedVectorEnv:
    """Vector entry point of the monitor ids."""
    from intbench.envs.monitor import MonitorEnv

    return BatchedVectorEnv([lambda: MonitorEnv(**kwargs) for _ in range(num_envs)])


def batched_feedback(num_envs: int = 1, **kwargs) -> BatchedVectorEnv:
    """Vector entry point of the feedback ids."""
    from intbench.envs.feedback import FeedbackEnv

    return BatchedVectorEnv([lambda: FeedbackEnv(**kwargs) for _ in range(num_envs)])
