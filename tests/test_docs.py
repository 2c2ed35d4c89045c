"""The documentation site (mkdocs.yml, docs/): the CLI reference is generated from
the parsers and lists every command, the README's quick start is the docs' one,
and the site builds with no warning."""

from __future__ import annotations

import argparse
import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
HOOKS = ROOT / "docs" / "hooks"


def _hook(name: str):
    spec = importlib.util.spec_from_file_location(f"docs_hook_{name}", HOOKS / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _commands(parser: argparse.ArgumentParser, prog: str = "intbench"):
    """(prog, parser) for the command line and every sub-command, read off argparse."""
    yield prog, parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, child in action.choices.items():
                yield from _commands(child, f"{prog} {name}")


def _sections(page: str) -> dict[str, str]:
    parts = re.split(r"^## `([^`]+)`$", page, flags=re.M)
    return dict(zip(parts[1::2], parts[2::2], strict=True))


def test_the_cli_reference_has_every_command_with_every_option():
    from intbench.cli import build_parser

    sections = _sections(_hook("cli_reference").render())
    commands = dict(_commands(build_parser()))
    assert {
        "intbench eval",
        "intbench train",
        "intbench analyze leakage",
        "intbench data show",
    } <= set(commands)
    assert list(sections) == list(commands)
    for prog, parser in commands.items():
        text = sections[prog]
        assert f"usage: {prog}" in text, prog
        for action in parser._actions:
            if action.help != argparse.SUPPRESS:
                for option in action.option_strings:
                    assert option in text, f"{prog}: {option} missing"


def test_the_cli_reference_does_not_depend_on_the_terminal(monkeypatch):
    hook = _hook("cli_reference")
    monkeypatch.setenv("COLUMNS", "40")
    narrow = hook.render()
    monkeypatch.setenv("COLUMNS", "250")
    assert hook.render() == narrow
    assert os.environ["COLUMNS"] == "250"  # the caller's setting is restored


@pytest.mark.parametrize(
    ("docstring", "shown"),
    [
        (":func:`summarize` splits", "`summarize` splits"),
        (":class:`~intbench.records.Episode` records", "`Episode` records"),
        (":mod:`intbench.integrations.trl`", "`intbench.integrations.trl`"),
        (":py:meth:`~a.B.c` and :attr:`x`", "`c` and `x`"),
        ("``code`` and plain text", "``code`` and plain text"),
    ],
)
def test_sphinx_roles_become_inline_code_in_the_api_reference(docstring, shown):
    assert _hook("sphinx_roles").plain(docstring) == shown


def test_the_readme_quick_start_is_the_docs_one():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    quickstart = (ROOT / "docs" / "quickstart.md").read_text(encoding="utf-8")
    blocks = re.findall(r"```bash\n(.*?)```", readme[readme.index("\n## Quick start\n") :], re.S)
    assert len(blocks) >= 2  # the main job's set-up and the test command
    for block in blocks:
        assert f"```bash\n{block}```" in quickstart
    reading = readme.split("**Reading the table.**")[1].split("\n\n")[0]
    assert " ".join(reading.split()) in " ".join(quickstart.split())


def test_the_site_builds_strictly(tmp_path):
    pytest.importorskip("mkdocs", reason='pip install -e ".[docs]"')
    pytest.importorskip("mkdocstrings")
    result = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "PYTHONPATH": str(ROOT), "NO_MKDOCS_2_WARNING": "1"},
    )
    assert result.returncode == 0, result.stderr[-3000:]
    cli = (tmp_path / "cli" / "index.html").read_text(encoding="utf-8")
    assert "usage: intbench audit-reward" in cli
    api = (tmp_path / "api" / "training" / "index.html").read_text(encoding="utf-8")
    assert "monitor_rewards" in api and ":func:" not in api
