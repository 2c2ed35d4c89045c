"""The verifiers environment ``intbench-monitor``: IntBench's monitor protocol (see :mod:`intbench.integrations.verifiers`)."""

from intbench.integrations.verifiers import IntBenchEnv, MonitorTaskset

__all__ = ["MonitorTaskset", "IntBenchEnv"]
