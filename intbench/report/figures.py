"""Report figures as PNG files (matplotlib, the ``report`` extra).

Figures are drawn on ``matplotlib.figure.Figure`` objects with the Agg canvas,
never through pyplot, so no global backend state is touched and no display
is needed.  Without matplotlib :func:`render_all` draws nothing and says why.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from intbench.metrics import Estimate, FeedbackKey, Matrix, MonitorKey, Summary, monitor_key
from intbench.metrics.groups import HUMAN
from intbench.metrics.matrix import MATRIX_METRICS
from intbench.metrics.monitor import NOT_APPLICABLE
from intbench.protocols import has
from intbench.records import Episode

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

DPI = 100
CONDITION_COLORS = {"standard": "#4C72B0", "oracle": "#DD8452"}
HUMAN_STYLE = {"color": "#222222", "marker": "x", "s": 36}


@dataclass
class FigureFile:
    """A PNG written to disk, with the title the report shows above it."""

    name: str
    title: str
    path: Path


def render_all(
    data: Summary, episodes: Sequence[Episode], out_dir: Path
) -> tuple[list[FigureFile], str | None]:
    """Draw every figure the data supports into ``out_dir``.

    Returns the files and ``None``, or no files and the reason figures were skipped.
    """
    try:
        from matplotlib.figure import Figure  # noqa: F401  (probe only)
    except ImportError:
        return [], "matplotlib is not installed (pip install matplotlib)"
    out_dir.mkdir(parents=True, exist_ok=True)
    drawn: list[tuple[str, str, Figure]] = []
    if data.monitor:
        drawn.append(
            (
                "monitor_frequency_timing",
                "Intervention frequency φ and timing τ_rel (95% CI)",
                monitor_bars(data.monitor),
            )
        )
        scatter = timing_scatter(episodes)
        if scatter is not None:
            drawn.append(("monitor_timing_per_problem", _scatter_title(episodes), scatter))
    for matrix in data.matrices:
        name = f"matrix_{matrix.stem}"
        drawn.append((name, f"Student x teacher matrices: {matrix.label}", matrix_heatmaps(matrix)))
    if data.feedback:
        drawn.append(
            (
                "feedback_accuracy_curves",
                "Cumulative accuracy acc@k vs k, per student",
                accuracy_curves(data.feedback),
            )
        )
    files = []
    for name, title, figure in drawn:
        path = out_dir / f"{name}.png"
        figure.savefig(path, dpi=DPI, bbox_inches="tight")
        files.append(FigureFile(name, title, path))
    return files, None


def _new_figure(
    rows: int, cols: int, width: float, height: float
) -> tuple[Figure, list[list[Axes]]]:
    from matplotlib.figure import Figure

    figure = Figure(figsize=(width * cols, height * rows), layout="constrained")
    axes = figure.subplots(rows, cols, squeeze=False)
    return figure, [list(row) for row in axes]


def _error(est: Estimate) -> tuple[float, float]:
    """Asymmetric error-bar lengths; zero where the CI is undefined."""
    if math.isnan(est.value) or math.isnan(est.low):
        return 0.0, 0.0
    return max(est.value - est.low, 0.0), max(est.high - est.value, 0.0)


def _series_labels(keys: Sequence[tuple], fields: Sequence[int]) -> dict[tuple, str]:
    """Label each key by its teacher plus only those other fields that vary."""
    varying = [i for i in fields if len({k[i] for k in keys}) > 1]
    return {k: " / ".join(str(k[i]) for i in varying) for k in keys}


def _monitor_series(keys: Sequence[MonitorKey]) -> list[tuple]:
    """One bar group per setting: (student, teacher, post, increment, prompt, access).

    An Oracle group joins the Standard groups of its settings (it has no
    increment); it gets a series of its own only when none ran."""
    standard = {k[1:4] + k[5:7] for k in keys if k.condition != "oracle"}
    series = {(*k[1:7],) for k in keys if k.condition != "oracle"}
    series |= {
        (*k[1:7],) for k in keys if k.condition == "oracle" and k[1:4] + k[5:7] not in standard
    }
    return sorted(series)


def _series_key(domain: str, series: tuple, condition: str) -> MonitorKey:
    student, teacher, post, increment, prompt, access = series
    if condition == "oracle":
        increment = NOT_APPLICABLE
    return MonitorKey(domain, student, teacher, post, increment, prompt, access, condition)


def monitor_bars(monitor: dict[MonitorKey, dict]) -> Figure:
    """φ and τ_rel bars per teacher, Standard next to Oracle, one row per domain."""
    domains = sorted({k.domain for k in monitor})
    figure, axes = _new_figure(len(domains), 2, 5.5, 3.4)
    for row, domain in zip(axes, domains, strict=True):
        keys = [k for k in monitor if k.domain == domain]
        series = _monitor_series(keys)
        # teacher first, then student, post, increment, prompt and access when they vary
        labels = _series_labels(series, (1, 0, 2, 3, 4, 5))
        conditions = _bar_conditions(keys)
        for ax, metric, title in (
            (row[0], "phi", "φ (intervention rate)"),
            (row[1], "tau_rel", "τ_rel (relative timing)"),
        ):
            for j, condition in enumerate(conditions):
                estimates = [
                    monitor.get(_series_key(domain, one, condition), {}).get(
                        metric, Estimate(math.nan)
                    )
                    for one in series
                ]
                _condition_bars(ax, estimates, j, len(conditions), condition)
            ax.set_xticks(
                range(len(series)), [labels[s] or s[1] for s in series], rotation=20, ha="right"
            )
            ax.set_ylim(0, 1.05)
            ax.set_title(f"{domain}: {title}")
            ax.legend(fontsize="small")
    return figure


def _bar_conditions(keys: Sequence[MonitorKey]) -> list[str]:
    """The conditions the keys hold: Standard, then Oracle, then any other by name."""
    conditions = [c for c in ("standard", "oracle") if any(k.condition == c for k in keys)]
    return conditions + sorted({k.condition for k in keys} - set(conditions))


def _condition_bars(
    ax: Axes, estimates: Sequence[Estimate], j: int, count: int, condition: str
) -> None:
    """One condition's bars (the ``j``-th of ``count`` side by side), one per series."""
    width = 0.8 / count
    xs = [i + (j - (count - 1) / 2) * width for i in range(len(estimates))]
    heights = [0.0 if math.isnan(e.value) else e.value for e in estimates]
    errors: list[Sequence[float]]
    errors = list(zip(*(_error(e) for e in estimates), strict=True)) or [[], []]
    ax.bar(
        xs,
        heights,
        width,
        yerr=errors,
        capsize=3,
        label=condition,
        color=CONDITION_COLORS.get(condition),
    )


