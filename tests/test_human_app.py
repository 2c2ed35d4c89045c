"""The human-study web app over HTTP (Flask test client): whole sessions, restarts, bad input,
and the session, CSRF, origin and replay rules."""

from __future__ import annotations

import json
import re

import pytest

pytest.importorskip("flask")

from intbench.agents.backends.scripted import ScriptedBackend  # noqa: E402
from intbench.human import Study, StudyConfig  # noqa: E402
from intbench.human.app import CSRF_FIELD, create_app  # noqa: E402
from intbench.human.content import CHECK, MAX_TEXT  # noqa: E402
from intbench.human.storage import StudyMismatchError  # noqa: E402
from intbench.records import Episode, Problem  # noqa: E402
from intbench.report import read_runs  # noqa: E402

WRONG_TRACE = (
    "Let me add the two numbers step by step. " * 4 + "So the final answer is \\boxed{99}."
)
FIXED = "With the hint: the sum is \\boxed{%d}."


def problems(k: int = 5) -> list[Problem]:
    return [
        Problem(
            id=f"h/{i}",
            domain="math",
            question=f"What is {i} + 3?",
            answer=str(i + 3),
            solution=f"{i} + 3 = {i + 3}, so \\boxed{{{i + 3}}}.",
        )
        for i in range(k)
    ]


def student() -> ScriptedBackend:
    """Always wrong alone; right once a teacher's update arrives."""

    def respond(messages):
        text = messages[-1]["content"]
        number = int(re.search(r"What is (\d+) \+ 3", text).group(1))
        return FIXED % (number + 3) if "<update>" in text else WRONG_TRACE

    return ScriptedBackend(respond, spec="scripted:test-human")


@pytest.fixture(autouse=True)
def _cache(tmp_path, monkeypatch):
    monkeypatch.setenv("INTBENCH_CACHE", str(tmp_path / "cache"))


def make_study(out, condition="standard", trials=3, **kwargs) -> Study:
    config = StudyConfig(
        env_id="IntBench-Math-v0",
        condition=condition,
        problems=problems(),
        student=student(),
        trials=trials,
        **kwargs,
    )
    return Study(config, out)


@pytest.fixture
def study(tmp_path):
    s = make_study(tmp_path / "study")
    yield s
    s.close()


CSRF_INPUT = re.compile(rf'name="{CSRF_FIELD}" value="([^"]*)"')
PARTICIPANT_URL = re.compile(r"/p/([^/]+)/")


def participant_of(url: str) -> str | None:
    match = PARTICIPANT_URL.search(url)
    return match.group(1) if match else None


class Browser:
    """A test client that, like a browser, keeps its cookies and sends each form back with
    the CSRF token of the last page it got for that participant (or of the start page)."""

    def __init__(self, study: Study):
        self.client = create_app(study).test_client()
        self.tokens: dict[str | None, str] = {}

    def restart_server(self, study: Study) -> None:
        """The same browser, cookies included, talking to a restarted server."""
        self.client.application = create_app(study)

    def get(self, url: str, **kwargs):
        response = self.client.get(url, **kwargs)
        self._remember_token(url, response)
        return response

    def post(self, url: str, data: dict | None = None, **kwargs):
        form = {CSRF_FIELD: self.tokens.get(participant_of(url), ""), **(data or {})}
        response = self.client.post(url, data=form, **kwargs)
        self._remember_token(url, response)
        return response

    def _remember_token(self, url: str, response) -> None:
        match = CSRF_INPUT.search(response.get_data(as_text=True))
        if match:
            self.tokens[participant_of(url)] = match.group(1)


def client_of(study: Study) -> Browser:
    return Browser(study)


def begin(client: Browser, pid="alice") -> str:
    response = client.get(f"/?PROLIFIC_PID={pid}")
    assert response.status_code == 302 and response.location.endswith(f"/p/{pid}/")
    page(client, f"/p/{pid}/")
    return f"/p/{pid}/"


def trial_id(page: str) -> str:
    return re.search(r"/trial/([^/]+)/", page).group(1)


def page(client, base) -> str:
    response = client.get(base)
    assert response.status_code == 200, response.text
    return response.get_data(as_text=True)


