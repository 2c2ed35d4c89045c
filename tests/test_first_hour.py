"""What a new user meets first: quiet commands, a README quick start that matches
the code, and a CI script that runs every test."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")

PROBE = """
import sys
from intbench import cli

def probe(args):
    from tqdm.auto import tqdm
    import huggingface_hub.utils as hub
    shown = {"tqdm": not tqdm(total=1).disable, "hub": not hub.are_progress_bars_disabled()}
    if "--heavy" in sys.argv:
        import datasets
        from transformers.utils import logging as transformers_logging
        shown["datasets"] = datasets.utils.logging.is_progress_bar_enabled()
        shown["transformers"] = transformers_logging.is_progress_bar_enabled()
    print(*[f"{name} {value}" for name, value in shown.items()])
    return 0

parser = cli.build_parser()
parser._subparsers._group_actions[0].choices["report"].set_defaults(func=probe)
cli.build_parser = lambda command=None: parser
sys.exit(cli.main([a for a in sys.argv[1:] if a != "--heavy"]))
"""


def _bars_shown(*flags: str) -> dict[str, str]:
    quiet_vars = (
        "TQDM_DISABLE",
        "HF_HUB_DISABLE_PROGRESS_BARS",
        "HF_DATASETS_DISABLE_PROGRESS_BARS",
    )
    env = {k: v for k, v in os.environ.items() if k not in quiet_vars}
    result = subprocess.run(
        [sys.executable, "-c", PROBE, "report", "somewhere", *flags],
        env={**env, "PYTHONPATH": str(ROOT)},
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert result.returncode == 0, result.stderr
    words = result.stdout.split()
    return dict(zip(words[::2], words[1::2], strict=True))


@pytest.mark.parametrize(("flags", "shown"), [([], "False"), (["--verbose"], "True")])
def test_the_libraries_progress_bars_are_off_unless_verbose(flags, shown):
    """A plain eval printed transformers' loading bars (GGUF conversion, weights);
    the command line turns tqdm's and the hub's bars (which transformers follows)
    off unless --verbose."""
    assert _bars_shown(*flags) == {"tqdm": shown, "hub": shown}


@pytest.mark.slow
def test_datasets_and_transformers_bars_are_off_too():
    shown = _bars_shown("--heavy")
    assert shown == {"tqdm": "False", "hub": "False", "datasets": "False", "transformers": "False"}


def test_the_episode_progress_bar_stays_when_library_bars_are_off(monkeypatch):
    from intbench.runner import _progress_bar

    monkeypatch.setenv("TQDM_DISABLE", "1")
    bar = _progress_bar(3, 0, True)
    assert not bar.disable
    bar.close()


def _fake_tools(folder: Path, uid: str) -> Path:
    """A PATH folder with apt-get and sudo that log their arguments, and the given uid."""
    folder.mkdir()
    log = folder / "calls.log"
    for name in ("apt-get", "sudo"):
        (folder / name).write_text(f'#!/bin/sh\necho "{name} $*" >> {log}\n')
    (folder / "id").write_text(f"#!/bin/sh\necho {uid}\n")
    (folder / "dirname").symlink_to(
        subprocess.check_output(["which", "dirname"], text=True).strip()
    )
    for tool in folder.iterdir():
        tool.chmod(0o755)
    return log


@pytest.mark.parametrize(("uid", "prefix"), [("0", "apt-get"), ("1000", "sudo -n apt-get")])
def test_ci_installs_bubblewrap_so_the_sandbox_tests_run(tmp_path, uid, prefix):
    """Without bwrap on PATH, .ci/run installs it (as root, or with sudo), before any test."""
    log = _fake_tools(tmp_path / "bin", uid)
    result = subprocess.run(
        ["/bin/bash", str(ROOT / ".ci" / "run"), "tools"],
        env={"PATH": str(tmp_path / "bin")},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    calls = log.read_text().splitlines()
    installs = [c for c in calls if c.startswith(f"{prefix} install")]
    assert len(installs) == 1 and "bubblewrap" in installs[0].split(), calls


# ------------------------------------------------------------------ the README
def _section(title: str) -> str:
    start = README.index(f"\n## {title}\n")
    return README[start : README.index("\n## ", start + 1)]


def _blocks(text: str, language: str) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", text, re.S)


NUMBERS = {"Three": 3, "Four": 4, "Five": 5, "Six": 6}


def test_the_quick_start_says_how_many_command_lines_it_shows():
    quick = _section("Quick start")
    [said] = re.findall(r"\b(Three|Four|Five|Six) command lines\b", quick)
    shown = [line for line in _blocks(quick, "bash")[0].splitlines() if line.strip()]
    assert len(shown) == NUMBERS[said]
    assert shown[1].startswith("pip install torch==")  # torch first, a command of its own


def test_the_quick_start_eval_command_is_valid_as_written(monkeypatch, tmp_path):
    """Every flag of the main job parses and passes the checks made before any model
    loads; it sets no token budget (the embedded student's default is sized for it)."""
    from intbench import cli
    from intbench.commands import eval as eval_command
    from intbench.commands.checks import check_run

    [line] = [
        x
        for x in _blocks(_section("Quick start"), "bash")[0].splitlines()
        if x.startswith("intbench eval")
    ]
    argv = line.split()[1:]
    assert "--max-tokens" not in argv
    args = cli.build_parser().parse_args(argv)
    config = eval_command._config(args, args.teacher, args.student, eval_command.env_options(args))
    check_run(config, eval_command.execution_options(args).concurrency)
    assert config.env_options == {"increment": 10}


def test_the_first_block_names_the_embedded_budget_the_code_uses():
    from intbench.envs.common import EMBEDDED_STUDENT_TOKENS

    first = _blocks(README, "python")[0]
    assert 'gym.make("IntBench-Math-v0")' in first and 'student_sampling={"max_tokens": N}' in first
    assert f"default to {EMBEDDED_STUDENT_TOKENS}" in first


def test_the_readme_test_command_is_the_one_ci_runs():
    [command] = _blocks(_section("Quick start").split("**Tests**")[1], "bash")
    ci = (ROOT / ".ci" / "run").read_text().split("# README test command (keep in sync):\n")[1]
    assert ci.splitlines()[0] == command.strip()


# ------------------------------------------------------------- smoke training
CONFIGS = ROOT / "intbench" / "training" / "configs"


def _train_config(monkeypatch, tmp_path, *argv: str):
    """The TrainConfig that ``intbench train grpo ARGV`` would train (nothing is trained)."""
    from intbench import cli
    from intbench.commands import train as train_command
    from intbench.training import trainer

    seen = []

    def capture(config):
        seen.append(config)
        Path(config.output_dir).mkdir(parents=True)  # where the run's summary goes
        return tmp_path / "final"

    monkeypatch.setattr(trainer, "train", capture)
    monkeypatch.setattr(train_command, "_student_backend", lambda config: None)
    assert cli.main(["train", "grpo", *argv, "--output-dir", str(tmp_path / "out")]) == 0
    return seen[0]


@pytest.mark.parametrize(
    ("config", "max_steps", "priming"),
    [
        (CONFIGS / "smoke_monitor.yaml", 1, 1),
        (CONFIGS / "smoke_monitor.yaml", 10, 6),
        (ROOT / "benchmarks" / "configs" / "monitor_grpo_demo.yaml", 1, 1),
    ],
)
def test_max_steps_bounds_format_priming_too(config, max_steps, priming, monkeypatch, tmp_path):
    """``--max-steps 1`` used to leave the 24 format-priming steps of a config in place."""
    monkeypatch.syspath_prepend(str(ROOT / "benchmarks"))  # the demo's scripted student
    trained = _train_config(
        monkeypatch, tmp_path, "--config", str(config), "--max-steps", str(max_steps)
    )
    assert trained.trainer["max_steps"] == max_steps
    assert trained.format_priming["steps"] == priming


@pytest.mark.parametrize("protocol", ["monitor", "feedback"])
def test_the_smoke_configs_are_one_step_on_the_embedded_model(protocol, monkeypatch, tmp_path):
    from intbench.envs.registration import protocol_of

    config = _train_config(
        monkeypatch, tmp_path, "--config", str(CONFIGS / f"smoke_{protocol}.yaml")
    )
    assert protocol_of(config.env) == protocol
    assert (config.model, config.student, config.trainer["max_steps"]) == ("smollm2", "smollm2", 1)
    assert "reward" in config.env_options  # its own reward, whatever the shipped configs use


@pytest.mark.slow
@pytest.mark.parametrize("protocol", ["monitor", "feedback"])
def test_a_smoke_config_trains_one_real_step(protocol, tmp_path):
    """The real thing: one GRPO step with the embedded model as policy and student,
    logged by TRL, on the ``teaching`` reward.  The monitor group's rewards differ, so
    its step has a gradient; in the feedback step the 135M student solves the variant
    alike with and without the feedback, so its 8 rewards tie (the run checks the
    pipeline end to end; benchmarks/results/train_smoke.md)."""
    from intbench.training import load_config
    from intbench.training.trainer import build_trainer

    config = load_config(CONFIGS / f"smoke_{protocol}.yaml", output_dir=str(tmp_path / "out"))
    trainer = build_trainer(config)
    trainer.train()
    assert trainer.state.global_step == 1
    [step] = [row for row in trainer.state.log_history if "reward_std" in row]
    assert step["completions/mean_length"] > 0
    assert f"{protocol}/transfer" in step  # the teaching reward's variant arms ran
    if protocol == "monitor":
        assert step["reward_std"] > 0
