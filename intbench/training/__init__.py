"""Training teachers with TRL on rewards that come from the IntBench envs.

* Monitor teacher, GRPO: :func:`monitor_states` (dataset of decision states)
  and :func:`monitor_rewards` (reward functions that step the env, plus a
  format penalty for unparsable replies).
* Feedback teacher, multi-turn GRPO: :class:`FeedbackRollout` (``rollout_func``
  playing whole episodes, student tokens masked) and :func:`feedback_reward`.
* SFT from episode records: :func:`sft_dataset`.
* :func:`train` runs any of them from a :class:`TrainConfig` (``intbench train``).
"""

from intbench.training.config import TrainConfig, load_config
from intbench.training.feedback import FeedbackRollout, feedback_reward
from intbench.training.monitor import (
    MonitorReward,
    decision_action,
    monitor_format_reward,
    monitor_rewards,
    monitor_states,
)
from intbench.training.sft import FILTERS, sft_dataset
from intbench.training.trainer import train

__all__ = [
    "FILTERS",
    "FeedbackRollout",
    "MonitorReward",
    "TrainConfig",
    "decision_action",
    "feedback_reward",
    "load_config",
    "monitor_format_reward",
    "monitor_rewards",
    "monitor_states",
    "sft_dataset",
    "train",
]
