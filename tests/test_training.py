"""Training teachers with TRL: monitor GRPO, multi-turn feedback GRPO, SFT, the CLI."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import torch

import intbench
from intbench.agents.backends.scripted import ScriptedBackend
from intbench.records import Problem

pytest.importorskip("trl")

TRACE = "Let us add the numbers step by step. " * 3 + "So the answer is \\boxed{5}."


def math_problems(k: int = 4) -> list[Problem]:
    return [
        Problem(
            id=f"t/{i}",
            domain="math",
            question=f"What is {i} + 3?",
            answer=str(i + 3),
            solution=f"{i} + 3 = {i + 3}, so the answer is \\boxed{{{i + 3}}}.",
        )
        for i in range(k)
    ]


def monitor_student() -> ScriptedBackend:
    """Always answers 5 (right on problem 2 only); after an update, answers the asked sum."""

    def respond(messages):
        text = messages[-1]["content"]
        if "<update>" in text:
            return "Fixed: \\boxed{4}."
        return TRACE

    return ScriptedBackend(respond)


def feedback_student() -> ScriptedBackend:
    """Wrong on the first try; right once feedback mentions 'carry'."""

    def respond(messages):
        text = messages[-1]["content"]
        return "So \\boxed{4}." if "carry" in text else "So \\boxed{99}."

    return ScriptedBackend(respond)


@pytest.fixture(autouse=True)
def _quiet(tmp_path, monkeypatch):
    monkeypatch.setenv("INTBENCH_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("TRL_EXPERIMENTAL_SILENCE", "1")
    torch.set_num_threads(1)


def grpo_args(tmp_path, **extra):
    from trl import GRPOConfig

    return GRPOConfig(
        output_dir=str(tmp_path / "out"),
        per_device_train_batch_size=8,
        num_generations=4,
        max_completion_length=12,
        max_steps=2,
        learning_rate=1e-3,
        logging_steps=1,
        save_strategy="no",
        report_to=[],
        use_cpu=True,
        temperature=0.7,
        seed=0,
        **extra,
    )


def changed_parameters(model, before: dict) -> int:
    return sum(not torch.equal(p.detach(), before[n]) for n, p in model.named_parameters())


def test_monitor_states_rebuild_the_env_prompt_at_the_sampled_increment():
    from intbench.training import monitor_states

    kwargs = {"student": monitor_student(), "problems": math_problems(), "increment": 40}
    data = monitor_states("IntBench-Math-v0", kwargs, states_per_problem=3, seed=1)
    assert len(data) == 12
    row = data[0]
    assert row["revealed_chars"] == min(40 * (row["waits"] + 1), len(TRACE))
    assert TRACE[: row["revealed_chars"]] in row["prompt"][-1]["content"]
    assert sorted({r["baseline_correct"] for r in data}) == [False, True]
    assert {r["problem_id"] for r in data if r["baseline_correct"]} == {"t/2"}


def test_monitor_reward_scores_parsed_replies_through_the_env():
    from intbench.training import MonitorReward, monitor_states

    kwargs = {"student": monitor_student(), "problems": math_problems(), "increment": 40}
    data = monitor_states("IntBench-Math-v0", kwargs, seed=0)
    reward = MonitorReward("IntBench-Math-v0", kwargs)
    rows = [data[1], data[1], data[2], data[2], data[1]]  # baseline 5: wrong on 1 (4), right on 2
    replies = [
        "Intervene: Yes\nTime: now\nIntervention: check the sum",
        "Intervene: No\nTime: N/A\nIntervention: N/A",
        "Intervene: Yes\nTime: now\nIntervention: check the sum",
        "gibberish",
        [{"role": "assistant", "content": "Intervene: Yes\nIntervention: recheck"}],
    ]
    logged = {}
    rewards = reward(
        prompts=[r["prompt"] for r in rows],
        completions=replies,
        problem_index=[r["problem_index"] for r in rows],
        waits=[r["waits"] for r in rows],
        seed=[r["seed"] for r in rows],
        log_metric=logged.__setitem__,
    )
    # wrong->right +1, wait 0, right->wrong -1, unparsable counts as wait 0, chat-format reply +1
    assert rewards == [1.0, 0.0, -1.0, 0.0, 1.0]
    assert logged["monitor/helpfulness"] == pytest.approx(0.2)
    assert logged["monitor/unparsable"] == pytest.approx(0.2)
    assert logged["monitor/decided_intervene"] == pytest.approx(0.6)


def test_monitor_reward_refuses_a_feedback_env():
    from intbench.training import MonitorReward

    with pytest.raises(ValueError, match="monitor env"):
        MonitorReward(
            "IntBench-Math-Feedback-v0", {"student": monitor_student(), "problems": math_problems()}
        )


def teach_replies(
    model, tokenizer, prompts: list[list[dict]], replies: list[str], steps: int = 80
) -> None:
    """Warm-start a random tiny model to answer ``prompts`` with a mix of ``replies``.

    A random model's replies never parse, so every reward would be equal and
    GRPO would have no signal; after this it samples each reply sometimes.
    """
    torch.manual_seed(0)
    contexts = [
        tokenizer.apply_chat_template(p, add_generation_prompt=True, tokenize=False)
        for p in prompts[:2]
    ]
    pairs = [(c, r + tokenizer.eos_token) for c in contexts for r in replies]
    ids = [tokenizer(c + r, add_special_tokens=False)["input_ids"] for c, r in pairs]
    starts = [len(tokenizer(c, add_special_tokens=False)["input_ids"]) for c, _ in pairs]
    width = max(map(len, ids))
    input_ids = torch.tensor([x + [tokenizer.pad_token_id] * (width - len(x)) for x in ids])
    mask = torch.tensor([[1] * len(x) + [0] * (width - len(x)) for x in ids])
    labels = input_ids.masked_fill(mask == 0, -100)
    for row, start in enumerate(starts):
        labels[row, :start] = -100  # learn the replies, not the prompts
    optimizer = torch.optim.Adam(model.parameters(), lr=3e-3)
    for _ in range(steps):
        loss = model(input_ids=input_ids, attention_mask=mask, labels=labels).loss
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()


def tiny_policy(tiny_model_dir, prompts, replies):
    from transformers import AutoModelForCausalLM, AutoTokenizer

    model = AutoModelForCausalLM.from_pretrained(tiny_model_dir)
    tokenizer = AutoTokenizer.from_pretrained(tiny_model_dir)
    teach_replies(model, tokenizer, prompts, replies)
    return model, tokenizer


class GradientProbe:
    """A trainer callback that records the gradient norm before each optimizer step."""

    def __init__(self):
        from transformers import TrainerCallback

        probe = self

        class _Callback(TrainerCallback):
            def on_pre_optimizer_step(self, args, state, control, model=None, **kwargs):
                probe.norms.append(
                    float(
                        sum(p.grad.norm() ** 2 for p in model.parameters() if p.grad is not None)
                        ** 0.5
                    )
                )

        self.norms: list[float] = []
        self.callback = _Callback()


def test_grpo_two_steps_on_the_monitor_env(tiny_model_dir, tmp_path):
    from trl import GRPOTrainer

    from intbench.training import monitor_rewards, monitor_states

    kwargs = {"student": monitor_student(), "problems": math_problems(), "increment": 60}
    dataset = monitor_states("IntBench-Math-v0", kwargs, states_per_problem=2)
    model, tokenizer = tiny_policy(
        tiny_model_dir, dataset["prompt"], ["Intervene: Yes\nIntervention: fix", "Intervene: No"]
    )
    probe = GradientProbe()
    trainer = GRPOTrainer(
        model=model,
        processing_class=tokenizer,
        reward_funcs=monitor_rewards("IntBench-Math-v0", **kwargs),
        train_dataset=dataset,
        args=grpo_args(tmp_path),
        callbacks=[probe.callback],
    )
    trainer.train()
    logs = [entry for entry in trainer.state.log_history if "monitor/helpfulness" in entry]
    assert len(logs) == 2 and len(probe.norms) == 2
    # A step whose groups all got equal rewards has no advantage, hence no gradient.
    assert max(probe.norms) > 0
    assert [norm > 0 for norm in probe.norms] == [e["frac_reward_zero_std"] < 1 for e in logs]
    for name in (
        "baseline_correct",
        "post_correct",
        "intervened",
        "helpfulness",
        "success",
        "leaked",
    ):
        assert all(f"monitor/{name}" in entry for entry in logs)
    assert all(entry["monitor/unparsable"] < 1.0 for entry in logs)
    assert all("rewards/monitor_format_reward/mean" in entry for entry in logs)


def test_grpo_two_steps_with_lora_train_the_adapters_only(tiny_model_dir, tmp_path):
    """``lora:`` wraps the policy in peft adapters: gradients reach the adapters and
    nothing else and the base weights stay as loaded.  With ``beta > 0`` TRL keeps
    the KL reference as a frozen copy of the initial adapters, not of the model."""
    pytest.importorskip("peft")
    from transformers import TrainerCallback
    from trl import GRPOTrainer

    from intbench.training import monitor_rewards, monitor_states
    from intbench.training.models import load_policy, save_policy

    kwargs = {"student": monitor_student(), "problems": math_problems(), "increment": 60}
    dataset = monitor_states("IntBench-Math-v0", kwargs, states_per_problem=2)
    warm = save_policy(
        *tiny_policy(
            tiny_model_dir,
            dataset["prompt"],
            ["Intervene: Yes\nIntervention: fix", "Intervene: No"],
        ),
        tmp_path / "warm",
    )
    model, tokenizer = load_policy(f"hf:{warm}", lora={"r": 4, "lora_alpha": 8})
    before = {n: p.detach().clone() for n, p in model.named_parameters()}
    graded: list[dict[str, float]] = []

    class Probe(TrainerCallback):
        def on_pre_optimizer_step(self, args, state, control, model=None, **kw):
            graded.append(
                {n: float(p.grad.norm()) for n, p in model.named_parameters() if p.grad is not None}
            )

    trainer = GRPOTrainer(
        model=model,
        processing_class=tokenizer,
        reward_funcs=monitor_rewards("IntBench-Math-v0", **kwargs),
        train_dataset=dataset,
        args=grpo_args(tmp_path, beta=0.1),
        callbacks=[Probe()],
    )
    assert trainer.ref_model is None
    trainer.train()
    assert len(graded) == 2
    assert all("lora_" in name for step in graded for name in step)
    assert max(norm for step in graded for norm in step.values()) > 0
    after = dict(trainer.model.named_parameters())
    changed = {n for n, weight in before.items() if not torch.equal(after[n].detach(), weight)}
    assert changed and all("lora_" in name for name in changed)
    assert not any(p.requires_grad for n, p in trainer.model.named_parameters() if "lora_" not in n)


def test_monitor_grpo_defaults_are_the_measured_recipe(tiny_model_dir, tmp_path):
    from intbench.training.config import MONITOR_GRPO_DEFAULTS, load_config
    from intbench.training.trainer import build_trainer

    trainer = build_trainer(
        one_step_monitor_config(tmp_path, f"hf:{tiny_model_dir}", f"hf:{tiny_model_dir}")
    )
    # Keys the config leaves out come from the recipe (it sets its own batch and group size).
    for key in (
        "beta",
        "loss_type",
        "learning_rate",
        "reward_weights",
        "temperature",
        "warmup_steps",
    ):
        assert getattr(trainer.args, key) == MONITOR_GRPO_DEFAULTS[key], key
    assert (trainer.args.num_generations, trainer.args.max_steps) == (2, 1)
    # The shipped monitor config spells the same recipe out.
    from pathlib import Path

    import intbench.training

    shipped = load_config(Path(intbench.training.__file__).parent / "configs" / "monitor_grpo.yaml")
    for key, value in MONITOR_GRPO_DEFAULTS.items():
        assert shipped.trainer[key] == value, key


def test_format_reward_penalises_only_unparsable_replies():
    from intbench.training import decision_action, monitor_format_reward

    replies = [
        "Intervene: No\nTime: N/A\nIntervention: N/A",
        [{"role": "assistant", "content": "Intervene: Yes\nTime: now\nIntervention: Recheck."}],
        "Intervene: Yes\nTime: the final",  # truncated before its message
        "Intervene: Yes or No",
        "",
    ]
    assert monitor_format_reward(replies) == [0.0, 0.0, -1.0, -1.0, -1.0]
    # The env plays the same unparsable replies as logged waits.
    assert decision_action(replies[2]) == {
        "intervene": 0,
        "message": "",
        "error": "unparsable teacher reply: 'Intervene: Yes' without an 'Intervention:' message",
    }


def feedback_trainer(tiny_model_dir, tmp_path, replies, callbacks=()):
    """A GRPO trainer on the feedback env and a dict that gets the rollout's last output."""
    from trl import GRPOTrainer

    from intbench.training import FeedbackRollout, feedback_reward

    kwargs = {"student": feedback_student(), "problems": math_problems(), "k_max": 3}
    rollout = FeedbackRollout("IntBench-Math-Feedback-v0", kwargs, max_turn_tokens=8)
    dataset = rollout.dataset()
    model, tokenizer = tiny_policy(tiny_model_dir, dataset["prompt"], replies)
    seen = {}

    def spy(prompts, trainer):
        seen.update(rollout(prompts, trainer))
        return seen

    trainer = GRPOTrainer(
        model=model,
        processing_class=tokenizer,
        reward_funcs=[feedback_reward],
        train_dataset=dataset,
        rollout_func=spy,
        args=grpo_args(tmp_path),
        callbacks=list(callbacks),
    )
    return trainer, tokenizer, seen


