"""The human-study web app in headless Chromium: whole sessions as a participant clicks them.

The server runs as a real ``intbench serve`` subprocess, so the Standard
session can SIGKILL it mid-trial and restart it.  A screenshot of every
screen goes to a directory printed by the test (``-s`` shows it); set
``INTBENCH_SCREENS_DIR`` to also copy them somewhere.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

pytest.importorskip("flask")
pytest.importorskip("waitress")
sync_api = pytest.importorskip(
    "playwright.sync_api", reason="the playwright Python package is not installed"
)

from intbench.report import generate_report, read_runs  # noqa: E402

CHROMIUM = Path("/usr/bin/chromium")
if not CHROMIUM.exists():
    pytest.skip(f"{CHROMIUM} is not installed (apt-get install chromium)", allow_module_level=True)

CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
TRACE = (
    "We need the value asked for. First I write down what is given in the question. "
    "Then I compute the intermediate quantity, being careful with each step of the arithmetic. "
    "Checking the arithmetic once more, everything seems consistent. So the final answer is \\boxed{12345}."
)
TESTS_DIR = Path(__file__).parent
LAUNCH = (
    "import argparse, sys; from intbench.commands import serve; "
    "p = argparse.ArgumentParser(); serve.add_parser(p.add_subparsers()); "
    "a = p.parse_args(sys.argv[1:]); sys.exit(a.func(a))"
)


def respond(messages) -> str:
    """The scripted student: a fixed wrong trace, and a short continuation after a teacher's update."""
    return "Thanks, fixing it: \\boxed{6}." if "<update>" in messages[-1]["content"] else TRACE


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class Server:
    """``intbench serve`` in a subprocess that can be killed and restarted."""

    def __init__(self, out: Path, condition: str, cache: Path):
        self.out, self.port = out, free_port()
        self.args = [
            "serve", "--env", "IntBench-Math-v0", "--condition", condition, "-n", "4", "--practice", "2",
            "--trials", "2", "--student", "scripted:test_human_browser:respond", "--out", str(out),
            "--port", str(self.port), "--completion-code", "C0DE42",
        ]  # fmt: skip
        self.env = {
            **os.environ,
            "INTBENCH_CACHE": str(cache),
            "PYTHONPATH": f"{TESTS_DIR}{os.pathsep}{os.environ.get('PYTHONPATH', '')}",
        }
        self.process: subprocess.Popen | None = None
        self.url = f"http://127.0.0.1:{self.port}"

    def start(self) -> None:
        log = open(self.out.parent / f"server-{self.port}.log", "a")
        self.process = subprocess.Popen(
            [sys.executable, "-c", LAUNCH, *self.args], env=self.env, stdout=log, stderr=log
        )
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(
                    f"server exited: {(self.out.parent / f'server-{self.port}.log').read_text()}"
                )
            try:
                urllib.request.urlopen(self.url + "/", timeout=2)
                return
            except OSError:
                time.sleep(0.3)
        raise TimeoutError("the server did not come up")

    def kill(self) -> None:
        self.process.send_signal(signal.SIGKILL)
        self.process.wait(timeout=10)

    def stop(self) -> None:
        if self.process and self.process.poll() is None:
            self.process.terminate()
            self.process.wait(timeout=10)


class Screens:
    def __init__(self, page, directory: Path, prefix: str):
        self.page, self.dir, self.prefix, self.count = page, directory, prefix, 0
        directory.mkdir(parents=True, exist_ok=True)

    def shot(self, name: str) -> None:
        self.count += 1
        self.page.screenshot(
            path=str(self.dir / f"{self.prefix}_{self.count:02d}_{name}.png"), full_page=True
        )


@pytest.fixture
def browser(tmp_path):
    with sync_api.sync_playwright() as playwright:
        instance = playwright.chromium.launch(
            executable_path=str(CHROMIUM), headless=True, args=CHROMIUM_ARGS
        )
        context = instance.new_context(viewport={"width": 1000, "height": 800})
        yield context.new_page()
        context.close()
        instance.close()


