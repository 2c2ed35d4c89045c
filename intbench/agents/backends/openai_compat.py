"""Backend for any OpenAI-compatible chat-completions server (vLLM, SGLang, Ollama, APIs).

A batch becomes many requests in flight at once (at most ``concurrency``), each a
blocking HTTP/1.1 exchange of the standard library's ``http.client`` in a thread
(the caller's own for a batch of one), over connections kept alive between
batches, so callers stay synchronous.  The standard library rather than an async
client: importing aiohttp took 0.14 s, a third of a short run's setup.  The
threads cost more CPU per request at high concurrency (about 5 rather than
4 ms per feedback episode at 64 in flight) and less at one in flight
(``benchmarks/feedback_overhead.py``).

Failures: 429, 408, 409, 5xx, timeouts, connection errors and malformed
replies (a body that is not a chat completion: bad JSON, an HTML page,
missing or mistyped fields; a :class:`MalformedReply` naming the URL and
quoting the body) are retried with exponential backoff and jitter
(``Retry-After`` is honoured); other 4xx errors are not.  Each attempt is
bounded by ``timeout`` (seconds without progress on the connection) and each
``generate`` call by an overall ``deadline``, so a call never hangs.  A request
that still fails returns a Completion with ``finish_reason="error"`` and
``error`` naming the server and the last failure, so the other requests of its
batch keep their answers (an env records such an episode as failed, and a
resumed run retries it); with ``raise_on_error=True`` the call raises
:class:`BackendError`.

``HTTP(S)_PROXY`` and ``NO_PROXY`` are honoured as other HTTP clients read
them (credentials in the proxy URL, else ``~/.netrc``).  The API key comes from
``api_key``, else ``INTBENCH_API_KEY``, else ``OPENAI_API_KEY``, else a dummy
key (local servers usually ignore it).
"""

from __future__ import annotations

import base64
import http.client
import json
import math
import os
import random
import re
import ssl
import threading
import time
import urllib.parse
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import wait as wait_for_all
from typing import Any

from intbench.agents.backends.base import BackendError, BaseBackend
from intbench.agents.base import Completion, Conversation, SamplingParams

RETRY_STATUSES = frozenset({408, 409, 429})
DUMMY_KEY = "sk-intbench-no-key"
_TARGET = re.compile(r"^(?P<model>.+?)@(?P<url>https?://\S+)$")
# How long past its deadline a batch waits for a request stuck where no timeout
# reaches (a name lookup) before reporting it as failed.
STUCK_GRACE_S = 10.0


def parse_openai_target(target: str) -> tuple[str, str | None]:
    """Split ``<model>@<base_url>`` (the base URL is optional)."""
    match = _TARGET.match(target)
    if match:
        return match["model"], match["url"]
    if "@" in target:
        raise ValueError(f"bad openai target {target!r}: expected <model>@http(s)://host[:port]/v1")
    return target, None


def _api_key(explicit: str | None) -> str:
    return (
        explicit
        or os.environ.get("INTBENCH_API_KEY")
        or os.environ.get("OPENAI_API_KEY")
        or DUMMY_KEY
    )


class RequestFailure(BackendError):
    """One failed attempt: whether to retry, a description, and any Retry-After."""

    def __init__(self, message: str, retryable: bool, retry_after: float | None = None):
        super().__init__(message)
        self.retryable = retryable
        self.retry_after = retry_after


class MalformedReply(RequestFailure):
    """A reply that is not a chat completion; retryable, since proxies and
    overloaded servers send such bodies transiently."""

    def __init__(self, url: str, problem: str, body: str):
        self.url = url
        self.excerpt = _short(body)
        super().__init__(
            f"malformed reply from {url}: {problem}; body: {self.excerpt!r}", retryable=True
        )


class _InvalidURL(ValueError):
    pass


