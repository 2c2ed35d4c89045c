"""Baseline teacher policies for the monitor protocol, built from spec strings.

=================  ==========================================================
``never``          never intervenes
``always``         intervenes at the first increment
``at:<fraction>``  intervenes at the first increment whose revealed prefix
                   reaches ``fraction`` of the trace (``at:0.5``: half)
``random:<p>``     intervenes at each increment with probability ``p``;
                   seeded (``random:0.1?seed=3``, default seed 0)
``oracle``         intervenes at the first increment exactly when the
                   student's baseline is wrong
=================  ==========================================================

Options follow a ``?``, ``&``-separated: ``seed=<int>`` (random) and
``message=<text>`` (all; the text may use ``{revealed_chars}``,
``{total_chars}`` and ``{fraction}`` placeholders).

Every policy has the same tiny interface, :meth:`Policy.decide`, taking one
observation mapping and returning ``{"intervene": 0 | 1, "message": str}``
(the monitor env's action).  The keys a policy reads:

=====================  =====================================================
``revealed_chars``     characters of the trace shown so far (int; ``at:``)
``total_chars``        length of the whole trace (int; ``at:``)
``baseline_correct``   whether the student's unassisted answer was right
                       (``oracle``; ``None``/missing means unknown: no
                       intervention)
=====================  =====================================================

Keys are looked up in the observation, then in its ``"privileged"``
sub-mapping, so ``decide({**obs, **info})`` works with the monitor env,
whose ``info["privileged"]`` holds ``total_chars`` and ``baseline_correct``.
Numpy scalars are accepted.  A required key that is missing or invalid
raises :class:`ValueError` naming it: a scripted baseline that silently waits
would corrupt an evaluation.

Policies are stateless per observation except ``random`` (its generator) —
call :meth:`Policy.reset` at the start of each episode to make episodes
reproducible independently of each other.
"""

from __future__ import annotations

import random
from collections.abc import Mapping
from typing import Any
from urllib.parse import parse_qsl

DEFAULT_MESSAGE = (
    "Pause and check your reasoning so far carefully before you continue; "
    "look for a mistake in the steps above."
)
"""What baseline policies say when they intervene, unless given ``message=``."""

Action = dict[str, Any]
_MISSING = object()


def _lookup(observation: Mapping[str, Any], key: str) -> Any:
    if key in observation:
        return observation[key]
    privileged = observation.get("privileged")
    if isinstance(privileged, Mapping) and key in privileged:
        return privileged[key]
    return _MISSING


def _int_key(observation: Mapping[str, Any], key: str) -> int:
    value = _lookup(observation, key)
    if value is _MISSING:
        raise ValueError(f"observation lacks {key!r}")
    try:
        number = int(value)  # also numpy 0-d arrays and scalars
    except (TypeError, ValueError):
        raise ValueError(f"observation[{key!r}] must be an integer, got {value!r}") from None
    if number < 0:
        raise ValueError(f"observation[{key!r}] must be >= 0, got {number}")
    return number


class Policy:
    """Base class: a monitor teacher that decides from the observation alone."""

    spec: str = ""

    def __init__(self, message: str = DEFAULT_MESSAGE) -> None:
        self.message = message

    def reset(self) -> None:
        """Start a new episode (only stateful policies do anything)."""

    def should_intervene(self, observation: Mapping[str, Any]) -> bool:
        raise NotImplementedError

    def decide(self, observation: Mapping[str, Any]) -> Action:
        """The action for one increment: ``{"intervene": 0|1, "message": str}``."""
        if not isinstance(observation, Mapping):
            raise TypeError(f"observation must be a mapping, got {type(observation).__name__}")
        if not self.should_intervene(observation):
            return {"intervene": 0, "message": ""}
        return {"intervene": 1, "message": self._format_message(observation)}

    def _format_message(self, observation: Mapping[str, Any]) -> str:
        if "{" not in self.message:
            return self.message
        revealed = _lookup(observation, "revealed_chars")
        total = _lookup(observation, "total_chars")
        values = {
            "revealed_chars": "?" if revealed is _MISSING else int(revealed),
            "total_chars": "?" if total is _MISSING else int(total),
        }
        known = isinstance(values["revealed_chars"], int) and isinstance(values["total_chars"], int)
        values["fraction"] = (
            f"{values['revealed_chars'] / values['total_chars']:.2f}"
            if known and values["total_chars"]
            else "?"
        )
        try:
            return self.message.format(**values)
        except (KeyError, IndexError, ValueError) as exc:
            raise ValueError(f"bad message template {self.message!r}: {exc}") from None

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.spec!r})"