@pytest.fixture
def screens_dir(tmp_path):
    directory = tmp_path / "screens"
    yield directory
    print(f"\nscreenshots: {directory}")
    target = os.environ.get("INTBENCH_SCREENS_DIR")
    if target and directory.exists():
        shutil.copytree(directory, target, dirs_exist_ok=True)


def wait_for_completed(out: Path, expected: int) -> list[dict]:
    """The latest records once every background continuation has finished."""
    deadline = time.monotonic() + 60
    while True:
        latest = read_runs([out]).episodes
        states = [r.metadata["human"]["continuation"] for r in latest]
        if len(latest) == expected and "pending" not in states:
            return latest
        if time.monotonic() > deadline:
            raise TimeoutError(f"continuations did not finish: {states}")
        time.sleep(0.3)


def submit(page, button: str) -> None:
    """Click a button that posts its form, and wait for the page the server answers with
    (reading the page before it arrives would read the previous one)."""
    with page.expect_navigation():
        page.click(button)


def practice_check_and_instructions(page, shots: Screens, condition: str) -> None:
    shots.shot("instructions")
    submit(page, "#continue")
    if condition == "standard":
        shots.shot("practice_reading")
        submit(page, "#confirm-read")
        shots.shot("practice_trace")
        submit(page, "#reveal")
        page.fill("#message", "Practice message.")
        submit(page, "#intervene")
        submit(page, "#confirm-read")
        while page.locator("#reveal").count():
            submit(page, "#reveal")
        shots.shot("practice_trace_end")
        submit(page, "#move-on")
    else:
        shots.shot("practice_oracle")
        submit(page, "#no-intervention")
        submit(page, "#no-intervention")
    shots.shot("check")
    page.check("#check-messages input[value=many]")
    for fieldset in page.locator("fieldset").all():
        if not fieldset.locator("input:checked").count():
            fieldset.locator("input").first.check()
    submit(page, "#check-submit")
    if page.locator("#error-message").count():
        shots.shot("check_wrong")
    answers = {
        "standard": {"reveal": "next", "when": "any"},
        "oracle": {"see": "all", "where": "click"},
    }[condition]
    for qid, value in {**answers, "messages": "one"}.items():
        page.check(f"#check-{qid} input[value={value}]")
    submit(page, "#check-submit")


def first_scored_trial(out: Path, participant_id: str) -> dict:
    state = json.loads((out / "participants" / f"{participant_id}.json").read_text())
    return state["trials"][0]


def post_from_another_site(context, action: str, fields: dict[str, str]) -> str:
    """Submit ``fields`` to ``action`` from a page of another site; the text it gets back."""
    inputs = "".join(f'<input type="hidden" name="{k}" value="{v}">' for k, v in fields.items())
    attacker = context.new_page()
    attacker.route(
        "http://evil.example/",
        lambda route: route.fulfill(
            content_type="text/html",
            body=f'<form id="forged" method="post" action="{action}">{inputs}</form>',
        ),
    )
    attacker.goto("http://evil.example/")
    with attacker.expect_navigation():
        attacker.eval_on_selector("#forged", "form => form.submit()")
    text = attacker.inner_text("body")
    attacker.close()
    return text


def questionnaire(page, shots: Screens) -> None:
    shots.shot("questionnaire")
    page.check("#q-teaching_years input[value=under_1]")
    page.check("#q-parent input[value=no]")
    page.check("#q-ai_during input[value=no]")
    page.fill("#q-strategy", "I waited until the student went wrong.")
    submit(page, "#questionnaire-submit")
    assert page.inner_text("#completion-code") == "C0DE42"
    shots.shot("done")


