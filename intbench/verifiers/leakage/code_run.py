"""Code leaks by answer recovery: run the code a message holds on the held-out tests.

A code message leaks when a program recovered from it passes every held-out
test (:func:`intbench.verifiers.code_split.held_out_tests`, the cases the
teacher never sees), graded by the domain's own sandboxed runner
(:func:`intbench.verifiers.code.run_tests`).  Untrusted code runs only
there; this module only parses and compiles it.

Candidate programs, in this order, at most :data:`MAX_CANDIDATES` per
message (each one sandbox run with all cases in one process), read from the
first :data:`MAX_SPANS` blocks, inline spans and code lines:

- each fenced code block, the whole message when it parses as Python, the
  string literals that hold code (``exec('...')``, JSON values: decoded by
  :func:`json.loads` or :func:`ast.literal_eval`, never run here), each
  program written among prose (from a line that starts a ``def``, ``class``
  or import to the end of its indented blocks), runs of consecutive fenced
  blocks joined (a program split over several), runs of inline spans that
  only ", then "-like joins separate, as lines of one program, and each
  inline code span; for function tests a snippet that does not define
  the entry point is grafted into its signature from the statement (a body
  with ``return``, or an expression over the parameters: ``return expr``),
  and the statement's imports and helpers are put in front;
- for Debug (the buggy program is ``problem.fields["buggy_code"]``), the
  message as a patch of the buggy program: a unified diff; each ``"X" to
  "Y"`` pair of inline code spans ("replace `X` with `Y`", "change `X` to
  `Y`", "use `Y` instead of `X"`: every occurrence of X, then each one);
  each code line of the message put in place of the most similar line of
  the buggy program (spaces ignored; or of line N, for "line N should be
  ..."), one at a time and all together; each line it says to delete taken
  out, and each line it says to add inserted (at most :data:`MAX_INSERTIONS`
  places, between statements and indented as they are, where the names it
  reads are bound and what it binds is read later).

A candidate that is the unchanged buggy program or statement code, that
does not compile, or that does not define the entry point, is not run.  When
the buggy program itself passes the held-out tests, they prove nothing and
a candidate must pass every test.  A candidate that passes some tests and
times out on the rest, or a sandbox that cannot run, is ``"undetermined"``.
Outcomes are memoised per (problem, tests, program), so re-checking a
message costs no run.
"""

from __future__ import annotations

import ast
import builtins
import difflib
import functools
import hashlib
import itertools
import json
import re
import textwrap
import threading
from collections import OrderedDict
from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING

from intbench.records import Problem
from intbench.verifiers.code import _fenced_blocks, run_tests
from intbench.verifiers.code_split import held_out_tests

if TYPE_CHECKING:
    from intbench.verifiers.leakage.verdicts import LeakVerdict

MAX_CANDIDATES = 8
"""Sandbox runs per message at most (memoised outcomes do not count)."""
MAX_SPANS = 32
"""Fenced blocks, inline code spans and patch lines read per message, each at most."""
MAX_SOURCE_CHARS = 65_536
"""Longer text is not read as a program."""
MIN_LINE_SIMILARITY = 0.6
"""How close a message's code line must be to a buggy line to be read as its replacement."""
SAME_START_BONUS = 0.2
MAX_JOINS = 16
"""Joined runs of fenced blocks, and of inline spans, tried per message, each at most."""
MAX_INLINE_LINES = 400
"""Inline code spans read per message as the lines of a program."""
MAX_INLINE_GAP = 24
"""Inline spans at most this many characters apart ("`a`, then `b`") are lines of one program."""
MAX_INSERTIONS = 6
"""Places tried per message for a line the message says to add to the buggy program."""
MAX_PATCH_LINES = 3
"""A fenced block of at most this many lines is also read line by line as a patch."""
MEMO_SIZE = 4096

_NOT_PYTHON = {"cpp", "c++", "c", "java", "js", "javascript", "rust", "go", "text", "txt",
               "console", "output", "bash", "sh", "shell", "json", "diff", "patch"}  # fmt: skip
