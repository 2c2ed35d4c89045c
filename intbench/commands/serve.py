"""``intbench serve``: run the human-teacher study as a web app."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from intbench.extras import require
from intbench.human.study import StudyConfig
from intbench.options import (
    ENV_OPTION_HELP,
    add_flags,
    flag_values,
    parse_items,
    with_student_tokens,
)

# The study's own settings (--condition, --trials, --student, ...) are StudyConfig's fields.
STUDY_FLAGS = {"study": StudyConfig}


def add_parser(subparsers) -> None:
    """Register ``serve --env ID --condition standard|oracle --problems SRC --out DIR [--port N]``."""
    parser = subparsers.add_parser(
        "serve",
        help="serve the human-teacher study (monitor protocol) as a web app",
        description="Participants open http://HOST:PORT/ (or /?PROLIFIC_PID=<id>): instructions, practice "
        "trials, a comprehension check, K trials in random order and an exit questionnaire. Each trial is "
        "appended to the episodes of run directory DIR with teacher='human:<id>'. Restarting with the same arguments resumes.",
    )
    parser.add_argument("--env", required=True, help="monitor env id, e.g. IntBench-Math-v0")
    add_flags(parser, STUDY_FLAGS)
    parser.add_argument(
        "--problems",
        default="offline",
        help="problem source: offline, hub, or a local file (default offline)",
    )
    parser.add_argument("--split", default=None)
    parser.add_argument(
        "-n", type=int, default=12, help="problems to load, practice ones included (default 12)"
    )
    parser.add_argument(
        "--max-tokens", type=int, default=None, help="student generation budget per call"
    )
    parser.add_argument(
        "--env-option",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help=ENV_OPTION_HELP,
    )
    parser.add_argument("--out", required=True, type=Path, help="study directory")
    parser.add_argument(
        "--host", default="127.0.0.1", help="address to listen on (0.0.0.0 for every interface)"
    )
    parser.add_argument("--port", type=int, default=8000)
    parser.add_argument(
        "--public-url",
        default=None,
        help="the address participants open when serving behind a proxy, e.g. "
        "https://study.example.org (forms from any other site are refused)",
    )
    parser.set_defaults(func=run_serve)


def run_serve(args: argparse.Namespace) -> int:
    """Load the problems, warm the student cache, and serve until interrupted; 2 on bad settings."""
    require("human", ("flask", "waitress"), "intbench serve")
    from intbench.human.app import create_app, serve
    from intbench.human.security import new_token, origin_of

    if args.public_url is not None and origin_of(args.public_url) is None:
        print(
            f"error: --public-url {args.public_url!r} is not a URL like https://study.example.org",
            file=sys.stderr,
        )
        return 2
    import gymnasium as gym

    import intbench.envs  # noqa: F401  (registers the env ids)
    from intbench.envs.domains import DataSourceError, load_problems
    from intbench.human import Study
    from intbench.human.storage import StudyMismatchError

    try:
        domain = gym.spec(args.env).kwargs.get("domain")
        if domain is None:
            raise ValueError(f"{args.env} names no domain; use an IntBench monitor env id")
        study_flags = flag_values(args, STUDY_FLAGS)
        seed = study_flags.get("seed", 0)
        problems = load_problems(
            domain, source=args.problems, split=args.split, n=args.n, seed=seed
        )
        config = StudyConfig(
            env_id=args.env,
            problems=problems,
            env_options=with_student_tokens(parse_items(args.env_option), args.max_tokens),
            **study_flags,
        )
        study = Study(config, args.out, progress=True)
    except (gym.error.Error, DataSourceError, StudyMismatchError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(
        f"study in {args.out}: {len(config.main_problems)} problems, {min(config.trials, len(config.main_problems))} trials each"
    )
    print(
        f"serving on http://{args.host}:{args.port}/  (participants with a platform id: /?PROLIFIC_PID=<id>)",
        flush=True,
    )
    admin_token = new_token()
    print(
        f"study progress (keep this address private): http://{args.host}:{args.port}/admin/{admin_token}"
    )
    try:
        app = create_app(study, public_url=args.public_url, admin_token=admin_token)
        serve(app, host=args.host, port=args.port)
    finally:
        study.close()
    return 0
