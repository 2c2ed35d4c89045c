"""Wrappers for plugging IntBench envs into text-in, text-out agent code."""

from __future__ import annotations

import logging

import gymnasium as gym

from intbench.agents.parsing import (
    MonitorDecision,
    OracleDecision,
    parse_monitor_decision,
    parse_oracle_decision,
)
from intbench.envs.spaces import UnicodeText

logger = logging.getLogger(__name__)


class TeacherTextActions(gym.ActionWrapper):
    """Accept the teacher's raw reply in the paper's format as the action.

    Standard: ``Intervene: Yes/No`` (+ ``Time:``) + ``Intervention: <message>``.
    Oracle: ``Intervene:``, ``Quote:`` (about five words of the trace) and
    ``Intervention:``.  A reply that does not parse counts as *wait* / no
    intervention; the parser's complaint is logged and reported by the env in
    ``info["action_error"]``.  Dict or 0/1 actions pass through unchanged.
    """

    def __init__(self, env: gym.Env):
        super().__init__(env)
        self.action_space = UnicodeText(20_000)

    def action(self, action):
        if not isinstance(action, str):
            return action
        parsed: MonitorDecision | OracleDecision
        # Envs without a condition (not the monitor's) get the standard format.
        if getattr(self.env.unwrapped, "condition", "standard") == "oracle":
            parsed = parse_oracle_decision(action)
            result = {
                "intervene": int(bool(parsed.intervene)),
                "message": parsed.message or "",
                "quote": parsed.quote or "",
            }
        else:
            parsed = parse_monitor_decision(action)
            result = {"intervene": int(bool(parsed.intervene)), "message": parsed.message or ""}
        if parsed.error:
            logger.info("unparsable teacher reply (%s); treated as no intervention", parsed.error)
            # An unusable reply is the malformed-action case: the env records it.
            return {
                "intervene": 0,
                "message": "",
                "error": f"unparsable teacher reply: {parsed.error}",
            }
        return result
