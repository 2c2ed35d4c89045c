"""IntBench's math verdicts against plain math-verify on the labelled answer pairs.

Each pair of ``tests/fixtures/math_answer_pairs.jsonl`` has a reference, an
answer (graded as ``The answer is \\boxed{ANSWER}.``) or a full response, and
the expected verdict.  Both graders see the same response: IntBench through
``verify_math``, math-verify the way the field uses it
(``verify(parse(gold), parse(response))``).  Pairs where a disagreement is a
documented rule of IntBench carry a ``deliberate`` field.

    python benchmarks/math_agreement.py [PAIRS.jsonl] [--out benchmarks/results/math_agreement.md]
"""

from __future__ import annotations

import argparse
import json
import logging
import threading
from pathlib import Path

from intbench.records import Problem
from intbench.verifiers.math import default_pool, verify_math

DEFAULT_PAIRS = Path(__file__).resolve().parent.parent / "tests/fixtures/math_answer_pairs.jsonl"


def load_pairs(pairs_path: str | Path) -> list[dict]:
    """The labelled pairs of a JSONL file, one object a line."""
    lines = Path(pairs_path).read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines if line.strip()]


def response_of(pair: dict) -> str:
    """The response a pair stands for: its own, or its answer in one box."""
    if "response" in pair:
        return pair["response"]
    return f"The answer is \\boxed{{{pair['answer']}}}."


def intbench_status(pair: dict) -> str:
    problem = Problem(id="pair", domain="math", question="?", answer=pair["reference"])
    return verify_math(problem, response_of(pair), pool=default_pool()).status


def math_verify_status(pair: dict) -> str:
    """math-verify's verdict with its default options (its alarm timeouts need the main thread)."""
    from math_verify import parse, verify

    timeout = 5 if threading.current_thread() is threading.main_thread() else None
    gold = parse(f"${pair['reference']}$", parsing_timeout=timeout)
    prediction = parse(response_of(pair), parsing_timeout=timeout)
    return "correct" if verify(gold, prediction, timeout_seconds=timeout) else "incorrect"


def _mistakes(statuses: list[str], expected: list[str]) -> dict:
    pairs = list(zip(statuses, expected, strict=True))
    return {
        "false_accepts": sum(s == "correct" and e != "correct" for s, e in pairs),
        "false_rejects": sum(s != "correct" and e == "correct" for s, e in pairs),
        "errors": sum(s == "error" for s, _ in pairs),
    }


def math_agreement(pairs_path: str | Path = DEFAULT_PAIRS) -> dict:
    """Grade every pair with both graders and count agreement and mistakes vs the labels.

    Returns:
        ``{"pairs", "agreement", "intbench", "math_verify", "disagreements",
        "unexplained_disagreements"}``: ``agreement`` is the fraction of pairs with
        the same verdict from both; ``intbench``/``math_verify`` hold
        ``false_accepts``, ``false_rejects`` and ``errors`` against the labels;
        ``disagreements`` lists each pair the graders disagree on, with both verdicts;
        ``unexplained_disagreements`` counts those without a ``deliberate`` rule.
    """
    logging.getLogger("math_verify").setLevel(logging.ERROR)
    pairs = load_pairs(pairs_path)
    ours = [intbench_status(pair) for pair in pairs]
    theirs = [math_verify_status(pair) for pair in pairs]
    expected = [pair["expected"] for pair in pairs]
    disagreements = [
        {**pair, "intbench": mine, "math_verify": other}
        for pair, mine, other in zip(pairs, ours, theirs, strict=True)
        if (mine == "correct") != (other == "correct")
    ]
    return {
        "pairs": len(pairs),
        "agreement": 1 - len(disagreements) / len(pairs) if pairs else 1.0,
        "intbench": _mistakes(ours, expected),
        "math_verify": _mistakes(theirs, expected),
        "disagreements": disagreements,
        "unexplained_disagreements": sum("deliberate" not in d for d in disagreements),
    }


def _cell(text: str) -> str:
    text = text if len(text) <= 60 else text[:57] + "..."
    return "`" + text.replace("|", "\\|").replace("`", "'") + "`"


def to_markdown(result: dict) -> str:
    """The summary table, then one row per disagreement."""
    lines = [
        f"Math answer pairs: {result['pairs']}; agreement with math-verify: "
        f"{result['agreement']:.1%} ({result['unexplained_disagreements']} disagreements "
        "not explained by a documented rule).",
        "",
        "| grader | false accepts | false rejects | errors |",
        "|---|---|---|---|",
    ]
    for name in ("intbench", "math_verify"):
        counts = result[name]
        lines.append(
            f"| {name} | {counts['false_accepts']} | {counts['false_rejects']} | "
            f"{counts['errors']} |"
        )
    lines += [
        "",
        "| category | reference | answer | expected | intbench | math-verify | rule |",
        "|---|---|---|---|---|---|---|",
    ]
    for d in result["disagreements"]:
        answer = d.get("answer", d.get("response", ""))
        lines.append(
            f"| {d['category']} | {_cell(d['reference'])} | {_cell(answer)} | {d['expected']} "
            f"| {d['intbench']} | {d['math_verify']} | {d.get('deliberate', '')} |"
        )
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("pairs", nargs="?", default=str(DEFAULT_PAIRS))
    parser.add_argument("--out", help="also write the Markdown report to this file")
    args = parser.parse_args()
    report = to_markdown(math_agreement(args.pairs))
    print(report)
    if args.out:
        Path(args.out).write_text(report, encoding="utf-8")


if __name__ == "__main__":
    main()
