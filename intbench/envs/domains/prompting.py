"""Render the prompt templates of every domain and protocol.

Templates are Jinja2 files under ``templates/``, one folder per protocol
(:data:`PROTOCOL_FOLDERS`: ``monitor``, ``feedback``, ``tutor``, ``judge``,
``variants``, ``analysis``) and ``shared/`` for the partials several
protocols include.  A domain may override any of these files from its own
folder (``Domain.templates``; the built-in ones live in
``templates/domains/<domain>/``): a lookup of ``<domain>/<file>`` tries that
folder first, then the generic file.  ``answer_format.j2`` falls back to the
domain's ``Domain.answer_format`` text.  This also applies to ``{% include %}``
inside templates, so a shared template that includes ``_problem.j2`` picks up
the domain's own problem block.

``<name>.j2`` is the user message and an optional ``<name>.system.j2`` the
system message; :data:`TEMPLATE_NAMES` are read from the files.  Variables
are strict: a template that uses a variable the caller did not pass raises
:class:`PromptTemplateError` naming the domain, template and variable,
instead of silently rendering an empty string.
"""

from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import Any

import jinja2
import jinja2.meta

from intbench.envs.domains import registry
from intbench.records import Problem

TEMPLATE_DIR = Path(__file__).parent / "templates"
"""Where the template files live."""

PROTOCOL_FOLDERS = ("shared", "monitor", "feedback", "tutor", "judge", "variants", "analysis")
"""The folders of generic templates under :data:`TEMPLATE_DIR`."""

ANSWER_FORMAT_FILE = "answer_format.j2"


class PromptTemplateError(ValueError):
    """A template could not be rendered: unknown domain or name, a missing
    variable, or a broken template file.  The message says which."""


def _generic_files() -> dict[str, Path]:
    """Every generic template file by file name (names are unique across folders)."""
    files: dict[str, Path] = {}
    for folder in PROTOCOL_FOLDERS:
        for path in sorted((TEMPLATE_DIR / folder).glob("*.j2")):
            if path.name in files:
                raise PromptTemplateError(f"template {path.name} is in two folders: {path}")
            files[path.name] = path
    return files


GENERIC_FILES = _generic_files()
"""File name -> path of every generic template and partial."""

TEMPLATE_NAMES = tuple(
    name.removesuffix(".j2")
    for name in GENERIC_FILES
    if not name.startswith("_") and not name.endswith(".system.j2")
)
"""Every template that :func:`render` and :func:`render_messages` accept."""


def _override(domain: str, filename: str) -> Path | None:
    """The domain's own version of ``filename``, if its template folder has one."""
    folder = registry.get_domain(domain).templates
    path = None if folder is None else Path(folder) / filename
    return path if path is not None and path.is_file() else None


class _DomainEnvironment(jinja2.Environment):
    """Resolves bare include names relative to the including template's domain.

    ``{% include "_problem.j2" %}`` inside ``<domain>/student_baseline.j2``
    becomes ``<domain>/_problem.j2``, which the loader then finds in the
    domain's folder or among the generic files.
    """

    def join_path(self, template: str, parent: str) -> str:
        if "/" in template:
            return template
        return f"{parent.split('/', 1)[0]}/{template}"


class _DomainLoader(jinja2.BaseLoader):
    """Loads ``<domain>/<file>``: the domain's override, its answer format, or the generic file.

    Each file is parsed once: the tree is compiled, and what it reads (undeclared
    variables, included files) is kept in :attr:`reads` for :func:`_variables_read`."""

    def __init__(self) -> None:
        self.reads: dict[str, tuple[set[str], list[str | None]]] = {}

    def load(self, environment: jinja2.Environment, name: str, globals=None) -> jinja2.Template:
        source, filename, uptodate = self.get_source(environment, name)
        tree = environment.parse(source, name, filename)
        self.reads[name] = (
            jinja2.meta.find_undeclared_variables(tree),
            list(jinja2.meta.find_referenced_templates(tree)),
        )
        code = environment.compile(tree, name, filename)
        return environment.template_class.from_code(
            environment, code, environment.make_globals(globals), uptodate
        )

    def get_source(self, environment: jinja2.Environment, template: str):
        domain, _, filename = template.partition("/")
        path = _override(domain, filename) or GENERIC_FILES.get(filename)
        if path is not None:
            mtime = path.stat().st_mtime
            return (
                path.read_text(encoding="utf-8"),
                str(path),
                lambda: path.stat().st_mtime == mtime,
            )
        if filename == ANSWER_FORMAT_FILE:
            text = registry.get_domain(domain).answer_format
            # Included mid-prompt like a partial file, which ends in a newline.
            source = text if text.endswith("\n") else text + "\n"
            return source, None, lambda: registry.get_domain(domain).answer_format == text
        raise jinja2.TemplateNotFound(template)


