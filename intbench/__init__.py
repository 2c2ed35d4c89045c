"""IntBench: Gymnasium environments for student-teacher problem solving with LLMs."""

from intbench.envs import register_envs
from intbench.envs.registration import register_domain
from intbench.lazy import lazy_attributes
from intbench.records import Attempt, Episode, Problem, Verdict
from intbench.verifiers import verify

__version__ = "0.1.0"

# Loaded on first access so that ``import intbench`` stays fast; ``DOMAINS`` is
# read from the registry on every access, so it lists domains registered later.
__getattr__ = lazy_attributes(
    __name__, {"load_problems": "intbench.envs.domains", "DOMAINS": "intbench.records"}
)

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

# Last, once every name above exists: plugin domains (entry points) may import them.
register_envs()
