"""Adapters for the stacks users already run: TRL's ``environment_factory``
(:mod:`intbench.integrations.trl`), OpenEnv servers
(:mod:`intbench.integrations.openenv`) and verifiers tasksets
(:mod:`intbench.integrations.verifiers`).  Each imports its third-party
package only when used."""
