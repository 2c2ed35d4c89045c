"""The verifiers environment ``intbench-tutor``: IntBench's tutor protocol (see :mod:`intbench.integrations.verifiers`)."""

from intbench.integrations.verifiers import TutorTaskset, IntBenchEnv

__all__ = ["TutorTaskset", "IntBenchEnv"]
