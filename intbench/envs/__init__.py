"""The protocols as Gymnasium environments; importing this registers every id."""

from intbench.envs.registration import all_env_ids, env_id, register_envs

register_envs()

__all__ = ["all_env_ids", "env_id", "register_envs"]
