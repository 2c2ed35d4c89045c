"""Templates marked verbatim say what the paper says, read from the papers' text.

The papers' text files sit in ``shared/papers/`` beside the repository
(``../shared/papers`` from its root) or in the folder ``INTBENCH_PAPERS`` names;
without them these tests skip.  The text is compared after normalising what a
PDF extraction changes: runs of whitespace and line breaks, typographic quotes
and dashes, HTML entities.
"""

from __future__ import annotations

import html
import os
import re
from pathlib import Path

import pytest

from intbench.envs.domains.prompting import TEMPLATE_DIR, render, render_messages
from intbench.records import Problem

REPO_ROOT = Path(__file__).resolve().parents[1]
PAPERS = Path(os.environ.get("INTBENCH_PAPERS") or REPO_ROOT.parent / "shared" / "papers")
FEEDBACK_PAPER = "002_e642eb0e7d33e7d3.txt"
INT_BENCH_PAPERS = ("000_7cc9bd9e5f832c3c.txt", "001_f99c9fea79d8b462.txt")

# Lines of verbatim templates that are IntBench's on purpose (docs/FIDELITY.md,
# "Deliberate deviations"): template -> {normalised line: why}.
NOT_IN_THE_PAPER = {
    "analysis/_categorize_context.j2": {
        "<student_reasoning>": "reasoning inside tags (F.7 reasoning and message)",
        "</student_reasoning>": "reasoning inside tags (F.7 reasoning and message)",
        "LLM intervention message: <update>": "message inside tags (F.7 reasoning and message)",
    },
    "feedback/feedback_student_retry.j2": {
        "Your previous": "one message per call shows the history window (feedback prompts across turns)",
        "not accepted.": "one message per call shows the history window (feedback prompts across turns)",
    },
    "feedback/feedback_teacher.j2": {
        "My earlier attempts and the feedback they received:": "the history window in one message",
        "Execution results of my current attempt:": "the execution context of code and grid domains",
    },
    "monitor/teacher_oracle.system.j2": {
        ", (2) the full transcript of the student's reasoning process, (3) the student's final "
        "answer, and (4) whether the student's answer is correct/incorrect.": "teacher_access=False",
        "Quote: <If 'Yes', provide the 5 words in the reasoning transcript immediately preceding "
        "the point where you would intervene in the reasoning transcript (not in the student's "
        "final answer). Format as a single string: \"word1 word2 word3 word4 word5\" If 'No', "
        "leave this blank.>": "Oracle location field label Quote: (the paper's Time:)",
    },
    "monitor/teacher_standard.system.j2": {
        "and portions of the student's reasoning transcript.": "teacher_access=False",
    },
}


def normalise(text: str) -> str:
    """Undo what PDF extraction changes: entities, typographic quotes and dashes, line breaks."""
    text = html.unescape(text)
    for fancy, plain in {"\u2018": "'", "\u2019": "'", "\u201c": '"', "\u201d": '"',
                         "\u2013": "-", "\u2014": "-", "\u2026": "..."}.items():  # fmt: skip
        text = text.replace(fancy, plain)
    return " ".join(text.split())


def paper_text(*names: str) -> str:
    missing = [name for name in names if not (PAPERS / name).is_file()]
    if missing:
        pytest.skip(
            f"the papers' text is not at {PAPERS} (shared/papers beside the repository); "
            "set INTBENCH_PAPERS to the folder holding them"
        )
    return normalise(" ".join((PAPERS / name).read_text(encoding="utf-8") for name in names))


def verbatim_templates() -> list[Path]:
    """Templates whose header says verbatim and that hold text of their own (a system
    prompt that only includes a partial is checked where it is rendered, below)."""
    return sorted(
        path
        for path in TEMPLATE_DIR.rglob("*.j2")
        if "verbatim" in re.match(r"(?s)\{#(.*?)#\}|", path.read_text(encoding="utf-8")).group(0)
        and literal_lines(path.read_text(encoding="utf-8"))
    )


def literal_lines(source: str) -> list[str]:
    """The template's own text, line by line: the header, tags and expressions taken out."""
    body = re.sub(r"(?s)\{#.*?#\}", "", source)
    lines = []
    for segment in re.split(r"(?s)\{%.*?%\}|\{\{.*?\}\}", body):
        lines += [normalise(line) for line in segment.splitlines()]
    return [line for line in lines if len(line) >= 8]  # punctuation and stubs left by tags


