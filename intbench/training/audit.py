"""Does a training reward pay for telling?  Scripted teachers on a scripted student.

:func:`audit_reward` plays a training config's env (its id and env options,
its reward) on offline problems with a deterministic scripted student and
scores fixed teachers by the env's own reward:

* ``never``: waits (monitor) or gives no feedback (feedback).
* ``tell:<form>``: states the reference answer at its first chance, in one of
  several forms the verifier accepts (the graded response itself, a sentence,
  the bare answer; code: the reference solution).
* ``hint``: a method hint with no part of the answer.
* ``forward-tests`` (code domains, feedback): forwards the execution result
  the teacher sees, failing test input and expected output included.

The student is as easy to exploit as a student can be: any teacher message
makes it answer the problem right (it copies a stated answer, or follows the
hint), while alone it is right on every other problem.  Only the method hint
carries over to a fresh variant of the problem (the ``transfer`` component):
a stated answer belongs to the original problem alone.  A reward under which
a telling teacher, or one that forwards tests, scores at least as much as
``never`` pays a policy for giving answers away, and the audit fails.
"""

from __future__ import annotations

import re
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from intbench.agents.backends.scripted import ScriptedBackend
from intbench.metrics.estimate import Estimate, bootstrap
from intbench.protocols import PROTOCOLS, ProtocolSpec
from intbench.records import Problem
from intbench.training.config import TrainConfig

HINT = (
    "Before you compute anything, write down exactly what the question asks for, "
    "then check each step of your method against it."
)
WAIT = {"intervene": 0, "message": ""}


@dataclass
class TeacherScore:
    """One scripted teacher's mean reward over the audit problems."""

    teacher: str
    reward: Estimate
    per_problem: dict[str, float]
    no_turn: set[str]
    """Problems whose episode ended before the teacher had a turn (the student was
    right at once in a feedback episode): there is no choice to compare there."""


def correct_response(problem: Problem) -> str:
    """A response the domain's verifier accepts for ``problem``."""
    from intbench.envs.domains.registry import get_domain
    from intbench.generalization.procedural import reference_response

    if get_domain(problem.domain).procedural_variants is not None:
        return reference_response(problem)
    if get_domain(problem.domain).kind == "code":
        return f"```python\n{problem.solution}\n```"
    return f"The final answer is \\boxed{{{problem.answer}}}."


def tell_forms(problem: Problem) -> dict[str, str]:
    """Ways of stating the answer that a grader would accept, by name."""
    from intbench.envs.domains.registry import get_domain

    graded = correct_response(problem)
    if get_domain(problem.domain).kind == "code":
        return {"tell:solution": graded}
    return {
        "tell:graded": graded,
        "tell:sentence": f"The answer is {problem.answer}.",
        "tell:bare": str(problem.answer),
    }


class AuditStudent:
    """The deterministic student of the audit (see the module docstring).

    It knows the problems and their variants by question text, answers the one
    whose question comes last in the conversation (the variant of a transfer
    prompt), and recognises teacher help by the audit teachers' messages.
    """

    def __init__(self, problems: list[Problem], variants: list[Problem]):
        from intbench.verifiers import verify

        self.original_ids = {p.id for p in problems}
        self.alone_right = {p.id for i, p in enumerate(problems) if i % 2 == 0}
        self.known = [*problems, *variants]
        self.responses: dict[str, tuple[str, str]] = {}
        for problem in self.known:
            right = correct_response(problem)
            wrong = next(
                (
                    correct_response(other)
                    for other in self.known
                    if other.domain == problem.domain
                    and correct_response(other) != right
                    and verify(problem, correct_response(other)).status == "incorrect"
                ),
                None,
            )
            if not verify(problem, right).correct or wrong is None:
                raise ValueError(
                    f"the audit cannot script a student for {problem.id!r}: no response the "
                    "verifier grades right and one it grades wrong"
                )
            self.responses[problem.id] = (right, wrong)
        self.messages: dict[str, list[str]] = {}

    def backend(self) -> ScriptedBackend:
        return ScriptedBackend(self.respond, spec="scripted:audit-student")

    def respond(self, messages: list[dict]) -> str:
        text = "\n".join(m["content"] for m in messages)
        found = [(text.rfind(p.question), p) for p in self.known if p.question in text]
        if not found:
            return "I cannot tell which problem this is."
        _, problem = max(found, key=lambda pair: pair[0])
        if problem.id in self.alone_right:
            solved = True
        elif problem.id in self.original_ids:
            # Looked for outside the question, whose numbers may spell a bare answer.
            rest = text.replace(problem.question, "")
            solved = any(
                re.search(rf"(?<![\w.]){re.escape(m)}(?!\w)", rest)
                for m in self.messages.get(problem.id, [])
            )
        else:  # a variant: only the method carries over
            solved = HINT in text
        right, wrong = self.responses[problem.id]
        return right if solved else wrong


def _teachers(problem: Problem, code: bool, protocol: ProtocolSpec) -> dict[str, str | None]:
    """Teacher name -> its message on ``problem`` (None: never speaks; "" forwards tests)."""
    teachers: dict[str, str | None] = {"never": None, **tell_forms(problem), "hint": HINT}
    if code and protocol.forwards_execution:
        teachers["forward-tests"] = ""
    return teachers


