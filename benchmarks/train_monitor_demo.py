"""Learning demo: GRPO teaches the embedded SmolLM2-135M when to intervene.

Setting (monitor env, ``helpfulness`` reward, Standard condition, the
append-only teacher prompt): a fixed scripted student answers "What is
a + b?" problems.  Its baseline is right on about half of them; on the wrong
ones its reasoning says it is guessing (a cue the teacher can read in the
revealed transcript).  After an intervention a guessing student gets the sum
right (the hint helps) and a sure one gets it wrong (the interruption makes it
second-guess), so intervening scores +1 on a guessing trace and -1 on a sure
one.  The best policy intervenes exactly on the guessing traces; never
intervening scores 0, and always intervening scores the share of guessing
problems minus the share of sure ones, about 0: only a policy that reads the
trace can gain.

Three policies are measured on held-out problems: the untrained model; the
model after a few SFT steps that teach only the reply format (the decision in
those examples is a coin flip, independent of the trace, so they carry no
information about when to intervene); and that model after GRPO on the env's
reward plus :func:`~intbench.training.monitor_format_reward` (-1 for an
unparsable reply, which the env would otherwise play as a free wait; weighted
by ``--format-weight``).  Two GRPO settings keep the overall intervention rate
from drifting to "always" or "never" before the policy learns to tell the
traces apart (without them every earlier run collapsed; see the results file):
each step's prompts are half guessing and half sure traces
(:func:`~intbench.training.monitor.balanced_states`), so the pushes on the overall rate cancel, and a KL
penalty (``--beta``) to the format-primed model pulls the rate back.  Only the
top ``--train-layers`` decoder layers are trained (the rest and the tied
embeddings are frozen), which keeps a step affordable on a 2-core CPU.  Each
policy is scored by the env's mean reward over its sampled decisions
(temperature 1, ``--samples`` per held-out decision state) with 95% bootstrap
CIs over problems (``intbench.metrics.bootstrap``); fixed reference policies
are scored on the same states.  Run:
``OMP_NUM_THREADS=2 python benchmarks/train_monitor_demo.py``.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import tempfile
import time
from pathlib import Path

import demo_training as demo
import numpy as np
import torch

from intbench.agents.backends.scripted import ScriptedBackend
from intbench.metrics import bootstrap
from intbench.records import Problem
from intbench.training import (
    MonitorReward,
    decision_action,
    monitor_rewards,
    monitor_states,
)
from intbench.training.monitor import balanced_states, monitor_reply
from intbench.training.priming import monitor_format_examples

ENV = "IntBench-Math-v0"
GUESS = "Hmm, I am not sure about this, so I will just guess."
SURE = "I add them carefully and check the sum twice."


def problems(count: int, seed: int) -> list[Problem]:
    rng = random.Random(seed)
    out = []
    for i in range(count):
        a, b = rng.randint(10, 99), rng.randint(10, 99)
        out.append(
            Problem(
                id=f"add/{seed}/{i}",
                domain="math",
                question=f"What is {a} + {b}?",
                answer=str(a + b),
                solution=f"{a} + {b} = {a + b}, so the answer is \\boxed{{{a + b}}}.",
            )
        )
    return out


def _sum(text: str) -> int:
    a, b = re.search(r"What is (\d+) \+ (\d+)\?", text).groups()
    return int(a) + int(b)


def student(messages) -> str:
    """The fixed student: guessing (and wrong) on problems whose first addend is odd."""
    text = "\n".join(m["content"] for m in messages)
    right = _sum(text)
    if "<update>" in text:  # a continuation after the teacher's message
        ok = GUESS in text  # the hint rescues a guess and derails a sure answer
        return f"Following the hint, the answer is \\boxed{{{right if ok else right + 1}}}."
    guessing = int(re.search(r"What is (\d+)", text).group(1)) % 2 == 1
    if guessing:
        return f"{GUESS} The sum is about {right + 7}. So the answer is \\boxed{{{right + 7}}}."
    return f"{SURE} The sum is {right}. So the answer is \\boxed{{{right}}}."


def env_kwargs(problem_list: list[Problem], teacher_prompt: str) -> dict:
    return {
        "student": ScriptedBackend(student, spec="scripted:demo-student"),
        "problems": problem_list,
        "increment": 400,  # one decision per trace: the whole (short) trace is revealed
        "reward": "helpfulness",
        "teacher_prompt": teacher_prompt,
    }


def sample_replies(
    model, tokenizer, prompts: list[list[dict]], samples: int, max_new_tokens: int, seed: int
) -> list[str]:
    """``samples`` sampled replies per prompt (temperature 1), batched."""
    torch.manual_seed(seed)
    model.eval()
    tokenizer.padding_side = "left"
    replies = []
    texts = [
        tokenizer.apply_chat_template(p, add_generation_prompt=True, tokenize=False)
        for p in prompts
    ]
    for start in range(0, len(texts), 8):
        batch = tokenizer(
            texts[start : start + 8], return_tensors="pt", padding=True, add_special_tokens=False
        ).to(model.device)
        with torch.no_grad():
            out = model.generate(
                **batch,
                do_sample=True,
                temperature=1.0,
                top_p=1.0,
                max_new_tokens=max_new_tokens,
                num_return_sequences=samples,
                pad_token_id=tokenizer.pad_token_id,
            )
        replies += tokenizer.batch_decode(
            out[:, batch["input_ids"].shape[1] :], skip_special_tokens=True
        )
    return replies


def score_replies(reward: MonitorReward, rows: list[dict], replies: list[str]) -> list[float]:
    """The env's reward for ``replies[i]`` given at decision state ``rows[i]``."""
    return reward(
        prompts=[r["prompt"] for r in rows],
        completions=replies,
        problem_index=[r["problem_index"] for r in rows],
        waits=[r["waits"] for r in rows],
        seed=[r["seed"] for r in rows],
    )