def test_grpo_two_steps_on_the_feedback_env(tiny_model_dir, tmp_path):
    probe = GradientProbe()
    trainer, tokenizer, seen = feedback_trainer(
        tiny_model_dir,
        tmp_path,
        ["<feedback>carry the one</feedback>", "<feedback>look again</feedback>"],
        [probe.callback],
    )
    trainer.train()
    logs = [entry for entry in trainer.state.log_history if "feedback/solved" in entry]
    assert len(logs) == 2 and len(probe.norms) == 2 and max(probe.norms) > 0
    assert [norm > 0 for norm in probe.norms] == [e["frac_reward_zero_std"] < 1 for e in logs]
    assert all("feedback/teacher_turns" in e and "feedback/leaked" in e for e in logs)
    # The student's tokens are masked: each completion has policy (1) and,
    # when the episode went on after a turn, env (0) tokens, in matching lengths.
    for ids, mask, turns in zip(
        seen["completion_ids"], seen["env_mask"], seen["teacher_turns"], strict=True
    ):
        assert len(ids) == len(mask) and 1 <= turns <= 2
        assert (0 in mask) == (turns > 1)
        assert "attempt 2" not in tokenizer.decode([t for t, m in zip(ids, mask, strict=True) if m])
    unmasked = [
        tokenizer.decode([t for t, m in zip(ids, mask, strict=True) if not m])
        for ids, mask in zip(seen["completion_ids"], seen["env_mask"], strict=True)
    ]
    assert any("\\boxed{99}" in text for text in unmasked)


