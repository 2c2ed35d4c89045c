"""``intbench report``: tables against the metric functions, files, bad input, HTML safety."""

from __future__ import annotations

import argparse
import copy
import csv
import json
import logging
import math
import re
import sys
from pathlib import Path

import pytest

from intbench.commands.report import add_parser
from intbench.metrics import (
    FeedbackKey,
    MonitorKey,
    acc_at_k,
    feedback_summary,
    fixed_effects,
    monitor_key,
    monitor_summary,
    solver_vs_teacher,
    split_errors,
    summarize,
    teacher_label,
)
from intbench.records import Episode
from intbench.report import ReportError, generate_report, load_episodes, read_runs, record_problem
from intbench.report.html import TRACE_LIMIT, browser_record, script_json, trace_segments
from tests.report_records import K_MAX, feedback_records, monitor_records, write_run

SAMPLES = 100  # bootstrap resamples: enough to compare CIs exactly, cheap enough to be fast


@pytest.fixture(scope="module")
def records(tmp_path_factory: pytest.TempPathFactory) -> dict[str, list[dict]]:
    cache = tmp_path_factory.mktemp("cache")
    return {"monitor": monitor_records(cache), "feedback": feedback_records(cache)}


@pytest.fixture(scope="module")
def built(records, tmp_path_factory: pytest.TempPathFactory):
    root = tmp_path_factory.mktemp("runs")
    write_run(root / "monitor", records["monitor"], {"protocol": "monitor", "teachers": 4})
    write_run(root / "feedback", records["feedback"])
    return generate_report([root / "monitor", root / "feedback"], root / "out", samples=SAMPLES)


def read_csv(output, name: str) -> list[dict]:
    with (output.html_path.parent / "tables" / f"{name}.csv").open(encoding="utf-8") as handle:
        return list(csv.DictReader(handle))


def same(cell: str, value: float) -> bool:
    return math.isnan(value) if cell == "" else float(cell) == pytest.approx(value, abs=1e-12)


def assert_estimate(row: dict, column: str, estimate) -> None:
    assert same(row[column], estimate.value), (column, row[column], estimate)
    assert same(row[f"{column}_low"], estimate.low) and same(
        row[f"{column}_high"], estimate.high
    ), column


# ------------------------------------------------------------------ tables
def test_monitor_table_matches_metrics(built, records):
    rows = read_csv(built, "monitor")
    assert len(rows) == 6  # 3 teachers (two people pooled) x 2 conditions
    for row in rows:
        key = MonitorKey(*(row[field] for field in MonitorKey._fields))
        group = [e for e in records["monitor"] if monitor_key(Episode.from_dict(e)) == key]
        expected = monitor_summary(group, samples=SAMPLES)
        for metric in (
            "phi",
            "phi_correct",
            "phi_incorrect",
            "tau_abs",
            "tau_rel",
            "H",
            "wrong_to_right",
            "right_to_wrong",
            "leak_rate",
        ):
            assert_estimate(row, metric, expected[metric])
        assert (
            int(row["n"]) == expected["n_episodes"] and int(row["errors"]) == expected["n_errors"]
        )
        assert int(row["interventions"]) == expected["n_interventions"]


def test_humans_are_pooled_next_to_llm_teachers(built, records):
    rows = read_csv(built, "monitor")
    assert sorted({r["teacher"] for r in rows}) == ["hf:teacher-a", "hf:teacher-b", "human"]
    people = [
        e
        for e in records["monitor"]
        if e["teacher"].startswith("human:") and e["condition"] == "standard"
    ]
    human = next(r for r in rows if r["teacher"] == "human" and r["condition"] == "standard")
    assert int(human["n"]) == len(people) == 12
    assert teacher_label("human:p7") == "human" and teacher_label(None) == "none"


def test_standard_vs_oracle_side_by_side(built):
    rows = {r["teacher"]: r for r in read_csv(built, "monitor_standard_vs_oracle")}
    long = {(r["teacher"], r["condition"]): r for r in read_csv(built, "monitor")}
    for teacher, row in rows.items():
        for condition in ("standard", "oracle"):
            assert row[f"phi_{condition}"] == long[(teacher, condition)]["phi"]
            assert row[f"H_{condition}"] == long[(teacher, condition)]["H"]
    # one oracle episode of a person ends in a grader error (set in report_records) and is excluded
    assert int(rows["human"]["n_oracle"]) == 11


