"""The feedback protocol: the teacher comments on each failed attempt and the student
retries."""

from __future__ import annotations

from intbench.agents.base import SamplingParams
from intbench.protocols.spec import TEACHING_COMPONENTS, ProtocolSpec, register_protocol


def parse_reply(text: str, condition: str | None) -> dict:
    """The feedback message of a reply; an empty one gives no feedback."""
    from intbench.agents.parsing import parse_feedback

    message = parse_feedback(text).text.strip()
    return {"intervene": int(bool(message)), "message": message}


def attempts_telling_outcomes(
    alone: int, helped: int, variant_alone: int, variant_helped: int
) -> tuple[dict[str, float], dict[str, float]]:
    """One leaking turn against an episode without the teacher's message: the
    student's success and transfer alone (feedback and tutor episodes)."""
    tell = {
        "success": helped,
        "auc": helped,
        "leaked": 1.0,
        "transfer": variant_helped,
        "transfer_alone": variant_alone,
        "transfer_gain": variant_helped - variant_alone,
        "messages": 1.0,
    }
    wait = {"success": alone, "auc": alone, "leaked": 0.0, "transfer": variant_alone,
            "transfer_alone": variant_alone, "transfer_gain": 0.0}  # fmt: skip
    return tell, wait


SPEC = register_protocol(
    ProtocolSpec(
        name="feedback",
        id_tag="-Feedback",
        entry_point="intbench.envs.feedback:FeedbackEnv",
        vector_entry_point="intbench.envs.vector:batched_feedback",
        options="intbench.envs.env_options:FeedbackOptions",
        title="the feedback protocol",
        teacher_templates=("feedback_teacher",),
        # The feedback paper's teacher (App. A.2); the runner passes the env's own
        # (its domain's limit).
        teacher_sampling=SamplingParams(temperature=1.0, top_p=0.95, max_tokens=8192),
        parse_reply="intbench.protocols.feedback:parse_reply",
        reward_components=("auc", *TEACHING_COMPONENTS),
        telling_outcomes="intbench.protocols.feedback:attempts_telling_outcomes",
        summarize="intbench.metrics.summary:summarize_feedback",
        final_correct="intbench.export:attempts_final_correct",
        export_columns="intbench.export:feedback_columns",
        report_outcome="intbench.report.html:attempts_outcome",
        report_view="intbench.report.html:attempts_view",
        teacher_messages="intbench.analysis.messages:feedback_messages",
        trl_tools="intbench.integrations.trl:feedback_tools",
        grpo="intbench.training.trainer:feedback_grpo",
        sft="intbench.training.sft:FEEDBACK_SFT",
        forwards_execution=True,
        matrix=True,
    )
)
