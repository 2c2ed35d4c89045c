"""Training teachers with TRL on rewards that come from the IntBench envs.

* Monitor teacher, GRPO: :func:`monitor_states` (dataset of decision states)
  and :func:`monitor_rewards` (reward functions that step the env, plus a
  format penalty for unparsable replies).
* Feedback teacher, multi-turn GRPO: :class:`FeedbackRollout` (``rollout_func``
  playing whole episodes, student tokens masked) and :func:`feedback_reward`.
* SFT from episode records: :func:`sft_dataset`.
* :func:`train` runs any of them from a :class:`TrainConfig` (``intbench train``).
"""

from intbench.lazy import lazy_attributes

# Loaded on first access: the CLI reads TrainConfig's fields to build its flags, and
# every command would otherwise import the trainers too.
__getattr__ = lazy_attributes(
    __name__,
    {
        "TrainConfig": "intbench.training.config",
        "load_config": "intbench.training.config",
        "FeedbackRollout": "intbench.training.feedback",
        "feedback_reward": "intbench.training.feedback",
        "MonitorReward": "intbench.training.monitor",
        "decision_action": "intbench.training.monitor",
        "monitor_format_reward": "intbench.training.monitor",
        "monitor_rewards": "intbench.training.monitor",
        "monitor_states": "intbench.training.monitor",
        "FILTERS": "intbench.training.sft",
        "sft_dataset": "intbench.training.sft",
        "train": "intbench.training.trainer",
    },
)

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
