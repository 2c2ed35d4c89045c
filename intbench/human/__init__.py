"""People as teachers: a web app for the human study of the monitor protocol.

``intbench serve`` runs it (see :mod:`intbench.commands.serve`).  Each trial is
a :class:`~intbench.envs.monitor.MonitorEnv` episode played with a
participant's clicks and written to the run directory ``DIR`` with
``teacher="human:<id>"``, so ``intbench report`` puts people next to LLM
teachers.  Needs the ``human`` extra (Flask, waitress).
"""

from intbench.lazy import lazy_attributes

# Loaded on first access: the CLI reads StudyConfig's fields to build `serve`'s
# flags, and every command would otherwise import the study's service too.
__getattr__ = lazy_attributes(
    __name__,
    {
        "ActionError": "intbench.human.service",
        "AlreadyDone": "intbench.human.service",
        "Study": "intbench.human.service",
        "ProblemView": "intbench.human.study",
        "StudyConfig": "intbench.human.study",
        "play_trial": "intbench.human.study",
        "warm_up": "intbench.human.study",
    },
)

__all__ = [
    "ActionError",
    "AlreadyDone",
    "ProblemView",
    "Study",
    "StudyConfig",
    "play_trial",
    "warm_up",
]
