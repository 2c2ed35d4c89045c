"""On-disk caches shared by every protocol and run.

The student's unassisted baseline depends on (problem, student, prompt,
sampling, seed) and not on the teacher, so it is generated once and reused
across teachers, conditions and runs.  Entries are small JSON files written
atomically, so concurrent runs and interrupted writes never corrupt the cache.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
import threading
from pathlib import Path
from typing import Any


def default_cache_dir() -> Path:
    """``$INTBENCH_CACHE``, else ``~/.cache/intbench``."""
    return Path(os.environ.get("INTBENCH_CACHE") or Path.home() / ".cache" / "intbench")


def stable_hash(*parts: Any) -> str:
    """A hex digest of JSON-serialisable parts, stable across processes."""
    blob = json.dumps(parts, sort_keys=True, ensure_ascii=False, default=str)
    # surrogatepass: lone surrogates (possible in model output) keep distinct bytes.
    return hashlib.sha256(blob.encode("utf-8", "surrogatepass")).hexdigest()


def atomic_write_json(path: Path, data: Any) -> None:
    try:
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-", suffix=".json")
    except FileNotFoundError:  # the folder's first entry (no mkdir's stat on every write)
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-", suffix=".json")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(json.dumps(data, ensure_ascii=False))  # one write, not one per token
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


class JsonCache:
    """A key -> JSON value store under ``root/namespace`` with a memory layer."""

    def __init__(self, namespace: str, root: str | os.PathLike | None = None):
        self.dir = Path(root) if root is not None else default_cache_dir()
        self.dir = self.dir / namespace
        self._memory: dict[str, Any] = {}
        self._lock = threading.Lock()

    def _path(self, key: str) -> Path:
        return self.dir / key[:2] / f"{key}.json"

    def get(self, key: str) -> Any | None:
        with self._lock:
            if key in self._memory:
                return self._memory[key]
        path = self._path(key)
        try:
            value = json.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return None
        except (OSError, ValueError):
            # A damaged entry is a cache miss: it will be regenerated and overwritten.
            return None
        with self._lock:
            self._memory[key] = value
        return value

    def put(self, key: str, value: Any) -> None:
        atomic_write_json(self._path(key), value)
        with self._lock:
            self._memory[key] = value