def _env_proxy(url: urllib.parse.SplitResult) -> urllib.parse.SplitResult | None:
    """The proxy that ``HTTP(S)_PROXY`` / ``NO_PROXY`` give for ``url``, or ``None``."""
    proxies = urllib.request.getproxies_environment()
    proxy = proxies.get(url.scheme)
    if not proxy or urllib.request.proxy_bypass(url.netloc):
        return None
    if "://" not in proxy:
        proxy = "http://" + proxy
    return urllib.parse.urlsplit(proxy)


def _proxy_authorization(proxy: urllib.parse.SplitResult) -> dict[str, str]:
    """``Proxy-Authorization`` from the proxy URL's credentials, else ``~/.netrc``'s."""
    user, password = proxy.username, proxy.password
    if user is None:
        import netrc

        try:
            found = netrc.netrc().authenticators(proxy.hostname or "")
        except (OSError, netrc.NetrcParseError):
            found = None
        if found is None:
            return {}
        user, _, password = found
    pair = f"{urllib.parse.unquote(user)}:{urllib.parse.unquote(password or '')}"
    return {"Proxy-Authorization": "Basic " + base64.b64encode(pair.encode()).decode()}


class _Route:
    """Where a URL's requests go (the server, or a proxy in front of it) and keep-alive
    connections there, shared by every thread of the backend."""

    def __init__(self, url: str) -> None:
        parts = urllib.parse.urlsplit(url)
        try:
            port = parts.port
        except ValueError:
            port = None
            parts = parts._replace(netloc="")
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise _InvalidURL(url)
        self.https = parts.scheme == "https"
        # the port always given: http.client would read an IPv6 host's last group as one
        self.host, self.port = parts.hostname, port or (443 if self.https else 80)
        self.target = urllib.parse.urlunsplit(("", "", parts.path or "/", parts.query, ""))
        self.headers: dict[str, str] = {}
        self.proxy = _env_proxy(parts)
        if self.proxy is not None:
            if not self.proxy.hostname:
                raise _InvalidURL(self.proxy.geturl())
            self.headers = _proxy_authorization(self.proxy)
            if not self.https:  # a plain-HTTP proxy takes the whole URL
                self.target = url
        self._idle: list[http.client.HTTPConnection] = []
        self._lock = threading.Lock()
        self._context: ssl.SSLContext | None = None

    def take(self, fresh: bool) -> tuple[http.client.HTTPConnection, bool]:
        """A connection, and whether it was used before (a kept-alive one the server
        may have closed since)."""
        if not fresh:
            with self._lock:
                if self._idle:
                    return self._idle.pop(), True
        return self._connect(), False

    def give_back(self, connection: http.client.HTTPConnection) -> None:
        with self._lock:
            self._idle.append(connection)

    def close(self) -> None:
        with self._lock:
            idle, self._idle = self._idle, []
        for connection in idle:
            connection.close()

    def _connect(self) -> http.client.HTTPConnection:
        host, port = self.host, self.port
        if self.proxy is not None:
            host = self.proxy.hostname or ""
            port = self.proxy.port or (443 if self.proxy.scheme == "https" else 80)
        if not self.https:
            return http.client.HTTPConnection(host, port)
        if self._context is None:  # made once: loading the CA store takes ~20 ms
            self._context = ssl.create_default_context()
        connection = http.client.HTTPSConnection(host, port, context=self._context)
        if self.proxy is not None:  # a tunnel through the proxy to the server
            connection.set_tunnel(self.host, self.port, headers=self.headers)
        return connection


