"""Shared loader machinery: hub access, local files, offline sources and subsets.

Every domain module builds one :class:`~intbench.envs.domains.registry.Domain`
that says where its problems come from (a dataset on the Hugging Face hub, a package that ships offline
data, or a procedural generator) and how a hub row becomes a
:class:`~intbench.records.Problem`.  :func:`load_from_source` is the one code
path that turns ``(domain, source, split, n, seed)`` into problems.
"""

from __future__ import annotations

import concurrent.futures
import json
import logging
import os
import random
import re
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from intbench import extras
from intbench.envs.domains.registry import DataSourceError, Domain
from intbench.envs.domains.registry import HubRef as HubRef  # the old import path
from intbench.records import Problem

logger = logging.getLogger(__name__)

HUB_CHECK_TIMEOUT_S = 3.0
"""Seconds the hub reachability check may take before the hub counts as down."""

DEFAULT_PROCEDURAL_N = 500
"""How many problems a procedural offline source generates when ``n`` is not given."""

BUILTIN_TEMPLATES = Path(__file__).parent / "templates" / "domains"
"""Where the built-in domains keep their prompt template overrides, one folder each."""

LOCAL_FORMATS = {".jsonl": "json", ".json": "json", ".parquet": "parquet", ".csv": "csv"}


class HubUnavailableError(RuntimeError):
    """A domain could not be loaded from the Hugging Face hub.

    The base of every hub failure, so that one ``except`` covers them all; the
    subclasses say why.  Raised as such for failures that fit no subclass.  The
    message is one line that ends with the fix; ``fix`` holds the fix alone.
    """

    def __init__(self, message: str, fix: str = ""):
        super().__init__(message)
        self.fix = fix


class HubUnreachableError(HubUnavailableError):
    """No network path to the hub (offline machine, proxy, ``HF_HUB_OFFLINE`` with an empty cache)."""


class HubNotFoundError(HubUnavailableError):
    """The hub answered, but the dataset (or its revision) does not exist or is private."""


class HubGatedError(HubUnavailableError):
    """The dataset is gated: it needs a logged-in token whose account accepted its terms."""


class HubSplitError(HubUnavailableError, DataSourceError):
    """The dataset exists but has no such split or config; ``available`` lists what it has."""

    def __init__(self, message: str, fix: str = "", available: list[str] | None = None):
        super().__init__(message, fix)
        self.available = list(available or [])


class SchemaMismatchError(DataSourceError):
    """A row of a hub dataset or local file does not fit the domain's row mapper.

    Attributes:
        row_index: the row's position in its split or file.
        missing: the columns the mapper needed and the row lacks (empty when a
            column was present but of the wrong type).
    """

    # Defaults let pickle rebuild it from its message (worker processes send errors back).
    def __init__(self, message: str, row_index: int = -1, missing: list[str] | None = None):
        super().__init__(message)
        self.row_index = row_index
        self.missing = list(missing or [])


class HubSchemaError(HubUnavailableError, SchemaMismatchError):
    """A hub dataset's rows do not fit the mapper (the dataset changed, or the mapper is wrong)."""

    def __init__(
        self, message: str, row_index: int = -1, missing: list[str] | None = None, fix: str = ""
    ):
        SchemaMismatchError.__init__(self, message, row_index, missing)
        self.fix = fix


class MissingColumns(KeyError):
    """Raised by :func:`require` (a ``KeyError``): every column the row lacks, not just the first."""

    def __init__(self, columns: list[str]):
        super().__init__(columns[0] if len(columns) == 1 else columns)
        self.columns = list(columns)


class SkipRow(Exception):
    """Raised by a row mapper for rows of a shared dataset that belong to another task."""


def require(row: dict, *columns: str) -> None:
    """Raise :class:`MissingColumns` naming all of ``columns`` that ``row`` lacks (or holds as null)."""
    missing = [name for name in columns if row.get(name) is None]
    if missing:
        raise MissingColumns(missing)