class VLLMStandIn:
    """TRL's vLLM generation as the rollout sees it (``generate`` from token ids with
    the sampled tokens' log-probabilities, ``sync_weights``), served here by the policy."""

    def __init__(self, trainer):
        self.trainer = trainer
        self.max_completion_length = trainer.args.max_completion_length
        self.temperature = trainer.args.temperature
        self.calls: list[tuple] = []
        self.syncs = 0

    def sync_weights(self):
        self.syncs += 1

    def generate(self, prompts, images, num_generations):
        from intbench.training.feedback import _generate_locally

        self.calls.append((len(prompts), num_generations, self.max_completion_length))
        rows = _generate_locally(
            self.trainer, prompts, self.max_completion_length, self.temperature
        )
        return prompts, rows, [[[-0.5] for _ in row] for row in rows], None


def test_feedback_grpo_generates_through_trls_vllm_generation(tiny_model_dir, tmp_path):
    trainer, _, seen = feedback_trainer(
        tiny_model_dir, tmp_path, ["<feedback>carry the one</feedback>"]
    )
    # what `use_vllm=True` sets up, with the stand-in in place of a vLLM server
    trainer.use_vllm, trainer._last_loaded_step = True, -1
    trainer.vllm_generation = vllm = VLLMStandIn(trainer)
    trainer.train()
    assert vllm.syncs == 2  # TRL pushed the weights before each step's rollout
    # one call per teacher turn, each prompt once, capped at the rollout's turn length
    assert vllm.calls and all(n >= 1 and g == 1 and cap == 8 for n, g, cap in vllm.calls)
    assert vllm.max_completion_length == trainer.args.max_completion_length  # restored
    for ids, mask, logps in zip(
        seen["completion_ids"], seen["env_mask"], seen["logprobs"], strict=True
    ):
        assert len(logps) == len(ids) == len(mask)
        assert all((lp == -0.5) == bool(m) for lp, m in zip(logps, mask, strict=True))
    assert any(0 in mask for mask in seen["env_mask"])  # multi-turn: env tokens, masked


