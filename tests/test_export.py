"""``intbench export``: runs as a Hugging Face dataset that gives back the runs' metrics."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from types import SimpleNamespace

import datasets
import huggingface_hub
import pytest
from huggingface_hub import DatasetCard, HfApi
from huggingface_hub.errors import HfHubHTTPError
from huggingface_hub.utils import filter_repo_objects

from intbench import cli, export
from intbench.metrics import acc_at_k, summarize
from intbench.records import Episode
from intbench.rundir import RunDir

FIXTURE = Path(__file__).parent / "fixtures" / "episodes_v1"
RUNS = ("monitor", "feedback", "tutor")
SAMPLES = 50  # the card's CIs: enough to compare tables, quick to compute
REPO = "someone/intbench-results"


def _export(out: Path, *extra: str, runs=None) -> int:
    paths = [str(FIXTURE / r) for r in RUNS] if runs is None else [str(r) for r in runs]
    return cli.main(["export", *paths, "--out", str(out), "--samples", str(SAMPLES), *extra])


@pytest.fixture(scope="module")
def exported(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("export") / "dataset"
    assert _export(out) == 0
    return out


def _load(out: Path) -> datasets.Dataset:
    """The export's rows as ``load_from_disk`` gives them."""
    return datasets.load_from_disk(str(out))[export.SPLIT]


@pytest.fixture(scope="module")
def dataset(exported):
    return _load(exported)


def _rebuilt(rows) -> list[Episode]:
    return [Episode.from_dict(json.loads(row["record"])) for row in rows]


def _rows(dataset, run: str) -> list[dict]:
    return [row for row in dataset if row["run"] == run]


def _one_line_error(capsys) -> str:
    err = capsys.readouterr().err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), err
    assert "Traceback" not in err
    return lines[0]


# ------------------------------------------------------------- round trip
def test_each_run_is_one_row_per_episode_under_its_name(dataset):
    assert sorted(set(dataset["run"])) == sorted(RUNS)
    for run in RUNS:
        records = RunDir(FIXTURE / run).episodes()
        rows = _rows(dataset, run)
        assert [Episode.from_dict(json.loads(r["record"])).to_dict() for r in rows] == [
            e.to_dict() for e in records
        ]


@pytest.mark.parametrize("run", RUNS)
def test_records_rebuilt_from_the_json_column_give_the_runs_metrics(dataset, run):
    own = summarize(RunDir(FIXTURE / run).episodes(), samples=SAMPLES)
    rebuilt = summarize(_rebuilt(_rows(dataset, run)), samples=SAMPLES)
    assert own.tables, "the fixture run has metrics"
    assert rebuilt.to_text() == own.to_text()
    assert rebuilt.monitor == own.monitor
    assert rebuilt.feedback == own.feedback
    assert rebuilt.tutor == own.tutor


def test_all_rows_give_the_metrics_of_all_runs(dataset):
    everything = [e for run in RUNS for e in RunDir(FIXTURE / run).episodes()]
    assert (
        summarize(_rebuilt(dataset), samples=SAMPLES).to_text()
        == summarize(everything, samples=SAMPLES).to_text()
    )


# ------------------------------------------------------------- flattened columns
def test_columns_are_the_documented_ones_with_their_types(dataset):
    assert dataset.column_names == list(export.COLUMNS)
    assert dataset.features["attempt_correct"].feature == datasets.Value("bool")
    assert dataset.features["intervention_position"] == datasets.Value("int64")
    assert dataset.features["final_correct"] == datasets.Value("bool")


def test_shared_columns_match_the_records(dataset):
    configs = {run: RunDir(FIXTURE / run).config() for run in RUNS}
    for row, episode in zip(dataset, _rebuilt(dataset), strict=True):
        assert row["env_id"] == configs[row["run"]]["env_id"]
        for name in ("protocol", "domain", "problem_id", "student", "teacher", "condition"):
            assert row[name] == getattr(episode, name), name
        assert row["episode_id"] == episode.episode_id
        assert row["repeat"] == episode.metadata["repeat"] == 0
        assert row["problem_license"] == episode.metadata["problem"]["license"] == "Apache-2.0"
        assert row["error"] is None and row["reward"] == episode.reward


