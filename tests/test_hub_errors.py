"""Hub failures become one-line errors of a clear type that name the fix.

Each case makes ``datasets.load_dataset`` raise what the real libraries raise
(``datasets.exceptions``, ``huggingface_hub.errors``, ``requests``, the hub's
HTTP client) and checks the class and message of the error IntBench raises.
"""

from __future__ import annotations

import pytest

from intbench.cli import main
from intbench.envs.domains import DataSourceError, HubUnavailableError, load_problems
from intbench.envs.domains.base import (
    HubGatedError,
    HubNotFoundError,
    HubSchemaError,
    HubSplitError,
    HubUnreachableError,
    SchemaMismatchError,
)
from tests import hub_fakes

datasets_exceptions = pytest.importorskip("datasets.exceptions")
hub_errors = pytest.importorskip("huggingface_hub.errors")


def _http():
    """The HTTP client module huggingface_hub builds its errors' responses with."""
    import huggingface_hub.utils

    module = getattr(huggingface_hub.utils, "httpx", None)
    return module if module is not None else pytest.importorskip("httpx")


def _response(status: int, url: str = "https://huggingface.co/api/datasets/x"):
    http = _http()
    return http.Response(status, request=http.Request("GET", url))


@pytest.fixture
def hub(monkeypatch):
    return hub_fakes.install(monkeypatch)


def _raises(hub, make):
    hub.raise_ = lambda path, name, split: make(path)


def _gated_wrapped(path):
    # What datasets raises for a gated repo: DatasetNotFoundError from GatedRepoError.
    try:
        raise hub_errors.GatedRepoError("Cannot access gated repo.", response=_response(401))
    except hub_errors.GatedRepoError as cause:
        try:
            raise datasets_exceptions.DatasetNotFoundError(
                f"Dataset '{path}' is a gated dataset on the Hub. "
                "You must be authenticated to access it."
            ) from cause
        except datasets_exceptions.DatasetNotFoundError as error:
            return error


def _gated_without_cause(path):
    # datasets' cache fallback re-raises "raise e1 from None": only the text is left.
    error = datasets_exceptions.DatasetNotFoundError(
        f"Dataset '{path}' is a gated dataset on the Hub. Visit the dataset page to ask for access."
    )
    error.__cause__ = None
    error.__suppress_context__ = True
    return error


def _offline_not_cached(path):
    return ConnectionError(
        f"Couldn't reach the Hugging Face Hub for dataset '{path}': "
        f"{hub_errors.OfflineModeIsEnabled('offline mode is enabled')}"
    )


def _wrapped_transport_error(path):
    http = _http()
    try:
        raise http.ConnectError("[Errno -3] Temporary failure in name resolution")
    except http.ConnectError as cause:
        try:
            raise ConnectionError(f"Couldn't reach '{path}' on the Hub (ConnectError)") from cause
        except ConnectionError as error:
            return error


def _requests_error(kind):
    requests = pytest.importorskip("requests")
    return getattr(requests.exceptions, kind)("HTTPSConnectionPool(host='huggingface.co')")


CASES = {
    "gated raw": (
        lambda path: hub_errors.GatedRepoError(
            "Access to dataset x is restricted.", response=_response(403)
        ),
        HubGatedError,
    ),
    "gated via datasets": (_gated_wrapped, HubGatedError),
    "gated, cause dropped": (_gated_without_cause, HubGatedError),
    "dataset not found": (
        lambda path: datasets_exceptions.DatasetNotFoundError(
            f"Dataset '{path}' doesn't exist on the Hub or cannot be accessed."
        ),
        HubNotFoundError,
    ),
    "repository not found": (
        lambda path: hub_errors.RepositoryNotFoundError(
            "404 Client Error.", response=_response(404)
        ),
        HubNotFoundError,
    ),
    "revision not found": (
        lambda path: hub_errors.RevisionNotFoundError("Invalid rev id", response=_response(404)),
        HubNotFoundError,
    ),
    "connection error": (
        lambda path: ConnectionError(f"Couldn't reach '{path}' on the Hub (ConnectTimeout)"),
        HubUnreachableError,
    ),
    "transport error cause": (_wrapped_transport_error, HubUnreachableError),
    "requests connection error": (
        lambda path: _requests_error("ConnectionError"),
        HubUnreachableError,
    ),
    "requests timeout": (lambda path: _requests_error("ReadTimeout"), HubUnreachableError),
    "server error": (
        lambda path: hub_errors.HfHubHTTPError("503 Server Error", response=_response(503)),
        HubUnreachableError,
    ),
    "offline mode": (
        lambda path: hub_errors.OfflineModeIsEnabled("Cannot reach the hub: offline mode is on."),
        HubUnreachableError,
    ),
    "offline, not cached": (_offline_not_cached, HubUnreachableError),
}


@pytest.mark.parametrize("case", list(CASES))
def test_each_failure_has_its_class_and_a_one_line_fix(hub, case):
    make, expected = CASES[case]
    _raises(hub, make)
    with pytest.raises(expected) as info:
        load_problems("brainteaser", source="hub")
    error = info.value
    message = str(error)
    assert isinstance(error, HubUnavailableError) and isinstance(error, RuntimeError)
    assert "\n" not in message
    assert message.startswith("cannot load 'brainteaser' from the Hugging Face hub")
    assert "ChenLiu1996/Brainteaser[train]" in message
    assert "Fix: " in message and error.fix and error.fix in message
    assert isinstance(error.__cause__, BaseException)  # the library's error stays attached


