"""The human-study web app over HTTP (Flask test client): whole sessions, restarts, bad input,
and the session, CSRF, origin and replay rules."""

from __future__ import annotations

import hashlib
import json
import re

import pytest

pytest.importorskip("flask")

from intbench.agents.backends.scripted import ScriptedBackend  # noqa: E402
from intbench.human import Study, StudyConfig  # noqa: E402
from intbench.human.app import CSRF_FIELD, SESSION_COOKIE, create_app  # noqa: E402
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
        # The continuation puts the problem in an earlier turn and the update last.
        text = "\n".join(m["content"] for m in messages)
        number = int(re.search(r"What is (\d+) \+ 3", text).group(1))
        return FIXED % (number + 3) if "<update>" in messages[-1]["content"] else WRONG_TRACE

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
    # Int-Bench App. B.2: teaching years, parent or guardian (children's ages), AI tools
    # used during the experiment (how); a "yes" needs its follow-up answered
    form = {
        "teaching_years": "under_1",
        "parent": "yes",
        "children_ages": "",
        "ai_during": "yes",
        "ai_how": "",
        "strategy": "waited",
        "comments": "",
    }
    missing = client.post(base + "questionnaire", data=form)
    assert missing.status_code == 400
    assert "age ranges of your children" in missing.text and "how did you use them" in missing.text
    form |= {"children_ages": "6-12", "ai_how": "asked a chatbot to check a sum"}
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
    # the admin counts: alice's 3 questions assigned and annotated once each
    counts = [(r["assigned"], r["annotated"]) for r in study.question_counts()]
    assert sorted(counts, reverse=True)[:3] == [(1, 1)] * 3 and sum(a for a, _ in counts) == 3
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
    assert questionnaire["teaching_years"] == "under_1" and questionnaire["check_attempts"] == 2
    assert (questionnaire["parent"], questionnaire["children_ages"]) == ("yes", "6-12")
    assert questionnaire["ai_how"] == "asked a chatbot to check a sum"


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


def reach_first_scored_trial(client: Browser, base: str) -> str:
    client.post(base + "instructions")
    answer_standard(client, base, 0, "p")
    answer_standard(client, base, 0, "p")
    pass_check(client, base)
    return trial_id(page(client, base))


def participant_file(study: Study, pid="alice") -> bytes:
    return (study.store.dir / "participants" / f"{pid}.json").read_bytes()


FORGED = {"cursor": 0, "action": "intervene", "message": "Not the participant's words."}


def test_cross_origin_posts_are_refused_and_change_nothing(study):
    client = client_of(study)
    base = begin(client)
    tid = reach_first_scored_trial(client, base)
    client.get("/")  # a valid start-page token, so only the origin is wrong
    before = participant_file(study)
    foreign = (
        {"Origin": "http://evil.example"},
        {"Origin": "null"},
        {"Referer": "http://evil.example/x"},
    )
    for headers in foreign:
        for url in (f"{base}trial/{tid}/confirm", f"{base}trial/{tid}/submit", "/start"):
            response = client.post(url, data=FORGED, headers=headers)
            assert response.status_code == 403, (url, headers)
            assert "another website" in response.get_data(as_text=True)
    assert participant_file(study) == before and not records(study)
    assert len(list((study.store.dir / "participants").iterdir())) == 1
    own = {"Origin": "http://localhost"}
    assert client.post(f"{base}trial/{tid}/confirm", headers=own).status_code == 303


def test_requests_without_the_participants_session_are_refused(study):
    alice = client_of(study)
    base = begin(alice)
    tid = reach_first_scored_trial(alice, base)
    before = participant_file(study)
    attacker = client_of(study)  # knows the id and even the page's CSRF token, not the cookie
    attacker.tokens["alice"] = alice.tokens["alice"]
    for cookie in (None, "a-guessed-token"):
        if cookie:
            attacker.client.set_cookie(SESSION_COOKIE, cookie, path=base)
        for headers in ({}, {"Origin": "http://evil.example"}):
            for action in ("confirm", "submit"):
                response = attacker.post(
                    f"{base}trial/{tid}/{action}", data=FORGED, headers=headers
                )
                assert response.status_code == 403
        refused = attacker.get(base)
        assert refused.status_code == 403 and "another browser" in refused.get_data(as_text=True)
    assert participant_file(study) == before and not records(study)


def test_posts_without_or_with_a_wrong_csrf_token_are_refused(study):
    client = client_of(study)
    base = begin(client)
    tid = reach_first_scored_trial(client, base)
    begin(client, "eve")  # another participant's token, from the same browser
    before = participant_file(study)
    for action in ("confirm", "submit"):
        url = f"{base}trial/{tid}/{action}"
        assert client.client.post(url, data=FORGED).status_code == 403  # no token at all
        for token in ("", "0" * 64, client.tokens["eve"]):
            response = client.post(url, data={**FORGED, CSRF_FIELD: token})
            assert response.status_code == 403 and "out of date" in response.get_data(as_text=True)
    assert participant_file(study) == before and not records(study)


