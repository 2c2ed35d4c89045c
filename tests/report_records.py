"""Realistic episode records for the report tests, made by running the real envs.

Scripted students stand in for models; scripted teachers (policies below)
act through the env's action space, and the teacher name is set on the
records afterwards, as the runner does.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import gymnasium as gym

import intbench  # noqa: F401  (registers the ids)
from intbench.agents.backends.scripted import ScriptedBackend
from intbench.records import Problem

N_PROBLEMS = 6
K_MAX = 3
REASONING = "Let me add the numbers step by step, keeping track of each digit. " * 8

# monitor teacher -> (fraction of the trace at which it intervenes, message, which problems)
MONITOR_TEACHERS = {
    "hf:teacher-a": (0.3, "Check the carry in the first step.", lambda i, right: True),
    "hf:teacher-b": (0.7, "Try again.", lambda i, right: not right),
    "human:p1": (0.5, "Look at the carry again.", lambda i, right: i % 3 == 0),
    "human:p2": (0.4, "Re-read the question.", lambda i, right: i % 2 == 1),
}
STUDENTS = ("hf:s1", "hf:s2")
HINTS = {"hf:s1": "Hint A: recompute the sum.", "hf:s2": "Hint B: the answer is not 99."}


def problems() -> list[Problem]:
    return [
        Problem(
            id=f"p/{i}",
            domain="math",
            question=f"What is {i} + 3?",
            answer=str(i + 3),
            solution=f"{i} + 3 = {i + 3}, so \\boxed{{{i + 3}}}.",
        )
        for i in range(N_PROBLEMS)
    ]


def _index(messages: list[dict]) -> int:
    text = " ".join(m["content"] for m in messages)
    return int(re.search(r"What is (\d+) \+ 3", text).group(1))


def monitor_student(messages: list[dict]) -> str:
    """Right on even problems; after an update mentioning the carry, always right."""
    i = _index(messages)
    last = messages[-1]["content"]
    if "<update>" in last:
        return f"I see, so \\boxed{{{i + 3}}}." if "carry" in last else "Still \\boxed{99}."
    answer = i + 3 if i % 2 == 0 else 99
    return f"{REASONING}So the final answer is \\boxed{{{answer}}}."


def feedback_student(name: str):
    """Attempt 1 is right on even problems (s1) or every fourth (s2); hints help unevenly."""

    def respond(messages: list[dict]) -> str:
        i = _index(messages)
        text = " ".join(m["content"] for m in messages)
        if HINTS["hf:s1"] in text:
            right = name == "hf:s1" or i % 2 == 1
        elif HINTS["hf:s2"] in text:
            right = name == "hf:s1" and i % 3 == 0
        else:
            right = i % (2 if name == "hf:s1" else 4) == 0 and "Attempt" not in text
        return f"\\boxed{{{i + 3}}}" if right else "\\boxed{99}"

    return respond


def monitor_records(cache_dir: Path) -> list[dict]:
    records = []
    student = ScriptedBackend(monitor_student, spec="hf:student-m")
    for condition in ("standard", "oracle"):
        for teacher, (fraction, message, wants) in MONITOR_TEACHERS.items():
            env = gym.make(
                "IntBench-Math-v0",
                student=student,
                problems=problems(),
                condition=condition,
                cache_dir=str(cache_dir),
            )
            for i in range(N_PROBLEMS):
                _, info = env.reset(seed=i, options={"problem_index": i})
                total = info["privileged"]["total_chars"]
                act = wants(i, info["privileged"]["baseline_correct"])
                done = False
                while not done:
                    if condition == "oracle":
                        action = {
                            "intervene": int(act),
                            "message": message,
                            "position": int(fraction * total),
                            "quote": "",
                        }
                    else:
                        action = {
                            "intervene": int(act and info["revealed_chars"] >= fraction * total),
                            "message": message,
                        }
                    _, _, done, _, info = env.step(action)
                record = env.unwrapped.last_episode.to_dict()
                record["teacher"] = teacher
                records.append(record)
    records[-1]["error"] = "grader error after the intervention: timeout"
    return records


def feedback_records(cache_dir: Path) -> list[dict]:
    records = []
    for name in STUDENTS:
        student = ScriptedBackend(feedback_student(name), spec=name)
        runs = [("teacher", t) for t in STUDENTS] + [("self_refine", None)]
        for mode, teacher in runs:
            env = gym.make(
                "IntBench-Math-Feedback-v0",
                student=student,
                problems=problems(),
                k_max=K_MAX,
                mode=mode,
                cache_dir=str(cache_dir),
            )
            action = {"intervene": 1, "message": HINTS[teacher]} if teacher else 0
            for i in range(N_PROBLEMS):
                env.reset(seed=i, options={"problem_index": i})
                done = False
                while not done:
                    _, _, done, _, _ = env.step(action)
                record = env.unwrapped.last_episode.to_dict()
                record["teacher"] = teacher
                records.append(record)
    return records


def write_run(directory: Path, records: list[dict], config: dict | None = None) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    with (directory / "episodes.jsonl").open("w", encoding="utf-8") as handle:
        for record in records:
            handle.write(json.dumps(record, ensure_ascii=False) + "\n")
    if config is not None:
        (directory / "config.json").write_text(json.dumps(config), encoding="utf-8")
    return directory
