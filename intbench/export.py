"""Run directories as a Hugging Face dataset, with a dataset card, ready to share.

:func:`export_runs` writes ``DIR`` as one ``train`` split, in two forms that
hold the same rows:

``DIR/data/train-00000-of-00001.parquet``
    the Parquet file that ``datasets.load_dataset(DIR)`` (and the hub, once
    the folder is uploaded) reads, through the card's ``configs``; pandas,
    polars or DuckDB read it too.
``DIR/dataset_dict.json`` and ``DIR/train/``
    the same rows as ``DatasetDict.save_to_disk`` writes them, for
    ``datasets.load_from_disk(DIR)``.  ``load_dataset`` refuses a folder whose
    top level is a saved ``Dataset`` (it holds ``state.json``), so the saved
    copy is a one-split ``DatasetDict``: both loaders give a ``DatasetDict``
    with the split ``train``.

One row per episode (the latest record of each, as
:meth:`~intbench.rundir.RunDir.episodes` gives them), the runs concatenated
with a ``run`` column naming each.  The columns people filter on are
flattened from the typed records (see :data:`COLUMNS`); the ``record`` column
holds the whole :class:`~intbench.records.Episode` as JSON, so every metric
can be recomputed from the dataset alone::

    episodes = [Episode.from_dict(json.loads(r)) for r in dataset["record"]]

``DIR/README.md`` is the dataset card: YAML front matter (licences, source
datasets, tags, and the config that points the loader at the Parquet file),
the columns, the problems' sources and licences, each run's config, the
metric tables ``intbench report`` writes, and the papers to cite.
:func:`push_to_hub` uploads the card and the Parquet file with
``huggingface_hub``.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import shutil
import tempfile
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from intbench.envs.option_classes import protocol_options
from intbench.extras import require
from intbench.metrics import BOOTSTRAP_SAMPLES, summarize
from intbench.options import option_help
from intbench.protocols import PROTOCOLS
from intbench.records import Episode
from intbench.rundir import EPISODES_FILE, RunDir

RECORD_COLUMN = "record"
CARD_FILE = "README.md"
SPLIT = "train"
PARQUET_FILE = f"data/{SPLIT}-00000-of-00001.parquet"  # the hub's shard naming
DATA_FILES = f"data/{SPLIT}-*.parquet"  # the card's config: what load_dataset reads
# what DatasetDict.save_to_disk writes for load_from_disk; not uploaded (the hub reads Parquet)
DISK_COPY = ("dataset_dict.json", f"{SPLIT}/*")

# The problem licences of the built-in data (README, "Licences") as hub licence ids;
# any other licence makes the card say "other" and list it in the text.
HUB_LICENSES = {"mit": "mit", "apache-2.0": "apache-2.0", "cc-by-4.0": "cc-by-4.0"}

# (title, what it defines, the protocols it covers): as docs/FIDELITY.md names the papers
PAPERS = [
    ("AI Assistants Overassist", "Int-Bench: the monitor protocol", {"monitor", "generalization"}),
    ("What Drives Interactive Improvement from Feedback?", "the feedback protocol", {"feedback"}),
    ("When Models Know More Than They Can Explain", "KITE: the tutor protocol", {"tutor"}),
]


def _option_columns() -> dict[str, tuple[str, str, str]]:
    """The env options that are columns (``option(column=...)``): name -> (protocol, type,
    help), in protocol and field order; each row reads them from its episode's config."""
    return {
        f.name: (protocol, f.metadata["column"], option_help(f))
        for protocol, cls in protocol_options().items()
        for f in dataclasses.fields(cls)
        if f.metadata.get("column")
    }


OPTION_COLUMNS = _option_columns()

