"""``intbench serve-env``: serve any env over OpenEnv (also ``python -m intbench.integrations.openenv``)."""

from __future__ import annotations

import argparse

from intbench.commands.checks import UsageError


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--env", required=True, help="env id, e.g. IntBench-Math-Feedback-v0")
    parser.add_argument(
        "--student", default=None, help="student model spec (default: the env's, smollm2)"
    )
    parser.add_argument(
        "--env-option",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="any gym.make option (value parsed as JSON when it can be), e.g. k_max=3",
    )
    parser.add_argument("--host", default="127.0.0.1", help="address to listen on")
    parser.add_argument("--port", type=int, default=8000)
    parser.add_argument(
        "--max-sessions", type=int, default=8, help="concurrent sessions (one env each)"
    )


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
