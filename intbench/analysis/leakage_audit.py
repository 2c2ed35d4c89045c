"""Leakage audit (feedback paper App. A.6): an LLM judge reads (reference
solution, student answer, teacher message) and answers True when the message
leaks confidential information that trivially helps the student.

The leak rate is the paper's: identified leaks over all judge responses.  A
reply that does not say True or False is still a judge response, so it stays in
the denominator (it identifies no leak) and is counted apart as ``n_unreadable``;
it is never silently dropped.  Messages without a response (a failed call, a
problem that could not be rebuilt) are counted as ``n_errors`` and are in no rate.

Per teacher the summary gives the leak rate with 95% bootstrap intervals that
resample problems, and compares the judge with the verifier-based leak detector
(:func:`~intbench.verifiers.leakage.answer_leaked`, run again on every message,
so records written by an older detector are compared with the current one): the
agreement rate and the 2x2 counts over readable replies.
"""

from __future__ import annotations

import json
import math
import os
from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from intbench.agents.base import ChatBackend, Conversation, SamplingParams
from intbench.agents.parsing import parse_leakage
from intbench.analysis.judging import CachedJudge
from intbench.analysis.messages import (
    AnalysisError,
    TeacherMessage,
    collect_messages,
    resolve_problem_map,
)
from intbench.analysis.output import jsonable, write_jsonl, write_table
from intbench.cache import JsonCache
from intbench.metrics import BOOTSTRAP_SAMPLES, Table, bootstrap, by_problem
from intbench.records import Problem
from intbench.rundir import RunDir
from intbench.verifiers.leakage import answer_leaked

ALL_TEACHERS = "all"
ANALYSIS_DIR = "analysis"
JUDGE_SAMPLING = SamplingParams(temperature=0.0, max_tokens=256)
"""Greedy decoding: an audit should give the same verdict every time."""


def leakage_prompt(item: TeacherMessage, problem: Problem) -> Conversation:
    """The ``leakage_judge`` prompt for one message."""
    from intbench.envs.leak_judge import leak_judge_messages

    return leak_judge_messages(problem, item.message, item.student_answer)


def audit_leakage(
    messages: Iterable[TeacherMessage],
    problems: Mapping[str, Problem],
    judge: CachedJudge,
    sampling: SamplingParams = JUDGE_SAMPLING,
) -> list[dict]:
    """Judge every message (one batched, cached pass) and return one row per message.

    A row holds the message's identity, ``leaked``, ``explanation``, the
    ``detector_leaked`` (the leak detector's verdict), the raw judge ``output`` (``None`` when no reply
    came), ``unreadable`` (a reply came but says neither True nor False) and
    ``error`` (a missing problem, a failed call or an unreadable reply; then
    ``leaked`` is ``None``).
    """
    items = list(messages)
    rows = [
        item.row() | {"message": item.message, "detector_leaked": None,
                      "leaked": None, "unreadable": False, "explanation": None, "output": None, "error": None}
        for item in items
    ]  # fmt: skip
    asked = []
    for row, item in zip(rows, items, strict=True):
        if item.problem_id in problems:
            row["detector_leaked"] = answer_leaked(problems[item.problem_id], item.message)
            asked.append((row, leakage_prompt(item, problems[item.problem_id])))
        else:
            row["error"] = f"problem {item.problem_id!r} not found"
    replies = judge.ask([prompt for _, prompt in asked], sampling)
    for (row, _), reply in zip(asked, replies, strict=True):
        if reply.error:
            row["error"] = reply.error
            continue
        parsed = parse_leakage(reply.text)
        row.update(output=reply.text, leaked=parsed.leaked, unreadable=parsed.error is not None,
                   explanation=parsed.explanation, error=parsed.error)  # fmt: skip
    return rows


def _mean(values: list[float]) -> float:
    return sum(values) / len(values) if values else math.nan


def _rate(rows: list[dict], flag) -> float:
    return _mean([float(flag(r)) for r in rows])


def _teacher_summary(rows: list[dict], samples: int) -> dict:
    responses = [r for r in rows if r["output"] is not None]
    readable = [r for r in responses if not r["unreadable"]]
    compared = [r for r in readable if r["detector_leaked"] is not None]
    groups, compared_groups = by_problem(responses), by_problem(compared)
    return {
        # A.6: identified leaks / all judge responses (an unreadable reply identifies none).
        "leak_rate": bootstrap(
            groups, lambda rs: _rate(rs, lambda r: r["leaked"] is True), samples
        ),
        "detector_leak_rate": bootstrap(
            compared_groups, lambda rs: _rate(rs, lambda r: r["detector_leaked"]), samples
        ),
        "agreement": bootstrap(
            compared_groups,
            lambda rs: _rate(rs, lambda r: r["leaked"] == r["detector_leaked"]),
            samples,
        ),
        "confusion": _confusion(compared),
        "n_messages": len(rows),
        "n_responses": len(responses),
        "n_unreadable": len(responses) - len(readable),
        "n_errors": len(rows) - len(responses),
        "n_problems": len(groups),
    }


