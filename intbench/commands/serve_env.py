"""``intbench serve-env``: serve any env over OpenEnv (also ``python -m intbench.integrations.openenv``)."""

from __future__ import annotations

import argparse

from intbench.commands.checks import UsageError
from intbench.integrations.openenv_args import add_arguments


def add_parser(subparsers) -> None:
    parser = subparsers.add_parser(
        "serve-env",
        help="serve an env over OpenEnv (HTTP + WebSocket; one env per session)",
        description="Serve an IntBench env with openenv-core's server: POST /reset, POST /step, "
        "GET /state, /schema, /health and the WebSocket /ws (one env per session). Needs the "
        "openenv extra: pip install 'intbench[openenv]'.",
    )
    add_arguments(parser)
    parser.set_defaults(func=_serve)


def _serve(args: argparse.Namespace) -> int:
    try:
        from intbench.integrations.openenv import serve
    except ImportError as exc:
        raise UsageError(str(exc)) from None
    return serve(args)
