"""Format priming: a few SFT steps that teach a small policy the reply format before GRPO.

A small instruct model rarely writes the monitor's ``Intervene/Time/Intervention``
reply unprompted, and GRPO cannot learn a decision from replies that do not
parse.  Priming fine-tunes it on well-formed replies whose decisions are coin
flips, independent of the state: the examples carry the format and no
information about when to intervene, so whatever GRPO gains afterwards is
learned from the env's reward.
"""

from __future__ import annotations

import random
import time
from collections.abc import Sequence
from typing import Any

from intbench.training.monitor import monitor_reply

PRIMING_DEFAULTS: dict[str, Any] = {
    "steps": 24,
    "learning_rate": 3e-4,
    "batch_size": 8,
    "time": "the last step",
    "messages": [
        "Check your last step again before you go on.",
        "Work that step out again instead of estimating it.",
        "You seem unsure here; redo this part carefully.",
    ],
}
"""``format_priming:`` settings of :class:`~intbench.training.TrainConfig` (each key
may be overridden): the SFT steps, their learning rate and batch size, and the
``Time:`` and ``Intervention:`` texts of the primed ``Yes`` replies.  24 steps at
3e-4 made the embedded SmolLM2-135M's replies parse in the monitor demo
(``benchmarks/results/train_teachers.md``)."""


def monitor_format_examples(
    states, seed: int, messages: Sequence[str], time_text: str
) -> list[dict]:
    """One prompt/completion row per decision state of ``states`` (as built by
    :func:`~intbench.training.monitor_states`): ``Intervene: Yes`` with a message
    drawn from ``messages``, or ``Intervene: No``, by a seeded coin flip."""
    if not messages:
        raise ValueError("format priming needs at least one intervention message")
    rng = random.Random(seed)
    examples = []
    for row in states:
        if rng.random() < 0.5:
            reply = monitor_reply(True, rng.choice(list(messages)), time_text)
        else:
            reply = monitor_reply(False)
        examples.append(
            {"prompt": row["prompt"], "completion": [{"role": "assistant", "content": reply}]}
        )
    return examples


def prime_format(
    model,
    tokenizer,
    examples: list[dict],
    *,
    steps: int,
    learning_rate: float,
    output_dir: str,
    batch_size: int = 8,
    **trainer_options: Any,
) -> float:
    """``steps`` SFT steps on ``examples`` (prompt/completion rows), in place; returns
    the seconds taken.  ``trainer_options`` go to ``SFTConfig`` (seed, devices)."""
    from datasets import Dataset
    from trl import SFTConfig, SFTTrainer

    if steps < 1:
        raise ValueError(f"format priming needs at least one step, got {steps}")
    trainer = SFTTrainer(
        model=model,
        processing_class=tokenizer,
        train_dataset=Dataset.from_list(examples),
        args=SFTConfig(
            output_dir=output_dir,
            learning_rate=learning_rate,
            per_device_train_batch_size=batch_size,
            max_steps=steps,
            logging_steps=steps,
            save_strategy="no",
            report_to=[],
            **trainer_options,
        ),
    )
    started = time.perf_counter()
    trainer.train()
    return time.perf_counter() - started
