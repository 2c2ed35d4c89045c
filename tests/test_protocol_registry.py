"""The protocol registry: one spec per protocol, and no protocol names compared elsewhere."""

from __future__ import annotations

import ast
import dataclasses
from pathlib import Path

import gymnasium as gym
import pytest

import intbench
from intbench.envs.registration import all_env_ids, env_id, protocol_of
from intbench.envs.rewards import COMPONENTS, telling_margin
from intbench.protocols import (
    PROTOCOLS,
    get_protocol,
    has,
    protocol_of_env_id,
    register_protocol,
    unregister_protocol,
)
from intbench.teachers import ModelTeacher

PACKAGE = Path(intbench.__file__).parent


def _own_modules() -> set[Path]:
    """The protocols' folder and each protocol's env module: the only places that may
    name a protocol in a comparison."""
    own = set((PACKAGE / "protocols").rglob("*.py"))
    for spec in PROTOCOLS.values():
        module = spec.entry_point.partition(":")[0]
        own.add(PACKAGE.parent / (module.replace(".", "/") + ".py"))
    return own


def _protocol_words() -> set[str]:
    words = set()
    for spec in PROTOCOLS.values():
        words |= {spec.name, spec.id_suffix}
        if spec.id_tag:
            words |= {spec.id_tag, spec.id_tag.lstrip("-")}
    return words


def _strings(node: ast.AST):
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        yield node.value
    elif isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        for element in node.elts:
            yield from _strings(element)


def _compared(node: ast.AST) -> list[ast.AST]:
    """The operands ``node`` compares: ``==``/``in`` operands, ``endswith``/``startswith``
    arguments, ``match`` values."""
    if isinstance(node, ast.Compare):
        return [node.left, *node.comparators]
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
        if node.func.attr in ("endswith", "startswith"):
            return list(node.args)
    if isinstance(node, ast.MatchValue):
        return [node.value]
    return []


def protocol_name_comparisons(root: Path = PACKAGE) -> list[str]:
    """``path:line`` of every comparison with a protocol name or id suffix outside the
    protocols' own modules."""
    words, own = _protocol_words(), _own_modules()
    found = []
    for path in sorted(root.rglob("*.py")):
        if path in own:
            continue
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if any(s in words for o in _compared(node) for s in _strings(o)):
                found.append(f"{path.relative_to(root.parent)}:{node.lineno}")
    return found


def test_no_protocol_name_is_compared_outside_the_protocols():
    found = protocol_name_comparisons()
    assert not found, f"{len(found)} comparisons of protocol names: " + ", ".join(found)


def test_the_scan_finds_a_comparison(tmp_path):
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "bad.py").write_text(
        'def f(p, e):\n    return p == "tutor" or e.endswith("-Feedback-v0") or p in ("a", "monitor")\n'
    )
    assert len(protocol_name_comparisons(tmp_path / "pkg")) == 3


def test_built_in_protocols_in_registration_order():
    assert list(PROTOCOLS) == ["monitor", "feedback", "tutor"]
    assert [s.id_suffix for s in PROTOCOLS.values()] == ["-v0", "-Feedback-v0", "-Tutor-v0"]


def test_unknown_protocol_is_a_one_line_error_naming_the_registered_ones():
    with pytest.raises(ValueError) as error:
        get_protocol("tutr")
    message = str(error.value)
    assert "\n" not in message
    assert "'tutr'" in message and "monitor, feedback, tutor" in message


def test_ids_derive_from_the_specs():
    for spec in PROTOCOLS.values():
        assert env_id("math", spec.name) == f"IntBench-Math{spec.id_suffix}"
        assert protocol_of_env_id(f"intbench:IntBench-Math{spec.id_suffix}") is spec
        assert gym.spec(env_id("math", spec.name)).entry_point == spec.entry_point
    assert len(all_env_ids()) == len(PROTOCOLS) * len(all_env_ids("monitor"))
    with pytest.raises(ValueError, match="is not an IntBench env id"):
        protocol_of_env_id("IntBench-Math-Quiz-v0")


def test_a_spec_registers_once_and_clashes_are_refused():
    monitor = get_protocol("monitor")
    assert register_protocol(monitor) is monitor
    with pytest.raises(ValueError, match="clashes with the registered 'feedback'"):
        register_protocol(dataclasses.replace(monitor, name="quiz", id_tag="-Feedback"))


@pytest.fixture
def quiz():
    """A protocol registered at runtime: the feedback env under other ids and name."""
    spec = dataclasses.replace(
        get_protocol("feedback"), name="quiz", id_tag="-Quiz", matrix=False, grpo=None
    )
    register_protocol(spec)
    yield spec
    unregister_protocol("quiz")
    for name in [i for i in gym.registry if i.endswith(spec.id_suffix)]:
        del gym.registry[name]


def test_a_protocol_registered_at_runtime_joins_ids_and_lookups(quiz):
    assert "quiz" in PROTOCOLS and has("quiz", "forwards_execution")
    assert "IntBench-Math-Quiz-v0" in gym.registry
    assert "IntBench-Math-Quiz-v0" in all_env_ids()
    assert protocol_of("IntBench-Math-Quiz-v0") == "quiz"
    assert COMPONENTS["quiz"] == quiz.reward_components
    assert telling_margin({"success": 1.0, "leaked": -2.0}, "quiz") < 0
    teacher = ModelTeacher.__new__(ModelTeacher)
    teacher.protocol, teacher.condition = "quiz", None
    teacher._parse_reply = quiz.hook("parse_reply")
    assert teacher.parse("<feedback>check step 2</feedback>") == {
        "intervene": 1,
        "message": "check step 2",
    }
    env = gym.make("IntBench-Math-Quiz-v0", student="scripted:text=0", source="offline", n=1)
    observation, _ = env.reset(seed=0)
    assert env.spec.id == "IntBench-Math-Quiz-v0"
    assert env.observation_space.contains(observation)
    env.close()


def test_unregistering_removes_the_lookups(quiz):
    unregister_protocol("quiz")
    assert "quiz" not in PROTOCOLS and not has("quiz", "forwards_execution")
    with pytest.raises(ValueError, match="unknown protocol 'quiz'"):
        get_protocol("quiz")
    register_protocol(quiz)  # for the fixture's cleanup
