"""IntBench: Gymnasium environments for student-teacher problem solving with LLMs."""

from intbench.records import DOMAINS, Attempt, Episode, Problem, Verdict
from intbench.verifiers import verify

__version__ = "0.1.0"

__all__ = ["DOMAINS", "Attempt", "Episode", "Problem", "Verdict", "verify", "__version__"]
