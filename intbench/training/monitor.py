"""GRPO for the monitor teacher: one decision per sample, scored by the env.

A *decision state* is (problem, student baseline, revealed increment).  The
dataset holds the env's own teacher prompt at that state; the baseline comes
from the on-disk cache, so rebuilding a state is cheap.  For every sampled
teacher completion, :class:`MonitorReward` parses it as the paper's
``Intervene/Time/Intervention`` reply, resets an env to the same problem and
seed, fast-forwards to the same increment with ``wait`` steps and applies the
parsed action.  An intervention ends the episode (student continuation +
verifier); a *wait* is played out by waiting until the trace ends, so its
value is the no-intervention outcome.  The reward is the env's reward (the
``reward`` env option picks the preset; training configs default to
``teaching``, where a leaked answer scores below waiting and the env adds the
student's attempt at a variant, :mod:`intbench.envs.transfer`) and every reward
component is logged through TRL's ``log_metric`` as ``monitor/<component>``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from intbench.agents.parsing import parse_monitor_decision
from intbench.extras import require
from intbench.protocols.monitor import SPEC as MONITOR
from intbench.training.envpool import EnvPool

WAIT = {"intervene": 0, "message": ""}


def decision_action(text: str) -> dict:
    """The env action for a teacher reply; an unparsable reply is a logged wait."""
    decision = parse_monitor_decision(text)
    if decision.error:
        return {**WAIT, "error": f"unparsable teacher reply: {decision.error}"}
    return {"intervene": int(bool(decision.intervene)), "message": decision.message or ""}


def monitor_reply(intervene: bool, message: str = "", time: str = "N/A") -> str:
    """A well-formed Standard monitor reply (the format :func:`decision_action` parses)."""
    if intervene:
        return f"Intervene: Yes\nTime: {time}\nIntervention: {message}"
    return "Intervene: No\nTime: N/A\nIntervention: N/A"


def completion_text(completion: Any) -> str:
    """The text of a TRL completion (a string, or a list of chat messages)."""
    if isinstance(completion, str):
        return completion
    if isinstance(completion, Sequence) and completion and isinstance(completion[-1], dict):
        return str(completion[-1].get("content", ""))
    raise TypeError(f"unexpected completion type {type(completion).__name__}")


def _decision_flow(env, problem_index: int, waits: int, seed: int, action: dict):
    """Flow: rebuild a decision state, apply ``action``, play a wait out to the end."""
    yield from env.reset_flow(seed=seed, options={"problem_index": problem_index})
    for _ in range(waits):
        _, _, terminated, _, _ = yield from env.step_flow(WAIT)
        if terminated:
            raise RuntimeError(
                f"decision state {problem_index}/{waits} no longer exists: the cached baseline "
                "is shorter than when the dataset was built (was the cache cleared?)"
            )
    _, reward, terminated, _, info = yield from env.step_flow(action)
    while not terminated:
        _, reward, terminated, _, info = yield from env.step_flow(WAIT)
    return float(reward), info["reward_components"], info.get("action_error")


def _count_decisions(env, problem_index: int, seed: int):
    """Flow: (number of decision points, baseline correct) of a problem's baseline."""
    _, info = yield from env.reset_flow(seed=seed, options={"problem_index": problem_index})
    correct = bool(info["privileged"]["baseline_correct"])
    count, terminated = 0, False
    while not terminated:
        _, _, terminated, _, _ = yield from env.step_flow(WAIT)
        count += 1
    return count, correct


def _state_flow(env, problem_index: int, waits: int, seed: int):
    """Flow: the teacher prompt and problem id at a decision state."""
    _, info = yield from env.reset_flow(seed=seed, options={"problem_index": problem_index})
    for _ in range(waits):
        _, _, _, _, info = yield from env.step_flow(WAIT)
    return info["messages"], info["problem_id"], int(info["revealed_chars"])


def monitor_states(
    env_id: str = "IntBench-Math-v0",
    env_kwargs: dict[str, Any] | None = None,
    states_per_problem: int = 1,
    seed: int = 0,
    pool: EnvPool | None = None,
):
    """A ``datasets.Dataset`` of monitor decision states for ``GRPOTrainer``.

    Columns: ``prompt`` (the env's teacher prompt, chat messages),
    ``problem_index``, ``problem_id``, ``waits`` (increments waited before this
    decision, drawn uniformly), ``seed`` (the env reset seed: it fixes the
    student's continuation sample, so every completion of a group meets the
    same student), ``revealed_chars`` and ``baseline_correct`` (for analysis;
    not shown to the policy).  Baselines are generated once, batched, and cached.
    """
    require("train", "datasets", "monitor_states")
    from datasets import Dataset

    if states_per_problem < 1:
        raise ValueError(f"states_per_problem must be positive, got {states_per_problem}")
    pool = pool or EnvPool(env_id, env_kwargs)
    if pool.spec is not MONITOR:
        raise ValueError(f"monitor_states needs a monitor env id, got {pool.env_id!r}")
    problems = pool.problem_count()
    rng = np.random.default_rng(seed)
    plan = [
        (i, int(rng.integers(2**31 - 1)))
        for i in range(problems)
        for _ in range(states_per_problem)
    ]
    envs = pool.take(len(plan))
    counts = pool.run([_count_decisions(env, i, s) for env, (i, s) in zip(envs, plan, strict=True)])
    waits = [int(rng.integers(count)) for count, _ in counts]
    states = pool.run(
        [_state_flow(env, i, w, s) for env, (i, s), w in zip(envs, plan, waits, strict=True)]
    )
    return Dataset.from_list(
        [
            {
                "prompt": messages,
                "problem_index": index,
                "problem_id": problem_id,
                "waits": wait,
                "seed": state_seed,
                "revealed_chars": revealed,
                "baseline_correct": correct,
            }
            for (index, state_seed), wait, (_, correct), (messages, problem_id, revealed) in zip(
                plan, waits, counts, states, strict=True
            )
        ]
    )