@dataclass(frozen=True)
class HubSubset(HubRef):
    """A hub split of which only part is used: ``select`` maps the split's problems to the part.

    ``note`` says which part, for listings and error messages.  Selection sees the
    whole mapped split, so it can be deterministic in content (ids), not row order.
    """

    select: Callable[[list[Problem]], list[Problem]] | None = None
    note: str = ""

    def describe(self) -> str:
        base = super().describe()
        return f"{base}, {self.note}" if self.note else base


def hub_offline_flag() -> bool:
    """True when the user asked the HF libraries not to touch the network."""
    truthy = {"1", "true", "yes", "on"}
    return any(
        os.environ.get(var, "").strip().lower() in truthy
        for var in ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE")
    )


def _probe(url: str, timeout: float) -> None:
    import urllib.request  # only when the hub is really asked (it imports ssl, http)

    # Only a success counts: sandboxes and captive proxies answer anything with 4xx/5xx.
    urllib.request.urlopen(urllib.request.Request(url, method="HEAD"), timeout=timeout).close()


def check_hub_reachable(timeout: float = HUB_CHECK_TIMEOUT_S) -> str | None:
    """Return ``None`` if the hub answers within ``timeout`` seconds, else the reason.

    urllib honours proxy variables, but its timeout does not bound DNS lookups,
    so the probe runs in a worker thread that we stop waiting for.
    """
    endpoint = os.environ.get("HF_ENDPOINT", "https://huggingface.co").rstrip("/")
    pool = concurrent.futures.ThreadPoolExecutor(max_workers=1)
    try:
        pool.submit(_probe, f"{endpoint}/api/datasets", timeout).result(timeout=timeout + 0.5)
    except concurrent.futures.TimeoutError:
        return f"no answer from {endpoint} within {timeout:g} s"
    except Exception as exc:  # any network failure means "unreachable"
        return f"{endpoint} unreachable ({type(exc).__name__}: {exc})"
    finally:
        pool.shutdown(wait=False)
    return None


def _offline_choices(domain: Domain) -> str:
    splits = ", ".join(domain.offline_splits)
    offline = f"{domain.offline_source}; splits: {splits}"
    if domain.procedural:
        offline += f"; {DEFAULT_PROCEDURAL_N} problems unless n is given"
    return (
        f"use source='offline' ({offline}), or pass a local JSONL/JSON/Parquet/CSV file "
        f"in the hub schema as source='path/to/file.jsonl' (CLI: --source offline | --source PATH)"
    )


def _one_line(text: object) -> str:
    return " ".join(str(text).split())


def hub_unavailable_message(domain: Domain, reason: str, fix: str | None = None) -> str:
    """The one-line error text of a failed hub load: what failed, why, and the fix.

    ``fix`` defaults to the offline and local-file choices.
    """
    ids = ", ".join(ref.path for ref in dict.fromkeys(domain.hub.values()))
    fix = fix or _offline_choices(domain)
    return _one_line(
        f"cannot load {domain.name!r} from the Hugging Face hub ({ids}): {reason}. Fix: {fix}."
    )


# --- classifying what datasets.load_dataset raised -------------------------------
#
# Classes are matched by name along the exception chain, so that the same rules
# hold whichever HTTP client (requests, httpx, httpx2, urllib3) and whichever
# huggingface_hub/datasets release raised them, without importing any of them.

_GATED = {"GatedRepoError"}
# What datasets/huggingface_hub write when they re-raise a gated repo as "not found".
_GATED_TEXT = re.compile(r"\bgated (?:dataset|repo)|access to .+ is restricted", re.I | re.S)
_NOT_FOUND = {
    "RepositoryNotFoundError",
    "RevisionNotFoundError",
    "DatasetNotFoundError",
    "DataFilesNotFoundError",
    "DisabledRepoError",
    "BucketNotFoundError",
    "RemoteEntryNotFoundError",
}
_UNREACHABLE = {
    "ConnectionError",  # builtin and requests
    "ConnectError",
    "ConnectTimeout",
    "ReadTimeout",
    "TimeoutException",
    "Timeout",
    "TimeoutError",
    "NetworkError",
    "TransportError",
    "ProxyError",
    "SSLError",
    "MaxRetryError",
    "NewConnectionError",
    "gaierror",
}
_SPLIT_PATTERNS = (  # datasets' builder and arrow reader
    re.compile(r"Bad split: (?P<asked>.+?)\. Available splits: (?P<available>\[.*?\])", re.S),
    re.compile(r"Unknown split \"(?P<asked>.+?)\"\. Should be one of (?P<available>\[.*?\])", re.S),
)
_CONFIG_PATTERNS = (
    re.compile(
        r"BuilderConfig '(?P<asked>.+?)' not found\. Available: (?P<available>\[.*?\])", re.S
    ),
    re.compile(r"Config name is missing.*?available configs: (?P<available>\[.*?\])", re.S),
)


