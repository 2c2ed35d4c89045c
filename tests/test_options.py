"""Options defined once: each field's help, the CLI flags made from it, and one-line
errors naming the closest key for a typo in gym.make kwargs, --env-option or a YAML config."""

from __future__ import annotations

import dataclasses

import gymnasium as gym
import pytest

from intbench.cli import build_parser, main
from intbench.commands.env_flags import env_options_from
from intbench.commands.eval import ExecutionOptions, execution_options
from intbench.envs.env_options import EnvOptions
from intbench.envs.option_classes import env_options_class, protocol_options
from intbench.options import UnknownOptionError, flag_fields
from intbench.runner import RunConfig
from intbench.training.config import TrainConfig, load_config

OPTION_CLASSES = [EnvOptions, *protocol_options().values(), TrainConfig, ExecutionOptions]


@pytest.mark.parametrize("cls", OPTION_CLASSES, ids=lambda cls: cls.__name__)
def test_every_option_has_help_text(cls):
    for field in dataclasses.fields(cls):
        assert len(field.metadata.get("help", "")) > 5, f"{cls.__name__}.{field.name}"


def _help(command: str) -> str:
    """The command's --help (run with a wide $COLUMNS: argparse wraps at hyphens)."""
    parser = build_parser()
    subparsers = next(a for a in parser._actions if hasattr(a, "choices") and a.choices)
    return subparsers.choices[command].format_help()


@pytest.mark.parametrize("command", ["eval", "matrix", "train"])
def test_help_lists_every_flagged_env_option_with_its_default(command, monkeypatch):
    monkeypatch.setenv("COLUMNS", "10000")
    text = " ".join(_help(command).split())
    for name, owners in flag_fields(protocol_options()).items():
        assert f"--{name.replace('_', '-')}" in text
        _, field = owners[0]
        assert " ".join(field.metadata["help"].split()) in text


def test_run_and_execution_flags_come_from_their_dataclasses(monkeypatch):
    monkeypatch.setenv("COLUMNS", "10000")
    text = " ".join(_help("eval").split())
    classes = {"run": RunConfig, "execution": ExecutionOptions}
    for name, [(_, field)] in flag_fields(classes).items():
        flag = f"-{name}" if len(name) == 1 else f"--{name.replace('_', '-')}"
        assert flag in text and " ".join(field.metadata["help"].split()) in text


def test_execution_flags_parse_with_their_defaults_and_bare_values():
    base = ["eval", "--env", "IntBench-Math-v0", "--teacher", "never", "--out", "x"]
    assert execution_options(build_parser().parse_args(base)) == ExecutionOptions()
    given = execution_options(
        build_parser().parse_args(
            [*base, "--ray", "--price", "teacher=1/2", "--price", "student=3/4", "--no-progress"]
        )
    )
    assert given.ray == "local" and given.no_progress and given.concurrency == 8
    assert given.price == ["teacher=1/2", "student=3/4"]  # repeatable
    args = build_parser().parse_args([*base, "--ray", "10.0.0.1:6379", "--episode-timeout", "5"])
    assert execution_options(args).ray == "10.0.0.1:6379"
    assert execution_options(args).episode_timeout == 5.0


def test_train_help_lists_the_flagged_training_options():
    text = _help("train")
    for name in flag_fields({"training": TrainConfig}):
        assert ("-n" if name == "n" else f"--{name.replace('_', '-')}") in text
    assert "[IntBench-Math-v0]" in " ".join(text.split())


@pytest.mark.parametrize(
    ("env_id", "argv", "kwargs"),
    [
        (
            "IntBench-Math-v0",
            ["--condition", "oracle", "--increment", "100", "--teacher-access", "no"],
            {"condition": "oracle", "increment": 100, "teacher_access": False},
        ),
        (
            "IntBench-Math-v0",
            ["--increment", "sentence", "--reward", '{"success": 1.0}'],
            {"increment": "sentence", "reward": {"success": 1.0}},
        ),
        (
            "IntBench-Math-Feedback-v0",
            ["--k-max", "3", "--history", "0", "--mode", "self_refine"],
            {"k_max": 3, "history": 0, "mode": "self_refine"},
        ),
        (
            "IntBench-Math-Tutor-v0",
            ["--ideation-turns", "0", "--notes", "--submissions", "none"],
            {"ideation_turns": 0, "notes": True, "submissions": None},
        ),
    ],
)
def test_flags_parse_into_the_options_gym_make_builds(env_id, argv, kwargs):
    args = build_parser().parse_args(["eval", "--env", env_id, "--out", "x", *argv])
    given = env_options_from(args)
    assert given == kwargs
    from_flags = env_options_class(env_id)(**gym.spec(env_id).kwargs, n=1, **given)
    env = gym.make(env_id, n=1, **kwargs)
    try:
        assert env.unwrapped.options == from_flags
    finally:
        env.close()


def test_env_option_items_win_over_flags_and_max_tokens_sets_the_student_budget():
    args = build_parser().parse_args(
        ["eval", "--env", "IntBench-Math-v0", "--out", "x", "--post", "stop"]
        + ["--env-option", "post=continue", "--max-tokens", "64"]
    )
    assert env_options_from(args, args.max_tokens) == {
        "post": "continue",
        "student_sampling": {"max_tokens": 64},
    }


def test_a_kwargs_typo_names_the_closest_option():
    message = "unknown env option 'rewrd' for IntBench-Math-v0; did you mean 'reward'?"
    with pytest.raises(ValueError, match=message) as raised:
        gym.make("IntBench-Math-v0", n=1, rewrd="success")
    assert isinstance(raised.value, UnknownOptionError) and isinstance(raised.value, TypeError)
    assert "\n" not in str(raised.value)


def test_an_env_option_typo_exits_2_naming_the_closest_option(tmp_path, capsys):
    argv = ["eval", "--env", "IntBench-Math-Feedback-v0", "--teacher", "never", "-n", "1"]
    code = main([*argv, "--env-option", "k_mx=3", "--out", str(tmp_path / "run")])
    err = capsys.readouterr().err.strip()
    assert code == 2
    assert err == (
        "error: unknown env option 'k_mx' for IntBench-Math-Feedback-v0; did you mean 'k_max'?"
    )
    assert not (tmp_path / "run").exists()


@pytest.mark.parametrize(
    ("yaml", "message"),
    [
        ("metod: sft\n", "unknown config field 'metod'; did you mean 'method'?"),
        (
            "env_options: {incremnt: 100}\n",
            "unknown env_options key 'incremnt' for IntBench-Math-v0; did you mean 'increment'?",
        ),
        (
            "format_priming: {step: 2}\n",
            "unknown format_priming key 'step'; did you mean 'steps'?",
        ),
    ],
)
def test_a_yaml_typo_names_the_closest_key(tmp_path, yaml, message):
    path = tmp_path / "config.yaml"
    path.write_text(yaml)
    with pytest.raises(ValueError, match=f"^{message}$".replace("?", r"\?")):
        load_config(path)


def test_train_flags_and_env_flags_override_the_yaml(tmp_path):
    path = tmp_path / "config.yaml"
    path.write_text("n: 5\nenv_options: {increment: 100, post: stop}\n")
    args = build_parser().parse_args(
        ["train", "grpo", "--config", str(path), "-n", "7", "--increment", "sentence"]
    )
    from intbench.commands.train import TRAIN_OPTIONS
    from intbench.options import flag_values

    config = load_config(
        args.config, env_options=env_options_from(args), **flag_values(args, TRAIN_OPTIONS)
    )
    assert config.n == 7
    assert config.env_options == {"increment": "sentence", "post": "stop"}
