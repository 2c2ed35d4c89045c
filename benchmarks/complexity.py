"""Functions of ``intbench/`` above a cyclomatic complexity of 15, worst first.

Uses radon's McCabe count (in the ``dev`` extra; not a dependency of the
package).  Prints a Markdown table and the count; the results file keeps the
last one, so a change that adds a complex function shows in its diff.
``tests/test_complexity.py`` fails on any function above 15.

    python benchmarks/complexity.py [--limit 15] > benchmarks/results/complexity.md
"""

from __future__ import annotations

import argparse
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "intbench"


def complex_functions(limit: int) -> list[tuple[int, str, str, int]]:
    """``(complexity, module path, function, line)`` of every function above ``limit``."""
    try:
        from radon.complexity import cc_visit
        from radon.visitors import Function
    except ImportError:
        raise SystemExit("this report needs radon: pip install radon") from None
    found = set()
    for path in sorted(PACKAGE.rglob("*.py")):
        for block in cc_visit(path.read_text(encoding="utf-8")):
            # cc_visit lists a class's methods both on their own and inside the class
            if isinstance(block, Function) and block.complexity > limit:
                module = path.relative_to(PACKAGE.parent).as_posix()
                found.add((block.complexity, module, block.fullname, block.lineno))
    return sorted(found, key=lambda row: (-row[0], row[1], row[3]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--limit", type=int, default=15)
    args = parser.parse_args()
    rows = complex_functions(args.limit)
    print(f"# Functions above cyclomatic complexity {args.limit}\n")
    from radon import __version__ as radon_version

    print(f"`python benchmarks/complexity.py` (radon {radon_version}, McCabe count).\n")
    print(f"**{len(rows)} functions** above {args.limit}.\n")
    print("| complexity | function | module |")
    print("|---:|---|---|")
    for complexity, module, name, line in rows:
        print(f"| {complexity} | `{name}` | {module}:{line} |")


if __name__ == "__main__":
    main()
