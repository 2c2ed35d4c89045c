"""Deterministic, AST-based bug injection for debugging problems.

:func:`iter_bugs` enumerates small semantic mutations of one function
(boundary/off-by-one changes, wrong operators, negated conditions, swapped
arguments, wrong variables/constants, removed statements) and yields them in
an order fixed by ``seed``.  Each bug is written back into the *original*
text by replacing only the source span of the mutated node, so comments and
formatting elsewhere survive and the diff to the fix is one small edit.  A
splice is accepted only if re-parsing it gives exactly the mutated tree.

Code inside ``while`` loops is left alone: mutating loop conditions or
counters there tends to produce non-terminating programs, which make slow,
uninformative debugging problems.  Whether a bug is *observable* is decided
by the caller with the tests (see :mod:`intbench.envs.domains.debug`).
"""

from __future__ import annotations

import ast
import copy
import itertools
import random
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

BUG_TYPES = (
    "off_by_one",
    "comparison_boundary",
    "arithmetic_operator",
    "negated_condition",
    "boolean_operator",
    "swapped_arguments",
    "wrong_constant",
    "wrong_variable",
    "wrong_return",
    "removed_statement",
)

_ARITHMETIC_SWAPS: dict[type, type] = {
    ast.Add: ast.Sub,
    ast.Sub: ast.Add,
    ast.Mult: ast.Add,
    ast.Div: ast.Mult,
    ast.FloorDiv: ast.Mod,
    ast.Mod: ast.FloorDiv,
    ast.Pow: ast.Mult,
}
_BOUNDARY_SWAPS: dict[type, type] = {
    ast.Lt: ast.LtE,
    ast.LtE: ast.Lt,
    ast.Gt: ast.GtE,
    ast.GtE: ast.Gt,
}
_NEGATION_SWAPS: dict[type, type] = {
    ast.Eq: ast.NotEq,
    ast.NotEq: ast.Eq,
    ast.In: ast.NotIn,
    ast.NotIn: ast.In,
    ast.Is: ast.IsNot,
    ast.IsNot: ast.Is,
}


@dataclass(frozen=True)
class Bug:
    """One injected bug: its kind, a short description, the buggy program and the line."""

    bug_type: str
    description: str
    code: str
    line: int


@dataclass(frozen=True)
class _Site:
    """A planned mutation: the node's index in ``ast.walk`` order and what to do to it."""

    node_index: int
    bug_type: str
    action: str
    arg: Any = None  # per action: an int to add, (position, delta) or a name


def _op_symbol(op: ast.AST) -> str:
    return {
        ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/", ast.FloorDiv: "//",
        ast.Mod: "%", ast.Pow: "**", ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">=",
        ast.Eq: "==", ast.NotEq: "!=", ast.In: "in", ast.NotIn: "not in", ast.Is: "is",
        ast.IsNot: "is not", ast.And: "and", ast.Or: "or",
    }.get(type(op), type(op).__name__)  # fmt: skip


def _find_function(tree: ast.Module, name: str | None) -> ast.FunctionDef:
    functions = [n for n in tree.body if isinstance(n, ast.FunctionDef)]
    if name is not None:
        functions = [f for f in functions if f.name == name]
    if not functions:
        raise ValueError(f"no top-level function {name!r} to inject bugs into")
    return functions[-1]


def _excluded_ids(function: ast.FunctionDef) -> set[int]:
    """Nodes never mutated: ``while`` subtrees and the docstring."""
    excluded: set[int] = set()
    for node in ast.walk(function):
        if isinstance(node, ast.While):
            excluded.update(id(n) for n in ast.walk(node))
    body = function.body
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
        excluded.update(id(n) for n in ast.walk(body[0]))
    return excluded


def _local_names(function: ast.FunctionDef) -> list[str]:
    """Parameters and assigned names of ``function``, sorted (candidates for wrong_variable)."""
    names = {a.arg for a in function.args.args + function.args.kwonlyargs}
    for node in ast.walk(function):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.add(node.id)
    return sorted(names)