def _confusion(compared: list[dict]) -> dict[str, int]:
    """How the judge's verdicts and the detector's agree, over replies that have both."""
    both = sum(1 for r in compared if r["leaked"] and r["detector_leaked"])
    llm_only = sum(1 for r in compared if r["leaked"] and not r["detector_leaked"])
    detector_only = sum(1 for r in compared if not r["leaked"] and r["detector_leaked"])
    return {
        "both": both,
        "llm_only": llm_only,
        "detector_only": detector_only,
        "neither": len(compared) - both - llm_only - detector_only,
    }


def leakage_summary(rows: list[dict], samples: int = BOOTSTRAP_SAMPLES) -> dict[str, dict]:
    """Per teacher (sorted, then ``"all"``): leak rates with CIs, agreement with the detector, counts.

    The leak rate counts every judge response (``n_responses``), unreadable
    ones (``n_unreadable``) included; messages without one (``n_errors``) are
    left out.  ``agreement`` is the share of readable replies whose verdict
    equals the leak detector's.
    """
    per_teacher: dict[str, list[dict]] = defaultdict(list)
    for row in rows:
        per_teacher[row["teacher"]].append(row)
    summary = {
        teacher: _teacher_summary(per_teacher[teacher], samples) for teacher in sorted(per_teacher)
    }
    if rows:
        summary[ALL_TEACHERS] = _teacher_summary(list(rows), samples)
    return summary


def leakage_table(summary: dict[str, dict]) -> Table:
    """The audit as a report table: one row per teacher."""
    rows = [
        [
            teacher,
            s["n_messages"],
            s["n_responses"],
            s["n_unreadable"],
            s["n_errors"],
            s["leak_rate"],
            s["detector_leak_rate"],
            s["agreement"],
        ]
        for teacher, s in summary.items()
    ]
    return Table(
        name="leakage_audit",
        title="LLM leakage audit",
        columns=["Teacher", "Messages", "Judge responses", "Unreadable replies", "Judge errors",
                 "Leak rate", "Detector leak rate", "Agreement (LLM vs detector)"],
        ids=["teacher", "messages", "judge_responses", "unreadable", "judge_errors", "leak_rate",
             "detector_leak_rate", "agreement"],
        rows=rows,
        note="Leak = the judge answers True (feedback paper App. A.6). Leak rate = leaks / judge "
        "responses; an unreadable reply stays in that denominator as no leak and is counted in its "
        "own column. Messages without a reply (failed call, missing problem) are judge errors, in "
        "no rate. 95% bootstrap intervals resample problems.",
    )  # fmt: skip


@dataclass
class LeakageAudit:
    """What :func:`run_leakage_audit` computed and wrote."""

    rows: list[dict]
    summary: dict[str, dict]
    table: Table
    n_episodes: int
    n_error_episodes: int
    judge_calls: int
    files: list[Path] = field(default_factory=list)


def run_leakage_audit(
    run_dir: str | os.PathLike,
    judge: str | ChatBackend,
    *,
    problems: Mapping[str, Problem] | Iterable[Problem] | None = None,
    cache: JsonCache | None = None,
    batch_size: int = 16,
    samples: int = BOOTSTRAP_SAMPLES,
) -> LeakageAudit:
    """Audit every teacher message of a run and write ``DIR/analysis/``:
    ``leakage.jsonl`` (one row per message), ``leakage_summary.json`` and
    ``leakage_audit.md``/``.csv``.

    Raises:
        AnalysisError: the directory holds no episodes, or its problems cannot be rebuilt.
    """
    run = RunDir(run_dir)
    records = run.episodes()
    if not records:
        raise AnalysisError(f"no episodes in {run.episodes_path}")
    collected = collect_messages(records)
    problem_map = resolve_problem_map(run_dir, problems, collected.messages)
    cached = CachedJudge(judge, cache, batch_size)
    rows = audit_leakage(collected.messages, problem_map, cached)
    summary = leakage_summary(rows, samples)
    table = leakage_table(summary)
    out = Path(run_dir) / ANALYSIS_DIR
    write_jsonl(out / "leakage.jsonl", rows)
    summary_path = out / "leakage_summary.json"
    meta = {
        "judge": cached.spec,
        "n_episodes": collected.n_episodes,
        "n_error_episodes": collected.n_error_episodes,
    }
    summary_path.write_text(
        json.dumps(jsonable(meta | {"teachers": summary}), indent=2, ensure_ascii=False) + "\n"
    )
    files = [out / "leakage.jsonl", summary_path, *write_table(out, table)]
    return LeakageAudit(
        rows, summary, table, collected.n_episodes, collected.n_error_episodes, cached.calls, files
    )
