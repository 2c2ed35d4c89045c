"""Deterministic backends for tests, replays and hand-written policies.

Token counts are whitespace-separated words, so tests can assert exact usage
numbers.  ``max_tokens`` (in words) and ``stop`` strings are honoured the same
way a model backend honours them.

Replay files are JSON lines; each record holds the answer under ``"text"`` or
``"response"``.  If every record also has ``"prompt_hash"`` (see
:func:`prompt_hash`) or ``"messages"``, answers are looked up by the prompt;
otherwise they are replayed in file order.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import inspect
import json
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from intbench.agents.backends.base import BackendError, BaseBackend, cut_at_stop
from intbench.agents.base import Completion, Conversation, SamplingParams

Responder = Callable[..., "str | Completion"]


def prompt_hash(conversation: Conversation) -> str:
    """A stable short hash of a conversation (roles and contents only)."""
    canonical = json.dumps(
        [[m["role"], m["content"]] for m in conversation], ensure_ascii=False, separators=(",", ":")
    )
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()[:16]


def count_words(text: str) -> int:
    """The scripted backends' token count: whitespace-separated words."""
    return len(text.split())


class ScriptedBackend(BaseBackend):
    """Answers with ``responder(messages, params)`` (or ``responder(messages)``).

    The responder returns the answer text, or a full :class:`Completion` when
    it wants to set token counts or an error itself.
    """

    def __init__(self, responder: Responder, spec: str | None = None) -> None:
        if not callable(responder):
            raise TypeError(f"responder must be callable, got {type(responder).__name__}")
        super().__init__(spec or f"scripted:{getattr(responder, '__name__', 'callable')}")
        self._responder = responder
        self._wants_params = _accepts_two_args(responder)

    def _generate(
        self, batch: list[Conversation], params: SamplingParams
    ) -> tuple[list[Completion], int]:
        completions = [self._answer(conversation, params) for conversation in batch]
        return completions, sum(c.prompt_tokens for c in completions)

    def _answer(self, conversation: Conversation, params: SamplingParams) -> Completion:
        result = (
            self._responder(conversation, params)
            if self._wants_params
            else self._responder(conversation)
        )
        if isinstance(result, Completion):
            return result
        if not isinstance(result, str):
            raise BackendError(
                f"scripted responder returned {type(result).__name__}; expected str or Completion"
            )
        text, _ = cut_at_stop(result, params.stop)
        words = text.split()
        finish = "stop"
        if len(words) > params.max_tokens:
            # Keep the original spacing of the kept words.
            text = _first_words(text, params.max_tokens)
            finish = "length"
        return Completion(
            text=text,
            prompt_tokens=sum(count_words(m["content"]) for m in conversation),
            completion_tokens=min(len(words), params.max_tokens),
            finish_reason=finish,
        )


def _first_words(text: str, n: int) -> str:
    end, seen = 0, 0
    for word in text.split():
        end = text.index(word, end) + len(word)
        seen += 1
        if seen == n:
            break
    return text[:end]


def _accepts_two_args(fn: Callable) -> bool:
    try:
        signature = inspect.signature(fn)
    except (TypeError, ValueError):  # builtins without signatures: assume (messages, params)
        return True
    try:
        signature.bind(None, None)
        return True
    except TypeError:
        return False


class ReplayResponder:
    """Serves answers recorded in a JSON-lines file, in order or by prompt hash."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        if not self.path.is_file():
            raise FileNotFoundError(f"replay file not found: {self.path}")
        records = []
        with self.path.open(encoding="utf-8") as handle:
            for line_no, line in enumerate(handle, 1):
                if line.strip():
                    records.append(self._parse(line, line_no))
        if not records:
            raise ValueError(f"replay file {self.path} has no records")
        self._keyed = all(key is not None for key, _ in records)
        self._by_hash = {key: text for key, text in records} if self._keyed else {}
        self._in_order = [text for _, text in records]
        self._next = 0
        self._lock = threading.Lock()

    def _parse(self, line: str, line_no: int) -> tuple[str | None, str]:
        where = f"{self.path}:{line_no}"
        try:
            record = json.loads(line)
        except json.JSONDecodeError as exc:
            raise ValueError(f"{where}: not valid JSON ({exc.msg})") from None
        if not isinstance(record, dict):
            raise ValueError(f"{where}: each record must be a JSON object")
        text = record.get("text", record.get("response"))
        if not isinstance(text, str):
            raise ValueError(f"{where}: record needs a string 'text' or 'response'")
        key = record.get("prompt_hash")
        if key is None and isinstance(record.get("messages"), list):
            key = prompt_hash(record["messages"])
        return key, text

    def __call__(self, conversation: Conversation) -> str:
        if self._keyed:
            key = prompt_hash(conversation)
            if key not in self._by_hash:
                raise BackendError(f"replay file {self.path} has no answer for prompt hash {key}")
            return self._by_hash[key]
        with self._lock:
            if self._next >= len(self._in_order):
                raise BackendError(
                    f"replay file {self.path} is exhausted after {len(self._in_order)} answers"
                )
            self._next += 1
            return self._in_order[self._next - 1]


SCRIPTED_FORMS = (
    "scripted:text=<answer>, scripted:replay=<file.jsonl> or scripted:<module>:<function>"
)


def check_scripted_target(target: str, spec: str | None = None) -> None:
    """Raise a one-line ``ValueError`` if the part after ``scripted:`` names no
    answer source; reads only the spec, the replay file's presence and the module's."""
    if target.startswith("text="):
        return
    if target.startswith("replay="):
        path = Path(target[len("replay=") :])
        if not path.is_file():
            raise ValueError(f"replay file not found: {path} (in spec {spec or target!r})")
        return
    module_name, sep, attr = target.rpartition(":")
    if not sep or not module_name or not attr:
        raise ValueError(f"bad scripted spec {spec or target!r}: use {SCRIPTED_FORMS}")
    try:
        found = importlib.util.find_spec(module_name)
    except (ImportError, ValueError):
        found = None
    if found is None:
        raise ValueError(
            f"cannot import module {module_name!r} for {spec or target!r}; "
            "put it on PYTHONPATH or fix the name"
        )


def scripted_from_target(target: str, spec: str | None = None, **options: Any) -> ScriptedBackend:
    """Build a ScriptedBackend from the part of a spec after ``scripted:``."""
    if options:
        raise ValueError(f"scripted backends take no options, got {sorted(options)}")
    check_scripted_target(target, spec)
    if target.startswith("text="):
        fixed = target[len("text=") :]
        return ScriptedBackend(lambda messages: fixed, spec=spec)
    if target.startswith("replay="):
        return ScriptedBackend(ReplayResponder(target[len("replay=") :]), spec=spec)
    module_name, _, attr = target.rpartition(":")
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise ValueError(f"cannot import module {module_name!r} for {spec!r}: {exc}") from exc
    responder = getattr(module, attr, None)
    if not callable(responder):
        raise ValueError(f"{module_name}.{attr} is not a callable (from spec {spec!r})")
    return ScriptedBackend(responder, spec=spec)