def _chain(exc: BaseException) -> list[BaseException]:
    """``exc`` and what it was raised from, outermost first, as Python would print it."""
    chain: list[BaseException] = []
    current: BaseException | None = exc
    while current is not None and not any(current is seen for seen in chain):
        chain.append(current)
        current = current.__cause__ or (
            None if current.__suppress_context__ else current.__context__
        )
    return chain


def _class_names(exc: BaseException) -> set[str]:
    return {cls.__name__ for cls in type(exc).__mro__}


def _status_code(exc: BaseException) -> int | None:
    response = getattr(exc, "response", None)
    code = getattr(response, "status_code", None)
    return code if isinstance(code, int) else None


def _kind(exc: BaseException) -> str | None:
    """What one exception of the chain says on its own: offline, not_found, unreachable."""
    names = _class_names(exc)
    code = _status_code(exc)
    if names & {"LocalEntryNotFoundError", "OfflineModeIsEnabled"}:
        return "offline"
    if names & _NOT_FOUND or code == 404:
        return "not_found"
    if names & _UNREACHABLE or (code is not None and (code >= 500 or code == 429)):
        return "offline" if hub_offline_flag() else "unreachable"
    return None


def _listed(text: str) -> list[str]:
    import ast

    try:
        value = ast.literal_eval(text)
    except (ValueError, SyntaxError):
        return [text]
    return [str(v) for v in value] if isinstance(value, (list, tuple)) else [str(value)]


def _split_or_config_error(domain: Domain, ref: HubRef, exc: BaseException) -> HubSplitError | None:
    text = str(exc)
    for patterns, what, asked in (
        (_SPLIT_PATTERNS, "split", ref.split),
        (_CONFIG_PATTERNS, "config", ref.name),
    ):
        for pattern in patterns:
            match = pattern.search(text)
            if match is None:
                continue
            available = _listed(match.group("available"))
            fix = (
                f"IntBench's hub reference {ref.describe()} names a {what} that {ref.path} "
                f"does not have: report it; meanwhile load one of {available} with datasets, "
                f"save it as a local file and pass source='path/to/file.jsonl'"
            )
            reason = f"{ref.path} has no {what} {asked!r} (available: {available})"
            return HubSplitError(hub_unavailable_message(domain, reason, fix), fix, available)
    return None


