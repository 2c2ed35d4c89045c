"""The ideation checker: which teacher messages must be withheld from the student.

In the tutor protocol's ideation phase the teacher may discuss ideas, but not
give code, worked calculations or the final answer (KITE §3: a second model
withholds replies that contain answers, code or mathematical calculations).
:func:`rules_check` is the deterministic checker:

* **code in any form**: a fenced block, a line that only code looks like, a
  one-line ``def``, a ``lambda``, a ``for x in xs:``/``while``/``if`` one-liner,
  a ``return`` of an expression, or inline backticks holding a statement, an
  assignment, an operation or a call with arguments (a bare name such as
  `` `best` `` or `` `sorted()` `` is prose);
* **the answer**: :func:`~intbench.verifiers.leakage.answer_leaked`, the
  domain's verifier-based leak detector (so ``51.5`` for ``\\frac{103}{2}``);
* **a worked calculation in any notation**: numbers combined by an operator
  and the result stated (``3·17 is 51``, ``３×１７＝５１``, ``2^10 = 1024``,
  "three times seventeen is fifty-one"), or a chain of results
  (``17 → 34 → 51``).  The message is first rewritten into one notation by
  :func:`~intbench.verifiers.leakage.notation.plain_math`.

The LLM checker (the ``tutor_checker`` prompt) runs inside the env as a flow,
on top of these rules, and its reply is read with :func:`parse_checker_reply`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from intbench.agents.parsing import parse_leak_check
from intbench.records import Problem
from intbench.verifiers.leakage import answer_leaked
from intbench.verifiers.leakage.notation import plain_math

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
# Code inside a sentence: a one-line def, a lambda, a loop or test with its body, a return.
_INLINE_CODE = re.compile(
    r"""\bdef\s+\w+\s*\([^)\n]*\)\s*(?:->[^:\n]*)?:
      | \blambda(?:\s+\w+(?:\s*,\s*\w+)*)?\s*:
      | \bfor\s+\w+(?:\s*,\s*\w+)*\s+in\s+[\w.]+(?:\([^()\n]*\)|\[[^\]\n]*\])?\s*:
      | \b(?:while|if)\s+(?P<condition>[^:\n]{1,80}+):(?=\s*\S)
      | \breturn\s+\w+(?:\.\w+)*\s*[(\[]
      | \breturn\s+\w+\s*(?:[-+*/%<>]|==|!=)""",
    re.VERBOSE,
)
_CONDITION = re.compile(r"[<>!=]=|[<>%]|\bnot\b")
_BACKTICKS = re.compile(r"`([^`\n]{1,200})`")  # bounded: each span is searched again
# What makes backticked text code rather than a name: a statement keyword, an
# assignment, an operation between operands, or a call with arguments.
_CODE_INSIDE = re.compile(
    r"""\b(?:return|yield|lambda|def|import|print|while|for\s+\w+\s+in)\b
      | \w[\w.\]\[]{0,40}\s*(?:[-+*/%]|//)?=(?!=)
      | \w\s*(?:==|!=|<=|>=|//|[-+*/%<>])\s*[\w(]
      | \b(?!O\s*\()\w+\s*\([^()]+\)  # a call with arguments, not big-O""",
    re.VERBOSE,
)
# A calculation with its result: operands joined by operators, then "=", "is",
# "gives", an arrow..., then a number.  After plain_math every notation
# (·, ×, ＝, →, number words) reads the same.
_NUMBER = r"\d{1,40}+(?:\.\d{1,40}+)?"  # possessive: a digit run is read once
_FRACTION = r"\\frac\{[^{}]{1,40}\}\{[^{}]{1,40}\}"
_GAP = r"[ \t]{0,3}"
# Operands start at the start of a number, so a long digit run is read once (linear time).
_OPERAND = rf"\(?{_GAP}-?(?:(?<![\d.]){_NUMBER}|{_FRACTION})(?:\^\{{?-?\d{{1,4}}\}}?)?{_GAP}\)?"
_OPERATOR = r"(?:[-+*/^]|\\cdot|\\times|\\div)"
_RESULT = r"(?:=|->|≈|\\approx|\bis\b|\bequals\b|\bgives\b|\bmakes\b|\byields\b)"
_RESULT_MARKER = re.compile(_RESULT, re.IGNORECASE)  # no result stated: nothing was worked out
_CALCULATION = re.compile(
    rf"{_OPERAND}(?:{_GAP}{_OPERATOR}{_GAP}{_OPERAND}){{1,8}}+{_GAP}{_RESULT}{_GAP}-?\d"
    rf"|\d{_GAP}->{_GAP}-?\d"  # a chain of results: 17 -> 34 -> 51
    rf"|{_FRACTION}{_GAP}{_RESULT}{_GAP}-?\d"
    rf"|\d{_GAP}={_GAP}{_OPERAND}{_GAP}{_OPERATOR}{_GAP}{_OPERAND}",  # the result first: 51 = 3*17
    re.IGNORECASE,
)


def contains_code(message: str) -> bool:
    """Whether ``message`` holds code in any form (see the module docstring)."""
    if _FENCE.search(message) or _CODE_LINE.search(message):
        return True
    for match in _INLINE_CODE.finditer(message):
        condition = match.group("condition")
        # A loop or test one-liner is code when its condition is (x > m, n % 2, not seen).
        if condition is None or _CONDITION.search(condition):
            return True
    return any(_CODE_INSIDE.search(inline) for inline in _BACKTICKS.findall(message))


def contains_calculation(message: str) -> bool:
    """Whether ``message`` works out a calculation and states its result, in any notation."""
    text = plain_math(message)
    return _RESULT_MARKER.search(text) is not None and _CALCULATION.search(text) is not None


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
    """The deterministic checker: code, the final answer, or a worked calculation."""
    # Code first: "contains code" is the most useful reason for the teacher to read.
    if contains_code(message):
        return CheckResult(True, "contains code")
    if answer_leaked(problem, message):
        return CheckResult(True, "reveals the final answer or reference solution")
    if contains_calculation(message):
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