def _int_constant_parents(function: ast.FunctionDef) -> set[int]:
    """Ids of int constants in boundary positions: range() args, indices, +/- operands, comparisons."""
    chosen: set[int] = set()

    def is_int(node: ast.AST) -> bool:
        return (
            isinstance(node, ast.Constant)
            and isinstance(node.value, int)
            and not isinstance(node.value, bool)
        )

    candidates: Sequence[ast.expr | None]
    for node in ast.walk(function):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id == "range"
        ):
            candidates = node.args
        elif isinstance(node, ast.Subscript):
            slice_ = node.slice
            candidates = [slice_.lower, slice_.upper] if isinstance(slice_, ast.Slice) else [slice_]
        elif isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Sub)):
            candidates = [node.left, node.right]
        elif isinstance(node, ast.Compare):
            candidates = [node.left, *node.comparators]
        else:
            continue
        chosen.update(id(c) for c in candidates if c is not None and is_int(c))
    return chosen


def _call_sites(index: int, node: ast.Call, boundary_ints: set[int]) -> list[_Site]:
    """``range(a, b)`` bounds shifted by one (non-literal bounds; literals are handled
    as constants) and the first two arguments of a call swapped."""
    sites = []
    if isinstance(node.func, ast.Name) and node.func.id == "range" and len(node.args) <= 2:
        for position, arg in enumerate(node.args):
            if id(arg) in boundary_ints or isinstance(arg, ast.Starred):
                continue
            sites.append(_Site(index, "off_by_one", "shift_arg", (position, 1)))
            if position == len(node.args) - 1:  # the stop bound: also one short
                sites.append(_Site(index, "off_by_one", "shift_arg", (position, -1)))
    if len(node.args) >= 2:
        first, second = node.args[:2]
        plain = not any(isinstance(a, ast.Starred) for a in (first, second))
        if plain and ast.dump(first) != ast.dump(second):
            sites.append(_Site(index, "swapped_arguments", "swap_args"))
    return sites


def _constant_sites(index, node, boundary_ints, names):
    if id(node) in boundary_ints:
        sites = [_Site(index, "off_by_one", "add", 1)]
        if node.value > 0:
            sites.append(_Site(index, "off_by_one", "add", -1))
        return sites
    if isinstance(node.value, bool):
        return [_Site(index, "wrong_constant", "flip_bool")]
    return []


def _arithmetic_sites(index, node, boundary_ints, names):
    if type(node.op) in _ARITHMETIC_SWAPS:
        return [_Site(index, "arithmetic_operator", "swap_op")]
    return []


def _compare_sites(index, node, boundary_ints, names):
    if len(node.ops) != 1:
        return []
    if type(node.ops[0]) in _BOUNDARY_SWAPS:
        return [_Site(index, "comparison_boundary", "swap_compare")]
    if type(node.ops[0]) in _NEGATION_SWAPS:
        return [_Site(index, "negated_condition", "swap_compare")]
    return []


def _boolop_sites(index, node, boundary_ints, names):
    return [_Site(index, "boolean_operator", "swap_boolop")]


def _condition_sites(index, node, boundary_ints, names):
    if isinstance(node.test, ast.Compare):
        return []  # comparisons are mutated by _compare_sites
    return [_Site(index, "negated_condition", "negate_test")]


def _return_sites(index, node, boundary_ints, names):
    if not isinstance(node.value, ast.Name):
        return []
    others = [n for n in names if n != node.value.id]
    return [_Site(index, "wrong_return", "rename_return", others[0])] if others else []


def _name_sites(index, node, boundary_ints, names):
    if not isinstance(node.ctx, ast.Load) or node.id not in names:
        return []
    others = [n for n in names if n != node.id]
    # The next name in sorted order: deterministic and usually type-compatible enough.
    return [_Site(index, "wrong_variable", "rename", others[0])] if others else []


# Node type -> the mutations planned on it; the first matching type wins.
_SITE_RULES = (
    (ast.Constant, _constant_sites),
    ((ast.BinOp, ast.AugAssign), _arithmetic_sites),
    (ast.Compare, _compare_sites),
    (ast.BoolOp, _boolop_sites),
    ((ast.If, ast.IfExp), _condition_sites),
    (ast.Call, lambda index, node, boundary_ints, _names: _call_sites(index, node, boundary_ints)),
    (ast.Return, _return_sites),
    (ast.Name, _name_sites),
)


def _node_sites(index: int, node: ast.AST, boundary_ints: set[int], names) -> list[_Site]:
    for kind, rule in _SITE_RULES:
        if isinstance(node, kind):
            return rule(index, node, boundary_ints, names)
    return []


