"""Spaces for text observations and actions.

Gymnasium's ``Text`` space only holds strings drawn from a fixed charset, but
problems, transcripts and teacher messages are arbitrary Unicode.
:class:`UnicodeText` has every Unicode code point as its charset (a
character's index is its code point), so ``contains``, flattening and the
shared memory of ``AsyncVectorEnv`` accept any string within the length
bounds; random samples are drawn from printable text.
"""

from __future__ import annotations

import string
import sys
from collections.abc import Iterator, Sequence, Set
from typing import Any

import numpy as np
from gymnasium import spaces

SAMPLE_CHARSET = string.ascii_letters + string.digits + string.punctuation + " \n" + "éüßπ√≤≥→∑你好"
"""What :meth:`UnicodeText.sample` draws from (its masks index these characters):
printable ASCII plus a few non-ASCII characters, so random agents exercise Unicode."""

MAX_TEXT = 200_000
"""Upper bound on any text field, in characters (about 50k tokens)."""

CODE_POINTS = sys.maxunicode + 1


class _AllCharacters(Set):
    """Every single character, without materialising 1.1 million of them."""

    def __contains__(self, char: object) -> bool:
        return isinstance(char, str) and len(char) == 1

    def __len__(self) -> int:
        return CODE_POINTS

    def __iter__(self) -> Iterator[str]:
        return map(chr, range(CODE_POINTS))

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _AllCharacters)

    def __hash__(self) -> int:
        return hash(_AllCharacters)


class _CharactersByCodePoint(Sequence):
    """Character ``i`` is ``chr(i)``: Gymnasium's ``character_list``, computed."""

    def __getitem__(self, index):
        if isinstance(index, slice):
            return tuple(map(chr, range(CODE_POINTS)[index]))
        return chr(index)

    def __len__(self) -> int:
        return CODE_POINTS


class UnicodeText(spaces.Text):
    """A ``Text`` space whose members are any ``str`` of bounded length."""

    def __init__(self, max_length: int = MAX_TEXT, *, min_length: int = 0, seed: Any = None):
        # The parent's charset tables go unused (the properties below replace them), and
        # building them for a real charset cost most of an env's construction.
        super().__init__(max_length, min_length=min_length, charset=" ", seed=seed)
        self._sampler: spaces.Text | None = None  # made at the first sample: envs rarely sample

    # Lazy stand-ins for the parent's frozenset and tuple: the parent only takes
    # their length, membership and items, so the narrower declared types do not matter.
    @property
    def character_set(self) -> Set[str]:  # type: ignore[override]
        return _AllCharacters()

    @property
    def character_list(self) -> Sequence[str]:  # type: ignore[override]
        return _CharactersByCodePoint()

    def character_index(self, char: str) -> np.int32:
        return np.int32(ord(char))

    @property
    def characters(self) -> str:
        return "".join(self.character_list[:])

    def contains(self, x: Any) -> bool:
        return isinstance(x, str) and self.min_length <= len(x) <= self.max_length

    def sample(self, mask=None, probability=None) -> str:
        """Random printable text; masks and probabilities are over ``SAMPLE_CHARSET``."""
        if self._sampler is None:
            self._sampler = spaces.Text(
                self.max_length, min_length=self.min_length, charset=SAMPLE_CHARSET
            )
        # The sampler shares this space's generator, so seeding this space seeds samples.
        self._sampler._np_random = self.np_random
        # Cap random lengths: a 200k-character message is a valid action, but a
        # useless one to draw by default.
        if mask is None and probability is None:
            length = int(self.np_random.integers(self.min_length, min(self.max_length, 64) + 1))
            return self._sampler.sample(mask=(length, None))
        return self._sampler.sample(mask=mask, probability=probability)

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, UnicodeText)
            and self.min_length == other.min_length
            and self.max_length == other.max_length
        )

    def __repr__(self) -> str:
        return f"UnicodeText({self.min_length}, {self.max_length})"


def counter(high: int = 2**31 - 1) -> spaces.Box:
    """A scalar non-negative integer observation (e.g. characters revealed)."""
    return spaces.Box(low=0, high=high, shape=(), dtype=np.int64)


def as_counter(value: int) -> np.ndarray:
    return np.array(value, dtype=np.int64)