_INLINE = re.compile(r"`([^`\n]+)`")
_PAIR_JOIN = re.compile(
    r"\s*(?:,\s*)?(?:with|to|into|by|->|→|=>|should\s+(?:be|become|read)|becomes)\s*(?:just\s+)?$",
    re.IGNORECASE,
)
_INSTEAD_JOIN = re.compile(r"\s*instead\s+of\s*$", re.IGNORECASE)
_LINE_NUMBER = re.compile(r"\bline\s+(\d{1,4})\b[^`\n]{0,40}?(?:`([^`\n]+)`|:\s*(\S[^\n]*))", re.I)
_STRING_LITERAL = re.compile(
    r"""(?<![\w'"])[rRuU]?(?:"{3}[\s\S]*?"{3}|'{3}[\s\S]*?'{3}"""
    r"""|"(?:[^"\\\n]|\\.)*"|'(?:[^'\\\n]|\\.)*')"""
)
_UNKNOWN_ESCAPE = re.compile(r"""(?<!\\)((?:\\\\)*)\\(?=[^\n\\'"abfnrtvx0-7NuU])""")
_INLINE_JOIN = re.compile(
    r"[\s,;:*-]*(?:(?:and\s+)?(?:then|next)|and|followed\s+by|after\s+that|->|→)?[\s,;:*-]*",
    re.IGNORECASE,
)
_CODE_START = re.compile(r"(?:async\s+def|def|class)\s+\w|import\s+\w|from\s+[\w.]+\s+import\b|@\w")
_STATEMENT_BLOCK = re.compile(r"```(?:python|py)?[ \t]*\n(.*?)```", re.DOTALL)
_FIRST_WORD = re.compile(r"[A-Za-z_][\w.\[\]]*\s*(?:[-+*/%]?=(?!=))?")
_BUILTINS = frozenset(dir(builtins))
_FAILED_WAITING = {"timeout", "not_run"}
CUE_CHARS = 40
"""How far before an inline span "add the line" or "delete" is read as its cue."""
_ADD_CUE = re.compile(r"\b(?:add|insert|append|put|missing|forgot|forgotten)\b[^`]*$", re.I)
_DELETE_CUE = re.compile(r"\b(?:delete|remove|drop|erase)\b[^`]*$", re.I)
_DEFINITIONS = (ast.FunctionDef, ast.AsyncFunctionDef)
_Place = tuple[int, str]
"""Where a statement may be inserted: the 0-based index of the line it goes before, and
its indentation."""

_memo: OrderedDict[tuple[str, str, str], str] = OrderedDict()
_memo_lock = threading.Lock()


# ------------------------------------------------------------------ entry point
def recovered_program_verdict(problem: Problem, message: str) -> LeakVerdict:
    """``"leaked"`` when a program recovered from ``message`` passes the held-out tests,
    ``"undetermined"`` when some candidate's run could not finish, else ``"clean"``."""
    tests = problem.tests
    if not isinstance(tests, Mapping) or not tests.get("cases") or not message:
        return "clean"
    context = _Context(problem)
    verdict: LeakVerdict = "clean"
    for program in _candidates(context, message[:MAX_SOURCE_CHARS]):
        outcome = _outcome(context, program)
        if outcome == "pass":
            return "leaked"
        if outcome == "undetermined":
            verdict = "undetermined"
    return verdict


class _Context:
    """What a candidate is built from: the statement's program and the tests."""

    def __init__(self, problem: Problem) -> None:
        tests = problem.tests or {}
        self.problem = problem
        self.function = tests.get("kind") == "function"
        self.entry = tests.get("entry_point") or ""
        self.buggy = (problem.fields or {}).get("buggy_code") or ""
        self.base = self.buggy or _statement_code(problem.question or "")
        self.statement = _squash(problem.question or "")
        self.prelude, self.header, self.params = _split_base(self.base, self.entry)
        cases = held_out_tests(problem) or list(tests.get("cases") or [])
        self.tests = {**tests, "cases": cases}
        self.unchanged = {_normal(self.base)} if self.base else set()

    @functools.cached_property
    def key(self) -> str:
        """A fingerprint of the tests, for the memo (problems in tests reuse ids)."""
        text = json.dumps(self.problem.tests, sort_keys=True, default=str)
        return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


