"""Render the prompt templates of every domain and protocol.

Templates are Jinja2 files under ``templates/``: ``common/`` holds the shared
versions and ``<domain>/`` the files where a domain differs (its answer
format, how its problem is shown, the solver persona, ...).  A lookup of
``<domain>/<file>`` falls back to ``common/<file>``, and this also applies to
``{% include %}`` inside templates, so a shared template that includes
``_problem.j2`` picks up the domain's own problem block.

``<name>.j2`` is the user message and an optional ``<name>.system.j2`` the
system message.  Variables are strict: a template that uses a variable the
caller did not pass raises :class:`PromptTemplateError` naming the domain,
template and variable, instead of silently rendering an empty string.
"""

from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import Any

import jinja2

from intbench.records import DOMAINS

TEMPLATE_DIR = Path(__file__).parent / "templates"
"""Where the template files live."""

TEMPLATE_NAMES = (
    # monitor protocol (Int-Bench)
    "student_baseline",
    "teacher_standard",
    "teacher_standard_v2",
    "teacher_standard_v3",
    "teacher_standard_append",
    "teacher_oracle",
    "student_continue",
    "student_stop_answer",
    "judge",
    # feedback protocol
    "feedback_student",
    "feedback_student_retry",
    "feedback_teacher",
    "feedback_self_feedback",
    # generalization to variant problems
    "variant_no_context",
    "variant_problem_context",
    "variant_intervention_context",
    # variant pipeline
    "skill_extract",
    "skill_cluster",
    "variant_generate",
    "variant_validate",
    # intervention categorisation and leakage audit
    "categorize_label",
    "categorize_cluster",
    "categorize_relabel",
    "leakage_judge",
    # tutor protocol (KITE)
    "tutor_student_ideation",
    "tutor_teacher_ideation",
    "tutor_checker",
    "tutor_solve",
)
"""Every template that :func:`render` and :func:`render_messages` accept."""


class PromptTemplateError(ValueError):
    """A template could not be rendered: unknown domain or name, a missing
    variable, or a broken template file.  The message says which."""


class _DomainEnvironment(jinja2.Environment):
    """Resolves bare include names relative to the including template's domain.

    ``{% include "_problem.j2" %}`` inside ``arc/student_baseline.j2`` becomes
    ``arc/_problem.j2``, which the loader then finds in ``arc/`` or ``common/``.
    """

    def join_path(self, template: str, parent: str) -> str:
        if "/" in template:
            return template
        return f"{parent.split('/', 1)[0]}/{template}"


class _FallbackLoader(jinja2.BaseLoader):
    """Loads ``<domain>/<file>`` from the domain folder, else from ``common/``."""

    def __init__(self, root: Path) -> None:
        self._files = jinja2.FileSystemLoader(str(root))

    def get_source(self, environment: jinja2.Environment, template: str):
        domain, _, filename = template.partition("/")
        for folder in dict.fromkeys((domain, "common")):
            try:
                return self._files.get_source(environment, f"{folder}/{filename}")
            except jinja2.TemplateNotFound:
                continue
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
        loader=_FallbackLoader(TEMPLATE_DIR),
        undefined=jinja2.StrictUndefined,
        autoescape=False,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,  # partials end in a newline, like the line they replace
    )
    env.filters["as_text"] = _as_text
    env.filters["grid"] = _grid
    return env


@functools.cache
def _exists(domain: str, filename: str) -> bool:
    return (TEMPLATE_DIR / domain / filename).is_file() or (
        TEMPLATE_DIR / "common" / filename
    ).is_file()


def _check_target(domain: str, name: str) -> None:
    if domain not in DOMAINS:
        raise PromptTemplateError(f"unknown domain {domain!r}; expected one of {DOMAINS}")
    if name not in TEMPLATE_NAMES:
        raise PromptTemplateError(
            f"unknown prompt template {name!r} (domain {domain!r}); "
            f"available: {', '.join(TEMPLATE_NAMES)}"
        )


def _render_file(domain: str, filename: str, variables: dict[str, Any]) -> str:
    try:
        template = get_environment().get_template(f"{domain}/{filename}")
        return template.render(domain=domain, **variables).strip()
    except jinja2.UndefinedError as exc:
        raise PromptTemplateError(
            f"prompt template {domain}/{filename}: {exc.message} "
            f"(variables passed: {sorted(variables) or 'none'})"
        ) from None
    except jinja2.TemplateNotFound as exc:
        raise PromptTemplateError(
            f"prompt template {domain}/{filename}: file {exc.name!r} not found "
            f"in {TEMPLATE_DIR / domain} or {TEMPLATE_DIR / 'common'}"
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


def render_messages(domain: str, name: str, **variables: Any) -> list[dict[str, str]]:
    """Render ``name`` as chat messages: an optional system message, then the user message."""
    system = render_system(domain, name, **variables)
    messages = [] if system is None else [{"role": "system", "content": system}]
    messages.append({"role": "user", "content": render(domain, name, **variables)})
    return messages


def answer_format(domain: str, **variables: Any) -> str:
    """The domain's short instruction on how to write the final answer.

    Code domains adapt it to the problem's test kind, so pass ``problem=``
    when you have one; without it the generic wording is used.
    """
    if domain not in DOMAINS:
        raise PromptTemplateError(f"unknown domain {domain!r}; expected one of {DOMAINS}")
    variables.setdefault("problem", None)
    return _render_file(domain, "answer_format.j2", variables)


__all__ = [
    "TEMPLATE_DIR",
    "TEMPLATE_NAMES",
    "PromptTemplateError",
    "answer_format",
    "get_environment",
    "render",
    "render_messages",
    "render_system",
]
