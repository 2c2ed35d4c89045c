"""The participant-facing web app (Flask), a thin layer over :class:`~intbench.human.service.Study`.

Every page is a plain form posted back to the server, followed by a redirect
to the participant's page (post/redirect/get), so reloading never resubmits
and the server always decides what comes next.  GETs change nothing on the
server: a trial page reports that it is displayed with a small script's POST
(``static/shown.js``), and the Oracle condition's "click where your message
goes" uses a few more lines of JavaScript.

Security (every refusal is a 403 and changes nothing):
    * a participant's session is an unguessable token in an HttpOnly,
      SameSite=Lax cookie scoped to ``/p/<id>/``, given to the first browser
      that opens the id; every ``/p/<id>/`` page and action requires it, so a
      second browser with the same id is refused;
    * every POST carries the session's CSRF token in a hidden form field, and a
      POST whose Origin (else Referer) is another site is refused; the start
      page's form carries a token matched against its own cookie.

URLs:
    ``/`` (optionally ``?PROLIFIC_PID=...``, ``?participant=...`` or ``?pid=...``)
        start or resume; without an id, the start page makes a random one.
    ``/p/<id>/``  the participant's current screen.
    ``POST /p/<id>/instructions | check | questionnaire``
    ``POST /p/<id>/trial/<trial id>/confirm | reveal | submit | shown``
    ``/admin/<admin token>``  the researcher's view: per question, how many
        participants were assigned it and how many annotations it has (404
        without the study's admin token).
"""

from __future__ import annotations

import logging
from pathlib import Path

from flask import Flask, g, make_response, redirect, render_template, request, url_for
from werkzeug.exceptions import HTTPException

from intbench.human import content, security
from intbench.human.service import ActionError, AlreadyDone, Study

logger = logging.getLogger(__name__)

ID_PARAMETERS = ("PROLIFIC_PID", "participant", "pid", "workerId")
"""URL parameters that carry a study platform's participant id, in order of preference."""
MAX_REQUEST_BYTES = 64 * 1024  # a form with a 4,000-character message is far below this
SESSION_COOKIE = "intbench_session"
START_COOKIE = "intbench_start"
CSRF_FIELD = "csrf_token"
COOKIE_MAX_AGE = 60 * 24 * 3600  # participants may come back to a study days later

CROSS_ORIGIN = "This form was sent from another website, so it was not accepted."
OTHER_BROWSER = (
    "This study session is open in another browser. Please continue there; "
    "if you cannot, contact the researcher."
)
STALE_FORM = "This page is out of date, so your answer was not accepted. Please reload it."


