"""Recall and false flags of the leak detectors on generated probes.

Every offline domain's problems are run through
:func:`intbench.verifiers.leakage.probes.probes`: tells (messages that give
the answer away), honest hints and content-free messages, each of known
status by construction.  Each message is judged by
:func:`intbench.verifiers.leakage.leak_verdict`, and the script prints:

* recall per tell family and per domain: the share of tells judged
  ``"leaked"`` (``"undetermined"`` counts as missed, the reward does not
  charge it);
* false flags: the share of honest hints judged ``"leaked"`` (and, apart,
  of content-free messages);
* the undetermined share of each kind, and the detector's time per message.

    python benchmarks/leak_recall.py [--per-domain 40] [--seed 0] [--out FILE]

The defaults give more than 5,000 tells and 1,000 honest hints.  With
``--out`` the tables are also written as markdown
(``benchmarks/results/leak_recall.md``).
"""

from __future__ import annotations

import argparse
import platform
import sys
import time
from collections import Counter, defaultdict
from dataclasses import dataclass, field

from intbench.envs.domains import load_problems
from intbench.verifiers.leakage import leak_verdict
from intbench.verifiers.leakage.probes import probes

DOMAINS = (
    "math",
    "omni_math",
    "arithmetic",
    "linguini",
    "brainteaser",
    "codeforces",
    "debug",
    "arc",
)
MIN_TELLS = 5000
MIN_HONEST = 1000
EXAMPLES = 2  # missed tells (or flagged hints) shown per family


@dataclass
class Tally:
    verdicts: Counter = field(default_factory=Counter)
    seconds: float = 0.0
    examples: list = field(default_factory=list)

    @property
    def n(self) -> int:
        return sum(self.verdicts.values())

    def share(self, verdict: str) -> float:
        return self.verdicts[verdict] / self.n if self.n else 0.0


def load(per_domain: int, seed: int) -> list:
    problems = []
    for domain in DOMAINS:
        try:
            loaded = load_problems(domain, source="offline", n=per_domain, seed=seed)
        except Exception:  # fewer problems than asked: take them all
            loaded = load_problems(domain, source="offline", seed=seed)
        problems.extend(loaded)
    return problems


def measure(problems: list, seed: int, progress: bool = True):
    by_family: dict[str, Tally] = defaultdict(Tally)
    by_domain: dict[tuple[str, str], Tally] = defaultdict(Tally)
    by_kind: dict[str, Tally] = defaultdict(Tally)
    started = time.perf_counter()
    for i, problem in enumerate(problems):
        for probe in probes(problem, seed=seed):
            t0 = time.perf_counter()
            try:
                verdict = leak_verdict(problem, probe.message)
            except Exception as exc:  # a crash is a finding too, never a pass
                verdict = f"error:{type(exc).__name__}"
            elapsed = time.perf_counter() - t0
            missed = (probe.kind == "tell") != (verdict == "leaked")
            for tally in (by_family[probe.family], by_domain[(probe.kind, problem.domain)],
                          by_kind[probe.kind]):  # fmt: skip
                tally.verdicts[verdict] += 1
                tally.seconds += elapsed
            if missed and len(by_family[probe.family].examples) < EXAMPLES:
                by_family[probe.family].examples.append((problem.id, verdict, probe.message))
        if progress and (i + 1) % 50 == 0:
            print(f"  {i + 1}/{len(problems)} problems, {time.perf_counter() - started:.0f} s",
                  file=sys.stderr, flush=True)  # fmt: skip
    return by_family, by_domain, by_kind


def _pct(x: float) -> str:
    return f"{100 * x:.1f}%"


def _ms(tally: Tally) -> str:
    return f"{1000 * tally.seconds / tally.n:.1f}" if tally.n else "-"


def _clip(text: str, limit: int = 140) -> str:
    text = text.replace("\n", "\\n").replace("|", "\\|")
    return text if len(text) <= limit else text[: limit - 3] + "..."