def test_feedback_table_matches_metrics(built, records):
    rows = read_csv(built, "feedback")
    assert len(rows) == 6  # 2 students x (2 teachers + self_refine)
    for row in rows:
        teacher = None if row["mode"] == "self_refine" else row["teacher"]
        group = [
            e
            for e in records["feedback"]
            if e["student"] == row["student"] and e["teacher"] == teacher
        ]
        expected = feedback_summary(group, k_max=K_MAX, samples=SAMPLES)
        assert int(row["K"]) == K_MAX
        assert_estimate(row, "acc_at_1", expected["acc@1"])
        assert_estimate(row, "acc_at_k", expected[f"acc@{K_MAX}"])
        for metric in ("gain", "normalized_gain", "auc", "first_step_gain", "leak_rate"):
            assert_estimate(row, metric, expected[metric])
        assert (
            int(row["n"]) == expected["n_episodes"] and int(row["errors"]) == expected["n_errors"]
        )


def test_matrices_and_analyses_match_metrics(built, records):
    def summary(student, teacher):
        group = [
            e for e in records["feedback"] if e["student"] == student and e["teacher"] == teacher
        ]
        return feedback_summary(group, k_max=K_MAX, samples=SAMPLES)

    students = ["hf:s1", "hf:s2"]
    pairs = {(s, t): summary(s, t) for s in students for t in students}
    gains = {k: v["gain"].value for k, v in pairs.items()}
    aucs = {k: v["auc"].value for k, v in pairs.items()}
    for row in read_csv(built, f"matrix_gain_math_k{K_MAX}"):
        for teacher in students:
            assert same(row[teacher], gains[(row["student"], teacher)])
        assert same(row["self_refine"], summary(row["student"], None)["gain"].value)
    for row in read_csv(built, f"matrix_auc_math_k{K_MAX}"):
        assert all(same(row[t], aucs[(row["student"], t)]) for t in students)

    analysis = {
        (r["analysis"], r["metric"], r["student"], r["statistic"]): r["value"]
        for r in read_csv(built, f"matrix_analysis_math_k{K_MAX}")
    }
    for name, value in fixed_effects(gains).items():
        assert same(analysis[("fixed effects", "gain", "all", name)], value)
    solo = {}
    for teacher in students:
        usable, _ = split_errors(e for e in records["feedback"] if e["student"] == teacher)
        solo[teacher] = acc_at_k(usable, 1)[0]
        assert same(analysis[("teacher solo acc@1", "acc@1", teacher, "as student")], solo[teacher])
    for student, result in solver_vs_teacher(solo, aucs).items():
        assert same(
            analysis[("solver vs teacher (AUC)", "auc", student, "spearman ρ")], result["spearman"]
        )
        assert same(
            analysis[("solver vs teacher (AUC)", "auc", student, "inversion rate")],
            result["inversion_rate"],
        )
    best = {(s, t): v for (s, t), v in aucs.items() if s == "hf:s1"}
    assert same(
        analysis[("best − worst teacher", "auc", "hf:s1", "difference")],
        max(best.values()) - min(best.values()),
    )


# ------------------------------------------------------------------- files
def test_files_are_written(built):
    out = built.html_path.parent
    assert built.html_path == out / "report.html" and built.figures_skipped is None
    names = {p.name for p in built.figure_files}
    assert {
        "monitor_frequency_timing.png",
        "monitor_timing_per_problem.png",
        "feedback_accuracy_curves.png",
        f"matrix_math_k{K_MAX}.png",
    } <= names
    for path in built.figure_files:
        assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    for stem in (
        "monitor",
        "monitor_standard_vs_oracle",
        "feedback",
        f"matrix_acc1_math_k{K_MAX}",
        f"matrix_accK_math_k{K_MAX}",
        f"matrix_analysis_math_k{K_MAX}",
    ):
        assert (out / "tables" / f"{stem}.csv").is_file()
        markdown = (out / "tables" / f"{stem}.md").read_text(encoding="utf-8")
        assert markdown.startswith("### ") and "|---|" in markdown
    assert re.search(
        r"\| 0\.\d{3} \[0\.\d{3}, \d\.\d{3}\] \|", (out / "tables" / "monitor.md").read_text()
    )
    page = built.html_path.read_text(encoding="utf-8")
    assert page.count('<img src="data:image/png;base64,') == len(built.figure_files)
    assert "http://" not in page and "https://" not in page  # nothing to fetch
    assert "config.json" in page and "&#34;teachers&#34;: 4" in page


