"""LLM-based analyses of finished runs: the leakage audit and the intervention
categorisation (Int-Bench's three-stage pipeline for functional role and
solution leakage, reported as its Table 1).

Both read a run directory's episode records, ask a judge model through one
batched, cached pass per stage, and write their results to ``DIR/analysis/``.
"""

from intbench.analysis.categorize import (
    DIMENSIONS,
    Categorization,
    CategorizationRun,
    categorize_messages,
    category_shares,
    category_table,
    load_taxonomy,
    paper_taxonomy,
    parse_category,
    parse_reason,
    parse_taxonomy,
    run_categorization,
)
from intbench.analysis.judging import CachedJudge, JudgeReply
from intbench.analysis.leakage_audit import (
    LeakageAudit,
    audit_leakage,
    leakage_summary,
    leakage_table,
    parse_leakage,
    run_leakage_audit,
)
from intbench.analysis.messages import (
    AnalysisError,
    TeacherMessage,
    collect_messages,
    load_run_problems,
)

__all__ = [
    "DIMENSIONS",
    "AnalysisError",
    "CachedJudge",
    "Categorization",
    "CategorizationRun",
    "JudgeReply",
    "LeakageAudit",
    "TeacherMessage",
    "audit_leakage",
    "categorize_messages",
    "category_shares",
    "category_table",
    "collect_messages",
    "leakage_summary",
    "leakage_table",
    "load_run_problems",
    "load_taxonomy",
    "parse_category",
    "parse_leakage",
    "paper_taxonomy",
    "parse_reason",
    "parse_taxonomy",
    "run_categorization",
    "run_leakage_audit",
]
