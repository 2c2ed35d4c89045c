"""The openai: backend against a real local HTTP server (tests/fake_openai_server.py)."""

from __future__ import annotations

import base64
import json
import re
import shutil
import socket
import ssl
import subprocess
import threading
import time

import pytest

from intbench.agents.backends import BackendError, load_backend
from intbench.agents.backends.openai_compat import (
    MalformedReply,
    OpenAIBackend,
    parse_completion,
    parse_openai_target,
)
from intbench.agents.base import SamplingParams
from intbench.runner import RunConfig, run_eval
from tests.fake_openai_server import MALFORMED, FakeOpenAIServer

pytestmark = pytest.mark.timeout(60)

PARAMS = SamplingParams(temperature=0.0, max_tokens=50)


def ask(text: str) -> list[dict]:
    return [{"role": "user", "content": text}]


@pytest.fixture
def connect(fake_openai_server):
    """Build backends against the fake server with fast retry settings; close them after."""
    backends: list[OpenAIBackend] = []

    def make(**options) -> OpenAIBackend:
        options = {"timeout": 2.0, "backoff": 0.05, "max_backoff": 0.2, **options}
        backend = load_backend(f"openai:fake-model@{fake_openai_server.base_url}", **options)
        backends.append(backend)
        return backend

    yield make
    for backend in backends:
        backend.close()


def test_parse_openai_target():
    assert parse_openai_target("m@http://127.0.0.1:8000/v1") == ("m", "http://127.0.0.1:8000/v1")
    assert parse_openai_target("org/m@https://u@host/v1") == ("org/m", "https://u@host/v1")
    assert parse_openai_target("gpt-4o") == ("gpt-4o", None)
    with pytest.raises(ValueError, match="expected <model>@http"):
        parse_openai_target("m@localhost:8000")


def test_normal_completions_in_order_with_usage(connect, fake_openai_server):
    backend = connect()
    outputs = backend.generate([ask("one two"), ask("three")], PARAMS)
    assert [o.text for o in outputs] == ["echo: one two", "echo: three"]
    assert [(o.prompt_tokens, o.completion_tokens) for o in outputs] == [(2, 3), (1, 2)]
    assert all(o.finish_reason == "stop" and o.error is None for o in outputs)
    assert (backend.usage.calls, backend.usage.prompt_tokens, backend.usage.completion_tokens) == (
        2,
        3,
        5,
    )
    # Requests run concurrently, so the server may see them in any order.
    sent = fake_openai_server.requests
    assert all(r["model"] == "fake-model" and r["max_tokens"] == 50 for r in sent)
    assert sorted(r["messages"][0]["content"] for r in sent) == ["one two", "three"]


def test_sampling_options_reach_the_server(connect, fake_openai_server):
    backend = connect()
    params = SamplingParams(temperature=0.3, max_tokens=2, stop=["x"], seed=5, logprobs=True)
    [out] = backend.generate([ask("a b c")], params)
    sent = fake_openai_server.requests[0]
    assert (sent["temperature"], sent["stop"], sent["seed"], sent["logprobs"]) == (
        0.3,
        ["x"],
        5,
        True,
    )
    assert (out.text, out.finish_reason) == ("echo: a", "length")
    assert out.logprobs == [-0.5, -0.5]


def test_spec_options_and_api_key_from_environment(monkeypatch, fake_openai_server):
    monkeypatch.setenv("INTBENCH_API_KEY", "sk-from-env")
    backend = load_backend(f"openai:m@{fake_openai_server.base_url}?concurrency=3&max_retries=1")
    try:
        assert (backend.concurrency, backend.max_retries) == (3, 1)
        assert backend._headers["Authorization"] == "Bearer sk-from-env"
    finally:
        backend.close()


