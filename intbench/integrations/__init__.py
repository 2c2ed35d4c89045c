"""Adapters for the stacks users already run: TRL's ``environment_factory``
(:mod:`intbench.integrations.trl`) and OpenEnv servers
(:mod:`intbench.integrations.openenv`).  Each imports its third-party package
only when used."""
