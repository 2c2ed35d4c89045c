"""summary.json: counts, phases and token usage per role, updated while a run goes."""

from __future__ import annotations

import json

import pytest

from intbench import runner
from intbench.agents.backends import shared_backend
from intbench.report import generate_report
from intbench.run_summary import PriceError, parse_prices
from intbench.runner import RunConfig, run_eval

STUDENT = "scripted:text=We add the numbers and carry. So \\boxed{7}."
TEACHER = "scripted:text=Intervene: No"


def _usage(spec: str) -> dict:
    usage = shared_backend(spec).usage
    return {"requests": usage.calls, "prompt": usage.prompt_tokens, "out": usage.completion_tokens}


def test_token_counts_are_the_backends_own_and_cost_follows_the_prices(tmp_path, monkeypatch):
    monkeypatch.setenv("INTBENCH_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(runner, "SUMMARY_EVERY_S", 0.0)
    before = {role: _usage(spec) for role, spec in (("student", STUDENT), ("teacher", TEACHER))}
    seen: list[int] = []
    out = tmp_path / "run"

    def during(record: dict) -> None:
        seen.append(json.loads((out / "summary.json").read_text())["episodes"]["done"])

    config = RunConfig(env_id="IntBench-Math-v0", teacher=TEACHER, student=STUDENT, n=4)
    prices = parse_prices(["student=0.5/1.5", "teacher=2/8"])
    run_eval(config, out, concurrency=2, progress=False, on_episode=during, prices=prices)
    summary = json.loads((out / "summary.json").read_text())
    assert seen == [1, 2, 3, 4]  # replaced as the run went
    assert summary["finished"] and summary["episodes"]["done"] == 4
    assert summary["episodes"]["failed"] == 0 and summary["episodes"]["total"] == 4
    assert set(summary["seconds"]) == {"setup", "episodes", "total"}
    cost = 0.0
    for role, spec in (("student", STUDENT), ("teacher", TEACHER)):
        after, then = _usage(spec), before[role]
        counted = summary["usage"][role]
        assert counted["requests"] == after["requests"] - then["requests"] > 0
        assert counted["prompt_tokens"] == after["prompt"] - then["prompt"] > 0
        assert counted["completion_tokens"] == after["out"] - then["out"] > 0
        prompt_price, completion_price = prices[role]
        cost += (
            counted["prompt_tokens"] * prompt_price
            + counted["completion_tokens"] * completion_price
        ) / 1e6
    assert summary["cost_usd"] == pytest.approx(cost, abs=1e-6)
    assert summary["models"] == {"student": STUDENT, "teacher": TEACHER}
    assert summary["settings"] == {}  # the monitor env resolves nothing itself
    assert summary["intbench"]["version"]

    # a resume runs nothing new: its summary says so, and the report shows the runs table
    run_eval(config, out, concurrency=2, progress=False)
    again = json.loads((out / "summary.json").read_text())
    assert again["episodes"]["already_done"] == 4 and again["episodes"]["done"] == 0
    report = generate_report([out], tmp_path / "report")
    table = next(t for t in report.data.tables if t.name == "runs")
    assert table.rows[0][1:3] == [0, 0] and table.rows[0][-1] == "yes"


@pytest.mark.parametrize("bad", ["student", "student=1", "coach=1/2", "student=a/b", "judge=-1/2"])
def test_bad_prices_name_the_expected_form(bad):
    with pytest.raises(PriceError, match="ROLE=IN/OUT"):
        parse_prices([bad])
