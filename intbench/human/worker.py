"""The background worker that runs the student's continuation after a person's intervention.

A submitted intervention is recorded at once with a placeholder attempt
(``metadata.human.continuation = "pending"``, ``error`` set so metrics skip
it).  This worker replays the trial with the configured student, and the
completed record (same episode id, ``continuation = "done"``, or ``"failed"``
if the model failed) is appended after it; ``intbench report`` keeps the
latest record of each episode.  Pending trials found at start-up are queued
again, so a restart never loses a continuation.
"""

from __future__ import annotations

import copy
import logging
import queue
import threading
from collections.abc import Callable

from intbench.human.study import StudyConfig, play_trial
from intbench.records import Episode

logger = logging.getLogger(__name__)


def complete_record(config: StudyConfig, pending: Episode) -> Episode:
    """The pending record's trial replayed with the real student continuation."""
    human = pending.metadata["human"]
    record = play_trial(
        config, pending.problem_id, human["env_seed"], human["decision"], defer=False
    )
    record.teacher = pending.teacher
    record.metadata["run_key"] = pending.metadata["run_key"]
    record.metadata["human"] = {
        **copy.deepcopy(human),
        "continuation": "failed" if record.error else "done",
    }
    for key in ("teacher_s", "reading_s"):
        if key in pending.timings:
            record.timings[key] = pending.timings[key]
    return record


class ContinuationWorker:
    """One daemon thread that completes pending records in submission order.

    Args:
        config: the study (for replaying trials).
        append: called with each completed record; it must persist it (under the study's lock).
    """

    def __init__(self, config: StudyConfig, append: Callable[[Episode], None]):
        self.config = config
        self._append = append
        self._queue: queue.Queue[Episode | None] = queue.Queue()
        self._thread = threading.Thread(
            target=self._run, name="intbench-continuations", daemon=True
        )
        self._thread.start()

    def submit(self, pending: Episode) -> None:
        self._queue.put(copy.deepcopy(pending))

    def wait_idle(self) -> None:
        """Block until every submitted continuation has been processed (for tests and shutdown)."""
        self._queue.join()

    def stop(self) -> None:
        self._queue.put(None)
        self._thread.join(timeout=30)

    def _run(self) -> None:
        while True:
            pending = self._queue.get()
            if pending is None:
                self._queue.task_done()
                return
            try:
                self._append(complete_record(self.config, pending))
            except Exception:  # a failed replay stays pending and is retried at the next start
                logger.exception("continuation of trial %s failed", pending.metadata["run_key"])
            finally:
                self._queue.task_done()
