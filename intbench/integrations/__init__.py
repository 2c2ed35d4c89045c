"""Adapters for the stacks users already run: TRL's ``environment_factory``
(:mod:`intbench.integrations.trl`), OpenEnv servers
(:mod:`intbench.integrations.openenv`) and verifiers environments
(:mod:`intbench.integrations.verifiers`, loaded by verifiers as
``intbench-monitor``, ``intbench-feedback`` and ``intbench-tutor``).  Each
imports its third-party package only when used."""
