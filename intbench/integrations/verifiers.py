"""verifiers environments (verifiers >= 0.4, ``verifiers.v1``): IntBench as a taskset and a multi-turn env.

Three environment ids, one per protocol: ``intbench-monitor``,
``intbench-feedback`` and ``intbench-tutor``.  verifiers finds an id by
importing the module of that name (dashes to underscores), so each is a
top-level module of this distribution (``intbench_monitor``, ...) exporting
its taskset and :class:`IntBenchEnv`::

    vf-eval intbench-feedback -n 8 -m <model> --client.base-url http://127.0.0.1:8000/v1 \\
        --env.taskset.domain codeforces --env.taskset.options '{"student": "openai:<student>"}'

Taskset options (``--env.taskset.*``, or the ``taskset`` block of the env config):
``domain`` (an IntBench domain: ``math``, ``codeforces``, ...), ``options`` (the
env's ``gym.make`` options, as ``--env-option`` in ``intbench eval``:
``student``, ``n``, ``k_max``, ``condition``, ...) and ``seed`` (problem ``i``
resets with ``seed + i``).

Each task is one problem of the env: its prompt is the teacher's prompt at
``reset`` (the system message as ``system_prompt``), so building a task runs
the student's first call (cached on disk, so the episode's own ``reset``
reuses it).  A problem whose episode ends before the teacher's first turn (a
feedback student right at attempt 1) has no decision to make and yields no
task.

The model under evaluation is the teacher (the env's role ``teacher``; by
default verifiers' tool-less ``null`` chat harness in the ``subprocess``
runtime).  Every reply is the env's action as text (the papers' reply
formats; monitor replies are parsed by
:class:`~intbench.envs.wrappers.TeacherTextActions`), and every later turn is
the env's next teacher prompt, so at each decision the model reads exactly the
prompt IntBench's own runner sends, after its earlier turns.  The trace's
reward ``intbench`` is the env's episode return; its metrics are the episode's
reward components, and ``trace.info["intbench_episode"]`` holds the episode
record.  A teacher whose run ends early (a turn or token limit) leaves the rest
of the episode to be played without help, so stopping earns what waiting does.
An episode that IntBench records as failed (a student or grader error) fails
the verifiers episode instead of scoring it; a failed teacher run is not scored.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterator
from typing import Any, ClassVar

import gymnasium as gym

import intbench  # noqa: F401  (registers the env ids)
from intbench.envs.common import flow_env
from intbench.envs.domains import registry
from intbench.envs.registration import env_id
from intbench.envs.wrappers import TeacherTextActions
from intbench.extras import require
from intbench.protocols import get_protocol

require("verifiers", "verifiers.v1", "the verifiers integration")
import verifiers.v1 as vf  # noqa: E402 -- after the extra's check
from pydantic import Field, field_validator  # noqa: E402
from verifiers.v1.harnesses.null import NullHarnessConfig  # noqa: E402
from verifiers.v1.runtimes import SubprocessConfig  # noqa: E402

logger = logging.getLogger(__name__)

WAIT = {"intervene": 0, "message": ""}
"""The action that leaves the student alone (every protocol accepts it)."""


class IntBenchConfig(vf.TasksetConfig):
    """Which IntBench env the taskset plays (``--env.taskset.*``)."""

    domain: str = "math"
    """The problem domain (``intbench.DOMAINS``)."""
    options: dict[str, Any] = Field(default_factory=dict)
    """``gym.make`` options of the env: ``student``, ``n``, ``k_max``, ``condition``, ..."""
    seed: int = 0
    """Reset seed of problem 0; problem ``i`` uses ``seed + i``."""

    @field_validator("domain")
    @classmethod
    def _known_domain(cls, domain: str) -> str:
        if not registry.is_registered(domain):
            raise ValueError(
                f"unknown IntBench domain {domain!r}; use one of {', '.join(registry.domain_names())}"
            )
        return domain


class IntBenchData(vf.TaskData):
    info: dict
    """``env_id``, ``problem_index``, ``problem_id`` and ``seed``: what the env resets with."""


class IntBenchTask(vf.Task[IntBenchData, vf.State, vf.TaskConfig]):
    pass


def _teacher_prompt(messages: list[dict], env_name: str) -> tuple[str, str]:
    """``(system, user)`` text of the env's teacher prompt (every IntBench protocol
    prompts with one system and one user message)."""
    roles = [m["role"] for m in messages]
    if roles != ["system", "user"]:
        raise ValueError(f"{env_name} gave a teacher prompt with roles {roles}, not system + user")
    return messages[0]["content"], messages[1]["content"]


class IntBenchTaskset(vf.Taskset[IntBenchTask, IntBenchConfig]):
    """One task per problem of the protocol's env; subclasses set ``protocol``."""

    protocol: ClassVar[str] = ""

    @property
    def env_id(self) -> str:
        return env_id(self.config.domain, self.protocol)

    def make_env(self) -> gym.Env:
        """A fresh env of this taskset; monitor envs read the reply text through
        :class:`TeacherTextActions` (feedback and tutor envs take text as it is)."""
        env = gym.make(self.env_id, **self.config.options)
        return TeacherTextActions(env) if get_protocol(self.protocol).parsed_actions else env

    def load(self) -> Iterator[IntBenchTask]:
        env = self.make_env()
        try:
            for index in range(len(flow_env(env).problems)):
                seed = self.config.seed + index
                _, info = env.reset(seed=seed, options={"problem_index": index})
                if not info["messages"]:
                    logger.info(
                        "%s problem %s: the episode ended before the teacher's turn; no task",
                        self.env_id,
                        info["problem_id"],
                    )
                    continue
                system, prompt = _teacher_prompt(info["messages"], self.env_id)
                yield IntBenchTask(
                    IntBenchData(
                        id=info["problem_id"],
                        name=f"{self.env_id}#{index}",
                        prompt=prompt,
                        system_prompt=system,
                        info={
                            "env_id": self.env_id,
                            "problem_index": index,
                            "problem_id": info["problem_id"],
                            "seed": seed,
                        },
                    ),
                    self.config.task,
                )
        finally:
            env.close()


