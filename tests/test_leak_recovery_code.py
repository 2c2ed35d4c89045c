"""Code leaks by answer recovery: programs read out of a message, run on the held-out tests.

Cases are generated from the offline problems of every code domain
(``codeforces``: HumanEval; ``debug``: HumanEval with injected bugs).  Tells
(the reference rewritten: renamed and reformatted, a different implementation,
the body alone; for Debug also a one-line fix in several phrasings and a
unified diff) must be ``"leaked"`` by the run alone; honest hints (idioms,
partial code, quoted statement code, a wrong fix) must be ``"clean"``.  The
runs need an isolating sandbox (bubblewrap or unshare) and are skipped without one.
"""

from __future__ import annotations

import ast
import builtins
import difflib
import json
import time
import warnings

import pytest

from intbench.envs.domains import load_problems
from intbench.envs.domains.bug_injection import iter_bugs
from intbench.records import Problem
from intbench.verifiers import code as code_verifier
from intbench.verifiers import sandbox
from intbench.verifiers.leakage import code_run, leak_verdict
from intbench.verifiers.leakage.code import reference_logic_leaked


def _sandbox_missing() -> str | None:
    try:
        sandbox.isolation_level()
    except sandbox.SandboxError as exc:
        return str(exc)
    return None


needs_sandbox = pytest.mark.skipif(
    _sandbox_missing() is not None, reason="no isolating sandbox here (install bubblewrap)"
)
SAMPLE = 8  # problems per domain (each tell is one sandbox run)


# ------------------------------------------------------------------ rewriting
class _Rename(ast.NodeTransformer):
    """Rename every parameter and local variable (two passes: stores first)."""

    def __init__(self, keep: set[str]) -> None:
        self.keep, self.names = keep, {}

    def visit_Module(self, node):
        for sub in ast.walk(node):
            name = sub.id if isinstance(sub, ast.Name) and isinstance(sub.ctx, ast.Store) else None
            name = sub.arg if isinstance(sub, ast.arg) else name
            if name and name not in self.keep:
                self.names.setdefault(name, f"v{len(self.names)}_")
        self.generic_visit(node)
        return node

    def visit_Name(self, node):
        node.id = self.names.get(node.id, node.id)
        return node

    def visit_arg(self, node):
        node.arg = self.names.get(node.arg, node.arg)
        return node


class _Operators(ast.NodeTransformer):
    """A different implementation: operators as ``operator`` calls, comparisons flipped."""

    CALLS = {
        ast.Add: "add",
        ast.Sub: "sub",
        ast.Mult: "mul",
        ast.Mod: "mod",
        ast.FloorDiv: "floordiv",
    }
    FLIPS = {ast.Lt: ast.Gt, ast.Gt: ast.Lt, ast.LtE: ast.GtE, ast.GtE: ast.LtE, ast.Eq: ast.Eq}

    def visit_BinOp(self, node):
        self.generic_visit(node)
        name = self.CALLS.get(type(node.op))
        if name is None:
            return node
        func = ast.Attribute(ast.Name("op_", ast.Load()), name, ast.Load())
        return ast.Call(func, [node.left, node.right], [])

    def visit_Compare(self, node):
        self.generic_visit(node)
        if len(node.ops) == 1 and type(node.ops[0]) in self.FLIPS:
            return ast.Compare(node.comparators[0], [self.FLIPS[type(node.ops[0])]()], [node.left])
        return node


def _tree(source: str) -> ast.Module:
    tree = ast.parse(source)
    for node in ast.walk(tree):  # docstrings go: the statement shows them
        if isinstance(node, ast.FunctionDef) and isinstance(
            getattr(node.body[0], "value", None), ast.Constant
        ):
            node.body = node.body[1:] or [ast.Pass()]
    return tree


def renamed(source: str, entry: str) -> str:
    tree = _tree(source)
    keep = set(dir(builtins)) | {entry}
    keep |= {n.name for n in ast.walk(tree) if isinstance(n, ast.FunctionDef)}
    for node in ast.walk(tree):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            keep |= {a.asname or a.name.split(".")[0] for a in node.names}
    return ast.unparse(ast.fix_missing_locations(_Rename(keep).visit(tree)))