def _plan_sites(function: ast.FunctionDef, nodes: list[ast.AST]) -> list[_Site]:
    excluded = _excluded_ids(function)
    boundary_ints = _int_constant_parents(function)
    names = _local_names(function)
    sites: list[_Site] = []
    for index, node in enumerate(nodes):
        if id(node) in excluded:
            continue
        sites += _node_sites(index, node, boundary_ints, names)
        if isinstance(node, (ast.Assign, ast.AugAssign, ast.If, ast.Expr)):
            sites.append(_Site(index, "removed_statement", "remove"))
    return sites


def _apply(node: Any, site: _Site) -> str:
    """Mutate ``node`` in place (a deep copy) and describe the change.

    ``node`` is the one the site was planned on, of a type whose fields its action edits
    (see ``_SITE_RULES``).
    """
    if site.action == "add":
        old = node.value
        node.value = old + site.arg
        return f"constant {old} changed to {node.value}"
    if site.action == "flip_bool":
        node.value = not node.value
        return f"constant {not node.value} changed to {node.value}"
    if site.action == "swap_op":
        old = node.op
        node.op = _ARITHMETIC_SWAPS[type(old)]()
        return f"operator '{_op_symbol(old)}' changed to '{_op_symbol(node.op)}'"
    if site.action == "swap_compare":
        old = node.ops[0]
        new = {**_BOUNDARY_SWAPS, **_NEGATION_SWAPS}[type(old)]()
        node.ops = [new]
        return f"comparison '{_op_symbol(old)}' changed to '{_op_symbol(new)}'"
    if site.action == "swap_boolop":
        old = node.op
        node.op = ast.Or() if isinstance(old, ast.And) else ast.And()
        return f"'{_op_symbol(old)}' changed to '{_op_symbol(node.op)}'"
    if site.action == "negate_test":
        node.test = ast.UnaryOp(op=ast.Not(), operand=node.test)
        return "condition negated"
    if site.action == "shift_arg":
        position, delta = site.arg
        old = node.args[position]
        op = ast.Add() if delta > 0 else ast.Sub()
        node.args[position] = ast.BinOp(left=old, op=op, right=ast.Constant(abs(delta)))
        return f"range bound {ast.unparse(old)} changed to {ast.unparse(node.args[position])}"
    if site.action == "swap_args":
        node.args[0], node.args[1] = node.args[1], node.args[0]
        return "first two arguments swapped"
    if site.action == "rename_return":
        old = node.value.id
        node.value.id = site.arg
        return f"returns {site.arg} instead of {old}"
    if site.action == "rename":
        old = node.id
        node.id = site.arg
        return f"uses {site.arg} instead of {old}"
    raise ValueError(f"unknown mutation action {site.action!r}")


class _Source:
    """Source text with conversions between AST (line, byte column) positions and offsets."""

    def __init__(self, text: str):
        self.data = text.encode("utf-8")
        self.line_starts = [0]
        for line in text.encode("utf-8").splitlines(keepends=True):
            self.line_starts.append(self.line_starts[-1] + len(line))

    def offset(self, line: int, col: int) -> int:
        return self.line_starts[line - 1] + col

    def replace(self, start: int, end: int, text: str) -> str:
        return (self.data[:start] + text.encode("utf-8") + self.data[end:]).decode("utf-8")

    def span(self, node: ast.expr | ast.stmt) -> tuple[int, int]:
        """The offsets where ``node`` starts and ends."""
        end_line, end_col = _end(node)
        return self.offset(node.lineno, node.col_offset), self.offset(end_line, end_col)


def _end(node: ast.expr | ast.stmt) -> tuple[int, int]:
    """The line and column where a parsed node ends (``ast.parse`` sets both)."""
    assert node.end_lineno is not None and node.end_col_offset is not None
    return node.end_lineno, node.end_col_offset


def _remove_statement(source: _Source, node: ast.stmt, parent_body: list) -> str | None:
    """Delete a statement that occupies whole lines; ``None`` if it cannot be cut cleanly."""
    if len(parent_body) < 2:
        return None  # an empty body would not even parse
    node_start, node_end = source.span(node)
    start = source.offset(node.lineno, 0)
    end = source.line_starts[_end(node)[0]]
    before = source.data[start:node_start]
    after = source.data[node_end:end]
    if before.strip() or (after.strip() and not after.strip().startswith(b"#")):
        return None
    return source.replace(start, end, "")


