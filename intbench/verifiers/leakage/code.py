"""Code leaks (Codeforces, Debug): a program recovered from the message passes the
held-out tests, or the reference solution's logic is written out.

:func:`code_leaked` first runs the cheap token match below (and
:func:`~intbench.verifiers.code_split.forwards_held_out_io`); when neither
fires, it runs the programs recovered from the message on the held-out
tests in the sandbox (:mod:`intbench.verifiers.leakage.code_run`), which is
what tells a rewritten solution or a one-line fix from an idiom.

Token match: the reference solution is cut into statements (lines, and ``;``-separated
parts), each read as a token sequence in which every name that is not a
keyword, builtin or attribute becomes ``ID``; a leading ``return``/``yield``
is dropped, so ``return sorted(set(l))`` and ``f = lambda l: sorted(set(l))``
share ``sorted ( set ( ID ) )``.  A statement is *logic* when it has at least
:data:`MIN_TOKENS` tokens, one of them an operator or bracket, and does not
appear in the problem statement, not even inside one of its lines
(signatures, docstrings and, for Debug, the buggy program's unchanged lines
give nothing away; its fixed lines do), nor in one of the statement's lines as
written, docstrings and comments included (a formula the docstring spells out).
Comments and docstrings are dropped first.

The match fires when the message's own token sequence (the whole message, so
fenced or not, inline backticks, one-liners and lambdas alike, names renamed
or not) contains a logic statement; for a problem with tests, which the run
judges precisely, it must contain more than half of them, so that one idiom
the reference also uses ("`for i in range(len(xs))`") is left to the run.
Each statement is one substring search over the message's tokens, so the
cost is linear in the message.
"""

from __future__ import annotations

import builtins
import keyword
import re
from functools import lru_cache
from typing import TYPE_CHECKING

from intbench.records import Problem
from intbench.verifiers.code_split import forwards_held_out_io
from intbench.verifiers.leakage.code_run import recovered_program_verdict
from intbench.verifiers.leakage.notation import fold

if TYPE_CHECKING:
    from intbench.verifiers.leakage.verdicts import LeakVerdict

MIN_TOKENS = 5
"""Shortest statement (in tokens) that counts as logic; shorter ones occur in any code."""
MAX_TOKENS = 40
"""Longer statements are matched by their first :data:`MAX_TOKENS` tokens."""

_TOKEN = re.compile(
    r"[A-Za-z_]\w*|\d+(?:\.\d+)?|\"(?:[^\"\\\n]|\\.)*\"|'(?:[^'\\\n]|\\.)*'"
    r"|==|!=|<=|>=|//|\*\*|->|\+=|-=|\*=|/=|%=|&&|\|\||<<|>>|::|[^\s\w`]"
)
_DOCSTRING = re.compile(r'"""[\s\S]*?"""|\'\'\'[\s\S]*?\'\'\'')
_COMMENT = re.compile(r"(?<![:\"'])(?:#|//)[^\n]*|/\*[\s\S]*?\*/")
_CPP_WORDS = (
    "int long short char bool double float void auto const unsigned signed struct class "
    "vector string map set pair std cin cout endl using namespace include main size push_back "
    "begin end sort min max true false nullptr new delete"
).split()
_KEPT = frozenset(keyword.kwlist) | frozenset(dir(builtins)) | frozenset(_CPP_WORDS)
_PUNCTUATION_ONLY = frozenset({":", ",", ";", "ID"})
_LEADING = {"return", "yield"}
_BLOCK_ENDS = {":", ";", "{"}
SEPARATOR = "\x00"


def code_tokens(text: str) -> list[str]:
    """``text`` as code tokens, names that are not keywords, builtins or attributes as ``ID``."""
    tokens = []
    previous = ""
    for match in _TOKEN.finditer(fold(text)):
        token = match.group()
        if (token[0].isalpha() or token[0] == "_") and token not in _KEPT and previous != ".":
            token = "ID"
        tokens.append(token)
        previous = match.group()
    return tokens


def _statements(code: str) -> list[list[str]]:
    """The statements of ``code`` as tokens, without comments, docstrings or a leading ``return``."""
    code = _COMMENT.sub("", _DOCSTRING.sub("", code))
    statements = []
    for line in code.splitlines():
        for part in line.split(";"):
            tokens = code_tokens(part)
            statements.append(tokens[1:] if tokens[:1] and tokens[0] in _LEADING else tokens)
    return statements


def _joined(tokens: list[str]) -> str:
    return SEPARATOR + SEPARATOR.join(tokens) + SEPARATOR


@lru_cache(maxsize=512)
def logic_statements(solution: str, statement: str) -> tuple[str, ...]:
    """The reference's logic statements, each joined with :data:`SEPARATOR` for searching."""
    # Docstrings and comments count as shown too: a formula the docstring spells out
    # ("fibfib(n-1) + fibfib(n-2) + fibfib(n-3)") gives nothing away.
    shown = "".join(_joined(tokens) for tokens in _statements(statement))
    shown += "".join(_joined(code_tokens(line)) for line in statement.splitlines())
    logic = []
    for tokens in _statements(solution):
        if len(tokens) < MIN_TOKENS or _joined(tokens) in shown:
            continue
        while tokens[-1] in _BLOCK_ENDS:  # also found without its ":" ("for i in range(n)")
            tokens = tokens[:-1]
        if not any(not t[0].isalnum() and t not in _PUNCTUATION_ONLY for t in tokens):
            continue  # no operator or bracket: "for ID in ID :" reads like prose
        if _joined(tokens[:MAX_TOKENS]) in shown:
            continue  # part of a statement line (Debug: a fixed line the buggy code also has)
        logic.append(_joined(tokens[:MAX_TOKENS]))
    return tuple(dict.fromkeys(logic))


def reference_logic_leaked(problem: Problem, message: str) -> bool:
    """Whether ``message`` contains the reference solution's logic statements: any one
    of them, or more than half of them for a problem with tests (see the module)."""
    if not problem.solution:
        return False
    logic = logic_statements(problem.solution, problem.question or "")
    if not logic:
        return False
    text = _joined(code_tokens(message))
    found = sum(statement in text for statement in logic)
    if (problem.tests or {}).get("cases"):
        return 2 * found > len(logic)
    return found > 0


CODE_LEAK_CHECKS = (reference_logic_leaked, forwards_held_out_io)
"""The cheap checks, each ``(problem, message) -> bool``: the reference solution's
logic, or a held-out test's input and expected output
(:mod:`intbench.verifiers.code_split`), which the teacher's context never shows."""


def code_leaked(problem: Problem, message: str) -> LeakVerdict:
    """Whether ``message`` gives away the code problem's solution: ``"leaked"`` when a
    cheap check (:data:`CODE_LEAK_CHECKS`) fires or a recovered program passes the
    held-out tests (:func:`~intbench.verifiers.leakage.code_run.recovered_program_verdict`),
    ``"undetermined"`` when a run could not finish, else ``"clean"``."""
    if any(check(problem, message) for check in CODE_LEAK_CHECKS):
        return "leaked"
    return recovered_program_verdict(problem, message)
