"""People as teachers: a web app for the human study of the monitor protocol.

``intbench serve`` runs it (see :mod:`intbench.commands.serve`).  Each trial is
a :class:`~intbench.envs.monitor.MonitorEnv` episode played with a
participant's clicks and written to the run directory ``DIR`` with
``teacher="human:<id>"``, so ``intbench report`` puts people next to LLM
teachers.  Needs the ``human`` extra (Flask, waitress).
"""

from intbench.human.service import ActionError, AlreadyDone, Study
from intbench.human.study import ProblemView, StudyConfig, play_trial, warm_up

__all__ = [
    "ActionError",
    "AlreadyDone",
    "ProblemView",
    "Study",
    "StudyConfig",
    "play_trial",
    "warm_up",
]
