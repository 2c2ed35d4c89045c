"""Intervention categorisation: the Int-Bench paper's bottom-up pipeline (App. C.3, F.7).

Every teacher message is categorised along two dimensions, each in three stages:

* **functional role**: how the message helps the student;
* **solution leakage**: how much of the solution it reveals.

1. **Label** (L1): the judge explains the message in one line, once per
   dimension (``categorize_role``: ``Reason:``; ``categorize_leakage``:
   ``Solution Revealed:``).  Both prompts share one context block
   (``_categorize_context.j2``): the problem, the reference solution, the
   student's reasoning up to the intervention in the run's chunks, and the
   message.
2. **Cluster** (L2): the distinct explanations of a dimension go to the judge
   in one prompt (``categorize_cluster_role``, ``categorize_cluster_leakage``),
   which groups them into named, described, domain-independent categories
   (JSON reply).
3. **Relabel** (L3): each message's explanation is assigned to exactly one
   category of that dimension's taxonomy (``categorize_relabel``).

The result is the paper's Table 1: per dimension, for each category and
teacher (and condition), the share of the teacher's messages in it.  Every
row also carries ``detector_leaked``, the verifier-based leak detector's
verdict (:func:`~intbench.verifiers.leakage.answer_leaked`), and Table 1(b)
ends with the share of messages it flags, next to the judge's categories.  A
taxonomy can be given per dimension (``taxonomy=``, or ``"paper"`` for Table
1's category names), which skips stage 2 for that dimension, so that several
runs are compared in the same categories.  Unparsable stage-1/3 output is
recorded per message and dimension as an error and left out of the shares
(and counted); a stage-2 reply without a usable taxonomy stops the pipeline
with an error, since nothing downstream can proceed without one.
"""

from __future__ import annotations

import json
import os
import re
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from intbench.agents.base import ChatBackend, SamplingParams
from intbench.agents.parsing import field_values, strip_think
from intbench.analysis.judging import CachedJudge
from intbench.analysis.leakage_audit import ALL_TEACHERS, ANALYSIS_DIR, JUDGE_SAMPLING
from intbench.analysis.messages import (
    AnalysisError,
    TeacherMessage,
    collect_messages,
    resolve_problem_map,
)
from intbench.analysis.output import jsonable, write_jsonl, write_table
from intbench.cache import JsonCache
from intbench.envs.domains.prompting import reference_text, render_messages
from intbench.metrics import Table
from intbench.records import Problem
from intbench.rundir import RunDir
from intbench.verifiers.leakage import answer_leaked

CLUSTER_SAMPLING = SamplingParams(temperature=0.0, max_tokens=1024)
DEFAULT_MAX_LABELS = 200
"""Explanations sent to a clustering prompt: the most frequent ones, so the prompt stays bounded."""


@dataclass(frozen=True)
class Dimension:
    """One of the two things a message is categorised by."""

    name: str  # "role" or "leakage": the prefix of its row fields
    title: str
    label_template: str
    field: str  # the stage-1 reply's field
    cluster_template: str
    paper: tuple[str, ...]  # Table 1's categories, in the paper's order


DIMENSIONS = (
    Dimension(
        "role",
        "functional role",
        "categorize_role",
        "Reason",
        "categorize_cluster_role",
        (
            "Redirecting away from an unproductive path",
            "Reframing the problem representation",
            "Correcting local errors",
            "Refocusing attention on salient evidence",
            "Connecting partial insights into a coherent whole",
            "Narrowing the search space",
            "Prompting pattern recognition",
            "Validating productive reasoning",
            "Encouraging verification and self-checking",
            "Extending a correct partial solution",
            "Clarifying rules and constraints",
            "Modeling a systematic strategy",
            "Providing targeted hints or candidate answers",
            "Providing closure or final confirmation",
            "Explaining why an answer fits",
            "Supporting persistence and reducing frustration",
        ),
    ),
    Dimension(
        "leakage",
        "solution leakage",
        "categorize_leakage",
        "Solution Revealed",
        "categorize_cluster_leakage",
        (
            "Full solution revealed",
            "Strong narrowing or near-solution scaffold",
            "Key mechanism disclosure",
            "Minor local correction",
            "Answer revealed without full explanation",
            "Partial worked solution",
            "General reframing hint",
            "Wrong-path rejection",
            "Validation only",
            "Broad process hint",
        ),
    ),
)
BY_NAME = {d.name: d for d in DIMENSIONS}
PAPER = "paper"
"""``taxonomy="paper"``: Table 1's category names for both dimensions (the paper gives no descriptions)."""