def report(by_family, by_domain, by_kind, problems: int, seed: int, wall: float) -> str:
    tells, honest, free = by_kind["tell"], by_kind["honest"], by_kind["content_free"]
    lines = [
        "# Leak detector recall on generated probes",
        "",
        f"`python benchmarks/leak_recall.py --seed {seed}`: {problems} offline problems, "
        f"{tells.n} tells, {honest.n} honest hints, {free.n} content-free messages; "
        f"{wall:.0f} s in all on {platform.machine()} ({platform.python_version()}).",
        "Recall is the share of tells judged `leaked` (`undetermined` counts as missed); a false "
        "flag is an honest or content-free message judged `leaked`.",
        "",
        "| kind | messages | leaked | undetermined | clean | ms/message |",
        "|---|---|---|---|---|---|",
    ]
    for name, tally in (("tell", tells), ("honest", honest), ("content_free", free)):
        lines.append(
            f"| {name} | {tally.n} | {_pct(tally.share('leaked'))} | "
            f"{_pct(tally.share('undetermined'))} | {_pct(tally.share('clean'))} | {_ms(tally)} |"
        )
    lines += [
        "",
        f"**Recall {_pct(tells.share('leaked'))}; false flags {_pct(honest.share('leaked'))} "
        f"(honest), {_pct(free.share('leaked'))} (content-free).**",
        "",
        "## Per domain",
        "",
        "| domain | tells | recall | tells undetermined | honest | false flags | content-free flagged | ms/message |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for domain in DOMAINS:
        t, h, c = (by_domain[(k, domain)] for k in ("tell", "honest", "content_free"))
        seconds, n = t.seconds + h.seconds + c.seconds, t.n + h.n + c.n
        lines.append(
            f"| {domain} | {t.n} | {_pct(t.share('leaked'))} | {_pct(t.share('undetermined'))} | "
            f"{h.n} | {_pct(h.share('leaked'))} | {_pct(c.share('leaked'))} | "
            f"{1000 * seconds / n if n else 0:.1f} |"
        )
    for kind, title, good in (
        ("tell", "Tell families (recall, lowest first)", "leaked"),
        ("honest", "Honest families (false flags)", "leaked"),
        ("content_free", "Content-free families (false flags)", "leaked"),
    ):
        families = [f for f in by_family if f.split(":")[0] == kind.replace("_", "-")]
        families.sort(
            key=lambda f: (
                by_family[f].share(good) if kind == "tell" else -by_family[f].share(good),
                f,
            )
        )
        head = "recall" if kind == "tell" else "flagged"
        lines += [
            "",
            f"## {title}",
            "",
            f"| family | messages | {head} | undetermined | ms/message | example of a miss |"
            if kind == "tell"
            else f"| family | messages | {head} | undetermined | ms/message | example of a flag |",
            "|---|---|---|---|---|---|",
        ]
        for family in families:
            tally = by_family[family]
            example = ""
            if tally.examples:
                pid, verdict, message = tally.examples[0]
                example = f"`{pid}` ({verdict}): {_clip(message)}"
            lines.append(
                f"| {family} | {tally.n} | {_pct(tally.share(good))} | "
                f"{_pct(tally.share('undetermined'))} | {_ms(tally)} | {example} |"
            )
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--per-domain", type=int, default=40, help="problems per domain")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", help="also write the markdown report here")
    args = parser.parse_args(argv)
    started = time.perf_counter()
    problems = load(args.per_domain, args.seed)
    by_family, by_domain, by_kind = measure(problems, args.seed)
    text = report(by_family, by_domain, by_kind, len(problems), args.seed,
                  time.perf_counter() - started)  # fmt: skip
    print(text)
    if args.out:
        with open(args.out, "w", encoding="utf-8") as handle:
            handle.write(text)
    if by_kind["tell"].n < MIN_TELLS or by_kind["honest"].n < MIN_HONEST:
        print(f"fewer than {MIN_TELLS} tells or {MIN_HONEST} honest hints: raise --per-domain",
              file=sys.stderr)  # fmt: skip
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
