"""The monitor protocol (Int-Bench): the teacher watches a solution being revealed and
intervenes once or never."""

from __future__ import annotations

from intbench.agents.base import SamplingParams
from intbench.protocols.spec import TEACHING_COMPONENTS, ProtocolSpec, register_protocol


def parse_reply(text: str, condition: str | None) -> dict:
    """A Standard reply's decision and message, or an Oracle reply's quote."""
    from intbench.agents.parsing import (
        MonitorDecision,
        OracleDecision,
        parse_monitor_decision,
        parse_oracle_decision,
    )

    decision: MonitorDecision | OracleDecision
    if condition == "oracle":
        decision = parse_oracle_decision(text)
        extra = {"quote": decision.quote or "", "position": -1}
    else:
        decision = parse_monitor_decision(text)
        extra = {}
    if decision.error:
        return {
            "intervene": 0,
            "message": "",
            "error": f"unparsable teacher reply: {decision.error}",
        }
    return {"intervene": int(bool(decision.intervene)), "message": decision.message or "", **extra}


def telling_outcomes(
    alone: int, helped: int, variant_alone: int, variant_helped: int
) -> tuple[dict[str, float], dict[str, float]]:
    """Intervening with a leak against waiting, whose outcome is the baseline's."""
    from intbench.envs.rewards import monitor_components

    arms = {
        "transfer": variant_helped,
        "transfer_alone": variant_alone,
        "transfer_gain": variant_helped - variant_alone,
    }
    alone_arm = {"transfer": variant_alone, "transfer_alone": variant_alone}
    tell = monitor_components(bool(alone), True, bool(helped), True, arms, True)
    wait = monitor_components(bool(alone), False, None, False, alone_arm)
    return tell, wait


SPEC = register_protocol(
    ProtocolSpec(
        name="monitor",
        id_tag="",
        entry_point="intbench.envs.monitor:MonitorEnv",
        vector_entry_point="intbench.envs.vector:batched_monitor",
        options="intbench.envs.env_options:MonitorOptions",
        title="the monitor protocol",
        teacher_templates=(
            "teacher_standard",
            "teacher_standard_append",
            "teacher_standard_v1",
            "teacher_standard_v2",
            "teacher_oracle",
        ),
        # Int-Bench (§4.1) states only T=0.7; the token limit (a decision with a short
        # message) is this project's.
        teacher_sampling=SamplingParams(temperature=0.7, top_p=0.95, max_tokens=256),
        parse_reply="intbench.protocols.monitor:parse_reply",
        reward_components=(
            "baseline_correct",
            "post_correct",
            "intervened",
            "helpfulness",
            *TEACHING_COMPONENTS,
        ),
        telling_outcomes="intbench.protocols.monitor:telling_outcomes",
        summarize="intbench.metrics.summary:summarize_monitor",
        final_correct="intbench.export:monitor_final_correct",
        export_columns="intbench.export:monitor_columns",
        report_outcome="intbench.report.html:monitor_outcome",
        report_view="intbench.report.html:monitor_view",
        teacher_messages="intbench.analysis.messages:intervention_messages",
        trl_tools="intbench.integrations.trl:monitor_tools",
        grpo="intbench.training.trainer:monitor_grpo",
        sft="intbench.training.sft:MONITOR_SFT",
        policy_teachers=True,
        incremental=True,
        parsed_actions=True,
        interventions=True,
    )
)