COLUMNS: dict[str, tuple[str, str]] = {
    "run": ("string", "the run the episode comes from (its directory)"),
    "env_id": ("string", "the run's Gymnasium env id (from its config.json)"),
    "protocol": ("string", "monitor, feedback, tutor or generalization"),
    "domain": ("string", "the problem's domain"),
    "problem_id": ("string", "the problem's id"),
    "student": ("string", "student model spec (`human:<id>` for a person)"),
    "teacher": ("string", "teacher policy or model spec"),
    "judge": ("string", "LLM judge model spec, if one graded"),
    "condition": (
        "string",
        "monitor: standard or oracle; feedback: the mode (teacher, self_refine, "
        "self_feedback); tutor: ideation, solo or calibration; generalization: the context",
    ),
    **{
        name: (kind, f"{protocol}: {text}")
        for name, (protocol, kind, text) in OPTION_COLUMNS.items()
    },
    "seed": ("int64", "the episode's seed"),
    "repeat": ("int64", "the repeat of the problem within the run"),
    "episode_id": ("string", "the episode's id"),
    "error": ("string", "set when a model or grader failed; metrics leave such episodes out"),
    "baseline_correct": ("bool", "monitor: the student's unassisted attempt was correct"),
    "intervened": ("bool", "monitor: the teacher intervened"),
    "intervention_applied": (
        "bool",
        "monitor: the intervention was applied (not excluded, e.g. an unlocatable oracle quote)",
    ),
    "intervention_position": ("int64", "monitor: characters of the trace revealed at it"),
    "tau_rel": ("float64", "monitor: that position over the trace length (applied only)"),
    "post_correct": ("bool", "monitor: the continuation after an applied intervention was correct"),
    "n_attempts": ("int64", "feedback/tutor/generalization: attempts made"),
    "attempt_correct": ("list[bool]", "whether each attempt, in order, was correct"),
    "solved_by_attempt": (
        "list[bool]",
        "feedback: solved by attempt k, for k = 1..K (its mean over episodes is acc@k)",
    ),
    "solved_at": ("int64", "1-based index of the first correct attempt"),
    "feedback_turns": ("int64", "feedback: teacher messages given before retries"),
    "n_messages": ("int64", "tutor: ideation messages of the teacher"),
    "n_withheld": ("int64", "tutor: of those, withheld by the checker"),
    "leaked": (
        "bool",
        "the answer leaked: monitor, in the intervention; feedback, in any feedback turn",
    ),
    "final_correct": (
        "bool",
        "the episode ended correct: monitor, the continuation after an applied intervention "
        "(else the baseline); the other protocols, solved",
    ),
    "reward": ("float64", "the env's reward"),
    "problem_source": ("string", "where the problem comes from"),
    "problem_difficulty": ("string", "the problem's difficulty label, as its source gives it"),
    "problem_topic": ("string", "the problem's topic"),
    "problem_license": ("string", "the problem's licence"),
    RECORD_COLUMN: ("string", "the whole episode record as JSON (`Episode.from_dict`)"),
}
"""Every column of the dataset: its type and what it holds."""


class ExportInputError(ValueError):
    """A RUN or ``--out`` that cannot be exported; the message says how to fix it."""


class HubPushError(RuntimeError):
    """The upload to the hub failed; the one-line message names the fix."""


@dataclass
class ExportRun:
    """One run directory read for export."""

    name: str
    run: RunDir
    config: dict | None
    episodes: list[Episode]
    skipped: int = 0  # malformed lines left out
    replaced: int = 0  # earlier records superseded by a retry of the same episode

    @property
    def env_id(self) -> str | None:
        return (self.config or {}).get("env_id")

    @property
    def errors(self) -> int:
        return sum(1 for e in self.episodes if e.error)


@dataclass
class ExportResult:
    """What :func:`export_runs` wrote."""

    path: Path
    card_path: Path
    rows: int
    runs: list[ExportRun]


