"""The ``intbench`` command line.

Each sub-command lives in its own module that exposes ``add_parser(subparsers)``
and sets ``func`` on its parser; this file only wires them together.
"""

from __future__ import annotations

import argparse
import atexit
import contextlib
import gc
import importlib
import logging
import os
import signal
import sys
import textwrap
import threading
from collections.abc import Iterator
from typing import NoReturn

from intbench.agents.backends.loading import SPEC_GRAMMAR
from intbench.commands.checks import UsageError
from intbench.extras import MissingExtra
from intbench.rundir import RunWriteError

# command -> the module whose add_parser(subparsers) defines it (a module may define two)
COMMAND_MODULES = {
    "data": "intbench.commands.data",
    "eval": "intbench.commands.eval",
    "matrix": "intbench.commands.eval",
    "report": "intbench.commands.report",
    "serve": "intbench.commands.serve",
    "serve-env": "intbench.commands.serve_env",
    "variants": "intbench.commands.variants",
    "generalize": "intbench.commands.variants",
    "analyze": "intbench.commands.analyze",
    "train": "intbench.commands.train",
    "audit-reward": "intbench.commands.audit_reward",
    "export": "intbench.commands.export",
}
GLOBAL_FLAGS = ("-v", "--verbose", "--debug")


# Options that take a model spec: their commands' --help ends with the spec grammar.
SPEC_FLAGS = {"--student", "--students", "--teacher", "--teachers", "--judge", "--model"}


class _HelpFormatter(argparse.HelpFormatter):
    """argparse's formatter, keeping the line layout of the spec grammar."""

    def _fill_text(self, text: str, width: int, indent: str) -> str:
        if text == SPEC_GRAMMAR:
            return textwrap.indent(text, indent)
        return super()._fill_text(text, width, indent)


def _every_parser(parser: argparse.ArgumentParser):
    yield parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for child in action.choices.values():
                yield from _every_parser(child)


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The ``intbench`` parser with every command, or, given a known ``command``, with
    only the commands of its module: a run imports and builds no other command's."""
    parser = argparse.ArgumentParser(
        prog="intbench", description="IntBench: evaluate and train AI teachers."
    )
    parser.add_argument(
        "-v",
        "--verbose",
        action="store_true",
        help="log debug messages and show the libraries' own progress bars (model loading, "
        "datasets)",
    )
    parser.add_argument(
        "--debug", action="store_true", help="show the full traceback of an unexpected error"
    )
    subparsers = parser.add_subparsers(dest="command", required=True)
    modules = [COMMAND_MODULES[command]] if command in COMMAND_MODULES else COMMAND_MODULES.values()
    for module in dict.fromkeys(modules):
        importlib.import_module(module).add_parser(subparsers)
    for each in subparsers.choices.values():  # `intbench eval ... --debug` works too
        each.add_argument("--debug", action="store_true", default=argparse.SUPPRESS)
        each.add_argument(
            "-v",
            "--verbose",
            action="store_true",
            default=argparse.SUPPRESS,
            help=argparse.SUPPRESS,
        )
    for each in _every_parser(parser):
        # No prefix matching: `--n -1` must not be read as `--no-progress`.
        each.allow_abbrev = False
        if SPEC_FLAGS & set(each._option_string_actions):
            each.epilog, each.formatter_class = SPEC_GRAMMAR, _HelpFormatter
    return parser


# Read by tqdm, huggingface_hub (and so transformers) and datasets when they are
# imported, which the commands do after parsing: their progress bars stay off.
QUIET_ENV = {
    "TQDM_DISABLE": "1",
    "HF_HUB_DISABLE_PROGRESS_BARS": "1",
    "HF_DATASETS_DISABLE_PROGRESS_BARS": "1",
}


def command_named(argv: list[str]) -> str | None:
    """The command a command line names: its first word after the global flags."""
    return next((word for word in argv if word not in GLOBAL_FLAGS), None)


def main(argv: list[str] | None = None) -> int:
    parser = build_parser(command_named(sys.argv[1:] if argv is None else argv))
    args = parser.parse_args(argv)
    if argv is None:  # the program itself, not a caller (tests, scripts) that goes on
        # Modules and the parser live until exit: the run's collections skip them (the
        # run's own objects are still collected).
        gc.freeze()
    quiet = {} if args.verbose else {k: v for k, v in QUIET_ENV.items() if k not in os.environ}
    os.environ.update(quiet)  # a user's own setting wins
    try:
        with _terminate_as_interrupt():
            status = _run(args)
    finally:
        for name in quiet:  # main() called in a process that goes on (tests, scripts)
            os.environ.pop(name, None)
    if argv is None and getattr(args, "exit_without_teardown", False):
        _exit_without_teardown(status)
    return status


def _exit_without_teardown(status: int) -> NoReturn:
    """End the program once its command's files are written and closed: flush the
    output, run the exit handlers (pools, run locks, trackers, libraries' own), then
    skip the interpreter's teardown, which would join every idle request thread and
    free every object one by one (about 30 ms after a 128-episode run at 64 in flight,
    with nothing left to save).  Only commands that set ``exit_without_teardown``
    (nothing of theirs still runs when they return) end this way."""
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):  # a closed pipe or stream: nothing left to write to
            pass
    atexit._run_exitfuncs()  # what a normal exit runs first; private, stable since 3.0
    os._exit(status)


class Terminated(KeyboardInterrupt):
    """SIGTERM (``kill``, ``timeout``, a job scheduler), raised like Ctrl-C so a run
    stops the same way: its files tidied, its lock removed."""


def _raise_terminated(signum, frame) -> None:
    raise Terminated


@contextlib.contextmanager
def _terminate_as_interrupt() -> Iterator[None]:
    if threading.current_thread() is not threading.main_thread():
        yield  # only the main thread can take a signal handler
        return
    previous = signal.signal(signal.SIGTERM, _raise_terminated)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def _run(args: argparse.Namespace) -> int:
    logging.basicConfig(
        level=logging.DEBUG if args.verbose else logging.WARNING,
        format="%(levelname)s %(name)s: %(message)s",
    )
    try:
        return int(args.func(args) or 0)
    except (UsageError, MissingExtra) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except RunWriteError as exc:
        if args.debug:
            raise
        print(f"error: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt as exc:
        print(
            "interrupted; finished episodes are saved, re-run the command to resume",
            file=sys.stderr,
        )
        return 128 + (signal.SIGTERM if isinstance(exc, Terminated) else signal.SIGINT)
    except BrokenPipeError:  # output piped into e.g. `head`
        sys.stderr.close()
        return 0
    except Exception as exc:  # noqa: BLE001 - one line unless --debug; nothing is lost
        if args.debug:
            raise
        print(
            f"error: {type(exc).__name__}: {exc} (rerun with --debug for details)", file=sys.stderr
        )
        return 1


if __name__ == "__main__":
    sys.exit(main())
