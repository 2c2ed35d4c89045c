"""Seeded synthetic episode records of every protocol, at any size, for metric tests and benchmarks.

The outcomes are drawn with :class:`random.Random` (stable across Python and
NumPy versions), so the same seed gives the same records everywhere.  They
cover what the metrics treat specially: repeats of a problem, errors, failed
continuations, excluded interventions, leaked messages, withheld messages,
solo runs of only some problems.
"""

from __future__ import annotations

import random

from intbench.records import (
    Attempt,
    Episode,
    FeedbackTurn,
    Intervention,
    TutorStep,
    Verdict,
)


def _attempt(correct: bool, error: str | None = None) -> Attempt:
    if error:
        return Attempt(text="", error=error)
    return Attempt(text="", verdict=Verdict("correct" if correct else "incorrect"))


def _problems(n_episodes: int, groups: int, repeats: int) -> list[str]:
    count = max(2, n_episodes // (groups * repeats))
    return [f"p/{i}" for i in range(count)]


def monitor_records(n_episodes: int, seed: int = 0) -> list[Episode]:
    """Two teachers x Standard/Oracle, two repeats per problem."""
    rng = random.Random(seed)
    runs = [(t, c) for t in ("hf:teacher-a", "hf:teacher-b") for c in ("standard", "oracle")]
    problems = _problems(n_episodes, len(runs), 2)
    records = []
    for teacher, condition in runs:
        for problem in problems:
            for _ in range(2):
                right = rng.random() < 0.5
                intervention = None
                error = None
                if rng.random() < 0.6:
                    total = rng.randint(100, 2000)
                    position = rng.randint(1, total)
                    excluded = "not_found" if condition == "oracle" and rng.random() < 0.1 else None
                    failed = not excluded and rng.random() < 0.05
                    intervention = Intervention(
                        message="Check the carry.",
                        position=position,
                        tau_abs=None if excluded else position,
                        tau_rel=None if excluded else position / total,
                        excluded=excluded,
                        leaked=rng.random() < 0.2,
                        attempt=None
                        if excluded
                        else _attempt(rng.random() < 0.6, "timeout" if failed else None),
                    )
                    if failed:
                        error = "student failed after the intervention: timeout"
                baseline = _attempt(right)
                if error is None and rng.random() < 0.03:
                    baseline, error = _attempt(False, "timeout"), "student failed: timeout"
                records.append(
                    Episode(
                        protocol="monitor",
                        problem_id=problem,
                        domain="math",
                        student="hf:student",
                        teacher=teacher,
                        condition=condition,
                        config={"post": "continue", "increment": "sentence"},
                        baseline=baseline,
                        intervention=intervention,
                        error=error,
                    )
                )
    return records


def feedback_records(n_episodes: int, seed: int = 0, k_max: int = 5) -> list[Episode]:
    """Two students x (two teachers and self-refinement), one repeat of half the problems."""
    rng = random.Random(seed)
    students = ("hf:s1", "hf:s2")
    runs = [(s, t, "teacher") for s in students for t in students]
    runs += [(s, None, "self_refine") for s in students]
    problems = _problems(n_episodes, len(runs), 1)
    records = []
    for student, teacher, mode in runs:
        skill = rng.uniform(0.2, 0.6)
        for i, problem in enumerate(problems):
            for _ in range(2 if i % 2 == 0 else 1):
                solved_at = next((k for k in range(1, k_max + 1) if rng.random() < skill), None)
                tries = solved_at or k_max
                feedback = [
                    FeedbackTurn(turn=k, message="Recheck step 2.", leaked=rng.random() < 0.1)
                    for k in range(1, tries)
                ]
                error = "student failed: timeout" if rng.random() < 0.03 else None
                records.append(
                    Episode(
                        protocol="feedback",
                        problem_id=problem,
                        domain="math",
                        student=student,
                        teacher=teacher,
                        condition=mode,
                        config={"k_max": k_max},
                        attempts=[_attempt(k == solved_at) for k in range(1, tries + 1)],
                        feedback=feedback,
                        solved_at=solved_at,
                        error=error,
                    )
                )
    return records


def tutor_records(n_episodes: int, seed: int = 0) -> list[Episode]:
    """One student with a teacher (ideation) and alone (solo) on most of the problems."""
    rng = random.Random(seed)
    problems = _problems(n_episodes, 2, 2)
    records = []
    for condition in ("ideation", "solo"):
        for i, problem in enumerate(problems):
            if condition == "solo" and i % 5 == 4:
                continue  # some problems have no solo run
            for _ in range(2):
                steps = []
                if condition == "ideation":
                    steps = [
                        TutorStep(step=s, message="Try induction.", withheld=rng.random() < 0.25)
                        for s in range(rng.randint(0, 3))
                    ]
                solved = rng.random() < (0.55 if condition == "ideation" else 0.4)
                records.append(
                    Episode(
                        protocol="tutor",
                        problem_id=problem,
                        domain="math",
                        student="hf:student",
                        teacher="hf:teacher" if condition == "ideation" else None,
                        condition=condition,
                        steps=steps,
                        solved_at=1 if solved else None,
                        error="grader error" if rng.random() < 0.03 else None,
                    )
                )
    return records


def generalization_records(n_episodes: int, seed: int = 0) -> list[Episode]:
    """Two variants per original problem under each context; some pairs miss No-Context."""
    rng = random.Random(seed)
    contexts = ("no_context", "problem_context", "intervention_context")
    originals = _problems(n_episodes, 2 * len(contexts), 1)
    records = []
    for context in contexts:
        for i, original in enumerate(originals):
            for variant in range(2):
                if context == "no_context" and (i + variant) % 7 == 3:
                    continue  # a pair without its No-Context run
                solved = rng.random() < (0.5 if context == "no_context" else 0.6)
                records.append(
                    Episode(
                        protocol="generalization",
                        problem_id=f"{original}/v{variant}",
                        domain="math",
                        student="hf:student",
                        teacher="hf:teacher",
                        condition=context,
                        attempts=[_attempt(solved)],
                        metadata={
                            "original_problem_id": original,
                            "original_condition": "standard",
                        },
                        error="grader error" if rng.random() < 0.03 else None,
                    )
                )
    return records


def all_records(n_episodes: int, seed: int = 0) -> list[Episode]:
    """About ``n_episodes`` of each protocol."""
    return [
        *monitor_records(n_episodes, seed),
        *feedback_records(n_episodes, seed),
        *tutor_records(n_episodes, seed),
        *generalization_records(n_episodes, seed),
    ]
