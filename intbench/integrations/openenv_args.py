"""The OpenEnv server's command-line options, shared by ``intbench serve-env`` and
``python -m intbench.integrations.openenv`` (importable without openenv-core)."""

from __future__ import annotations

import argparse

from intbench.options import ENV_OPTION_HELP


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
        help=ENV_OPTION_HELP,
    )
    parser.add_argument("--host", default="127.0.0.1", help="address to listen on")
    parser.add_argument("--port", type=int, default=8000)
    parser.add_argument(
        "--max-sessions", type=int, default=8, help="concurrent sessions (one env each)"
    )
