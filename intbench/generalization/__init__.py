"""Variant problems and the generalization evaluation (Int-Bench).

* :mod:`~intbench.generalization.variants` — the four-step LLM pipeline
  (skill extractor, skill clusterer, problem generator, validator).
* :mod:`~intbench.generalization.procedural` — exact variants of generated
  problems, no model needed.
* :mod:`~intbench.generalization.variant_set` — the JSONL file both write.
* :mod:`~intbench.generalization.contexts` — the student on variants under
  No-Context, Problem-Context and Intervention-Context.
* :mod:`~intbench.generalization.metrics` — accuracy and G with bootstrap CIs.
"""

from intbench.generalization.contexts import (
    CONTEXTS,
    ContextUnavailable,
    GeneralizationResult,
    context_messages,
    evaluate_generalization,
)
from intbench.generalization.metrics import (
    generalization_scores,
    generalization_summary,
    generalization_table,
)
from intbench.generalization.procedural import procedural_variants
from intbench.generalization.variant_set import (
    VariantSetError,
    read_variant_set,
    sample_per_original,
    write_variant_set,
)
from intbench.generalization.variants import (
    PipelineResult,
    ProblemGenerator,
    SkillClusterer,
    SkillExtractor,
    UnsupportedDomainError,
    Validator,
    VariantPipeline,
    llm_variant_domains,
)


def __getattr__(name: str):
    # LLM_DOMAINS follows the registry, which third-party domains join after import.
    if name == "LLM_DOMAINS":
        return llm_variant_domains()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "CONTEXTS",
    "LLM_DOMAINS",
    "ContextUnavailable",
    "GeneralizationResult",
    "PipelineResult",
    "ProblemGenerator",
    "SkillClusterer",
    "SkillExtractor",
    "UnsupportedDomainError",
    "Validator",
    "VariantPipeline",
    "VariantSetError",
    "context_messages",
    "evaluate_generalization",
    "generalization_scores",
    "generalization_summary",
    "generalization_table",
    "procedural_variants",
    "read_variant_set",
    "sample_per_original",
    "write_variant_set",
]