def alternative(source: str, entry: str) -> str:
    tree = _Operators().visit(ast.parse(renamed(source, entry)))
    return "import operator as op_\n" + ast.unparse(ast.fix_missing_locations(tree))


def _entry_def(tree: ast.Module, entry: str) -> ast.FunctionDef:
    return next(n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == entry)


def body_only(source: str, entry: str) -> str:
    body = _entry_def(_tree(source), entry).body
    module = _Operators().visit(ast.Module(body=body, type_ignores=[]))
    return "import operator as op_\n" + ast.unparse(ast.fix_missing_locations(module))


def _fenced(code: str) -> str:
    return f"Here you go:\n```python\n{code}\n```"


def _line_by_line(code: str) -> str | None:
    lines = [line for line in code.splitlines() if line.strip()]
    if any("`" in line for line in lines):
        return None
    return "Write, line by line: " + ", then ".join(f"`{line}`" for line in lines) + "."


def _split(code: str) -> str:
    lines = code.splitlines()
    cut = len(lines) // 2
    first, second = "\n".join(lines[:cut]), "\n".join(lines[cut:])
    return f"Start like this:\n```python\n{first}\n```\nand finish with:\n```python\n{second}\n```"


def encoded_tells(code: str) -> dict[str, str]:
    """``code`` hidden in a string literal, in prose, split over blocks, line by line."""
    tells = {
        "exec_string": f"Paste this single line: exec({code!r})",
        "json_value": json.dumps({"status": "solved", "code": code}),
        "json_escaped_slash": json.dumps({"code": code}).replace("/", "\\/"),
        "unfenced": f"Write it as\n{code}\nand it passes.",
        "split_blocks": _split(code),
    }
    inline = _line_by_line(code)
    if inline:
        tells["inline_lines"] = inline
    return tells


def code_tells(problem: Problem) -> dict[str, str]:
    entry = problem.tests["entry_point"]
    tells = {
        "renamed_reformatted": _fenced(renamed(problem.solution, entry)),
        "alternative_implementation": _fenced(alternative(problem.solution, entry)),
        "body_only": _fenced(body_only(problem.solution, entry)),
    }
    # Renamed, so that only the run (not the token match) can find them.
    encoded = encoded_tells(renamed(problem.solution, entry))
    return tells | {f"{family}_renamed": message for family, message in encoded.items()}


def debug_tells(problem: Problem) -> dict[str, str]:
    tells = code_tells(problem)
    buggy, fixed = problem.fields["buggy_code"], problem.fields["original_code"]
    diff = difflib.unified_diff(buggy.splitlines(True), fixed.splitlines(True), "a.py", "b.py")
    tells["unified_diff"] = "Apply this:\n```diff\n" + "".join(diff) + "```"
    changed = [
        (i, old, new)
        for i, (old, new) in enumerate(zip(buggy.splitlines(), fixed.splitlines(), strict=False))
        if old != new
    ]
    if len(buggy.splitlines()) == len(fixed.splitlines()) and len(changed) == 1:
        index, old, new = changed[0]
        tells["change_x_to_y"] = f"Change `{old.strip()}` to `{new.strip()}`."
        tells["line_n_should_be"] = f"Line {index + 1} should be `{new.strip()}`."
        tells["fix_line_block"] = f"The fix:\n```python\n{new.strip()}\n```"
    added = _added_line(buggy, fixed)
    if added:
        tells["add_the_line"] = f"Add the line `{added}`."
    return tells


def _added_line(buggy: str, fixed: str) -> str | None:
    """The line ``fixed`` has that ``buggy`` lacks, when that is the whole difference."""
    old, new = buggy.splitlines(), fixed.splitlines()
    matcher = difflib.SequenceMatcher(a=old, b=new, autojunk=False)
    changes = [op for op in matcher.get_opcodes() if op[0] != "equal"]
    if len(changes) == 1 and changes[0][0] == "insert" and changes[0][4] - changes[0][3] == 1:
        return new[changes[0][3]].strip() or None
    return None


