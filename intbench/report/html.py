"""The self-contained ``report.html``: tables, embedded figures and an episode browser.

Everything is inline (CSS, a little vanilla JS, PNGs as base64) so the file
can be mailed or opened offline.  Traces are untrusted model output: the
template autoescapes, the episode data travels as JSON in a
``<script type="application/json">`` block with ``<``, ``>`` and ``&``
escaped, and the browser script writes it with ``textContent`` only.
"""

from __future__ import annotations

import base64
import json
import math
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import jinja2

from intbench.metrics import Estimate, Summary, Table, format_cell, monitor_key, teacher_label
from intbench.protocols import PROTOCOLS
from intbench.records import Attempt, Episode

if TYPE_CHECKING:
    from intbench.report.figures import FigureFile
    from intbench.report.runs import LoadedRuns

TEMPLATE_DIR = Path(__file__).parent / "templates"
TRACE_LIMIT = 6_000  # characters of a baseline trace kept in the browser data
TEXT_LIMIT = 2_000  # characters of any other text (attempts, messages, continuations)


# ------------------------------------------------------------- truncation
def _omitted(count: int) -> str:
    return f"[… {count:,} characters omitted …]"


def clip_text(text: str | None, limit: int = TEXT_LIMIT) -> str:
    """``text`` cut in the middle to about ``limit`` characters, with a note."""
    text = text or ""
    if len(text) <= limit:
        return text
    half = limit // 2
    return f"{text[:half]}\n{_omitted(len(text) - 2 * half)}\n{text[-half:]}"


def trace_segments(trace: str, position: int | None, limit: int = TRACE_LIMIT) -> list[dict]:
    """The trace as browser segments: ``revealed`` prefix, ``marker``, ``rest``, ``omitted`` notes.

    Long traces keep the start, the text just before the intervention point
    (what the teacher read last) and the text right after it.
    """
    if position is None:
        return _clip_segments(trace, "rest", limit, keep_tail=True)
    position = max(0, min(int(position), len(trace)))
    half = limit // 2
    return [
        *_clip_segments(trace[:position], "revealed", half, keep_tail=True),
        {"k": "marker", "t": ""},
        *_clip_segments(trace[position:], "rest", half, keep_tail=False),
    ]


def _clip_segments(text: str, kind: str, limit: int, keep_tail: bool) -> list[dict]:
    if not text:
        return []
    if len(text) <= limit:
        return [{"k": kind, "t": text}]
    if not keep_tail:
        return [{"k": kind, "t": text[:limit]}, {"k": "omitted", "t": _omitted(len(text) - limit)}]
    half = limit // 2
    return [
        {"k": kind, "t": text[:half]},
        {"k": "omitted", "t": _omitted(len(text) - 2 * half)},
        {"k": kind, "t": text[-half:]},
    ]


# ----------------------------------------------------------- browser data
def _status(attempt: Attempt | None) -> str | None:
    return attempt.status if attempt else None


_SHORT = {"correct": "right", "incorrect": "wrong", "error": "error", None: "none"}


def outcome(episode: Episode) -> str:
    """A short label of how the episode ended, used by the browser's filter."""
    if episode.error:
        return "error"
    return _hook(episode, "report_outcome", attempts_outcome)(episode)


def _hook(episode: Episode, field: str, default: Callable[[Episode], Any]) -> Callable:
    """The protocol's ``field`` hook; records of unregistered protocols (generalization
    runs) are shown as attempts."""
    spec = PROTOCOLS.get(str(episode.protocol))
    return default if spec is None else spec.hook(field)


def monitor_outcome(episode: Episode) -> str:
    intervention = episode.intervention
    if not intervention:
        return "no intervention"
    if intervention.excluded:
        return "excluded"
    before, after = _status(episode.baseline), _status(intervention.attempt)
    return f"{_SHORT.get(before, before)}→{_SHORT.get(after, after)}"


def attempts_outcome(episode: Episode) -> str:
    solved = episode.solved_at
    if solved is None:
        return "unsolved"
    return "solved at 1" if solved == 1 else "solved after feedback"


def browser_record(index: int, episode: Episode) -> dict:
    """The compact, truncated view of one episode that the browser shows."""
    record: dict[str, Any] = {
        "i": index,
        "id": episode.episode_id,
        "protocol": episode.protocol,
        "domain": episode.domain,
        "problem": episode.problem_id,
        "student": episode.student,
        "teacher": teacher_label(episode.teacher),
        "teacher_id": episode.teacher,
        "condition": episode.condition,
        "outcome": outcome(episode),
        "error": clip_text(episode.error) or None,
    }
    record.update(_hook(episode, "report_view", attempts_view)(episode))
    return record


