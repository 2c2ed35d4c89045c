"""Options as typed dataclasses, each field defined once with its help text.

A field made with :func:`option` carries its help and whether it is a
command-line flag; from these the CLI builds its flags (:func:`add_flags`,
:func:`flag_values`), ``gym.make`` and YAML configs check their keys
(:func:`check_keys`) and the export names its columns.  Importing this module
loads no env, model or dataset code.
"""

from __future__ import annotations

import argparse
import dataclasses
import difflib
import json
from collections.abc import Callable, Iterable, Mapping
from typing import Any


class UnknownOptionError(ValueError, TypeError):
    """A key no options dataclass has.  A ``ValueError`` whose one line names the closest
    valid key; also a ``TypeError``, as Python's own unexpected keyword argument is."""


def option(
    default: Any = dataclasses.MISSING,
    *,
    help: str,
    flag: bool = True,
    column: str | None = None,
    default_factory: Any = dataclasses.MISSING,
    bare: Any = dataclasses.MISSING,
) -> Any:
    """A dataclass field with its help text.

    ``flag``: the CLI sets it with ``--<name>`` (False for options another flag or
    the API sets); ``column``: the export's column type (``"string"``, ``"int64"``,
    ``"bool"``) when the field is one of the dataset's columns; ``bare``: the value
    of the flag given without one (``--ray`` alone means ``"local"``).
    """
    metadata = {"help": help, "flag": flag, "column": column}
    if bare is not dataclasses.MISSING:
        metadata["bare"] = bare
    return dataclasses.field(default=default, default_factory=default_factory, metadata=metadata)


def option_help(field: dataclasses.Field) -> str:
    return field.metadata.get("help", "")


def default_of(field: dataclasses.Field) -> Any:
    if field.default is not dataclasses.MISSING:
        return field.default
    if field.default_factory is not dataclasses.MISSING:
        return field.default_factory()
    return dataclasses.MISSING


def defaults(cls: type) -> dict[str, Any]:
    """Every field of ``cls`` that has a default, with it."""
    values = {f.name: default_of(f) for f in dataclasses.fields(cls)}
    return {name: value for name, value in values.items() if value is not dataclasses.MISSING}


def closest(word: str, choices: Iterable[str]) -> str:
    """``"; did you mean 'x'?"`` for the choice closest to ``word``, or ``""``."""
    close = difflib.get_close_matches(str(word), list(choices), n=1)
    return f"; did you mean {close[0]!r}?" if close else ""


def check_keys(keys: Iterable[str], valid: Iterable[str], what: str) -> None:
    """Raise :class:`UnknownOptionError` for the first key not in ``valid``, e.g.
    ``unknown env option 'rewrd' for IntBench-Math-v0; did you mean 'reward'?``
    (``what`` is ``"env option ... for IntBench-Math-v0"`` with ``...`` for the key)."""
    valid = list(valid)
    for key in keys:
        if key not in valid:
            named = what.replace("...", repr(key)) if "..." in what else f"{what} {key!r}"
            hint = closest(key, valid) or f" (known: {', '.join(sorted(valid))})"
            raise UnknownOptionError(f"unknown {named}{hint}")


def field_names(cls: type) -> list[str]:
    return [f.name for f in dataclasses.fields(cls)]


# ----------------------------------------------------------------- the CLI
def _bool(text: str) -> bool:
    lowered = text.lower()
    if lowered in ("1", "true", "yes"):
        return True
    if lowered in ("0", "false", "no"):
        return False
    raise argparse.ArgumentTypeError(f"expected true or false, got {text!r}")


