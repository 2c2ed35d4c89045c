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
import os
import random
from pathlib import Path
from typing import Any

from intbench.envs.domains.registry import DataSourceError, Domain
from intbench.envs.domains.registry import HubRef as HubRef  # the old import path
from intbench.records import Problem

HUB_CHECK_TIMEOUT_S = 3.0
"""Seconds the hub reachability check may take before the hub counts as down."""

DEFAULT_PROCEDURAL_N = 500
"""How many problems a procedural offline source generates when ``n`` is not given."""

BUILTIN_TEMPLATES = Path(__file__).parent / "templates" / "domains"
"""Where the built-in domains keep their prompt template overrides, one folder each."""

LOCAL_FORMATS = {".jsonl": "json", ".json": "json", ".parquet": "parquet"}


class HubUnavailableError(RuntimeError):
    """The Hugging Face hub cannot be reached (offline machine, ``HF_HUB_OFFLINE``...)."""


class SkipRow(Exception):
    """Raised by a row mapper for rows of a shared dataset that belong to another task."""


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


def hub_unavailable_message(domain: Domain, reason: str) -> str:
    """The one error text users see when the hub is out of reach."""
    splits = ", ".join(domain.offline_splits)
    offline = f"{domain.offline_source}; splits: {splits}"
    if domain.procedural:
        offline += f"; {DEFAULT_PROCEDURAL_N} problems unless n is given"
    ids = ", ".join(ref.path for ref in dict.fromkeys(domain.hub.values()))
    return (
        f"cannot load {domain.name!r} from the Hugging Face hub ({ids}): {reason}.\n"
        f"Use source='offline' ({offline}), or pass a local JSONL/JSON/Parquet file "
        f"in the hub schema as source='path/to/file.jsonl' "
        f"(CLI: --source offline | --source PATH)."
    )


def _selected_splits(available: tuple[str, ...], split: str | None, what: str) -> tuple[str, ...]:
    if split is None:
        return available
    if split not in available:
        raise DataSourceError(f"{what} has no split {split!r}; available: {list(available)}")
    return (split,)


def _rows_to_problems(domain: Domain, rows: Any, split: str) -> list[Problem]:
    problems = []
    for index, row in enumerate(rows):
        try:
            problems.append(domain.row_to_problem(dict(row), split, index))
        except SkipRow:
            continue
        except (KeyError, TypeError, ValueError) as exc:
            raise DataSourceError(
                f"{domain.name}: row {index} of split {split!r} does not fit the hub schema: "
                f"{type(exc).__name__}: {exc}"
            ) from exc
    return problems


def load_hub(domain: Domain, split: str | None) -> list[Problem]:
    """Load ``domain`` from the hub, failing fast with :class:`HubUnavailableError`."""
    splits = _selected_splits(domain.hub_splits, split, f"hub source of {domain.name!r}")
    import datasets  # heavy: only when really loading

    if hub_offline_flag():
        import huggingface_hub

        # The libraries read the flag once at import; set later, they would still
        # try the network (with retries), so only their own offline mode may go on.
        if not (huggingface_hub.constants.HF_HUB_OFFLINE or datasets.config.HF_HUB_OFFLINE):
            reason = "HF_HUB_OFFLINE is set (after huggingface_hub was imported)"
            raise HubUnavailableError(hub_unavailable_message(domain, reason))
    else:
        reason = check_hub_reachable()
        if reason is not None:
            raise HubUnavailableError(hub_unavailable_message(domain, reason))

    problems: list[Problem] = []
    for name in splits:
        ref = domain.hub[name]
        try:
            rows = datasets.load_dataset(ref.path, ref.name, split=ref.split)
        except (ConnectionError, OSError) as exc:
            # With HF_HUB_OFFLINE set only the local cache can answer.
            raise HubUnavailableError(
                hub_unavailable_message(domain, f"{ref.describe()}: {type(exc).__name__}: {exc}")
            ) from exc
        problems.extend(_rows_to_problems(domain, rows, name))
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


def load_local(domain: Domain, path: str | os.PathLike) -> list[Problem]:
    """Load a JSONL/JSON/Parquet file in the domain's hub schema through ``datasets``,
    or a JSONL of native ``Problem`` records (variant sets)."""
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
    return _rows_to_problems(domain, rows, "local")


def load_offline(domain: Domain, split: str | None, n: int | None, seed: int) -> list[Problem]:
    """Offline problems: whole packaged sets, or ``n`` generated problems per split."""
    if domain.procedural:
        # A generator has no "all splits": default to its first (the test stream).
        name = split if split is not None else domain.offline_splits[0]
        _selected_splits(domain.offline_splits, name, f"offline source of {domain.name!r}")
        return domain.offline_loader(name, n if n is not None else DEFAULT_PROCEDURAL_N, seed)
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