def evaluate(
    model, tokenizer, states, reward: MonitorReward, samples: int, max_new_tokens: int
) -> dict:
    replies = sample_replies(model, tokenizer, states["prompt"], samples, max_new_tokens, seed=1234)
    rows = [states[i] for i in range(len(states)) for _ in range(samples)]
    rewards = score_replies(reward, rows, replies)
    episodes: dict[str, list[dict]] = {}
    for row, value, components in zip(rows, rewards, reward.last_components, strict=True):
        episodes.setdefault(row["problem_id"], []).append(
            {"reward": value, **components, "guessing": not row["baseline_correct"]}
        )

    def mean(key, where=lambda e: True):
        return lambda eps: (
            float(np.mean([e[key] for e in eps if where(e)]))
            if any(where(e) for e in eps)
            else float("nan")
        )

    return {
        "reward": bootstrap(episodes, mean("reward")).to_dict(),
        "intervene_rate_when_guessing": bootstrap(
            episodes, mean("intervened", lambda e: e["guessing"])
        ).to_dict(),
        "intervene_rate_when_sure": bootstrap(
            episodes, mean("intervened", lambda e: not e["guessing"])
        ).to_dict(),
        "unparsable": float(np.mean(["error" in decision_action(r) for r in replies])),
        "rewards_by_problem": {k: [e["reward"] for e in eps] for k, eps in episodes.items()},
        "example_replies": replies[:3],
    }


HINTS = (
    "Check your last step again before you give the answer.",
    "Work the sum out digit by digit instead of estimating it.",
    "Your answer is a guess; add the tens and the ones separately.",
)


TIME = "the final sum"
YES = monitor_reply(True, HINTS[0], TIME)
NO = monitor_reply(False)


