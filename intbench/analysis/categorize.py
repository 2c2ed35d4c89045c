"""Intervention categorisation: the Int-Bench paper's three-stage pipeline.

1. **Label**: an LLM describes each teacher message's functional role in a
   short free-form label and rates its solution leakage (``categorize_label``).
2. **Cluster**: the distinct labels go to the LLM in one prompt, which merges
   them into a small taxonomy of named, described categories
   (``categorize_cluster``; JSON output).
3. **Relabel**: every message is assigned to exactly one category of that
   fixed taxonomy (``categorize_relabel``).

The result is the paper's Table 1: for each category and teacher, the share
of the teacher's messages in the category and, among them, the share that
leak (stage-1 leakage Partial or Full).  A taxonomy can also be given
(``taxonomy=``), which skips stage 2, so that several runs are compared in
the same categories.  Unparsable stage-1/3 output is recorded per message as
an error and left out of the shares it would enter (and counted); a stage-2
reply without a usable taxonomy stops the pipeline with an error, since
nothing downstream can proceed without one.
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
from intbench.agents.parsing import strip_think
from intbench.analysis.judging import CachedJudge
from intbench.analysis.leakage_audit import (
    ALL_TEACHERS,
    ANALYSIS_DIR,
    JUDGE_SAMPLING,
    LeakageParse,
    field_values,
    parse_leakage,
)
from intbench.analysis.messages import (
    AnalysisError,
    TeacherMessage,
    collect_messages,
    resolve_problem_map,
)
from intbench.analysis.output import jsonable, write_jsonl, write_table
from intbench.cache import JsonCache
from intbench.envs.domains.prompting import render_messages
from intbench.metrics import Table
from intbench.records import Problem
from intbench.rundir import RunDir

CLUSTER_SAMPLING = SamplingParams(temperature=0.0, max_tokens=1024)
DEFAULT_MAX_LABELS = 200
"""Labels sent to the clustering prompt: the most frequent ones, so the prompt stays bounded."""


# ------------------------------------------------------------------ parsing
@dataclass(frozen=True)
class RoleLabel:
    """A parsed stage-1 reply: the role label and the leakage verdict, each with its own error."""

    role: str | None
    leakage: LeakageParse
    error: str | None = None  # about the role; the leakage verdict carries its own


def parse_role_label(text: str) -> RoleLabel:
    """Read ``Role:`` and ``Leakage:`` from a ``categorize_label`` reply (never raises)."""
    body = strip_think(text) if isinstance(text, str) else ""
    leakage = parse_leakage(body)
    roles = [r for r in field_values(body, "role") if r]
    if not roles:
        return RoleLabel(None, leakage, "missing 'Role:' line" if body else "empty judge output")
    return RoleLabel(" ".join(roles[0].split()).rstrip("."), leakage)


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


def parse_taxonomy(text: str) -> TaxonomyParse:
    """Find the JSON taxonomy in a ``categorize_cluster`` reply (code fences and chatter allowed)."""
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
    """The pipeline's result: one row per message, the taxonomy and the label counts."""

    rows: list[dict]
    taxonomy: list[dict]
    labels: dict[str, int]
    cluster_output: str | None  # the raw stage-2 reply (None when the taxonomy was given)


def _label_counts(labels: Iterable[str]) -> dict[str, int]:
    """Distinct labels (case-insensitive; first spelling kept) with counts, most frequent first."""
    counts: Counter[str] = Counter()
    spelling: dict[str, str] = {}
    for label in labels:
        spelling.setdefault(label.lower(), label)
        counts[label.lower()] += 1
    return {spelling[k]: n for k, n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))}