# ---------------------------------------------------------------- input checks
def find_runs(paths: Iterable[str | os.PathLike]) -> list[RunDir]:
    """The run directories of ``paths`` (a run, its episodes file, or a folder of runs), each once.

    Raises:
        ExportInputError: a path does not exist, or holds no run.
    """
    found: dict[Path, RunDir] = {}
    for path in map(Path, paths):
        if not path.exists():
            raise ExportInputError(
                f"{path}: no such file or directory; give a run directory (one with {EPISODES_FILE})"
            )
        runs = RunDir.below(path)
        if not runs:
            raise ExportInputError(
                f"{path}: no {EPISODES_FILE} in it or below it; give a run directory "
                "written by `intbench eval`"
            )
        for run in runs:
            found.setdefault(run.path.resolve(), run)
    return list(found.values())


def check_out(out: str | os.PathLike) -> None:
    """``out`` can take the dataset: it does not exist yet, or is an empty directory.

    Raises:
        ExportInputError: it is a file, or a directory with something in it.
    """
    out = Path(out)
    if out.exists() and not out.is_dir():
        raise ExportInputError(f"--out {out} is a file; give a new or empty directory")
    if out.is_dir() and any(out.iterdir()):
        raise ExportInputError(
            f"--out {out} is not empty; give a new or empty directory, or remove this one"
        )


def check_hub(repo: str) -> None:
    """``repo`` is a valid dataset repo id and a push can be tried (online, with a token).

    Raises:
        ExportInputError: naming the fix (the repo name, ``hf auth login``, HF_HUB_OFFLINE).
    """
    require("datasets", "huggingface_hub", "--push-to-hub")
    from huggingface_hub import constants, get_token
    from huggingface_hub.errors import HFValidationError
    from huggingface_hub.utils import validate_repo_id

    try:
        validate_repo_id(repo)
    except HFValidationError:
        raise ExportInputError(
            f"--push-to-hub {repo!r} is not a hub repo name; use user-or-org/name "
            "(letters, digits, '-', '_' and '.')"
        ) from None
    if constants.is_offline_mode():
        raise ExportInputError(
            "--push-to-hub: HF_HUB_OFFLINE is set; unset it to push, or export without --push-to-hub"
        )
    if not get_token():
        raise ExportInputError(
            "--push-to-hub needs a Hugging Face token with write access: run `hf auth login` "
            "or set HF_TOKEN"
        )


# ---------------------------------------------------------------- reading
def run_names(runs: Sequence[RunDir]) -> list[str]:
    """A short, distinct name per run: its path below the common parent of all runs.

    One run, or runs side by side, are named by their directory; runs in
    different places keep enough of their path to tell them apart.
    """
    resolved = [run.path.resolve() for run in runs]
    if not resolved:
        return []
    parent = Path(os.path.commonpath([p.parent for p in resolved]))
    return [p.relative_to(parent).as_posix() for p in resolved]


def read_runs(runs: Sequence[RunDir]) -> list[ExportRun]:
    """Each run's latest record per episode (:meth:`RunDir.episodes`), config and counts."""
    read = []
    for name, run in zip(run_names(runs), runs, strict=True):
        episodes = run.episodes()
        skipped = replaced = 0
        if run.has_episodes():
            file = run.read()
            skipped, replaced = file.skipped, len(file.episodes) - len(episodes)
        read.append(ExportRun(name, run, run.config(), episodes, skipped, replaced))
    return read


# ---------------------------------------------------------------- rows
def _text(value: Any) -> str | None:
    return None if value is None else str(value)


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _bool(value: Any) -> bool | None:
    return None if value is None else bool(value)


_READ = {"string": _text, "int64": _int, "bool": _bool}
"""An option column's type -> how a row reads the value from the episode's config."""


def final_correct(episode: Episode) -> bool | None:
    """Whether the episode ended correct (the env's ``success``, read from the record).

    Monitor: the continuation after an applied intervention, else the
    baseline (``None`` without one).  Other protocols: solved at some attempt.
    """
    spec = PROTOCOLS.get(str(episode.protocol))
    return (attempts_final_correct if spec is None else spec.hook("final_correct"))(episode)


