"""The verifiers environment ``intbench-monitor``: IntBench's monitor protocol (see :mod:`intbench.integrations.verifiers`)."""

from intbench.integrations.verifiers import MonitorTaskset, IntBenchEnv

__all__ = ["MonitorTaskset", "IntBenchEnv"]
