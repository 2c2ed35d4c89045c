"""Oracle timing recovery (Int-Bench App. A.2): the three-stage quote search and the
final-answer region of each domain's answer format."""

from __future__ import annotations

import gymnasium as gym
import pytest

import intbench  # noqa: F401  (registers the ids)
from intbench.agents.backends.scripted import ScriptedBackend
from intbench.envs.quotes import final_answer_start, locate_quote
from intbench.records import Problem

TEASER = (
    "Reasoning: It has keys but opens no locks. A piano has keys and no locks. That fits.\n"
    "Answer: a piano\n"
)
LINGUINI = "Reasoning: 'ka' marks the plural, so 'tuka' is dogs.\nAnswer: the dogs run\n"
# A draft block in the reasoning, then the corrected program the verifier runs.
DEBUG = (
    "Reasoning: The draft\n```python\ndef f(x):\n    return x - 1\n```\n"
    "subtracts where it should add.\nHere is the fix.\n"
    "```python\ndef f(x):\n    return x + 1\n```\n"
)
DEBUG_LABELLED = (
    "Reasoning: The loop stops one short.\nAnswer:\n"
    "```python\nfor i in range(n + 1):\n    total += i\n```"
)
ARC_TAGGED = 'Reasoning: Each row is mirrored.\n<answer>\n{"outputs": [[[2, 1]]]}\n</answer>'
ARC_ROWS = "Reasoning: Each row is mirrored, so the output is\n21\n43\n"


@pytest.mark.parametrize(
    "domain,trace,region",
    [
        ("brainteaser", TEASER, "Answer: a piano\n"),
        ("linguini", LINGUINI, "Answer: the dogs run\n"),
        ("debug", DEBUG, "```python\ndef f(x):\n    return x + 1\n```\n"),
        ("codeforces", DEBUG, "```python\ndef f(x):\n    return x + 1\n```\n"),
        ("debug", DEBUG_LABELLED, DEBUG_LABELLED[DEBUG_LABELLED.index("Answer:") :]),
        ("arc", ARC_TAGGED, '<answer>\n{"outputs": [[[2, 1]]]}\n</answer>'),
        ("arc", ARC_ROWS, "21\n43\n"),
    ],
)
def test_the_region_is_the_domains_final_answer(domain, trace, region):
    # The region is the tail of the trace that holds the final answer in the domain's format.
    assert final_answer_start(trace, domain) == len(trace) - len(region)


@pytest.mark.parametrize(
    "domain,trace,inside,before",
    [
        ("brainteaser", TEASER, "Answer: a piano", "keys and no locks. That fits."),
        ("linguini", LINGUINI, "Answer: the dogs", "so 'tuka' is dogs."),
        ("debug", DEBUG, "return x + 1", "return x - 1"),
        ("arc", ARC_TAGGED, "mirrored.\n<answer>", "Each row is mirrored."),
        ("arc", ARC_ROWS, "output is\n21", "mirrored, so the output is"),
    ],
)
def test_a_quote_in_the_final_answer_is_excluded(domain, trace, inside, before):
    excluded = locate_quote(trace, inside, domain)
    assert excluded.excluded == "in_final_answer" and excluded.stage == "exact"
    assert excluded.position == trace.index(inside) + len(inside)
    kept = locate_quote(trace, before, domain)
    assert kept.ok and kept.position == trace.index(before) + len(before)


def test_an_unmarked_text_answer_counts_when_it_opens_with_an_answer_prefix():
    # Without an Answer: line the text verifier grades the last line; "So the answer
    # is ..." there is the final answer.
    trace = "Reasoning: It has keys. It has no locks.\nSo the answer is a piano."
    assert final_answer_start(trace, "brainteaser") == trace.index("So the answer")
    plain = "Reasoning: It has keys. It has no locks.\nMaybe a piano."
    assert final_answer_start(plain, "brainteaser") == len(plain)
    # math grades only boxes and "final answer" lines, so the phrase marks nothing there
    assert final_answer_start(trace, "math") == len(trace)


FLEXIBLE_TRACE = "We check that x+1=2 holds, so x=1.\nThen (a, b) follows. \\boxed{1}"


@pytest.mark.parametrize(
    "quote,end",
    [
        ("that x + 1 = 2 holds", "holds"),  # spaces the trace does not have
        ("so x = 1 . Then ( a ,b )", ")"),  # spaces moved around punctuation, a line break
    ],
)
def test_stage_three_relaxes_whitespace_around_operators(quote, end):
    match = locate_quote(FLEXIBLE_TRACE, quote, "math")
    assert match.ok and match.stage == "flexible_whitespace"
    assert match.position == FLEXIBLE_TRACE.index(end) + len(end)
    spaced = FLEXIBLE_TRACE.replace("x+1=2", "x + 1 = 2")  # and the other way round
    match = locate_quote(spaced, "that x+1=2 holds", "math")
    assert match.ok and match.position == spaced.index("holds") + len("holds")
    # Operators, punctuation and word breaks must all be there.
    for missing in ("that x + 1 2 holds", "that x + 1 = 2 holds;", "so x=1 Then", "tha t x"):
        assert locate_quote(FLEXIBLE_TRACE, missing, "math").excluded == "not_found"


def _teaser_env(trace: str):
    problem = Problem(id="t/0", domain="brainteaser", question="What has keys?", answer="piano")
    student = ScriptedBackend(
        lambda messages: "Answer: piano" if "<update>" in messages[-1]["content"] else trace
    )
    return gym.make(
        "IntBench-BrainTeaser-v0", student=student, problems=[problem], condition="oracle"
    )


@pytest.mark.parametrize(
    "action",
    [
        {"quote": "Answer: a piano", "position": -1},
        {"quote": "", "position": len(TEASER) - 3},
    ],
)
def test_the_env_does_not_apply_an_intervention_in_the_answer_line(tmp_path, monkeypatch, action):
    monkeypatch.setenv("INTBENCH_CACHE", str(tmp_path / "cache"))
    env = _teaser_env(TEASER)
    env.reset(seed=0)
    _, _, done, _, info = env.step({"intervene": 1, "message": "Think of music.", **action})
    intervention = info["record"]["intervention"]
    assert done and intervention["excluded"] == "in_final_answer"
    assert intervention["attempt"] is None and intervention["tau_rel"] is None