def test_feedback_rollout_refuses_unknown_prompts_and_monitor_envs():
    from intbench.training import FeedbackRollout

    with pytest.raises(ValueError, match="feedback env"):
        FeedbackRollout(
            "IntBench-Math-v0", {"student": feedback_student(), "problems": math_problems()}
        )
    rollout = FeedbackRollout(
        "IntBench-Math-Feedback-v0", {"student": feedback_student(), "problems": math_problems()}
    )
    with pytest.raises(KeyError, match="did not build"):
        rollout([[{"role": "user", "content": "not from the dataset"}]], trainer=None)


def test_config_defaults_overrides_and_typos(tmp_path):
    from intbench.training import load_config

    path = tmp_path / "c.yaml"
    path.write_text("method: sft\nn: 5\ntrainer: {max_steps: 3}\n")
    config = load_config(path, model="hf:x", n=None)
    assert (config.method, config.n, config.model, config.trainer) == (
        "sft",
        5,
        "hf:x",
        {"max_steps": 3},
    )
    assert config.env_kwargs()["n"] == 5
    path.write_text("metod: sft\n")
    with pytest.raises(ValueError, match="unknown config field"):
        load_config(path)
    with pytest.raises(ValueError, match="method"):
        load_config(None, method="ppo")
    with pytest.raises(FileNotFoundError):
        load_config(tmp_path / "missing.yaml")