def test_the_verbatim_templates_are_found():
    names = {path.relative_to(TEMPLATE_DIR).as_posix() for path in verbatim_templates()}
    assert {"feedback/feedback_student.j2", "feedback/_feedback_rules.j2",
            "monitor/teacher_standard.system.j2", "judge/judge.system.j2"} <= names  # fmt: skip
    assert set(NOT_IN_THE_PAPER) <= names


@pytest.mark.parametrize(
    "path", verbatim_templates(), ids=lambda path: path.relative_to(TEMPLATE_DIR).as_posix()
)
def test_every_line_of_a_verbatim_template_is_the_papers(path):
    source = path.read_text(encoding="utf-8")
    header = source.split("#}", 1)[0]
    names = (FEEDBACK_PAPER,) if "Feedback paper" in header else INT_BENCH_PAPERS
    paper = paper_text(*names)
    allowed = NOT_IN_THE_PAPER.get(path.relative_to(TEMPLATE_DIR).as_posix(), {})
    lines = literal_lines(source)
    assert set(allowed) <= set(lines), "an allowed deviation is no longer in the template"
    missing = [line for line in lines if line not in paper and line not in allowed]
    assert not missing, f"not in the paper: {missing}"


def a8_block(paper: str, start: str, end: str) -> str:
    """The text of App. A.8 between two of its labels."""
    a8 = paper[paper.index("A.8 Prompt Templates") :]
    return a8[a8.index(start) + len(start) : a8.index(end)].strip()


OMNI = Problem(id="omni/0", domain="omni_math", question="{problem}", answer="{answer}",
               solution="{solution}")  # fmt: skip


def test_omni_math_student_prompts_are_a8_word_for_word():
    paper = paper_text(FEEDBACK_PAPER)
    system, initial = render_messages("omni_math", "feedback_student", problem=OMNI)
    assert normalise(system["content"]) == a8_block(paper, "System:", "Initial user prompt:")
    assert normalise(initial["content"]) == a8_block(
        paper, "Initial user prompt:", "Refinement user prompt, feedback condition:"
    )
    turn = [{"index": 1, "attempt": "A1"}]
    with_feedback = render(
        "omni_math", "feedback_student_retry", problem=OMNI, history=turn,
        feedback_text="{teacher_feedback}",
    )  # fmt: skip
    plain = render(
        "omni_math", "feedback_student_retry", problem=OMNI, history=turn, feedback_text=None
    )
    # The A.8 refinement message closes the retry prompt (the window's attempts come before it).
    assert normalise(with_feedback).endswith(
        " "
        + a8_block(
            paper, "Refinement user prompt, feedback condition:", "Refinement user prompt, self"
        )
    )
    assert normalise(plain).endswith(
        " "
        + a8_block(paper, "self-refinement/no-feedback condition:", "Omni-MATH teacher prompts.")
    )


@pytest.mark.parametrize(
    "kind, reference, alternative",
    [
        ("none", None, 0),
        ("answer", "{answer}", 1),
        ("solution", "{solution}", 2),
    ],
)
def test_omni_math_teacher_prompts_are_a8_word_for_word(kind, reference, alternative):
    paper = paper_text(FEEDBACK_PAPER)
    system, user = render_messages(
        "omni_math", "feedback_teacher", problem=OMNI, history=[], latest_attempt="{previous_attempt}",
        execution_context=None, reference=reference, reference_kind=kind,
    )  # fmt: skip
    assert normalise(system["content"]) == a8_block(
        paper, "Shared teacher system prompt.", "Shared teacher output format."
    )
    rules = a8_block(paper, "Shared teacher output format.", "Omni-MATH student prompts.")
    contexts = a8_block(paper, "The reference context is one of:", "A.9")
    one_of = [
        contexts[: contexts.index(" Here is the ground-truth final answer:")],
        contexts[contexts.index("Here is the ground-truth final answer:") : contexts.index(" Here is the ground-truth solution:")],
        contexts[contexts.index("Here is the ground-truth solution:") :],
    ]  # fmt: skip
    initial = a8_block(paper, "Initial teacher user prompt:", "Follow-up teacher user prompt:")
    expected = initial.replace("{reference_context}", one_of[alternative]).replace(
        "{teacher_output_rules}", rules
    )
    assert normalise(user["content"]) == expected