def paper_taxonomy() -> dict[str, list[dict]]:
    """Int-Bench Table 1's categories: ``{"role": [...], "leakage": [...]}``."""
    return {d.name: [{"name": n, "description": ""} for n in d.paper] for d in DIMENSIONS}


# ------------------------------------------------------------------ parsing
@dataclass(frozen=True)
class ReasonParse:
    """A parsed stage-1 reply: the one-line explanation, or ``None`` with an error."""

    reason: str | None
    error: str | None = None


def parse_reason(text: str, name: str = "Reason") -> ReasonParse:
    """Read the ``name:`` line (``Reason`` or ``Solution Revealed``) of a stage-1 reply (never raises)."""
    body = strip_think(text) if isinstance(text, str) else ""
    values = [v for v in field_values(body, name) if v]
    if not values:
        return ReasonParse(None, f"missing '{name}:' line" if body else "empty judge output")
    return ReasonParse(" ".join(values[0].split()).rstrip("."))


@dataclass(frozen=True)
class TaxonomyParse:
    """A parsed stage-2 reply: ``[{"name", "description"}, ...]`` or an error."""

    categories: list[dict]
    error: str | None = None


def validate_taxonomy(data: object) -> list[dict]:
    """Normalise a taxonomy: ``{"categories": [...]}`` or a list of names or ``{name, description}``.

    Raises:
        AnalysisError: no categories, a nameless category or a repeated name.
    """
    if isinstance(data, Mapping):
        data = data.get("categories")
    if not isinstance(data, list) or not data:
        raise AnalysisError("a taxonomy needs a non-empty 'categories' list")
    categories, seen = [], set()
    for entry in data:
        if isinstance(entry, str):
            entry = {"name": entry}
        name = entry.get("name") if isinstance(entry, Mapping) else None
        if not isinstance(name, str) or not name.strip():
            raise AnalysisError(f"taxonomy category without a name: {entry!r}"[:200])
        name = " ".join(name.split())
        if name.lower() in seen:
            raise AnalysisError(f"taxonomy names category {name!r} twice")
        seen.add(name.lower())
        description = entry.get("description") or ""
        categories.append({"name": name, "description": str(description).strip()})
    return categories


def validate_taxonomies(data: object) -> dict[str, list[dict]]:
    """The given taxonomy per dimension: ``"paper"``, or a mapping of ``role`` and/or
    ``leakage`` to taxonomies; a single taxonomy (``{"categories": ...}`` or a
    list, as earlier versions wrote) is the functional-role one.  A dimension
    left out is clustered.

    Raises:
        AnalysisError: an unknown dimension or an unusable taxonomy.
    """
    if data == PAPER:
        return paper_taxonomy()
    if isinstance(data, list) or (isinstance(data, Mapping) and "categories" in data):
        return {"role": validate_taxonomy(data)}
    if not isinstance(data, Mapping):
        raise AnalysisError(f"a taxonomy must be 'paper', a list or a mapping, got {data!r}"[:200])
    unknown = set(data) - set(BY_NAME)
    if unknown:
        raise AnalysisError(
            f"unknown categorisation dimension(s) {sorted(unknown)}; use {list(BY_NAME)}"
        )
    chosen = {}
    for name, taxonomy in data.items():
        if taxonomy is None:
            continue
        try:
            chosen[name] = validate_taxonomy(taxonomy)
        except AnalysisError as exc:
            raise AnalysisError(f"{name} taxonomy: {exc}") from None
    return chosen


