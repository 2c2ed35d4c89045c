"""Everything a study keeps on disk, written so that a kill at any moment loses nothing.

``DIR/study.json``
    the study's fingerprint; a restart with another study into ``DIR`` is refused.
episodes (a :class:`~intbench.rundir.RunDir`, so reports read a study like a run)
    one episode record per submitted trial (plus the completed record once the
    student's continuation has run), appended and fsynced before the
    participant's page moves on.  It is the source of truth for which trials
    were submitted, so a kill between the append and the state update below
    cannot make a participant redo (and double-record) a trial.
``DIR/participants/<id>.json``
    each participant's progress (trial order, current trial, revealed
    increments, timestamps), replaced atomically on every change.
``DIR/participants.jsonl``
    one exit questionnaire per participant.
"""

from __future__ import annotations

import json
import logging
import os
from pathlib import Path

from intbench.cache import atomic_write_json
from intbench.records import Episode
from intbench.rundir import RunDir

logger = logging.getLogger(__name__)

STUDY_FILE = "study.json"
QUESTIONNAIRES_FILE = "participants.jsonl"
PARTICIPANTS_DIR = "participants"


class StudyMismatchError(RuntimeError):
    """The output directory holds another study."""


def append_jsonl(path: Path, record: dict) -> None:
    """Append one JSON line and flush it to disk before returning."""
    with open(path, "a", encoding="utf-8") as handle:
        handle.write(json.dumps(record, ensure_ascii=False) + "\n")
        handle.flush()
        os.fsync(handle.fileno())


def read_jsonl(path: Path) -> list[dict]:
    """The readable JSON-object lines of ``path`` (a line cut short by a kill is skipped)."""
    if not path.exists():
        return []
    records = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        try:
            record = json.loads(line)
        except ValueError:
            logger.warning("skipping unreadable line %d of %s", number, path)
            continue
        if isinstance(record, dict):
            records.append(record)
    return records


class StudyStore:
    """The files of one study directory.  Not thread-safe: callers hold the study lock."""

    def __init__(self, out_dir: str | os.PathLike):
        self.dir = Path(out_dir)
        self.dir.mkdir(parents=True, exist_ok=True)
        (self.dir / PARTICIPANTS_DIR).mkdir(exist_ok=True)
        # Records are keyed by metadata.run_key = the trial id; the latest wins.
        self.run_dir = RunDir(self.dir)
        self.episodes = self.run_dir.log()
        self.questionnaires = {
            q["participant_id"]: q
            for q in read_jsonl(self.dir / QUESTIONNAIRES_FILE)
            if "participant_id" in q
        }

    def check_study(self, fingerprint: dict) -> None:
        """Save the study's fingerprint, or refuse a directory that holds another study."""
        path = self.dir / STUDY_FILE
        if not path.exists():
            atomic_write_json(path, fingerprint)
            return
        saved = json.loads(path.read_text(encoding="utf-8"))
        if saved != fingerprint:
            diffs = [
                k
                for k in sorted(set(saved) | set(fingerprint))
                if saved.get(k) != fingerprint.get(k)
            ]
            raise StudyMismatchError(
                f"{self.dir} holds a study with different settings ({', '.join(diffs)}); "
                "use another --out directory to run a different study"
            )

    def _participant_path(self, participant_id: str) -> Path:
        return self.dir / PARTICIPANTS_DIR / f"{participant_id}.json"

    def load_participant(self, participant_id: str) -> dict | None:
        """The saved progress of a participant, or ``None`` for an unknown id."""
        path = self._participant_path(participant_id)
        try:
            return json.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return None

    def participant_ids(self) -> list[str]:
        """Every participant that enrolled, in no particular order."""
        return [path.stem for path in (self.dir / PARTICIPANTS_DIR).glob("*.json")]

    def save_participant(self, state: dict) -> None:
        atomic_write_json(self._participant_path(state["participant_id"]), state)

    def record_of(self, trial_id: str) -> Episode | None:
        """The latest episode record of a trial, if it was submitted."""
        return self.episodes.records.get(trial_id)

    def append_episode(self, record: Episode) -> None:
        self.episodes.append(record)

    def append_questionnaire(self, answers: dict) -> None:
        append_jsonl(self.dir / QUESTIONNAIRES_FILE, answers)
        self.questionnaires[answers["participant_id"]] = answers
