"""`intbench data list` and `intbench data show` through intbench.cli.main."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from intbench.cli import main
from intbench.envs.domains import get_domain
from intbench.records import DOMAINS

FIXTURES = Path(__file__).parent / "fixtures" / "hub"


def test_data_list_shows_every_domain_and_source(capsys):
    assert main(["data", "list"]) == 0
    out = capsys.readouterr().out
    lines = out.splitlines()
    for name in DOMAINS:
        assert any(line.startswith(f"{name} ") and " offline " in line for line in lines)
        assert any(line.startswith(f"{name} ") and "needs network" in line for line in lines) == (
            bool(get_domain(name).hub)
        )
    arc_offline = [
        line.split() for line in lines if line.startswith("arc ") and " offline " in line
    ]
    assert [(row[2], row[3]) for row in arc_offline] == [("training", "400"), ("evaluation", "400")]
    assert any(line.split()[:4] == ["brainteaser", "offline", "test", "386"] for line in lines)
    assert any(line.split()[:4] == ["codeforces", "offline", "test", "164"] for line in lines)
    assert "HuggingFaceH4/MATH-500" in out and "open-r1/codeforces" in out


def test_data_show_prints_a_readable_problem(capsys):
    assert main(["data", "show", "codeforces", "2"]) == 0
    out = capsys.readouterr().out
    assert "codeforces/humaneval/2" in out
    assert "== question ==" in out and "def truncate_number" in out
    assert "kind: function" in out and "entry_point: truncate_number" in out
    assert "license: MIT" in out


def test_data_show_json_and_local_file(capsys):
    path = FIXTURES / "arc.jsonl"
    assert main(["data", "show", "arc", "1", "--source", str(path), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["id"] == "arc/local/fixture02" and data["answer"] == [[[7, 7]], [[2, 2]]]


@pytest.mark.parametrize(
    "argv, message",
    [
        (["data", "show", "brainteaser", "386"], "index 386 out of range: 386 problem(s)"),
        (["data", "show", "chess"], "unknown domain 'chess'"),
        (["data", "show", "arc", "--split", "dev"], "no split 'dev'"),
    ],
)
def test_data_show_bad_input_is_a_short_error(capsys, argv, message):
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err


def test_data_show_hub_fails_fast_without_traceback(capsys, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    start = time.monotonic()
    assert main(["data", "show", "math", "--source", "hub"]) == 2
    assert time.monotonic() - start < 8
    err = capsys.readouterr().err
    assert err.startswith("error: cannot load 'math' from the Hugging Face hub")
    assert "source='offline'" in err and "Traceback" not in err
