"""IntBench: Gymnasium environments for student-teacher problem solving with LLMs."""

from intbench.envs import register_envs  # noqa: F401  (importing registers every env id)
from intbench.envs.registration import register_domain
from intbench.lazy import lazy_attributes
from intbench.records import DOMAINS, Attempt, Episode, Problem, Verdict
from intbench.verifiers import verify

__version__ = "0.1.0"

# Loaded on first access so that ``import intbench`` stays fast.
__getattr__ = lazy_attributes(__name__, {"load_problems": "intbench.envs.domains"})

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