class OpenAIBackend(BaseBackend):
    """Chat completions over HTTP with bounded concurrency, retries and deadlines.

    Options: ``concurrency`` (requests in flight, default 16), ``timeout``
    (seconds per attempt), ``max_retries`` (retries after the first attempt),
    ``backoff`` / ``max_backoff`` (seconds; delay doubles per retry, with
    jitter), ``deadline`` (seconds for a whole ``generate`` call; by default
    the worst case the other options allow), ``raise_on_error``,
    ``api_key``, ``extra_body`` (dict passed through to the server).
    """

    remote = True  # a server: the runner keeps its requests in flight together

    def __init__(
        self,
        model: str,
        base_url: str | None = None,
        *,
        api_key: str | None = None,
        concurrency: int = 16,
        timeout: float = 120.0,
        max_retries: int = 4,
        backoff: float = 0.5,
        max_backoff: float = 20.0,
        deadline: float | None = None,
        raise_on_error: bool = False,
        extra_body: dict | None = None,
        spec: str | None = None,
    ) -> None:
        super().__init__(spec or f"openai:{model}" + (f"@{base_url}" if base_url else ""))
        if not isinstance(concurrency, int) or concurrency < 1:
            raise ValueError(f"concurrency must be a positive int, got {concurrency!r}")
        if not isinstance(max_retries, int) or max_retries < 0:
            raise ValueError(f"max_retries must be an int >= 0, got {max_retries!r}")
        if (
            timeout <= 0
            or backoff < 0
            or max_backoff < 0
            or (deadline is not None and deadline <= 0)
        ):
            raise ValueError("timeout and deadline must be > 0; backoff values must be >= 0")
        self.model = model
        self.base_url = base_url or os.environ.get("OPENAI_BASE_URL") or "https://api.openai.com/v1"
        self.concurrency = concurrency
        self.timeout = float(timeout)
        self.max_retries = max_retries
        self.backoff = float(backoff)
        self.max_backoff = float(max_backoff)
        self.deadline = deadline
        self.raise_on_error = raise_on_error
        self.extra_body = extra_body
        self._url = self.base_url.rstrip("/") + "/chat/completions"
        self._headers = {
            "Authorization": f"Bearer {_api_key(api_key)}",
            "Content-Type": "application/json",
        }
        self._route: _Route | None = None  # the proxy is looked up once, at first use
        self._lock = threading.Lock()  # makes the route and the threads once
        # One bound on requests in flight for the backend, shared by every batch,
        # so batches from several threads run together within the limit.
        self._in_flight = threading.BoundedSemaphore(concurrency)
        self._threads: ThreadPoolExecutor | None = None
        self._closed = False

    def batch_deadline(self, n_requests: int) -> float:
        """Seconds a ``generate`` call of ``n_requests`` may take at most."""
        if self.deadline is not None:
            return self.deadline
        per_request = (self.timeout + self.max_backoff) * (self.max_retries + 1)
        return per_request * math.ceil(n_requests / self.concurrency)

    def _generate(
        self, batch: list[Conversation], params: SamplingParams
    ) -> tuple[list[Completion], int]:
        if self._closed:
            raise BackendError(f"{self.spec}: backend is closed")
        budget = self.batch_deadline(len(batch))
        deadline_at = time.monotonic() + budget
        if len(batch) == 1:
            completions = [self._one(batch[0], params, deadline_at, budget)]
        else:
            completions = self._in_threads(batch, params, deadline_at, budget)
        if self.raise_on_error:
            failed = [c.error for c in completions if c.error]
            if failed:
                raise BackendError(
                    f"{len(failed)} of {len(batch)} requests failed; first: {failed[0]}"
                )
        return completions, sum(c.prompt_tokens for c in completions)

    def _in_threads(
        self, batch: list[Conversation], params: SamplingParams, deadline_at: float, budget: float
    ) -> list[Completion]:
        with self._lock:
            if self._threads is None:
                self._threads = ThreadPoolExecutor(
                    self.concurrency, thread_name_prefix="intbench-openai"
                )
        futures = [
            self._threads.submit(self._one, conversation, params, deadline_at, budget)
            for conversation in batch[1:]
        ]
        first = self._one(batch[0], params, deadline_at, budget)  # sent by the caller's thread
        # Every request ends by its deadline; this outer bound only guards against a
        # request stuck where no timeout reaches.
        wait_for_all(futures, timeout=deadline_at - time.monotonic() + STUCK_GRACE_S)
        return [first] + [
            future.result()
            if future.done()
            else self._error(f"deadline of {budget:.1f}s for the batch passed")
            for future in futures
        ]

    def _one(
        self, conversation: Conversation, params: SamplingParams, deadline_at: float, budget: float
    ) -> Completion:
        try:
            return self._request_with_retries(conversation, params, deadline_at, budget)
        except Exception as exc:  # noqa: BLE001 - costs only this request its result
            return self._error(f"unexpected {type(exc).__name__}: {exc}")

    def _request_with_retries(
        self, conversation: Conversation, params: SamplingParams, deadline_at: float, budget: float
    ) -> Completion:
        body = self._body(conversation, params)
        attempts = 0
        while True:
            left = deadline_at - time.monotonic()
            if left <= 0 or not self._in_flight.acquire(timeout=left):
                return self._error(f"deadline of {budget:.1f}s for the batch passed")
            try:
                return self._request(body, min(self.timeout, deadline_at - time.monotonic()))
            except RequestFailure as failure:
                last = failure
            finally:
                self._in_flight.release()
            attempts += 1
            if time.monotonic() >= deadline_at:
                return self._error(f"deadline of {budget:.1f}s for the batch passed")
            if not last.retryable or attempts > self.max_retries:
                break
            delay = self._delay(attempts, last.retry_after)
            if time.monotonic() + delay >= deadline_at:
                break
            time.sleep(delay)
        return self._error(f"{last} (after {attempts} attempt{'s' * (attempts > 1)})")

    def _delay(self, attempt: int, retry_after: float | None) -> float:
        # "Equal jitter": half the exponential step fixed, half random, so
        # clients that failed together do not retry together.
        step = min(self.max_backoff, self.backoff * 2 ** (attempt - 1))
        delay = step / 2 + random.uniform(0, step / 2)
        if retry_after is not None:
            delay = max(delay, min(retry_after, self.max_backoff))
        return delay

    def _body(self, conversation: Conversation, params: SamplingParams) -> bytes:
        body: dict[str, Any] = {
            "model": self.model,
            "messages": conversation,
            "max_tokens": params.max_tokens,
            "temperature": params.temperature,
            "top_p": params.top_p,
        }
        if params.stop:
            body["stop"] = params.stop
        if params.seed is not None:
            body["seed"] = params.seed
        if params.logprobs:
            body["logprobs"] = True
        if self.extra_body:
            body.update(self.extra_body)
        return json.dumps(body).encode()

    def _request(self, body: bytes, timeout: float) -> Completion:
        try:
            status, text, headers = self._exchange(body, max(timeout, 1e-3))
        except _InvalidURL as exc:  # a typo in the spec: retrying cannot help
            raise RequestFailure(
                f"invalid URL {str(exc)!r}: expected http(s)://host[:port]/v1", retryable=False
            ) from None
        except TimeoutError:
            raise RequestFailure(f"no answer within {timeout:.1f}s", retryable=True) from None
        except (OSError, http.client.HTTPException) as exc:
            raise RequestFailure(f"connection error: {exc!r}", retryable=True) from None
        if status >= 400:
            raise RequestFailure(
                f"HTTP {status}: {_short(_error_detail(text))}",
                retryable=status in RETRY_STATUSES or status >= 500,
                retry_after=_retry_after(headers),
            )
        return parse_completion(text, self._url)

    def _exchange(self, body: bytes, timeout: float) -> tuple[int, str, Any]:
        """One POST: the status, the body as text and the headers.  A kept-alive
        connection the server has closed meanwhile is replaced once, at no attempt's cost."""
        route = self._routed()
        headers = {**self._headers, **(route.headers if not route.https else {})}
        for fresh in (False, True):
            connection, reused = route.take(fresh)
            connection.timeout = timeout
            if connection.sock is not None:
                connection.sock.settimeout(timeout)
            try:
                connection.request("POST", route.target, body, headers)
                response = connection.getresponse()
                data = response.read()
            except (ConnectionError, http.client.RemoteDisconnected, http.client.BadStatusLine):
                connection.close()
                if reused:
                    continue
                raise
            except BaseException:
                connection.close()
                raise
            if response.will_close:
                connection.close()
            else:
                route.give_back(connection)
            return response.status, data.decode("utf-8", errors="replace"), response.headers
        raise AssertionError("unreachable: a fresh connection either answers or raises")

    def _routed(self) -> _Route:
        with self._lock:
            if self._route is None:
                try:
                    self._route = _Route(self._url)
                except _InvalidURL:
                    raise _InvalidURL(self._url) from None
            return self._route

    def _error(self, message: str) -> Completion:
        return Completion(
            text="", finish_reason="error", error=f"{self.base_url} (model {self.model}): {message}"
        )

    def close(self) -> None:
        """Stop the request threads and close the idle connections (idempotent)."""
        if self._closed:
            return
        self._closed = True
        if self._threads is not None:
            self._threads.shutdown(wait=False, cancel_futures=True)
        if self._route is not None:
            self._route.close()