def classify_hub_error(domain: Domain, ref: HubRef, exc: BaseException) -> BaseException:
    """The :class:`HubUnavailableError` subclass that explains ``exc``, raised by
    ``datasets.load_dataset`` for ``ref``, with a one-line fix; ``exc`` itself when it
    is none of the known hub failures (a bug should not hide behind a hub message).

    The outermost exception decides, its causes only when it says nothing known:
    ``datasets`` wraps the hub client's errors, sometimes dropping the cause
    (a gated dataset then shows only in the message).
    """
    chain = _chain(exc)
    where = ref.describe()
    detail = f"{type(exc).__name__}: {_one_line(exc)}"
    page = f"https://huggingface.co/datasets/{ref.path}"
    offline = _offline_choices(domain)

    if any(_GATED & _class_names(e) for e in chain) or _GATED_TEXT.search(str(exc)):
        fix = (
            f"accept the dataset's terms at {page} while logged in, then give this machine a "
            f"token: run `huggingface-cli login` (`hf auth login` in newer releases) or set "
            f"HF_TOKEN; or {offline}"
        )
        return HubGatedError(hub_unavailable_message(domain, f"{where} is gated", fix), fix)
    split_error = _split_or_config_error(domain, ref, exc)
    if split_error is not None:
        return split_error
    kind = next((k for k in map(_kind, chain) if k is not None), None)
    if kind is not None:
        # each kind _kind can name -> (error class, reason, fix)
        error, reason, fix = {
            "offline": (
                HubUnreachableError,
                f"{where} is not in the local cache ({detail})",
                f"HF_HUB_OFFLINE is set (or the hub client is in offline mode) and {ref.path} "
                f"is not in the local datasets cache: load it once with network access, or "
                f"{offline}",
            ),
            "not_found": (
                HubNotFoundError,
                f"{where} does not exist on the hub or is private ({detail})",
                f"check that {page} exists (and HF_ENDPOINT, if set); if the dataset moved, "
                f"IntBench's hub reference is outdated: report it; meanwhile {offline}",
            ),
            "unreachable": (
                HubUnreachableError,
                f"{where} unreachable ({detail})",
                f"check the network (proxy variables, HF_ENDPOINT) and retry, or {offline}",
            ),
        }[kind]
        return error(hub_unavailable_message(domain, reason, fix), fix)
    names = set().union(*(_class_names(e) for e in chain))
    if names & {"OSError", "DatasetsError", "HfHubHTTPError"}:
        return HubUnavailableError(hub_unavailable_message(domain, f"{where}: {detail}"), offline)
    return exc


def _schema_error(
    domain: Domain, where: str, index: int, row: dict, exc: Exception, hub: bool
) -> SchemaMismatchError:
    if isinstance(exc, MissingColumns):
        missing = exc.columns
    elif isinstance(exc, KeyError) and exc.args:
        missing = [str(exc.args[0])]
    else:
        missing = []
    problem = (
        f"missing column(s) {missing}" if missing else f"{type(exc).__name__}: {_one_line(exc)}"
    )
    columns = sorted(str(k) for k in row)
    message = (
        f"{domain.name}: row {index} of {where} does not fit the hub schema: {problem} "
        f"(the row has columns {columns})."
    )
    if hub:
        fix = (
            "the dataset no longer matches IntBench's row mapper: report it, or save the rows "
            "with the expected columns as a local file and pass source='path/to/file.jsonl'"
        )
        return HubSchemaError(_one_line(f"{message} Fix: {fix}."), index, missing, fix)
    fix = (
        "rename or add the columns so that every row has the domain's hub schema (docs/domains.md)"
    )
    return SchemaMismatchError(_one_line(f"{message} Fix: {fix}."), index, missing)


def _selected_splits(available: tuple[str, ...], split: str | None, what: str) -> tuple[str, ...]:
    if split is None:
        return available
    if split not in available:
        raise DataSourceError(f"{what} has no split {split!r}; available: {list(available)}")
    return (split,)


def _rows_to_problems(
    domain: Domain, rows: Any, split: str, where: str | None = None, hub: bool = False
) -> list[Problem]:
    """Map ``rows`` with the domain's mapper; a row that does not fit raises
    :class:`SchemaMismatchError` (:class:`HubSchemaError` for ``hub`` rows) naming
    ``where`` (default: the split), the row index and the missing columns."""
    problems = []
    skipped: Counter[str] = Counter()
    for index, row in enumerate(rows):
        row = dict(row)
        try:
            problems.append(domain.row_to_problem(row, split, index))
        except SkipRow as reason:
            skipped[str(reason) or "skipped by the mapper"] += 1
            continue
        except (KeyError, TypeError, ValueError) as exc:
            label = where or f"split {split!r}"
            raise _schema_error(domain, label, index, row, exc, hub) from exc
    if skipped:
        reasons = ", ".join(f"{reason}: {count}" for reason, count in skipped.most_common())
        logger.info(
            "%s (%s): kept %d of %d rows; skipped %s",
            domain.name,
            where or f"split {split!r}",
            len(problems),
            len(problems) + sum(skipped.values()),
            reasons,
        )
    return problems


