"""The shared on-disk cache: entries are seen at once, written by one thread, never lost
at exit, and a failed write costs only that entry."""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from intbench import cache as cache_module
from intbench.cache import JsonCache, flush_cache_writes

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
        writer.put("ab12", {"text": "x", "tokens": 3})
        assert not writer._path("ab12").exists()
        assert reader.get("ab12") == {"text": "x", "tokens": 3}  # pending, not yet on disk
    finally:
        block.set()
        cache_module._write_atomically = real_write
    assert flush_cache_writes(timeout=10)
    assert on_disk(writer, "ab12") == {"text": "x", "tokens": 3}
    assert JsonCache("student", tmp_path).get("ab12") == {"text": "x", "tokens": 3}
    assert not list(tmp_path.rglob(".tmp-*"))


def test_the_last_value_put_under_a_key_is_the_one_kept(tmp_path):
    cache = JsonCache("student", tmp_path)
    for i in range(50):
        cache.put("cd34", {"i": i})
    assert flush_cache_writes(timeout=10)
    assert on_disk(cache, "cd34") == {"i": 49}


def test_puts_from_many_threads_all_land(tmp_path):
    cache = JsonCache("student", tmp_path)

    def put_some(start: int) -> None:
        for i in range(start, start + 40):
            cache.put(f"{i:04x}", {"i": i})

    threads = [threading.Thread(target=put_some, args=(40 * t,)) for t in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert flush_cache_writes(timeout=30)
    assert all(on_disk(cache, f"{i:04x}") == {"i": i} for i in range(160))


def test_a_failed_write_is_logged_and_costs_only_that_entry(tmp_path, caplog):
    (tmp_path / "blocked").write_text("a file where the cache folder should be")
    broken, fine = JsonCache("student", tmp_path / "blocked"), JsonCache("student", tmp_path)
    with caplog.at_level(logging.WARNING, logger="intbench.cache"):
        broken.put("ef56", {"text": "lost on disk"})
        fine.put("ef57", {"text": "kept"})
        assert flush_cache_writes(timeout=10)
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
from intbench.cache import JsonCache
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
    cache.put("1111", {"who": "parent"})  # the parent's writer thread exists before the fork
    pid = os.fork()
    if pid == 0:  # the child: no writer thread was copied; its put must still land
        try:
            JsonCache("student", tmp_path).put("2222", {"who": "child"})
            os._exit(0 if flush_cache_writes(timeout=10) else 1)
        finally:
            os._exit(2)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    assert flush_cache_writes(timeout=10)
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