def parse_completion(body: str, url: str) -> Completion:
    """The Completion in a chat-completions reply body, else :class:`MalformedReply`.

    The body is checked field by field, so any malformed reply fails here,
    retryably, and names what is wrong.
    """
    try:
        reply = json.loads(body)
    except json.JSONDecodeError as exc:
        raise MalformedReply(url, f"not JSON ({exc})", body) from None
    try:
        if not isinstance(reply, dict):
            raise ValueError(f"expected a JSON object, got {type(reply).__name__}")
        return _completion_from(reply)
    except ValueError as exc:
        raise MalformedReply(url, str(exc), body) from None


def _completion_from(reply: dict) -> Completion:
    choices = reply.get("choices")
    if not isinstance(choices, list) or not choices:
        raise ValueError("no choices")
    choice = choices[0]
    message = choice.get("message") if isinstance(choice, dict) else None
    if not isinstance(message, dict):
        raise ValueError("the first choice has no message")
    text = _optional(message, "content", str) or ""
    prompt_tokens, completion_tokens = _usage(reply.get("usage"))
    return Completion(
        text=text,
        prompt_tokens=prompt_tokens,
        completion_tokens=completion_tokens,
        finish_reason=_optional(choice, "finish_reason", str) or "stop",
        logprobs=_logprobs(choice.get("logprobs")),
    )