def test_many_requests_stay_within_the_concurrency_limit(connect, fake_openai_server):
    fake_openai_server.latency = 0.2
    backend = connect(concurrency=8)
    start = time.perf_counter()
    outputs = backend.generate([ask(f"q{i}") for i in range(32)], PARAMS)
    elapsed = time.perf_counter() - start
    assert [o.text for o in outputs] == [f"echo: q{i}" for i in range(32)]
    assert fake_openai_server.max_in_flight <= 8
    assert fake_openai_server.max_in_flight >= 4  # requests really overlapped
    sequential = 32 * 0.2
    assert elapsed < sequential / 2, f"took {elapsed:.2f}s; one at a time would take {sequential}s"


@pytest.mark.parametrize("fault", ["500", "429", "drop"])
def test_transient_faults_are_retried(connect, fake_openai_server, fault):
    fake_openai_server.inject(fault, count=2)
    backend = connect(max_retries=3)
    [out] = backend.generate([ask("hello")], PARAMS)
    assert (out.text, out.error) == ("echo: hello", None)
    assert len(fake_openai_server.requests) == 3


def test_429_waits_for_retry_after(connect, fake_openai_server):
    fake_openai_server.retry_after = 0.5
    fake_openai_server.inject("429", count=1)
    backend = connect(max_backoff=1.0)
    start = time.perf_counter()
    [out] = backend.generate([ask("hi")], PARAMS)
    assert out.error is None
    assert time.perf_counter() - start >= 0.5


def test_slow_answer_times_out_and_is_retried(connect, fake_openai_server):
    fake_openai_server.slow_seconds = 5.0
    fake_openai_server.inject("slow", count=1)
    backend = connect(timeout=0.5, max_retries=2)
    start = time.perf_counter()
    [out] = backend.generate([ask("hi")], PARAMS)
    assert (out.text, out.error) == ("echo: hi", None)
    assert time.perf_counter() - start < 3.0


def test_permanent_failure_gives_a_clear_error(connect, fake_openai_server):
    fake_openai_server.inject("500", count=100)
    backend = connect(max_retries=2)
    outputs = backend.generate([ask("a"), ask("b")], PARAMS)
    for out in outputs:
        assert (out.text, out.finish_reason) == ("", "error")
        assert fake_openai_server.base_url in out.error
        assert "HTTP 500" in out.error and "after 3 attempts" in out.error
    assert len(fake_openai_server.requests) == 6
    assert backend.usage.errors == 2


def test_raise_on_error(connect, fake_openai_server):
    fake_openai_server.inject("500", count=100)
    backend = connect(max_retries=1, raise_on_error=True)
    with pytest.raises(BackendError, match="2 of 2 requests failed.*HTTP 500"):
        backend.generate([ask("a"), ask("b")], PARAMS)


def test_client_errors_are_not_retried(fake_openai_server):
    # A base URL without /v1 hits a route the server does not have: 404.
    url = fake_openai_server.base_url.removesuffix("/v1")
    with load_backend(f"openai:m@{url}", max_retries=3, backoff=0.05) as backend:
        [out] = backend.generate([ask("a")], PARAMS)
    assert "HTTP 404" in out.error and "after 1 attempt)" in out.error


def test_unreachable_server_fails_fast():
    with socket.socket() as probe:  # a port nobody listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    with load_backend(
        f"openai:m@http://127.0.0.1:{port}/v1", max_retries=2, backoff=0.05, max_backoff=0.1
    ) as backend:
        start = time.perf_counter()
        [out] = backend.generate([ask("a")], PARAMS)
    assert "connection error" in out.error and f"127.0.0.1:{port}" in out.error
    assert time.perf_counter() - start < 5