def _as_text(value: Any) -> str:
    """Show strings as they are and structured values (ARC grids, lists) as JSON."""
    if isinstance(value, (str, jinja2.Undefined)):
        return str(value)  # str() of a StrictUndefined raises the usual "is undefined" error
    return json.dumps(value, ensure_ascii=False, default=str)


def _grid(value: Any) -> str:
    """Show a grid one JSON row per line, so models can read its shape."""
    if isinstance(value, list) and value and all(isinstance(row, list) for row in value):
        rows = ",\n ".join(json.dumps(row) for row in value)
        return f"[{rows}]"
    return _as_text(value)


@functools.lru_cache(maxsize=1)
def get_environment() -> jinja2.Environment:
    """The one cached Jinja2 environment behind every render."""
    env = _DomainEnvironment(
        loader=_DomainLoader(),
        undefined=jinja2.StrictUndefined,
        autoescape=False,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,  # partials end in a newline, like the line they replace
        # Templates are package (or registered domain) files, fixed for the process:
        # checking each one's mtime at every render cost a stat() per prompt.
        auto_reload=False,
        # A plain dict, not an LRU (a lock and a reorder at every include): the
        # templates are a fixed, small set of files.
        cache_size=-1,
    )
    env.filters["as_text"] = _as_text
    env.filters["grid"] = _grid
    return env


def _exists(domain: str, filename: str) -> bool:
    return filename in GENERIC_FILES or _override(domain, filename) is not None


def _check_domain(domain: str) -> None:
    if not registry.is_registered(domain):
        raise PromptTemplateError(
            f"unknown domain {domain!r}; expected one of {registry.domain_names()}"
        )


def _check_target(domain: str, name: str) -> None:
    _check_domain(domain)
    if name not in TEMPLATE_NAMES:
        raise PromptTemplateError(
            f"unknown prompt template {name!r} (domain {domain!r}); "
            f"available: {', '.join(TEMPLATE_NAMES)}"
        )


@functools.cache
def _variables_read(domain: str, filename: str) -> tuple[str, ...] | None:
    """The variables that ``<domain>/<filename>`` and the files it includes read, or
    ``None`` when an include's name is computed (then nothing is known)."""
    env = get_environment()
    loader = env.loader
    assert isinstance(loader, _DomainLoader)  # get_environment() always sets one
    names: set[str] = set()
    todo, seen = [f"{domain}/{filename}"], set()
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        try:
            env.get_template(name)  # compiled once, for this and every render
        except (jinja2.TemplateNotFound, jinja2.TemplateSyntaxError):
            return None  # rendering reports it
        variables, included = loader.reads[name]
        names |= variables
        for each in included:
            if each is None:
                return None
            todo.append(env.join_path(each, name))
    return tuple(sorted(names - {"domain"}))


@functools.lru_cache(maxsize=4096)
def _render_memo(domain: str, filename: str, read: tuple[tuple[str, Any], ...]) -> str:
    return _render_now(domain, filename, dict(read))


def _render_file(domain: str, filename: str, variables: dict[str, Any]) -> str:
    """The rendered file; memoised by the values of the variables it reads when they
    are plain scalars (a system prompt reads few or none, and every episode renders it)."""
    names = _variables_read(domain, filename)
    if names is not None:
        read = tuple((name, variables[name]) for name in names if name in variables)
        if all(type(value) in _SCALARS for _, value in read):
            return _render_memo(domain, filename, read)
    return _render_now(domain, filename, variables)


_SCALARS = frozenset({str, int, float, bool, type(None)})