def categorize_messages(
    messages: Iterable[TeacherMessage],
    problems: Mapping[str, Problem],
    judge: CachedJudge,
    *,
    taxonomy: object | None = None,
    max_labels: int = DEFAULT_MAX_LABELS,
) -> Categorization:
    """Run the three stages over ``messages`` (each stage one batched, cached pass).

    Rows hold the message's identity and text, ``role``, ``leakage`` (level),
    ``category`` and ``errors`` (per stage; a message with a stage error has
    ``None`` in that stage's field).

    Raises:
        AnalysisError: no role label to cluster, or an unusable stage-2 taxonomy.
    """
    if max_labels < 1:
        raise ValueError(f"max_labels must be at least 1, got {max_labels}")
    items = list(messages)
    rows = [item.row() | {"message": item.message, "role": None, "leakage": None, "category": None, "errors": {}}
            for item in items]  # fmt: skip
    known = [(row, item, problems[item.problem_id]) for row, item in zip(rows, items, strict=True)
             if item.problem_id in problems]  # fmt: skip
    for row in rows:
        if row["problem_id"] not in problems:
            row["errors"]["problem"] = f"problem {row['problem_id']!r} not found"

    # Stage 1: role label and leakage per message.
    prompts = [
        render_messages(
            item.domain,
            "categorize_label",
            problem=problem,
            prefix=item.prefix,
            message=item.message,
        )
        for _, item, problem in known
    ]
    for (row, _, _), reply in zip(known, judge.ask(prompts, JUDGE_SAMPLING), strict=True):
        if reply.error:
            row["errors"]["label"] = reply.error
            continue
        parsed = parse_role_label(reply.text)
        row.update(role=parsed.role, leakage=parsed.leakage.level)
        if parsed.error:
            row["errors"]["label"] = parsed.error
        if parsed.leakage.error:
            row["errors"]["leakage"] = parsed.leakage.error
    labels = _label_counts(row["role"] for row in rows if row["role"])

    # Stage 2: the taxonomy.
    cluster_output = None
    if taxonomy is not None:
        categories = validate_taxonomy(taxonomy)
    else:
        if not labels:
            raise AnalysisError(
                "no message got a readable role label, so there is nothing to cluster"
            )
        domain = known[0][
            1
        ].domain  # the cluster prompt is domain-independent; any domain renders it
        prompt = render_messages(domain, "categorize_cluster", labels=list(labels)[:max_labels])
        reply = judge.ask([prompt], CLUSTER_SAMPLING)[0]
        if reply.error:
            raise AnalysisError(f"the clustering call failed: {reply.error}")
        cluster_output = reply.text
        parsed_taxonomy = parse_taxonomy(reply.text)
        if parsed_taxonomy.error:
            raise AnalysisError(
                f"the judge's taxonomy is unusable ({parsed_taxonomy.error}); reply began "
                f"{reply.text[:200]!r}. Pass a taxonomy file instead (--taxonomy)."
            )
        categories = parsed_taxonomy.categories

    # Stage 3: every message into the fixed taxonomy.
    names = [c["name"] for c in categories]
    prompts = [
        render_messages(item.domain, "categorize_relabel", taxonomy=categories, problem=problem,
                        prefix=item.prefix, message=item.message)
        for _, item, problem in known
    ]  # fmt: skip
    for (row, _, _), reply in zip(known, judge.ask(prompts, JUDGE_SAMPLING), strict=True):
        if reply.error:
            row["errors"]["relabel"] = reply.error
            continue
        parsed_category = parse_category(reply.text, names)
        row["category"] = parsed_category.category
        if parsed_category.error:
            row["errors"]["relabel"] = parsed_category.error
    return Categorization(rows, categories, labels, cluster_output)