def test_monitor_columns_match_the_records_and_the_envs_own_outcome(dataset):
    rows = _rows(dataset, "monitor")
    # the fixture by hand: baselines right, wrong, wrong, right; continuations right, right, wrong, wrong
    assert [r["baseline_correct"] for r in rows] == [True, False, False, True]
    assert [r["post_correct"] for r in rows] == [True, True, False, False]
    assert [r["final_correct"] for r in rows] == [True, True, False, False]
    for row, episode in zip(rows, _rebuilt(rows), strict=True):
        outcome = episode.reward_components  # what the env computed when it ran
        assert row["final_correct"] == bool(outcome["success"])
        assert row["intervened"] is bool(outcome["intervened"]) is True
        assert row["intervention_applied"] is True
        assert row["intervention_position"] == episode.intervention.position == 200
        assert row["tau_rel"] == pytest.approx(episode.intervention.tau_rel)
        assert (row["post"], row["increment"], row["teacher_prompt"]) == ("continue", "50", "paper")
        assert row["teacher_access"] is True
        assert row["leaked"] is False
        for name in ("k_max", "n_attempts", "attempt_correct", "solved_by_attempt", "n_messages"):
            assert row[name] is None, name


def test_feedback_columns_give_acc_at_k_per_turn(dataset):
    rows = {r["problem_id"]: r for r in _rows(dataset, "feedback")}
    once, twice, never = (rows[f"math/procedural/test/0/{i}"] for i in (0, 1, 2))
    assert once["attempt_correct"] == [True] and once["feedback_turns"] == 0
    assert twice["attempt_correct"] == [False, True] and twice["feedback_turns"] == 1
    assert twice["solved_by_attempt"] == [False] + [True] * 9
    assert never["attempt_correct"] == [False] * 10 and never["feedback_turns"] == 9
    assert never["solved_by_attempt"] == [False] * 10 and never["final_correct"] is False
    assert [r["solved_at"] for r in rows.values()] == [1, 1, 2, None]
    assert {r["k_max"] for r in rows.values()} == {10}
    # one repeat per problem: the column's mean at each k is the metric's acc@k
    columns = list(zip(*(r["solved_by_attempt"] for r in rows.values()), strict=True))
    per_turn = [sum(c) / len(c) for c in columns]
    assert per_turn == pytest.approx(acc_at_k(_rebuilt(rows.values()), 10))
    for row, episode in zip(rows.values(), _rebuilt(rows.values()), strict=True):
        assert row["final_correct"] == bool(episode.reward_components["solved"])
        assert (row["history"], row["teacher_reference"], row["execution_context"]) == (
            1,
            "none",
            "feedback",
        )
        assert row["baseline_correct"] is None and row["intervened"] is None


def test_tutor_columns_match_the_records(dataset):
    rows = _rows(dataset, "tutor")
    assert [r["solved_at"] for r in rows] == [1, 2, 3, 1]
    assert [r["attempt_correct"] for r in rows][2] == [False, False, True]
    for row, episode in zip(rows, _rebuilt(rows), strict=True):
        assert row["n_messages"] == 3
        assert row["n_withheld"] == episode.metadata["withheld"] == 0
        assert row["final_correct"] is True
        assert row["solved_by_attempt"] is None


# ------------------------------------------------------------- the card
def test_card_holds_front_matter_configs_tables_and_papers(exported):
    text = (exported / "README.md").read_text(encoding="utf-8")
    card = DatasetCard.load(exported / "README.md")
    assert card.data.license == "apache-2.0"
    assert {"intbench", *RUNS, "math"} <= set(card.data.tags)
    (config,) = card.data.configs
    pattern = config["data_files"][0]["path"]
    assert config["data_files"][0]["split"] == "train"
    assert sorted(exported.glob(pattern)), f"{pattern} matches no shard"
    for run in RUNS:
        saved = json.dumps(RunDir(FIXTURE / run).config(), indent=2, ensure_ascii=False)
        assert f"### {run}\n" in text and saved in text
    everything = [e for run in RUNS for e in RunDir(FIXTURE / run).episodes()]
    tables = summarize(everything, samples=SAMPLES).tables
    assert {t.name for t in tables} >= {"monitor", "feedback", "tutor"}
    for table in tables:
        assert table.to_markdown() in text, table.name
    for title in (
        "AI Assistants Overassist",
        "What Drives Interactive Improvement from Feedback?",
        "When Models Know More Than They Can Explain",
    ):
        assert title in text


def test_load_dataset_and_load_from_disk_give_the_same_rows_and_types(exported, tmp_path):
    # load_dataset reads the Parquet file through the card's config, as the hub does
    loaded = datasets.load_dataset(str(exported), cache_dir=str(tmp_path / "cache"))
    saved = datasets.load_from_disk(str(exported))
    assert list(loaded) == list(saved) == [export.SPLIT]
    assert loaded[export.SPLIT].features == saved[export.SPLIT].features == export.features()
    assert loaded[export.SPLIT].to_list() == saved[export.SPLIT].to_list()
    assert len(saved[export.SPLIT]) == sum(len(RunDir(FIXTURE / r).episodes()) for r in RUNS)


def test_the_parquet_file_alone_holds_every_row(exported, dataset):
    import pyarrow.parquet as pq

    table = pq.read_table(exported / export.PARQUET_FILE)
    assert table.column_names == list(export.COLUMNS)
    assert table.column("record").to_pylist() == dataset["record"]