def _json_or_text(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return text


_SCALARS: dict[str, Callable[[str], Any]] = {"bool": _bool, "int": int, "float": float, "str": str}


def parse_value(field: dataclasses.Field, text: str) -> Any:
    """A flag's text as the field's value: a bool field takes true/false (yes/no, 1/0),
    int, float and str fields their type (``none`` for an optional one's None), any
    other the text read as JSON when it can be (``--increment 100`` is an int,
    ``--reward '{"success": 1}'`` a dict, ``--increment sentence`` a string)."""
    kind = str(field.type).replace(" ", "")
    optional = kind.endswith("|None")
    convert = _SCALARS.get(kind.removesuffix("|None"))
    if convert is None:
        return _json_or_text(text)
    if optional and text.lower() in ("none", "null"):
        return None
    return convert(text)


def _flag_help(owners: list[tuple[str, dataclasses.Field]], every: int) -> str:
    """``help [default]``, once for the classes that share both, prefixed with their
    labels unless every one of the ``every`` classes does."""
    groups: dict[str, list[str]] = {}
    for label, f in owners:
        default = default_of(f)
        shown = "none" if default is None else default
        shown = shown if isinstance(shown, str) else json.dumps(shown, default=str)
        body = option_help(f) if default is dataclasses.MISSING else f"{option_help(f)} [{shown}]"
        groups.setdefault(body, []).append(label)
    if len(groups) == 1 and len(owners) == every:
        return next(iter(groups)).replace("%", "%%")
    text = "; ".join(f"{', '.join(labels)}: {body}" for body, labels in groups.items())
    return text.replace("%", "%%")


def flag_fields(classes: Mapping[str, type]) -> dict[str, list[tuple[str, dataclasses.Field]]]:
    """Each flag's field name -> (label, field) of every class that has it, in field order."""
    found: dict[str, list[tuple[str, dataclasses.Field]]] = {}
    for label, cls in classes.items():
        for f in dataclasses.fields(cls):
            if f.metadata.get("flag"):
                found.setdefault(f.name, []).append((label, f))
    return found


def add_flags(parser: argparse._ActionsContainer, classes: Mapping[str, type]) -> None:
    """One flag per flagged field of ``classes`` (label -> dataclass), its help and default
    taken from each class: ``-n`` for a one-letter name, else ``--kebab-name``; a bool
    that defaults to False is a switch, a list takes one or more values (the flag may be
    repeated); a field without a default is a required flag.  A flag not given
    leaves no attribute on the parsed namespace, so the dataclass default applies (read
    them with :func:`flag_values`)."""
    for name, owners in flag_fields(classes).items():
        field = owners[0][1]
        kind = str(field.type).replace(" ", "")
        flag = f"-{name}" if len(name) == 1 else f"--{name.replace('_', '-')}"
        settings: dict[str, Any] = {"metavar": name.upper(), "type": _converter(field)}
        if kind == "bool" and field.default is False:
            settings = {"action": "store_true"}
        elif kind.startswith("list["):
            settings = {"nargs": "+", "action": "extend"}  # repeatable, or several at once
        elif "bare" in field.metadata:
            settings |= {"nargs": "?", "const": field.metadata["bare"]}
        if default_of(field) is dataclasses.MISSING:
            settings["required"] = True
        parser.add_argument(
            flag,
            dest=name,
            default=argparse.SUPPRESS,
            help=_flag_help(owners, len(classes)),
            **settings,
        )


def _converter(field: dataclasses.Field):
    def convert(text: str) -> Any:
        return parse_value(field, text)

    convert.__name__ = field.name  # argparse names it in "invalid <name> value"
    return convert


def flag_values(args: argparse.Namespace, classes: Mapping[str, type]) -> dict[str, Any]:
    """The flagged fields of ``classes`` given on the command line, by field name."""
    given = vars(args)
    return {name: given[name] for name in flag_fields(classes) if name in given}


ENV_OPTION_HELP = (
    "any env option as KEY=VALUE (the value read as JSON when it can be), e.g. "
    "--env-option increment=100; repeatable"
)


def with_student_tokens(options: dict[str, Any], max_tokens: int | None) -> dict[str, Any]:
    """``options`` with ``max_tokens`` (when set) as the student's generation budget."""
    if max_tokens:
        sampling = dict(options.get("student_sampling") or {})
        options = {**options, "student_sampling": {**sampling, "max_tokens": max_tokens}}
    return options


def parse_items(items: Iterable[str], flag: str = "--env-option") -> dict[str, Any]:
    """``KEY=VALUE`` items (values read as JSON when they can be) -> a dict."""
    options: dict[str, Any] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep:
            raise ValueError(f"{flag} needs KEY=VALUE, got {item!r}")
        options[key] = _json_or_text(value)
    return options
