"""The tutor protocol (KITE): teacher and student discuss ideas, then the student solves
alone."""

from __future__ import annotations

from intbench.agents.base import SamplingParams
from intbench.protocols.spec import TEACHING_COMPONENTS, ProtocolSpec, register_protocol


def parse_reply(text: str, condition: str | None) -> str:
    """The tutor env reads a dialogue turn as it is."""
    return text


SPEC = register_protocol(
    ProtocolSpec(
        name="tutor",
        id_tag="-Tutor",
        entry_point="intbench.envs.tutor:TutorEnv",
        vector_entry_point="intbench.envs.tutor:batched_tutor",
        options="intbench.envs.env_options:TutorOptions",
        title="the tutor protocol",
        teacher_templates=("tutor_teacher_ideation",),
        # KITE (§4) states only T=0.7; the token limit (a dialogue turn) is this project's.
        teacher_sampling=SamplingParams(temperature=0.7, top_p=0.95, max_tokens=1024),
        parse_reply="intbench.protocols.tutor:parse_reply",
        reward_components=TEACHING_COMPONENTS,
        telling_outcomes="intbench.protocols.feedback:attempts_telling_outcomes",
        summarize="intbench.metrics.summary:summarize_tutor",
        final_correct="intbench.export:attempts_final_correct",
        export_columns="intbench.export:tutor_columns",
        report_outcome="intbench.report.html:attempts_outcome",
        report_view="intbench.report.html:attempts_view",
        teacher_messages="intbench.analysis.messages:no_messages",
        trl_tools="intbench.integrations.trl:tutor_tools",
        collaboration_condition="ideation",
        solo_conditions=("solo", "calibration"),
    )
)