def test_the_card_names_the_problem_sources_and_their_licences(exported):
    card = DatasetCard.load(exported / "README.md")
    assert card.data.source_datasets == ["intbench-procedural"]
    assert "## Problem sources and licences" in card.text
    counted = sum(len(RunDir(FIXTURE / r).episodes()) for r in RUNS)
    assert f"| `intbench-procedural` | Apache-2.0 | unknown | {counted} |" in card.text


def test_only_the_papers_of_the_exported_protocols_are_cited(tmp_path):
    out = tmp_path / "feedback-only"
    assert _export(out, runs=[FIXTURE / "feedback"]) == 0
    text = (out / "README.md").read_text(encoding="utf-8")
    assert "What Drives Interactive Improvement from Feedback?" in text
    assert "AI Assistants Overassist" not in text
    assert "When Models Know More" not in text


# ------------------------------------------------------------- runs and their names
def test_same_named_runs_keep_distinct_names_and_a_run_given_twice_is_exported_once(tmp_path):
    for parent in ("a", "b"):
        shutil.copytree(FIXTURE / "monitor", tmp_path / parent / "monitor")
    out = tmp_path / "out"
    runs = [tmp_path / "a" / "monitor", tmp_path / "b", tmp_path / "a" / "monitor"]
    assert _export(out, runs=runs) == 0
    dataset = _load(out)
    assert sorted(set(dataset["run"])) == ["a/monitor", "b/monitor"]
    assert len(dataset) == 8


def test_a_retried_episode_is_exported_once_as_its_latest_record(tmp_path):
    run = tmp_path / "feedback"
    shutil.copytree(FIXTURE / "feedback", run)
    lines = (run / "episodes.jsonl").read_text(encoding="utf-8").splitlines()
    retry = json.loads(lines[0])
    retry["episode_id"] = "retried"
    with (run / "episodes.jsonl").open("a", encoding="utf-8") as handle:
        handle.write(json.dumps(retry) + "\n")
    out = tmp_path / "out"
    assert _export(out, runs=[run]) == 0
    dataset = _load(out)
    assert len(dataset) == 4
    assert "retried" in dataset["episode_id"]
    assert dataset["episode_id"].count("retried") == 1
    assert "1 earlier record(s) replaced by a retry" in (out / "README.md").read_text()


def test_an_existing_empty_out_directory_is_filled(tmp_path):
    out = tmp_path / "empty"
    out.mkdir()
    assert _export(out, runs=[FIXTURE / "tutor"]) == 0
    assert (out / "README.md").is_file() and len(_load(out)) == 4
    assert sorted(p.name for p in tmp_path.iterdir()) == ["empty"]  # no staging folder left


# ------------------------------------------------------------- bad input, before any work
@pytest.fixture
def no_work(monkeypatch):
    """Fails the test if the export starts: bad input must be refused before it."""

    def refuse(*args, **kwargs):
        raise AssertionError("the export started")

    monkeypatch.setattr(export, "read_runs", refuse)
    monkeypatch.setattr(export, "export_runs", refuse)


def test_a_missing_run_is_one_line_exit_2(tmp_path, capsys, no_work):
    out = tmp_path / "out"
    assert _export(out, runs=[FIXTURE / "monitor", tmp_path / "nope"]) == 2
    line = _one_line_error(capsys)
    assert f"{tmp_path / 'nope'}: no such file or directory" in line
    assert not out.exists()


def test_a_folder_without_runs_is_one_line_exit_2(tmp_path, capsys, no_work):
    (tmp_path / "empty").mkdir()
    assert _export(tmp_path / "out", runs=[tmp_path / "empty"]) == 2
    assert "no episodes.jsonl in it or below it" in _one_line_error(capsys)
    assert not (tmp_path / "out").exists()


def test_a_non_empty_out_is_one_line_exit_2_and_left_alone(tmp_path, capsys, no_work):
    out = tmp_path / "out"
    out.mkdir()
    (out / "keep.txt").write_text("mine")
    assert _export(out) == 2
    line = _one_line_error(capsys)
    assert f"--out {out} is not empty" in line and "new or empty directory" in line
    assert [p.name for p in out.iterdir()] == ["keep.txt"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]


def test_an_out_that_is_a_file_is_one_line_exit_2(tmp_path, capsys, no_work):
    out = tmp_path / "out"
    out.write_text("x")
    assert _export(out) == 2
    assert f"--out {out} is a file" in _one_line_error(capsys)


def test_a_run_without_episodes_is_one_line_exit_2(tmp_path, capsys):
    run = tmp_path / "run"
    run.mkdir()
    (run / "episodes.jsonl").write_text("")
    assert _export(tmp_path / "out", runs=[run]) == 2
    assert "no episodes in" in _one_line_error(capsys)
    assert not (tmp_path / "out").exists()


