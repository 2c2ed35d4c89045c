"""``intbench audit-reward --config CONFIG``: does this training reward pay for telling?

Plays scripted teachers (never, every probe family: tells, content-free
messages, honest hints, and for code feedback forward-tests) under the
config's env, reward and variants, on offline problems with a deterministic
scripted student, and prints each teacher's mean reward with a 95% bootstrap
CI over problems.  Exit status 1 when a tell, content-free or forward-tests
teacher scores at least as much as one that never helps (on average or on
some problem), or an honest hint scores below it; 2 for a bad config.  See
:mod:`intbench.training.audit`.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path


def add_parser(subparsers) -> None:
    parser = subparsers.add_parser(
        "audit-reward",
        help="check that a training reward scores telling the answer below never helping",
        description="Score scripted teachers (never, and every probe family: tells, "
        "content-free messages, honest hints, forward-tests) with the reward of a training "
        "config, on offline problems and a scripted student. Exits 1 when a tell, a "
        "content-free message or forwarding tests scores at least as much as never "
        "helping, or an honest hint scores below it. Run it before training on a custom "
        "reward.",
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
        print(
            f"  {score.teacher:<30} {score.kind:<12} {r.value:+.3f}  [{r.low:+.3f}, {r.high:+.3f}]"
            f"  {len(score.per_problem)} problems"
        )
    failed = telling_wins(scores)
    paid = [s.teacher for s in scores if s.teacher in failed and s.kind != "honest"]
    charged = [s.teacher for s in scores if s.teacher in failed and s.kind == "honest"]
    if paid:
        print(
            f"FAIL: {', '.join(paid)} score at least as much as never helping (on average "
            "or on some problem): this reward pays a policy for giving the answer away or "
            "for saying nothing of use"
        )
    if charged:
        print(
            f"FAIL: {', '.join(charged)} (honest hints) score below never helping: the leak "
            "detector charges honest teaching"
        )
    if failed:
        return 1
    print(
        f"ok: {sum(s.kind in ('tell', 'content_free', 'forward') for s in scores)} teachers that "
        "give the answer away or say nothing of use score below never helping, and "
        f"{sum(s.kind == 'honest' for s in scores)} honest hints do not"
    )
    return 0
