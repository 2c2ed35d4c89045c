"""Experiment tracking: config, running counts and final tables reach the tracker's files."""

from __future__ import annotations

import importlib.util

import pytest

from intbench.metrics import summarize
from intbench.runner import RunConfig, run_eval
from intbench.tracking import (
    EpisodeTracking,
    TrackerError,
    check_tracker,
    make_tracker,
    wandb_init_args,
)

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


@pytest.mark.skipif(
    importlib.util.find_spec("wandb") is None, reason="needs wandb (intbench[tracking])"
)
def test_wandb_honours_its_environment_variables(tmp_path, monkeypatch):
    import wandb

    runs = []
    real_init = wandb.init

    def init(**kwargs):
        runs.append(real_init(**kwargs))
        return runs[-1]

    monkeypatch.setattr(wandb, "init", init)
    wandb.teardown()  # wandb reads its variables once per process: as a fresh process would
    wandb_dir, cwd = tmp_path / "wandb-files", tmp_path / "cwd"
    wandb_dir.mkdir()
    cwd.mkdir()
    monkeypatch.chdir(cwd)
    for name, value in {
        "WANDB_MODE": "offline",
        "WANDB_SILENT": "true",
        "WANDB_DIR": str(wandb_dir),
        "WANDB_PROJECT": "my-project",
        "WANDB_ENTITY": "my-team",
        "WANDB_NAME": "my-run",
        "WANDB_TAGS": "a,b",
    }.items():
        monkeypatch.setenv(name, value)
    out = _tracked_run(tmp_path, monkeypatch, "wandb")
    (run,) = runs
    named = (run.project, run.entity, run.name, run.tags)
    assert named == ("my-project", "my-team", "my-run", ("a", "b"))
    assert len(list((wandb_dir / "wandb").glob("offline-run-*/*.wandb"))) == 1
    assert not (out / "wandb").exists() and list(cwd.iterdir()) == []
    wandb.teardown()


def test_wandb_init_args_default_only_what_the_environment_leaves_unset(tmp_path, monkeypatch):
    for name in ("WANDB_DIR", "WANDB_PROJECT", "WANDB_NAME"):
        monkeypatch.delenv(name, raising=False)
    run = tmp_path / "run"
    assert wandb_init_args(run) == {"dir": str(run), "project": "intbench", "name": "run"}
    monkeypatch.setenv("WANDB_DIR", str(tmp_path / "elsewhere"))
    monkeypatch.setenv("WANDB_PROJECT", "p")
    expected = {"dir": str(tmp_path / "elsewhere"), "project": "p", "name": "run"}
    assert wandb_init_args(run) == expected


@pytest.mark.skipif(
    importlib.util.find_spec("tensorboard") is None, reason="needs tensorboard (intbench[tracking])"
)
def test_a_tracker_starts_on_the_first_log_so_a_run_that_logged_nothing_leaves_no_files(
    tmp_path,
):
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    out = tmp_path / "run"
    tracker = make_tracker("tensorboard", out)
    tracker.log_config({"env_id": "IntBench-Math-v0"})
    tracker.finish()
    assert not out.exists()
    tracker = make_tracker("tensorboard", out)
    tracker.log_config({"env_id": "IntBench-Math-v0"})
    tracker.log_metrics({"episodes/done": 1}, step=1)
    tracker.finish()
    events = EventAccumulator(str(out / "tensorboard"), size_guidance={"tensors": 0})
    events.Reload()
    assert "config/text_summary" in events.Tags()["tensors"]  # the config waited for it


def test_none_logs_nothing_and_typos_fail_fast(tmp_path):
    check_tracker("none")
    make_tracker("none", tmp_path).log_metrics({"x": 1.0}, 1)
    with pytest.raises(TrackerError, match="must be one of none, tensorboard, wandb, trackio"):
        check_tracker("tensorbord")


def test_a_missing_package_names_its_extra(monkeypatch):
    import intbench.extras as extras

    monkeypatch.setattr(extras.importlib.util, "find_spec", lambda name: None)
    with pytest.raises(
        TrackerError, match=r'trackio needs the trackio extra: pip install "intbench\[trackio\]"'
    ):
        check_tracker("trackio")


@pytest.mark.skipif(
    importlib.util.find_spec("tensorboard") is None, reason="needs tensorboard (intbench[tracking])"
)
def test_tensorboard_needs_torch_too(monkeypatch):
    import intbench.extras as extras

    real = extras.importlib.util.find_spec
    monkeypatch.setattr(
        extras.importlib.util, "find_spec", lambda name: None if name == "torch" else real(name)
    )
    with pytest.raises(TrackerError, match=r"intbench\[tensorboard\]"):
        check_tracker("tensorboard")