def monitor_final_correct(episode: Episode) -> bool | None:
    applied = episode.applied_intervention
    if applied is not None:
        return applied.attempt is not None and applied.attempt.correct
    return None if episode.baseline is None else episode.baseline.correct


def attempts_final_correct(episode: Episode) -> bool | None:
    return episode.solved_at is not None


def _attempts_columns(episode: Episode) -> dict:
    return {
        "n_attempts": len(episode.attempts),
        "attempt_correct": [a.correct for a in episode.attempts],
    }


def monitor_columns(episode: Episode) -> dict:
    """The columns only monitor episodes fill."""
    intervention = episode.intervention
    return {
        "intervened": intervention is not None,
        "intervention_applied": episode.applied_intervention is not None,
        "leaked": bool(intervention and intervention.leaked),
    }


def feedback_columns(episode: Episode) -> dict:
    """The columns only feedback episodes fill."""
    config, solved = episode.config, episode.solved_at
    # without k_max in the config, as many as were made (as the metrics count)
    k_max = _int(config.get("k_max")) or max(len(episode.attempts), 1)
    return {
        **_attempts_columns(episode),
        "k_max": k_max,
        "solved_by_attempt": [solved is not None and solved <= k for k in range(1, k_max + 1)],
        "feedback_turns": sum(1 for f in episode.feedback if f.message),
        "leaked": any(f.leaked for f in episode.feedback if f.message),
    }


def tutor_columns(episode: Episode) -> dict:
    """The columns only tutor episodes fill."""
    messages = [s for s in episode.steps if s.message is not None]
    return {
        **_attempts_columns(episode),
        "n_messages": len(messages),
        "n_withheld": sum(1 for s in messages if getattr(s, "withheld", False)),
    }


def episode_row(episode: Episode, run: str, env_id: str | None = None) -> dict:
    """The dataset row of one episode: :data:`COLUMNS`, flattened from its typed parts.

    Columns its protocol does not fill (``ProtocolSpec.export_columns``) are ``None``;
    records of unregistered protocols (generalization runs) fill the attempt columns.
    """
    intervention, applied = episode.intervention, episode.applied_intervention
    problem = episode.metadata.get("problem") or {}
    row: dict[str, Any] = dict.fromkeys(COLUMNS)
    row.update(
        {
            "run": run,
            "env_id": env_id,
            "protocol": episode.protocol,
            "domain": episode.domain,
            "problem_id": episode.problem_id,
            "student": episode.student,
            "teacher": episode.teacher,
            "judge": episode.judge,
            "condition": episode.condition,
            **{
                name: _READ[kind](episode.config.get(name))
                for name, (owner, kind, _) in OPTION_COLUMNS.items()
                if owner == episode.protocol
            },
            "seed": _int(episode.seed),
            "repeat": _int(episode.metadata.get("repeat")),
            "episode_id": episode.episode_id,
            "error": episode.error,
            "baseline_correct": episode.baseline.correct if episode.baseline else None,
            "intervention_position": intervention.position if intervention else None,
            "tau_rel": applied.tau_rel if applied else None,
            "post_correct": (
                applied.attempt is not None and applied.attempt.correct if applied else None
            ),
            "solved_at": episode.solved_at,
            "final_correct": final_correct(episode),
            "reward": float(episode.reward),
            "problem_source": _text(problem.get("source")),
            "problem_difficulty": _text(problem.get("difficulty")),
            "problem_topic": _text(problem.get("topic")),
            "problem_license": _text(problem.get("license")),
            RECORD_COLUMN: episode.to_json(),
        }
    )
    spec = PROTOCOLS.get(str(episode.protocol))
    row.update(_attempts_columns(episode) if spec is None else spec.hook("export_columns")(episode))
    return row


