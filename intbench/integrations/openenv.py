"""Serve any IntBench env over OpenEnv's HTTP/WebSocket protocol (openenv-core >= 0.3).

``python -m intbench.integrations.openenv --env IntBench-Math-Feedback-v0 --port 8000``
(or ``intbench serve-env``) starts an OpenEnv server built with
``openenv.core.env_server.create_app``.  Each WebSocket session gets its own env
(up to ``--max-sessions`` at once); OpenEnv clients such as ``GenericEnvClient``
or :class:`IntBenchClient` play it::

    with IntBenchClient(base_url="http://127.0.0.1:8000").sync() as env:
        result = env.reset(seed=0)                   # result.observation.messages: the prompt
        result = env.step(IntBenchAction(intervene=1, message="Check step 2."))

Action (:class:`IntBenchAction`): the env's action as fields: ``intervene``
(0/1), ``message``, and for the monitor's Oracle condition ``position`` or
``quote``.  Observation (:class:`IntBenchObservation`): ``messages`` (the
teacher's prompt as chat messages, as ``info["messages"]`` of the Gymnasium env),
``teacher_turn``, ``fields`` (the Gymnasium observation as JSON), ``info``
(the step's info as JSON: ``problem_id``, ``action_error``, and at the end
``record``, the episode record), ``reward`` and ``done``.  ``reset`` takes
``seed``, ``problem_index`` and ``problem_id``, as the env's reset options.
"""

from __future__ import annotations

import argparse
import json
import sys
import uuid
from collections.abc import Mapping
from typing import Any

import gymnasium as gym
import numpy as np

from intbench.extras import MissingExtra, require

try:
    require("openenv", "openenv.core", "serving IntBench over OpenEnv")
except MissingExtra as exc:
    if __name__ == "__main__":
        print(f"error: {exc}", file=sys.stderr)
        sys.exit(2)
    raise
from openenv.core.client_types import StepResult  # noqa: E402 -- after the extra's check
from openenv.core.env_client import EnvClient  # noqa: E402
from openenv.core.env_server import create_app  # noqa: E402
from openenv.core.env_server.interfaces import Environment  # noqa: E402
from openenv.core.env_server.types import Action, Observation, State  # noqa: E402
from pydantic import Field  # noqa: E402


def _jsonable(value: Any) -> Any:
    """Gymnasium observations and infos (numpy scalars, read-only mappings) as JSON values."""
    if isinstance(value, Mapping):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, np.generic):
        return value.item()
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    return json.loads(json.dumps(value, default=str))


class IntBenchAction(Action):
    """The teacher's action."""

    intervene: int = Field(0, ge=0, le=1, description="1: send the message; 0: wait / say nothing")
    message: str = Field("", description="the teacher's message (feedback, intervention, reply)")
    position: int | None = Field(
        None, description="monitor Oracle condition: character position of the intervention"
    )
    quote: str | None = Field(
        None, description="monitor Oracle condition: ~5 words of the trace marking the place"
    )


class IntBenchObservation(Observation):
    """What the teacher sees after a reset or a step."""

    messages: list[dict[str, str]] = Field(
        default_factory=list, description="the teacher's prompt as chat messages"
    )
    teacher_turn: bool = Field(True, description="whether the next action is read")
    fields: dict[str, Any] = Field(default_factory=dict, description="the Gymnasium observation")
    info: dict[str, Any] = Field(default_factory=dict, description="the step's info, as JSON")