def reference_policies(states, reward: MonitorReward) -> dict:
    """Mean reward of fixed policies on the same held-out decision states (the
    scripted student's outcomes are fixed by each state's seed, so these are
    the exact scale for the trained policy's number)."""
    policies = {
        "never": lambda row: NO,
        "always": lambda row: YES,
        "when_guessing": lambda row: NO if row["baseline_correct"] else YES,
    }
    rows = [states[i] for i in range(len(states))]
    out = {}
    for name, policy in policies.items():
        values = score_replies(reward, rows, [policy(r) for r in rows])
        out[name] = bootstrap(
            {r["problem_id"]: [v] for r, v in zip(rows, values, strict=True)},
            lambda eps: float(np.mean(eps)),
        ).to_dict()
    return out


def markdown(result: dict) -> str:
    """The results table written next to the JSON file."""
    setting = result["setting"]
    lines = [
        "# GRPO learning demo: monitor env, helpfulness reward",
        "",
        f"Policy: {result['model']} ({result['trainable_parameters']:,} trainable parameters); "
        f"{setting['eval_problems']} held-out problems x {setting['samples']} sampled replies "
        "(temperature 1); 95% bootstrap CIs over problems.  torch "
        f"{result['torch']}, {result['threads']} threads.",
        "",
        f"Command: `{result.get('command', 'OMP_NUM_THREADS=2 python benchmarks/train_monitor_demo.py')}` "
        f"(settings: {json.dumps(setting, default=str)})",
        "",
        "| policy | mean reward | intervenes when guessing | intervenes when sure | unparsable |",
        "|---|---:|---:|---:|---:|",
    ]
    for label, key in (
        ("untrained", "untrained"),
        (
            f"format-primed ({setting['prime_steps']} SFT steps, coin-flip decisions)",
            "format_primed",
        ),
        (
            f"+ GRPO ({setting['steps']} balanced steps, lr {setting['lr']:g} after "
            f"{setting.get('warmup_steps', 0)} warmup steps, KL beta {setting['beta']:g})",
            "grpo",
        ),
    ):
        row = result[key]
        if row is None:  # --skip-untrained
            continue
        lines.append(
            f"| {label} | {demo.ci_text(row['reward'])} | {demo.ci_text(row['intervene_rate_when_guessing'])} "
            f"| {demo.ci_text(row['intervene_rate_when_sure'])} | {row['unparsable']:.2f} |"
        )
    names = {
        "never": "never intervene",
        "always": "always intervene",
        "when_guessing": "intervene exactly when guessing (best)",
    }
    for key, stats in result["reference_policies"].items():
        lines.append(f"| reference: {names[key]} | {demo.ci_text(stats)} | | | |")
    seconds = result["seconds"]
    lines += [
        "",
        "Gain in mean reward, paired on the held-out problems (95% CI): GRPO over the "
        f"format-primed model {demo.ci_text(result['gain_of_grpo_over_format_primed'])}"
        + (
            ""
            if result["gain_of_grpo_over_untrained"] is None
            else f"; over the untrained model {demo.ci_text(result['gain_of_grpo_over_untrained'])}"
        )
        + ".",
        "",
        f"Time: format priming {seconds['format_priming']:.0f} s, GRPO {seconds['grpo']:.0f} s, "
        f"one evaluation about {result['grpo']['seconds']:.0f} s.",
        "",
        f"GRPO log (mean over the {setting['batch']} completions of each step; "
        "helpfulness is the env's reward, the total adds "
        f"-{setting['format_weight']} per unparsable reply):",
        "",
        "| step | helpfulness | total | intervene | unparsable |",
        "|---:|---:|---:|---:|---:|",
    ]
    for i, entry in enumerate(result["grpo_log"], start=1):
        lines.append(
            f"| {entry.get('step', i)} | {entry.get('monitor/helpfulness', float('nan')):+.3f} "
            f"| {entry['reward']:+.3f} "
            f"| {entry.get('monitor/decided_intervene', float('nan')):.2f} "
            f"| {entry.get('monitor/unparsable', float('nan')):.2f} |"
        )
    return "\n".join(lines) + "\n"