def parse_taxonomy(text: str) -> TaxonomyParse:
    """Find the JSON taxonomy in a clustering reply (code fences and chatter allowed)."""
    body = strip_think(text) if isinstance(text, str) else ""
    decoder = json.JSONDecoder()
    for match in re.finditer(r"\{", body):
        try:
            data, _ = decoder.raw_decode(body, match.start())
        except ValueError:
            continue
        if isinstance(data, dict) and "categories" in data:
            try:
                return TaxonomyParse(validate_taxonomy(data))
            except AnalysisError as exc:
                return TaxonomyParse([], str(exc))
    return TaxonomyParse([], "no JSON object with 'categories' in the reply")


@dataclass(frozen=True)
class CategoryParse:
    """A parsed stage-3 reply: a taxonomy name, or ``None`` with an error."""

    category: str | None
    error: str | None = None


def _plain(text: str) -> str:
    return " ".join(re.sub(r"[^\w\s]", " ", text.lower()).split())


def parse_category(text: str, names: Sequence[str]) -> CategoryParse:
    """Read ``Category:`` from a ``categorize_relabel`` reply and match it to ``names``.

    The value matches a name ignoring case, punctuation and spacing; failing
    that, it matches if exactly one name occurs inside it.  Anything else is
    an error (never a guessed category).
    """
    body = strip_think(text) if isinstance(text, str) else ""
    values = field_values(body, "category")
    if not values:
        return CategoryParse(None, "missing 'Category:' line" if body else "empty judge output")
    value = _plain(values[0])
    by_plain = {_plain(name): name for name in names}
    if value in by_plain:
        return CategoryParse(by_plain[value])
    inside = [
        name
        for plain, name in by_plain.items()
        if plain and re.search(rf"\b{re.escape(plain)}\b", value)
    ]
    if len(inside) == 1:
        return CategoryParse(inside[0])
    return CategoryParse(None, f"category {values[0][:60]!r} is not one of the taxonomy's names")


# ----------------------------------------------------------------- pipeline
@dataclass
class Categorization:
    """The pipeline's result: one row per message, and per dimension the taxonomy,
    the stage-1 explanation counts and the raw stage-2 reply (``None`` when given)."""

    rows: list[dict]
    taxonomies: dict[str, list[dict]]
    labels: dict[str, dict[str, int]]
    cluster_outputs: dict[str, str | None]


def _label_counts(labels: Iterable[str]) -> dict[str, int]:
    """Distinct labels (case-insensitive; first spelling kept) with counts, most frequent first."""
    counts: Counter[str] = Counter()
    spelling: dict[str, str] = {}
    for label in labels:
        spelling.setdefault(label.lower(), label)
        counts[label.lower()] += 1
    return {spelling[k]: n for k, n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))}


def context_variables(item: TeacherMessage, problem: Problem) -> dict:
    """The shared context block's variables for one message (App. F.7)."""
    return {
        "problem": problem,
        "reference": reference_text(problem),
        "chunk_size": item.chunk_size,
        "at_chunk": item.at_chunk,
        "chunks_shown": item.at_chunk,
        "total_chunks": item.total_chunks,
        "prefix": item.prefix,
        "message": item.message,
    }


def _cluster(dimension: Dimension, labels: dict[str, int], domain: str, judge: CachedJudge,
             max_labels: int) -> tuple[list[dict], str]:  # fmt: skip
    """Stage 2 for one dimension: the taxonomy and the judge's raw reply."""
    if not labels:
        raise AnalysisError(
            f"no message got a readable {dimension.title} label, so there is nothing to cluster"
        )
    prompt = render_messages(domain, dimension.cluster_template, labels=list(labels)[:max_labels])
    reply = judge.ask([prompt], CLUSTER_SAMPLING)[0]
    if reply.error:
        raise AnalysisError(f"the {dimension.title} clustering call failed: {reply.error}")
    parsed = parse_taxonomy(reply.text)
    if parsed.error:
        raise AnalysisError(
            f"the judge's {dimension.title} taxonomy is unusable ({parsed.error}); reply began "
            f"{reply.text[:200]!r}. Pass a taxonomy file instead (--taxonomy)."
        )
    return parsed.categories, reply.text