class Never(Policy):
    """Never intervenes."""

    def should_intervene(self, observation: Mapping[str, Any]) -> bool:
        return False


class Always(Policy):
    """Intervenes at the first increment it is asked about."""

    def should_intervene(self, observation: Mapping[str, Any]) -> bool:
        return True


class AtFraction(Policy):
    """Intervenes once ``revealed_chars >= fraction * total_chars``, i.e. at the
    increment that crosses the fraction (the env ends the episode there)."""

    def __init__(self, fraction: float, message: str = DEFAULT_MESSAGE) -> None:
        if not 0.0 <= fraction <= 1.0:
            raise ValueError(f"at:<fraction> needs 0 <= fraction <= 1, got {fraction}")
        super().__init__(message)
        self.fraction = fraction

    def should_intervene(self, observation: Mapping[str, Any]) -> bool:
        revealed = _int_key(observation, "revealed_chars")
        total = _int_key(observation, "total_chars")
        # Integer comparison avoids float rounding at exact boundaries.
        return revealed * 1_000_000 >= round(self.fraction * 1_000_000) * total


class RandomPolicy(Policy):
    """Intervenes at each increment with probability ``p`` (seeded)."""

    def __init__(self, p: float, seed: int = 0, message: str = DEFAULT_MESSAGE) -> None:
        if not 0.0 <= p <= 1.0:
            raise ValueError(f"random:<p> needs 0 <= p <= 1, got {p}")
        super().__init__(message)
        self.p = p
        self.seed = seed
        self.reset()

    def reset(self) -> None:
        self._rng = random.Random(self.seed)

    def should_intervene(self, observation: Mapping[str, Any]) -> bool:
        return self._rng.random() < self.p


class OraclePolicy(Policy):
    """Intervenes at the first increment iff the student's baseline is wrong."""

    def should_intervene(self, observation: Mapping[str, Any]) -> bool:
        value = _lookup(observation, "baseline_correct")
        if value is _MISSING:
            raise ValueError("observation lacks 'baseline_correct' (the oracle policy needs it)")
        if value is None:  # unknown (e.g. grader error): no evidence of a mistake
            return False
        return not bool(value)


def _parse_float(text: str, spec: str) -> float:
    try:
        return float(text)
    except ValueError:
        raise ValueError(f"policy spec {spec!r}: {text!r} is not a number") from None


def make_policy(spec: str) -> Policy:
    """Build a baseline policy from its spec string (see the module docstring).

    Raises:
        ValueError: unknown policy, bad number, or unknown option.
    """
    if not isinstance(spec, str) or not spec.strip():
        raise ValueError(f"policy spec must be a non-empty string, got {spec!r}")
    head, _, query = spec.strip().partition("?")
    options = dict(parse_qsl(query, keep_blank_values=True))
    kind, _, argument = head.partition(":")
    message = options.pop("message", DEFAULT_MESSAGE)
    seed_text = options.pop("seed", None) if kind == "random" else None
    if options:
        raise ValueError(f"policy spec {spec!r}: unknown option(s) {sorted(options)}")

    if kind in ("never", "always", "oracle"):
        if argument:
            raise ValueError(f"policy spec {spec!r}: {kind!r} takes no argument")
        policy: Policy = {"never": Never, "always": Always, "oracle": OraclePolicy}[kind](message)
    elif kind == "at":
        policy = AtFraction(_parse_float(argument, spec), message)
    elif kind == "random":
        try:
            seed = 0 if seed_text is None else int(seed_text)
        except ValueError:
            raise ValueError(f"policy spec {spec!r}: seed must be an integer") from None
        policy = RandomPolicy(_parse_float(argument, spec), seed, message)
    else:
        raise ValueError(
            f"unknown policy {kind!r} in {spec!r}; expected never, always, at:<fraction>, "
            "random:<p> or oracle"
        )
    policy.spec = spec
    return policy


__all__ = [
    "DEFAULT_MESSAGE",
    "Always",
    "AtFraction",
    "Never",
    "OraclePolicy",
    "Policy",
    "RandomPolicy",
    "make_policy",
]