def features():
    """The dataset's ``datasets.Features``: fixed, so every run and protocol concatenates."""
    import datasets

    list_type = getattr(datasets, "List", datasets.Sequence)  # List is datasets >= 4
    return datasets.Features(
        {
            name: list_type(datasets.Value("bool"))
            if kind == "list[bool]"
            else datasets.Value(kind)
            for name, (kind, _) in COLUMNS.items()
        }
    )


def build_dataset(runs: Sequence[ExportRun]):
    """One ``datasets.Dataset`` of every run's episodes, in run order."""
    import datasets

    rows = [episode_row(e, run.name, run.env_id) for run in runs for e in run.episodes]
    return datasets.Dataset.from_list(rows, features=features())


# ---------------------------------------------------------------- the card
def _hub_license(licenses: set[str]) -> str | list[str]:
    ids = sorted({HUB_LICENSES.get(name.strip().lower(), "other") for name in licenses})
    if not ids:
        return "other"
    return ids[0] if len(ids) == 1 else ids


def _size_category(rows: int) -> str:
    for limit, label in ((1_000, "n<1K"), (10_000, "1K<n<10K"), (100_000, "10K<n<100K")):
        if rows < limit:
            return label
    return "100K<n<1M" if rows < 1_000_000 else "n>1M"


def _problem_sources(runs: Sequence[ExportRun]) -> dict[tuple[str, ...], int]:
    """Episodes per (source, licence, upstream) of their problems, as the records give them."""
    counts: dict[tuple[str, ...], int] = {}
    for run in runs:
        for episode in run.episodes:
            problem = episode.metadata.get("problem") or {}
            key = tuple(str(problem.get(k) or "unknown") for k in ("source", "license", "upstream"))
            counts[key] = counts.get(key, 0) + 1
    return counts


def _front_matter(runs: Sequence[ExportRun], rows: int) -> str:
    import yaml

    episodes = [e for run in runs for e in run.episodes]
    sources = _problem_sources(runs)
    licenses = {license for _, license, _ in sources if license != "unknown"}
    protocols = sorted({str(e.protocol) for e in episodes})
    domains = sorted({str(e.domain) for e in episodes})
    meta = {
        "license": _hub_license(licenses),
        "pretty_name": "IntBench results",
        "size_categories": [_size_category(rows)],
        "source_datasets": sorted({source for source, _, _ in sources if source != "unknown"}),
        "tags": ["intbench", *[t for t in [*protocols, *domains] if t != "intbench"]],
        "configs": [
            {
                "config_name": "default",
                "data_files": [{"split": SPLIT, "path": DATA_FILES}],
            }
        ],
    }
    return "---\n" + yaml.safe_dump(meta, sort_keys=False, allow_unicode=True) + "---\n"


def _loading(repo: str | None) -> str:
    hub = repo or "<user-or-org>/<name>"
    return "\n".join(
        [
            "```python",
            "import json",
            "from datasets import load_dataset, load_from_disk",
            "from intbench.metrics import summarize",
            "from intbench.records import Episode",
            "",
            f'dataset = load_dataset("{hub}", split="{SPLIT}")  # from the hub',
            f'dataset = load_dataset("path/to/this/folder", split="{SPLIT}")  # a local copy',
            f'dataset = load_from_disk("path/to/this/folder")["{SPLIT}"]  # the same rows',
            'monitor = dataset.filter(lambda row: row["protocol"] == "monitor")',
            f'episodes = [Episode.from_dict(json.loads(r)) for r in dataset["{RECORD_COLUMN}"]]',
            "print(summarize(episodes).to_text())  # the tables below",
            "```",
            "",
            f"`{PARQUET_FILE}` holds the rows for `load_dataset` (and pandas, polars or DuckDB); "
            f"`dataset_dict.json` and `{SPLIT}/` hold the same rows for `load_from_disk` and are "
            "not uploaded to the hub.",
        ]
    )


