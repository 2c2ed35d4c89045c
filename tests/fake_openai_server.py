"""A small real HTTP server speaking the OpenAI chat-completions API, for tests.

It listens on 127.0.0.1 (an ephemeral port), answers ``GET /v1/models`` and
``POST /v1/chat/completions`` with scripted replies, records every request,
tracks how many requests are in flight, and can inject faults into the next
N requests:

* ``"500"``   -- HTTP 500 with an OpenAI-style error body
* ``"429"``   -- HTTP 429 with a ``Retry-After`` header
* ``"slow"``  -- waits ``slow_seconds`` before answering (beyond a client timeout)
* ``"drop"``  -- closes the connection without sending a response
* ``"truncated"``  -- announces a longer body than it sends, then hangs up

A request with ``"stream": true`` gets the same reply as server-sent events: one
chunk with the whole message, a usage chunk when ``stream_options.include_usage``
asks for it, then ``data: [DONE]``.  Faults apply to streamed requests too.

and malformed replies with status 200, each a chat completion gone wrong:

* ``"bad_json"``       -- a JSON document cut in the middle
* ``"html"``           -- an HTML page (``Content-Type: text/html``), as proxies send
* ``"null_message"``   -- ``"message": null`` in the choice
* ``"no_message"``     -- a choice without a ``message`` field
* ``"empty_choices"``  -- ``"choices": []``
* ``"no_choices"``     -- no ``choices`` field at all
* ``"wrong_types"``    -- ``"content"`` is a number, ``"usage"`` a string
* ``"not_an_object"``  -- a JSON list instead of an object

``inject_for(prompt, fault)`` makes every request whose last message is
``prompt`` fail, so one request of a batch can fail for good.

Usage::

    with FakeOpenAIServer(reply=lambda messages: "hi") as server:
        server.inject("500", count=2)
        server.inject_for("poisoned question", "bad_json")
        ... base_url = server.base_url ...
"""

from __future__ import annotations

import json
import socket
import threading
import time
import urllib.parse
from collections import deque
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

MALFORMED = (
    "bad_json",
    "html",
    "null_message",
    "no_message",
    "empty_choices",
    "no_choices",
    "wrong_types",
    "not_an_object",
)
FAULTS = ("500", "429", "slow", "drop", "truncated", *MALFORMED)
HTML_PAGE = "<html><head><title>502 Bad Gateway</title></head><body>nginx</body></html>"


def _text(content: object) -> str:
    """A message's text: a string, or the text parts of a content-part list."""
    if isinstance(content, list):
        return " ".join(p.get("text", "") for p in content if isinstance(p, dict))
    return content if isinstance(content, str) else ""


def echo_reply(messages: list[dict]) -> str:
    """Default reply: echo the last message's content."""
    return f"echo: {messages[-1]['content']}"


def _check_fault(fault: str) -> None:
    if fault not in FAULTS:
        raise ValueError(f"unknown fault {fault!r}; use one of {FAULTS}")


