"""A full disk or an unwritable run directory: one line that names the fix, and nothing lost."""

from __future__ import annotations

import errno
import io  # noqa: F401  (patched below)
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from intbench.cli import main
from intbench.records import Episode
from intbench.rundir import RunDir, RunWriteError

ROOT = Path(__file__).resolve().parents[1]
FIXTURE = ROOT / "tests" / "fixtures" / "episodes_v1" / "monitor"
STUDENT = "scripted:tests.scripted_students:fixture_student"
EVAL = ["eval", "--env", "IntBench-Math-v0", "--teacher", "at:0.5", "--student", STUDENT]


def _episode(key: str) -> Episode:
    record = json.loads(FIXTURE.joinpath("episodes.jsonl").read_text().splitlines()[0])
    return Episode.from_dict({**record, "metadata": {**record["metadata"], "run_key": key}})


def _fail_writes_to(monkeypatch, name: str, code: int, after: int = 0) -> None:
    """Make ``os.write`` to a file called ``name`` fail with ``code`` after ``after`` writes."""
    real_write, done = os.write, []

    def write(fd, data):
        if os.readlink(f"/proc/self/fd/{fd}").endswith(name):
            if len(done) >= after:
                raise OSError(code, os.strerror(code))
            done.append(fd)
        return real_write(fd, data)

    monkeypatch.setattr(os, "write", write)


@pytest.mark.parametrize(
    ("code", "fix"),
    [
        (errno.ENOSPC, "free some space"),
        (errno.EDQUOT, "free some space"),
        (errno.EROFS, "choose a writable --out directory"),
        (errno.EACCES, "choose a writable --out directory"),
        (errno.EIO, "check the --out directory"),
    ],
)
def test_a_failed_append_names_the_fix_and_keeps_what_was_written(tmp_path, monkeypatch, code, fix):
    run = RunDir(tmp_path / "run")
    log = run.log()
    log.append(_episode("0:0"))
    _fail_writes_to(monkeypatch, "episodes.jsonl", code)
    with pytest.raises(RunWriteError) as raised:
        log.append(_episode("1:0"))
    message = str(raised.value)
    assert "\n" not in message and str(run.episodes_path) in message and fix in message
    assert raised.value.errno == code and isinstance(raised.value, OSError)
    monkeypatch.undo()
    log.close()
    assert [e.metadata["run_key"] for e in RunDir(run.path).episodes()] == ["0:0"]


def test_a_write_cut_short_by_a_full_disk_is_dropped_on_resume(tmp_path):
    run = RunDir(tmp_path / "run")
    run.log().append(_episode("0:0"))
    whole = run.episodes_path.read_bytes()
    run.episodes_path.write_bytes(whole + _episode("1:0").to_json().encode()[:40])
    log = run.log()
    assert run.episodes_path.read_bytes() == whole and list(log.records) == ["0:0"]


@pytest.mark.parametrize("writer", ["lock", "config", "problems"])
def test_every_run_file_write_names_the_fix(tmp_path, monkeypatch, writer):
    run = RunDir(tmp_path / "run")
    real_open = os.open

    def read_only(path, flags, *args):
        if flags & (os.O_WRONLY | os.O_RDWR | os.O_CREAT):
            raise OSError(errno.EROFS, os.strerror(errno.EROFS), str(path))
        return real_open(path, flags, *args)

    monkeypatch.setattr(os, "open", read_only)
    opener = _read_only_builtin_open(open)
    monkeypatch.setattr("builtins.open", opener)
    monkeypatch.setattr("io.open", opener)  # what pathlib calls
    actions = {
        "lock": lambda: run.writer().__enter__(),
        "config": lambda: run.save_config({"n": 1}),
        "problems": lambda: run.save_problems([]),
    }
    with pytest.raises(RunWriteError, match="Read-only file system; choose a writable --out"):
        actions[writer]()


def _read_only_builtin_open(real_open):
    def opener(file, mode="r", *args, **kwargs):
        if any(flag in mode for flag in "wax+"):
            raise OSError(errno.EROFS, os.strerror(errno.EROFS), str(file))
        return real_open(file, mode, *args, **kwargs)

    return opener


def test_the_cli_prints_one_line_and_exit_code_1(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("INTBENCH_CACHE", str(tmp_path / "cache"))
    out = tmp_path / "run"
    _fail_writes_to(monkeypatch, "episodes.jsonl", errno.ENOSPC, after=2)  # a full disk
    assert main([*EVAL, "-n", "4", "--out", str(out), "--no-progress"]) == 1
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "Traceback" not in err
    assert err.startswith(f"error: cannot write {out}") and "No space left on device" in err
    assert "re-run the same command" in err
    monkeypatch.undo()
    assert len(RunDir(out).episodes()) >= 2
    monkeypatch.setenv("INTBENCH_CACHE", str(tmp_path / "cache"))
    assert main([*EVAL, "-n", "4", "--out", str(out), "--no-progress"]) == 0  # resumes
    keys = [e.metadata["run_key"] for e in RunDir(out).episodes()]
    assert sorted(keys) == ["0:0", "1:0", "2:0", "3:0"]


def _mount_tmpfs(path: Path, size: str) -> bool:
    if os.geteuid() != 0:
        return False
    path.mkdir()
    result = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(path)], capture_output=True
    )
    return result.returncode == 0


@pytest.fixture
def small_disk(tmp_path):
    disk = tmp_path / "disk"
    if not _mount_tmpfs(disk, "256k"):
        pytest.skip("needs root and tmpfs mounts to make a real small or read-only disk")
    yield disk
    subprocess.run(["umount", "-l", str(disk)], check=False)


def _cli(args: list[str], tmp_path: Path) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(ROOT), INTBENCH_CACHE=str(tmp_path / "cache"))
    return subprocess.run(
        [sys.executable, "-m", "intbench.cli", *args, "--no-progress"],
        env=env,
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_a_real_full_disk_and_a_real_read_only_disk(small_disk, tmp_path):
    out = small_disk / "run"
    command = [*EVAL, "-n", "3", "--out", str(out)]
    assert _cli(command, tmp_path).returncode == 0
    lines = RunDir(out).episodes_path.read_text().splitlines(keepends=True)
    RunDir(out).episodes_path.write_text("".join(lines[:2]))  # one episode left to run
    filler = small_disk / "filler"
    with open(filler, "wb", buffering=0) as handle:  # fill the disk to its last byte
        try:
            while True:
                handle.write(b"\0" * 4096)
        except OSError as exc:
            assert exc.errno == errno.ENOSPC
    result = _cli(command, tmp_path)
    assert result.returncode == 1
    assert result.stderr.strip().splitlines()[-1].startswith(f"error: cannot write {out}")
    assert "No space left on device" in result.stderr and "Traceback" not in result.stderr
    assert len(RunDir(out).episodes()) == 2  # nothing written before is lost
    filler.unlink()
    assert _cli(command, tmp_path).returncode == 0  # and the run resumes
    assert len(RunDir(out).episodes()) == 3

    subprocess.run(["mount", "-o", "remount,ro", str(small_disk)], check=True)
    result = _cli([*EVAL, "-n", "2", "--out", str(small_disk / "other")], tmp_path)
    assert result.returncode == 1
    line = result.stderr.strip().splitlines()[-1]
    assert line == (
        f"error: cannot write {small_disk / 'other' / '.lock'}: Read-only file system; "
        "choose a writable --out directory"
    )
