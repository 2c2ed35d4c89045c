"""Parsers for the output formats of the teacher prompts.

Every parser is a pure function that never raises: it returns a small
dataclass whose ``error`` is ``None`` when the text followed the format and a
short reason otherwise, so callers can log malformed output and carry on.

Monitor decisions follow one rule: **malformed output counts as wait**.  A
result with ``error`` set has ``intervene=None`` and ``should_intervene``
false, whatever fragments of a decision the text contained.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

# A field label at the start of a line, tolerating markdown decoration such as
# "**Intervene:** Yes", "- Intervene: Yes" or "### Intervene: Yes".
_LABEL = r"^[ \t>#*_\-]*{name}[ \t*_]*:[ \t*_]*"
_FIELD_NAMES = ("intervene", "time", "quote", "intervention")
_ANY_FIELD = re.compile(
    "|".join(_LABEL.format(name=name) for name in _FIELD_NAMES), re.IGNORECASE | re.MULTILINE
)
_EMPTY_VALUES = {"", "n/a", "na", "none", "-", "null"}

_THINK_BLOCK = re.compile(r"<think>.*?</think>", re.IGNORECASE | re.DOTALL)
_THINK_OPEN = re.compile(r"<think>", re.IGNORECASE)
_THINK_CLOSE = re.compile(r"</think>", re.IGNORECASE)
_FEEDBACK_BLOCK = re.compile(r"<feedback>(.*?)</feedback>", re.IGNORECASE | re.DOTALL)
_FEEDBACK_OPEN = re.compile(r"<feedback>", re.IGNORECASE)


def strip_think(text: str) -> str:
    """Remove reasoning in ``<think>...</think>`` and return the rest, stripped.

    An unclosed ``<think>`` (truncated output) drops everything after it; a
    lone ``</think>`` (templates that open the tag in the prompt) drops
    everything before it.
    """
    if not isinstance(text, str):
        return ""
    text = _THINK_BLOCK.sub("", text)
    closes = list(_THINK_CLOSE.finditer(text))
    if closes:
        text = text[closes[-1].end() :]
    opened = _THINK_OPEN.search(text)
    if opened:
        text = text[: opened.start()]
    return text.strip()


def _clean_value(value: str) -> str:
    """Strip whitespace, markdown emphasis and wrapping quotes from a field value."""
    value = value.strip().strip("*_").strip()
    if len(value) >= 2 and value[0] + value[-1] in ('""', "''", "``", "\u201c\u201d"):
        value = value[1:-1].strip()
    return value


def _field_line(text: str, name: str) -> list[str]:
    """Values of every one-line field ``name`` in ``text``."""
    pattern = re.compile(_LABEL.format(name=name) + r"(.*)$", re.IGNORECASE | re.MULTILINE)
    return [_clean_value(match.group(1)) for match in pattern.finditer(text)]


def _field_to_next_label(text: str, name: str) -> str | None:
    """The value of field ``name``: from its label up to the next field label or the end."""
    pattern = re.compile(_LABEL.format(name=name), re.IGNORECASE | re.MULTILINE)
    match = pattern.search(text)
    if match is None:
        return None
    rest = text[match.end() :]
    following = _ANY_FIELD.search(rest)
    if following is not None:
        rest = rest[: following.start()]
    return _clean_value(rest)


def _yes_no(values: list[str], name: str) -> tuple[bool | None, str | None]:
    """Read a strict Yes/No field; returns (value, error)."""
    if not values:
        return None, f"missing '{name}:' line"
    decisions = set()
    for value in values:
        words = re.findall(r"[a-z]+", value.lower())
        if not words or words[0] not in ("yes", "no"):
            return None, f"'{name}:' must be Yes or No, got {value[:40]!r}"
        if {"yes", "no"} <= set(words[:3]):  # an echoed "Yes/No" or "Yes or No"
            return None, f"'{name}:' says both Yes and No: {value[:40]!r}"
        decisions.add(words[0] == "yes")
    if len(decisions) > 1:
        return None, f"conflicting '{name}:' lines (both Yes and No)"
    return decisions.pop(), None


def _message_or_none(value: str | None) -> str | None:
    if value is None or value.strip().lower().rstrip(".") in _EMPTY_VALUES:
        return None
    return value


class _Parsed:
    """What every parsed reply shares: ``error`` says why it was malformed."""

    error: str | None

    @property
    def ok(self) -> bool:
        return self.error is None


class _Decision(_Parsed):
    """What the monitor and Oracle decisions share: malformed means no intervention."""

    intervene: bool | None

    @property
    def should_intervene(self) -> bool:
        """True only for a well-formed ``Intervene: Yes``."""
        return self.error is None and self.intervene is True


@dataclass(frozen=True)
class MonitorDecision(_Decision):
    """A Standard teacher's decision (``Intervene:`` / ``Time:`` / ``Intervention:``).

    ``intervene`` is ``None`` whenever ``error`` is set: malformed output counts as wait.
    """

    intervene: bool | None
    time: str | None = None
    message: str | None = None
    error: str | None = None


@dataclass(frozen=True)
class OracleDecision(_Decision):
    """An Oracle teacher's decision (``Intervene:`` / ``Quote:`` / ``Intervention:``).

    A missing quote is not a format error: the environment records it as the
    paper's "no quote" exclusion.  ``intervene`` is ``None`` whenever
    ``error`` is set (counts as no intervention).
    """

    intervene: bool | None
    quote: str | None = None
    message: str | None = None
    error: str | None = None


def _parse_decision(
    text: object, extra_field: str
) -> tuple[bool | None, str | None, str | None, str | None]:
    """Shared core of the monitor and oracle parsers: (intervene, extra, message, error)."""
    if not isinstance(text, str):
        return None, None, None, f"expected text, got {type(text).__name__}"
    body = strip_think(text)
    if not body:
        return None, None, None, "empty output"
    intervene, error = _yes_no(_field_line(body, "intervene"), "Intervene")
    if error is not None:
        return None, None, None, error
    extra_values = _field_line(body, extra_field)
    extra = _message_or_none(extra_values[0]) if extra_values else None
    message = _message_or_none(_field_to_next_label(body, "intervention"))
    if intervene and message is None:
        return None, extra, None, "'Intervene: Yes' without an 'Intervention:' message"
    if not intervene:
        message = None
    return intervene, extra, message, None


def parse_monitor_decision(text: str) -> MonitorDecision:
    """Parse the Standard teacher's reply; malformed output yields ``error`` and counts as wait.

    Strict on the ``Intervene:`` line (Yes or No, case-insensitive, markdown
    tolerated; several lines must agree); ``Intervention:`` runs to the end of
    the text or the next field label and may span lines.
    """
    intervene, time, message, error = _parse_decision(text, "time")
    return MonitorDecision(intervene=intervene, time=time, message=message, error=error)


def parse_oracle_decision(text: str) -> OracleDecision:
    """Parse the Oracle teacher's reply (``Quote:`` holds the 5-word location)."""
    intervene, quote, message, error = _parse_decision(text, "quote")
    return OracleDecision(intervene=intervene, quote=quote, message=message, error=error)


