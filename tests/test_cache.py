"""The shared on-disk cache: outside a run an entry is on disk when ``put`` returns; within
a run's deferral it is seen at once, written by one thread, on disk when the run ends (or
the process exits), and a failed write costs only that entry."""

from __future__ import annotations

import json
import logging
import os
import shutil
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from intbench import cache as cache_module
from intbench.cache import JsonCache, deferred_cache_writes, flush_cache_writes

ROOT = Path(__file__).resolve().parents[1]


def on_disk(cache: JsonCache, key: str):
    return json.loads(cache._path(key).read_text(encoding="utf-8"))


def test_an_entry_is_seen_at_once_by_every_cache_of_its_folder_and_written_by_the_flush(tmp_path):
    writer, reader = JsonCache("student", tmp_path), JsonCache("student", tmp_path)
    block = threading.Event()
    real_write = cache_module._write_atomically

    def slow_write(path, text):  # the writer thread is still busy when the reader looks
        block.wait(5)
        real_write(path, text)

    cache_module._write_atomically = slow_write
    try:
        with deferred_cache_writes():
            writer.put("ab12", {"text": "x", "tokens": 3})
            assert not writer._path("ab12").exists()
            assert reader.get("ab12") == {"text": "x", "tokens": 3}  # pending, not on disk
            block.set()
        assert on_disk(writer, "ab12") == {"text": "x", "tokens": 3}  # leaving waits for it
    finally:
        block.set()
        cache_module._write_atomically = real_write
    assert JsonCache("student", tmp_path).get("ab12") == {"text": "x", "tokens": 3}
    assert not list(tmp_path.rglob(".tmp-*"))


def test_outside_a_run_an_entry_is_on_disk_when_put_returns(tmp_path):
    cache = JsonCache("student", tmp_path)
    cache.put("cd33", {"text": "now"})
    assert on_disk(cache, "cd33") == {"text": "now"}
    (tmp_path / "blocked").write_text("a file where the cache folder should be")
    with pytest.raises(OSError):  # and its failure is the caller's, as for any file
        JsonCache("student", tmp_path / "blocked").put("cd35", {"text": "x"})


def test_the_last_value_put_under_a_key_is_the_one_kept(tmp_path):
    cache = JsonCache("student", tmp_path)
    with deferred_cache_writes():
        for i in range(50):
            cache.put("cd34", {"i": i})
    cache.put("cd34", {"i": 50})  # after the run, at once, never overwritten by a late write
    assert flush_cache_writes(timeout=10)
    assert on_disk(cache, "cd34") == {"i": 50}


def test_puts_from_many_threads_all_land(tmp_path):
    cache = JsonCache("student", tmp_path)

    def put_some(start: int) -> None:
        for i in range(start, start + 40):
            cache.put(f"{i:04x}", {"i": i})

    threads = [threading.Thread(target=put_some, args=(40 * t,)) for t in range(4)]
    with deferred_cache_writes():
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    assert all(on_disk(cache, f"{i:04x}") == {"i": i} for i in range(160))


def test_a_failed_write_in_a_run_is_logged_and_costs_only_that_entry(tmp_path, caplog):
    (tmp_path / "blocked").write_text("a file where the cache folder should be")
    broken, fine = JsonCache("student", tmp_path / "blocked"), JsonCache("student", tmp_path)
    with caplog.at_level(logging.WARNING, logger="intbench.cache"), deferred_cache_writes():
        broken.put("ef56", {"text": "lost on disk"})
        fine.put("ef57", {"text": "kept"})
    assert broken.get("ef56") == {"text": "lost on disk"}  # this process still has it
    assert JsonCache("student", tmp_path / "blocked").get("ef56") is None
    assert on_disk(fine, "ef57") == {"text": "kept"}
    [warning] = [r for r in caplog.records if r.name == "intbench.cache"]
    assert "not saved" in warning.getMessage()


def test_an_unserialisable_value_is_refused_by_put_itself(tmp_path):
    with pytest.raises(TypeError):
        JsonCache("student", tmp_path).put("0a0b", {"bad": object()})


PUT_THEN_EXIT = """
import sys
from intbench.cache import JsonCache, deferred_cache_writes
deferred_cache_writes().__enter__()  # a run that never ends: the exit must write for it
cache = JsonCache("student", sys.argv[1])
for i in range(200):
    cache.put(f"{i:04x}", {"i": i, "text": "y" * 2000})
"""


def test_a_process_that_exits_right_after_its_puts_leaves_every_entry_on_disk(tmp_path):
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    subprocess.run([sys.executable, "-c", PUT_THEN_EXIT, str(tmp_path)], check=True, env=env)
    cache = JsonCache("student", tmp_path)
    assert all(on_disk(cache, f"{i:04x}")["i"] == i for i in range(200))


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_a_forked_child_writes_its_own_entries(tmp_path):
    cache = JsonCache("student", tmp_path)
    with deferred_cache_writes():
        cache.put("1111", {"who": "parent"})  # the parent's writer thread exists
        pid = os.fork()
        if pid == 0:  # the child: no writer thread was copied; its put must still land
            try:
                JsonCache("student", tmp_path).put("2222", {"who": "child"})
                os._exit(0 if flush_cache_writes(timeout=10) else 1)
            finally:
                os._exit(2)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    assert on_disk(cache, "2222") == {"who": "child"}
    assert on_disk(cache, "1111") == {"who": "parent"}


def test_the_episode_log_syncs_after_the_cache_entries_put_before(tmp_path):
    """A record synced to the run's log never refers to a baseline still in memory only."""
    from intbench.records import Episode
    from intbench.rundir import EpisodeLog

    cache = JsonCache("student", tmp_path / "cache")
    block = threading.Event()
    real_write = cache_module._write_atomically
    cache_module._write_atomically = lambda path, text: (block.wait(5), real_write(path, text))
    try:
        with deferred_cache_writes():
            cache.put("9999", {"text": "baseline"})
            log = EpisodeLog(tmp_path / "episodes.jsonl", sync_every=1)
            threading.Timer(0.2, block.set).start()
            log.append(Episode(protocol="monitor", problem_id="p", domain="math", student="s",
                               metadata={"run_key": "0:0"}))  # fmt: skip
            assert block.is_set() and on_disk(cache, "9999") == {"text": "baseline"}
            log.close()
    finally:
        block.set()
        cache_module._write_atomically = real_write


def test_a_run_leaves_no_entry_pending_so_its_cache_folder_can_go_at_once(tmp_path):
    from intbench.runner import RunConfig, run_eval

    config = RunConfig(
        env_id="IntBench-Math-v0",
        teacher="at:0.5",
        student="scripted:tests.scripted_students:slow",
        n=4,
        env_options={"cache_dir": str(tmp_path / "cache")},
    )
    run_eval(config, tmp_path / "run", concurrency=4, progress=False)
    assert not cache_module._WRITER._pending
    assert len(list((tmp_path / "cache").rglob("*.json"))) == 4  # one baseline a problem
    shutil.rmtree(tmp_path / "cache")  # no write still on its way into it