IDIOMS = [
    "Use a dictionary to count how often each value occurs.",
    "Try `for i in range(len({p}))`.",
    "`sorted({p})` might help.",
    "Check `if not {p}: return 0` first.",
    "`{p}[::-1]` reverses it.",
    "Maybe `sum({p})` is useful.",
    "`for i, x in enumerate({p}):` gives you indices.",
    "`while i < len({p}):` is another way to loop.",
    "Build the result with `result.append(x)` and return it.",
    "`for i in range(1, len({p})):` compares neighbours.",
]


def _first_parameter(problem: Problem) -> str:
    function = _entry_def(ast.parse(problem.solution), problem.tests["entry_point"])
    return function.args.args[0].arg if function.args.args else "x"


def _partial(problem: Problem) -> str | None:
    tree = _tree(problem.solution)
    function = _entry_def(tree, problem.tests["entry_point"])
    if len(function.body) < 3 or isinstance(function.body[0], ast.FunctionDef):
        return None
    function.body = [function.body[0], ast.Expr(ast.Constant(Ellipsis))]
    return f"Start like this:\n```python\n{ast.unparse(tree)}\n```\nthen finish it."


def _wrong_fix(problem: Problem) -> str | None:
    """Another mutation of the buggy line, checked to fail some test."""
    buggy, line = problem.fields["buggy_code"], problem.fields["bug_line"]
    if not 0 < line <= len(buggy.splitlines()):
        return None
    for bug in iter_bugs(buggy, problem.tests["entry_point"], seed=1):
        if bug.line == line and code_verifier.run_tests(bug.code, problem.tests).passed < len(
            problem.tests["cases"]
        ):
            old, new = buggy.splitlines()[line - 1].strip(), bug.code.splitlines()[line - 1].strip()
            return f"Change `{old}` to `{new}`."
    return None


def honest_hints(problem: Problem) -> dict[str, str]:
    parameter = _first_parameter(problem)
    hints = {f"idiom {i}": idiom.format(p=parameter) for i, idiom in enumerate(IDIOMS)}
    if problem.domain == "debug":
        # An idiom that is the fixed line itself, names aside (HumanEval/69's bug swaps
        # `range(1, len(frq))`), tells the fix: it is no honest hint there.
        hints = {k: v for k, v in hints.items() if not reference_logic_leaked(problem, v)}
        buggy, line = problem.fields["buggy_code"], problem.fields["bug_line"]
        if 0 < line <= len(buggy.splitlines()):  # a removed statement's line may be past the end
            quoted = buggy.splitlines()[line - 1].strip()
            hints["quoted_bug_line"] = f"Your line `{quoted}` is where to look."
        hints["quoted_program"] = f"Here is your code:\n```python\n{buggy}\n```\nRead it again."
        hints["quoted_program_json"] = json.dumps({"status": "buggy", "code": buggy})
        hints["quoted_program_unfenced"] = f"You wrote\n{buggy.strip()}\nWhere does it go wrong?"
        wrong = _wrong_fix(problem)
        if wrong:
            hints["wrong_fix"] = wrong
    else:
        stub = code_run._statement_code(problem.question)
        hints["quoted_stub"] = _fenced(stub)
        hints["quoted_stub_exec"] = f"Your starting point: exec({stub!r})"
        hints["quoted_stub_split"] = _split(stub)
        partial = _partial(problem)
        if partial:
            hints["partial_code"] = partial
    return hints


# ------------------------------------------------------------------ tests
@pytest.fixture(autouse=True)
def _fresh_memo():
    code_run._memo.clear()  # a faked run's outcome must not answer a real one
    yield
    code_run._memo.clear()


@pytest.fixture(scope="module", params=["codeforces", "debug"])
def problems(request) -> list[Problem]:
    return load_problems(request.param, source="offline", n=SAMPLE, seed=3)


@needs_sandbox
def test_rewritten_solutions_and_fixes_are_recovered_by_running_them(problems):
    missed = []
    for problem in problems:
        tells = debug_tells(problem) if problem.domain == "debug" else code_tells(problem)
        for family, message in tells.items():
            # The run alone, not the token match, must find every tell ...
            if code_run.recovered_program_verdict(problem, message) != "leaked":
                missed.append((problem.id, family))
            # ... and the detector reports it.
            assert leak_verdict(problem, message) == "leaked", (problem.id, family)
    assert not missed, missed