# ------------------------------------------------------------------ candidates
def _candidates(context: _Context, message: str) -> Iterator[str]:
    """Distinct runnable candidate programs of ``message``, at most :data:`MAX_CANDIDATES`."""
    seen: set[str] = set()
    produced = 0
    for program in _raw_candidates(context, message):
        if program is None:
            continue
        normal = _normal(program)
        if normal is None or normal in seen or normal in context.unchanged:
            continue
        seen.add(normal)
        if not _runnable(context, program):
            continue
        yield program
        produced += 1
        if produced >= MAX_CANDIDATES:
            return


def _raw_candidates(context: _Context, message: str) -> Iterator[str | None]:
    """Whole programs first, then patches of the buggy program, then grafted snippets."""
    blocks = [body for tag, body in _fenced_blocks(message) if tag.lower() not in _NOT_PYTHON]
    blocks = blocks[:MAX_SPANS]
    inline = [m.group(1) for m in itertools.islice(_INLINE.finditer(message), MAX_SPANS)]
    snippets = [*blocks, message, *_decoded_strings(message), *_unfenced_programs(message)]
    snippets += [*_joined_blocks(blocks), *_joined_inline(message), *inline]
    snippets = [s for s in snippets if not _copied(context, s)]
    for snippet in snippets:
        yield _program(context, snippet, graft=False)
    if context.buggy:
        yield from _patches(context, message, blocks, inline)
    for snippet in snippets:
        yield _program(context, snippet, graft=True)


# ------------------------------------------------------------------ snippets
def _decoded_strings(message: str) -> Iterator[str]:
    """The values of the string literals of ``message`` (``exec('...')``, JSON) that look
    like code, at most :data:`MAX_SPANS`: each literal is decoded by :func:`json.loads` or
    :func:`ast.literal_eval`, never run."""
    found = 0
    for match in _STRING_LITERAL.finditer(message):
        value = _literal_value(match.group())
        if value and ("\n" in value or _looks_like_code(value)):
            yield value
            found += 1
            if found >= MAX_SPANS:
                return


def _literal_value(literal: str) -> str | None:
    """``literal`` (a Python or JSON string literal) decoded, or ``None``."""
    if literal.startswith('"') and not literal.startswith('"""'):
        try:
            value = json.loads(literal)
        except ValueError:
            value = None
        if isinstance(value, str):
            return value
    # An escape Python does not know ("\/") stands for itself, as Python reads it, but
    # without the warning.
    if literal[0] not in "rR":
        literal = _UNKNOWN_ESCAPE.sub(r"\\\\\1", literal)
    try:
        value = ast.literal_eval(literal)
    except (SyntaxError, ValueError, RecursionError, MemoryError, TypeError):
        return None
    return value if isinstance(value, str) else None


def _unfenced_programs(message: str) -> Iterator[str]:
    """Programs written among the prose of ``message``: from each line that starts a
    ``def``, ``class``, import or decorator to the end of its indented blocks (and of the
    definitions right after it), at most :data:`MAX_SPANS`."""
    lines = message.splitlines()
    index, found = 0, 0
    while index < len(lines) and found < MAX_SPANS:
        if not _CODE_START.match(lines[index]):
            index += 1
            continue
        end = index + 1
        while end < len(lines) and _continues_program(lines[end]):
            end += 1
        yield "\n".join(lines[index:end])
        found += 1
        index = end


def _continues_program(line: str) -> bool:
    """Whether ``line`` may belong to the program above it: blank, indented or another
    definition (prose and fences start at the margin)."""
    return not line.strip() or line[:1].isspace() or bool(_CODE_START.match(line))


def _joined_blocks(blocks: list[str]) -> Iterator[str]:
    """Runs of consecutive fenced blocks joined into one (a program split over several
    blocks), at most :data:`MAX_JOINS`."""
    joins = 0
    for start in range(len(blocks) - 1):
        for end in range(start + 2, len(blocks) + 1):
            yield "\n".join(block.strip("\n") for block in blocks[start:end])
            joins += 1
            if joins >= MAX_JOINS:
                return


