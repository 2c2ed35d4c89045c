"""Scripted students for subprocess tests (importable as ``scripted:tests.scripted_students:NAME``)."""

from __future__ import annotations

import os
import time
from pathlib import Path

TRACE = "We add the two numbers one digit at a time, carrying when needed. " * 3 + "So \\boxed{7}."


def slow(messages):
    """A fixed trace after a short pause, so that kills land mid-run."""
    time.sleep(0.05)
    return TRACE


def flaky(messages):
    """Fails on problems whose prompt mentions a marker file's content, until the file is gone."""
    marker = Path(os.environ["INTBENCH_TEST_FLAKY"])
    if marker.exists() and marker.read_text() in messages[-1]["content"]:
        raise RuntimeError("injected student failure")
    return TRACE


def stalls(messages):
    """Stalls for a few seconds on the problem named in a marker file, to trip episode limits."""
    marker = Path(os.environ["INTBENCH_TEST_STALL"])
    if marker.exists() and marker.read_text() in messages[-1]["content"]:
        time.sleep(2.5)
    return TRACE