class IntBenchEnvironment(Environment):
    """One IntBench env as an OpenEnv environment; subclasses bind ``env_id`` and
    ``make_kwargs`` (see :func:`environment_class`)."""

    SUPPORTS_CONCURRENT_SESSIONS = True
    env_id: str = ""
    make_kwargs: dict[str, Any] = {}

    def __init__(self) -> None:
        super().__init__()
        import intbench  # noqa: F401  (registers the ids)

        self.env = gym.make(self.env_id, **self.make_kwargs)
        self._state = State()

    def reset(
        self,
        seed: int | None = None,
        episode_id: str | None = None,
        problem_index: int | None = None,
        problem_id: str | None = None,
        **kwargs: Any,
    ) -> IntBenchObservation:
        options = {
            k: v
            for k, v in {"problem_index": problem_index, "problem_id": problem_id}.items()
            if v is not None
        }
        observation, info = self.env.reset(seed=seed, options=options or None)
        self._state = State(episode_id=episode_id or str(uuid.uuid4()), step_count=0)
        return self._observation(observation, info, None, False)

    def step(
        self, action: IntBenchAction, timeout_s: float | None = None, **kwargs: Any
    ) -> IntBenchObservation:
        env_action: dict[str, Any] = {"intervene": action.intervene, "message": action.message}
        env_action.update(
            {
                k: v
                for k, v in (("position", action.position), ("quote", action.quote))
                if v is not None
            }
        )
        observation, reward, terminated, truncated, info = self.env.step(env_action)
        self._state.step_count += 1
        return self._observation(observation, info, float(reward), terminated or truncated)

    @property
    def state(self) -> State:
        return self._state

    def close(self) -> None:
        self.env.close()

    def _observation(self, observation, info, reward, done) -> IntBenchObservation:
        info = _jsonable(info)
        messages = info.pop("messages", [])
        return IntBenchObservation(
            messages=messages,
            teacher_turn=bool(info.pop("teacher_turn", bool(messages) and not done)),
            fields=_jsonable(observation),
            info=info,
            reward=reward,
            done=bool(done),
        )


def environment_class(env_id: str, **make_kwargs: Any) -> type[IntBenchEnvironment]:
    """An :class:`IntBenchEnvironment` class (a zero-argument factory for
    ``create_app``) that makes ``env_id`` with ``make_kwargs``."""
    import intbench.envs.registration as registration

    registration.protocol_of(env_id)  # an unknown id fails here, not in every session
    name = env_id.split(":")[-1].replace("-", "_")
    return type(name, (IntBenchEnvironment,), {"env_id": env_id, "make_kwargs": dict(make_kwargs)})


def build_app(env_id: str, max_sessions: int = 8, **make_kwargs: Any):
    """The OpenEnv FastAPI app serving ``env_id`` (one env per session)."""
    return create_app(
        environment_class(env_id, **make_kwargs),
        IntBenchAction,
        IntBenchObservation,
        env_name=env_id,
        max_concurrent_envs=max_sessions,
    )


class IntBenchClient(EnvClient[IntBenchAction, IntBenchObservation, State]):
    """A typed OpenEnv client of an IntBench server (``.sync()`` for blocking use)."""

    def _step_payload(self, action: IntBenchAction) -> dict[str, Any]:
        return action.model_dump(exclude={"metadata"}, exclude_none=True)

    def _parse_result(self, payload: dict[str, Any]) -> StepResult[IntBenchObservation]:
        observation = IntBenchObservation(
            **payload.get("observation", {}),
            reward=payload.get("reward"),
            done=payload.get("done", False),
        )
        return StepResult(observation=observation, reward=observation.reward, done=observation.done)

    def _parse_state(self, payload: dict[str, Any]) -> State:
        return State(**payload)


def serve(args: argparse.Namespace) -> int:
    """Build the app (2 on a bad env id or option) and serve until interrupted."""
    import uvicorn

    from intbench.options import parse_items

    try:
        options = parse_items(args.env_option)
        if args.student is not None:
            options["student"] = args.student
        app = build_app(args.env, max_sessions=args.max_sessions, **options)
        environment_class(args.env, **options)().close()  # bad options fail now, not per session
    except (gym.error.Error, ValueError, TypeError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    uvicorn.run(app, host=args.host, port=args.port, log_level="warning")
    return 0


def main(argv: list[str] | None = None) -> int:
    from intbench.integrations.openenv_args import add_arguments

    parser = argparse.ArgumentParser(
        prog="python -m intbench.integrations.openenv",
        description="Serve an IntBench env over OpenEnv (HTTP + WebSocket).",
    )
    add_arguments(parser)
    return serve(parser.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