def pass_check(client, base, condition="standard") -> None:
    answers = {qid: correct for qid, (_, _, correct) in CHECK[condition].items()}
    assert client.post(base + "check", data=answers).status_code == 303


def answer_standard(client, base, reveals: int, message: str | None) -> str:
    """Play the current Standard trial: confirm, reveal ``reveals`` times, then decide."""
    tid = trial_id(page(client, base))
    assert client.post(f"{base}trial/{tid}/confirm").status_code == 303
    for cursor in range(reveals):
        assert client.post(f"{base}trial/{tid}/reveal", data={"cursor": cursor}).status_code == 303
    form = {
        "cursor": reveals,
        "action": "intervene" if message else "none",
        "message": message or "",
    }
    response = client.post(f"{base}trial/{tid}/submit", data=form)
    assert response.status_code == 303, response.text
    return tid


def records(study: Study) -> list[dict]:
    path = study.store.dir / "episodes.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def test_whole_standard_session_writes_valid_episodes(study):
    client = client_of(study)
    base = begin(client)
    assert "Instructions" in page(client, base)
    client.post(base + "instructions")
    n_cuts = len(study.views["h/0"].cuts)
    answer_standard(client, base, 0, "practice hint")  # practice 1
    answer_standard(client, base, n_cuts - 1, None)  # practice 2: move on at the end
    assert not records(study)  # practice is not recorded
    wrong = client.post(base + "check", data={"reveal": "end"})
    assert "not right yet" in wrong.get_data(as_text=True)
    pass_check(client, base)
    assert "Question 1 of 3" in page(client, base)
    answer_standard(client, base, 2, "Check the last addition.")
    answer_standard(client, base, n_cuts - 1, None)
    answer_standard(client, base, n_cuts - 1, "Nice work, but recheck.")  # feedback at the end
    assert "A few questions about you" in page(client, base)
    form = {
        "teaching": "tutor",
        "parent": "no",
        "ai_use": "daily",
        "strategy": "waited",
        "comments": "",
    }
    assert client.post(base + "questionnaire", data=form).status_code == 303
    assert "Thank you" in page(client, base)
    study.worker.wait_idle()

    written = records(study)
    for record in written:
        Episode.from_dict(record)
    assert {r["teacher"] for r in written} == {"human:alice"}
    # two interventions: pending record, then the completed one; the move-on trial is final at once
    assert [r["metadata"]["human"]["continuation"] for r in written].count("pending") == 2
    latest = read_runs([study.store.dir]).episodes
    assert len(latest) == 3 and not any(r.error for r in latest)
    by_kind = {r.metadata["human"]["continuation"]: r for r in latest}
    assert set(by_kind) == {"done", "none"}
    helped = [r for r in latest if r.intervention]
    assert len(helped) == 2
    early = min(helped, key=lambda r: r.intervention.tau_rel)
    assert early.intervention.tau_abs == study.views[early.problem_id].cuts[2]
    assert early.intervention.attempt.status == "correct"
    assert early.reward_components  # scored by the env
    assert max(r.intervention.tau_rel for r in helped) == 1.0
    assert early.timings["teacher_s"] >= 0 and "reading_s" in early.timings
    assert len(early.metadata["human"]["reveal_times"]) == 2
    questionnaire = json.loads((study.store.dir / "participants.jsonl").read_text())
    assert questionnaire["teaching"] == "tutor" and questionnaire["check_attempts"] == 2


def test_whole_oracle_session_records_clicked_position(tmp_path):
    study = make_study(tmp_path / "oracle", condition="oracle", trials=2)
    try:
        client = client_of(study)
        base = begin(client, "bob")
        client.post(base + "instructions")
        for _ in range(2):
            tid = trial_id(page(client, base))
            client.post(f"{base}trial/{tid}/submit", data={"action": "none"})
        pass_check(client, base, "oracle")
        text = page(client, base)
        assert "incorrect" in text and "99" in text  # whole trace, answer and verdict
        tid = trial_id(text)
        client.post(
            f"{base}trial/{tid}/submit",
            data={"action": "intervene", "message": "Recheck.", "position": "40"},
        )
        tid = trial_id(page(client, base))
        client.post(f"{base}trial/{tid}/submit", data={"action": "none"})
        study.worker.wait_idle()
        latest = read_runs([study.store.dir]).episodes
        helped = next(r for r in latest if r.intervention)
        assert helped.condition == "oracle" and helped.intervention.tau_abs == 40
        assert helped.intervention.attempt.status == "correct"
        assert sum(1 for r in latest if not r.intervention) == 1
    finally:
        study.close()