def _joined_inline(message: str) -> Iterator[str]:
    """Runs of inline code spans that only joins such as ", then " or a line break separate,
    as the lines of one program (their leading spaces kept), at most :data:`MAX_JOINS`."""
    runs: list[list[str]] = []
    end = None
    for span in itertools.islice(_INLINE.finditer(message), MAX_INLINE_LINES):
        gap = "." if end is None else message[end : span.start()]
        if len(gap) > MAX_INLINE_GAP or not _INLINE_JOIN.fullmatch(gap):
            runs.append([])
        runs[-1].append(span.group(1))
        end = span.end()
    for run in [run for run in runs if len(run) > 1][:MAX_JOINS]:
        yield "\n".join(run)


def _program(context: _Context, snippet: str, graft: bool) -> str | None:
    """``snippet`` as a whole program, or (``graft``) put in the entry point's signature."""
    code = textwrap.dedent(snippet).strip("\n")
    try:
        tree = ast.parse(code)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    if not context.function:
        return code if not graft and re.search(r"\b(?:print|write)\b", code) else None
    if not graft:
        return f"{context.prelude}\n{code}\n" if _defines(tree, context.entry) else None
    if not context.header or _defines(tree, context.entry):
        return None
    if _returns_outside_functions(tree):
        body = code
    elif len(tree.body) == 1 and isinstance(tree.body[0], ast.Expr):
        free = _names(tree.body[0])
        if not free & context.params or free - context.params - _BUILTINS:
            return None
        body = f"return ({code})"
    else:
        return None
    return f"{context.prelude}\n{context.header}{textwrap.indent(body, '    ')}\n"


def _defines(tree: ast.Module, name: str) -> bool:
    """Whether ``tree`` defines ``name`` at top level (a function or an assignment)."""
    return any(
        (isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == name)
        or (isinstance(node, ast.Assign) and any(_names(t) == {name} for t in node.targets))
        for node in tree.body
    )


def _patches(
    context: _Context, message: str, blocks: list[str], inline: list[str]
) -> Iterator[str | None]:
    """The buggy program patched by ``message``: diff hunks, X-to-Y pairs, line swaps,
    added and deleted lines."""
    lines = context.buggy.splitlines()
    for text in [*blocks, message]:
        yield _apply_diff(lines, text)
    yield from _pair_patches(context.buggy, message)
    yield from _numbered_line_patches(lines, message)
    yield from _added_and_deleted_line_patches(context.buggy, message)
    yield from _similar_line_patches(lines, _code_lines(blocks, inline))


def _added_and_deleted_line_patches(buggy: str, message: str) -> Iterator[str]:
    """``buggy`` with each line ``message`` says to delete ("delete the line `X`") taken
    out, and each line it says to add put in the likeliest places (:func:`_insertions`)."""
    lines = buggy.splitlines()
    added, deleted = _line_edits(message)
    for code in deleted:
        for index, line in enumerate(lines):
            if line.strip() == code:
                yield "\n".join(lines[:index] + lines[index + 1 :]) + "\n"
    for code in added:
        yield from itertools.islice(_insertions(buggy, code), MAX_INSERTIONS)


def _line_edits(message: str) -> tuple[list[str], list[str]]:
    """The inline code spans of ``message`` that it says to add, and to delete."""
    added: list[str] = []
    deleted: list[str] = []
    end = 0
    for span in itertools.islice(_INLINE.finditer(message), MAX_SPANS):
        before = message[max(end, span.start() - CUE_CHARS) : span.start()]
        end = span.end()
        code = span.group(1).strip()
        if _DELETE_CUE.search(before):
            deleted.append(code)
        elif _ADD_CUE.search(before):
            added.append(code)
    return added, deleted