def _scatter_title(episodes: Sequence[Episode]) -> str:
    """Name only the kinds of teacher the runs hold."""
    timed = [e for e in episodes if has(str(e.protocol), "interventions")]
    humans = any(monitor_key(e).teacher == HUMAN for e in timed)
    models = any(monitor_key(e).teacher != HUMAN for e in timed)
    who = "humans vs LLM teachers" if humans and models else "humans" if humans else "teachers"
    return f"τ_rel per problem: {who}"


def timing_scatter(episodes: Sequence[Episode]) -> Figure | None:
    """τ_rel of every applied intervention per problem, humans marked apart from LLMs."""
    points = _timing_points(episodes)
    if not points:
        return None
    panels = sorted(points)
    figure, axes = _new_figure(len(panels), 1, 9.0, 3.2)
    teachers = sorted({t for panel in points.values() for t in panel if t != HUMAN})
    colors = {t: f"C{i % 10}" for i, t in enumerate(teachers)}
    for (ax,), panel in zip(axes, panels, strict=True):
        _timing_panel(ax, panel, points[panel], colors)
    return figure


def _timing_points(
    episodes: Sequence[Episode],
) -> dict[tuple[str, str], dict[str, list[tuple[str, float]]]]:
    """``{(domain, condition): {teacher: [(problem, τ_rel)]}}`` of the applied interventions."""
    points: dict[tuple[str, str], dict[str, list[tuple[str, float]]]] = defaultdict(
        lambda: defaultdict(list)
    )
    for episode in episodes:
        tau_rel = _applied_tau_rel(episode)
        if tau_rel is None:
            continue
        key = monitor_key(episode)
        points[(key.domain, key.condition)][key.teacher].append((episode.problem_id, tau_rel))
    return points


def _applied_tau_rel(episode: Episode) -> float | None:
    """τ_rel of the episode's applied intervention; ``None`` for a failed episode, one
    of a protocol without interventions, or an intervention that was not placed."""
    intervention = episode.intervention
    if (
        not has(str(episode.protocol), "interventions")
        or episode.error
        or intervention is None
        or intervention.excluded
        or intervention.tau_rel is None
    ):
        return None
    return float(intervention.tau_rel)