def test_restart_resumes_and_completes_pending_continuations(tmp_path):
    out = tmp_path / "study"
    first = make_study(out)
    client = client_of(first)
    base = begin(client)
    client.post(base + "instructions")
    answer_standard(client, base, 0, "p")
    answer_standard(client, base, 0, "p")
    pass_check(client, base)
    first.worker.stop()  # the server dies before the continuation runs
    tid = answer_standard(client, base, 1, "Look again.")
    second_tid = trial_id(page(client, base))
    client.post(f"{base}trial/{second_tid}/confirm")
    client.post(f"{base}trial/{second_tid}/reveal", data={"cursor": 0})
    assert [r["metadata"]["human"]["continuation"] for r in records(first)] == ["pending"]

    restarted = make_study(out)
    try:
        restarted.worker.wait_idle()
        latest = read_runs([out]).episodes
        assert len(latest) == 1 and latest[0].metadata["human"]["continuation"] == "done"
        assert latest[0].metadata["run_key"] == tid
        assert client_of(restarted).get(base).status_code == 403  # another browser
        client.restart_server(restarted)  # the participant's session survives the restart
        text = page(client, base)
        assert trial_id(text) == second_tid and "Question 2 of 3" in text
        view = restarted.views[restarted.store.load_participant("alice")["trials"][1]["problem_id"]]
        assert f'id="trace">{view.trace[: view.cuts[1]]}<' in text.replace("&#39;", "'")
    finally:
        restarted.close()


def test_kill_between_record_and_state_save_does_not_repeat_the_trial(study):
    client = client_of(study)
    base = begin(client)
    client.post(base + "instructions")
    answer_standard(client, base, 0, "p")
    answer_standard(client, base, 0, "p")
    pass_check(client, base)
    before = study.store.load_participant("alice")
    answer_standard(client, base, 0, "hint")
    study.store.save_participant(before)  # as if the process died before saving the state
    assert "Question 2 of 3" in page(client, base)
    assert len(read_runs([study.store.dir]).episodes) == 1


def test_bad_input_is_refused_and_nothing_is_written(study):
    client = client_of(study)
    base = begin(client)
    client.post(base + "instructions")
    text = page(client, base)
    tid = trial_id(text)
    client.post(f"{base}trial/{tid}/confirm")
    # practice trial: empty and overlong messages come back with the text kept
    empty = client.post(
        f"{base}trial/{tid}/submit", data={"cursor": 0, "action": "intervene", "message": "   "}
    )
    assert empty.status_code == 400 and "empty" in empty.get_data(as_text=True)
    huge = client.post(
        f"{base}trial/{tid}/submit",
        data={"cursor": 0, "action": "intervene", "message": "x" * (MAX_TEXT + 1)},
    )
    assert huge.status_code == 400 and "limit is 4,000" in huge.get_data(as_text=True)
    too_big = client.post(
        f"{base}trial/{tid}/submit",
        data={"cursor": 0, "action": "intervene", "message": "x" * 100_000},
    )
    assert too_big.status_code == 413
    early = client.post(f"{base}trial/{tid}/submit", data={"cursor": 0, "action": "none"})
    assert early.status_code == 400
    assert (
        client.post(f"{base}trial/{tid}/submit", data={"cursor": 0, "action": "bogus"}).status_code
        == 400
    )
    stale = client.post(
        f"{base}trial/{tid}/submit", data={"cursor": 5, "action": "intervene", "message": "hi"}
    )
    assert stale.status_code == 409
    # a double click on "reveal more" reveals one increment
    client.post(f"{base}trial/{tid}/reveal", data={"cursor": 0})
    client.post(f"{base}trial/{tid}/reveal", data={"cursor": 0})
    assert study.store.load_participant("alice")["practice"][0]["cursor"] == 1
    # tampered ids
    assert client.post(f"{base}trial/nope/submit", data={"action": "none"}).status_code == 404
    future = study.store.load_participant("alice")["trials"][0]["trial_id"]
    assert client.post(f"{base}trial/{future}/submit", data={"action": "none"}).status_code == 409
    assert client.post(f"{base}trial/{tid}/explode").status_code == 404
    assert client.get("/p/nobody/").status_code == 404
    assert client.get("/p/bad%20id!/").status_code == 400
    assert client.get("/?PROLIFIC_PID=" + "x" * 65).status_code == 400
    other = begin(client, "eve")
    assert client.post(f"{other}trial/{tid}/submit", data={"action": "none"}).status_code == 404
    # the questionnaire cannot be sent early
    assert client.post(base + "questionnaire", data={}).status_code == 409
    assert study.store.load_participant("alice")["practice"][0]["submitted"] is False


