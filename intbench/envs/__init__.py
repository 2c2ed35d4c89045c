"""The protocols as Gymnasium environments; ``import intbench`` registers every id."""

from intbench.envs.registration import all_env_ids, env_id, register_envs

__all__ = ["all_env_ids", "env_id", "register_envs"]