class _QuietServer(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 1024  # the listen backlog: many clients connect at once, as on vLLM

    def handle_error(self, request: object, client_address: object) -> None:
        # Clients that time out hang up on "slow" handlers; that is expected.
        pass


class FakeOpenAIServer:
    """The server plus its controls; see the module docstring."""

    def __init__(
        self,
        reply: Callable[[list[dict]], str] = echo_reply,
        model: str = "fake-model",
        latency: float = 0.0,
        slow_seconds: float = 5.0,
        retry_after: float = 0.1,
    ) -> None:
        self.reply = reply
        self.model = model
        self.latency = latency
        self.slow_seconds = slow_seconds
        self.retry_after = retry_after
        self.requests: list[dict] = []
        self.proxied: list[str] = []  # absolute URLs of requests sent here as to a proxy
        self.proxy_auth: list[str | None] = []  # their Proxy-Authorization headers
        self.first_request_at: float | None = None
        self.in_flight = 0
        self.max_in_flight = 0
        self._faults: deque[str] = deque()
        self._faults_by_prompt: dict[str, str] = {}
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._httpd = _QuietServer(("127.0.0.1", 0), self._handler_class())
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        host, port = self._httpd.server_address[:2]
        return f"http://{host}:{port}/v1"

    def inject(self, fault: str, count: int = 1) -> None:
        """Make the next ``count`` chat requests fail with ``fault``."""
        _check_fault(fault)
        with self._lock:
            self._faults.extend([fault] * count)

    def inject_for(self, prompt: str, fault: str) -> None:
        """Make every chat request whose last message is ``prompt`` fail with ``fault``."""
        _check_fault(fault)
        with self._lock:
            self._faults_by_prompt[prompt] = fault

    def clear(self) -> None:
        """Stop injecting faults: the server recovers."""
        with self._lock:
            self._faults.clear()
            self._faults_by_prompt.clear()

    def stats(self) -> dict:
        """Requests so far: count, most in flight, and per model its count and asked tokens."""
        with self._lock:
            by_model: dict[str, dict] = {}
            for request in self.requests:
                entry = by_model.setdefault(
                    request.get("model", ""), {"requests": 0, "max_tokens": 0}
                )
                entry["requests"] += 1
                entry["max_tokens"] += request.get("max_tokens") or 0
            return {
                "requests": len(self.requests),
                "max_in_flight": self.max_in_flight,
                "by_model": by_model,
                "first_request_at": self.first_request_at,
            }

    def start(self) -> FakeOpenAIServer:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stopping.set()  # wakes handlers sleeping in "slow" faults
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(timeout=5)

    def __enter__(self) -> FakeOpenAIServer:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    def _next_fault(self, request: dict) -> str | None:
        with self._lock:
            fault = self._faults_by_prompt.get(request["messages"][-1].get("content"))
            if fault is None and self._faults:
                fault = self._faults.popleft()
            return fault

    def _enter(self, body: dict) -> None:
        with self._lock:
            if not self.requests:
                self.first_request_at = time.time()  # wall clock: comparable across processes
            self.requests.append(body)
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)

    def _leave(self) -> None:
        with self._lock:
            self.in_flight -= 1

    def _completion_body(self, request: dict) -> dict:
        messages = request["messages"]
        text = self.reply(messages)
        words = text.split()
        max_tokens = request.get("max_tokens") or len(words)
        finish = "length" if len(words) > max_tokens else "stop"
        text = " ".join(words[:max_tokens]) if finish == "length" else text
        choice: dict = {
            "index": 0,
            "message": {"role": "assistant", "content": text},
            "finish_reason": finish,
        }
        if request.get("logprobs"):
            choice["logprobs"] = {
                "content": [
                    {"token": w, "logprob": -0.5, "bytes": None, "top_logprobs": []}
                    for w in text.split()
                ]
            }
        return {
            "id": f"chatcmpl-{len(self.requests)}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": request.get("model", self.model),
            "choices": [choice],
            "usage": {
                "prompt_tokens": sum(len(_text(m.get("content")).split()) for m in messages),
                "completion_tokens": len(text.split()),
                "total_tokens": 0,
            },
        }

    def _stream_events(self, request: dict) -> bytes:
        """The completion as server-sent events (``"stream": true``)."""
        body = self._completion_body(request)
        choice = body["choices"][0]
        head = {k: v for k, v in body.items() if k not in ("choices", "usage")}
        head["object"] = "chat.completion.chunk"
        chunks = [
            {
                **head,
                "choices": [
                    {
                        "index": 0,
                        "delta": choice["message"],
                        "finish_reason": choice["finish_reason"],
                    }
                ],
            }
        ]
        if (request.get("stream_options") or {}).get("include_usage"):
            chunks.append({**head, "choices": [], "usage": body["usage"]})
        events = [f"data: {json.dumps(chunk)}\n\n" for chunk in chunks] + ["data: [DONE]\n\n"]
        return "".join(events).encode()

    def _malformed_body(self, fault: str, request: dict) -> tuple[str, str]:
        """``(content type, body)`` of a malformed 200 reply."""
        if fault == "html":
            return "text/html", HTML_PAGE
        if fault == "bad_json":
            return "application/json", json.dumps(self._completion_body(request))[:40]
        if fault == "not_an_object":
            return "application/json", json.dumps([self._completion_body(request)])
        body = self._completion_body(request)
        choice = body["choices"][0]
        if fault == "null_message":
            choice["message"] = None
        elif fault == "no_message":
            del choice["message"]
        elif fault == "empty_choices":
            body["choices"] = []
        elif fault == "no_choices":
            del body["choices"]
        elif fault == "wrong_types":
            choice["message"]["content"] = 42
            body["usage"] = "lots"
        return "application/json", json.dumps(body)

    def _handler_class(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"  # keep-alive, like real servers
            # Headers and body go out in separate writes; with Nagle's algorithm and
            # the client's delayed ACK each reply would wait about 40 ms.
            disable_nagle_algorithm = True

            def log_message(self, *args: object) -> None:  # keep test output clean
                pass

            def _send(
                self, status: int, content_type: str, data: bytes, headers: dict | None = None
            ) -> None:
                self.send_response(status)
                self.send_header("Content-Type", content_type)
                self.send_header("Content-Length", str(len(data)))
                for key, value in (headers or {}).items():
                    self.send_header(key, value)
                self.end_headers()
                self.wfile.write(data)

            def _send_json(self, status: int, body: dict, headers: dict | None = None) -> None:
                self._send(status, "application/json", json.dumps(body).encode(), headers)

            def _send_truncated(self, request: dict) -> None:
                data = json.dumps(server._completion_body(request)).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data[: len(data) // 2])
                self.close_connection = True
                self.connection.shutdown(socket.SHUT_RDWR)

            def do_GET(self) -> None:
                if self.path.rstrip("/") == "/v1/models":
                    self._send_json(
                        200, {"object": "list", "data": [{"id": server.model, "object": "model"}]}
                    )
                elif self.path.rstrip("/") == "/stats":  # for a server in another process
                    self._send_json(200, server.stats())
                else:
                    self._send_json(404, {"error": {"message": f"no route {self.path}"}})

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length", 0))
                raw = self.rfile.read(length)
                # A request line in absolute form comes from a client that took this
                # server for its HTTP proxy: answered as if forwarded, and counted.
                path = urllib.parse.urlsplit(self.path).path
                if path != self.path:
                    with server._lock:
                        server.proxied.append(self.path)
                        server.proxy_auth.append(self.headers.get("Proxy-Authorization"))
                if path.rstrip("/") != "/v1/chat/completions":
                    self._send_json(404, {"error": {"message": f"no route {self.path}"}})
                    return
                try:
                    request = json.loads(raw)
                    assert isinstance(request.get("messages"), list)
                except (ValueError, AssertionError):
                    self._send_json(400, {"error": {"message": "bad request body"}})
                    return
                server._enter(request)
                try:
                    self._answer(request)
                finally:
                    server._leave()

            def _answer(self, request: dict) -> None:
                fault = server._next_fault(request)
                if server.latency:
                    server._stopping.wait(server.latency)
                if fault == "500":
                    self._send_json(500, {"error": {"message": "injected server error"}})
                elif fault == "429":
                    self._send_json(
                        429,
                        {"error": {"message": "injected rate limit"}},
                        {"Retry-After": str(server.retry_after)},
                    )
                elif fault == "drop":
                    self.close_connection = True
                    self.connection.shutdown(socket.SHUT_RDWR)
                elif fault == "truncated":
                    self._send_truncated(request)
                elif fault in MALFORMED:
                    content_type, body = server._malformed_body(fault, request)
                    self._send(200, content_type, body.encode())
                else:
                    if fault == "slow":
                        server._stopping.wait(server.slow_seconds)
                    if request.get("stream"):
                        self._send(200, "text/event-stream", server._stream_events(request))
                    else:
                        self._send_json(200, server._completion_body(request))

        return Handler
