"""Experiment tracking: config, running counts and final tables reach the tracker's files."""

from __future__ import annotations

import importlib.util

import pytest

from intbench.metrics import summarize
from intbench.runner import RunConfig, run_eval
from intbench.tracking import EpisodeTracking, TrackerError, check_tracker, make_tracker

STUDENT = "scripted:text=We add the numbers and carry. So \\boxed{7}."


def _tracked_run(tmp_path, monkeypatch, name: str):
    monkeypatch.setenv("INTBENCH_CACHE", str(tmp_path / "cache"))
    out = tmp_path / "run"
    config = RunConfig(env_id="IntBench-Math-v0", teacher="at:0.5", student=STUDENT, n=3)
    tracker = make_tracker(name, out)
    tracker.log_config(config.to_dict())
    result = run_eval(
        config, out, concurrency=2, progress=False, on_episode=EpisodeTracking(tracker)
    )
    from intbench.records import Episode

    tracker.log_tables(summarize([Episode.from_dict(e) for e in result.episodes]).tables)
    tracker.finish()
    return out


@pytest.mark.skipif(
    importlib.util.find_spec("tensorboard") is None, reason="needs tensorboard (intbench[tracking])"
)
def test_tensorboard_event_files_hold_the_running_counts_and_tables(tmp_path, monkeypatch):
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    out = _tracked_run(tmp_path, monkeypatch, "tensorboard")
    events = EventAccumulator(str(out / "tensorboard"), size_guidance={"tensors": 0})
    events.Reload()
    done = [e.value for e in events.Scalars("episodes/done")]
    assert done == [1.0, 2.0, 3.0]
    tags = events.Tags()["tensors"]
    assert "config/text_summary" in tags and any(t.startswith("tables/") for t in tags)


@pytest.mark.skipif(
    importlib.util.find_spec("wandb") is None, reason="needs wandb (intbench[tracking])"
)
def test_wandb_offline_writes_its_run_files(tmp_path, monkeypatch):
    monkeypatch.setenv("WANDB_MODE", "offline")
    monkeypatch.setenv("WANDB_SILENT", "true")
    out = _tracked_run(tmp_path, monkeypatch, "wandb")
    runs = list((out / "wandb").glob("offline-run-*"))
    assert len(runs) == 1
    assert list(runs[0].glob("*.wandb"))  # the run's log, synced later with `wandb sync`


def test_none_logs_nothing_and_typos_fail_fast(tmp_path):
    check_tracker("none")
    make_tracker("none", tmp_path).log_metrics({"x": 1.0}, 1)
    with pytest.raises(TrackerError, match="must be one of none, tensorboard, wandb, trackio"):
        check_tracker("tensorbord")


def test_a_missing_package_is_named(monkeypatch):
    import intbench.tracking as tracking

    monkeypatch.setattr(tracking.importlib.util, "find_spec", lambda name: None)
    with pytest.raises(TrackerError, match="pip install trackio"):
        check_tracker("trackio")
