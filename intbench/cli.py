"""The ``intbench`` command line.

Each sub-command lives in its own module that exposes ``add_parser(subparsers)``
and sets ``func`` on its parser; this file only wires them together.
"""

from __future__ import annotations

import argparse
import importlib
import logging
import sys

# module path -> provides add_parser(subparsers)
COMMAND_MODULES = [
    "intbench.commands.data",
    "intbench.commands.eval",
    "intbench.commands.report",
    "intbench.commands.serve",
    "intbench.commands.variants",
    "intbench.commands.analyze",
    "intbench.commands.train",
]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="intbench", description=__doc__.splitlines()[0])
    parser.add_argument("-v", "--verbose", action="store_true", help="log debug messages")
    subparsers = parser.add_subparsers(dest="command", required=True)
    for module in COMMAND_MODULES:
        importlib.import_module(module).add_parser(subparsers)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    logging.basicConfig(
        level=logging.DEBUG if args.verbose else logging.WARNING,
        format="%(levelname)s %(name)s: %(message)s",
    )
    try:
        return int(args.func(args) or 0)
    except KeyboardInterrupt:
        print(
            "interrupted; finished episodes are saved, re-run the command to resume",
            file=sys.stderr,
        )
        return 130
    except BrokenPipeError:  # output piped into e.g. `head`
        sys.stderr.close()
        return 0


if __name__ == "__main__":
    sys.exit(main())
