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
    assert not (out / "config.json").exists()
    assert elapsed < 5, f"took {elapsed:.1f} s"


def test_an_unexpected_error_is_one_line_unless_debug(tmp_path, monkeypatch, capsys):
    from intbench import cli

    def explode(args):
        raise RuntimeError("backend exploded")

    parser = cli.build_parser()
    for command in parser._subparsers._group_actions[0].choices.values():
        command.set_defaults(func=explode)
    monkeypatch.setattr(cli, "build_parser", lambda: parser)
    assert cli.main(["report", str(tmp_path)]) == 1
    err = capsys.readouterr().err
    assert err.strip() == "error: RuntimeError: backend exploded (rerun with --debug for details)"
    with pytest.raises(RuntimeError, match="backend exploded"):
        cli.main(["report", str(tmp_path), "--debug"])
