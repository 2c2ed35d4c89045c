"""Domains from other installed packages: the entry-point group ``intbench.domains``.

The example package in ``examples/intbench-letter-count`` is installed for real
(pip, into a temporary folder); broken plugins are made as bare ``.dist-info``
folders, which is all ``importlib.metadata`` reads.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "intbench-letter-count"


def _python(code: str, *paths: Path) -> subprocess.CompletedProcess:
    pythonpath = os.pathsep.join([*(str(p) for p in paths), str(ROOT)])
    env = dict(os.environ, PYTHONPATH=pythonpath, INTBENCH_CACHE=str(paths[0] / "cache"))
    return subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True,
        timeout=300,
    )  # fmt: skip


@pytest.fixture(scope="module")
def installed_example(tmp_path_factory) -> Path:
    target = tmp_path_factory.mktemp("site")
    built = subprocess.run(
        [sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target", str(target),
         str(EXAMPLE)],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    if built.returncode != 0:
        pytest.skip(f"could not pip-install the example package: {built.stderr.strip()[-300:]}")
    return target


def _fake_plugin(root: Path, name: str, value: str) -> Path:
    info = root / f"{name}-0.1.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(f"[intbench.domains]\n{name} = {value}\n")
    return root


def test_an_installed_package_domain_is_in_domains_gym_and_data_list(installed_example):
    code = (
        "import gymnasium as gym, intbench\n"
        "from intbench.cli import main\n"
        "assert 'letter_count' in intbench.DOMAINS, intbench.DOMAINS\n"
        "for suffix in ('', '-Feedback', '-Tutor'):\n"
        "    assert f'IntBench-LetterCount{suffix}-v0' in gym.registry\n"
        "main(['data', 'list'])\n"
    )
    done = _python(code, installed_example)
    assert done.returncode == 0, done.stderr
    assert "letter_count" in done.stdout


def test_eval_runs_on_an_installed_package_domain(installed_example, tmp_path):
    out = tmp_path / "run"
    argv = ["eval", "--env", "IntBench-LetterCount-v0", "--teacher", "never",
            "--student", "scripted:intbench_letter_count:counter", "-n", "3",
            "--out", str(out), "--no-progress"]  # fmt: skip
    done = _python(f"from intbench.cli import main; main({argv!r})", installed_example)
    assert done.returncode == 0, done.stderr
    lines = (out / "episodes.jsonl").read_text().splitlines()
    assert len(lines) == 3 and all('"letter_count"' in line for line in lines)


@pytest.mark.parametrize(
    ("value", "reason"),
    [
        ("no_such_module_for_intbench:DOMAIN", "No module named"),
        ("os:getcwd", "not an intbench Domain"),
    ],
)
def test_a_broken_plugin_is_skipped_with_a_warning_naming_it(tmp_path, value, reason):
    site = _fake_plugin(tmp_path / "site", "broken_domain_plugin", value)
    done = _python("import intbench; print(intbench.DOMAINS)", site)
    assert done.returncode == 0, done.stderr
    assert "'math'" in done.stdout  # the built-in domains are all there
    assert "broken_domain_plugin" in done.stderr and reason in done.stderr


def test_domains_lists_a_domain_registered_after_import(tmp_path):
    code = (
        "import intbench\n"
        "before = intbench.DOMAINS\n"
        "import tests.third_party_domain\n"
        "assert 'reverse_word' not in before and 'reverse_word' in intbench.DOMAINS\n"
    )
    done = _python(code, tmp_path)
    assert done.returncode == 0, done.stderr
