"""The human study's continuation worker: failures stay pending and the worker goes on."""

from __future__ import annotations

import logging

from intbench.human import worker
from intbench.records import Episode


def test_a_failed_continuation_is_logged_and_later_ones_still_run(monkeypatch, caplog):
    def complete(config, pending: Episode) -> Episode:
        if pending.metadata["run_key"] == "t1":
            raise RuntimeError("replay failed")
        return pending

    monkeypatch.setattr(worker, "complete_record", complete)
    completed: list[Episode] = []
    continuations = worker.ContinuationWorker(None, completed.append)
    with caplog.at_level(logging.ERROR, logger=worker.__name__):
        for key in ("t1", "t2"):
            continuations.submit(
                Episode("monitor", "p", "math", "student", metadata={"run_key": key})
            )
        continuations.wait_idle()
    continuations.stop()
    assert [record.metadata["run_key"] for record in completed] == ["t2"]
    assert "continuation of trial t1 failed" in caplog.text