def _insertions(buggy: str, code: str) -> Iterator[str]:
    """``buggy`` with the line ``code`` inserted, likeliest places first: each place
    between statements (indented as they are) where every name ``code`` reads is bound
    and a name it binds is read later; before the first read of a name it binds that
    nothing bound before (``count = 0`` for ``count += 1``) first."""
    try:
        tree, new = ast.parse(buggy), ast.parse(code)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return
    if len(new.body) != 1:
        return
    lines = buggy.splitlines()
    flow = _Flow(tree)
    reads, binds = _reads_and_binds(new)
    imports = isinstance(new.body[0], (ast.Import, ast.ImportFrom))
    scored = []
    for index, indent in _insertion_places(tree, lines, module_level=imports):
        score = flow.score(index, reads - flow.always_bound, binds)
        if score is not None:
            scored.append((-score, index, len(indent), indent))
    for _, index, _, indent in sorted(scored):
        yield "\n".join([*lines[:index], indent + code, *lines[index:]]) + "\n"


def _insertion_places(tree: ast.Module, lines: list[str], module_level: bool) -> list[_Place]:
    """``(index, indent)`` of each place a statement may go: before each statement of a
    body (a docstring aside) and after its last one (unless that one leaves the body);
    at the top level only (``module_level``), else inside functions when there are any."""
    functions = [node for node in ast.walk(tree) if isinstance(node, _DEFINITIONS)]
    if module_level or not functions:
        bodies = [tree.body]
    else:
        bodies = [b for f in functions for n in ast.walk(f) for b in _bodies(n)]
    places: dict[_Place, None] = {}
    for body in bodies:
        indent = _indent_of(lines[body[0].lineno - 1])
        for position, statement in enumerate(body):
            if position or not _is_docstring(statement):
                places[(_first_line(statement) - 1, indent)] = None
        last = body[-1]
        if not isinstance(last, (ast.Return, ast.Raise, ast.Continue, ast.Break)):
            places[(last.end_lineno or last.lineno, indent)] = None
    return list(places)


def _bodies(node: ast.AST) -> Iterator[list[ast.stmt]]:
    for field in ("body", "orelse", "finalbody"):
        body = getattr(node, field, None)
        if isinstance(body, list) and body and isinstance(body[0], ast.stmt):
            yield body


def _first_line(statement: ast.stmt) -> int:
    decorators = getattr(statement, "decorator_list", None)
    return min([statement.lineno, *(d.lineno for d in decorators or [])])


def _is_docstring(statement: ast.stmt) -> bool:
    return isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Constant)


def _reads_and_binds(tree: ast.AST) -> tuple[set[str], set[str]]:
    """The names ``tree`` reads and those it binds (``x += 1`` does both)."""
    reads: set[str] = set()
    binds: set[str] = set()
    for _, name, kind in _name_events(tree):
        (reads if kind == "read" else binds).add(name)
    return reads, binds


