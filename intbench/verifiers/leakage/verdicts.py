"""The three answers of a leak check, in a module of their own so that every
detector can name them without importing the package that gathers the detectors."""

from __future__ import annotations

from typing import Literal

LeakVerdict = Literal["leaked", "clean", "undetermined"]
LEAK_VERDICTS: tuple[LeakVerdict, ...] = ("leaked", "clean", "undetermined")


def as_verdict(result: object) -> LeakVerdict:
    """A detector's answer as a :data:`LeakVerdict` (a bool from a plugin detector too)."""
    if isinstance(result, bool):
        return "leaked" if result else "clean"
    if result == "leaked" or result == "clean" or result == "undetermined":
        return result
    raise TypeError(f"a leak check returned {result!r}; return a bool or one of {LEAK_VERDICTS}")
