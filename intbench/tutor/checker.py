"""The ideation checker: which teacher messages must be withheld from the student.

In the tutor protocol's ideation phase the teacher may discuss ideas, but not
give code, worked calculations or the final answer.  :func:`rules_check` is
the deterministic checker: the overlap-based leakage detector
(:mod:`intbench.verifiers.leakage`) plus patterns for code and for worked
arithmetic.  The LLM checker (the ``tutor_checker`` prompt) runs inside the
env as a flow, on top of these rules, and its reply is read with
:func:`parse_checker_reply`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from intbench.agents.parsing import parse_leak_check
from intbench.records import Problem
from intbench.verifiers.leakage import answer_leaked

_FENCE = re.compile(r"```|~~~")
# A line that only code looks like.  Prose such as "for each node, ..." must not
# match, so every pattern needs code punctuation ("(", ":" at the end, ";", "{").
_CODE_LINE = re.compile(
    r"""^\s*(?:
        def\s+\w+\s*\(.*\)\s*(?:->.*)?:\s*$          # Python function header
      | class\s+\w+\s*(?:\(.*\))?:\s*$               # Python class header
      | (?:for|while|if|elif)\s+[^\n]*:\s*$          # block opener ending in ':'
      | (?:import\s+[\w.]+|from\s+[\w.]+\s+import\s+\w+)\s*$
      | \#include\s*[<"]
      | (?:int|void|long|auto)\s+\w+\s*\(.*\)\s*\{?\s*$   # C/C++ function header
      | \w+(?:\[[^\]\n]*\])?\s*(?:[-+*/]?=)\s*[^=\n]*\([^\n]*\)\s*;?\s*$  # x = f(...)
      | [^\n]*(?:=|\(|<<|>>)[^\n]*;\s*$              # C-style statement
      | print\s*\(
    )""",
    re.MULTILINE | re.VERBOSE,
)
# "17 * 3 = 51", "2^10 = 1024", "(4+5)/3 = 3": numbers combined and the result stated.
_CALCULATION = re.compile(r"[\d)]\s*(?:[-+*/×÷^·]|\\times|\\cdot)\s*[\d(][^=\n]{0,40}=\s*-?\(?\d")


@dataclass
class CheckResult:
    """Whether a message is withheld, why, and by which checker.

    ``error`` is set when an LLM checker's reply could not be read; such a
    message is withheld (the safe choice).
    """

    leak: bool
    reason: str = ""
    source: str = "rules"
    error: str | None = None

    def to_dict(self) -> dict:
        return {
            "leak": self.leak,
            "reason": self.reason,
            "source": self.source,
            "error": self.error,
        }


def rules_check(problem: Problem, message: str) -> CheckResult:
    """The deterministic checker: final answer, code, or a worked calculation."""
    # Code first: the leakage detector also flags any fenced block, but
    # "contains code" is the more useful reason for the teacher to read.
    if _FENCE.search(message) or _CODE_LINE.search(message):
        return CheckResult(True, "contains code")
    if answer_leaked(problem, message):
        return CheckResult(True, "reveals the final answer or reference solution")
    if _CALCULATION.search(message):
        return CheckResult(True, "contains a worked calculation")
    return CheckResult(False)


def parse_checker_reply(text: str, error: str | None = None) -> CheckResult:
    """Read the LLM checker's reply; a failed call or malformed reply withholds."""
    if error:
        return CheckResult(True, "checker call failed", "llm", error)
    parsed = parse_leak_check(text)
    if parsed.leak is None:
        return CheckResult(True, "unreadable checker reply", "llm", parsed.error or "no Leak: line")
    return CheckResult(parsed.leak, parsed.reason or "", "llm", parsed.error)