def _name_events(tree: ast.AST) -> Iterator[tuple[int, str, str]]:
    """``(line, name, "read" or "bind")`` of every name ``tree`` reads or binds."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            yield node.lineno, node.id, "read" if isinstance(node.ctx, ast.Load) else "bind"
        elif isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Name):
            yield node.lineno, node.target.id, "read"
        elif isinstance(node, ast.arg):
            yield node.lineno, node.arg, "bind"
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            yield node.lineno, node.name, "bind"
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            for alias in node.names:
                yield node.lineno, (alias.asname or alias.name).split(".")[0], "bind"


class _Flow:
    """Where a program reads and binds each name, by line, to judge an inserted line."""

    def __init__(self, tree: ast.Module) -> None:
        self.reads: dict[str, list[int]] = {}
        self.binds: dict[str, list[int]] = {}
        for line, name, kind in _name_events(tree):
            (self.reads if kind == "read" else self.binds).setdefault(name, []).append(line)
        top = {n.name for n in tree.body if isinstance(n, (*_DEFINITIONS, ast.ClassDef))}
        for node in tree.body:
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                top |= {(alias.asname or alias.name).split(".")[0] for alias in node.names}
        self.always_bound = _BUILTINS | top  # functions may read them before their line

    def score(self, index: int, reads: set[str], binds: set[str]) -> int | None:
        """How likely a line reading ``reads`` and binding ``binds`` goes before line
        ``index`` (0-based), ``None`` where it cannot: a name it reads is not bound yet,
        or nothing reads what it binds later."""
        if any(all(line > index for line in self.binds.get(name, [])) for name in reads):
            return None
        later = [name for name in binds if any(line > index for line in self.reads.get(name, []))]
        if binds and not later:
            return None
        return sum(2 for name in later if self._unbound_at_first_read(name, index))

    def _unbound_at_first_read(self, name: str, index: int) -> bool:
        """Whether ``name`` is first read (after line ``index``) before anything binds it."""
        first = min(line for line in self.reads[name] if line > index)
        return not any(line < first for line in self.binds.get(name, []))


def _pair_patches(buggy: str, message: str) -> Iterator[str]:
    """``buggy`` with the ``(old, new)`` pairs of ``message`` applied, one pair at a time."""
    for old, new in _pairs(message):
        if old in buggy:
            yield from _replacements(buggy, old, new)


def _replacements(program: str, old: str, new: str) -> Iterator[str]:
    """``program`` with every ``old`` replaced by ``new``, then, when ``old`` occurs more
    than once, with each occurrence replaced alone."""
    yield program.replace(old, new)
    if program.count(old) < 2:
        return
    at = program.find(old)
    while at >= 0:
        yield program[:at] + new + program[at + len(old) :]
        at = program.find(old, at + len(old))


def _numbered_line_patches(lines: list[str], message: str) -> Iterator[str]:
    """``lines`` with line N replaced, for each "line N should be ..." of ``message``."""
    for index, code in _numbered_lines(message, len(lines)).items():
        yield _replace_line(lines, index, code)


def _numbered_lines(message: str, line_count: int) -> dict[int, str]:
    """``{index: code}`` from "line N ..." mentions of ``message`` (N from 1 to
    ``line_count``), the last mention of a line winning."""
    numbered: dict[int, str] = {}
    for match in _LINE_NUMBER.finditer(message):
        number = int(match.group(1))
        code = (match.group(2) or match.group(3) or "").strip().strip("`").rstrip(".")
        if 1 <= number <= line_count and code:
            numbered[number - 1] = code
    return numbered


def _code_lines(blocks: list[str], inline: list[str]) -> list[str]:
    """The message's lines that may replace a buggy line: those of short fenced blocks,
    then the inline spans that look like code, at most :data:`MAX_SPANS`."""
    short = [block for block in blocks if len(block.strip().splitlines()) <= MAX_PATCH_LINES]
    code_lines = [line for block in short for line in block.splitlines() if line.strip()]
    code_lines += [span for span in inline if _looks_like_code(span)]
    return code_lines[:MAX_SPANS]


def _similar_line_patches(lines: list[str], code_lines: list[str]) -> Iterator[str]:
    """``lines`` with each distinct code line put in place of its most similar line, one
    at a time, then (when several lines are swapped) all together."""
    swaps: dict[int, str] = {}
    for code in dict.fromkeys(line.strip() for line in code_lines):
        similar = _most_similar(lines, code)
        if similar is not None:
            swaps.setdefault(similar, code)
            yield _replace_line(lines, similar, code)
    if len(swaps) > 1:
        yield _replace_lines(lines, swaps)


def _pairs(message: str) -> Iterator[tuple[str, str]]:
    """``(old, new)`` from "`X` to `Y`"-like pairs of inline code spans."""
    spans = list(_INLINE.finditer(message))
    for first, second in zip(spans, spans[1:], strict=False):
        between = message[first.end() : second.start()]
        if _PAIR_JOIN.fullmatch(between):
            yield first.group(1), second.group(1)
        elif _INSTEAD_JOIN.fullmatch(between):
            yield second.group(1), first.group(1)


_Hunk = list[tuple[str, str]]
"""A diff hunk's lines as ``(kind, body)``, kind ``"+"``, ``"-"`` or ``" "``."""