class MonitorTaskset(IntBenchTaskset):
    """Monitor protocol (Int-Bench): watch the student's reasoning, intervene once or never."""

    protocol = "monitor"


class FeedbackTaskset(IntBenchTaskset):
    """Feedback protocol: comment on each failed attempt; the student retries."""

    protocol = "feedback"


class TutorTaskset(IntBenchTaskset):
    """Tutor protocol (KITE): discuss ideas with the student, who then solves alone."""

    protocol = "tutor"


class IntBenchEnvConfig(vf.EnvConfig):
    teacher: vf.AgentConfig = vf.AgentConfig(
        harness=NullHarnessConfig(id="null"), runtime=SubprocessConfig()
    )
    """The model under evaluation: a chat loop without tools, run as a local process."""


class IntBenchEnv(vf.Env[IntBenchEnvConfig]):
    """Plays one IntBench episode per task with the ``teacher`` agent."""

    def __init__(self, config: IntBenchEnvConfig) -> None:
        super().__init__(config)
        # Envs of finished episodes, reused; making the first one now makes bad
        # options fail here, before any rollout.
        self._idle: list[gym.Env] = [self.taskset.make_env()]

    async def run(self, task: IntBenchTask, agents: vf.Agents) -> None:
        env = self._idle.pop() if self._idle else self.taskset.make_env()
        try:
            result = await self._play(env, task, agents)
        finally:
            self._idle.append(env)
        if result is None:  # the teacher's run failed: its trace carries the error
            return
        total, record, trace = result
        if record.error:  # a student or grader failure is no score
            raise RuntimeError(f"IntBench episode {record.problem_id} failed: {record.error}")
        trace.record_reward("intbench", total, 1.0)
        # Numeric components only: `solved_at` is None while unsolved.
        trace.record_metrics(
            {k: v for k, v in record.reward_components.items() if isinstance(v, (int, float))}
        )
        trace.info["intbench_episode"] = record.to_dict()

    async def _play(self, env: gym.Env, task: IntBenchTask, agents: vf.Agents):
        info = task.data.info
        _, reset_info = await asyncio.to_thread(
            env.reset, seed=info["seed"], options={"problem_index": info["problem_index"]}
        )
        # The task's system prompt may be overridden (verifiers' `system_prompt` file);
        # its user prompt must be this reset's.
        system, prompt = _teacher_prompt(reset_info["messages"], info["env_id"])
        if prompt != task.data.prompt:
            raise ValueError(
                f"{info['env_id']} no longer gives this task's prompt at reset: load the taskset "
                "again with the same options"
            )
        total, done = 0.0, False
        # The env's prompt opens the exchange (a bare turn()); each reply is one step.
        async with agents.teacher.interaction(task) as interaction:
            segment = await interaction.turn()
            while not segment.terminated:
                _, reward, terminated, truncated, step_info = await asyncio.to_thread(
                    env.step, segment.last_reply
                )
                total += float(reward)
                done = terminated or truncated
                if done:
                    break
                next_system, prompt = _teacher_prompt(step_info["messages"], info["env_id"])
                if next_system != system:
                    raise ValueError(f"{info['env_id']} changed its system prompt mid-episode")
                segment = await interaction.turn(prompt)
        if not interaction.trace.ok:
            return None
        while not done:  # the teacher's run ended early: the rest without help
            _, reward, terminated, truncated, _ = await asyncio.to_thread(env.step, WAIT)
            total += float(reward)
            done = terminated or truncated
        return total, flow_env(env).last_episode, interaction.trace

    async def stop(self) -> None:
        while self._idle:
            self._idle.pop().close()