@dataclass(frozen=True)
class FeedbackParse(_Parsed):
    """Feedback text extracted from a teacher (or self-feedback) reply.

    ``tagged`` says whether it came from a closed ``<feedback>`` block; without
    one the whole reply (minus ``<think>``) is used, as the feedback paper does.
    """

    text: str
    tagged: bool
    error: str | None = None


def parse_feedback(text: str) -> FeedbackParse:
    """Return the content of the last ``<feedback>...</feedback>`` block, else the raw reply."""
    if not isinstance(text, str):
        return FeedbackParse("", False, f"expected text, got {type(text).__name__}")
    body = strip_think(text)
    blocks = _FEEDBACK_BLOCK.findall(body)
    if blocks:
        content = blocks[-1].strip()
        return FeedbackParse(content, True, None if content else "empty <feedback> block")
    opened = list(_FEEDBACK_OPEN.finditer(body))
    if opened:  # truncated: keep what was written after the last opening tag
        content = body[opened[-1].end() :].strip()
        return FeedbackParse(content, False, "unclosed <feedback> tag")
    if not body:
        return FeedbackParse("", False, "empty output")
    return FeedbackParse(body, False, None)


@dataclass(frozen=True)
class LeakCheck(_Parsed):
    """The tutor checker's verdict (``Leak: Yes/No`` + ``Reason:``).

    ``leak`` is ``None`` when the reply is malformed; callers decide whether
    that withholds the message (the safe choice) and log ``error``.
    """

    leak: bool | None
    reason: str | None = None
    error: str | None = None


