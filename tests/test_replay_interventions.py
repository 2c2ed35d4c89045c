"""Stop-and-Answer on the Standard run's interventions (Int-Bench §3.3, App. A.2).

The paper's Stop-and-Answer episodes are the Standard episodes where the
Standard teacher intervened, with the same message at the same place; only
what the student does after it changes.  ``intbench eval --post stop
--replay-interventions RUN_DIR`` replays them instead of asking a teacher again.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from intbench.cli import main
from intbench.metrics.monitor import helpfulness
from intbench.runner import RunConfig, load_run, run_eval
from tests.scripted_students import _fixture_answers

MODULE = "scripted:tests.test_replay_interventions"
STUDENT = f"{MODULE}:student"
TEACHER = f"{MODULE}:hinting_teacher"
ENV = "IntBench-Math-v0"
TRACE = "We add the two numbers one digit at a time, carrying when needed. " * 3

TEACHER_CALLS = {"n": 0}
STOP_SENTENCE = "provide your final answer immediately"


def student(messages):
    """Wrong alone; right when it may keep reasoning after help; still wrong when it
    must answer at once (so Continue and Stop differ on the same messages)."""
    last = messages[-1]["content"]
    if "<update>" not in last:
        return TRACE + "So \\boxed{0}."
    if STOP_SENTENCE in last:
        return "\\boxed{0}"
    question = messages[1]["content"]
    answer = next(a for q, (_, a) in _fixture_answers().items() if q in question)
    return f"Now I see it. \\boxed{{{answer}}}"


def hinting_teacher(messages):
    """A teacher whose messages cannot be drawn again: each names its call number.

    It helps on the even-numbered problems once two sentences are shown.
    """
    TEACHER_CALLS["n"] += 1
    call = TEACHER_CALLS["n"]
    prompt = messages[-1]["content"]
    index = next(i for q, (i, _) in _fixture_answers().items() if q in prompt)
    if prompt.count("carrying when needed") >= 2 and index % 2 == 0:
        return f"Intervene: Yes\nTime: now\nIntervention: Hint number {call}: recheck the carry."
    return "Intervene: No\nTime: N/A\nIntervention: N/A"


def eval_args(out: Path, *extra: str) -> list[str]:
    return [
        "eval", "--env", ENV, "--student", STUDENT, "-n", "4", "--repeats", "2",
        "--seed", "0", "--concurrency", "1", "--out", str(out), "--no-progress", *extra,
    ]  # fmt: skip


@pytest.fixture(scope="module")
def standard_run(tmp_path_factory):
    """A Standard-Continue run of the hinting teacher: 4 problems x 2 repeats."""
    root = tmp_path_factory.mktemp("replay")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("INTBENCH_CACHE", str(root / "cache"))
        config = RunConfig(
            env_id=ENV, teacher=TEACHER, student=STUDENT, n=4, repeats=2, seed=0
        )  # fmt: skip
        run_eval(config, root / "standard", concurrency=1, progress=False)
    return root


@pytest.fixture()
def cache(standard_run, monkeypatch):
    monkeypatch.setenv("INTBENCH_CACHE", str(standard_run / "cache"))
    return standard_run


def by_key(records: list[dict]) -> dict[str, dict]:
    return {r["metadata"]["run_key"]: r for r in records}


def test_stop_and_answer_replays_the_standard_interventions(cache, capsys):
    standard = by_key(load_run(cache / "standard"))
    intervened = {k for k, r in standard.items() if r["intervention"]}
    assert len(standard) == 8 and 0 < len(intervened) < 8  # both kinds of episode

    calls = TEACHER_CALLS["n"]
    stop_dir = cache / "stop"
    args = eval_args(stop_dir, "--post", "stop", "--replay-interventions", str(cache / "standard"))
    assert main(args) == 0, capsys.readouterr().err
    assert TEACHER_CALLS["n"] == calls  # no teacher was asked

    stop = by_key(load_run(stop_dir))
    assert set(stop) == set(standard)
    for key, record in stop.items():
        source = standard[key]
        assert record["teacher"] == TEACHER  # grouped with the run it replays
        assert record["metadata"]["replayed_from"]["episode_id"] == source["episode_id"]
        assert record["baseline"]["text"] == source["baseline"]["text"]
        if key not in intervened:
            assert record["intervention"] is None
            continue
        mine, theirs = record["intervention"], source["intervention"]
        assert (mine["position"], mine["message"]) == (theirs["position"], theirs["message"])
        assert mine["post"] == "stop" and theirs["post"] == "continue"
        assert mine["message"].startswith("Hint number ")

    # H over the same interventions, by hand: every baseline is wrong; after the
    # message the student is right when it continues and wrong when it must stop.
    assert [standard[k]["baseline"]["verdict"]["status"] for k in intervened] == [
        "incorrect"
    ] * len(intervened)
    assert helpfulness(list(standard.values())) == pytest.approx(1.0)  # (1 - 0) each
    assert helpfulness(list(stop.values())) == pytest.approx(0.0)  # (0 - 0) each

    saved = json.loads((stop_dir / "config.json").read_text())
    assert saved["replay_interventions"] == str((cache / "standard").resolve())
    assert saved["teacher"] == TEACHER and saved["env_options"] == {"post": "stop"}

    # a resume with the same command finds the same configuration
    assert main(args) == 0


def _fake_run(root: Path, name: str, **changes) -> Path:
    """A copy of the Standard run's config (and files) with some fields changed."""
    source = root / "standard"
    out = root / name
    out.mkdir()
    config = json.loads((source / "config.json").read_text())
    options = changes.pop("env_options", None)
    if options is not None:
        config["env_options"] = options
    config.update(changes)
    (out / "config.json").write_text(json.dumps(config))
    for file in ("problems.jsonl", "episodes.jsonl"):
        (out / file).write_text((source / file).read_text())
    return out


