"""Environment ids, registered with Gymnasium when ``intbench`` is imported.

``gym.make("IntBench-Math-v0")`` works after ``import intbench``;
``gym.make("intbench:IntBench-Math-v0")`` imports the package itself.
"""

from __future__ import annotations

import gymnasium as gym

# domain -> the name part of its env ids
ENV_NAMES = {
    "math": "Math",
    "omni_math": "OmniMath",
    "codeforces": "Codeforces",
    "debug": "Debug",
    "linguini": "Linguini",
    "arc": "ARC",
    "brainteaser": "BrainTeaser",
}

PROTOCOLS = {
    # protocol -> (id suffix, env entry point, batched vector entry point)
    "monitor": ("", "intbench.envs.monitor:MonitorEnv", "intbench.envs.vector:batched_monitor"),
    "feedback": (
        "-Feedback",
        "intbench.envs.feedback:FeedbackEnv",
        "intbench.envs.vector:batched_feedback",
    ),
    "tutor": ("-Tutor", "intbench.envs.tutor:TutorEnv", "intbench.envs.tutor:batched_tutor"),
}


def env_id(domain: str, protocol: str = "monitor") -> str:
    suffix = PROTOCOLS[protocol][0]
    return f"IntBench-{ENV_NAMES[domain]}{suffix}-v0"


def register_envs() -> None:
    """Register every IntBench id (idempotent)."""
    for protocol, (_, entry_point, vector_entry_point) in PROTOCOLS.items():
        for domain in ENV_NAMES:
            name = env_id(domain, protocol)
            if name in gym.registry:
                continue
            gym.register(
                id=name,
                entry_point=entry_point,
                vector_entry_point=vector_entry_point,
                kwargs={"domain": domain},
                disable_env_checker=False,
            )


def protocol_of(spec_id: str) -> str:
    """The protocol of an IntBench env id (``"monitor"``, ``"feedback"``, ``"tutor"``)."""
    name = spec_id.split(":")[-1]  # "intbench:IntBench-Math-v0" -> "IntBench-Math-v0"
    for protocol in PROTOCOLS:
        if name in {env_id(d, protocol) for d in ENV_NAMES}:
            return protocol
    raise ValueError(f"{spec_id!r} is not an IntBench env id; known: {', '.join(all_env_ids())}")


def all_env_ids(protocol: str | None = None) -> list[str]:
    protocols = [protocol] if protocol else list(PROTOCOLS)
    return [env_id(d, p) for p in protocols for d in ENV_NAMES]
