"""The verifiers environment ``intbench-feedback``: IntBench's feedback protocol (see :mod:`intbench.integrations.verifiers`)."""

from intbench.integrations.verifiers import FeedbackTaskset, IntBenchEnv

__all__ = ["FeedbackTaskset", "IntBenchEnv"]
