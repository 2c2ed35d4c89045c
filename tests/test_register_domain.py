"""A domain defined outside the package (tests/third_party_domain.py) joins with
``intbench.register_domain``: its envs pass Gymnasium's checker, ``intbench
eval`` and ``intbench report`` run on it, and unknown domains are errors."""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
from pathlib import Path

import gymnasium as gym
import pytest
from gymnasium.utils.env_checker import check_env

import intbench
from intbench.agents.backends.scripted import ScriptedBackend
from intbench.envs.domains import get_domain, load_problems, registry
from intbench.envs.domains.prompting import (
    TEMPLATE_NAMES,
    PromptTemplateError,
    answer_format,
    render_messages,
)
from intbench.envs.registration import all_env_ids, env_id, register_domain
from intbench.records import Problem

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def domain():
    from tests import third_party_domain

    return third_party_domain


def test_registration_adds_the_domain_and_its_ids(domain):
    assert get_domain("reverse_word") is domain.DOMAIN
    assert "reverse_word" in intbench.records.DOMAINS
    ids = [env_id("reverse_word", protocol) for protocol in ("monitor", "feedback", "tutor")]
    assert ids == [
        "IntBench-ReverseWord-v0",
        "IntBench-ReverseWord-Feedback-v0",
        "IntBench-ReverseWord-Tutor-v0",
    ]
    assert set(ids) <= set(all_env_ids()) and all(name in gym.registry for name in ids)
    assert register_domain(domain.DOMAIN) is domain.DOMAIN  # the same object again: no-op


def test_a_clashing_domain_is_refused(domain):
    with pytest.raises(ValueError, match="clashes"):
        register_domain(dataclasses.replace(domain.DOMAIN))
    with pytest.raises(ValueError, match="clashes"):
        register_domain(dataclasses.replace(domain.DOMAIN, name="reverse_word_2"))
    with pytest.raises(ValueError, match="kind"):
        dataclasses.replace(domain.DOMAIN, name="other", kind="audio")


def test_problems_verify_and_vary(domain):
    problems = load_problems("reverse_word", n=3, seed=1)
    problem = problems[0]
    assert intbench.verify(problem, domain.reverser([{"content": problem.question}])).correct
    assert not intbench.verify(problem, "Answer: nope").correct
    from intbench.generalization.procedural import procedural_variants

    result = procedural_variants(problems, n=2)
    assert len(result.variants) == 6 and not any(entry["dropped"] for entry in result.log)


@pytest.mark.parametrize("name", TEMPLATE_NAMES)
def test_every_template_renders_with_the_generic_files(domain, name):
    from tests.test_prompts import template_vars

    problem = load_problems("reverse_word", n=1)[0]
    messages = render_messages("reverse_word", name, **template_vars(name, problem))
    assert messages[-1]["content"]


def test_answer_format_and_template_overrides(domain, tmp_path):
    problem = load_problems("reverse_word", n=1)[0]
    text = render_messages("reverse_word", "student_baseline", problem=problem)[-1]["content"]
    assert answer_format("reverse_word") == domain.DOMAIN.answer_format and text.endswith(
        domain.DOMAIN.answer_format
    )
    (tmp_path / "_solver_role.j2").write_text("You are a careful speller.\n")
    (tmp_path / "answer_format.j2").write_text("Reply with the word reversed.\n")
    styled = register_domain(
        dataclasses.replace(
            domain.DOMAIN, name="reverse_styled", env_name="ReverseStyled", templates=tmp_path
        )
    )
    try:
        copy = Problem(**{**problem.to_dict(), "domain": styled.name})
        messages = render_messages(styled.name, "student_baseline", problem=copy)
        assert messages[0]["content"].startswith("You are a careful speller.")
        assert messages[-1]["content"].endswith("Reply with the word reversed.")
    finally:  # its templates go with tmp_path: later tests must not see its env ids
        registry._REGISTRY.pop(styled.name)
        for id_ in [i for i in gym.envs.registry if "ReverseStyled" in i]:
            del gym.envs.registry[id_]


def test_unknown_domains_are_errors_not_defaults():
    from intbench.tutor.elo import config_for
    from intbench.verifiers import get_verifier
    from intbench.verifiers.leakage import answer_leaked

    problem = load_problems(intbench.records.DOMAINS[0], n=1)[0]
    stray = dataclasses.replace(problem)
    stray.domain = "chess"  # as a record of a domain nobody registered
    for call in (
        lambda: answer_leaked(stray, "a message"),
        lambda: get_verifier("chess"),
        lambda: env_id("chess"),
        lambda: config_for("chess"),
        lambda: Problem(id="c/1", domain="chess", question="?"),
    ):
        with pytest.raises(ValueError, match="unknown domain 'chess'") as raised:
            call()
        assert all(name in str(raised.value) for name in intbench.records.DOMAINS)
    with pytest.raises(PromptTemplateError, match="unknown domain 'chess'"):
        render_messages("chess", "student_baseline", problem=stray)


def test_every_protocol_env_passes_check_env(domain):
    problems = load_problems("reverse_word", n=2)
    student = ScriptedBackend(domain.reverser)
    for protocol, options in (("monitor", {}), ("feedback", {"k_max": 3}), ("tutor", {})):
        env = gym.make(
            env_id("reverse_word", protocol), student=student, problems=problems, **options
        )
        check_env(env.unwrapped, skip_render_check=True)
        assert env.unwrapped.domain == "reverse_word"


def _cli(argv: list[str], tmp_path: Path) -> subprocess.CompletedProcess:
    # The subprocess registers the domain the way a user's script would: by importing it.
    code = f"import tests.third_party_domain; from intbench.cli import main; main({argv!r})"
    env = dict(os.environ, PYTHONPATH=str(ROOT), INTBENCH_CACHE=str(tmp_path / "cache"))
    return subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True
    )


def test_eval_and_report_run_on_the_domain(tmp_path):
    out = tmp_path / "run"
    student = "scripted:tests.third_party_domain:reverser"
    evaluated = _cli(
        ["eval", "--env", "IntBench-ReverseWord-v0", "--teacher", "at:0.5", "--student", student,
         "-n", "4", "--seed", "0", "--concurrency", "2", "--out", str(out), "--no-progress"],
        tmp_path,
    )  # fmt: skip
    assert evaluated.returncode == 0, evaluated.stderr
    records = [json.loads(line) for line in (out / "episodes.jsonl").read_text().splitlines()]
    assert len(records) == 4 and {r["domain"] for r in records} == {"reverse_word"}
    reported = _cli(["report", str(out), "--out", str(tmp_path / "report")], tmp_path)
    assert reported.returncode == 0, reported.stderr
    assert any((tmp_path / "report").rglob("*.md"))
