"""Module attributes imported on first access, so that importing a package stays fast."""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any


def lazy_attributes(module: str, sources: Mapping[str, str]) -> Callable[[str], Any]:
    """A ``__getattr__`` for ``module`` that imports each name of ``sources`` from the
    module it maps to: ``__getattr__ = lazy_attributes(__name__, {name: module_path})``."""

    def __getattr__(name: str) -> Any:
        if name in sources:
            return getattr(importlib.import_module(sources[name]), name)
        raise AttributeError(f"module {module!r} has no attribute {name!r}")

    return __getattr__
