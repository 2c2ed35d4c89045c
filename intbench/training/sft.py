"""SFT data from episode records: imitate the teacher decisions a filter selects.

Records are what ``intbench eval`` writes into its run directory; they hold the
teacher's decisions and messages but not the prompts.  The prompts are
rebuilt by replaying each episode in an env whose scripted student repeats
the recorded student text, so every example's prompt is exactly the env's
teacher prompt at that decision.  The assistant turn is the teacher's raw
reply when the run kept it (``metadata.teacher_outputs``), else the decision
written in the prompt's output format.
"""

from __future__ import annotations

import dataclasses
import tempfile
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import gymnasium as gym

from intbench.agents.backends.scripted import ScriptedBackend
from intbench.extras import require
from intbench.protocols import get_protocol, has
from intbench.records import Episode, MonitorStep, Problem, as_episodes
from intbench.rundir import RunDir
from intbench.training.monitor import monitor_reply
from intbench.verifiers.leakage import answer_leaked

Filter = Callable[[Episode], bool]


def _monitor_helpful(record: Episode) -> bool:
    return record.reward_components.get("helpfulness", 0.0) > 0


def _monitor_leaked(record: Episode) -> bool:
    return bool(record.reward_components.get("leaked", 0.0))


def _feedback_helpful(record: Episode) -> bool:
    return record.solved_at is not None and record.solved_at > 1


def _feedback_leaked(record: Episode) -> bool:
    return any(turn.leaked for turn in record.feedback)


def _monitor_intervened(record: Episode) -> bool:
    return record.intervention is not None


def _feedback_intervened(record: Episode) -> bool:
    return any(turn.source == "teacher" for turn in record.feedback)


def _sft(record: Episode) -> SftProtocol:
    return get_protocol(record.protocol).hook("sft")


def _helpful(record: Episode) -> bool:
    return _sft(record).helpful(record)


def _leaked(record: Episode) -> bool:
    return _sft(record).leaked(record)


def _intervened(record: Episode) -> bool:
    return _sft(record).intervened(record)


FILTERS: dict[str, Filter] = {
    # Interventions that turned a wrong student right (monitor) or feedback
    # episodes solved after the first attempt, without giving the answer away.
    "helpful_no_leak": lambda r: _helpful(r) and not _leaked(r),
    "helpful": _helpful,
    "no_leak": lambda r: _intervened(r) and not _leaked(r),
    "all": lambda r: True,
}


def redetect_leaks(record: Episode, problem: Problem) -> Episode:
    """``record`` with its leak flags recomputed by :func:`answer_leaked`.

    Records keep the flags of the detector that ran when they were written;
    the filters judge by the current one.
    """
    if not has(record.protocol, "sft"):
        return record
    return _sft(record).redetect_leaks(record, problem)


def _monitor_redetect(record: Episode, problem: Problem) -> Episode:
    if record.intervention is None:
        return record
    intervention = record.intervention
    leaked = answer_leaked(problem, intervention.message)
    components = dict(record.reward_components)
    components["leaked"] = float(leaked and intervention.applied)
    intervention = dataclasses.replace(intervention, leaked=leaked)
    return dataclasses.replace(record, intervention=intervention, reward_components=components)


def _feedback_redetect(record: Episode, problem: Problem) -> Episode:
    turns = [
        dataclasses.replace(t, leaked=answer_leaked(problem, t.message)) for t in record.feedback
    ]
    return dataclasses.replace(record, feedback=turns)


def select_records(
    records: Iterable[Episode | dict],
    filter: str | Filter = "helpful_no_leak",
    problems: Mapping[str, Problem] | None = None,
) -> list[Episode]:
    """Records that pass ``filter`` (a :data:`FILTERS` name or a predicate); failed episodes never do.

    With ``problems`` (by id), a record whose problem is among them is judged
    by its leak flags as :func:`redetect_leaks` recomputes them.
    """
    if isinstance(filter, str):
        try:
            filter = FILTERS[filter]
        except KeyError:
            raise ValueError(f"unknown filter {filter!r}; choose from {sorted(FILTERS)}") from None
    selected = []
    for record in as_episodes(records):
        if record.error or not has(record.protocol, "sft"):
            continue
        if problems is not None and record.problem_id in problems:
            record = redetect_leaks(record, problems[record.problem_id])
        if filter(record):
            selected.append(record)
    return selected


def _replay_student(texts: Sequence[str]) -> ScriptedBackend:
    queue = list(texts)

    def respond(messages):
        if not queue:
            raise RuntimeError(
                "the replayed episode asked the student more often than the record shows"
            )
        return queue.pop(0)

    return ScriptedBackend(respond, spec="replay")


def _monitor_reply(step: MonitorStep) -> str:
    return monitor_reply(step.action == "intervene", step.message or "")


