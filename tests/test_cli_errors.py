"""Bad command-line input fails fast, in one line, with exit code 2, and writes nothing."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
BASE = ["--env", "IntBench-Math-v0", "--teacher", "at:0.5", "-n", "2"]


def _replace(args: list[str], flag: str, value: str) -> list[str]:
    args = list(args)
    args[args.index(flag) + 1] = value
    return args


CASES = {
    "teacher typo": (_replace(BASE, "--teacher", "att:0.5"), "did you mean 'at:0.5'"),
    "fraction out of range": (
        _replace(BASE, "--teacher", "needs 0 <= fraction <= 1, got 1.5"),
        "needs 0 <= fraction <= 1, got 1.5",
    ),
    "env typo": (_replace(BASE, "--env", "IntBench-Mth-v0"), "did you mean 'IntBench-Math-v0'"),
    "no problems": (_replace(BASE, "-n", "0"), "-n must be at least 1"),
    "missing local model": (
        [*BASE, "--student", "hf:/nonexistent/model"],
        "no model at '/nonexistent/model'",
    ),
    "unknown env option": (
        [*BASE, "--env-option", "bogus_key=1"],
        "unknown env option 'bogus_key'",
    ),
    "spec option typo": (
        [*BASE, "--student", "smollm2?runtme=hf"],
        "unknown option 'runtme' in spec 'smollm2?runtme=hf'; did you mean 'runtime'?",
    ),
    "scripted spec without its form": (
        _replace(BASE, "--teacher", "scripted:text"),
        "bad scripted spec 'scripted:text': use scripted:text=<answer>",
    ),
    "failure rate out of range": ([*BASE, "--max-failure-rate", "2"], "between 0 and 1"),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_bad_input_fails_fast_in_one_line_and_writes_nothing(name, tmp_path):
    args, expected = CASES[name]
    out = tmp_path / "run"
    env = dict(os.environ, PYTHONPATH=str(ROOT), INTBENCH_CACHE=str(tmp_path / "cache"))
    started = time.monotonic()
    result = subprocess.run(
        [sys.executable, "-m", "intbench.cli", "eval", *args, "--out", str(out), "--no-progress"],
        env=env,
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    elapsed = time.monotonic() - started
    assert result.returncode == 2, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and expected in lines[0], lines
    assert "Traceback" not in result.stderr
    assert not out.exists()  # not even a lock file
    assert elapsed < 5, f"took {elapsed:.1f} s"


def test_an_unexpected_error_is_one_line_unless_debug(tmp_path, monkeypatch, capsys):
    from intbench import cli

    def explode(args):
        raise RuntimeError("backend exploded")

    parser = cli.build_parser()
    for command in parser._subparsers._group_actions[0].choices.values():
        command.set_defaults(func=explode)
    monkeypatch.setattr(cli, "build_parser", lambda command=None: parser)
    assert cli.main(["report", str(tmp_path)]) == 1
    err = capsys.readouterr().err
    assert err.strip() == "error: RuntimeError: backend exploded (rerun with --debug for details)"
    with pytest.raises(RuntimeError, match="backend exploded"):
        cli.main(["report", str(tmp_path), "--debug"])


# ------------------------------------------------------- refused before any model loads
@pytest.fixture
def no_model_loads(monkeypatch):
    """Any model load fails the test: the checks must come first."""
    from intbench.agents.backends import loading
    from intbench.training import trainer  # imported first, so it keeps the real loader

    def refuse(*args, **kwargs):
        raise AssertionError("a model was loaded before the input was checked")

    monkeypatch.setattr(loading, "load_backend", refuse)
    monkeypatch.setattr(trainer, "load_policy", refuse)


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["--env", "IntBench-Mth-v0"], "did you mean 'IntBench-Math-v0'"),
        (["--env", "IntBench-Math-Tutor-v0"], "GRPO trains monitor and feedback teachers"),
        (["--student", "smollm2?runtme=hf"], "did you mean 'runtime'?"),
        (["--model", "openai:m@http://localhost:8000/v1"], "cannot train"),
        (["--env-option-typo"], None),
        (["--max-steps", "0"], "--max-steps must be at least 1"),
    ],
    ids=["env typo", "tutor env", "student spec", "untrainable model", "unknown flag", "steps"],
)
def test_train_checks_its_input_before_loading_a_model(
    args, expected, tmp_path, capsys, no_model_loads
):
    from intbench import cli

    out = tmp_path / "train"
    argv = ["train", "grpo", *args, "--output-dir", str(out)]
    if expected is None:  # argparse's own refusal
        with pytest.raises(SystemExit) as exit_:
            cli.main(argv)
        assert exit_.value.code == 2
    else:
        assert cli.main(argv) == 2
        [line] = capsys.readouterr().err.strip().splitlines()
        assert line.startswith("error: ") and expected in line, line
    assert not out.exists()


def test_no_option_is_matched_by_a_prefix(capsys):
    """``--n -1`` once read as ``--no-progress`` (argparse's prefix matching) and then
    complained about ``-1``; every parser now refuses prefixes."""
    from intbench import cli

    with pytest.raises(SystemExit) as exit_:
        cli.main(
            ["eval", "--env", "IntBench-Math-v0", "--teacher", "never", "--out", "x", "--n", "-1"]
        )
    assert exit_.value.code == 2
    assert "unrecognized arguments: --n -1" in capsys.readouterr().err
    unabbreviated = [p for p in cli._every_parser(cli.build_parser()) if p.allow_abbrev]
    assert unabbreviated == []


@pytest.mark.parametrize("command", [["eval"], ["matrix"], ["train", "grpo"], ["serve"]])
def test_help_shows_the_model_spec_grammar(command, capsys):
    from intbench import cli

    with pytest.raises(SystemExit):
        cli.main([*command, "--help"])
    text = capsys.readouterr().out
    for example in ("smollm2", "hf:<dir or hub id>", "openai:<model>@<base_url>", "scripted:text="):
        assert example in text
    assert "http://localhost:8000/v1?concurrency=64" in text  # kept on its own line


# ------------------------------------------------------- exit status of failed episodes
def _flaky_eval(tmp_path, monkeypatch, marker_text: str, *extra: str) -> int:
    from intbench import cli

    monkeypatch.setenv("INTBENCH_CACHE", str(tmp_path / "cache"))
    marker = tmp_path / "flaky"
    marker.write_text(marker_text)
    monkeypatch.setenv("INTBENCH_TEST_FLAKY", str(marker))
    return cli.main(
        [
            "eval", "--env", "IntBench-Math-v0", "--teacher", "never", "-n", "4",
            "--student", "scripted:tests.scripted_students:flaky", "--no-progress",
            "--out", str(tmp_path / "run"), *extra,
        ]
    )  # fmt: skip


def test_a_run_whose_every_episode_failed_exits_1(tmp_path, monkeypatch, capsys):
    assert _flaky_eval(tmp_path, monkeypatch, "") == 1  # "" is in every prompt
    err = capsys.readouterr().err
    assert "4 of 4 episode(s) failed" in err and "injected student failure" in err
    assert "100% of the episodes failed (all of them); exit code 1" in err


def test_some_failed_episodes_warn_and_the_rate_flag_decides(tmp_path, monkeypatch, capsys):
    from intbench.envs.domains import load_problems

    second = load_problems("math", source="offline", n=4, seed=0)[1].question[:40]
    assert _flaky_eval(tmp_path, monkeypatch, second) == 0
    assert "warning: 1 of 4 episode(s) failed" in capsys.readouterr().err
    # the same run, resumed: the failed episode is retried (and fails again)
    assert _flaky_eval(tmp_path, monkeypatch, second, "--max-failure-rate", "0.2") == 1
    assert "more than --max-failure-rate 0.2" in capsys.readouterr().err


def test_matrix_checks_every_pair_before_any_model_loads(tmp_path, capsys, no_model_loads):
    from intbench import cli

    out = tmp_path / "grid"
    argv = [
        "matrix", "--env", "IntBench-Math-Feedback-v0", "--students", "scripted:text=4",
        "--teachers", "scripted:text=ok,hf:/nonexistent/model", "--out", str(out),
    ]  # fmt: skip
    assert cli.main(argv) == 2
    [line] = capsys.readouterr().err.strip().splitlines()
    assert "no model at '/nonexistent/model'" in line
    assert not out.exists()


def test_only_the_program_freezes_its_objects_for_the_collector(tmp_path, capsys):
    """The command line freezes what lives to its exit (modules, parser) so collections
    skip it; ``main(argv)`` called by a process that goes on (tests, scripts) does not."""
    import gc

    from intbench.cli import main

    before = gc.get_freeze_count()
    assert main(["data", "list"]) == 0
    assert gc.get_freeze_count() == before
    program = "import gc, sys; from intbench.cli import main; sys.argv[1:] = ['data', 'list']; "
    program += "main(); print(gc.get_freeze_count())"
    frozen = subprocess.run(
        [sys.executable, "-c", program], capture_output=True, text=True, check=True
    )
    assert int(frozen.stdout.split()[-1]) > 0


def test_an_eval_ends_without_teardown_once_its_files_and_exit_handlers_are_done(tmp_path):
    """The program ends an eval (or a report) right after its exit handlers run (no
    interpreter teardown): its output is flushed, its files complete, its status kept,
    and code that follows ``main()`` in the program never runs; other commands return
    as usual."""
    marker, out = tmp_path / "handler-ran", tmp_path / "run"
    argv = [
        "eval", "--env", "IntBench-Math-v0", "--teacher", "at:0.5", "-n", "3",
        "--student", "scripted:tests.scripted_students:slow", "--out", str(out), "--no-progress",
    ]  # fmt: skip
    program = (
        "import atexit, pathlib, sys; from intbench.cli import main; "
        f"atexit.register(pathlib.Path({str(marker)!r}).write_text, 'ran'); "
        "sys.argv[1:] = sys.argv[2:]; status = main(); print('returned', status)"
    )
    env = dict(os.environ, INTBENCH_CACHE=str(tmp_path / "cache"), PYTHONPATH=str(ROOT))
    ran = subprocess.run(
        [sys.executable, "-c", program, "--", *argv],
        capture_output=True, text=True, env=env, cwd=ROOT,
    )  # fmt: skip
    assert ran.returncode == 0, ran.stderr
    assert "returned" not in ran.stdout
    assert "3 episode(s) run" in ran.stdout
    assert ran.stdout.rstrip().endswith("H above 0.")  # the summary's last line, flushed
    assert marker.read_text() == "ran"
    assert len((out / "episodes.jsonl").read_text().splitlines()) == 3
    assert not list(out.glob("*.lock")) and not list(out.glob("*.tmp"))
    reported = subprocess.run(
        [sys.executable, "-c", program, "--", "report", str(out), "--out", str(tmp_path / "r")],
        capture_output=True, text=True, env=env, cwd=ROOT,
    )  # fmt: skip
    assert reported.returncode == 0, reported.stderr
    assert "returned" not in reported.stdout and (tmp_path / "r" / "report.html").is_file()
    listed = subprocess.run(
        [sys.executable, "-c", program, "--", "data", "list"],
        capture_output=True, text=True, env=env, cwd=ROOT,
    )  # fmt: skip
    assert listed.stdout.strip().endswith("returned 0"), listed.stderr


def modules_after_building(arguments: str) -> set[str]:
    """The modules a fresh interpreter has loaded after ``build_parser(arguments)``."""
    program = (
        f"import sys; from intbench.cli import build_parser; build_parser({arguments}); "
        "print(' '.join(sorted(sys.modules)))"
    )
    return set(
        subprocess.run(
            [sys.executable, "-c", program], capture_output=True, text=True, check=True
        ).stdout.split()
    )


def test_the_parser_is_built_without_the_envs_trainers_or_study():
    """Help and an unknown command build the whole parser; its flags come from option
    dataclasses, so building it must not import what only some commands run."""
    loaded = modules_after_building("")
    heavy = {
        "intbench.envs.monitor",
        "intbench.envs.feedback",
        "intbench.envs.tutor",
        "intbench.training.trainer",
        "intbench.training.monitor",
        "intbench.human.service",
    }
    assert heavy.isdisjoint(loaded), sorted(heavy & loaded)
    assert "intbench.envs.env_options" in loaded


def test_a_command_line_builds_only_its_own_commands_parser():
    """A run builds the parser of its command's module only; the table that names each
    command's module matches what the modules define, and the global flags are those
    the command's name is looked for after."""
    from intbench import cli

    whole = cli.build_parser()
    [commands] = whole._subparsers._group_actions
    assert set(commands.choices) == set(cli.COMMAND_MODULES)
    for name, module in cli.COMMAND_MODULES.items():
        [own] = cli.build_parser(name)._subparsers._group_actions
        assert name in own.choices
        siblings = {other for other, where in cli.COMMAND_MODULES.items() if where == module}
        assert set(own.choices) == siblings
        assert own.choices[name].format_help() == commands.choices[name].format_help()
    flags = {flag for action in whole._actions for flag in action.option_strings}
    assert flags - {"-h", "--help"} == set(cli.GLOBAL_FLAGS)
    assert cli.command_named(["--debug", "-v", "eval", "--env", "x"]) == "eval"
    assert cli.command_named(["--help"]) == "--help"  # not a command: the whole parser
    assert cli.command_named([]) is None
    loaded = modules_after_building("'eval'")
    others = {m for m in cli.COMMAND_MODULES.values() if m != "intbench.commands.eval"}
    assert others.isdisjoint(loaded), sorted(others & loaded)


def test_an_unknown_command_is_refused_with_the_list_of_commands():
    result = subprocess.run(
        [sys.executable, "-m", "intbench.cli", "evl"], capture_output=True, text=True
    )
    assert result.returncode == 2
    assert "invalid choice: 'evl'" in result.stderr
    assert "eval" in result.stderr and "train" in result.stderr