def _apply_diff(lines: list[str], text: str) -> str | None:
    """``lines`` with the hunks of a unified diff in ``text`` applied, matched by content
    (``None``: ``text`` has no change, or a hunk does not match)."""
    hunks = _diff_hunks(text)
    if not hunks:
        return None
    patched = list(lines)
    for hunk in hunks:
        applied = _apply_hunk(patched, hunk)
        if applied is None:
            return None
        patched = applied
    return "\n".join(patched) + "\n"


def _diff_hunks(text: str) -> list[_Hunk]:
    """The hunks of a unified diff in ``text`` that change something.  File headers are
    skipped; an ``@@`` line or any other non-blank line ends a hunk."""
    hunks: list[_Hunk] = []
    current: _Hunk = []
    for line in text.splitlines():
        if line.startswith(("---", "+++")):
            continue
        if line.startswith(("+", "-", " ")):
            current.append((line[0], line[1:]))
        elif line.strip():  # "@@" or prose
            hunks.append(current)
            current = []
    hunks.append(current)
    return [hunk for hunk in hunks if any(kind != " " for kind, _ in hunk)]


def _apply_hunk(lines: list[str], hunk: _Hunk) -> list[str] | None:
    """``lines`` with ``hunk`` applied where its old lines are, re-indented to match
    (``None``: they are nowhere, or the hunk only adds lines)."""
    old = [body for kind, body in hunk if kind != "+"]
    new = [body for kind, body in hunk if kind != "-"]
    start = _find_block(lines, old) if old else None
    if start is None:
        return None
    shift = _shift(lines[start], old[0])
    return [
        *lines[:start],
        *(shift + line if line.strip() else line for line in new),
        *lines[start + len(old) :],
    ]


def _find_block(lines: list[str], block: list[str]) -> int | None:
    """Where ``block`` (compared without surrounding whitespace) starts in ``lines``."""
    want = [line.strip() for line in block]
    have = [line.strip() for line in lines]
    for start in range(len(have) - len(want) + 1):
        if have[start : start + len(want)] == want:
            return start
    return None


def _shift(actual: str, written: str) -> str:
    """The indentation to add to a diff's lines so that ``written`` lines up with ``actual``."""
    extra = len(_indent_of(actual)) - len(_indent_of(written))
    return " " * extra if extra > 0 else ""


def _most_similar(lines: list[str], code: str) -> int | None:
    """The line of ``lines`` that ``code`` most likely replaces (``None``: none is close):
    the most similar one, a line that starts with the same word counting as closer."""
    best, best_ratio = None, MIN_LINE_SIMILARITY
    head = _FIRST_WORD.match(code)
    for index, line in enumerate(lines):
        stripped = line.strip()
        if not stripped or stripped == code:
            continue
        ratio = difflib.SequenceMatcher(None, _squash(stripped), _squash(code)).ratio()
        if head and stripped.startswith(head.group()):
            ratio += SAME_START_BONUS
        if ratio > best_ratio:
            best, best_ratio = index, ratio
    return best


def _replace_line(lines: list[str], index: int, code: str) -> str:
    """``lines`` as a program with line ``index`` replaced by ``code``, kept indented."""
    return _replace_lines(lines, {index: code})


def _replace_lines(lines: list[str], replacements: Mapping[int, str]) -> str:
    """``lines`` as a program with each line ``index`` replaced by ``replacements[index]``,
    kept indented."""
    patched = list(lines)
    for index, code in replacements.items():
        patched[index] = _indent_of(lines[index]) + code
    return "\n".join(patched) + "\n"


def _indent_of(line: str) -> str:
    return line[: len(line) - len(line.lstrip())]


def _looks_like_code(span: str) -> bool:
    return bool(re.search(r"[=()\[\]<>+\-*/%:]|\b(?:return|if|for|while|not|and|or)\b", span))


# ------------------------------------------------------------------ filters
def _copied(context: _Context, snippet: str) -> bool:
    """Whether ``snippet`` is code the statement already shows."""
    squashed = _squash(snippet)
    return bool(squashed) and squashed in context.statement


