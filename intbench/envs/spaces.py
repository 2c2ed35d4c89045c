"""Spaces for text observations and actions.

Gymnasium's ``Text`` space only contains strings drawn from a fixed charset,
but problems, transcripts and teacher messages are arbitrary Unicode.  The
spaces here accept any string within the length bounds and sample from
printable text, so ``check_env`` and random agents still work.
"""

from __future__ import annotations

import string
from typing import Any

import numpy as np
from gymnasium import spaces

# Sampling charset: printable ASCII plus a few common non-ASCII characters so
# that random agents exercise Unicode handling.
_SAMPLE_CHARSET = (
    string.ascii_letters + string.digits + string.punctuation + " \n" + "éüßπ√≤≥→∑你好"
)

MAX_TEXT = 200_000
"""Upper bound on any text field, in characters (about 50k tokens)."""


class UnicodeText(spaces.Text):
    """A ``Text`` space whose members are any ``str`` of bounded length."""

    def __init__(self, max_length: int = MAX_TEXT, *, min_length: int = 0, seed: Any = None):
        super().__init__(max_length, min_length=min_length, charset=_SAMPLE_CHARSET, seed=seed)

    def contains(self, x: Any) -> bool:
        return isinstance(x, str) and self.min_length <= len(x) <= self.max_length

    def sample(self, mask=None, probability=None) -> str:
        # Cap random samples: a 200k-character message is a valid action, but a
        # useless one to draw by default.
        if mask is None and probability is None:
            length = int(self.np_random.integers(self.min_length, min(self.max_length, 64) + 1))
            return super().sample(mask=(length, None))
        return super().sample(mask=mask, probability=probability)

    def __repr__(self) -> str:
        return f"UnicodeText({self.min_length}, {self.max_length})"


def counter(high: int = 2**31 - 1) -> spaces.Box:
    """A scalar non-negative integer observation (e.g. characters revealed)."""
    return spaces.Box(low=0, high=high, shape=(), dtype=np.int64)


def as_counter(value: int) -> np.ndarray:
    return np.array(value, dtype=np.int64)
