"""`intbench train --report-to` reaches TRL, and a training run gets its summary.json."""

from __future__ import annotations

import importlib.util
import json

import pytest
import yaml

from intbench.agents.backends import shared_backend
from intbench.cli import main


@pytest.mark.skipif(
    importlib.util.find_spec("tensorboard") is None, reason="needs tensorboard (intbench[tracking])"
)
def test_one_grpo_step_logs_to_tensorboard_and_writes_a_summary(tiny_model_dir, tmp_path):
    out = tmp_path / "grpo"
    model = f"hf:{tiny_model_dir}"
    config = {
        "method": "grpo",
        "env": "IntBench-Math-v0",
        "env_options": {"student_sampling": {"max_tokens": 8}, "increment": 8},
        "model": model,
        "student": model,
        "n": 2,
        "states_per_problem": 1,
        "output_dir": str(out),
        "trainer": {
            "max_steps": 1,
            "per_device_train_batch_size": 2,
            "num_generations": 2,
            "max_completion_length": 8,
            "logging_steps": 1,
            "use_cpu": True,
        },
    }
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(config))
    student = shared_backend(model)
    before = student.usage.calls, student.usage.completion_tokens
    assert main(["train", "grpo", "--config", str(path), "--report-to", "tensorboard"]) == 0
    assert list(out.rglob("events.out.tfevents.*"))  # TRL's own tensorboard logging
    summary = json.loads((out / "summary.json").read_text())
    assert summary["finished"] and summary["seconds"]["training"] > 0
    used = summary["usage"]["student"]
    assert used["requests"] == student.usage.calls - before[0] > 0
    assert used["completion_tokens"] == student.usage.completion_tokens - before[1]


def test_a_tracker_typo_fails_before_training(tmp_path, capsys):
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump({"method": "grpo", "output_dir": str(tmp_path / "o")}))
    assert main(["train", "grpo", "--config", str(path), "--report-to", "wandbb"]) == 2
    assert "--report-to must be one of" in capsys.readouterr().err
    assert not (tmp_path / "o").exists()