def test_default_out_dir_is_first_dir_report(records, tmp_path):
    run = write_run(tmp_path / "run", records["feedback"][:6])
    output = generate_report([run], samples=10)
    assert output.html_path == run / "report" / "report.html" and output.html_path.is_file()


# ---------------------------------------------------------------- bad input
def test_malformed_lines_are_skipped_and_counted(records, tmp_path, caplog):
    run = write_run(tmp_path / "run", records["monitor"][:5])
    with (run / "episodes.jsonl").open("a", encoding="utf-8") as handle:
        handle.write("{not json\n")
        handle.write("[1, 2, 3]\n")
        handle.write('{"protocol": "monitor", "domain": "math"}\n')  # no problem_id, no student
        handle.write(
            json.dumps({**records["monitor"][0], "teacher_name": "x"}) + "\n"
        )  # unknown field
        handle.write(json.dumps({**records["monitor"][0], "attempts": "oops"}) + "\n")
        handle.write(json.dumps({**records["monitor"][0], "schema_version": 99}) + "\n")
        handle.write("\n")  # blank lines are not errors
    (run / "config.json").write_text("{broken", encoding="utf-8")
    with caplog.at_level(logging.WARNING, logger="intbench.report"):
        runs = read_runs([run])
    assert len(runs.episodes) == 5 and runs.skipped == 6
    assert (
        "skipped 6 malformed line(s) (line 6, 7, 8, 9, 10, ...; first: invalid JSON" in caplog.text
    )
    reasons = [
        record_problem(json.loads(line))
        for line in (run / "episodes.jsonl").read_text().splitlines()[6:11]
    ]
    assert (
        reasons[0] == "not a JSON object but list" and reasons[1] == "missing problem_id, student"
    )
    assert (
        "unknown field(s) ['teacher_name']" in reasons[2] and reasons[3] == "attempts has type str"
    )
    assert "upgrade intbench" in reasons[4]
    assert "config.json: unreadable" in caplog.text and runs.sources[0].config is None
    assert len(load_episodes([run])) == 5
    output = generate_report([run], tmp_path / "out", samples=10)
    assert output.runs.skipped == 6
    assert "6 malformed line(s) skipped" in output.html_path.read_text(encoding="utf-8")


def test_empty_and_missing_input_give_clear_errors(tmp_path, capsys):
    empty = tmp_path / "empty"
    empty.mkdir()
    (empty / "episodes.jsonl").write_text("\n\n", encoding="utf-8")
    with pytest.raises(ReportError, match="no episodes found in .*episodes.jsonl"):
        generate_report([empty])
    with pytest.raises(ReportError, match="no such directory"):
        load_episodes([tmp_path / "nope"])
    (tmp_path / "bare").mkdir()
    with pytest.raises(ReportError, match="no episodes.jsonl found"):
        load_episodes([tmp_path / "bare"])
    with pytest.raises(ReportError, match="no run directories"):
        load_episodes([])
    assert run_cli([str(empty)]) == 2
    assert "error: no episodes found" in capsys.readouterr().err


def test_retried_episode_replaces_its_error_record(records, tmp_path):
    good = records["feedback"][0]
    failed = {
        **copy.deepcopy(good),
        "error": "student failed: server down",
        "attempts": [],
        "solved_at": None,
    }
    run = write_run(tmp_path / "run", [failed, *records["feedback"][:6]])
    runs = read_runs([run])
    assert runs.replaced == 1 and len(runs.episodes) == 6
    assert all(not e.error for e in runs.episodes)


def test_runs_below_a_directory_are_found(records, tmp_path):
    write_run(tmp_path / "all" / "a", records["monitor"][:3])
    write_run(tmp_path / "all" / "b", records["feedback"][:4])
    runs = read_runs([tmp_path / "all"])
    assert len(runs.sources) == 2 and len(runs.episodes) == 7