def _optional(mapping: dict, key: str, kind: type) -> Any:
    value = mapping.get(key)
    if value is not None and not isinstance(value, kind):
        raise ValueError(f"{key!r} must be a {kind.__name__} or null, got {value!r}")
    return value


def _usage(usage: Any) -> tuple[int, int]:
    # Some servers omit usage; a present one must hold counts.
    if usage is None:
        return 0, 0
    if not isinstance(usage, dict):
        raise ValueError(f"'usage' must be an object, got {usage!r}")
    return _optional(usage, "prompt_tokens", int) or 0, _optional(
        usage, "completion_tokens", int
    ) or 0


def _logprobs(logprobs: Any) -> list[float] | None:
    if logprobs is None:
        return None
    content = logprobs.get("content") if isinstance(logprobs, dict) else logprobs
    if content is None:
        return None
    if not isinstance(content, list) or not all(
        isinstance(token, dict) and isinstance(token.get("logprob"), (int, float))
        for token in content
    ):
        raise ValueError("'logprobs' must hold a list of tokens with numeric logprobs")
    return [float(token["logprob"]) for token in content]


def _error_detail(body: str) -> str:
    """The ``error.message`` of an error reply, else its body."""
    try:
        message = json.loads(body)["error"]["message"]
    except (ValueError, KeyError, TypeError):
        return body
    return message if isinstance(message, str) else body


def _retry_after(headers: Any) -> float | None:
    value = headers.get("retry-after")
    try:
        return max(0.0, float(value)) if value is not None else None
    except ValueError:
        return None  # HTTP-date form: fall back to our own backoff


def _short(message: str, limit: int = 200) -> str:
    return message if len(message) <= limit else message[:limit] + "..."
