"""``intbench audit-reward --config CONFIG``: does this training reward pay for telling?

Plays scripted teachers (never, tell in several forms, a method hint, and for
code feedback forward-tests) under the config's env and reward, on offline
problems with a deterministic scripted student, and prints each teacher's
mean reward with a 95% bootstrap CI over problems.  Exit status 1 when a
teacher that gives the answer away scores at least as much as one that
never helps, on average or on some problem; 2 for a bad config.  See :mod:`intbench.training.audit`.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path


def add_parser(subparsers) -> None:
    parser = subparsers.add_parser(
        "audit-reward",
        help="check that a training reward scores telling the answer below never helping",
        description="Score scripted teachers (never, tell, hint, forward-tests) with the "
        "reward of a training config, on offline problems and a scripted student. "
        "Exits 1 when telling (or forwarding tests) scores at least as much as never "
        "helping. Run it before training on a custom reward.",
    )
    parser.add_argument(
        "--config", type=Path, nargs="+", required=True, help="training YAML file(s)"
    )
    parser.add_argument("-n", type=int, default=8, help="offline problems to play (default 8)")
    parser.add_argument("--seed", type=int, default=0, help="problem seed (default 0)")
    parser.set_defaults(func=_audit)


def _audit(args: argparse.Namespace) -> int:
    if args.n < 2:
        print("error: -n must be at least 2 (a CI needs two problems)", file=sys.stderr)
        return 2
    return max(_audit_one(path, args.n, args.seed) for path in args.config)


def _audit_one(path: Path, n: int, seed: int) -> int:
    from intbench.training.audit import audit_reward, telling_wins
    from intbench.training.config import load_config

    try:
        config = load_config(path)
        if config.method != "grpo":
            raise ValueError(
                f"{path} is a {config.method} config; audit-reward checks GRPO rewards"
            )
        scores = audit_reward(config, n=n, seed=seed)
    except (OSError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    reward = config.env_kwargs()["reward"]
    print(f"{path}: {config.env}, reward {reward}, {n} offline problems")
    for score in scores:
        r = score.reward
        print(f"  {score.teacher:<16} {r.value:+.3f}  [{r.low:+.3f}, {r.high:+.3f}]")
    winners = telling_wins(scores)
    if winners:
        print(
            f"FAIL: {', '.join(winners)} score at least as much as never helping (on average "
            "or on some problem): this reward pays a policy for giving the answer away"
        )
        return 1
    print("ok: every teacher that gives the answer away scores below never helping")
    return 0