def _monitor_examples(
    record: Episode, problem: Problem, cache_dir: str, decisions: str
) -> list[dict]:
    config = record.config
    if record.baseline is None:
        raise ValueError(f"monitor record of {record.problem_id!r} has no baseline to replay")
    student = _replay_student([record.baseline.text])
    env = gym.make(
        f"intbench:{_env_id(problem.domain, 'monitor')}",
        student=student,
        problems=[problem],
        condition=record.condition or "standard",
        increment=config.get("increment", 50),
        teacher_access=config.get("teacher_access", True),
        teacher_prompt=config.get("teacher_prompt", "paper"),
        cache_dir=cache_dir,
    ).unwrapped
    outputs = record.metadata.get("teacher_outputs") or []
    _, info = env.reset(options={"problem_index": 0, "student_seed": record.seed or 0})
    examples = []
    steps = record.steps
    for index, step in enumerate(steps):
        assert isinstance(step, MonitorStep)  # Episode.from_dict reads monitor steps as such
        reply = outputs[index] if index < len(outputs) else _monitor_reply(step)
        if decisions == "all" or index == len(steps) - 1:
            examples.append(_example(info["messages"], reply, record, index))
        if index < len(steps) - 1:
            _, _, _, _, info = env.step({"intervene": 0, "message": ""})
    env.close()
    return examples


def _feedback_examples(
    record: Episode, problem: Problem, cache_dir: str, decisions: str
) -> list[dict]:
    config = record.config
    student = _replay_student([attempt.text for attempt in record.attempts])
    env = gym.make(
        f"intbench:{_env_id(problem.domain, 'feedback')}",
        student=student,
        problems=[problem],
        k_max=config.get("k_max", 10),
        history=config.get("history", 1),
        teacher_reference=config.get("teacher_reference", "none"),
        execution_context=config.get("execution_context", "feedback"),
        cache_dir=cache_dir,
    ).unwrapped
    outputs = record.metadata.get("teacher_outputs") or []
    _, info = env.reset(options={"problem_index": 0, "student_seed": record.seed or 0})
    examples = []
    for turn, feedback in enumerate(record.feedback):
        message = feedback.message
        if feedback.source == "teacher" and message:
            reply = outputs[turn] if turn < len(outputs) else f"<feedback>{message}</feedback>"
            examples.append(_example(info["messages"], reply, record, turn))
        _, _, terminated, _, info = env.step(
            {"intervene": int(bool(message)), "message": message or ""}
        )
        if terminated:
            break
    env.close()
    return examples


def _env_id(domain: str, protocol: str) -> str:
    from intbench.envs.registration import env_id

    return env_id(domain, protocol)


def _example(prompt: list[dict], reply: str, record: Episode, decision: int) -> dict:
    return {
        "prompt": prompt,
        "completion": [{"role": "assistant", "content": reply}],
        "episode_id": record.episode_id,
        "problem_id": record.problem_id,
        "decision": decision,
    }


@dataclasses.dataclass(frozen=True)
class SftProtocol:
    """How SFT reads one protocol's records (``ProtocolSpec.sft`` names one)."""

    helpful: Filter
    """Whether the teacher's messages helped the student."""
    leaked: Filter
    """Whether a teacher message gave the answer away."""
    intervened: Filter
    """Whether the teacher said anything."""
    redetect_leaks: Callable[[Episode, Problem], Episode]
    """The record with its leak flags recomputed by :func:`answer_leaked`."""
    examples: Callable[[Episode, Problem, str, str], list[dict]]
    """``(record, problem, cache_dir, decisions)`` -> its chat examples."""


MONITOR_SFT = SftProtocol(
    _monitor_helpful, _monitor_leaked, _monitor_intervened, _monitor_redetect, _monitor_examples
)
FEEDBACK_SFT = SftProtocol(
    _feedback_helpful,
    _feedback_leaked,
    _feedback_intervened,
    _feedback_redetect,
    _feedback_examples,
)


def sft_examples(
    records: Iterable[Episode | dict],
    problems: Iterable[Problem | dict],
    filter: str | Filter = "helpful_no_leak",
    decisions: str = "last",
) -> list[dict]:
    """Prompt/completion chat examples from the records ``filter`` selects.

    ``problems`` must include every selected record's problem (by id).
    Monitor episodes give their last decision (``decisions="last"``, the
    intervention if there was one) or every decision (``"all"``); feedback
    episodes give each teacher feedback turn.
    """
    if decisions not in ("last", "all"):
        raise ValueError(f"decisions must be 'last' or 'all', got {decisions!r}")
    by_id: dict[str, Problem] = {}
    for item in problems:
        parsed = item if isinstance(item, Problem) else Problem.from_dict(item)
        by_id[parsed.id] = parsed
    examples: list[dict] = []
    with tempfile.TemporaryDirectory(prefix="intbench-sft-") as scratch:
        for number, record in enumerate(select_records(records, filter, by_id)):
            problem = by_id.get(record.problem_id)
            if problem is None:
                raise ValueError(f"no problem {record.problem_id!r} among the given problems")
            cache_dir = f"{scratch}/{number}"  # a fresh cache: the replay must not hit another record's text
            examples += _sft(record).examples(record, problem, cache_dir, decisions)
    return examples


def sft_dataset(
    run_dirs: Sequence[str],
    filter: str | Filter = "helpful_no_leak",
    decisions: str = "last",
) -> Any:
    """A ``datasets.Dataset`` (prompt/completion chat format) from ``intbench eval`` run directories."""
    require("train", "datasets", "sft_dataset")
    from datasets import Dataset

    examples: list[dict] = []
    for run_dir in map(RunDir, run_dirs):
        examples += sft_examples(run_dir.episodes(), run_dir.problems(), filter, decisions)
    if not examples:
        raise ValueError(f"filter {filter!r} selected no teacher decisions in {list(run_dirs)}")
    return Dataset.from_list(examples)