def test_shipped_configs_load():
    from pathlib import Path

    import intbench.training
    from intbench.training import load_config

    folder = Path(intbench.training.__file__).parent / "configs"
    names = sorted(p.name for p in folder.glob("*.yaml"))
    assert names == [
        "feedback_grpo.yaml",
        "monitor_grpo.yaml",
        "sft.yaml",
        "smoke_feedback.yaml",
        "smoke_monitor.yaml",
        "tools_grpo.yaml",
    ]
    for name in names:
        load_config(folder / name)


def write_eval_run(tmp_path, teacher: str):
    """A real ``intbench eval`` run with a scripted student and a scripted model teacher."""
    from intbench.cli import main

    out = tmp_path / "run"
    code = main(
        [
            "eval",
            "--env",
            "IntBench-Math-v0",
            "--teacher",
            teacher,
            "--student",
            "scripted:tests.test_training:eval_student",
            "-n",
            "4",
            "--increment",
            "60",
            "--out",
            str(out),
            "--no-progress",
        ]
    )
    assert code == 0
    return out


def eval_student(messages):
    """The same trace for every prompt (importable as a scripted spec)."""
    return TRACE


def test_sft_from_eval_records_loads_back_as_a_teacher(tiny_model_dir, tmp_path):
    from intbench.agents.backends import load_backend
    from intbench.runner import load_run
    from intbench.training import load_config, sft_dataset, train

    run = write_eval_run(tmp_path, "always")
    records = load_run(run)
    assert records and all(r["intervention"] for r in records)
    dataset = sft_dataset([str(run)], filter="all")
    assert len(dataset) == len(records)
    example = dataset[0]
    assert example["completion"][0]["content"].startswith("Intervene: Yes")
    assert "<student_reasoning>" in example["prompt"][-1]["content"]
    config = load_config(
        None,
        method="sft",
        model=f"hf:{tiny_model_dir}",
        records=[str(run)],
        filter="all",
        output_dir=str(tmp_path / "sft"),
        trainer={
            "max_steps": 2,
            "per_device_train_batch_size": 2,
            "report_to": [],
            "use_cpu": True,
            "save_strategy": "no",
        },
    )
    final = train(config)
    teacher = load_backend(f"hf:{final}")
    from intbench.agents.base import SamplingParams

    out = teacher.generate([example["prompt"]], SamplingParams(max_tokens=4, temperature=0.0))
    assert out[0].error is None


def test_sft_filter_selects_and_rejects():
    from intbench.records import Episode, Intervention
    from intbench.training.sft import select_records

    def record(helpfulness, leaked, error=None):
        return Episode(
            protocol="monitor", problem_id="p", domain="math", student="s", error=error,
            intervention=Intervention(message="m"),
            reward_components={"helpfulness": helpfulness, "leaked": leaked},
        )  # fmt: skip

    helpful, leaked, harmful = record(1.0, 0.0), record(1.0, 1.0), record(-1.0, 0.0)
    failed = record(1.0, 0.0, error="grader error")
    assert select_records([helpful, leaked, harmful, failed]) == [helpful]
    assert select_records([helpful, leaked, harmful], "helpful") == [helpful, leaked]
    with pytest.raises(ValueError, match="unknown filter"):
        select_records([helpful], "best")


def test_sft_filter_judges_leaks_by_the_current_detector():
    """A record written with leaked = 0 (an older detector) is still dropped when its message leaks."""
    from intbench.records import Episode, FeedbackTurn, Intervention, Problem
    from intbench.training.sft import select_records

    half = Problem(id="p", domain="math", question="P(heads)?", answer="\\frac{1}{2}")
    told = Episode(
        protocol="monitor", problem_id="p", domain="math", student="s",
        intervention=Intervention(message="\\boxed{0.5}", tau_abs=10, leaked=False),
        reward_components={"helpfulness": 1.0, "leaked": 0.0},
    )  # fmt: skip
    taught = Episode(
        protocol="monitor", problem_id="p", domain="math", student="s",
        intervention=Intervention(message="Count the faces of the coin.", tau_abs=10),
        reward_components={"helpfulness": 1.0, "leaked": 0.0},
    )  # fmt: skip
    feedback = Episode(
        protocol="feedback", problem_id="p", domain="math", student="s", solved_at=2,
        feedback=[FeedbackTurn(turn=1, message="It is 50%.", source="teacher")],
    )  # fmt: skip
    assert select_records([told, taught, feedback]) == [told, taught, feedback]
    kept = select_records([told, taught, feedback], problems={"p": half})
    assert [r.intervention.message for r in kept] == ["Count the faces of the coin."]


