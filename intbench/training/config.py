"""Training configuration: one YAML file per run, every field with a documented default.

A file holds the fields of :class:`TrainConfig`; ``trainer:`` is passed
unchanged to TRL's ``GRPOConfig`` or ``SFTConfig`` (so any TRL option can be
set there), ``lora:`` to peft's ``LoraConfig``.  Unknown top-level keys are
refused: a typo should fail, not be silently ignored.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from intbench.options import check_keys, field_names, option

METHODS = ("grpo", "sft")

MONITOR_GRPO_DEFAULTS: dict[str, Any] = {
    "learning_rate": 1e-4,
    "lr_scheduler_type": "constant_with_warmup",
    "warmup_steps": 6,
    "per_device_train_batch_size": 16,
    "num_generations": 8,
    "temperature": 1.0,
    "beta": 0.2,
    "loss_type": "dapo",
    "reward_weights": [1.0, 0.2],
    "max_steps": 24,
}
"""``GRPOConfig`` defaults for monitor envs (``trainer:`` values override each key).

The recipe measured in ``benchmarks/results/train_teachers.md``:
groups of 8 completions, so that a policy whose intervention rate is low
still sees groups that disagree (at a rate of 0.19 a group of 4 agrees with
probability 0.43, one of 8 with 0.19; an agreeing group has zero advantage);
a KL penalty (``beta``) to the initial policy, which pulls the rate back
when it drifts; token-level loss normalisation (``dapo``), so that the
decision token of a long ``Yes`` reply weighs as much as that of a short
``No``; a constant learning rate after 6 steps of linear warmup (Adam's
first updates move every weight by about the learning rate whatever the
gradient's size; without the warmup one seed of three swung to never
intervening within 9 steps); and weight 0.2 on the unparsable-reply
penalty (:func:`~intbench.training.monitor_format_reward`).  Feedback envs
keep TRL's own defaults."""


TRAINING_REWARD = "teaching"
"""The reward preset of a GRPO run whose ``env_options`` name none: what the
message adds on a variant the teacher never saw, less a leak
(:data:`intbench.envs.rewards.PRESETS`), so that stating the answer, flagged or
not, scores below waiting.  ``intbench audit-reward`` checks any other choice
before a run."""