def parse_leak_check(text: str) -> LeakCheck:
    """Parse the tutor checker's reply."""
    if not isinstance(text, str):
        return LeakCheck(None, None, f"expected text, got {type(text).__name__}")
    body = strip_think(text)
    if not body:
        return LeakCheck(None, None, "empty output")
    leak, error = _yes_no(_field_line(body, "leak"), "Leak")
    reasons = _field_line(body, "reason")
    return LeakCheck(leak, reasons[0] if reasons else None, error)


VERDICTS = {"true": True, "false": False}
# A field label at the start of a line, tolerating markdown ("**Leakage:** Full").
_FIELD = r"^[ \t>#*_\-]*{name}[ \t*_]*:[ \t*_]*(.*)$"


def field_values(text: str, name: str) -> list[str]:
    """The values of every ``Name: value`` line of ``text`` (case-insensitive)."""
    pattern = re.compile(_FIELD.format(name=re.escape(name)), re.IGNORECASE | re.MULTILINE)
    return [m.group(1).strip().strip("*_`\"' ").strip() for m in pattern.finditer(text)]


@dataclass(frozen=True)
class LeakageParse:
    """A parsed ``Leaked:`` verdict; ``leaked`` is ``None`` exactly when ``error`` is set."""

    leaked: bool | None
    explanation: str | None = None
    error: str | None = None


def parse_leakage(text: str) -> LeakageParse:
    """Read ``Leaked: True|False`` (and ``Explanation:``) from a judge reply; a reply
    that is the bare word True or False counts too.

    Never raises: a missing, echoed (``True or False``) or contradictory verdict
    gives ``leaked=None`` and an ``error``.
    """
    body = strip_think(text) if isinstance(text, str) else ""
    if not body:
        return LeakageParse(None, error="empty judge output")
    values = field_values(body, "leaked")
    if not values and body.strip(" \n\t.*_`\"'").lower() in VERDICTS:
        values = [body.strip(" \n\t.*_`\"'")]
    if not values:
        return LeakageParse(None, error="missing 'Leaked:' line")
    verdicts = set()
    for value in values:
        words = re.findall(r"[a-z]+", value.lower())
        if not words or words[0] not in VERDICTS:
            return LeakageParse(None, error=f"'Leaked:' must be True or False, got {value[:40]!r}")
        if len({word for word in words if word in VERDICTS}) > 1:
            return LeakageParse(None, error=f"'Leaked:' says both True and False: {value[:40]!r}")
        verdicts.add(VERDICTS[words[0]])
    if len(verdicts) > 1:
        return LeakageParse(None, error="conflicting 'Leaked:' lines")
    explanations = field_values(body, "explanation")
    return LeakageParse(verdicts.pop(), explanations[0] if explanations else None)


__all__ = [
    "FeedbackParse",
    "LeakCheck",
    "LeakageParse",
    "field_values",
    "parse_leakage",
    "MonitorDecision",
    "OracleDecision",
    "parse_feedback",
    "parse_leak_check",
    "parse_monitor_decision",
    "parse_oracle_decision",
    "strip_think",
]
