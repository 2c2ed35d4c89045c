"""A variant must not share its original's answer.

The transfer reward pays for what a student can do on a variant the teacher
never saw.  If the variant's answer were the original's, a teacher who
states the original's answer would also "transfer" (gcd(84, 18) and
gcd(42, 30) are both 6).  So every place that makes or reads variants drops
a variant on which the original's reference response is graded correct by
the variant's own verifier (for code: the original's reference program
passes the variant's tests).  A grading error counts as shared: the check
fails closed, because a variant kept by mistake is what a telling teacher
would be paid on.
"""

from __future__ import annotations

from intbench.records import Problem

SHARED_ANSWER = "shares the original's answer"
"""The reason recorded for a dropped variant."""


def accepted_response(problem: Problem) -> str:
    """A response the domain's verifier accepts for ``problem``: the procedural
    generator's own format where there is one, the reference program for code,
    the boxed reference answer elsewhere."""
    from intbench.envs.domains import registry

    domain = registry.get_domain(problem.domain)
    if domain.procedural_variants is not None:
        return registry.resolve(domain.procedural_variants.reference_response)(problem)
    if domain.kind == "code":
        return f"```python\n{problem.solution}\n```"
    return f"The final answer is \\boxed{{{problem.answer}}}."


def shares_answer(original: Problem, variant: Problem) -> bool:
    """Whether the original's reference response is not graded *incorrect* on ``variant``."""
    from intbench.verifiers import verify

    if original.domain != variant.domain:
        return False
    if original.answer is None and not original.solution:
        return False  # nothing to carry over
    return verify(variant, accepted_response(original)).status != "incorrect"