@dataclass
class TrainConfig:
    """Everything a ``intbench train`` run needs: the fields of a YAML config; each
    field's help is in its metadata (:func:`intbench.options.option`), and those with
    a flag are options of ``intbench train``, which win over the file."""

    method: str = option("grpo", help="grpo or sft", flag=False)
    env: str = option(
        "IntBench-Math-v0",
        help="env id; its protocol picks the GRPO flavour: monitor ids get the "
        "single-decision reward, -Feedback- ids the multi-turn rollout",
    )
    env_options: dict[str, Any] = option(
        default_factory=dict,
        help="extra gym.make keyword arguments (increment, reward, k_max, ...); GRPO's reward "
        "defaults to TRAINING_REWARD",
        flag=False,
    )
    model: str = option(
        "smollm2",
        help="the policy to train: smollm2 (a trainable copy of the embedded model), "
        "hf:<dir> or a plain directory",
    )
    student: str = option("smollm2", help="the frozen student's model spec")
    source: str = option(
        "offline", help="the training problems: offline, hub or a JSONL/JSON/Parquet file"
    )
    split: str | None = option(None, help="the source's split (the domain's default)")
    n: int = option(32, help="number of training problems")
    data_seed: int = option(0, help="seed of the problem subset")
    states_per_problem: int = option(2, help="monitor GRPO: decision states sampled per problem")
    max_turn_tokens: int = option(128, help="feedback GRPO: tokens per teacher turn")
    temperature: float = option(1.0, help="feedback GRPO: sampling temperature of teacher turns")
    train_layers: int | None = option(
        None,
        help="train only the top N decoder layers and the final norm, freezing the rest and "
        "the embeddings; none trains every weight (exclusive with lora)",
    )
    format_priming: dict[str, Any] | None = option(
        None,
        help="monitor GRPO: SFT steps on well-formed replies with coin-flip decisions before "
        "GRPO, so a small policy's replies parse (PRIMING_DEFAULTS fill omitted keys; {} takes "
        "them all); the primed policy is saved to <output_dir>/format-primed and is also "
        "GRPO's KL reference; null skips priming",
        flag=False,
    )
    balanced_states: bool = option(
        False,
        help="monitor GRPO: order the decision states so that every step holds as many wrong "
        "as right student baselines",
    )
    environment_factory: bool = option(
        False,
        help="grpo: the policy acts with tool calls through TRL's environment_factory (any "
        "env id; reward: the env's return); its chat template gets tool calling if it lacks it",
    )
    records: list[str] = option(
        default_factory=list, help="sft: run directories written by intbench eval"
    )
    filter: str = option(
        "helpful_no_leak",
        help="sft: which teacher decisions to imitate (intbench.training.sft.FILTERS)",
    )
    output_dir: str = option("runs/train", help="where checkpoints and the final model go")
    seed: int = option(0, help="seeds state sampling, priming and the trainer")
    lora: dict[str, Any] | None = option(
        None,
        help="peft LoraConfig arguments, or null for full fine-tuning (--lora: the defaults)",
        flag=False,
    )
    trainer: dict[str, Any] = option(
        default_factory=dict,
        help="TRL GRPOConfig/SFTConfig arguments; monitor GRPO runs start from "
        "MONITOR_GRPO_DEFAULTS",
        flag=False,
    )

    def __post_init__(self) -> None:
        if self.method not in METHODS:
            raise ValueError(f"method must be one of {METHODS}, got {self.method!r}")
        self._check_counts()
        self._check_mappings()
        self._check_train_layers()
        self._check_format_priming()
        self._check_grpo_options()

    def _check_counts(self) -> None:
        if self.n is not None and self.n < 1:
            raise ValueError(f"n must be positive, got {self.n}")
        if self.states_per_problem < 1:
            raise ValueError(f"states_per_problem must be positive, got {self.states_per_problem}")
        if self.max_turn_tokens < 1:
            raise ValueError(f"max_turn_tokens must be positive, got {self.max_turn_tokens}")

    def _check_mappings(self) -> None:
        for name in ("env_options", "trainer"):
            if not isinstance(getattr(self, name), dict):
                raise ValueError(
                    f"{name} must be a mapping, got {type(getattr(self, name)).__name__}"
                )
        if self.lora is not None and not isinstance(self.lora, dict):
            raise ValueError(f"lora must be a mapping or null, got {type(self.lora).__name__}")

    def _check_train_layers(self) -> None:
        if self.train_layers is None:
            return
        if isinstance(self.train_layers, bool) or not isinstance(self.train_layers, int):
            raise ValueError(f"train_layers must be an integer or null, got {self.train_layers!r}")
        if self.train_layers < 1:
            raise ValueError(f"train_layers must be positive, got {self.train_layers}")
        if self.lora is not None:
            raise ValueError("train_layers and lora exclude each other: set one to null")

    def _check_format_priming(self) -> None:
        if self.format_priming is None:
            return
        from intbench.training.priming import PRIMING_DEFAULTS

        if not isinstance(self.format_priming, dict):
            raise ValueError(
                f"format_priming must be a mapping or null, got {type(self.format_priming).__name__}"
            )
        check_keys(self.format_priming, PRIMING_DEFAULTS, "format_priming key")

    def _check_grpo_options(self) -> None:
        """The options that only some GRPO runs take."""
        if self.method != "grpo" and (self.format_priming is not None or self.balanced_states):
            raise ValueError("format_priming and balanced_states apply to monitor GRPO only")
        if self.environment_factory and (
            self.method != "grpo" or self.format_priming is not None or self.balanced_states
        ):
            raise ValueError(
                "environment_factory is a GRPO option and excludes format_priming and balanced_states"
            )

    def env_kwargs(self) -> dict[str, Any]:
        """``gym.make`` keyword arguments for the training env."""
        return {
            "reward": TRAINING_REWARD,
            **self.env_options,
            "student": self.student,
            "source": self.source,
            "split": self.split,
            "n": self.n,
            "data_seed": self.data_seed,
        }

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)


def load_config(
    path: str | Path | None = None, env_options: dict[str, Any] | None = None, **overrides: Any
) -> TrainConfig:
    """Read a YAML config (or start from defaults) and apply non-None ``overrides``;
    ``env_options`` are set over the file's.  A one-line ValueError for an unknown
    key, naming the closest known one."""
    import yaml

    data: dict[str, Any] = {}
    if path is not None:
        path = Path(path)
        if not path.is_file():
            raise FileNotFoundError(f"config file not found: {path}")
        loaded = yaml.safe_load(path.read_text(encoding="utf-8"))
        if loaded is not None and not isinstance(loaded, dict):
            raise ValueError(
                f"{path}: the config must be a mapping of fields, got {type(loaded).__name__}"
            )
        data = dict(loaded or {})
    data.update({k: v for k, v in overrides.items() if v is not None})
    if env_options:
        data["env_options"] = {**(data.get("env_options") or {}), **env_options}
    check_keys(data, field_names(TrainConfig), "config field")
    config = TrainConfig(**data)
    _check_env_option_keys(config)
    return config


def _check_env_option_keys(config: TrainConfig) -> None:
    """``env_options`` names options of the env (an unknown env id is left to the CLI's check)."""
    import gymnasium as gym

    from intbench.envs.option_classes import env_options_class

    try:
        options_class = env_options_class(config.env)
    except gym.error.Error:
        return
    check_keys(
        config.env_options, field_names(options_class), f"env_options key ... for {config.env}"
    )
