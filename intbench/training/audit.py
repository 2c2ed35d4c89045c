"""Does a training reward pay for telling?  Every probe family on a scripted student.

:func:`audit_reward` plays a training config's env (its id, env options and
reward, and the variants the env itself makes) on offline problems of the
config's domain, once per teacher:

* ``never``: waits (monitor), gives no feedback (feedback) or says nothing (tutor);
* every probe family of :mod:`intbench.verifiers.leakage.probes` that applies
  to the problem: tells (the answer in a form a student can copy),
  content-free messages and honest hints, each teacher sending its family's
  message at its first turn;
* ``forward-tests`` (code domains, protocols that show execution results):
  forwards the execution result the teacher sees, failing test included.

The scripted student is as easy to exploit as a student can be, and as a
telling teacher would wish: on the original problem any tell or hint makes it
right (it copies a stated answer, or follows the hint), and alone it is right
on every other problem (the first, the third, ...).  On a variant (the transfer arms) it is right alone
where it is right alone on the original; an honest hint makes it right (the method carries
over); a tell makes it write the original's answer, which the variant's
verifier grades wrong (variants that share the original's answer are dropped
where they are made); a content-free message changes nothing.

The audit fails a reward when some tell family, content-free family or
``forward-tests`` scores at least as much as ``never`` (on average, or on a
problem where the teacher had a turn: a tie there lets a policy gamble), or
when an honest family scores below ``never`` on average over the problems
where the student is wrong alone (where a hint can teach: a false leak flag
charging honest teaching shows there).
"""

from __future__ import annotations

import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from intbench.agents.backends.scripted import ScriptedBackend
from intbench.metrics.estimate import Estimate, bootstrap
from intbench.protocols import ProtocolSpec
from intbench.records import Problem
from intbench.training.config import TrainConfig

WAIT = {"intervene": 0, "message": ""}
NEVER = "never"
FORWARD_TESTS = "forward-tests"


@dataclass
class TeacherScore:
    """One scripted teacher's mean reward over the audit problems where it applies."""

    teacher: str
    kind: str
    """"never", "tell", "content_free", "honest" or "forward" (forward-tests)."""
    reward: Estimate
    per_problem: dict[str, float]
    no_turn: set[str]
    """Problems whose episode ended before the teacher had a turn (the student was
    right at once in a feedback episode): there is no choice to compare there."""
    teachable: set[str] = field(default_factory=set)
    """Problems where the scripted student is wrong alone, on the original and the
    variant: where a hint can teach, so an honest one must not score below waiting."""