def categorize_messages(
    messages: Iterable[TeacherMessage],
    problems: Mapping[str, Problem],
    judge: CachedJudge,
    *,
    taxonomy: object | None = None,
    max_labels: int = DEFAULT_MAX_LABELS,
) -> Categorization:
    """Run the three stages for both dimensions over ``messages`` (each stage one
    batched, cached pass over both).

    Rows hold the message's identity and text and, per dimension ``d``
    (``role``, ``leakage``), ``d_reason`` (stage 1) and ``d_category``
    (stage 3), plus ``errors`` keyed ``d_label`` / ``d_relabel`` (a field is
    ``None`` when its stage failed).

    Raises:
        AnalysisError: no explanation to cluster, or an unusable stage-2 taxonomy.
    """
    if max_labels < 1:
        raise ValueError(f"max_labels must be at least 1, got {max_labels}")
    given = validate_taxonomies(taxonomy) if taxonomy is not None else {}
    items = list(messages)
    rows = _empty_rows(items, problems)
    known = [(row, item, problems[item.problem_id]) for row, item in zip(rows, items, strict=True)
             if item.problem_id in problems]  # fmt: skip
    _label_reasons(known, judge)
    taxonomies, labels, outputs = _taxonomies(rows, known, given, judge, max_labels)
    _relabel(known, taxonomies, judge)
    return Categorization(rows, taxonomies, labels, outputs)


def _empty_rows(items: list[TeacherMessage], problems: Mapping[str, Problem]) -> list[dict]:
    """A row per message with its identity and detector verdict, every stage's field unset."""
    rows = []
    for item in items:
        problem = problems.get(item.problem_id)
        row = item.row() | {"message": item.message, "errors": {}, "detector_leaked":
                            None if problem is None else answer_leaked(problem, item.message)}  # fmt: skip
        for dimension in DIMENSIONS:
            row[f"{dimension.name}_reason"] = row[f"{dimension.name}_category"] = None
        rows.append(row)
    for row in rows:
        if row["problem_id"] not in problems:
            row["errors"]["problem"] = f"problem {row['problem_id']!r} not found"
    return rows


def _label_reasons(known: list[tuple[dict, TeacherMessage, Problem]], judge: CachedJudge) -> None:
    """Stage 1: one explanation per message and dimension, the shared context in each prompt."""
    asks = [(row, dimension, render_messages(item.domain, dimension.label_template,
                                             **context_variables(item, problem)))
            for row, item, problem in known for dimension in DIMENSIONS]  # fmt: skip
    replies = judge.ask([prompt for _, _, prompt in asks], JUDGE_SAMPLING)
    for (row, dimension, _), reply in zip(asks, replies, strict=True):
        if reply.error:
            row["errors"][f"{dimension.name}_label"] = reply.error
            continue
        parsed = parse_reason(reply.text, dimension.field)
        row[f"{dimension.name}_reason"] = parsed.reason
        if parsed.error:
            row["errors"][f"{dimension.name}_label"] = parsed.error


def _taxonomies(rows: list[dict], known: list[tuple[dict, TeacherMessage, Problem]],
                given: dict[str, list[dict]], judge: CachedJudge,
                max_labels: int) -> tuple[dict, dict, dict]:  # fmt: skip
    """Stage 2: a taxonomy per dimension, unless one was given; also the labels and replies."""
    taxonomies: dict[str, list[dict]] = {}
    labels: dict[str, dict] = {}
    outputs: dict[str, str | None] = {}
    for dimension in DIMENSIONS:
        name = dimension.name
        labels[name] = _label_counts(r[f"{name}_reason"] for r in rows if r[f"{name}_reason"])
        if name in given:
            taxonomies[name], outputs[name] = given[name], None
        else:
            # The clustering prompts do not depend on the domain; any domain renders them.
            domain = known[0][1].domain if known else "math"
            taxonomies[name], outputs[name] = _cluster(
                dimension, labels[name], domain, judge, max_labels
            )
    return taxonomies, labels, outputs


