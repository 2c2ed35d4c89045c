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
cli.build_parser = lambda: parser
sys.exit(cli.main([a for a in sys.argv[1:] if a != "--heavy"]))
"""


def _bars_shown(*flags: str) -> dict[str, str]:
    quiet_vars = ("TQDM_DISABLE", "HF_HUB_DISABLE_PROGRESS_BARS", "HF_DATASETS_DISABLE_PROGRESS_BARS")
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