def test_cli_rejects_a_bad_config(tmp_path, capsys):
    import argparse

    from intbench.commands.train import add_parser

    parser = argparse.ArgumentParser()
    add_parser(parser.add_subparsers())
    path = tmp_path / "bad.yaml"
    path.write_text("- not a mapping\n")
    args = parser.parse_args(["train", "grpo", "--config", str(path)])
    assert args.func(args) == 2
    assert "must be a mapping" in capsys.readouterr().err


def test_trainer_options_default_to_fp32_without_a_gpu(monkeypatch):
    from intbench.training.trainer import trainer_options

    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert trainer_options({"max_steps": 2}) == {
        "bf16": False,
        "gradient_checkpointing": False,
        "max_steps": 2,
    }
    assert trainer_options({"bf16": True})["bf16"] is True  # the config wins
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    assert trainer_options({"max_steps": 2}) == {"max_steps": 2}


def one_step_monitor_config(tmp_path, model: str, student: str, **trainer_options):
    """The CLI's config for one GRPO step on two math problems."""
    from intbench.training import load_config

    return load_config(
        None,
        env="IntBench-Math-v0",
        model=model,
        student=student,
        n=2,
        states_per_problem=1,
        env_options={"student_sampling": {"max_tokens": 8}, "increment": 8},
        output_dir=str(tmp_path / "grpo"),
        trainer={
            "max_steps": 1,
            "per_device_train_batch_size": 2,
            "num_generations": 2,
            "report_to": [],
            "use_cpu": True,
            **trainer_options,
        },
    )


def test_cli_monitor_grpo_trainer_scores_the_env_and_the_format(tiny_model_dir, tmp_path):
    from intbench.training.trainer import build_trainer

    trainer = build_trainer(
        one_step_monitor_config(tmp_path, f"hf:{tiny_model_dir}", f"hf:{tiny_model_dir}")
    )
    names = [getattr(f, "__name__", "") for f in trainer.reward_funcs]
    assert names == ["monitor_reward", "monitor_format_reward"]
    assert len(trainer.train_dataset) == 2


def test_grpo_with_kl_gets_a_reference_copy_of_the_embedded_policy(
    tiny_model_dir, tmp_path, monkeypatch
):
    """With ``beta > 0`` TRL loads the reference from the policy's config path,
    which for the GGUF-built embedded model is not loadable: the trainer saves
    a plain copy first and both models start from it."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    import intbench.agents.embedded as embedded
    from intbench.training.trainer import REFERENCE_DIR, build_trainer

    def gguf_built():  # like load_embedded_plain: its path holds no loadable model
        model = AutoModelForCausalLM.from_pretrained(tiny_model_dir)
        model.config._name_or_path = str(tmp_path / "gguf-only")
        return model, AutoTokenizer.from_pretrained(tiny_model_dir)

    monkeypatch.setattr(embedded, "load_embedded_plain", gguf_built)
    config = one_step_monitor_config(tmp_path, "smollm2", f"hf:{tiny_model_dir}", beta=0.1)
    interrupted = tmp_path / "grpo" / f"{REFERENCE_DIR}.partial"  # an earlier save cut short
    interrupted.mkdir(parents=True)
    (interrupted / "config.json").write_text("{")
    trainer = build_trainer(config)
    assert (tmp_path / "grpo" / REFERENCE_DIR / "config.json").exists()
    assert not interrupted.exists()
    policy = dict(trainer.model.named_parameters())
    for name, weight in trainer.ref_model.named_parameters():
        assert torch.equal(weight, policy[name]), name


@pytest.mark.parametrize(
    ("name", "kind", "zero_stage"),
    [
        ("multi_gpu", "MULTI_GPU", None),
        ("deepspeed_zero2", "DEEPSPEED", 2),
        ("deepspeed_zero3", "DEEPSPEED", 3),
    ],
)
def test_shipped_accelerate_configs_load_with_accelerate(name, kind, zero_stage):
    from accelerate.commands.config.config_args import load_config_from_file

    path = Path(intbench.__file__).parent / "training" / "accelerate" / f"{name}.yaml"
    config = load_config_from_file(str(path))
    assert config.distributed_type.name == kind
    assert config.deepspeed_config.get("zero_stage") == zero_stage
    assert f"--config_file intbench/training/accelerate/{name}.yaml" in path.read_text()


def test_accelerate_launch_trains_on_two_processes(tiny_model_dir, tmp_path):
    """`accelerate launch` (two processes) runs `intbench train grpo`: one saved
    policy, one summary counting both processes' student calls."""
    import json
    import shutil
    import subprocess
    import sys

    import yaml

    accelerate = shutil.which("accelerate", path=str(Path(sys.executable).parent))
    if accelerate is None:
        pytest.skip("the accelerate command is not installed beside this Python")
    config = {
        "method": "grpo",
        "env": "IntBench-Math-v0",
        # helpfulness: no transfer attempts, so the student's requests are the baselines
        "env_options": {
            "student_sampling": {"max_tokens": 8},
            "increment": 8,
            "reward": "helpfulness",
        },
        "model": f"hf:{tiny_model_dir}",
        "student": f"hf:{tiny_model_dir}",
        "n": 4,
        "states_per_problem": 1,
        "output_dir": str(tmp_path / "out"),
        "trainer": {
            "max_steps": 2,
            "per_device_train_batch_size": 2,
            "num_generations": 2,
            "max_completion_length": 8,
            "beta": 0.0,
            "report_to": [],
            "use_cpu": True,
        },
    }
    (tmp_path / "grpo.yaml").write_text(yaml.safe_dump(config))
    # accelerate's multi-process launcher (torchrun); without GPUs the ranks run on the
    # CPU over gloo, as on a GPU machine they would over NCCL
    launch = [
        accelerate, "launch", "--multi_gpu", "--num_processes", "2", "--num_machines", "1",
        "--mixed_precision", "no", "--dynamo_backend", "no",
        "-m", "intbench.cli", "train", "grpo", "--config", str(tmp_path / "grpo.yaml"),
    ]  # fmt: skip
    env = {**os.environ, "INTBENCH_CACHE": str(tmp_path / "cache")}
    done = subprocess.run(launch, capture_output=True, text=True, timeout=600, env=env)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.count('{"model": ') == 1  # the main process reports
    assert (tmp_path / "out" / "final" / "config.json").exists()
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert summary["finished"] and summary["processes"] == 2
    # each rank builds the same seeded dataset, so each asks the student for the
    # 4 problems' baselines: the summary counts both ranks
    assert summary["usage"]["student"]["requests"] == 8