def load_hub(domain: Domain, split: str | None) -> list[Problem]:
    """Load ``domain`` from the hub, failing fast with a :class:`HubUnavailableError`
    subclass that names the cause and the fix (see :func:`classify_hub_error`)."""
    if split is None and domain.default_split in domain.hub:
        split = domain.default_split
    splits = _selected_splits(domain.hub_splits, split, f"hub source of {domain.name!r}")
    extras.require("datasets", "datasets", f"the hub source of {domain.name!r}")
    import datasets  # heavy: only when really loading

    if hub_offline_flag():
        import huggingface_hub

        # The libraries read the flag once at import; set later, they would still
        # try the network (with retries), so only their own offline mode may go on.
        if not (huggingface_hub.constants.HF_HUB_OFFLINE or datasets.config.HF_HUB_OFFLINE):
            reason = "HF_HUB_OFFLINE is set (after huggingface_hub was imported)"
            raise HubUnreachableError(hub_unavailable_message(domain, reason))
    else:
        unreachable = check_hub_reachable()
        if unreachable is not None:
            raise HubUnreachableError(hub_unavailable_message(domain, unreachable))

    problems: list[Problem] = []
    for name in splits:
        ref = domain.hub[name]
        try:
            files = {"data_files": {ref.split: list(ref.data_files)}} if ref.data_files else {}
            rows = datasets.load_dataset(ref.path, ref.name, split=ref.split, **files)
        except Exception as exc:
            error = classify_hub_error(domain, ref, exc)
            if error is exc:
                raise
            raise error from exc
        mapped = _rows_to_problems(domain, rows, name, ref.describe(), hub=True)
        select = getattr(ref, "select", None)
        problems.extend(select(mapped) if select is not None else mapped)
    return problems


def _native_problems(domain: Domain, file: Path) -> list[Problem] | None:
    """Problems from a JSONL of ``Problem.to_dict()`` lines (e.g. a variant set), else ``None``.

    Read without ``datasets``: Arrow would unify the nested ``metadata`` and
    ``answer`` values across rows and add keys a row never had.
    """
    lines = [line for line in file.read_text(encoding="utf-8").splitlines() if line.strip()]
    try:
        rows = [json.loads(line) for line in lines]
    except ValueError:
        return None
    if not rows or not all(
        isinstance(r, dict) and {"id", "domain", "question"} <= set(r) for r in rows
    ):
        return None
    problems = []
    for number, row in enumerate(rows, 1):
        try:
            problem = Problem.from_dict(row)
        except (TypeError, ValueError) as exc:
            raise DataSourceError(f"{file}: problem {number}: {exc}") from exc
        if problem.domain != domain.name:
            raise DataSourceError(
                f"{file}: problem {problem.id!r} is of domain {problem.domain!r}, not {domain.name!r}"
            )
        problems.append(problem)
    return problems