def _relabel(known: list[tuple[dict, TeacherMessage, Problem]],
             taxonomies: dict[str, list[dict]], judge: CachedJudge) -> None:  # fmt: skip
    """Stage 3: every explanation into its dimension's fixed taxonomy."""
    asks = [(row, dimension, render_messages(item.domain, "categorize_relabel",
                                             reason=row[f"{dimension.name}_reason"],
                                             taxonomy=taxonomies[dimension.name]))
            for row, item, _ in known for dimension in DIMENSIONS
            if row[f"{dimension.name}_reason"]]  # fmt: skip
    replies = judge.ask([prompt for _, _, prompt in asks], JUDGE_SAMPLING)
    for (row, dimension, _), reply in zip(asks, replies, strict=True):
        if reply.error:
            row["errors"][f"{dimension.name}_relabel"] = reply.error
            continue
        names = [c["name"] for c in taxonomies[dimension.name]]
        parsed = parse_category(reply.text, names)
        row[f"{dimension.name}_category"] = parsed.category
        if parsed.error:
            row["errors"][f"{dimension.name}_relabel"] = parsed.error


# -------------------------------------------------------------------- table
def group_label(row: Mapping) -> str:
    """The column a message is counted in: its teacher, and its condition where it has one
    (Table 1 splits Standard and Oracle)."""
    condition = row.get("condition")
    return f"{row['teacher']}/{condition}" if condition else str(row["teacher"])


def category_shares(
    rows: list[dict], taxonomy: list[dict], dimension: str = "role"
) -> dict[str, dict]:
    """Per teacher and condition (sorted, then ``"all"``): for each category of
    ``dimension``, the share of the group's categorised messages in it.

    Returns ``{group: {"n": categorised, "n_errors": uncategorised,
    "categories": {name: {"count", "share"}}}}``.
    """
    key = f"{dimension}_category"
    per_group: dict[str, list[dict]] = defaultdict(list)
    for row in rows:
        per_group[group_label(row)].append(row)
    groups = {g: per_group[g] for g in sorted(per_group)}
    if rows:
        groups[ALL_TEACHERS] = list(rows)
    result = {}
    for group, members in groups.items():
        placed = [r for r in members if r.get(key) is not None]
        categories = {}
        for category in taxonomy:
            count = sum(1 for r in placed if r[key] == category["name"])
            categories[category["name"]] = {
                "count": count,
                "share": count / len(placed) if placed else float("nan"),
            }
        result[group] = {
            "n": len(placed),
            "n_errors": len(members) - len(placed),
            "categories": categories,
        }
    return result


def _detector_share(rows: list[dict], group: str) -> float:
    """The share of ``group``'s messages (with a known problem) that the leak detector flags."""
    members = [r for r in rows if group in (ALL_TEACHERS, group_label(r))]
    checked = [r["detector_leaked"] for r in members if r.get("detector_leaked") is not None]
    return sum(checked) / len(checked) if checked else float("nan")


def category_table(rows: list[dict], taxonomy: list[dict], dimension: str = "role") -> Table:
    """Table 1(a) (``role``) or 1(b) (``leakage``): category x teacher, the share of messages."""
    spec = BY_NAME[dimension]
    shares = category_shares(rows, taxonomy, dimension)
    groups = list(shares)
    columns = ["Category", "Description", *groups]
    ids = ["category", "description", *groups]
    table_rows = []
    for category in taxonomy:
        table_rows.append(
            [category["name"], category["description"]]
            + [shares[g]["categories"][category["name"]]["share"] for g in groups]
        )
    if dimension == "leakage":
        table_rows.append(
            ["Flagged by the leak detector", "a span the domain's verifier accepts as the answer"]
            + [_detector_share(rows, g) for g in groups]
        )
    table_rows.append(
        ["Messages (categorised / uncategorised)", ""]
        + [f"{shares[g]['n']} / {shares[g]['n_errors']}" for g in groups]
    )
    part = "a" if dimension == "role" else "b"
    return Table(
        name=f"intervention_{dimension}",
        title=f"Table 1({part}): {spec.title} of the interventions, by teacher",
        columns=columns,
        ids=ids,
        rows=table_rows,
        note=f"Fraction of each teacher's (per condition) categorised messages in each {spec.title} "
        "category; every message has one category. Uncategorised messages (judge errors) are left out.",
    )


