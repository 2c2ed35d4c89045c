"""Backend for any OpenAI-compatible chat-completions server (vLLM, SGLang, Ollama, APIs).

A batch becomes many requests in flight at once (at most ``concurrency``),
sent by an aiohttp session that lives on a private event-loop thread, so
callers stay synchronous and the connection pool survives between batches.

Failures: 429, 408, 409, 5xx, timeouts, connection errors and malformed
replies (a body that is not a chat completion: bad JSON, an HTML page,
missing or mistyped fields; a :class:`MalformedReply` naming the URL and
quoting the body) are retried with exponential backoff and jitter
(``Retry-After`` is honoured); other 4xx errors are not.  Each attempt is bounded by ``timeout`` and each ``generate`` call by
an overall ``deadline``, so a call never hangs.  A request that still fails
returns a Completion with ``finish_reason="error"`` and ``error`` naming the
server and the last failure, so the other requests of its batch keep their
answers (an env records such an episode as failed, and a resumed run retries
it); with ``raise_on_error=True`` the call raises :class:`BackendError` with
``raise_on_error=True``.

The API key comes from ``api_key``, else ``INTBENCH_API_KEY``, else
``OPENAI_API_KEY``, else a dummy key (local servers usually ignore it).
"""

from __future__ import annotations

import asyncio
import json
import math
import os
import random
import re
import threading
from typing import Any

import aiohttp

from intbench.agents.backends.base import BackendError, BaseBackend
from intbench.agents.base import Completion, Conversation, SamplingParams

RETRY_STATUSES = frozenset({408, 409, 429})
DUMMY_KEY = "sk-intbench-no-key"
_TARGET = re.compile(r"^(?P<model>.+?)@(?P<url>https?://\S+)$")


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