def test_freeze_lower_layers_trains_only_the_top_layers(tiny_model_dir):
    from transformers import AutoModelForCausalLM

    from intbench.training.models import freeze_lower_layers

    model = AutoModelForCausalLM.from_pretrained(tiny_model_dir)
    count = freeze_lower_layers(model, 1)
    trainable = {n for n, p in model.named_parameters() if p.requires_grad}
    assert trainable and all(n.startswith(("model.layers.1.", "model.norm.")) for n in trainable)
    assert count == sum(p.numel() for n, p in model.named_parameters() if n in trainable)
    for bad in (0, 3):
        with pytest.raises(ValueError, match="between 1 and 2"):
            freeze_lower_layers(model, bad)


def test_balanced_states_give_every_step_both_kinds_of_baseline():
    from datasets import Dataset

    from intbench.training.monitor import balanced_states

    states = Dataset.from_list(
        [{"i": i, "baseline_correct": i < 5} for i in range(8)]  # 5 right, 3 wrong
    )
    ordered = balanced_states(states, steps=6, prompts_per_step=4, seed=0)
    assert len(ordered) == 24
    kinds = ordered["baseline_correct"]
    for step in range(6):
        assert sum(kinds[step * 4 : step * 4 + 4]) == 2, step
    assert balanced_states(states, 6, 4, seed=0)["i"] == ordered["i"]  # seeded
    assert balanced_states(states, 6, 4, seed=1)["i"] != ordered["i"]
    with pytest.raises(ValueError, match="even number"):
        balanced_states(states, 6, 3, seed=0)
    with pytest.raises(ValueError, match="both kinds"):
        balanced_states(states.select(range(5)), 6, 2, seed=0)


def test_monitor_format_examples_parse_with_coin_flip_decisions():
    from datasets import Dataset

    from intbench.training import decision_action
    from intbench.training.priming import monitor_format_examples

    prompt = [{"role": "user", "content": "the same state"}]
    states = Dataset.from_list([{"prompt": prompt}] * 200)
    examples = monitor_format_examples(states, seed=0, messages=["a", "b"], time_text="now")
    actions = [decision_action(e["completion"][0]["content"]) for e in examples]
    assert all("error" not in a for a in actions)
    rate = sum(a["intervene"] for a in actions) / len(actions)
    assert 0.4 < rate < 0.6  # one state, both decisions: no information about when
    assert {a["message"] for a in actions if a["intervene"]} == {"a", "b"}
    with pytest.raises(ValueError, match="message"):
        monitor_format_examples(states, seed=0, messages=[], time_text="now")