# -------------------------------------------------------------------- table
def category_shares(rows: list[dict], taxonomy: list[dict]) -> dict[str, dict]:
    """Per teacher (sorted, then ``"all"``): for each category, the share of the
    teacher's categorised messages in it and the leak share among those.

    Returns ``{teacher: {"n": categorised, "n_errors": uncategorised,
    "categories": {name: {"count", "share", "leak_share", "n_leak_rated"}}}}``.
    ``leak_share`` counts messages whose stage-1 leakage is Partial or Full
    among those with a readable leakage level (NaN if there are none).
    """
    per_teacher: dict[str, list[dict]] = defaultdict(list)
    for row in rows:
        per_teacher[row["teacher"]].append(row)
    groups = {t: per_teacher[t] for t in sorted(per_teacher)}
    if rows:
        groups[ALL_TEACHERS] = list(rows)
    result = {}
    for teacher, group in groups.items():
        placed = [r for r in group if r["category"] is not None]
        categories = {}
        for category in taxonomy:
            members = [r for r in placed if r["category"] == category["name"]]
            rated = [r for r in members if r["leakage"] is not None]
            leaking = sum(1 for r in rated if r["leakage"] != "none")
            categories[category["name"]] = {
                "count": len(members),
                "share": len(members) / len(placed) if placed else float("nan"),
                "leak_share": leaking / len(rated) if rated else float("nan"),
                "n_leak_rated": len(rated),
            }
        result[teacher] = {
            "n": len(placed),
            "n_errors": len(group) - len(placed),
            "categories": categories,
        }
    return result


def category_table(rows: list[dict], taxonomy: list[dict]) -> Table:
    """Table 1: category x teacher, the share of messages and the leak share in each cell."""
    shares = category_shares(rows, taxonomy)
    teachers = list(shares)
    columns, ids = ["Category", "Description"], ["category", "description"]
    for teacher in teachers:
        columns += [f"{teacher}: share", f"{teacher}: leak"]
        ids += [f"{teacher}_share", f"{teacher}_leak"]
    table_rows = []
    for category in taxonomy:
        row: list = [category["name"], category["description"]]
        for teacher in teachers:
            cell = shares[teacher]["categories"][category["name"]]
            row += [cell["share"], cell["leak_share"]]
        table_rows.append(row)
    counts: list = ["Messages (categorised / uncategorised)", ""]
    for teacher in teachers:
        counts += [f"{shares[teacher]['n']} / {shares[teacher]['n_errors']}", ""]
    table_rows.append(counts)
    return Table(
        name="intervention_categories",
        title="Table 1: intervention categories by teacher",
        columns=columns,
        ids=ids,
        rows=table_rows,
        note="share: fraction of the teacher's categorised messages in the category; leak: fraction of "
        "those whose solution leakage was rated Partial or Full. Uncategorised messages (judge errors) "
        "are left out.",
    )


# ------------------------------------------------------------------ run dir
@dataclass
class CategorizationRun:
    """What :func:`run_categorization` computed and wrote."""

    result: Categorization
    table: Table
    n_episodes: int
    n_error_episodes: int
    judge_calls: int
    files: list[Path] = field(default_factory=list)


def load_taxonomy(path: str | os.PathLike) -> list[dict]:
    """A taxonomy from a JSON file (``categories.json`` of an earlier run works as is).

    Raises:
        AnalysisError: the file is missing, not JSON, or not a taxonomy.
    """
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise AnalysisError(f"taxonomy file {path} not found") from None
    except ValueError as exc:
        raise AnalysisError(f"taxonomy file {path} is not valid JSON: {exc}") from None
    return validate_taxonomy(data)


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
    ``categories.json`` (taxonomy, label counts, judge), ``categorized.jsonl``
    and Table 1 as ``intervention_categories.md``/``.csv``.

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
    table = category_table(result.rows, result.taxonomy)
    out = Path(run_dir) / ANALYSIS_DIR
    out.mkdir(parents=True, exist_ok=True)
    taxonomy_path = out / "categories.json"
    document = {
        "judge": cached.spec,
        "categories": result.taxonomy,
        "labels": result.labels,
        "cluster_output": result.cluster_output,
        "given": taxonomy is not None,
    }
    taxonomy_path.write_text(
        json.dumps(jsonable(document), indent=2, ensure_ascii=False) + "\n", encoding="utf-8"
    )
    write_jsonl(out / "categorized.jsonl", result.rows)
    files = [taxonomy_path, out / "categorized.jsonl", *write_table(out, table)]
    return CategorizationRun(
        result, table, collected.n_episodes, collected.n_error_episodes, cached.calls, files
    )