def balanced_states(states, steps: int, prompts_per_step: int, seed: int):
    """``states`` reordered for ``steps`` GRPO steps of ``prompts_per_step`` states
    each (an even number), so that every step holds as many states whose baseline
    is wrong as states whose baseline is right; reshuffled each pass.

    With a handful of prompts per step, an unbalanced step pushes the overall
    intervention rate up or down; balanced steps cancel that push, so what GRPO
    moves is the difference between the two kinds of state.  Train on the result
    in order (``GRPOConfig(shuffle_dataset=False)``)."""
    import random

    if prompts_per_step < 2 or prompts_per_step % 2:
        raise ValueError(
            f"balanced states need an even number of prompts per step, got {prompts_per_step} "
            "(per_device_train_batch_size x gradient_accumulation_steps / num_generations)"
        )
    wrong = [i for i in range(len(states)) if not states[i]["baseline_correct"]]
    right = [i for i in range(len(states)) if states[i]["baseline_correct"]]
    if not wrong or not right:
        raise ValueError(
            f"balanced states need baselines of both kinds; the {len(states)} states have "
            f"{len(right)} correct and {len(wrong)} wrong baselines (use more problems)"
        )
    rng = random.Random(seed)
    order: list[int] = []
    while len(order) < steps * prompts_per_step:
        rng.shuffle(wrong)
        rng.shuffle(right)
        for pair in zip(wrong, right, strict=False):
            order += rng.sample(pair, 2)
    return states.select(order[: steps * prompts_per_step])


class MonitorReward:
    """TRL reward function: the monitor env's reward for each sampled teacher reply.

    Called by ``GRPOTrainer`` with the dataset columns of
    :func:`monitor_states`; returns one float per completion and logs the
    mean of each reward component, the intervention rate and the share of
    unparsable replies through ``log_metric``.  :attr:`last_components`
    keeps the per-completion components of the latest call.
    """

    __name__ = "monitor_reward"

    def __init__(
        self,
        env_id: str = "IntBench-Math-v0",
        env_kwargs: dict[str, Any] | None = None,
        pool: EnvPool | None = None,
    ):
        self.pool = pool or EnvPool(env_id, env_kwargs)
        if self.pool.spec is not MONITOR:
            raise ValueError(f"MonitorReward needs a monitor env id, got {self.pool.env_id!r}")
        self.last_components: list[dict[str, float]] = []

    def __call__(
        self,
        prompts: list,
        completions: list,
        problem_index: list[int],
        waits: list[int],
        seed: list[int],
        log_metric=None,
        **_: Any,
    ) -> list[float]:
        actions = [decision_action(completion_text(c)) for c in completions]
        envs = self.pool.take(len(actions))
        results = self.pool.run(
            [
                _decision_flow(env, int(i), int(w), int(s), action)
                for env, i, w, s, action in zip(
                    envs, problem_index, waits, seed, actions, strict=True
                )
            ]
        )
        self.last_components = [components for _, components, _ in results]
        if log_metric is not None:
            for name in MONITOR.reward_components:
                log_metric(
                    f"monitor/{name}", float(np.mean([c[name] for c in self.last_components]))
                )
            log_metric(
                "monitor/decided_intervene", float(np.mean([a["intervene"] for a in actions]))
            )
            log_metric("monitor/unparsable", float(np.mean(["error" in a for a in actions])))
        return [reward for reward, _, _ in results]


def monitor_format_reward(completions: list, **_: Any) -> list[float]:
    """TRL reward function: -1 for a reply that does not parse, else 0.

    The env plays a malformed reply as a wait, so without this term a policy
    can drift into unparsable text wherever waiting pays (TRL logs it as
    ``rewards/monitor_format_reward``)."""
    return [-1.0 if "error" in decision_action(completion_text(c)) else 0.0 for c in completions]


def monitor_rewards(
    env_id: str = "IntBench-Math-v0",
    format_reward: bool = True,
    pool: EnvPool | None = None,
    **env_kwargs: Any,
) -> list:
    """Reward functions for ``GRPOTrainer(reward_funcs=...)`` on a monitor env:
    the env's reward and, unless ``format_reward=False``, :func:`monitor_format_reward`
    (weigh them with ``GRPOConfig.reward_weights``).

    ``env_kwargs`` are ``gym.make`` options (``student``, ``problems``,
    ``reward``, ``increment``, ...); use the same ones as for :func:`monitor_states`,
    or pass the ``pool`` the states were built from.
    """
    env_reward = MonitorReward(env_id, env_kwargs, pool=pool)
    return [env_reward, monitor_format_reward] if format_reward else [env_reward]