def create_app(
    study: Study, public_url: str | None = None, admin_token: str | None = None
) -> Flask:
    """The Flask app serving ``study``.

    Args:
        study: the running study.
        public_url: the address participants open when the app runs behind a
            proxy (e.g. ``https://study.example.org``); POSTs from that origin are
            accepted as well as from the address the request reached.
        admin_token: the secret part of the admin view's URL (``None``: no admin view).
    """
    here = Path(__file__).parent
    app = Flask(
        __name__, template_folder=str(here / "templates"), static_folder=str(here / "static")
    )
    app.config["MAX_CONTENT_LENGTH"] = MAX_REQUEST_BYTES
    app.extensions["intbench_study"] = study
    public_origin = security.origin_of(public_url) if public_url else None

    @app.context_processor
    def csrf_field():
        return {"csrf_field": CSRF_FIELD, "csrf_token": g.get("csrf_token", "")}

    @app.before_request
    def refuse_forged_requests():
        if request.method == "POST" and _cross_origin():
            raise ActionError(403, CROSS_ORIGIN)
        participant_id = (request.view_args or {}).get("participant_id")
        if participant_id is not None:
            g.csrf_token = _session_csrf_token(participant_id)
        elif request.endpoint == "start_random":
            g.csrf_token = request.cookies.get(START_COOKIE)
        # A POST route that sets no token above refuses every POST: safe by default.
        if request.method == "POST" and not security.same_token(
            request.form.get(CSRF_FIELD), g.get("csrf_token")
        ):
            raise ActionError(403, STALE_FORM)

    def _cross_origin() -> bool:
        origins = (security.origin_of(request.host_url), public_origin)
        allowed = {origin for origin in origins if origin is not None}
        return security.cross_origin(
            request.headers.get("Origin"), request.headers.get("Referer"), allowed
        )

    def _session_csrf_token(participant_id: str) -> str:
        """The CSRF token of this browser's session, which must be the participant's."""
        token = request.cookies.get(SESSION_COOKIE)
        # session_matches first: an unknown participant is a 404, not a 403.
        if not study.session_matches(participant_id, token) or token is None:
            raise ActionError(403, OTHER_BROWSER)
        return security.csrf_token_for(token)

    def _set_cookie(response, name: str, value: str, path: str) -> None:
        secure = request.is_secure or (public_origin or "").startswith("https:")
        response.set_cookie(
            name,
            value,
            max_age=COOKIE_MAX_AGE,
            path=path,
            secure=secure,
            httponly=True,
            samesite="Lax",  # Strict would drop the cookie when a study platform links here
        )

    def _error_page(message: str, status: int):
        participant_id = (request.view_args or {}).get("participant_id")
        # A conflict (a replayed or out-of-date form) is resolved by going back to the current screen.
        resume = (
            url_for("screen", participant_id=participant_id)
            if participant_id and status == 409
            else None
        )
        return render_template("error.html", message=message, resume=resume), status

    @app.errorhandler(ActionError)
    def action_error(exc: ActionError):
        return _error_page(exc.message, exc.status)

    @app.errorhandler(HTTPException)
    def http_error(exc: HTTPException):
        message = "Your submission is too large." if exc.code == 413 else exc.description
        return _error_page(message or exc.name, exc.code or 500)

    @app.get("/")
    def start():
        for name in ID_PARAMETERS:
            if request.args.get(name) is not None:
                return _enter(study.start(request.args[name], source=name))
        g.csrf_token = security.new_token()
        response = make_response(render_template("start.html", condition=study.config.condition))
        _set_cookie(response, START_COOKIE, g.csrf_token, path=url_for("start_random"))
        return response

    @app.post("/start")
    def start_random():
        return _enter(study.start(None, "random"))

    def _enter(participant_id: str):
        """Go to the participant's screen, opening their session here if no browser holds it.

        A browser that does not hold the session is sent on all the same and
        refused there, since only the participant's own pages see its cookie.
        """
        screen_url = url_for("screen", participant_id=participant_id)
        response = redirect(screen_url)
        token = study.open_session(participant_id)
        if token is not None:
            _set_cookie(response, SESSION_COOKIE, token, path=screen_url)
        return response

    def _common(participant_id: str, state: dict) -> dict:
        """What every page of a participant is rendered with."""
        return {"pid": participant_id, "condition": study.config.condition, "state": state}

    @app.get("/admin/<token>")
    def admin(token: str):
        if not security.same_token(token, admin_token):
            raise ActionError(404, "Not found.")
        return render_template(
            "admin.html",
            questions=study.question_counts(),
            participants=len(study.store.participant_ids()),
            per_participant=min(study.config.trials, len(study.config.main_problems)),
        )

    @app.get("/p/<participant_id>/")
    def screen(participant_id: str):
        state = study.participant(participant_id)
        phase = state["phase"]
        common = _common(participant_id, state)
        if phase == "instructions":
            return render_template(
                "instructions.html",
                **common,
                n_trials=len(state["trials"]),
                n_practice=len(state["practice"]),
            )
        if phase == "check":
            return _check_page(common, [])
        if phase == "questionnaire":
            return _questionnaire(common, [], {})
        if phase == "done":
            return render_template("done.html", **common, code=study.config.completion_code)
        return _trial_page(state, study.current_trial(state), common)

    def _trial_page(
        state: dict,
        trial: dict | None,
        common: dict,
        error: str | None = None,
        message: str = "",
        status: int = 200,
    ):
        if trial is None:  # only in a trial phase, which ends with its last trial
            raise ActionError(409, "There is no open question. Please reload the page.")
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

    def _check_page(common: dict, wrong: list):
        questions = content.CHECK[study.config.condition]
        return render_template("check.html", **common, questions=questions, wrong=wrong), 200

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

    def _form_problems(participant_id: str, submit) -> list:
        """What ``submit`` finds wrong with the posted form; nothing once it was accepted."""
        try:
            return submit(participant_id, request.form)
        except AlreadyDone:
            return []

    @app.post("/p/<participant_id>/check")
    def check(participant_id: str):
        wrong = _form_problems(participant_id, study.check)
        if not wrong:
            return _back(participant_id)
        return _check_page(_common(participant_id, study.participant(participant_id)), wrong)

    @app.post("/p/<participant_id>/questionnaire")
    def questionnaire(participant_id: str):
        problems = _form_problems(participant_id, study.questionnaire)
        if not problems:
            return _back(participant_id)
        common = _common(participant_id, study.participant(participant_id))
        return _questionnaire(common, problems, request.form, status=400)

    @app.post("/p/<participant_id>/trial/<trial_id>/shown")
    def trial_shown(participant_id: str, trial_id: str):
        """The trial page reports that it is displayed; nothing to show in return."""
        try:
            study.mark_shown(participant_id, trial_id)
        except AlreadyDone:
            pass
        return "", 204

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
            common = _common(participant_id, state)
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