def _sources_section(runs: Sequence[ExportRun]) -> list[str]:
    rows = [
        f"| `{source}` | {license} | {upstream} | {count} |"
        for (source, license, upstream), count in sorted(_problem_sources(runs).items())
    ]
    return [
        "## Problem sources and licences",
        "",
        "Where the episodes' problems come from (`problem_source`, `problem_license`), as each "
        "problem's record names it.",
        "",
        "| source | licence | upstream | episodes |",
        "|---|---|---|---|",
        *rows,
        "",
    ]


def _run_section(run: ExportRun) -> list[str]:
    counts = f"{len(run.episodes)} episode(s), {run.errors} with an error"
    if run.replaced:
        counts += f", {run.replaced} earlier record(s) replaced by a retry"
    if run.skipped:
        counts += f", {run.skipped} malformed line(s) skipped"
    config = json.dumps(run.config, indent=2, ensure_ascii=False) if run.config else None
    return [
        f"### {run.name}",
        "",
        f"`{run.env_id or 'unknown env'}`: {counts}.",
        "",
        *(["```json", config, "```"] if config else ["(no config.json)"]),
        "",
    ]


def dataset_card(
    runs: Sequence[ExportRun], tables: Sequence[Any], rows: int, repo: str | None = None
) -> str:
    """The card's Markdown: front matter, loading, columns, runs, the metric tables, citations."""
    protocols = sorted({str(e.protocol) for run in runs for e in run.episodes})
    # the papers of the protocols these runs used; all three when none is theirs (e.g. human-only)
    papers = [p for p in PAPERS if p[2] & set(protocols)] or PAPERS
    lines = [
        _front_matter(runs, rows),
        f"# IntBench results: {', '.join(protocols)}",
        "",
        f"{rows} episode(s) of {len(runs)} IntBench run(s), one row per episode: the latest "
        "record of each (a retried episode appears once), the runs one after another with "
        f"`run` naming each. Written by `intbench export`; `{RECORD_COLUMN}` holds the whole "
        "episode record, so every metric can be recomputed from the dataset.",
        "",
        "## Loading",
        "",
        _loading(repo),
        "",
        "## Columns",
        "",
        "Columns a protocol does not have are empty (null) in its rows.",
        "",
        "| column | type | meaning |",
        "|---|---|---|",
        *(f"| `{name}` | {kind} | {text} |" for name, (kind, text) in COLUMNS.items()),
        "",
        *_sources_section(runs),
        "## Runs",
        "",
        "Each run's `config.json`.",
        "",
    ]
    for run in runs:
        lines += _run_section(run)
    lines += [
        "## Results",
        "",
        "The tables `intbench report` writes for these episodes (episodes with an error are "
        "left out of every metric and counted).",
        "",
    ]
    lines += [table.to_markdown() for table in tables] or ["No metric covers these episodes.", ""]
    lines += [
        "## Licence",
        "",
        "The problems keep the licences of their sources (the table above; IntBench's README "
        "lists every built-in source). IntBench itself is Apache-2.0.",
        "",
        "## Citation",
        "",
        "If you use these results, please cite the papers whose protocols produced them:",
        "",
        *(f'- "{title}" ({what}).' for title, what, _ in papers),
        "",
    ]
    return "\n".join(lines)


# ---------------------------------------------------------------- writing
@contextlib.contextmanager
def _quiet_progress() -> Iterator[None]:
    """No ``datasets`` progress bar while saving: the command prints its own summary."""
    from datasets.utils import logging as datasets_logging

    enabled = datasets_logging.is_progress_bar_enabled()
    datasets_logging.disable_progress_bar()
    try:
        yield
    finally:
        if enabled:
            datasets_logging.enable_progress_bar()


