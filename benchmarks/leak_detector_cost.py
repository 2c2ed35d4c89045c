"""Cost of the verifier-based leak detector against the overlap check it replaced.

For math, text and code, an honest message (no leak, so every span is read)
is built at several lengths from varied hint sentences, and each detector is
timed on it in the same run: ``answer_leaked`` (the domain's detector) and
the previous overlap check (kept below, verbatim in behaviour, as the
baseline).  The time per character staying flat as the message grows shows
the linear cost; the ratio column is the price of reading every span with
the verifier.

    python benchmarks/leak_detector_cost.py [--lengths 500 2000 8000 32000 128000] [--repeats 7]
"""

from __future__ import annotations

import argparse
import re
import time

from intbench.records import Problem
from intbench.verifiers.leakage import answer_leaked
from intbench.verifiers.text import canonical_answer, normalize_free_text

MATH = Problem(
    id="bench/mean",
    domain="math",
    question="What is the mean of 50 and 53?",
    answer="\\frac{103}{2}",
)
TEXT = Problem(id="bench/piano", domain="brainteaser", question="What am I?", answer="a piano",
               fields={"aliases": ["piano"]})  # fmt: skip
CODE = Problem(
    id="bench/max",
    domain="codeforces",
    question='def max_element(l: list):\n    """Return the maximum element in the list."""\n',
    solution="def max_element(l: list):\n    m = l[0]\n    for e in l:\n        if e > m:\n"
    "            m = e\n    return m\n",
)


def math_hint(i: int) -> str:
    return (
        f"Try n = {i} by hand and compare {i} + {i + 1} with {2 * i + 1}; "
        f"then check whether {i}^2 - 1 = ({i}-1)({i}+1) holds. "
    )


def text_hint(i: int) -> str:
    return f"Clue {i}: it has {i % 88 + 1} keys but opens no lock, and it makes music when played. "


def code_hint(i: int) -> str:
    return f"Step {i}: keep the largest value seen so far and compare it with element {i}. "


# --- the previous overlap checks (the baseline), as they were before this detector ---
_LATEX_NOISE = re.compile(r"\\left|\\right|\\!|\\,|\\;|\\ |\$")
_LOOSE_SPACE = re.compile(r"(?<=\W)\s+|\s+(?=\W)")


def _old_normalise_math(text: str) -> str:
    text = text.replace("\\dfrac", "\\frac").replace("\\tfrac", "\\frac")
    return _LOOSE_SPACE.sub("", _LATEX_NOISE.sub("", text)).lower()


def old_math(problem: Problem, message: str) -> bool:
    needle = _old_normalise_math(str(problem.answer))
    before = r"(?<![0-9A-Za-z.])" if needle[0].isalnum() else ""
    after = r"(?![0-9A-Za-z]|\.\d)" if needle[-1].isalnum() else ""
    return re.search(before + re.escape(needle) + after, _old_normalise_math(message)) is not None


def old_text(problem: Problem, message: str) -> bool:
    text = re.sub(r"[^\w,]+", " ", normalize_free_text(message))
    for candidate in [problem.answer, *problem.fields.get("aliases", [])]:
        norm = re.sub(r"[^\w,]+", " ", canonical_answer(str(candidate))).strip()
        if norm and re.search(rf"(?<!\w){re.escape(norm)}(?!\w)", text):
            return True
    return False


def old_code(problem: Problem, message: str) -> bool:
    if "```" in message:
        return True
    lines = {line.strip() for line in problem.solution.splitlines() if len(line.strip()) >= 25}
    return any(line in message for line in lines)


CASES = [("math", MATH, math_hint, old_math), ("text", TEXT, text_hint, old_text),
         ("code", CODE, code_hint, old_code)]  # fmt: skip


def message_of(hint, length: int) -> str:
    parts, total, i = [], 0, 1
    while total < length:
        parts.append(hint(i))
        total += len(parts[-1])
        i += 1
    return "".join(parts)[:length]


def seconds(check, problem: Problem, message: str, repeats: int) -> float:
    """The fastest of ``repeats`` runs: on a shared machine the minimum is the least disturbed."""
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        flagged = check(problem, message)
        times.append(time.perf_counter() - start)
        assert not flagged, "the benchmark messages are honest: nothing may be flagged"
    return min(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lengths", type=int, nargs="+", default=[500, 2000, 8000, 32000, 128000])
    parser.add_argument("--repeats", type=int, default=7)
    args = parser.parse_args()
    for _, problem, hint, _ in CASES:  # warm up: imports, caches
        answer_leaked(problem, message_of(hint, 200))
    print("| domain | chars | detector ms | detector us/char | overlap ms | ratio |")
    print("|---|---:|---:|---:|---:|---:|")
    for name, problem, hint, old in CASES:
        for length in args.lengths:
            message = message_of(hint, length)
            new = seconds(answer_leaked, problem, message, args.repeats)
            before = seconds(old, problem, message, args.repeats)
            print(f"| {name} | {length} | {1000 * new:.2f} | {1e6 * new / length:.2f} | "
                  f"{1000 * before:.3f} | {new / before:.0f}x |")  # fmt: skip


if __name__ == "__main__":
    main()
