"""The verifiers environment ``intbench-tutor``: IntBench's tutor protocol (see :mod:`intbench.integrations.verifiers`)."""

from intbench.integrations.verifiers import IntBenchEnv, TutorTaskset

__all__ = ["TutorTaskset", "IntBenchEnv"]