@pytest.mark.parametrize("case", ["gated raw", "gated via datasets", "gated, cause dropped"])
def test_gated_message_says_how_to_get_access(hub, case):
    _raises(hub, CASES[case][0])
    with pytest.raises(HubGatedError) as info:
        load_problems("brainteaser", source="hub")
    message = str(info.value)
    assert "is gated" in message
    assert "huggingface-cli login" in message and "HF_TOKEN" in message
    assert (
        "accept the dataset's terms at https://huggingface.co/datasets/ChenLiu1996/Brainteaser"
        in message
    )
    assert "source='offline'" in message


def test_not_found_message_names_the_page(hub):
    _raises(hub, CASES["dataset not found"][0])
    with pytest.raises(HubNotFoundError, match="does not exist on the hub or is private") as info:
        load_problems("brainteaser", source="hub")
    assert "https://huggingface.co/datasets/ChenLiu1996/Brainteaser" in str(info.value)
    assert "HubGatedError" not in type(info.value).__name__


@pytest.mark.parametrize(
    "case", ["connection error", "requests timeout", "transport error cause", "server error"]
)
def test_unreachable_message_says_check_the_network(hub, case):
    _raises(hub, CASES[case][0])
    with pytest.raises(HubUnreachableError) as info:
        load_problems("brainteaser", source="hub")
    assert "check the network" in str(info.value) and "source='offline'" in str(info.value)


@pytest.mark.parametrize("case", ["offline mode", "offline, not cached"])
def test_offline_mode_message_says_the_cache_lacks_it(hub, monkeypatch, case):
    import huggingface_hub

    # HF_HUB_OFFLINE as the libraries saw it at import: only the cache may answer.
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", True)
    _raises(hub, CASES[case][0])
    with pytest.raises(HubUnreachableError, match="not in the local datasets cache"):
        load_problems("brainteaser", source="hub")


@pytest.mark.parametrize(
    "text, what, asked, available",
    [
        ("Bad split: train. Available splits: ['test']", "split", "train", ["test"]),
        (
            "Unknown split \"train\". Should be one of ['test', 'dev'].",
            "split",
            "train",
            ["test", "dev"],
        ),
        (
            "BuilderConfig 'default' not found. Available: ['math', 'logic']",
            "config",
            None,
            ["math", "logic"],
        ),
        (
            "Config name is missing.\nPlease pick one among the available configs: ['math', 'logic']",
            "config",
            None,
            ["math", "logic"],
        ),
    ],
)
def test_bad_split_or_config_names_the_available_ones(hub, text, what, asked, available):
    _raises(hub, lambda path: ValueError(text))
    with pytest.raises(HubSplitError) as info:
        load_problems("brainteaser", source="hub")
    error = info.value
    message = str(error)
    assert error.available == available
    assert isinstance(error, DataSourceError)  # asking for what is not there
    assert f"has no {what} {asked!r} (available: {available})" in message
    assert "\n" not in message and "report it" in message


def test_unknown_errors_are_not_disguised(hub):
    _raises(hub, lambda path: RuntimeError("a bug in a row builder"))
    with pytest.raises(RuntimeError, match="a bug in a row builder") as info:
        load_problems("brainteaser", source="hub")
    assert not isinstance(info.value, HubUnavailableError)
    _raises(hub, lambda path: ValueError("unrelated value error"))
    with pytest.raises(ValueError, match="unrelated value error") as info:
        load_problems("brainteaser", source="hub")
    assert not isinstance(info.value, HubUnavailableError)


def test_schema_mismatch_on_the_hub_names_the_row_and_columns(hub):
    rows = [
        {
            "problem": "1 + 1?",
            "answer": "2",
            "solution": "",
            "subject": "A",
            "level": 1,
            "unique_id": "a",
        },
        {
            "problem": "2 + 2?",
            "answer": "4",
            "solution": "",
            "subject": "A",
            "level": 1,
            "unique_id": "b",
        },
        {
            "problem": "3 + 3?",
            "answer": None,
            "solution": "",
            "subject": "A",
            "level": 1,
            "unique_id": "c",
        },
    ]
    hub.add("HuggingFaceH4/MATH-500", "test", rows)
    with pytest.raises(HubSchemaError) as info:
        load_problems("math", source="hub")
    error = info.value
    assert isinstance(error, HubUnavailableError) and isinstance(error, SchemaMismatchError)
    assert error.row_index == 2 and error.missing == ["answer"]
    message = str(error)
    assert "row 2 of HuggingFaceH4/MATH-500[test]" in message
    assert "missing column(s) ['answer']" in message and "Fix: " in message
    assert "\n" not in message


def test_a_hub_reference_to_a_missing_split_is_a_split_error(hub):
    # The mirrors have only a "test" split; asking for another is reported, not a traceback.
    hub.add("lee64/arc-agi-training", "validation", [])
    with pytest.raises(HubSplitError, match=r"available: \['validation'\]"):
        load_problems("arc", source="hub", split="training")


def test_unreachable_hub_message_is_one_line(monkeypatch):
    from intbench.envs.domains import base

    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.delenv("HF_DATASETS_OFFLINE", raising=False)
    monkeypatch.setattr(base, "check_hub_reachable", lambda timeout=None: "no answer within 3 s")
    with pytest.raises(HubUnreachableError) as info:
        load_problems("arc", source="hub")
    message = str(info.value)
    assert "\n" not in message and "no answer within 3 s. Fix: use source='offline'" in message


def test_cli_prints_the_one_line_without_a_traceback(hub, capsys):
    _raises(hub, _gated_wrapped)
    assert main(["data", "show", "brainteaser", "--source", "hub"]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err
    assert err.startswith("error: cannot load 'brainteaser'") and "huggingface-cli login" in err
    assert len(err.strip().splitlines()) == 1