def _timing_panel(
    ax: Axes,
    panel: tuple[str, str],
    by_teacher: dict[str, list[tuple[str, float]]],
    colors: dict[str, str],
) -> None:
    """One (domain, condition) panel: a column per problem, a point per intervention."""
    problems = sorted({p for pts in by_teacher.values() for p, _ in pts})
    index = {p: i for i, p in enumerate(problems)}
    # model teachers by name, the human teacher last
    names = sorted(t for t in by_teacher if t != HUMAN) + ([HUMAN] if HUMAN in by_teacher else [])
    for n, teacher in enumerate(names):
        offset = (n - (len(names) - 1) / 2) * 0.08  # small shift so teachers do not hide each other
        xs = [index[p] + offset for p, _ in by_teacher[teacher]]
        ys = [v for _, v in by_teacher[teacher]]
        ax.scatter(xs, ys, label=teacher, **_teacher_style(teacher, colors))
    ax.set_xticks(
        range(len(problems)),
        problems if len(problems) <= 30 else [""] * len(problems),
        rotation=60,
        ha="right",
        fontsize="x-small",
    )
    ax.set_ylim(-0.02, 1.02)
    ax.set_ylabel("τ_rel")
    ax.set_title(f"{panel[0]} ({panel[1]}): intervention point per problem")
    ax.legend(fontsize="small", loc="upper left", bbox_to_anchor=(1.0, 1.0))


def _teacher_style(teacher: str, colors: dict[str, str]) -> dict:
    """The human teacher's crosses, or a model teacher's coloured dots."""
    if teacher == HUMAN:
        return HUMAN_STYLE
    return {"color": colors[teacher], "marker": "o", "s": 22, "alpha": 0.8}


def matrix_heatmaps(matrix: Matrix) -> Figure:
    """Annotated heatmaps of acc@1, acc@K, gain and AUC (rows students, columns teachers)."""
    import numpy as np

    width = 0.9 * len(matrix.columns) + 2.2
    figure, axes = _new_figure(2, 2, width, 0.55 * len(matrix.students) + 1.6)
    for ax, metric in zip([ax for row in axes for ax in row], MATRIX_METRICS, strict=True):
        grid = np.array(
            [
                [matrix.values[metric].get((s, c), math.nan) for c in matrix.columns]
                for s in matrix.students
            ],
            dtype=float,
        )
        low, high = (-1.0, 1.0) if metric == "gain" else (0.0, 1.0)
        image = ax.imshow(
            np.ma.masked_invalid(grid),
            cmap="RdBu" if metric == "gain" else "viridis",
            vmin=low,
            vmax=high,
            aspect="auto",
        )
        for (i, j), value in np.ndenumerate(grid):
            text = "n/a" if math.isnan(value) else f"{value:.2f}"
            shade = "black" if _light_cell(metric, value) else "white"
            ax.text(j, i, text, ha="center", va="center", fontsize="small", color=shade)
        ax.set_xticks(
            range(len(matrix.columns)), matrix.columns, rotation=30, ha="right", fontsize="small"
        )
        ax.set_yticks(range(len(matrix.students)), matrix.students, fontsize="small")
        ax.set_title(metric.replace("K", str(matrix.k_max)))
        figure.colorbar(image, ax=ax, shrink=0.8)
    return figure


def _light_cell(metric: str, value: float) -> bool:
    """Whether a heatmap cell is light enough for black text (viridis is light near 1, RdBu near 0)."""
    if math.isnan(value):
        return True
    return abs(value) < 0.6 if metric == "gain" else value > 0.6


def accuracy_curves(feedback: dict[FeedbackKey, dict]) -> Figure:
    """acc@k against k, one panel per (domain, student), one line per teacher or mode."""
    panels = sorted({(k.domain, k.student) for k in feedback})
    cols = min(3, len(panels))
    rows = math.ceil(len(panels) / cols)
    figure, axes = _new_figure(rows, cols, 4.2, 3.2)
    flat = [ax for row in axes for ax in row]
    for ax, (domain, student) in zip(flat, panels, strict=False):
        for key in sorted(k for k in feedback if (k.domain, k.student) == (domain, student)):
            acc = feedback[key]["acc"]
            label = key.mode if key.mode != "teacher" else key.teacher
            style = "--" if key.mode != "teacher" else "-"
            ax.plot(
                range(1, len(acc) + 1),
                acc,
                style,
                marker="o",
                markersize=3,
                label=f"{label} (K={key.k_max})",
            )
        ax.xaxis.get_major_locator().set_params(integer=True)  # type: ignore[call-arg]
        ax.set_xlabel("attempt k")
        ax.set_ylabel("acc@k")
        ax.set_ylim(0, 1.02)
        ax.set_title(f"{student} ({domain})", fontsize="medium")
        ax.legend(fontsize="x-small")
    for ax in flat[len(panels) :]:
        ax.set_visible(False)
    return figure