def jsonl_rows(file: Path) -> list[dict]:
    """A JSONL file's rows, read with ``json`` (importing ``datasets`` takes seconds); as
    ``datasets`` reads them, every row has every column, ``None`` where it has none."""
    rows = []
    for number, line in enumerate(file.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except ValueError as exc:
            raise DataSourceError(f"cannot read {str(file)!r}: line {number}: {exc}") from None
        if not isinstance(row, dict):
            raise DataSourceError(f"cannot read {str(file)!r}: line {number} is not an object")
        rows.append(row)
    columns = dict.fromkeys(key for row in rows for key in row)
    return [{key: row.get(key) for key in columns} for row in rows]


def load_local(domain: Domain, path: str | os.PathLike) -> list[Problem]:
    """Load a JSONL/JSON/Parquet/CSV file in the domain's hub schema through ``datasets``
    (the hub rows' mapper maps its rows), or a JSONL of native ``Problem`` records
    (variant sets).

    Raises:
        SchemaMismatchError: a row does not fit (its index and missing columns are named).
    """
    file = Path(path)
    builder = LOCAL_FORMATS.get(file.suffix.lower())
    if builder is None:
        raise DataSourceError(
            f"unknown source {str(file)!r}: expected 'offline', 'hub' or a path to a "
            f"{'/'.join(sorted(LOCAL_FORMATS))} file in the hub schema"
        )
    if not file.is_file():
        raise DataSourceError(f"data file not found: {str(file)!r}")
    if file.suffix.lower() == ".jsonl":
        native = _native_problems(domain, file)
        if native is not None:
            return native
        return _rows_to_problems(domain, jsonl_rows(file), "local", f"file {str(file)!r}")
    extras.require("datasets", "datasets", f"reading {file.suffix} files (JSONL needs nothing)")
    import datasets

    bars_were_off = datasets.utils.are_progress_bars_disabled()
    datasets.utils.disable_progress_bars()  # a few rows do not need a progress bar
    try:
        rows = datasets.load_dataset(builder, data_files=str(file), split="train")
    except Exception as exc:  # datasets raises many types for malformed files
        raise DataSourceError(f"cannot read {str(file)!r}: {type(exc).__name__}: {exc}") from exc
    finally:
        if not bars_were_off:
            datasets.utils.enable_progress_bars()
    return _rows_to_problems(domain, rows, "local", f"file {str(file)!r}")


def procedural_n(n: int | None) -> int:
    """How many problems a procedural offline loader generates when asked for ``n``."""
    return DEFAULT_PROCEDURAL_N if n is None else n


def load_offline(domain: Domain, split: str | None, n: int | None, seed: int) -> list[Problem]:
    """Offline problems: whole packaged sets, or ``n`` generated problems per split."""
    if domain.procedural:
        # A generator has no "all splits": default to its first (the test stream).
        name = split if split is not None else domain.offline_splits[0]
        _selected_splits(domain.offline_splits, name, f"offline source of {domain.name!r}")
        return domain.offline_loader(name, n, seed)
    split = split if split is not None else domain.default_split
    splits = _selected_splits(domain.offline_splits, split, f"offline source of {domain.name!r}")
    problems: list[Problem] = []
    for name in splits:
        problems.extend(domain.offline_loader(name, None, seed))
    return problems


def seeded_subset(problems: list[Problem], n: int | None, seed: int) -> list[Problem]:
    """``n`` problems drawn without replacement with ``random.Random(seed)``, in source order."""
    if n is None:
        return problems
    if n > len(problems):
        raise DataSourceError(f"asked for n={n} problems but only {len(problems)} are available")
    picked = sorted(random.Random(seed).sample(range(len(problems)), n))
    return [problems[i] for i in picked]


def validate_n(n: int | None) -> None:
    if n is not None and (isinstance(n, bool) or not isinstance(n, int) or n < 1):
        raise DataSourceError(f"n must be a positive integer or None, got {n!r}")


def load_from_source(
    domain: Domain, source: str | os.PathLike, split: str | None, n: int | None, seed: int
) -> list[Problem]:
    """Resolve ``source`` (``"offline"``, ``"hub"`` or a file path) and apply ``n``/``seed``."""
    validate_n(n)
    if source == "offline":
        problems = load_offline(domain, split, n, seed)
        return problems if domain.procedural else seeded_subset(problems, n, seed)
    if source == "hub":
        return seeded_subset(load_hub(domain, split), n, seed)
    if split not in (None, "local"):
        raise DataSourceError("a local file has a single split; leave split=None")
    return seeded_subset(load_local(domain, source), n, seed)


def as_list(value: Any) -> list:
    """Hub columns that hold a list are sometimes JSON strings (CSV/Parquet exports)."""
    if value is None:
        return []
    if isinstance(value, str):
        value = json.loads(value) if value.strip() else []
    return list(value)


def provenance(source: str, split: str, license: str, upstream: str, **more: Any) -> dict:
    """The metadata every problem carries about where it came from."""
    return {"source": source, "split": split, "license": license, "upstream": upstream, **more}


def hub_provenance(
    hub_id: str, split: str, license: str, upstream: str | None = None, **more: Any
) -> dict:
    """:func:`provenance` of a row of the hub dataset ``hub_id``, or of a local file in its
    schema (split ``"local"``); ``upstream`` defaults to the dataset's hub page."""
    source = hub_id if split != "local" else "local"
    upstream = upstream or f"https://huggingface.co/datasets/{hub_id}"
    return provenance(source, split, license, upstream, **more)