def test_double_submission_writes_one_record(study):
    client = client_of(study)
    base = begin(client)
    client.post(base + "instructions")
    answer_standard(client, base, 0, "p")
    answer_standard(client, base, 0, "p")
    pass_check(client, base)
    tid = trial_id(page(client, base))
    client.post(f"{base}trial/{tid}/confirm")
    form = {"cursor": 0, "action": "intervene", "message": "hint"}
    assert client.post(f"{base}trial/{tid}/submit", data=form).status_code == 303
    replay = client.post(f"{base}trial/{tid}/submit", data=form)
    assert replay.status_code == 409 and "already submitted" in replay.get_data(as_text=True)
    assert f'href="{base}"' in replay.get_data(as_text=True)  # a way back to the current question
    study.worker.wait_idle()
    written = records(study)
    assert [r["metadata"]["human"]["continuation"] for r in written] == ["pending", "done"]
    assert len({r["episode_id"] for r in written}) == 1


def test_oracle_position_is_validated(tmp_path):
    study = make_study(tmp_path / "o", condition="oracle", practice=0, trials=1)
    try:
        client = client_of(study)
        base = begin(client)
        client.post(base + "instructions")
        pass_check(client, base, "oracle")
        tid = trial_id(page(client, base))
        for position in ("", "-1", "abc", str(len(WRONG_TRACE) + 1)):
            form = {"action": "intervene", "message": "hi", "position": position}
            assert client.post(f"{base}trial/{tid}/submit", data=form).status_code == 400
        assert not records(study)
    finally:
        study.close()


def test_random_ids_and_reload_resume(study):
    client = client_of(study)
    assert client.post("/start").status_code == 403  # no start page, so no token
    client.get("/")
    response = client.post("/start")
    base = response.location
    page(client, base)
    assert re.search(r"/p/p[0-9a-f]{16}/$", base)
    client.post(base + "instructions")
    tid = trial_id(page(client, base))
    client.post(f"{base}trial/{tid}/confirm")
    client.post(f"{base}trial/{tid}/reveal", data={"cursor": 0})
    again = page(client, base)  # a reload shows the same trial with the same text revealed
    assert trial_id(again) == tid and "Reveal more" in again
    assert study.store.load_participant(base.split("/")[2])["practice"][0]["cursor"] == 1


def test_another_study_in_the_same_directory_is_refused(tmp_path):
    make_study(tmp_path / "s").close()
    with pytest.raises(StudyMismatchError, match="trials"):
        make_study(tmp_path / "s", trials=2)


def test_bad_study_settings_are_refused(tmp_path):
    with pytest.raises(ValueError, match="monitor env"):
        StudyConfig(env_id="IntBench-Math-Feedback-v0", condition="standard", problems=problems())
    with pytest.raises(ValueError, match="condition"):
        StudyConfig(env_id="IntBench-Math-v0", condition="sometimes", problems=problems())
    with pytest.raises(ValueError, match="practice"):
        StudyConfig(env_id="IntBench-Math-v0", condition="oracle", problems=problems(2), practice=2)