def test_standard_session_survives_a_kill(tmp_path, browser, screens_dir):
    out = tmp_path / "standard"
    server = Server(out, "standard", tmp_path / "cache")
    server.start()
    page, shots = browser, Screens(browser, screens_dir, "standard")
    try:
        page.goto(server.url + "/")
        shots.shot("start")
        page.goto(server.url + "/?PROLIFIC_PID=browser_1")
        practice_check_and_instructions(page, shots, "standard")

        assert "Question 1 of 2" in page.inner_text("#progress")
        page.wait_for_load_state("networkidle")  # the page's report that the trial is shown
        trial = first_scored_trial(out, "browser_1")
        assert trial["shown_at"] is not None and trial["confirmed_at"] is None
        page.reload()  # a reload does not restart the clock
        page.wait_for_load_state("networkidle")
        assert first_scored_trial(out, "browser_1") == trial
        submit(page, "#confirm-read")
        submit(page, "#reveal")
        submit(page, "#intervene")  # empty message: refused with a clear message
        assert "empty" in page.inner_text("#error-message")
        shots.shot("error_empty_message")
        page.fill("#message", "Re-read what the question asks for.")
        submit(page, "#intervene")

        assert "Question 2 of 2" in page.inner_text("#progress")
        submit(page, "#confirm-read")
        submit(page, "#reveal")
        submit(page, "#reveal")
        shots.shot("trial_trace")
        shown = page.inner_text("#trace")
        server.kill()
        assert len(read_runs([out]).episodes) == 1  # the first trial is on disk
        server.start()
        page.reload()
        assert (
            "Question 2 of 2" in page.inner_text("#progress") and page.inner_text("#trace") == shown
        )
        while page.locator("#reveal").count():
            submit(page, "#reveal")
        assert page.inner_text("#trace") == TRACE
        page.fill("#message", "Check the last step.")
        submit(page, "#intervene")
        questionnaire(page, shots)

        latest = wait_for_completed(out, expected=2)
    finally:
        server.stop()
    for record in latest:
        assert record.teacher == "human:browser_1" and record.condition == "standard"
        human = record.metadata["human"]
        assert human["shown_at"] <= human["confirmed_at"] <= human["submitted_at"]
        assert record.intervention.attempt.text.startswith("Thanks, fixing it")
    assert sorted(r.intervention.tau_rel for r in latest)[-1] == 1.0
    report = generate_report([out], tmp_path / "report", samples=20)
    assert report.html_path.exists()
    assert any(key.teacher == "human" for key in report.data.monitor)


def test_oracle_session_clicks_a_position(tmp_path, browser, screens_dir):
    out = tmp_path / "oracle"
    server = Server(out, "oracle", tmp_path / "cache")
    server.start()
    page, shots = browser, Screens(browser, screens_dir, "oracle")
    try:
        page.goto(server.url + "/?participant=browser_2")
        practice_check_and_instructions(page, shots, "oracle")
        assert (
            page.inner_text("#verdict") == "incorrect"
            and page.inner_text("#student-answer") == "12345"
        )
        box = page.locator("#trace").bounding_box()
        page.mouse.click(box["x"] + box["width"] / 2, box["y"] + 12)
        position = int(page.input_value("#position"))
        assert 0 < position < len(TRACE)
        page.fill("#message", "Compute the intermediate quantity again.")
        shots.shot("trial_position_chosen")
        forged = {
            "csrf_token": page.input_value("#decision input[name=csrf_token]"),
            "action": "intervene",
            "message": "Not the participant's words.",
            "position": "1",
        }
        action = server.url + page.get_attribute("#decision", "action")
        assert "another website" in post_from_another_site(page.context, action, forged)
        assert not (out / "episodes.jsonl").exists()  # nothing recorded
        submit(page, "#intervene")
        submit(page, "#no-intervention")
        questionnaire(page, shots)
        latest = wait_for_completed(out, expected=2)
    finally:
        server.stop()
    helped = [r for r in latest if r.intervention]
    assert len(helped) == 1 and helped[0].intervention.tau_abs == position
    assert helped[0].metadata["human"]["continuation"] == "done"
    assert generate_report([out], tmp_path / "report", samples=20).html_path.exists()