def test_replayed_submits_are_refused(study):
    client = client_of(study)
    base = begin(client)
    client.post(base + "instructions")
    tid = trial_id(page(client, base))
    client.post(f"{base}trial/{tid}/confirm")
    practice = {"cursor": 0, "action": "intervene", "message": "first"}
    assert client.post(f"{base}trial/{tid}/submit", data=practice).status_code == 303
    before = participant_file(study)
    replay = client.post(f"{base}trial/{tid}/submit", data={**practice, "message": "second"})
    assert replay.status_code == 409 and participant_file(study) == before
    assert study.store.load_participant("alice")["practice"][0]["decision"]["action"][
        "message"
    ] == ("first")


def test_an_old_csrf_token_is_refused_once_the_session_changed(study):
    old = client_of(study)
    base = begin(old)
    old_token = old.tokens["alice"]
    # The researcher releases the session (the participant moves to another browser).
    state = study.store.load_participant("alice")
    state["session"] = None
    study.store.save_participant(state)
    new = client_of(study)
    begin(new)
    assert new.tokens["alice"] != old_token
    before = participant_file(study)
    assert old.post(base + "instructions").status_code == 403  # the old cookie
    assert new.post(base + "instructions", data={CSRF_FIELD: old_token}).status_code == 403
    assert participant_file(study) == before
    assert new.post(base + "instructions").status_code == 303


def test_gets_change_nothing_and_the_page_reports_when_a_trial_is_shown(study):
    client = client_of(study)
    base = begin(client)
    before = participant_file(study)
    page(client, base)
    page(client, base)
    assert participant_file(study) == before
    client.post(base + "instructions")
    before = participant_file(study)
    text = page(client, base)
    page(client, base)
    assert participant_file(study) == before
    tid = trial_id(text)
    assert f'action="{base}trial/{tid}/shown"' in text and "shown.js" in text
    assert client.post(f"{base}trial/{tid}/shown").status_code == 204
    first = study.store.load_participant("alice")["practice"][0]
    assert first["shown_at"] is not None
    assert client.post(f"{base}trial/{tid}/shown").status_code == 204  # a reload's report
    assert study.store.load_participant("alice")["practice"][0] == first
    second = study.store.load_participant("alice")["practice"][1]["trial_id"]
    assert client.post(f"{base}trial/{second}/shown").status_code == 409  # not shown yet
    # Without the page's report (no JavaScript), the first action starts the clock.
    answer_standard(client, base, 0, "p")
    client.post(f"{base}trial/{second}/confirm")
    trial = study.store.load_participant("alice")["practice"][1]
    assert trial["shown_at"] == trial["confirmed_at"] is not None
    assert client.post(f"{base}trial/{tid}/shown").status_code == 204  # submitted: ignored


def test_a_platform_id_opens_the_session_once(study):
    first = client_of(study)
    response = first.get("/?PROLIFIC_PID=bob")
    cookie = response.headers["Set-Cookie"]
    assert all(part in cookie for part in ("HttpOnly", "SameSite=Lax", "Path=/p/bob/"))
    token = first.client.get_cookie(SESSION_COOKIE, path="/p/bob/").value
    saved = participant_file(study, "bob").decode()
    assert len(token) >= 43 and token not in saved  # only its digest is stored
    digest = hashlib.sha256(token.encode()).hexdigest()
    assert json.loads(saved)["session"]["token_sha256"] == digest
    again = first.get("/?PROLIFIC_PID=bob")  # the platform's link, opened again
    assert again.status_code == 302 and "Set-Cookie" not in again.headers
    assert "Instructions" in page(first, "/p/bob/")
    second = client_of(study)
    refused = second.get("/?PROLIFIC_PID=bob", follow_redirects=True)
    assert refused.status_code == 403 and "another browser" in refused.get_data(as_text=True)
    assert second.client.get_cookie(SESSION_COOKIE, path="/p/bob/") is None
    assert participant_file(study, "bob").decode() == saved
    assert "Instructions" in page(first, "/p/bob/")


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


def test_admin_view_shows_balanced_question_counts(tmp_path):
    # Int-Bench App. A: each question gets the same number of annotations.  5 questions,
    # 2 scored trials each: participants 0, 1, 2 take slots 0-5, so one question is
    # assigned twice and the others once; the admin view shows the counts.
    study = make_study(tmp_path / "s", trials=2, practice=0)
    try:
        for pid in ("ann", "ben", "cat"):
            study.start(pid, "test")
        client = create_app(study, admin_token="secret-token").test_client()
        assert client.get("/admin/wrong").status_code == 404
        assert create_app(study).test_client().get("/admin/secret-token").status_code == 404
        response = client.get("/admin/secret-token")
        assert response.status_code == 200
        text = response.get_data(as_text=True)
        assigned = sorted(row["assigned"] for row in study.question_counts())
        assert assigned == [1, 1, 1, 1, 2] and "3 participant(s) enrolled" in text
        rows = re.findall(r"<tr><td>(h/\d)</td><td>(\d+)</td><td>(\d+)</td></tr>", text)
        assert sorted(int(a) for _, a, _ in rows) == assigned
        assert all(annotated == "0" for _, _, annotated in rows)
    finally:
        study.close()
