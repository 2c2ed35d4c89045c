"""Training configuration: one YAML file per run, every field with a documented default.

A file holds the fields of :class:`TrainConfig`; ``trainer:`` is passed
unchanged to TRL's ``GRPOConfig`` or ``SFTConfig`` (so any TRL option can be
set there), ``lora:`` to peft's ``LoraConfig``.  Unknown top-level keys are
refused: a typo should fail, not be silently ignored.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

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
"""The reward preset of a GRPO run whose ``env_options`` name none: success and
transfer, less a leak (:data:`intbench.envs.rewards.PRESETS`), so that stating
the answer scores below waiting.  ``intbench audit-reward`` checks any other
choice before a run."""


@dataclass
class TrainConfig:
    """Everything a ``intbench train`` run needs (defaults in brackets).

    Attributes:
        method: ``"grpo"`` or ``"sft"`` [``"grpo"``].
        env: env id; its protocol picks the GRPO flavour: monitor ids get the
            single-decision reward, ``-Feedback-`` ids the multi-turn rollout
            [``"IntBench-Math-v0"``].
        env_options: extra ``gym.make`` keyword arguments (``increment``,
            ``reward``, ``k_max``, ...); GRPO's ``reward`` defaults to
            :data:`TRAINING_REWARD` [{}].
        model: the policy: ``"smollm2"`` (a trainable copy of the embedded
            model), ``"hf:<dir>"`` or a plain directory [``"smollm2"``].
        student: the frozen student's model spec [``"smollm2"``].
        source, split, n, data_seed: the training problems, as in ``intbench eval``
            [``"offline"``, domain default, 32, 0].
        states_per_problem: monitor GRPO: decision states sampled per problem [2].
        max_turn_tokens: feedback GRPO: tokens per teacher turn [128].
        temperature: feedback GRPO: sampling temperature of teacher turns [1.0].
        train_layers: train only the top N decoder layers and the final norm,
            freezing the rest and the embeddings; null trains every weight
            (exclusive with ``lora``) [null].
        format_priming: monitor GRPO: SFT steps on well-formed replies with
            coin-flip decisions before GRPO, so a small policy's replies parse
            (:data:`~intbench.training.priming.PRIMING_DEFAULTS` fill omitted
            keys; ``{}`` takes them all); the primed policy is saved to
            ``<output_dir>/format-primed`` and is also GRPO's KL reference; null
            skips priming [null].
        balanced_states: monitor GRPO: order the decision states so that every
            step holds as many wrong as right student baselines
            (:func:`~intbench.training.monitor.balanced_states`) [false].
        environment_factory: GRPO through TRL's ``environment_factory``: the
            policy acts with tool calls (:mod:`intbench.integrations.trl`), on
            any env id, rewarded with the env's return; the policy's chat
            template gets tool calling if it lacks it [false].
        records: SFT: run directories written by ``intbench eval`` [[]].
        filter: SFT: which teacher decisions to imitate (see
            :data:`intbench.training.sft.FILTERS`) [``"helpful_no_leak"``].
        output_dir: where checkpoints and the final model go [``"runs/train"``].
        seed: seed of state sampling and of the trainer [0].
        lora: peft ``LoraConfig`` arguments, or null for full fine-tuning [null].
        trainer: TRL ``GRPOConfig``/``SFTConfig`` arguments; monitor GRPO runs
            start from :data:`MONITOR_GRPO_DEFAULTS` [{}].
    """

    method: str = "grpo"
    env: str = "IntBench-Math-v0"
    env_options: dict[str, Any] = field(default_factory=dict)
    model: str = "smollm2"
    student: str = "smollm2"
    source: str = "offline"
    split: str | None = None
    n: int = 32
    data_seed: int = 0
    states_per_problem: int = 2
    max_turn_tokens: int = 128
    temperature: float = 1.0
    train_layers: int | None = None
    format_priming: dict[str, Any] | None = None
    balanced_states: bool = False
    environment_factory: bool = False
    records: list[str] = field(default_factory=list)
    filter: str = "helpful_no_leak"
    output_dir: str = "runs/train"
    seed: int = 0
    lora: dict[str, Any] | None = None
    trainer: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.method not in METHODS:
            raise ValueError(f"method must be one of {METHODS}, got {self.method!r}")
        if self.n is not None and self.n < 1:
            raise ValueError(f"n must be positive, got {self.n}")
        if self.states_per_problem < 1:
            raise ValueError(f"states_per_problem must be positive, got {self.states_per_problem}")
        if self.max_turn_tokens < 1:
            raise ValueError(f"max_turn_tokens must be positive, got {self.max_turn_tokens}")
        for name in ("env_options", "trainer"):
            if not isinstance(getattr(self, name), dict):
                raise ValueError(
                    f"{name} must be a mapping, got {type(getattr(self, name)).__name__}"
                )
        if self.lora is not None and not isinstance(self.lora, dict):
            raise ValueError(f"lora must be a mapping or null, got {type(self.lora).__name__}")
        if self.train_layers is not None:
            if isinstance(self.train_layers, bool) or not isinstance(self.train_layers, int):
                raise ValueError(
                    f"train_layers must be an integer or null, got {self.train_layers!r}"
                )
            if self.train_layers < 1:
                raise ValueError(f"train_layers must be positive, got {self.train_layers}")
            if self.lora is not None:
                raise ValueError("train_layers and lora exclude each other: set one to null")
        if self.format_priming is not None:
            from intbench.training.priming import PRIMING_DEFAULTS

            if not isinstance(self.format_priming, dict):
                raise ValueError(
                    f"format_priming must be a mapping or null, got {type(self.format_priming).__name__}"
                )
            unknown = sorted(set(self.format_priming) - set(PRIMING_DEFAULTS))
            if unknown:
                raise ValueError(
                    f"unknown format_priming key(s) {unknown}; known: {sorted(PRIMING_DEFAULTS)}"
                )
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


def load_config(path: str | Path | None = None, **overrides: Any) -> TrainConfig:
    """Read a YAML config (or start from defaults) and apply non-None ``overrides``."""
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
    known = {f.name for f in dataclasses.fields(TrainConfig)}
    unknown = sorted(set(data) - known)
    if unknown:
        raise ValueError(f"unknown config field(s) {unknown}; known fields: {sorted(known)}")
    return TrainConfig(**data)