def _env_proxy(url: str) -> tuple[str | None, aiohttp.BasicAuth | None]:
    """The proxy that HTTP(S)_PROXY / NO_PROXY (and ~/.netrc for its credentials)
    give for ``url``, as other HTTP clients use them; ``(None, None)`` for none."""
    from aiohttp.helpers import get_env_proxy_for_url
    from yarl import URL

    try:
        proxy, auth = get_env_proxy_for_url(URL(url))
    except (LookupError, ValueError):  # no proxy, or a bad URL that the request reports
        return None, None
    return str(proxy), auth


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
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(
            target=self._loop.run_forever, name="intbench-openai-loop", daemon=True
        )
        self._thread.start()
        self._url = self.base_url.rstrip("/") + "/chat/completions"
        self._headers = {
            "Authorization": f"Bearer {_api_key(api_key)}",
            "Content-Type": "application/json",
        }
        self._session: aiohttp.ClientSession | None = None  # made on the loop, at first use
        self._proxy: str | None = None
        self._proxy_auth: aiohttp.BasicAuth | None = None
        self._closed = False
        # One bound on requests in flight for the backend, shared by every batch,
        # so batches from several threads run together within the limit.
        self._in_flight = asyncio.Semaphore(concurrency)

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
        future = asyncio.run_coroutine_threadsafe(
            self._run_batch(batch, params, budget), self._loop
        )
        # The coroutine enforces the deadline itself; this outer bound only
        # guards against a stuck event loop.
        completions = future.result(timeout=budget + 10.0)
        if self.raise_on_error:
            failed = [c.error for c in completions if c.error]
            if failed:
                raise BackendError(
                    f"{len(failed)} of {len(batch)} requests failed; first: {failed[0]}"
                )
        return completions, sum(c.prompt_tokens for c in completions)

    async def _run_batch(
        self, batch: list[Conversation], params: SamplingParams, budget: float
    ) -> list[Completion]:
        limit = self._in_flight
        deadline_at = self._loop.time() + budget

        async def one(conversation: Conversation) -> Completion:
            try:
                return await asyncio.wait_for(
                    self._request_with_retries(conversation, params, limit, deadline_at), budget
                )
            except asyncio.TimeoutError:
                return self._error(f"deadline of {budget:.1f}s for the batch passed")

        # Per-request results: an unexpected exception (a cancelled request too) costs
        # only its own request.
        results = await asyncio.gather(*(one(c) for c in batch), return_exceptions=True)
        return [
            self._error(f"unexpected {type(r).__name__}: {r}")
            if isinstance(r, BaseException)
            else r
            for r in results
        ]

    async def _request_with_retries(
        self,
        conversation: Conversation,
        params: SamplingParams,
        limit: asyncio.Semaphore,
        deadline_at: float,
    ) -> Completion:
        attempts = 0
        while True:
            async with limit:
                try:
                    return await self._request(conversation, params)
                except RequestFailure as failure:
                    last = failure
            attempts += 1
            if not last.retryable or attempts > self.max_retries:
                break
            delay = self._delay(attempts, last.retry_after)
            if self._loop.time() + delay >= deadline_at:
                break
            await asyncio.sleep(delay)
        return self._error(f"{last} (after {attempts} attempt{'s' * (attempts > 1)})")

    def _delay(self, attempt: int, retry_after: float | None) -> float:
        # "Equal jitter": half the exponential step fixed, half random, so
        # clients that failed together do not retry together.
        step = min(self.max_backoff, self.backoff * 2 ** (attempt - 1))
        delay = step / 2 + random.uniform(0, step / 2)
        if retry_after is not None:
            delay = max(delay, min(retry_after, self.max_backoff))
        return delay

    async def _request(self, conversation: Conversation, params: SamplingParams) -> Completion:
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
        try:
            async with self._client().post(
                self._url,
                data=json.dumps(body),
                headers=self._headers,
                proxy=self._proxy,
                proxy_auth=self._proxy_auth,
            ) as response:
                text = await response.text(errors="replace")
                status, headers = response.status, response.headers
        except asyncio.TimeoutError:
            raise RequestFailure(f"no answer within {self.timeout:.1f}s", retryable=True) from None
        except aiohttp.InvalidURL:  # a typo in the spec: retrying cannot help
            raise RequestFailure(
                f"invalid URL {self._url!r}: expected http(s)://host[:port]/v1", retryable=False
            ) from None
        except aiohttp.ClientError as exc:
            raise RequestFailure(f"connection error: {exc}", retryable=True) from None
        if status >= 400:
            raise RequestFailure(
                f"HTTP {status}: {_short(_error_detail(text))}",
                retryable=status in RETRY_STATUSES or status >= 500,
                retry_after=_retry_after(headers),
            )
        return parse_completion(text, self._url)

    def _client(self) -> aiohttp.ClientSession:
        # A plain aiohttp session rather than an SDK client: with many requests in
        # flight the SDK's per-request work cost more CPU than everything else the
        # runner does (benchmarks/runner_throughput.py). Our bound on requests in
        # flight is the semaphore, so the pool only keeps connections alive.
        if self._session is None:
            self._session = aiohttp.ClientSession(
                timeout=aiohttp.ClientTimeout(total=self.timeout),
                connector=aiohttp.TCPConnector(limit=0),
                # The proxy is looked up once (_env_proxy): with trust_env each request
                # re-read the proxy variables and ~/.netrc in a worker thread, about a
                # tenth of the runner's CPU per episode.
                trust_env=False,
            )
            self._proxy, self._proxy_auth = _env_proxy(self._url)
        return self._session

    def _error(self, message: str) -> Completion:
        return Completion(
            text="", finish_reason="error", error=f"{self.base_url} (model {self.model}): {message}"
        )

    def close(self) -> None:
        """Close the HTTP session and stop the event-loop thread (idempotent)."""
        if self._closed:
            return
        self._closed = True

        async def close_session() -> None:
            if self._session is not None:
                await self._session.close()

        try:
            asyncio.run_coroutine_threadsafe(close_session(), self._loop).result(timeout=10)
        finally:
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(timeout=10)
            self._loop.close()

    def __del__(self) -> None:
        # Best effort for backends that were never closed explicitly.
        if not getattr(self, "_closed", True) and self._thread.is_alive():
            self._loop.call_soon_threadsafe(self._loop.stop)


def parse_completion(body: str, url: str) -> Completion:
    """The Completion in a chat-completions reply body, else :class:`MalformedReply`.

    The body is checked field by field rather than trusted to the client's
    lenient models, so any malformed reply fails here, retryably, and names
    what is wrong.
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
