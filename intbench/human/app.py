"""The participant-facing web app (Flask), a thin layer over :class:`~intbench.human.service.Study`.

Every page is a plain form posted back to the server, followed by a redirect
to the participant's page (post/redirect/get), so reloading never resubmits
and the server always decides what comes next.  Only the Oracle condition's
"click where your message goes" uses a few lines of JavaScript.

URLs:
    ``/`` (optionally ``?PROLIFIC_PID=...``, ``?participant=...`` or ``?pid=...``)
        start or resume; without an id a random one is made.
    ``/p/<id>/``  the participant's current screen.
    ``POST /p/<id>/instructions | check | questionnaire``
    ``POST /p/<id>/trial/<trial id>/confirm | reveal | submit``
"""

from __future__ import annotations

import logging
from pathlib import Path

from flask import Flask, redirect, render_template, request, url_for
from werkzeug.exceptions import HTTPException

from intbench.human import content
from intbench.human.service import ActionError, AlreadyDone, Study

logger = logging.getLogger(__name__)

ID_PARAMETERS = ("PROLIFIC_PID", "participant", "pid", "workerId")
"""URL parameters that carry a study platform's participant id, in order of preference."""
MAX_REQUEST_BYTES = 64 * 1024  # a form with a 4,000-character message is far below this


def create_app(study: Study) -> Flask:
    """The Flask app serving ``study``."""
    here = Path(__file__).parent
    app = Flask(
        __name__, template_folder=str(here / "templates"), static_folder=str(here / "static")
    )
    app.config["MAX_CONTENT_LENGTH"] = MAX_REQUEST_BYTES
    app.extensions["intbench_study"] = study

    @app.errorhandler(ActionError)
    def action_error(exc: ActionError):
        return render_template("error.html", message=exc.message), exc.status

    @app.errorhandler(HTTPException)
    def http_error(exc: HTTPException):
        message = "Your submission is too large." if exc.code == 413 else exc.description
        return render_template("error.html", message=message), exc.code

    @app.get("/")
    def start():
        for name in ID_PARAMETERS:
            if request.args.get(name) is not None:
                participant_id = study.start(request.args[name], source=name)
                return redirect(url_for("screen", participant_id=participant_id))
        return render_template("start.html", condition=study.config.condition)

    @app.post("/start")
    def start_random():
        return redirect(url_for("screen", participant_id=study.start(None, "random")))

    @app.get("/p/<participant_id>/")
    def screen(participant_id: str):
        state = study.participant(participant_id)
        phase = state["phase"]
        common = {"pid": participant_id, "condition": study.config.condition, "state": state}
        if phase == "instructions":
            return render_template(
                "instructions.html",
                **common,
                n_trials=len(state["trials"]),
                n_practice=len(state["practice"]),
            )
        if phase == "check":
            return render_template(
                "check.html", **common, questions=content.CHECK[study.config.condition], wrong=[]
            )
        if phase == "questionnaire":
            return _questionnaire(common, [], {})
        if phase == "done":
            return render_template("done.html", **common, code=study.config.completion_code)
        trial = study.current_trial(state)
        study.mark_shown(participant_id, trial["trial_id"])
        return _trial_page(state, trial, common)

    def _trial_page(
        state: dict,
        trial: dict,
        common: dict,
        error: str | None = None,
        message: str = "",
        status: int = 200,
    ):
        view = study.views[trial["problem_id"]]
        trials = state["practice"] if trial["practice"] else state["trials"]
        page = {
            **common,
            "trial": trial,
            "view": view,
            "number": trial["index"] + 1,
            "total": len(trials),
            "error": error,
            "message": message,
            "max_text": content.MAX_TEXT,
        }
        if study.config.condition == "oracle":
            return render_template("trial_oracle.html", **page), status
        if trial["confirmed_at"] is None:
            return render_template("trial_reading.html", **page), status
        revealed = view.cuts[trial["cursor"]]
        at_end = trial["cursor"] >= len(view.cuts) - 1
        return render_template(
            "trial_standard.html", **page, shown=view.trace[:revealed], at_end=at_end
        ), status

    def _questionnaire(common: dict, problems: list[str], answers, status: int = 200):
        return render_template(
            "questionnaire.html",
            **common,
            choices=content.QUESTIONNAIRE_CHOICES,
            texts=content.QUESTIONNAIRE_TEXTS,
            problems=problems,
            answers=answers,
            max_text=content.MAX_TEXT,
        ), status

    def _back(participant_id: str):
        return redirect(url_for("screen", participant_id=participant_id), code=303)

    @app.post("/p/<participant_id>/instructions")
    def instructions_done(participant_id: str):
        try:
            study.finish_instructions(participant_id)
        except AlreadyDone:
            pass
        return _back(participant_id)

    @app.post("/p/<participant_id>/check")
    def check(participant_id: str):
        try:
            wrong = study.check(participant_id, request.form)
        except AlreadyDone:
            return _back(participant_id)
        if not wrong:
            return _back(participant_id)
        state = study.participant(participant_id)
        return render_template(
            "check.html",
            pid=participant_id,
            condition=study.config.condition,
            state=state,
            questions=content.CHECK[study.config.condition],
            wrong=wrong,
        ), 200

    @app.post("/p/<participant_id>/questionnaire")
    def questionnaire(participant_id: str):
        try:
            problems = study.questionnaire(participant_id, request.form)
        except AlreadyDone:
            return _back(participant_id)
        if not problems:
            return _back(participant_id)
        state = study.participant(participant_id)
        common = {"pid": participant_id, "condition": study.config.condition, "state": state}
        return _questionnaire(common, problems, request.form, status=400)

    @app.post("/p/<participant_id>/trial/<trial_id>/<action>")
    def trial_action(participant_id: str, trial_id: str, action: str):
        handlers = {
            "confirm": lambda: study.confirm(participant_id, trial_id),
            "reveal": lambda: study.reveal(participant_id, trial_id, request.form.get("cursor")),
            "submit": lambda: study.submit(participant_id, trial_id, request.form),
        }
        if action not in handlers:
            raise ActionError(404, f"Unknown action {action!r}.")
        try:
            handlers[action]()
        except AlreadyDone:
            pass
        except ActionError as exc:
            if exc.status != 400:
                raise
            # A fixable mistake (empty or too long message): show the same question again, keeping the text.
            state = study.participant(participant_id)
            trial = study.current_trial(state)
            common = {"pid": participant_id, "condition": study.config.condition, "state": state}
            return _trial_page(
                state,
                trial,
                common,
                error=exc.message,
                message=request.form.get("message", ""),
                status=400,
            )
        return _back(participant_id)

    return app


def serve(app: Flask, host: str = "127.0.0.1", port: int = 8000, threads: int = 8) -> None:
    """Serve ``app`` with waitress (a production WSGI server) until interrupted."""
    from waitress import serve as waitress_serve

    waitress_serve(app, host=host, port=port, threads=threads)