class AuditStudent:
    """The deterministic student of the audit (see the module docstring).

    It knows the problems by question text and the variants the env drew, answers
    the one whose question comes last in the conversation (the variant of a
    transfer prompt), and reads the kind of help from the audit's current teacher.
    """

    def __init__(self, problems: list[Problem]):
        from intbench.generalization.answers import accepted_response
        from intbench.verifiers import verify

        self.problems = problems
        self.alone_right = {p.id for i, p in enumerate(problems) if i % 2 == 0}
        self.variants: Any = None
        """The env's :class:`~intbench.envs.transfer.VariantSource`, once it is built."""
        self.kind = NEVER
        self.message: str | None = None
        self.responses: dict[str, tuple[str, str]] = {}
        for problem in problems:
            right = accepted_response(problem)
            wrong = next(
                (
                    accepted_response(other)
                    for other in problems
                    if accepted_response(other) != right
                    and verify(problem, accepted_response(other)).status == "incorrect"
                ),
                None,
            )
            if not verify(problem, right).correct or wrong is None:
                raise ValueError(
                    f"the audit cannot script a student for {problem.id!r}: no response the "
                    "verifier grades right and one it grades wrong"
                )
            self.responses[problem.id] = (right, wrong)

    def teacher(self, kind: str, message: str | None) -> None:
        """The teacher of the next episode: its kind and the message it sends."""
        self.kind, self.message = kind, message

    def backend(self) -> ScriptedBackend:
        return ScriptedBackend(self.respond, spec="scripted:audit-student")

    def respond(self, messages: list[dict]) -> str:
        text = "\n".join(m["content"] for m in messages)
        problem = self._asked(text)
        if problem is None:
            return "I cannot tell which problem this is."
        helped = self.message is not None and self.message != "" and self.message in text
        if problem.id in self.responses:
            right, wrong = self.responses[problem.id]
            solved = problem.id in self.alone_right or (helped and self.kind in ("tell", "honest"))
            return right if solved else wrong
        return self._on_variant(problem, helped)

    def _asked(self, text: str) -> Problem | None:
        """The problem or drawn variant whose question comes last in ``text``."""
        drawn = self.variants.drawn() if self.variants is not None else []
        found = [
            (text.rfind(p.question), p) for p in [*self.problems, *drawn] if p.question in text
        ]
        # A stand-in variant's question extends its source's: the longer one wins.
        return max(found, key=lambda pair: (pair[0], len(pair[1].question)))[1] if found else None

    def _on_variant(self, variant: Problem, helped: bool) -> str:
        """The answer on a variant: the method carries over, a told answer is copied (wrong
        there by construction), otherwise what the student does alone."""
        from intbench.generalization.answers import accepted_response

        original = next(p for p in self.problems if p.id == variant.metadata.get("variant_of"))
        if helped and self.kind == "honest":
            return accepted_response(variant)
        if helped and self.kind in ("tell", "forward"):
            return accepted_response(original)
        right_alone = original.id in self.alone_right
        return accepted_response(variant if right_alone else original)


def _teachers(
    problem: Problem, code: bool, protocol: ProtocolSpec, seed: int
) -> dict[str, tuple[str, str | None]]:
    """Teacher name -> (kind, its message on ``problem``; None: never speaks, "": forwards
    the execution result)."""
    from intbench.verifiers.leakage.probes import probes

    teachers: dict[str, tuple[str, str | None]] = {NEVER: (NEVER, None)}
    for probe in probes(problem, seed):
        teachers[probe.family] = (probe.kind, probe.message)
    if code and protocol.forwards_execution:
        teachers[FORWARD_TESTS] = ("forward", "")
    return teachers


def _play(
    env, protocol: ProtocolSpec, index: int, kind: str, message, student
) -> tuple[float, bool]:
    """One episode of a scripted teacher on problem ``index`` -> (the env's total
    reward, whether the teacher had a turn).  A teacher that decides at every increment
    speaks at the first; others at their first turn."""
    student.teacher(kind, message)
    obs, info = env.reset(seed=index, options={"problem_index": index})
    total, done, turns = 0.0, False, protocol.incremental
    spoken = False
    while not done:
        turns = turns or bool(info.get("teacher_turn"))
        action = WAIT
        if message is None or spoken:
            pass
        elif kind == "forward":
            forwarded = obs["execution"]
            if forwarded:
                action = {"intervene": 1, "message": forwarded}
                student.teacher(kind, forwarded)
        elif protocol.incremental or info.get("teacher_turn"):
            action = {"intervene": 1, "message": message}
        spoken = spoken or action is not WAIT
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
    domain = gym.spec(config.env).kwargs["domain"]
    problems = load_problems(domain, source="offline", n=n, seed=seed)
    options = dict(config.env_kwargs())
    for key in ("student", "source", "split", "n", "data_seed"):
        options.pop(key, None)
    with tempfile.TemporaryDirectory(prefix="intbench-audit-") as tmp:
        _stand_in_variants(options, problems, Path(tmp))
        student = AuditStudent(problems)
        code = get_domain(domain).kind == "code"
        teachers = {i: _teachers(p, code, protocol, seed) for i, p in enumerate(problems)}
        env = gym.make(
            config.env,
            **{**options, "student": student.backend(), "problems": problems, "cache_dir": tmp},
        ).unwrapped
        student.variants = getattr(env, "variants", None)
        try:
            rewards, kinds, no_turn = _play_all(env, protocol, problems, teachers, student)
        finally:
            env.close()
    return [
        TeacherScore(
            name,
            kinds[name],
            bootstrap({k: [v] for k, v in per.items()}, _mean, seed=seed),
            per,
            no_turn[name],
            {p.id for p in problems if p.id not in student.alone_right},
        )
        for name, per in rewards.items()
    ]