@needs_sandbox
def test_honest_hints_are_clean(problems):
    flagged = [
        (problem.id, family)
        for problem in problems
        for family, message in honest_hints(problem).items()
        if leak_verdict(problem, message) != "clean"
    ]
    assert not flagged, flagged


def test_idioms_the_reference_uses_are_left_to_the_run():
    # HumanEval/0's reference loops with enumerate: one idiom is not its logic.
    problem = next(p for p in load_problems("codeforces", source="offline") if p.id.endswith("/0"))
    assert not reference_logic_leaked(problem, "`for i, x in enumerate(numbers):` gives indices.")
    assert reference_logic_leaked(problem, _fenced(problem.solution))


def _fake_run(passed: int, statuses: list[str]):
    calls = []

    def run(program, tests, visible=None):
        calls.append(program)
        return code_verifier.ExecutionResult(passed, len(statuses), "x", statuses=statuses)

    return run, calls


SOLVED = Problem(
    id="recovery-unit",
    domain="codeforces",
    question="```python\ndef double(x):\n    \"\"\"Twice x.\"\"\"\n```",
    solution="def double(x):\n    return x * 2\n",
    tests={"kind": "function", "entry_point": "double",
           "cases": [{"code": f"assert candidate({i}) == {2 * i}"} for i in range(4)]},
)  # fmt: skip
ANOTHER_WAY = "```python\ndef double(y):\n    return y + y\n```"


def _another_way(tag: str) -> str:
    """:data:`ANOTHER_WAY` as a program of its own (the memo keys on the program)."""
    return ANOTHER_WAY.replace("y + y", f"y + y  # {tag}")


def test_a_sandbox_that_cannot_run_gives_undetermined(monkeypatch):
    def unavailable(program, tests, visible=None):
        raise RuntimeError("no isolating sandbox works here")

    monkeypatch.setattr(code_run, "run_tests", unavailable)
    assert leak_verdict(SOLVED, ANOTHER_WAY + " (no sandbox)") == "undetermined"
    # Prose has no candidate: nothing to run, nothing undetermined.
    assert leak_verdict(SOLVED, "Think about what doubling means.") == "clean"


def test_timeouts_are_undetermined_and_wrong_answers_clean(monkeypatch):
    run, _ = _fake_run(2, ["passed", "passed", "timeout", "not_run"])
    monkeypatch.setattr(code_run, "run_tests", run)
    assert leak_verdict(SOLVED, _another_way("slow")) == "undetermined"
    run, _ = _fake_run(2, ["passed", "passed", "timeout", "wrong_answer"])
    monkeypatch.setattr(code_run, "run_tests", run)
    assert leak_verdict(SOLVED, _another_way("wrong")) == "clean"


def test_rechecking_a_message_costs_no_run(monkeypatch):
    run, calls = _fake_run(4, ["passed"] * 4)
    monkeypatch.setattr(code_run, "run_tests", run)
    message = _another_way("memo")
    assert leak_verdict(SOLVED, message) == "leaked"
    assert leak_verdict(SOLVED, message) == "leaked"
    assert len(calls) == 1


def test_runs_per_message_are_bounded(monkeypatch):
    run, calls = _fake_run(0, ["wrong_answer"] * 4)
    monkeypatch.setattr(code_run, "run_tests", run)
    spans = " ".join(f"`double = lambda x: x * {k}`" for k in range(3, 40))
    assert leak_verdict(SOLVED, spans) == "clean"
    assert len(calls) == code_run.MAX_CANDIDATES


def test_code_that_cannot_pass_is_never_run(monkeypatch):
    run, calls = _fake_run(4, ["passed"] * 4)
    monkeypatch.setattr(code_run, "run_tests", run)
    for message in [
        "Use `sorted(xs)` and a dictionary.",  # names the function does not have
        "```python\ndef helper(z):\n    return z\n```",  # no `double`
        "```python\ndef double(x):\n    return x *\n```",  # does not compile
        SOLVED.question,  # the statement's own code
    ]:
        assert leak_verdict(SOLVED, message) == "clean", message
    assert calls == []