def _runnable(context: _Context, program: str) -> bool:
    """Whether ``program`` compiles and, for function tests, defines the entry point."""
    try:
        tree = ast.parse(program)
        compile(tree, "candidate.py", "exec", dont_inherit=True)
    except (SyntaxError, ValueError, RecursionError, MemoryError, TypeError):
        return False
    return not context.function or _defines(tree, context.entry)


def _normal(program: str) -> str | None:
    """``program`` without formatting or comments (``None``: it does not parse)."""
    try:
        return ast.dump(ast.parse(program))
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None


def _squash(text: str) -> str:
    return re.sub(r"\s+", "", text)


def _returns_outside_functions(tree: ast.Module) -> bool:
    """Whether ``tree`` has a ``return`` that no function of its own encloses (a body)."""
    stack: list[ast.AST] = list(tree.body)
    while stack:
        node = stack.pop()
        if isinstance(node, ast.Return):
            return True
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
            stack.extend(ast.iter_child_nodes(node))
    return False


def _names(node: ast.AST) -> set[str]:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}


def _statement_code(question: str) -> str:
    """The last Python block of the statement (the HumanEval prompt), or ``""``."""
    blocks = _STATEMENT_BLOCK.findall(question)
    return blocks[-1] if blocks else ""


def _split_base(base: str, entry: str) -> tuple[str, str, frozenset[str]]:
    """The statement program's prelude (all but the entry point), the entry point's
    signature lines and its parameter names."""
    try:
        tree = ast.parse(base)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return "", "", frozenset()
    lines = base.splitlines(keepends=True)
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == entry:
            first = node.decorator_list[0].lineno if node.decorator_list else node.lineno
            body_line = node.body[0].lineno
            if body_line <= node.lineno or node.end_lineno is None:
                return "", "", frozenset()
            prelude = "".join(lines[: first - 1] + lines[node.end_lineno :])
            header = "".join(lines[first - 1 : body_line - 1])
            args = node.args
            params = [a.arg for a in [*args.posonlyargs, *args.args, *args.kwonlyargs]]
            params += [a.arg for a in (args.vararg, args.kwarg) if a]
            return prelude, header.rstrip() + "\n", frozenset(params)
    return base, "", frozenset()


# ------------------------------------------------------------------ running
def _outcome(context: _Context, program: str) -> str:
    """``"pass"``, ``"fail"`` or ``"undetermined"`` for ``program``, memoised."""
    key = (context.problem.id, context.key, program)
    with _memo_lock:
        if key in _memo:
            _memo.move_to_end(key)
            return _memo[key]
    outcome = _run(context, program)
    if outcome == "pass" and context.buggy and _run_memo(context, context.buggy) == "pass":
        # The held-out tests miss this bug: only every test tells a fix.
        outcome = _run(context, program, every_test=True)
    if outcome != "unavailable":
        _remember(key, outcome)
    return "undetermined" if outcome == "unavailable" else outcome


def _run_memo(context: _Context, program: str) -> str:
    key = (context.problem.id, context.key, "\0buggy\0" + program)
    with _memo_lock:
        if key in _memo:
            return _memo[key]
    outcome = _run(context, program)
    if outcome != "unavailable":
        _remember(key, outcome)
    return outcome


def _remember(key: tuple[str, str, str], outcome: str) -> None:
    with _memo_lock:
        _memo[key] = outcome
        while len(_memo) > MEMO_SIZE:
            _memo.popitem(last=False)


def _run(context: _Context, program: str, every_test: bool = False) -> str:
    tests = (context.problem.tests or {}) if every_test else context.tests
    try:
        result = run_tests(program, tests)
    except (RuntimeError, OSError):
        return "unavailable"  # the sandbox cannot start here: nothing was checked
    except (ValueError, TypeError):
        return "undetermined"  # malformed tests: nothing can be checked
    if result.passed == result.total:
        return "pass"
    failures = {status for status in result.statuses if status != "passed"}
    return "undetermined" if failures and failures <= _FAILED_WAITING else "fail"


__all__ = ["MAX_CANDIDATES", "recovered_program_verdict"]
