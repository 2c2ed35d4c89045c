"""Baseline teacher policies for the monitor protocol, built from spec strings.

=================  ==========================================================
``never``          never intervenes
``always``         intervenes at the first increment
``at:<fraction>``  intervenes at the first increment whose revealed prefix
                   reaches ``fraction`` of the trace (``at:0.5``: half)
``random:<p>``     intervenes in an episode with probability ``p``, at a
                   point of the trace drawn uniformly (so φ, the share of
                   episodes with an intervention, is ``p``); each episode
                   draws from its own seed (``random:0.1?seed=3`` mixes a
                   fixed seed in, default 0)
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
``revealed_chars``     characters of the trace shown so far (int; ``at:``,
                       ``random:``)
``total_chars``        length of the whole trace (int; ``at:``, ``random:``)
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

Policies are stateless per observation except ``random``, whose episode
draws are made at :meth:`Policy.reset`: call ``reset(seed)`` at the start of
each episode with that episode's seed, so episodes are reproducible and
independent of each other and of the order they run in.  ``reset()``
without a seed takes the next episode seed from the policy's own stream.
"""

from __future__ import annotations

import difflib
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
POLICY_KINDS = ("never", "always", "at", "random", "oracle")


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

    def reset(self, seed: int | None = None) -> None:
        """Start a new episode, drawing from ``seed`` (only ``random`` draws)."""

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
        known = revealed is not _MISSING and total is not _MISSING
        values = {
            "revealed_chars": "?" if revealed is _MISSING else int(revealed),
            "total_chars": "?" if total is _MISSING else int(total),
            "fraction": f"{int(revealed) / int(total):.2f}" if known and int(total) else "?",
        }
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


def _reached(observation: Mapping[str, Any], fraction: float) -> bool:
    """Whether the revealed prefix has reached ``fraction`` of the trace."""
    revealed = _int_key(observation, "revealed_chars")
    total = _int_key(observation, "total_chars")
    # Integer comparison avoids float rounding at exact boundaries.
    return revealed * 1_000_000 >= round(fraction * 1_000_000) * total


class AtFraction(Policy):
    """Intervenes once ``revealed_chars >= fraction * total_chars``, i.e. at the
    increment that crosses the fraction (the env ends the episode there)."""

    def __init__(self, fraction: float, message: str = DEFAULT_MESSAGE) -> None:
        if not 0.0 <= fraction <= 1.0:
            raise ValueError(
                f"at:<fraction> needs 0 <= fraction <= 1, got {fraction}; e.g. at:0.5 for half"
            )
        super().__init__(message)
        self.fraction = fraction

    def should_intervene(self, observation: Mapping[str, Any]) -> bool:
        return _reached(observation, self.fraction)


class RandomPolicy(AtFraction):
    """With probability ``p`` an episode is an ``at:u`` episode, ``u`` uniform
    in [0, 1); otherwise it never intervenes.  ``fraction`` is the episode's
    ``u`` (also where an oracle-condition intervention points)."""

    def __init__(self, p: float, seed: int = 0, message: str = DEFAULT_MESSAGE) -> None:
        if not 0.0 <= p <= 1.0:
            raise ValueError(
                f"random:<p> needs 0 <= p <= 1 (a probability), got {p}; e.g. random:0.3"
            )
        super().__init__(0.0, message)
        self.p = p
        self.seed = seed
        self._episode_seeds = random.Random(seed)
        self.reset()

    def reset(self, seed: int | None = None) -> None:
        if seed is None:
            seed = self._episode_seeds.getrandbits(64)
        # A string seed is hashed with SHA-512: stable across processes and platforms.
        draws = random.Random(f"{self.seed}:{seed}")
        self.intervenes = draws.random() < self.p
        self.fraction = draws.random()

    def should_intervene(self, observation: Mapping[str, Any]) -> bool:
        # The keys are checked in every episode, not only in those that intervene.
        return _reached(observation, self.fraction) and self.intervenes


class OraclePolicy(Policy):
    """Intervenes at the first increment iff the student's baseline is wrong."""

    def should_intervene(self, observation: Mapping[str, Any]) -> bool:
        value = _lookup(observation, "baseline_correct")
        if value is _MISSING:
            raise ValueError("observation lacks 'baseline_correct' (the oracle policy needs it)")
        if value is None:  # unknown (e.g. grader error): no evidence of a mistake
            return False
        return not bool(value)


def _parse_fraction(argument: str, spec: str, kind: str, example: str) -> float:
    if not argument:
        raise ValueError(f"policy spec {spec!r}: {kind} needs a number, e.g. {example}")
    try:
        return float(argument)
    except ValueError:
        raise ValueError(
            f"policy spec {spec!r}: {argument!r} is not a number; write e.g. {example}"
        ) from None


def _unknown_policy(kind: str, spec: str) -> ValueError:
    close = difflib.get_close_matches(kind, POLICY_KINDS, n=1)
    hint = f"did you mean {close[0]!r}? " if close else ""
    return ValueError(
        f"unknown policy {kind!r} in {spec!r}; {hint}expected never, always, at:<fraction>, "
        "random:<p> or oracle"
    )


def make_policy(spec: str) -> Policy:
    """Build a baseline policy from its spec string (see the module docstring).

    Raises:
        ValueError: unknown policy, bad number, or unknown option; the message
            is one line naming the fix.
    """
    if not isinstance(spec, str) or not spec.strip():
        raise ValueError(f"policy spec must be a non-empty string, got {spec!r}")
    head, _, query = spec.strip().partition("?")
    options = dict(parse_qsl(query, keep_blank_values=True))
    kind, _, argument = head.partition(":")
    message = options.pop("message", DEFAULT_MESSAGE)
    seed_text = options.pop("seed", None) if kind == "random" else None
    if kind not in POLICY_KINDS:
        raise _unknown_policy(kind, spec)
    if options:
        raise ValueError(f"policy spec {spec!r}: unknown option(s) {sorted(options)}")

    if kind in ("never", "always", "oracle"):
        if argument:
            raise ValueError(f"policy spec {spec!r}: {kind!r} takes no argument; write {kind!r}")
        policy: Policy = {"never": Never, "always": Always, "oracle": OraclePolicy}[kind](message)
    elif kind == "at":
        policy = AtFraction(_parse_fraction(argument, spec, "at:<fraction>", "at:0.5"), message)
    else:
        try:
            seed = 0 if seed_text is None else int(seed_text)
        except ValueError:
            raise ValueError(
                f"policy spec {spec!r}: seed must be an integer, e.g. random:0.3?seed=1"
            ) from None
        p = _parse_fraction(argument, spec, "random:<p>", "random:0.3")
        policy = RandomPolicy(p, seed, message)
    policy.spec = spec
    return policy


__all__ = [
    "DEFAULT_MESSAGE",
    "Always",
    "AtFraction",
    "Never",
    "OraclePolicy",
    "POLICY_KINDS",
    "Policy",
    "RandomPolicy",
    "make_policy",
]
