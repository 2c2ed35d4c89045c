"""IntBench: Gymnasium environments for student-teacher problem solving with LLMs."""

from intbench.envs import register_envs  # noqa: F401  (importing registers every env id)
from intbench.envs.registration import register_domain
from intbench.records import DOMAINS, Attempt, Episode, Problem, Verdict
from intbench.verifiers import verify

__version__ = "0.1.0"

# Loaded on first access so that ``import intbench`` stays fast.
_LAZY = {"load_problems": "intbench.envs.domains"}


def __getattr__(name: str):
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'intbench' has no attribute {name!r}")


__all__ = [
    "DOMAINS",
    "Attempt",
    "Episode",
    "Problem",
    "Verdict",
    "load_problems",
    "register_domain",
    "verify",
    "__version__",
]