def write_math500(path: Path, problems: list[Problem]) -> Path:
    import json

    path.write_text(
        "".join(
            json.dumps(
                {
                    "problem": p.question,
                    "solution": p.solution,
                    "answer": p.answer,
                    "subject": "Prealgebra",
                    "level": 1,
                    "unique_id": p.id,
                }
            )
            + "\n"
            for p in problems
        )
    )
    return path


def test_cli_monitor_grpo_primes_freezes_and_balances(tiny_model_dir, tmp_path):
    """The demo's options through the config: format priming saved as the KL
    reference, only the top layer trained, and steps of one right and one wrong
    baseline (the scripted student answers 5: right on problem 2 only)."""
    from intbench.training import load_config, monitor_states
    from intbench.training.trainer import PRIMED_DIR, build_trainer

    # A random tiny model's replies never parse, and one priming step cannot fix
    # that, so GRPO would see no reward spread: start from a model taught both replies.
    states = monitor_states(
        "IntBench-Math-v0",
        {"student": ScriptedBackend(eval_student), "problems": math_problems(4), "increment": 400},
        states_per_problem=1,
    )
    model, tokenizer = tiny_policy(
        tiny_model_dir, states["prompt"], ["Intervene: Yes\nIntervention: fix", "Intervene: No"]
    )
    taught = tmp_path / "taught"
    model.save_pretrained(taught)
    tokenizer.save_pretrained(taught)
    source = write_math500(tmp_path / "train.jsonl", math_problems(4))
    config = load_config(
        None,
        env="IntBench-Math-v0",
        model=f"hf:{taught}",
        student="scripted:tests.test_training:eval_student",
        source=str(source),
        n=4,
        states_per_problem=1,
        env_options={"increment": 400, "reward": "helpfulness"},  # as the demo config
        output_dir=str(tmp_path / "grpo"),
        train_layers=1,
        format_priming={"steps": 1, "batch_size": 2},
        balanced_states=True,
        trainer={
            "max_steps": 2,
            "learning_rate": 1e-3,
            "warmup_steps": 0,  # the default warmup's first step has lr 0
            "per_device_train_batch_size": 4,
            "num_generations": 2,
            "max_completion_length": 12,
            "report_to": [],
            "use_cpu": True,
        },
    )
    trainer = build_trainer(config)
    primed = tmp_path / "grpo" / PRIMED_DIR
    assert (primed / "config.json").exists()
    assert trainer.model.config._name_or_path == str(primed)  # TRL's reference source
    initial = initial_weights(taught)
    top = "model.layers.1.mlp.up_proj.weight"
    primed_weights = dict(trainer.model.named_parameters())
    assert not torch.equal(primed_weights[top].detach(), initial[top])  # priming trained it
    trainable = {n for n, p in trainer.model.named_parameters() if p.requires_grad}
    assert all(n.startswith(("model.layers.1.", "model.norm.")) for n in trainable)
    assert trainer.args.shuffle_dataset is False
    kinds = trainer.train_dataset["baseline_correct"]
    assert len(kinds) == 4 and all(sum(kinds[i : i + 2]) == 1 for i in (0, 2))
    before = {n: p.detach().clone() for n, p in trainer.model.named_parameters()}
    trainer.train()
    changed = {n for n, p in trainer.model.named_parameters() if not torch.equal(p, before[n])}
    assert changed and changed <= trainable
    # A second run with the same output directory reuses the primed policy.
    mtime = (primed / "config.json").stat().st_mtime_ns
    build_trainer(config)
    assert (primed / "config.json").stat().st_mtime_ns == mtime


def initial_weights(directory) -> dict:
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(directory)
    return {n: p.detach() for n, p in model.named_parameters()}


def test_config_refuses_conflicting_or_misplaced_training_options(tiny_model_dir, tmp_path):
    from intbench.training import load_config
    from intbench.training.trainer import build_trainer

    with pytest.raises(ValueError, match="exclude each other"):
        load_config(None, train_layers=2, lora={})
    with pytest.raises(ValueError, match="train_layers must be"):
        load_config(None, train_layers="top")
    with pytest.raises(ValueError, match="unknown format_priming key"):
        load_config(None, format_priming={"step": 3})
    with pytest.raises(ValueError, match="monitor GRPO only"):
        load_config(None, method="sft", balanced_states=True)
    feedback = load_config(
        None,
        env="IntBench-Math-Feedback-v0",
        model=f"hf:{tiny_model_dir}",
        format_priming={},
        output_dir=str(tmp_path / "out"),
        trainer={"use_cpu": True, "report_to": []},
    )
    with pytest.raises(ValueError, match="apply to monitor envs"):
        build_trainer(feedback)