def monitor_view(episode: Episode) -> dict:
    baseline = episode.baseline or Attempt(text="")
    intervention = episode.intervention
    applied = episode.applied_intervention is not None
    after = (intervention.attempt if intervention else None) or Attempt(text="")
    return {
        "post": monitor_key(episode).post,
        "trace": trace_segments(
            baseline.text or "", intervention.tau_abs if intervention and applied else None
        ),
        "trace_chars": len(baseline.text or ""),
        "intervened": intervention is not None,
        "message": clip_text(intervention.message) if intervention else None,
        "tau_abs": intervention.tau_abs if intervention else None,
        "tau_rel": intervention.tau_rel if intervention else None,
        "excluded": intervention.excluded if intervention else None,
        "leaked": intervention.leaked if intervention else None,
        "before": _status(baseline),
        "before_answer": _answer_text(baseline.answer),
        "after": _status(after) if applied else None,
        "after_answer": _answer_text(after.answer) if applied else None,
        "continuation": clip_text(after.text or None) if applied else None,
    }


def attempts_view(episode: Episode) -> dict:
    turns: list[dict] = []
    feedback = {f.turn: f for f in episode.feedback}
    for n, attempt in enumerate(episode.attempts, 1):
        if n > 1:
            given = feedback.get(n - 1)
            turns.append(
                {
                    "kind": "feedback",
                    "text": clip_text(given.message if given else None),
                    "leaked": given.leaked if given else None,
                }
            )
        turns.append(
            {
                "kind": "attempt",
                "n": n,
                "text": clip_text(attempt.text),
                "status": _status(attempt),
                "answer": _answer_text(attempt.answer),
            }
        )
    return {
        "turns": turns,
        "solved_at": episode.solved_at,
        "k_max": episode.config.get("k_max"),
    }


def _answer_text(answer: Any) -> str | None:
    if answer is None:
        return None
    return clip_text(answer if isinstance(answer, str) else json.dumps(answer), 300)


def script_json(data: Any) -> str:
    """JSON that is safe inside ``<script type="application/json">``: no ``<``, ``>``, ``&`` left."""
    text = json.dumps(data, ensure_ascii=False, allow_nan=False, default=str)
    return text.replace("&", "\\u0026").replace("<", "\\u003c").replace(">", "\\u003e")


# ----------------------------------------------------------------- tables
def _html_cell(cell: Any) -> dict:
    if isinstance(cell, Estimate):
        value = "n/a" if math.isnan(cell.value) else f"{cell.value:.3f}"
        ci = "" if math.isnan(cell.low) else f"[{cell.low:.3f}, {cell.high:.3f}]"
        return {"text": value, "ci": ci, "num": True}
    return {
        "text": format_cell(cell),
        "ci": "",
        "num": isinstance(cell, (int, float)) and not isinstance(cell, bool),
    }


def _html_table(table: Table) -> dict:
    return {
        "name": table.name,
        "title": table.title,
        "note": table.note,
        "columns": table.columns,
        "rows": [[_html_cell(c) for c in row] for row in table.rows],
    }


# ------------------------------------------------------------------ write
def _figure_uri(path: Path) -> str:
    return "data:image/png;base64," + base64.b64encode(path.read_bytes()).decode("ascii")


def render_html(
    runs: LoadedRuns, data: Summary, figures: Sequence[FigureFile], figures_skipped: str | None
) -> str:
    """The report page as a string."""
    environment = jinja2.Environment(
        loader=jinja2.FileSystemLoader(TEMPLATE_DIR),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    episodes = [_json_safe(browser_record(i, e)) for i, e in enumerate(runs.episodes)]
    return environment.get_template("report.html.j2").render(
        sources=[
            {
                "path": str(s.path),
                "episodes": s.episodes,
                "skipped": s.skipped,
                "config": json.dumps(s.config, indent=2, ensure_ascii=False, default=str)
                if s.config
                else None,
            }
            for s in runs.sources
        ],
        n_episodes=len(runs.episodes),
        n_skipped=runs.skipped,
        n_replaced=runs.replaced,
        other_protocols=data.other_protocols,
        tables=[_html_table(t) for t in data.tables],
        figures=[{"name": f.name, "title": f.title, "uri": _figure_uri(f.path)} for f in figures],
        figures_skipped=figures_skipped,
        episode_json=script_json(episodes),
    )


def _json_safe(value: Any) -> Any:
    """NaN/inf become null: they are not valid JSON for the browser's parser."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _json_safe(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_json_safe(v) for v in value]
    return value


def write_html(
    path: Path,
    runs: LoadedRuns,
    data: Summary,
    figures: Sequence[FigureFile],
    figures_skipped: str | None,
) -> Path:
    """Render the page into ``path`` and return it."""
    path.write_text(render_html(runs, data, figures, figures_skipped), encoding="utf-8")
    return path