def _truncated(root: Path) -> Path:
    out = _fake_run(root, "unfinished")
    lines = (out / "episodes.jsonl").read_text().splitlines()
    (out / "episodes.jsonl").write_text("\n".join(lines[:-1]) + "\n")
    return out


BAD_REPLAYS = {
    "no run": (lambda root: root / "nowhere", (), "is not a run directory"),
    "oracle run": (
        lambda root: _fake_run(root, "oracle", env_options={"condition": "oracle"}),
        (),
        "replay a Standard run",
    ),
    "feedback run": (
        lambda root: _fake_run(root, "feedback", env_id="IntBench-Math-Feedback-v0"),
        (),
        "is not a monitor run",
    ),
    "other student": (
        lambda root: _fake_run(root, "other_student", student="scripted:text=\\boxed{1}"),
        (),
        "a replay needs the same env, student and problems",
    ),
    "other problems": (
        lambda root: _fake_run(root, "other_seed", seed=5),
        (),
        "ran seed=5, this run seed=0",
    ),
    "other increment": (
        lambda root: root / "standard",
        ("--increment", "20"),
        "only post, reward may differ",
    ),
    "other teacher": (
        lambda root: root / "standard",
        ("--teacher", "always"),
        "leave --teacher out",
    ),
    "oracle replay": (
        lambda root: root / "standard",
        ("--condition", "oracle"),
        "need the standard condition",
    ),
    "unfinished run": (_truncated, (), "has no finished episode for 1 of the 8"),
}


@pytest.mark.parametrize("name", sorted(BAD_REPLAYS))
def test_a_replay_that_cannot_work_fails_at_start_in_one_line(name, cache, capsys):
    make_source, extra, expected = BAD_REPLAYS[name]
    source = make_source(cache)
    out = cache / f"refused_{name.replace(' ', '_')}"
    args = eval_args(out, "--post", "stop", "--replay-interventions", str(source), *extra)
    assert main(args) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: --replay-interventions: ")
    assert expected in err[0], err
    assert not (out / "config.json").exists()  # checked before anything loads or is written


def test_teacher_is_required_without_a_replay(tmp_path, capsys):
    assert main(eval_args(tmp_path / "run")) == 2
    assert "--teacher is required" in capsys.readouterr().err
