"""TRL ``environment_factory`` adapters (intbench.integrations.trl): tools, rewards, GRPO."""

from __future__ import annotations

import time

import pytest
import torch

from intbench.agents.backends.scripted import ScriptedBackend
from intbench.integrations.trl import environment_factory, tool_dataset, with_tool_calling
from tests.test_training import TRACE, math_problems

pytest.importorskip("trl")


@pytest.fixture(autouse=True)
def _quiet(tmp_path, monkeypatch):
    monkeypatch.setenv("INTBENCH_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("TRL_EXPERIMENTAL_SILENCE", "1")
    torch.set_num_threads(1)


def carry_answer(messages, params=None):
    """Wrong until the feedback mentions 'carry' (problem i: i + 3)."""
    text = messages[-1]["content"]
    question = next(m["content"] for m in messages if "What is" in m["content"])
    i = int(question.split("What is ")[1].split(" ")[0])
    return f"So \\boxed{{{i + 3}}}." if "carry" in text else "So \\boxed{99}."


def carry_student() -> ScriptedBackend:
    return ScriptedBackend(carry_answer, spec="scripted:carry")


def feedback_factory(**options):
    return environment_factory(
        "IntBench-Math-Feedback-v0",
        student=carry_student(),
        problems=math_problems(2),
        k_max=2,
        **options,
    )


def test_feedback_tools_play_the_env_and_reward_is_the_envs():
    Env = feedback_factory()
    assert Env.__name__ == "IntBench_Math_Feedback_v0"
    rows = tool_dataset(Env, size=3)
    assert rows["problem_index"] == [0, 1, 0]
    assert rows[0]["prompt"][0]["role"] == "system" and rows[0]["prompt"][-1]["content"] == ""
    env = Env()
    prompt = env.reset(**rows[1])
    assert "What is 1 + 3?" in prompt and "give_feedback(feedback)" in prompt
    assert env.give_feedback("Remember to carry.") == "Attempt 2 is correct. The episode is over."
    assert env.get_reward() == 1.0
    with pytest.raises(ValueError, match="episode is over"):
        env.give_feedback("more")  # no actions after the end: no reward to collect twice
    env.reset(**rows[0])
    assert "no attempts are left" in env.wait()
    assert env.get_reward() == 0.0


def test_an_unfinished_episode_earns_what_waiting_earns():
    """Stopping early cannot beat acting: the rest is played with wait (no help)."""
    Env = feedback_factory()
    rows = tool_dataset(Env)
    env = Env()
    env.reset(**rows[0])
    assert env.get_reward() == 0.0  # the student never hears 'carry'
    assert env.get_reward() == 0.0  # and asking again does not replay


def test_reset_refuses_a_dataset_built_for_other_options():
    rows = tool_dataset(feedback_factory())
    other = environment_factory(
        "IntBench-Math-v0", student=ScriptedBackend(lambda m: TRACE), problems=math_problems(2)
    )()
    with pytest.raises(ValueError, match="tool_dataset"):
        other.reset(**rows[0])


def test_monitor_and_tutor_tools():
    Monitor = environment_factory(
        "IntBench-Math-v0",
        student=ScriptedBackend(
            lambda m: "Fixed: \\boxed{3}." if "<update>" in m[-1]["content"] else TRACE
        ),
        problems=math_problems(1),
        increment=40,
    )
    env = Monitor()
    prompt = env.reset(**tool_dataset(Monitor)[0])
    assert "intervene(message)" in prompt
    revealed = env.wait()
    assert revealed.startswith("The student continued:\n") and len(revealed) > 20
    assert "episode is over" in env.intervene("Check the sum again.")
    assert env.get_reward() == 1.0  # helpfulness: wrong (5) -> right (3)
    Tutor = environment_factory(
        "IntBench-Math-Tutor-v0",
        student=ScriptedBackend(lambda m: "How should I start?"),
        problems=math_problems(1),
        ideation_turns=2,
    )
    env = Tutor()
    env.reset(**tool_dataset(Tutor)[0])
    assert env.send_message("Count on from the first number.") == "Student: How should I start?"
    assert "did not solve" in env.wait()
    assert env.get_reward() == 0.0


def test_tool_calling_template_for_smollm2(tiny_model_dir):
    from transformers import AutoTokenizer
    from trl.chat_template_utils import supports_tool_calling

    tokenizer = AutoTokenizer.from_pretrained(tiny_model_dir)
    assert not supports_tool_calling(tokenizer)  # SmolLM2's own template
    tokenizer = with_tool_calling(tokenizer)
    assert supports_tool_calling(tokenizer)
    call = '<tool_call>\n{"name": "wait", "arguments": {}}\n</tool_call><|im_end|>'
    parsed = tokenizer.parse_response(tokenizer(call)["input_ids"], prefix="")
    assert parsed["tool_calls"][0]["function"]["name"] == "wait"


def test_cli_config_trains_the_embedded_model_with_tools(tmp_path):
    """One GRPO step of the embedded SmolLM2 through ``environment_factory: true``
    (``intbench train grpo --environment-factory``): the env's reward is logged."""
    from intbench.agents.embedded import EmbeddedModelMissing, load_embedded_tokenizer
    from intbench.training import load_config
    from intbench.training.trainer import build_trainer

    try:
        load_embedded_tokenizer()
    except EmbeddedModelMissing as exc:
        pytest.skip(str(exc))
    config = load_config(
        None,
        env="IntBench-Math-Feedback-v0",
        environment_factory=True,
        student="scripted:tests.test_integration_trl:carry_answer",
        # hand-made problems have no variants, so the reward is success (leaks charged)
        env_options={
            "k_max": 2,
            "reward": "success",
            "problems": [p.to_dict() for p in math_problems(2)],
        },
        output_dir=str(tmp_path / "run"),
        trainer={
            "per_device_train_batch_size": 2,
            "num_generations": 2,
            "max_completion_length": 24,
            "max_tool_calling_iterations": 1,
            "max_steps": 1,
            "logging_steps": 1,
            "save_strategy": "no",
            "report_to": [],
            "beta": 0.0,
        },
    )
    started = time.perf_counter()
    trainer = build_trainer(config)
    trainer.train()
    logged = trainer.state.log_history[0]
    assert logged["rewards/IntBench_Math_Feedback_v0/mean"] == 0.0  # no 'carry': unsolved
    assert time.perf_counter() - started < 600