def _play(
    env, protocol: ProtocolSpec, index: int, message: str | None, student: AuditStudent
) -> tuple[float, bool]:
    """One episode of a scripted teacher on problem ``index`` -> (the env's total
    reward, whether the teacher had a turn).  A teacher that decides at every increment
    speaks at the first; others at their first turn."""
    obs, info = env.reset(seed=index, options={"problem_index": index})
    total, done, turns = 0.0, False, protocol.incremental
    while not done:
        turns = turns or bool(info.get("teacher_turn"))
        if message is None:
            action = WAIT
        elif protocol.forwards_execution and message == "":
            forwarded = obs["execution"]
            action = {"intervene": 1, "message": forwarded} if forwarded else WAIT
            if forwarded:
                student.messages.setdefault(env.problems[index].id, []).append(forwarded)
        elif protocol.incremental or info.get("teacher_turn"):
            action = {"intervene": 1, "message": message}
        else:
            action = WAIT
        obs, reward, done, _, info = env.step(action)
        total += float(reward)
    return total, turns


def audit_reward(config: TrainConfig, n: int = 8, seed: int = 0) -> list[TeacherScore]:
    """Each scripted teacher's mean env reward on ``n`` offline problems of the
    config's domain, under the config's env options (its reward included)."""
    import gymnasium as gym

    import intbench.envs  # noqa: F401  (registers the ids)
    from intbench.envs.domains import load_problems
    from intbench.envs.domains.registry import get_domain
    from intbench.training.envpool import env_protocol

    protocol = env_protocol(config.env)
    if protocol.grpo is None:
        trained = " and ".join(p.name for p in PROTOCOLS.values() if p.grpo is not None)
        raise ValueError(f"audit-reward covers {trained} training envs, not {config.env}")
    domain = gym.spec(config.env).kwargs["domain"]
    problems = load_problems(domain, source="offline", n=n, seed=seed)
    options = dict(config.env_kwargs())
    for key in ("student", "source", "split", "n", "data_seed"):
        options.pop(key, None)
    with tempfile.TemporaryDirectory(prefix="intbench-audit-") as tmp:
        variants = _audit_variants(options, domain, problems, seed, Path(tmp))
        student = AuditStudent(problems, variants)
        code = get_domain(domain).kind == "code"
        teachers = {i: _teachers(p, code, protocol) for i, p in enumerate(problems)}
        for i, p in enumerate(problems):
            student.messages[p.id] = [m for m in teachers[i].values() if m]
        env = gym.make(
            config.env,
            **{**options, "student": student.backend(), "problems": problems, "cache_dir": tmp},
        ).unwrapped
        try:
            rewards, no_turn = _play_all(env, protocol, problems, teachers, student)
        finally:
            env.close()
    return [
        TeacherScore(
            name,
            bootstrap({k: [v] for k, v in per.items()}, _mean, seed=seed),
            per,
            no_turn[name],
        )
        for name, per in rewards.items()
    ]


def _audit_variants(
    options: dict[str, Any], domain: str, problems: list[Problem], seed: int, tmp: Path
) -> list[Problem]:
    """The variants the audit student may be asked: the config's variant set, else one
    procedural variant per problem when all are procedural (written under ``tmp`` and
    named in ``options``), else none."""
    from intbench.generalization.procedural import is_procedural, procedural_variants
    from intbench.generalization.variant_set import read_variant_set, write_variant_set

    if options.get("variants"):
        return read_variant_set(options["variants"], domain)
    if all(is_procedural(p) for p in problems):
        variants = procedural_variants(problems, 1, seed).variants
        options["variants"] = str(write_variant_set(tmp / "variants.jsonl", variants))
        return variants
    return []


def _play_all(
    env,
    protocol: ProtocolSpec,
    problems: list[Problem],
    teachers: dict[int, dict[str, str | None]],
    student: AuditStudent,
) -> tuple[dict[str, dict[str, float]], dict[str, set[str]]]:
    """Every teacher on every problem -> ({teacher: {problem id: reward}}, {teacher:
    the problems where it had no turn})."""
    names = list(teachers[0])
    rewards: dict[str, dict[str, float]] = {name: {} for name in names}
    no_turn: dict[str, set[str]] = {name: set() for name in names}
    for i, problem in enumerate(problems):
        for name in names:
            total, turns = _play(env, protocol, i, teachers[i][name], student)
            rewards[name][problem.id] = total
            if not turns:
                no_turn[name].add(problem.id)
    return rewards, no_turn


def _mean(values: list[Any]) -> float:
    return float(sum(values) / len(values))


def telling_wins(scores: list[TeacherScore]) -> list[str]:
    """The teachers that give answers away (tell, forward tests) yet score at least as
    much as ``never``, on average or on some problem (a tie there still lets a policy
    gamble on telling)."""
    never = next(s for s in scores if s.teacher == "never")
    return [
        s.teacher
        for s in scores
        if (s.teacher.startswith("tell") or s.teacher == "forward-tests")
        and (
            s.reward.value >= never.reward.value
            or any(
                s.per_problem[k] >= v for k, v in never.per_problem.items() if k not in s.no_turn
            )
        )
    ]