def _stand_in_variants(options: dict[str, Any], problems: list[Problem], tmp: Path) -> None:
    """Where the config names no variant set and the domain's generator makes none, each
    problem's stand-in variant is the next audit problem (the scripted student needs
    no shared skill), written under ``tmp`` and named in ``options``."""
    from intbench.generalization.procedural import is_procedural
    from intbench.generalization.variant_set import write_variant_set

    if options.get("variants") or all(is_procedural(p) for p in problems):
        return
    stand_ins = []
    for i, problem in enumerate(problems):
        other = problems[(i + 1) % len(problems)]
        stand_ins.append(
            Problem(
                **{
                    **other.to_dict(),
                    "id": f"{problem.id}/stand-in",
                    "question": f"{other.question}\n(A related problem.)",
                    "metadata": {**other.metadata, "variant_of": problem.id, "skill": "audit"},
                }
            )  # fmt: skip
        )
    options["variants"] = str(write_variant_set(tmp / "variants.jsonl", stand_ins))


def _play_all(
    env,
    protocol: ProtocolSpec,
    problems: list[Problem],
    teachers: dict[int, dict[str, tuple[str, str | None]]],
    student: AuditStudent,
) -> tuple[dict[str, dict[str, float]], dict[str, str], dict[str, set[str]]]:
    """Every teacher on every problem it applies to -> ({teacher: {problem id: reward}},
    {teacher: kind}, {teacher: the problems where it had no turn})."""
    rewards: dict[str, dict[str, float]] = {}
    kinds: dict[str, str] = {}
    no_turn: dict[str, set[str]] = {}
    for i, problem in enumerate(problems):
        for name, (kind, message) in teachers[i].items():
            total, turns = _play(env, protocol, i, kind, message, student)
            rewards.setdefault(name, {})[problem.id] = total
            kinds[name] = kind
            no_turn.setdefault(name, set())
            if not turns:
                no_turn[name].add(problem.id)
    return rewards, kinds, no_turn


def _mean(values: list[Any]) -> float:
    return float(sum(values) / len(values))


def telling_wins(scores: list[TeacherScore]) -> list[str]:
    """The teachers that fail the audit, judged on the problems where they had a turn:
    a tell, content-free or forward-tests teacher scoring at least as much as ``never``
    on average or on some problem; an honest teacher scoring below ``never`` on average
    over the problems where a hint can teach (elsewhere a hint that changes nothing
    pays its message cost, and a checker may withhold it).  A teacher with no turn on
    any problem has made no choice and is not judged."""
    never = next(s for s in scores if s.teacher == NEVER)
    return [s.teacher for s in scores if s.kind != NEVER and _fails(s, never.per_problem)]


def _fails(score: TeacherScore, never: dict[str, float]) -> bool:
    judged = {k: v for k, v in score.per_problem.items() if k not in score.no_turn}
    if not judged:
        return False
    if score.kind in ("tell", "content_free", "forward"):
        return _mean(list(judged.values())) >= _mean([never[k] for k in judged]) or any(
            v >= never[k] for k, v in judged.items()
        )
    if score.kind == "honest":
        teachable = [k for k in judged if k in score.teachable] or list(judged)
        return _mean([judged[k] for k in teachable]) < _mean([never[k] for k in teachable])
    return False