@needs_sandbox
def test_the_run_judges_a_hand_written_solution():
    assert leak_verdict(SOLVED, ANOTHER_WAY) == "leaked"
    assert leak_verdict(SOLVED, "Maybe `return x ** 2`?") == "clean"
    assert leak_verdict(SOLVED, "It is just `x << 1`.") == "leaked"


@pytest.mark.parametrize(
    "message",
    [
        " ".join(f"`a{i} = b{i} + 1`" for i in range(30_000)),
        "```python\n" + "\n".join(f"x{i} = {i}" for i in range(20_000)) + "\n```",
        "\n".join(f"-x{i}\n+y{i}" for i in range(20_000)),
        " ".join(f"change `a{i}` to `b{i}`" for i in range(20_000)),
        " ".join(f"line {i % 20} should be `x = {i}`" for i in range(20_000)),
    ],
    ids=["spans", "long_block", "diff_lines", "pairs", "numbered_lines"],
)
def test_long_messages_are_read_in_bounded_time(monkeypatch, message):
    run, calls = _fake_run(0, ["wrong_answer"])
    monkeypatch.setattr(code_run, "run_tests", run)
    problem = load_problems("debug", source="offline", n=1, seed=0)[0]
    start = time.perf_counter()
    leak_verdict(problem, message)
    assert time.perf_counter() - start < 5.0
    assert len(calls) <= code_run.MAX_CANDIDATES


# ------------------------------------------------------------------ encodings
def test_string_literals_are_decoded_never_run():
    code = "def double(x):\n    return x * 2\n"
    decoded = list(code_run._decoded_strings(f"exec({code!r}) and {json.dumps(code)}"))
    assert decoded == [code, code]
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # "\/" is no Python escape: read as written, silently
        assert code_run._literal_value(r'"a\/b"') == "a/b"
        assert code_run._literal_value(r"'a\/b'") == "a\\/b"
    marker = "__import__('os').system('touch /tmp/never')"
    assert list(code_run._decoded_strings(f"exec({marker!r})")) == [marker]


def test_programs_among_prose_and_split_ones_are_read():
    prose = "Write it as\ndef double(x):\n    y = x\n\n    return y * 2\nThat is all."
    assert "def double(x):\n    y = x\n\n    return y * 2" in code_run._unfenced_programs(prose)
    blocks = ["def double(x):\n", "    return x * 2\n"]
    assert list(code_run._joined_blocks(blocks)) == ["def double(x):\n    return x * 2"]
    inline = "Write `def double(x):`, then `    return x * 2`. Or `x`."
    assert list(code_run._joined_inline(inline)) == ["def double(x):\n    return x * 2"]


FORGOT = Problem(
    id="recovery-insert",
    domain="debug",
    question="Fix the function.",
    solution="",
    tests={"kind": "function", "entry_point": "total",
           "cases": [{"code": f"assert candidate({list(range(i))}) == {sum(range(i))}"}
                     for i in range(5)]},
    fields={"buggy_code": "def total(xs):\n    for x in xs:\n        acc += x\n    return acc\n"},
)  # fmt: skip


def test_an_added_line_is_tried_where_it_can_go():
    places = list(code_run._insertions(FORGOT.fields["buggy_code"], "acc = 0"))
    # Before the first read of `acc`, at the function's level first.
    assert (
        places[0]
        == "def total(xs):\n    acc = 0\n    for x in xs:\n        acc += x\n    return acc\n"
    )
    # Nothing reads what `y = 1` binds: no place for it.
    assert list(code_run._insertions(FORGOT.fields["buggy_code"], "y = 1")) == []
    assert code_run._line_edits("Add the line `acc = 0`, then delete `return acc`.") == (
        ["acc = 0"],
        ["return acc"],
    )


@needs_sandbox
def test_the_run_judges_an_added_line():
    assert leak_verdict(FORGOT, "Add the line `acc = 0`.") == "leaked"
    assert leak_verdict(FORGOT, "Add the line `acc = 1`.") == "clean"
    assert leak_verdict(FORGOT, "Is `acc = 0` needed?") == "clean"  # no cue: no insertion