def _parent_bodies(tree: ast.AST) -> dict[int, list]:
    bodies = {}
    for node in ast.walk(tree):
        for name in ("body", "orelse", "finalbody"):
            body = getattr(node, name, None)
            if isinstance(body, list):  # IfExp/Lambda have an expression "body"
                for child in body:
                    bodies[id(child)] = body
    return bodies


def _render(source_text: str, tree: ast.Module, site: _Site) -> tuple[str, str, int] | None:
    """Apply ``site`` to a copy of ``tree`` and splice it into the text; ``None`` if unsafe."""
    mutated = copy.deepcopy(tree)
    # A statement or expression of the kind the site's action edits (see _SITE_RULES).
    node: Any = list(ast.walk(mutated))[site.node_index]
    source = _Source(source_text)
    if site.action == "remove":
        text = _remove_statement(source, node, _parent_bodies(mutated)[id(node)])
        if text is None:
            return None
        _parent_bodies(mutated)[id(node)].remove(node)
        description = f"statement removed: {ast.unparse(node).splitlines()[0]}"
    else:
        description = _apply(node, site)
        start, end = source.span(node)
        replacement = ast.unparse(node)
        if isinstance(node, ast.stmt):
            # Only the header may change; keep the original body text by re-splicing below.
            return _render_statement(source, node, site, description, mutated)
        text = None
        for candidate in (replacement, f"({replacement})"):
            attempt = source.replace(start, end, candidate)
            if _same_tree(attempt, mutated):
                text = attempt
                break
        if text is None:
            return None
        return text, description, node.lineno
    if not _same_tree(text, mutated):
        return None
    return text, description, node.lineno


def _render_statement(
    source: _Source, node: ast.stmt, site: _Site, description: str, mutated: ast.Module
) -> tuple[str, str, int] | None:
    """Statements (``if``, ``return``, ``x += 1``) are edited through their changed child only."""
    if isinstance(node, ast.If) and isinstance(node.test, ast.UnaryOp):  # negate_test
        start, end = source.span(node.test.operand)
        attempt = source.replace(start, end, f"not ({ast.unparse(node.test.operand)})")
    elif isinstance(node, ast.Return) and isinstance(node.value, ast.Name):  # rename_return
        start, end = source.span(node.value)
        attempt = source.replace(start, end, node.value.id)
    elif isinstance(node, ast.AugAssign) and node.lineno == node.end_lineno:
        start, end = source.span(node)
        attempt = source.replace(start, end, ast.unparse(node))
    else:
        return None
    if not _same_tree(attempt, mutated):
        return None
    return attempt, description, node.lineno


def _same_tree(text: str, expected: ast.Module) -> bool:
    try:
        return ast.dump(ast.parse(text)) == ast.dump(expected)
    except SyntaxError:
        return False


def _interleave_types(sites: list[_Site], rng: random.Random) -> list[_Site]:
    """Shuffle, then deal one site per bug type in turn (types in a shuffled order),
    so the first bugs are of different kinds even when one kind has many sites."""
    buckets: dict[str, list[_Site]] = {}
    for site in sites:
        buckets.setdefault(site.bug_type, []).append(site)
    types = sorted(buckets)
    rng.shuffle(types)
    for name in types:
        rng.shuffle(buckets[name])
    dealt = itertools.zip_longest(*(buckets[name] for name in types))
    return [site for round_ in dealt for site in round_ if site is not None]


def iter_bugs(source: str, function: str | None = None, seed: int = 0) -> Iterator[Bug]:
    """Yield the bugs that can be injected into ``function`` (default: the last top-level one).

    The order is a shuffle fixed by ``seed`` and the source text (string seeds
    are stable across processes, unlike ``hash``) that alternates bug types;
    the same inputs always give the same sequence.  Bugs are built lazily.
    """
    tree = ast.parse(source)
    target = _find_function(tree, function)
    nodes = list(ast.walk(tree))
    target_ids = {id(n) for n in ast.walk(target)} - {id(target)}
    sites = [s for s in _plan_sites(target, nodes) if id(nodes[s.node_index]) in target_ids]
    sites = _interleave_types(sites, random.Random(f"{seed}:{function}:{source}"))
    seen: set[str] = set()
    for site in sites:
        rendered = _render(source, tree, site)
        if rendered is None or rendered[0] in seen or rendered[0] == source:
            continue
        seen.add(rendered[0])
        text, description, line = rendered
        yield Bug(bug_type=site.bug_type, description=description, code=text, line=line)