def parser() -> argparse.ArgumentParser:
    # the defaults of the first recorded run (results/train_monitor_demo.md)
    parser = demo.recipe_parser(
        __doc__.splitlines()[0],
        prime_steps=40,
        prime_lr=2e-4,
        steps=40,
        generations=4,
        samples=4,
        lr=5e-5,
        warmup_steps=0,
    )
    parser.add_argument("--max-new-tokens", type=int, default=32)
    parser.add_argument(
        "--format-weight", type=float, default=0.2, help="weight of the unparsable-reply penalty"
    )
    parser.add_argument(
        "--teacher-prompt", default="append", help="the env's teacher_prompt option"
    )
    parser.add_argument(
        "--skip-untrained",
        action="store_true",
        help="do not evaluate the untrained model (the gain over the primed model needs no such run)",
    )
    parser.add_argument(
        "--out", type=Path, default=Path(__file__).parent / "results" / "train_monitor_demo.json"
    )
    return parser


def run_demo(args: argparse.Namespace) -> dict:
    """Prime, evaluate, train with GRPO, evaluate; returns the result (also written to ``args.out``)."""
    started_run = time.perf_counter()
    os.environ.setdefault("INTBENCH_CACHE", tempfile.mkdtemp(prefix="intbench-demo-cache-"))
    os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")
    from trl import GRPOTrainer

    train_kwargs = env_kwargs(problems(args.train_problems, seed=1), args.teacher_prompt)
    eval_kwargs = env_kwargs(problems(args.eval_problems, seed=2), args.teacher_prompt)
    train_states = monitor_states(ENV, train_kwargs, states_per_problem=1, seed=0)
    eval_states = monitor_states(ENV, eval_kwargs, states_per_problem=1, seed=0)
    eval_reward = MonitorReward(ENV, eval_kwargs)
    model, tokenizer, trainable = demo.trainable_policy("smollm2", args.train_layers)

    def score(label: str) -> dict:
        started = time.perf_counter()
        result = evaluate(
            model, tokenizer, eval_states, eval_reward, args.samples, args.max_new_tokens
        )
        result["seconds"] = round(time.perf_counter() - started, 1)
        print(f"{label}:", json.dumps(result["reward"]), flush=True)
        return result

    references = reference_policies(eval_states, eval_reward)
    untrained = None if args.skip_untrained else score("untrained")
    with tempfile.TemporaryDirectory() as out_dir:
        examples = monitor_format_examples(train_states, args.seed, HINTS, TIME)
        prime_seconds = demo.prime_format(model, tokenizer, examples, args, out_dir)
        primed = score("format-primed")
        model, tokenizer = demo.reload_primed(model, tokenizer, out_dir, args.train_layers)
        prompts_per_step = args.batch // args.generations
        trainer = GRPOTrainer(
            model=model,
            processing_class=tokenizer,
            reward_funcs=monitor_rewards(ENV, **train_kwargs),
            train_dataset=balanced_states(
                train_states, args.steps, prompts_per_step, seed=args.seed
            ),
            args=demo.grpo_args(
                args,
                out_dir,
                shuffle_dataset=False,  # keep the balanced steps
                max_completion_length=args.max_new_tokens,
                reward_weights=[1.0, args.format_weight],
            ),
        )
        train_seconds, history = demo.train_logged(
            trainer,
            (
                "monitor/helpfulness",
                "monitor/decided_intervene",
                "monitor/unparsable",
                "rewards/monitor_format_reward/mean",
            ),
        )
    trained = score("after GRPO")
    return demo.write_result(
        args,
        "train_monitor_demo.py",
        trainable,
        markdown,
        primed,
        trained,
        untrained=untrained,
        reference_policies=references,
        gain_of_grpo_over_untrained=None
        if untrained is None
        else demo.paired_gain(untrained, trained),
        grpo_log=history,
        seconds=demo.seconds_since(started_run, format_priming=prime_seconds, grpo=train_seconds),
    )


if __name__ == "__main__":
    run_demo(parser().parse_args())