def test_without_matplotlib_tables_and_html_are_still_written(
    records, tmp_path, monkeypatch, capsys
):
    monkeypatch.setitem(
        sys.modules, "matplotlib", None
    )  # makes `import matplotlib...` raise ImportError
    monkeypatch.setitem(sys.modules, "matplotlib.figure", None)
    run = write_run(tmp_path / "run", records["monitor"][:8])
    assert run_cli([str(run), "--out", str(tmp_path / "out"), "--samples", "10"]) == 0
    out = capsys.readouterr().out
    assert "figures skipped: matplotlib is not installed" in out
    assert (tmp_path / "out" / "tables" / "monitor.csv").is_file()
    page = (tmp_path / "out" / "report.html").read_text(encoding="utf-8")
    assert "Figures skipped" in page and "<img" not in page


# -------------------------------------------------------------------- CLI
def run_cli(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="intbench")
    add_parser(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(["report", *argv])
    return args.func(args)


def test_cli_prints_a_one_screen_summary(records, tmp_path, capsys):
    run = write_run(tmp_path / "run", records["monitor"] + records["feedback"])
    assert run_cli([str(run), "--samples", "10"]) == 0
    printed = capsys.readouterr()
    out = printed.out
    assert out.count("\n") < 40
    # each phase on stderr as it starts and with its time as it ends
    phases = [line for line in printed.err.splitlines() if line.startswith("report: ")]
    assert "report: metrics of 84 episodes, 10 bootstrap resamples per CI ..." in phases
    assert len(phases) == 10 and all(re.search(r"(\.\.\.|: \d+\.\d s)$", p) for p in phases)
    assert "84 episodes from 1 file(s)" in out and "monitor" in out and "feedback" in out
    # φ after the increment and the baseline accuracy
    assert re.search(r"human\s+standard\s+continue\s+\S+\s+\d\.\d\d\s+0\.42", out)
    assert f"report: {run / 'report' / 'report.html'}" in out
    assert run_cli([str(run), "--samples", "0"]) == 2


def test_a_tutor_run_gets_its_table(tmp_path, capsys):
    run = Path(__file__).parent / "fixtures" / "episodes_v1" / "tutor"
    assert run_cli([str(run), "--out", str(tmp_path / "out"), "--samples", "10"]) == 0
    out = capsys.readouterr().out
    assert "Tutor protocol (tables/tutor.md)" in out and "browser only" not in out
    assert re.search(r"fixture_teacher\s+ideation\s+1\.00\s+n/a\s+n/a\s+0\.00\s+4\s+0", out)
    with (tmp_path / "out" / "tables" / "tutor.csv").open(encoding="utf-8") as handle:
        (row,) = csv.DictReader(handle)
    assert (row["solve_rate"], row["solo_rate"], row["n"], row["messages"]) == (
        "1.0",
        "",
        "4",
        "12",
    )
    assert "Tutor protocol" in (tmp_path / "out" / "report.html").read_text(encoding="utf-8")


# ------------------------------------------------------------ HTML safety
def test_script_json_cannot_close_the_script_block():
    payload = {"t": "</script><script>alert(1)</script> <!-- & -->"}
    text = script_json(payload)
    assert "<" not in text and ">" not in text and "&" not in text
    assert json.loads(text) == payload


def test_hostile_trace_is_escaped_in_the_page(records, tmp_path):
    record = copy.deepcopy(
        next(e for e in records["monitor"] if e["intervention"] and not e["error"])
    )
    record["baseline"]["text"] = "</script><script>alert(1)</script>" + record["baseline"]["text"]
    record["problem_id"] = "<img src=x onerror=alert(2)>"
    run = write_run(tmp_path / "run", [record])
    page = generate_report([run], samples=10).html_path.read_text(encoding="utf-8")
    assert "<script>alert(1)" not in page and "<img src=x" not in page
    block = re.search(
        r'<script type="application/json" id="episode-data">(.*?)</script>', page, re.S
    ).group(1)
    data = json.loads(block)
    shown = "".join(s["t"] for s in data[0]["trace"])
    assert shown == record["baseline"]["text"] and data[0]["problem"] == record["problem_id"]


def test_long_traces_are_truncated_around_the_intervention():
    trace = "a" * 30_000 + "b" * 30_000
    segments = trace_segments(trace, 30_000)
    kinds = [s["k"] for s in segments]
    assert kinds == ["revealed", "omitted", "revealed", "marker", "rest", "omitted"]
    assert sum(len(s["t"]) for s in segments if s["k"] != "omitted") <= TRACE_LIMIT
    assert segments[2]["t"].endswith("a") and segments[4]["t"].startswith(
        "b"
    )  # both sides of the marker
    assert "characters omitted" in segments[1]["t"]
    assert [s["k"] for s in trace_segments("short", None)] == ["rest"]
    assert trace_segments("abc", 99)[-1] == {
        "k": "marker",
        "t": "",
    }  # a position past the end is clamped


def test_browser_record_outcomes(records):
    monitor = {browser_record(0, Episode.from_dict(e))["outcome"] for e in records["monitor"]}
    assert {"wrong→right", "no intervention", "error"} <= monitor
    feedback = {browser_record(0, Episode.from_dict(e))["outcome"] for e in records["feedback"]}
    assert feedback == {"solved at 1", "solved after feedback", "unsolved"}


def test_two_thousand_episodes_make_a_reasonable_page(records, tmp_path):
    long_trace = "Consider the next step of the argument carefully. " * 400  # ~20k characters
    episodes = []
    for i in range(2_000):
        record = copy.deepcopy(records["monitor"][i % len(records["monitor"])])
        record["episode_id"] = f"big-{i}"
        record["problem_id"] = f"p/{i % 200}"
        record["baseline"]["text"] = long_trace
        episodes.append(record)
    run = write_run(tmp_path / "big", episodes)
    output = generate_report([run], samples=5)
    size = output.html_path.stat().st_size
    assert len(output.runs.episodes) == 2_000
    assert size < 20 * 1024 * 1024, size
    assert output.html_path.read_text(encoding="utf-8").count("characters omitted") >= 2_000


def test_feedback_k_max_falls_back_to_attempts_seen(records):
    bare = [
        copy.deepcopy(e)
        for e in records["feedback"]
        if e["teacher"] == "hf:s1" and e["student"] == "hf:s1"
    ]
    for e in bare:
        e["config"].pop("k_max")
    data = summarize(bare, samples=5)
    (key,) = data.feedback
    assert (
        key[:5]
        == FeedbackKey("math", "hf:s1", "hf:s1", "teacher", max(len(e["attempts"]) for e in bare))[
            :5
        ]
    )


def test_the_timing_scatter_names_only_the_teachers_present():
    from intbench.records import as_episodes
    from intbench.report.figures import _scatter_title
    from intbench.rundir import RunDir

    fixture = Path(__file__).parent / "fixtures" / "episodes_v1" / "monitor"
    models = RunDir(fixture).episodes()
    assert _scatter_title(models) == "τ_rel per problem: teachers"
    people = as_episodes([{**e.to_dict(), "teacher": "human:p1"} for e in models])
    assert _scatter_title(people) == "τ_rel per problem: humans"
    assert _scatter_title([*models, *people]) == "τ_rel per problem: humans vs LLM teachers"


def test_runs_that_cannot_be_read_are_skipped_with_a_warning_naming_them(
    records, tmp_path, capsys, monkeypatch
):
    """One unreadable run (an unknown domain, a read that fails) used to abort the whole
    report; it is left out and named, and the other runs are reported."""
    from intbench.rundir import RunDir

    good = write_run(tmp_path / "runs" / "good", records["monitor"][:6])
    foreign = write_run(
        tmp_path / "runs" / "foreign",
        [{**r, "domain": "plugin_domain"} for r in records["feedback"][:4]],
    )
    broken = write_run(tmp_path / "runs" / "broken", records["feedback"][4:8])
    real_read = RunDir.read

    def read(run):
        if run.path == broken:
            raise OSError("Input/output error")
        return real_read(run)

    monkeypatch.setattr(RunDir, "read", read)
    runs = read_runs([tmp_path / "runs"])
    assert len(runs.episodes) == 6 and [s.path.parent for s in runs.sources] == [good]
    assert dict(runs.unreadable) == {
        broken: "OSError: Input/output error",
        foreign: "unknown domain 'plugin_domain'; import the module that registers it "
        "(see 'Adding a domain' in docs/domains.md)",
    }
    assert run_cli([str(tmp_path / "runs"), "--samples", "10"]) == 0
    out = capsys.readouterr().out
    assert f"warning: skipped the run in {foreign}: unknown domain 'plugin_domain'" in out
    assert f"warning: skipped the run in {broken}: OSError" in out
    assert "6 episodes from 1 file(s)" in out