# ------------------------------------------------------------- the hub
@pytest.fixture
def hub(monkeypatch):
    """The two hub calls, faked at huggingface_hub's boundary; records what they were given."""
    calls: list[tuple[str, dict]] = []

    def create_repo(self, repo_id, **kwargs):
        calls.append(("create_repo", {"repo_id": repo_id, **kwargs}))
        return f"https://huggingface.co/datasets/{repo_id}"

    def upload_folder(self, **kwargs):
        folder = Path(kwargs["folder_path"])
        # the folder is complete when it is uploaded; the files huggingface_hub would send
        files = [p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file()]
        sent = filter_repo_objects(files, ignore_patterns=kwargs.get("ignore_patterns"))
        calls.append(("upload_folder", {**kwargs, "files": sorted(sent)}))

    monkeypatch.setenv("HF_TOKEN", "hf_not_a_real_token")
    # The hub counts as reachable whatever the user's environment says: huggingface_hub
    # read HF_HUB_OFFLINE when it was imported, so its constant is set too.
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", False)
    monkeypatch.setattr(HfApi, "create_repo", create_repo)
    monkeypatch.setattr(HfApi, "upload_folder", upload_folder)
    return calls


def test_push_to_hub_uploads_the_folder_to_the_repo(tmp_path, capsys, hub):
    out = tmp_path / "out"
    assert _export(out, "--push-to-hub", REPO, runs=[FIXTURE / "monitor"]) == 0
    (create, kwargs), (upload, upload_kwargs) = hub
    assert create == "create_repo" and kwargs["repo_id"] == REPO
    assert kwargs["repo_type"] == "dataset" and kwargs["exist_ok"] is True
    assert upload == "upload_folder"
    assert upload_kwargs["repo_id"] == REPO and upload_kwargs["repo_type"] == "dataset"
    assert Path(upload_kwargs["folder_path"]) == out
    # the card and the Parquet file; the load_from_disk copy stays local
    assert upload_kwargs["files"] == sorted(["README.md", export.PARQUET_FILE])
    assert f'load_dataset("{REPO}"' in (out / "README.md").read_text(encoding="utf-8")
    assert f"pushed to https://huggingface.co/datasets/{REPO}" in capsys.readouterr().out


def _http_error(status: int) -> HfHubHTTPError:
    response = SimpleNamespace(status_code=status, headers={}, request=None)
    return HfHubHTTPError(
        f"{status} Client Error\n\nmore detail on a second line", response=response
    )


@pytest.mark.parametrize(
    "error, expected",
    [
        (_http_error(401), "hf auth login"),
        (_http_error(403), "no write access"),
        (ConnectionError("Name or service not known"), "could not reach the Hugging Face hub"),
    ],
    ids=["unauthorized", "forbidden", "offline"],
)
def test_a_hub_error_is_one_line_that_names_the_fix(
    tmp_path, capsys, monkeypatch, hub, error, expected
):
    def fail(self, **kwargs):
        raise error

    monkeypatch.setattr(HfApi, "upload_folder", fail)
    out = tmp_path / "out"
    assert _export(out, "--push-to-hub", REPO, runs=[FIXTURE / "tutor"]) == 1
    line = _one_line_error(capsys)
    assert expected in line and REPO in line
    assert f"hf upload {REPO} {out} --repo-type dataset" in line
    assert len(_load(out)) == 4  # the export itself stays


@pytest.mark.parametrize(
    "repo, expected",
    [("not a repo", "is not a hub repo name"), ("a/b/c", "is not a hub repo name")],
)
def test_a_bad_repo_name_is_refused_before_any_work(tmp_path, capsys, hub, no_work, repo, expected):
    out = tmp_path / "out"
    assert _export(out, "--push-to-hub", repo) == 2
    assert expected in _one_line_error(capsys)
    assert not out.exists() and hub == []


def test_a_push_without_a_token_is_refused_before_any_work(
    tmp_path, capsys, hub, no_work, monkeypatch
):
    monkeypatch.setattr(huggingface_hub, "get_token", lambda: None)
    out = tmp_path / "out"
    assert _export(out, "--push-to-hub", REPO) == 2
    line = _one_line_error(capsys)
    assert "hf auth login" in line and "HF_TOKEN" in line
    assert not out.exists() and hub == []


def test_push_to_hub_is_refused_in_offline_mode(tmp_path, capsys, hub, monkeypatch):
    # after the hub fixture, which makes the hub reachable whatever the user's setting
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", True)
    out = tmp_path / "out"
    assert _export(out, "--push-to-hub", REPO, runs=[FIXTURE / "monitor"]) == 2
    assert "HF_HUB_OFFLINE is set; unset it to push" in _one_line_error(capsys)
    assert hub == []