def export_runs(
    runs: Sequence[ExportRun],
    out: str | os.PathLike,
    samples: int = BOOTSTRAP_SAMPLES,
    repo: str | None = None,
) -> ExportResult:
    """Write the runs' dataset (Parquet and a saved ``DatasetDict``) and its card into ``out``
    (new or empty; see :func:`check_out`).

    Everything is written into a temporary folder next to ``out`` and renamed
    into place at the end, so a failure never leaves half a dataset there.
    ``samples`` is the number of bootstrap resamples behind the cards' CIs;
    ``repo`` names the hub repo in the card's loading example.
    """
    require("datasets", "datasets", "exporting runs")
    import datasets

    from intbench.analysis.saved_tables import saved_analysis_tables

    out = Path(out)
    dataset = build_dataset(runs)
    summary = summarize([e for run in runs for e in run.episodes], samples=samples)
    tables = [*summary.tables, *saved_analysis_tables([r.run.path for r in runs], samples)]
    card = dataset_card(runs, tables, len(dataset), repo)
    out.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{out.name}.", dir=out.parent))
    try:
        # mkdtemp makes the folder private; the export gets the mode a plain mkdir would
        umask = os.umask(0)
        os.umask(umask)
        staging.chmod(0o777 & ~umask)
        with _quiet_progress():
            datasets.DatasetDict({SPLIT: dataset}).save_to_disk(str(staging))
            (staging / PARQUET_FILE).parent.mkdir()
            dataset.to_parquet(str(staging / PARQUET_FILE))
        (staging / CARD_FILE).write_text(card, encoding="utf-8")
        os.replace(staging, out)  # over an empty directory too
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return ExportResult(out, out / CARD_FILE, len(dataset), list(runs))


# ---------------------------------------------------------------- the hub
def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def push_to_hub(folder: str | os.PathLike, repo: str, private: bool = False) -> str:
    """Upload ``folder`` (an export: its card and Parquet file, not the ``load_from_disk``
    copy) to the dataset repo ``repo``, creating it; -> its URL.

    Raises:
        HubPushError: one line that names the fix (login/token, the repo name, the network).
    """
    from huggingface_hub import HfApi
    from huggingface_hub.errors import (
        HfHubHTTPError,
        HFValidationError,
        LocalTokenNotFoundError,
        RepositoryNotFoundError,
    )
    from huggingface_hub.errors import HTTPError as TransportError

    folder = str(folder)
    retry = f"the dataset is in {folder}; push it later with `hf upload {repo} {folder} --repo-type dataset`"
    api = HfApi()
    try:
        url = api.create_repo(repo, repo_type="dataset", private=private, exist_ok=True)
        api.upload_folder(
            repo_id=repo,
            folder_path=folder,
            repo_type="dataset",
            ignore_patterns=list(DISK_COPY),
            commit_message="Upload IntBench results (intbench export)",
        )
    except (LocalTokenNotFoundError, HFValidationError) as exc:
        raise HubPushError(
            f"hub push to {repo} failed ({_first_line(exc)}): run `hf auth login` or set HF_TOKEN"
        ) from None
    except RepositoryNotFoundError:
        raise HubPushError(
            f"hub repo {repo} was not found: check the name (user-or-org/name, a user or "
            f"organisation your token can write to); {retry}"
        ) from None
    except HfHubHTTPError as exc:
        status = getattr(exc.response, "status_code", None)
        if status == 401:
            fix = (
                "the token was refused: run `hf auth login` again or set HF_TOKEN to a valid token"
            )
        elif status == 403:
            fix = (
                "no write access: use a token with write permission (`hf auth login`) and a repo "
                "under your user or an organisation you belong to"
            )
        else:
            fix = f"the hub answered: {_first_line(exc)}"
        raise HubPushError(f"hub push to {repo} failed (HTTP {status}): {fix}; {retry}") from None
    except (TransportError, OSError) as exc:
        raise HubPushError(
            f"could not reach the Hugging Face hub ({_first_line(exc)}): check the network "
            f"or HF_ENDPOINT; {retry}"
        ) from None
    return str(getattr(url, "url", url) or f"https://huggingface.co/datasets/{repo}")
