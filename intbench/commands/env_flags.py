"""The env options of ``intbench eval``, ``matrix`` and ``train``, as flags derived
from the protocols' options dataclasses."""

from __future__ import annotations

import argparse
from typing import Any

from intbench.envs.option_classes import protocol_options
from intbench.options import (
    ENV_OPTION_HELP,
    add_flags,
    flag_values,
    parse_items,
    with_student_tokens,
)


def add_env_flags(parser: argparse.ArgumentParser) -> None:
    """The env options of every protocol as flags, and ``--env-option KEY=VALUE``."""
    group = parser.add_argument_group(
        "env options",
        "The gym.make options of the protocols' envs (default in brackets); an env refuses "
        "those of other protocols.  --env-option items win over these flags.",
    )
    add_flags(group, protocol_options())
    group.add_argument(
        "--env-option", action="append", default=[], metavar="KEY=VALUE", help=ENV_OPTION_HELP
    )


def env_options_from(args: argparse.Namespace, max_tokens: int | None = None) -> dict[str, Any]:
    """The env options given to a parser made with :func:`add_env_flags`: its flags, then
    its ``--env-option`` items (which win).  A ValueError for an item without ``=``."""
    options = {**flag_values(args, protocol_options()), **parse_items(args.env_option)}
    return with_student_tokens(options, max_tokens)
