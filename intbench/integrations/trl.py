"""TRL ``environment_factory`` adapters: train a teacher on any IntBench env with tool calls.

TRL's ``GRPOTrainer(environment_factory=...)`` (trl >= 0.29) builds one
instance per rollout, calls ``reset(**row)`` with the dataset row, offers the
instance's public methods to the model as tools and adds ``get_reward()`` as a
reward function.  :func:`environment_factory` turns an env id and its
``gym.make`` options into such a class, with one tool per action of the
protocol:

* monitor: ``wait()`` (reveal more of the student's reasoning) and
  ``intervene(message)`` (Oracle condition: ``intervene(message, quote)``);
* feedback: ``give_feedback(feedback)`` and ``wait()`` (a plain retry);
* tutor: ``send_message(message)`` and ``wait()`` (say nothing this turn).

Each tool call is one env step; the tool returns what the teacher sees next.
The prompt is the env's own teacher prompt (:func:`tool_dataset` puts its
system message in the dataset, ``reset`` returns its user message) plus a line
naming the tools.  ``get_reward()`` is the env's episode return; an episode
the model leaves unfinished is played out with ``wait`` first (the teacher
stops helping, which is what the protocol does without a teacher), so stopping
early earns exactly what waiting does.

Models whose chat template cannot render tool calls (SmolLM2's) get a
ChatML tool-calling template from :func:`with_tool_calling`.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym

from intbench.extras import require
from intbench.protocols import protocol_of_env_id

DONE = "The episode is over."


def _episode_over(tool: str) -> ValueError:
    return ValueError(f"{tool}: {DONE} No more actions until the next reset.")


class IntBenchToolEnv:
    """Base of the generated classes: one IntBench env played through tool calls.

    Subclasses set ``env_id`` and ``make_kwargs`` (the ``gym.make`` arguments)
    and define the protocol's tools.
    """

    env_id: str = ""
    make_kwargs: dict[str, Any] = {}
    tool_note: str = ""

    def __init__(self) -> None:
        self.env = gym.make(self.env_id, **self.make_kwargs)
        self._observation: dict = {}
        self._total = 0.0
        self._done = True

    def reset(self, problem_index: int = 0, seed: int = 0, **row: Any) -> str:
        """Start the episode on the row's problem; returns the teacher's prompt text
        (appended by TRL to the row's empty user message)."""
        observation, info = self.env.reset(
            seed=int(seed), options={"problem_index": int(problem_index)}
        )
        self._observation, self._total, self._done = observation, 0.0, False
        messages = info["messages"]
        if not messages:  # the episode ended before the teacher's turn (solved alone)
            self.get_reward()
            return f"The student needed no teacher here. {DONE}"
        expected = row.get("prompt")
        if expected is not None and list(expected[:-1]) != list(messages[:-1]):
            raise ValueError(
                f"the dataset's prompt does not match {self.env_id}'s system prompt: build the "
                "dataset with tool_dataset() and the same env options"
            )
        return messages[-1]["content"] + "\n\n" + self.tool_note

    def get_reward(self) -> float:
        """The env's return for the episode; an unfinished one is played out with ``wait``."""
        while not self._done:
            self._step(self._wait_action(), "get_reward")
        return self._total

    # ------------------------------------------------------------- internals
    def _wait_action(self) -> Any:
        return {"intervene": 0, "message": ""}

    def _step(self, action: Any, tool: str) -> tuple[dict, dict]:
        if self._done:
            raise _episode_over(tool)
        observation, reward, terminated, truncated, info = self.env.step(action)
        self._observation = observation
        self._total += float(reward)
        self._done = bool(terminated or truncated)
        if info.get("action_error"):
            raise ValueError(f"{tool}: {info['action_error']}")
        return observation, info


class MonitorTools(IntBenchToolEnv):
    """Monitor protocol (Int-Bench): watch the student's reasoning, intervene once or never."""

    tool_note = (
        "Act by calling a tool instead of replying in the format above: wait() to read "
        "more of the student's reasoning, or intervene(message) to help now (once)."
    )

    def wait(self) -> str:
        """Keep watching: reveal the next part of the student's reasoning.

        Returns:
            The newly revealed reasoning, or a note that the episode is over.
        """
        before = len(self._observation["transcript"])
        observation, _ = self._step(self._wait_action(), "wait")
        if self._done:
            return f"The student finished without your help. {DONE}"
        return "The student continued:\n" + observation["transcript"][before:]

    def intervene(self, message: str) -> str:
        """Send the student one message now; the student then continues alone.

        Args:
            message: What to tell the student.

        Returns:
            A note that the student continued and the episode is over.
        """
        self._step({"intervene": 1, "message": message}, "intervene")
        return f"The student read your message and continued. {DONE}"


class OracleMonitorTools(IntBenchToolEnv):
    """Monitor protocol, Oracle condition: the whole trace is shown; one decision."""

    tool_note = (
        "Act by calling a tool instead of replying in the format above: wait() to leave "
        "the student alone, or intervene(message, quote) to help at the quoted place."
    )

    def wait(self) -> str:
        """Do not intervene: the student's answer stands.

        Returns:
            A note that the episode is over.
        """
        self._step(self._wait_action(), "wait")
        return f"The student keeps its answer. {DONE}"

    def intervene(self, message: str, quote: str) -> str:
        """Insert a message into the student's reasoning where ``quote`` occurs.

        Args:
            message: What to tell the student.
            quote: About five words copied from the student's reasoning, marking
                where the message goes.

        Returns:
            A note that the student continued from there and the episode is over.
        """
        self._step({"intervene": 1, "message": message, "quote": quote}, "intervene")
        return f"The student read your message and continued. {DONE}"


class FeedbackTools(IntBenchToolEnv):
    """Feedback protocol: comment on each failed attempt; the student retries."""

    tool_note = (
        "Act by calling a tool instead of replying in the format above: "
        "give_feedback(feedback) to comment on the attempt, or wait() to let the student "
        "retry without feedback."
    )

    def give_feedback(self, feedback: str) -> str:
        """Give the student feedback on its latest attempt; it then tries again.

        Args:
            feedback: The feedback message (without the final answer).

        Returns:
            The student's next attempt with its test results, or how the episode ended.
        """
        return self._after(self._step({"intervene": 1, "message": feedback}, "give_feedback"))

    def wait(self) -> str:
        """Say nothing: the student tries again on its own.

        Returns:
            The student's next attempt with its test results, or how the episode ended.
        """
        return self._after(self._step(self._wait_action(), "wait"))

    def _after(self, step: tuple[dict, dict]) -> str:
        observation, info = step
        k = int(info["attempt"])
        if info["solved_at"]:
            return f"Attempt {k} is correct. {DONE}"
        if self._done:
            return f"Attempt {k} is still not correct and no attempts are left. {DONE}"
        execution = observation["execution"]
        return f"Attempt {k} is still not correct:\n{observation['attempt']}" + (
            f"\n\nTest results:\n{execution}" if execution else ""
        )


class TutorTools(IntBenchToolEnv):
    """Tutor protocol (KITE): discuss ideas with the student, who then solves alone."""

    tool_note = (
        "Act by calling a tool instead of replying with plain text: send_message(message) "
        "to talk to the student, or wait() to let it go on."
    )

    def send_message(self, message: str) -> str:
        """Send the student a message (ideas only: no code, calculations or answer).

        Args:
            message: What to tell the student.

        Returns:
            The student's reply, or how the episode ended.
        """
        return self._after(self._step({"intervene": 1, "message": message}, "send_message"))

    def wait(self) -> str:
        """Say nothing this turn.

        Returns:
            The student's reply, or how the episode ended.
        """
        return self._after(self._step(self._wait_action(), "wait"))

    def _after(self, step: tuple[dict, dict]) -> str:
        observation, info = step
        if self._done:
            outcome = "solved" if info["solved_at"] else "did not solve"
            return f"The student then worked alone and {outcome} the problem. {DONE}"
        return "Student: " + observation["student_message"]


def monitor_tools(make_kwargs: dict[str, Any]) -> type[IntBenchToolEnv]:
    return OracleMonitorTools if make_kwargs.get("condition") == "oracle" else MonitorTools


def feedback_tools(make_kwargs: dict[str, Any]) -> type[IntBenchToolEnv]:
    return FeedbackTools


def tutor_tools(make_kwargs: dict[str, Any]) -> type[IntBenchToolEnv]:
    return TutorTools


def _tools_class(env_id: str, make_kwargs: dict[str, Any]) -> type[IntBenchToolEnv]:
    return protocol_of_env_id(env_id).hook("trl_tools")(make_kwargs)


def environment_factory(env_id: str, **make_kwargs: Any) -> type[IntBenchToolEnv]:
    """A class for ``GRPOTrainer(environment_factory=...)`` that plays ``env_id``.

    Args:
        env_id: Any IntBench env id (``IntBench-Math-v0``, ``IntBench-Code-Feedback-v0``, ...).
        **make_kwargs: ``gym.make`` options of the env (``student``, ``n``, ``k_max``, ...).

    Returns:
        A zero-argument class named after the env id (TRL logs its reward as
        ``rewards/<name>/mean``); each instance owns one env.
    """
    import intbench  # noqa: F401  (registers the ids)

    base = _tools_class(env_id, make_kwargs)
    name = env_id.split(":")[-1].replace("-", "_")
    return type(name, (base,), {"env_id": env_id, "make_kwargs": dict(make_kwargs)})


def tool_dataset(env_class: type[IntBenchToolEnv], size: int | None = None, seed: int = 0):
    """A ``datasets.Dataset`` of episodes for ``env_class``: one row per episode.

    Columns: ``prompt`` (the env's system message and an empty user message,
    which ``reset`` fills with the teacher's prompt), ``problem_index`` and
    ``seed``.  Rows cycle through the env's problems (``size`` defaults to one
    row per problem), each with its own seed.
    """
    import numpy as np

    require("train", "datasets", "tool_dataset")
    from datasets import Dataset

    from intbench.envs.common import flow_env

    probe = env_class()
    problems = len(flow_env(probe.env).problems)
    _, info = probe.env.reset(seed=seed, options={"problem_index": 0})
    system = list(info["messages"][:-1])
    probe.env.close()
    rng = np.random.default_rng(seed)
    rows = [
        {
            "prompt": [*system, {"role": "user", "content": ""}],
            "problem_index": i % problems,
            "seed": int(rng.integers(2**31 - 1)),
        }
        for i in range(size or problems)
    ]
    return Dataset.from_list(rows)


def with_tool_calling(tokenizer: Any) -> Any:
    """``tokenizer`` with a chat template that renders tool calls and a response parser.

    A template that already supports tool calling is kept.  A ChatML model
    (``<|im_start|>``/``<|im_end|>`` tokens, as SmolLM2) whose template lacks
    tools gets TRL's ChatML tool template (Qwen2.5's: tools listed in the
    system message, calls in ``<tool_call>`` tags; give every prompt a system
    message, or the template inserts Qwen's default one).  Other templates
    raise, naming the fix.
    """
    require("train", "trl", "with_tool_calling")
    from trl.chat_template_utils import (
        add_response_schema,
        qwen2_5_chat_template,
        supports_tool_calling,
    )

    if not supports_tool_calling(tokenizer):
        vocab = tokenizer.get_vocab()
        if "<|im_start|>" not in vocab or "<|im_end|>" not in vocab:
            raise ValueError(
                "this tokenizer's chat template cannot render tool calls and it is not a ChatML "
                "model: set tokenizer.chat_template to a tool-calling template of its family"
            )
        tokenizer.chat_template = qwen2_5_chat_template
    return add_response_schema(tokenizer)