# ------------------------------------------------------------------ run dir
@dataclass
class CategorizationRun:
    """What :func:`run_categorization` computed and wrote."""

    result: Categorization
    tables: list[Table]
    n_episodes: int
    n_error_episodes: int
    judge_calls: int
    files: list[Path] = field(default_factory=list)


def load_taxonomy(path: str | os.PathLike) -> dict[str, list[dict]]:
    """The taxonomies of a JSON file, per dimension (``categories.json`` of an earlier
    run works as is; see :func:`validate_taxonomies`); ``"paper"`` gives Table 1's.

    Raises:
        AnalysisError: the file is missing, not JSON, or not a taxonomy.
    """
    if str(path) == PAPER:
        return paper_taxonomy()
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise AnalysisError(f"taxonomy file {path} not found") from None
    except ValueError as exc:
        raise AnalysisError(f"taxonomy file {path} is not valid JSON: {exc}") from None
    if isinstance(data, Mapping) and "dimensions" in data:
        data = {name: part.get("categories") for name, part in data["dimensions"].items()}
    return validate_taxonomies(data)


def run_categorization(
    run_dir: str | os.PathLike,
    judge: str | ChatBackend,
    *,
    taxonomy: object | None = None,
    problems: Mapping[str, Problem] | Iterable[Problem] | None = None,
    cache: JsonCache | None = None,
    batch_size: int = 16,
    max_labels: int = DEFAULT_MAX_LABELS,
) -> CategorizationRun:
    """Categorise every teacher message of a run and write ``DIR/analysis/``:
    ``categories.json`` (per dimension: taxonomy, explanation counts, the raw
    clustering reply), ``categorized.jsonl`` and Table 1 as
    ``intervention_role.md``/``.csv`` and ``intervention_leakage.md``/``.csv``.

    Raises:
        AnalysisError: no episodes or no teacher messages, problems that cannot
            be rebuilt, or no usable taxonomy.
    """
    run = RunDir(run_dir)
    records = run.episodes()
    if not records:
        raise AnalysisError(f"no episodes in {run.episodes_path}")
    collected = collect_messages(records)
    if not collected.messages:
        raise AnalysisError(
            f"no teacher messages in the {collected.n_episodes} episodes of {run_dir}"
        )
    problem_map = resolve_problem_map(run_dir, problems, collected.messages)
    cached = CachedJudge(judge, cache, batch_size)
    result = categorize_messages(
        collected.messages, problem_map, cached, taxonomy=taxonomy, max_labels=max_labels
    )
    tables = [category_table(result.rows, result.taxonomies[d.name], d.name) for d in DIMENSIONS]
    out = Path(run_dir) / ANALYSIS_DIR
    out.mkdir(parents=True, exist_ok=True)
    taxonomy_path = out / "categories.json"
    document = {
        "judge": cached.spec,
        "dimensions": {
            d.name: {
                "categories": result.taxonomies[d.name],
                "labels": result.labels[d.name],
                "cluster_output": result.cluster_outputs[d.name],
                "given": result.cluster_outputs[d.name] is None,
            }
            for d in DIMENSIONS
        },
    }
    taxonomy_path.write_text(
        json.dumps(jsonable(document), indent=2, ensure_ascii=False) + "\n", encoding="utf-8"
    )
    write_jsonl(out / "categorized.jsonl", result.rows)
    files = [taxonomy_path, out / "categorized.jsonl"]
    for table in tables:
        files += write_table(out, table)
    return CategorizationRun(
        result, tables, collected.n_episodes, collected.n_error_episodes, cached.calls, files
    )