def _render_now(domain: str, filename: str, variables: dict[str, Any]) -> str:
    try:
        template = get_environment().get_template(f"{domain}/{filename}")
        return template.render(domain=domain, **variables).strip()
    except jinja2.UndefinedError as exc:
        raise PromptTemplateError(
            f"prompt template {domain}/{filename}: {exc.message} "
            f"(variables passed: {sorted(variables) or 'none'})"
        ) from None
    except jinja2.TemplateNotFound as exc:
        folder = registry.get_domain(domain).templates
        raise PromptTemplateError(
            f"prompt template {domain}/{filename}: file {exc.name!r} not found "
            f"in {folder or 'the domain (no template folder)'} or {TEMPLATE_DIR}"
        ) from None
    except jinja2.TemplateSyntaxError as exc:
        raise PromptTemplateError(
            f"prompt template {domain}/{filename}: syntax error in {exc.name} "
            f"line {exc.lineno}: {exc.message}"
        ) from None


def render(domain: str, name: str, **variables: Any) -> str:
    """Render the user message of template ``name`` for ``domain``.

    Raises:
        PromptTemplateError: unknown domain/name or a variable the template
            needs was not passed (the message names it).
    """
    _check_target(domain, name)
    return _render_file(domain, f"{name}.j2", variables)


def render_system(domain: str, name: str, **variables: Any) -> str | None:
    """Render the system message of ``name`` for ``domain``, or ``None`` if it has none."""
    _check_target(domain, name)
    filename = f"{name}.system.j2"
    if not _exists(domain, filename):
        return None
    return _render_file(domain, filename, variables)


# Student prompts that show a domain's solved example first, each with the
# prompt the example's question is asked in (the protocol's first attempt).
EXAMPLE_PROMPTS = {
    "student_baseline": "student_baseline",
    "student_continue": "student_baseline",
    "student_stop_answer": "student_baseline",
    "feedback_student": "feedback_student",
    "feedback_student_retry": "feedback_student",
}


def render_messages(domain: str, name: str, **variables: Any) -> list[dict[str, str]]:
    """Render ``name`` as chat messages: an optional system message, the domain's solved
    example for a student prompt (:attr:`Domain.student_example`), then the user message."""
    system = render_system(domain, name, **variables)
    messages = [] if system is None else [{"role": "system", "content": system}]
    messages.extend(example_turns(domain, name))
    messages.append({"role": "user", "content": render(domain, name, **variables)})
    return messages


def example_turns(domain: str, name: str) -> list[dict[str, str]]:
    """The user and assistant turns of ``domain``'s solved example in prompt ``name``
    (none for a domain without one, or a prompt that is not a student's attempt)."""
    example = registry.get_domain(domain).student_example
    if example is None or name not in EXAMPLE_PROMPTS:
        return []
    return [dict(turn) for turn in _example_turns(domain, EXAMPLE_PROMPTS[name], example)]


@functools.lru_cache(maxsize=256)
def _example_turns(domain: str, prompt: str, example: tuple[str, str]) -> tuple[dict, dict]:
    """The example's turns, rendered once per domain, prompt and example (every
    student prompt of an episode repeats them)."""
    question, response = example
    problem = Problem(id=f"{domain}/example", domain=domain, question=question, answer="")
    return (
        {"role": "user", "content": render(domain, prompt, problem=problem)},
        {"role": "assistant", "content": response},
    )


def answer_format(domain: str, **variables: Any) -> str:
    """The domain's short instruction on how to write the final answer.

    Code domains adapt it to the problem's test kind, so pass ``problem=``
    when you have one; without it the generic wording is used.
    """
    _check_domain(domain)
    variables.setdefault("problem", None)
    return _render_file(domain, ANSWER_FORMAT_FILE, variables)


__all__ = [
    "PROTOCOL_FOLDERS",
    "TEMPLATE_DIR",
    "TEMPLATE_NAMES",
    "PromptTemplateError",
    "answer_format",
    "example_turns",
    "get_environment",
    "render",
    "render_messages",
    "render_system",
]


def reference_text(problem: Problem) -> str:
    """The reference the judges see: the worked solution and the final answer."""
    parts = []
    if problem.solution:
        parts.append(str(problem.solution).strip())
    if problem.answer is not None:
        answer = problem.answer if isinstance(problem.answer, str) else json.dumps(problem.answer)
        parts.append(f"Final answer: {answer}")
    return "\n\n".join(parts) or "(no reference solution available)"