def test_proxy_variables_are_honoured(monkeypatch, fake_openai_server):
    """HTTP_PROXY routes requests through the proxy (looked up once per backend), and
    NO_PROXY exempts a host, as other HTTP clients do."""
    target = "http://model-server.invalid:8000/v1"  # reachable only through the proxy
    monkeypatch.setenv("HTTP_PROXY", fake_openai_server.base_url.removesuffix("/v1"))
    monkeypatch.delenv("http_proxy", raising=False)
    monkeypatch.setenv("NO_PROXY", "")
    monkeypatch.delenv("no_proxy", raising=False)
    with load_backend(f"openai:m@{target}") as backend:
        outputs = backend.generate([ask("a"), ask("b")], PARAMS)
    assert [o.text for o in outputs] == ["echo: a", "echo: b"]
    assert fake_openai_server.proxied == [f"{target}/chat/completions"] * 2
    monkeypatch.setenv("NO_PROXY", "model-server.invalid")
    with load_backend(f"openai:m@{target}", max_retries=0) as backend:
        [out] = backend.generate([ask("c")], PARAMS)
    assert "connection error" in out.error and len(fake_openai_server.proxied) == 2


def test_proxy_credentials_come_from_its_url_or_netrc(monkeypatch, tmp_path, fake_openai_server):
    target = "http://model-server.invalid:8000/v1"  # reachable only through the proxy
    proxy = fake_openai_server.base_url.removesuffix("/v1")
    for name in ("http_proxy", "no_proxy", "NO_PROXY"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HTTP_PROXY", proxy.replace("http://", "http://ann:s%40cret@"))
    with load_backend(f"openai:m@{target}") as backend:
        [with_url] = backend.generate([ask("a")], PARAMS)
    netrc = tmp_path / ".netrc"
    netrc.write_text("machine 127.0.0.1 login bob password pw\n")
    netrc.chmod(0o600)
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("HTTP_PROXY", proxy)
    with load_backend(f"openai:m@{target}") as backend:
        [with_netrc] = backend.generate([ask("b")], PARAMS)
    assert (with_url.text, with_netrc.text) == ("echo: a", "echo: b")
    basic = ["Basic " + base64.b64encode(pair).decode() for pair in (b"ann:s@cret", b"bob:pw")]
    assert fake_openai_server.proxy_auth == basic


def test_a_kept_alive_connection_the_server_closed_is_replaced_at_no_attempts_cost():
    """Servers close idle connections without saying so; the next request on one is
    sent again on a fresh connection, not counted as a failed attempt."""
    listener = socket.create_server(("127.0.0.1", 0))

    def answer_once_per_connection() -> None:
        while True:
            try:
                connection, _ = listener.accept()
            except OSError:  # the listener was closed: the test is over
                return
            with connection:
                data = b""
                while b"\r\n\r\n" not in data:
                    data += connection.recv(65536)
                head, _, body = data.partition(b"\r\n\r\n")
                length = int(re.search(rb"(?i)content-length: *(\d+)", head)[1])
                while len(body) < length:
                    body += connection.recv(65536)
                said = json.loads(body)["messages"][-1]["content"]
                reply = {
                    "choices": [{"message": {"role": "assistant", "content": f"echo: {said}"}}]
                }
                payload = json.dumps(reply).encode()
                connection.sendall(
                    b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                    + f"Content-Length: {len(payload)}\r\n\r\n".encode()
                    + payload
                )

    threading.Thread(target=answer_once_per_connection, daemon=True).start()
    url = f"http://127.0.0.1:{listener.getsockname()[1]}/v1"
    try:
        with load_backend(f"openai:m@{url}", max_retries=0) as backend:
            first = backend.generate([ask("a")], PARAMS)
            time.sleep(0.05)  # the server's close reaches the client
            second = backend.generate([ask("b")], PARAMS)
    finally:
        listener.close()
    assert [o.text for o in first + second] == ["echo: a", "echo: b"]


def test_https_verifies_the_server_certificate(tmp_path, monkeypatch):
    openssl = shutil.which("openssl")
    if openssl is None:
        pytest.skip("needs the openssl command to make a certificate")
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    subprocess.run(
        [openssl, "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
         "-keyout", str(key), "-out", str(cert), "-subj", "/CN=127.0.0.1",
         "-addext", "subjectAltName=IP:127.0.0.1"],
        check=True, capture_output=True,
    )  # fmt: skip
    server = FakeOpenAIServer()
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    server._httpd.socket = context.wrap_socket(server._httpd.socket, server_side=True)
    with server:
        url = server.base_url.replace("http://", "https://")
        with load_backend(f"openai:m@{url}", max_retries=0) as backend:
            [untrusted] = backend.generate([ask("a")], PARAMS)
        monkeypatch.setenv("SSL_CERT_FILE", str(cert))  # the client now trusts it
        with load_backend(f"openai:m@{url}", max_retries=0) as backend:
            [trusted] = backend.generate([ask("b")], PARAMS)
    assert "CERTIFICATE_VERIFY_FAILED" in untrusted.error
    assert trusted.text == "echo: b" and trusted.error is None


def test_overall_deadline_bounds_a_call(connect, fake_openai_server):
    fake_openai_server.slow_seconds = 10.0
    fake_openai_server.inject("slow", count=100)
    backend = connect(timeout=5.0, deadline=1.0)
    start = time.perf_counter()
    [out] = backend.generate([ask("a")], PARAMS)
    assert time.perf_counter() - start < 2.5
    assert out.finish_reason == "error" and "deadline" in out.error


def test_closed_backend_refuses_work(connect):
    backend = connect()
    backend.close()
    backend.close()  # idempotent
    with pytest.raises(BackendError, match="closed"):
        backend.generate([ask("a")], PARAMS)


def test_bad_options_are_rejected(fake_openai_server):
    with pytest.raises(ValueError, match="concurrency"):
        OpenAIBackend("m", fake_openai_server.base_url, concurrency=0)
    with pytest.raises(ValueError, match="max_retries"):
        OpenAIBackend("m", fake_openai_server.base_url, max_retries=-1)


def test_malformed_messages_never_reach_the_server(connect, fake_openai_server):
    backend = connect()
    with pytest.raises(ValueError, match="empty"):
        backend.generate([[]], PARAMS)
    assert fake_openai_server.requests == []


@pytest.mark.parametrize("fault", ["truncated", *MALFORMED])
def test_malformed_replies_are_retried(connect, fake_openai_server, fault):
    fake_openai_server.inject(fault, count=2)
    backend = connect(max_retries=3)
    [out] = backend.generate([ask("hello")], PARAMS)
    assert (out.text, out.error) == ("echo: hello", None)
    assert len(fake_openai_server.requests) == 3


@pytest.mark.parametrize("fault", MALFORMED)
def test_a_malformed_reply_names_the_url_and_quotes_the_body(connect, fake_openai_server, fault):
    fake_openai_server.inject(fault, count=100)
    backend = connect(max_retries=1)
    [out] = backend.generate([ask("hello")], PARAMS)
    assert out.finish_reason == "error" and "after 2 attempts" in out.error
    assert f"malformed reply from {fake_openai_server.base_url}/chat/completions" in out.error
    assert "body: '" in out.error


def test_malformed_reply_error_carries_url_and_a_short_excerpt():
    body = "<html>" + "x" * 1000 + "</html>"
    with pytest.raises(MalformedReply, match="not JSON") as caught:
        parse_completion(body, "http://host/v1/chat/completions")
    error = caught.value
    assert isinstance(error, BackendError) and error.retryable
    assert error.url == "http://host/v1/chat/completions"
    assert error.excerpt == body[:200] + "..."


@pytest.mark.parametrize(
    ("body", "problem"),
    [
        ({"choices": [{"message": {"content": "a"}}], "usage": {"prompt_tokens": "3"}}, "int"),
        ({"choices": [{"message": {"content": "a"}, "finish_reason": 1}]}, "finish_reason"),
        ({"choices": [{"message": {"content": "a"}, "logprobs": {"content": [{}]}}]}, "logprob"),
        ({"choices": ["a"]}, "no message"),
        ({"choices": {"0": {}}}, "no choices"),
    ],
)
def test_mistyped_fields_are_malformed(body, problem):
    with pytest.raises(MalformedReply, match=problem):
        parse_completion(json.dumps(body), "http://host/v1/chat/completions")


def test_a_reply_without_usage_or_content_is_valid():
    reply = {"choices": [{"message": {"role": "assistant", "content": None}}]}
    completion = parse_completion(json.dumps(reply), "http://host/v1/chat/completions")
    assert (completion.text, completion.finish_reason, completion.prompt_tokens) == ("", "stop", 0)


def test_one_bad_reply_in_a_batch_of_eight_loses_only_its_own_request(connect, fake_openai_server):
    fake_openai_server.inject_for("q3", "bad_json")  # fails on every attempt
    backend = connect(max_retries=2)
    outputs = backend.generate([ask(f"q{i}") for i in range(8)], PARAMS)
    assert [o.error is None for o in outputs] == [i != 3 for i in range(8)]
    assert [o.text for i, o in enumerate(outputs) if i != 3] == [
        f"echo: q{i}" for i in range(8) if i != 3
    ]
    assert "malformed reply" in outputs[3].error and "after 3 attempts" in outputs[3].error
    assert backend.usage.errors == 1


def test_two_bad_replies_in_a_batch_of_eight_are_retried(connect, fake_openai_server):
    fake_openai_server.inject("null_message", count=1)
    fake_openai_server.inject("html", count=1)
    backend = connect(max_retries=2)
    outputs = backend.generate([ask(f"q{i}") for i in range(8)], PARAMS)
    assert [o.text for o in outputs] == [f"echo: q{i}" for i in range(8)]
    assert len(fake_openai_server.requests) == 10


def test_recovery_after_an_outage(connect, fake_openai_server):
    fake_openai_server.inject("500", count=100)
    backend = connect(max_retries=1)
    [down] = backend.generate([ask("a")], PARAMS)
    assert down.error and "HTTP 500" in down.error
    fake_openai_server.clear()
    [up] = backend.generate([ask("c")], PARAMS)
    assert (up.text, up.error) == ("echo: c", None)


def test_a_student_that_only_gets_malformed_replies_fails_the_episode_until_resumed(
    fake_openai_server, tmp_path, monkeypatch
):
    monkeypatch.setenv("INTBENCH_CACHE", str(tmp_path / "cache"))
    fake_openai_server.inject("html", count=10_000)
    student = f"openai:fake-model@{fake_openai_server.base_url}?max_retries=1&backoff=0.01"
    config = RunConfig(env_id="IntBench-Math-v0", teacher="never", student=student, n=2)
    first = run_eval(config, tmp_path / "run", progress=False)
    assert len(first.episodes) == 2
    assert all("malformed reply" in e["error"] for e in first.episodes)
    fake_openai_server.clear()
    second = run_eval(config, tmp_path / "run", progress=False)
    assert second.ran == 2 and not any(e["error"] for e in second.episodes)


def test_an_invalid_url_fails_once_with_a_message_naming_it():
    backend = load_backend("openai:m@http://127.0.0.1:notaport/v1", max_retries=3)
    try:
        [out] = backend.generate([ask("hi")], PARAMS)
    finally:
        backend.close()
    assert out.finish_reason == "error" and "after 1 attempt)" in out.error
    assert "invalid URL 'http://127.0.0.1:notaport/v1/chat/completions'" in out.error


def test_an_unexpected_error_loses_only_its_own_result(connect, monkeypatch):
    backend = connect()
    real = backend._request_with_retries

    def fail_q1(conversation, *args):
        if conversation[-1]["content"] == "q1":
            raise RuntimeError("a bug in one request")
        return real(conversation, *args)

    monkeypatch.setattr(backend, "_request_with_retries", fail_q1)
    outputs = backend.generate([ask(f"q{i}") for i in range(3)], PARAMS)
    assert [o.text for o in outputs if o.error is None] == ["echo: q0", "echo: q2"]
    assert "unexpected RuntimeError: a bug in one request" in outputs[1].error
