"""Learning demo: multi-turn GRPO teaches the embedded SmolLM2-135M which step to name.

Setting (feedback env, ``auc`` reward, ``--k-max`` attempts, K=2 by default, no
reference shown to the teacher): a fixed scripted student adds four two-digit
numbers in three steps.  One step, which its reasoning marks as rushed (a cue
the teacher can read in the attempt), is off by ten, and the slip carries into
the final answer, so attempt 1 is always wrong.  On a retry the student fixes
that step only when the teacher's feedback names it and no other step (the
papers' teacher rule is "Pinpoint the step in which I am making a mistake");
otherwise it repeats its answer.  With K=2 the teacher writes one feedback
message: naming the rushed step scores the env's AUC reward 1/2 (solved at
attempt 2 of 2), a step drawn at random 1/6, feedback that names no step 0.
(With K=3, naming it at once scores 2/3 and a random step about 0.30, but the
episode's one reward is shared by two feedback turns, so a right second turn
also credits a wrong first one; see ``results/train_teachers.md``.)  Only a
policy that reads the attempt can gain, and revealing the answer does not help
(this student ignores it).

Three policies are measured on held-out problems, as in
:mod:`train_monitor_demo`: the model after a few SFT steps that teach only the
reply format (each example names a step drawn at random, so they carry no
information about which step to name), and that model after multi-turn GRPO
through :class:`~intbench.training.FeedbackRollout` (whole episodes; the
student's turns are in the completion with ``env_mask`` 0, so only the
teacher's tokens carry loss).  Each policy is scored by the env's mean AUC
reward over its sampled episodes (temperature 1, ``--samples`` per held-out
problem) with 95% bootstrap CIs over problems; fixed reference policies are
scored on the same problems.  Run:
``OMP_NUM_THREADS=2 python benchmarks/train_feedback_demo.py``.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import sys
import tempfile
import time
from pathlib import Path
from types import SimpleNamespace

import gymnasium as gym
import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).parent))

import demo_training as demo  # noqa: E402

import intbench  # noqa: E402,F401  (registers the env ids)
from intbench.agents.backends.scripted import ScriptedBackend  # noqa: E402
from intbench.metrics import bootstrap  # noqa: E402
from intbench.records import Problem  # noqa: E402
from intbench.training import FeedbackRollout, feedback_reward  # noqa: E402

ENV = "IntBench-Math-Feedback-v0"
STEPS_PER_SUM = 3
RUSHED = " (I rushed this step)"
_QUESTION = re.compile(r"What is (\d+) \+ (\d+) \+ (\d+) \+ (\d+)\?")
_STEP_NAMED = re.compile(r"\bstep\s*(\d+)", re.IGNORECASE)


def sum_problem(problem_id: str, numbers: list[int], metadata: dict | None = None) -> Problem:
    """The sum of ``numbers`` as a math problem with its boxed reference solution."""
    total = sum(numbers)
    return Problem(
        id=problem_id,
        domain="math",
        question="What is " + " + ".join(map(str, numbers)) + "?",
        answer=str(total),
        solution=f"The sum is \\boxed{{{total}}}.",
        metadata=metadata or {},
    )


def problems(count: int, seed: int) -> list[Problem]:
    rng = random.Random(seed)
    out = []
    for i in range(count):
        numbers = [rng.randint(10, 99) for _ in range(STEPS_PER_SUM + 1)]
        out.append(sum_problem(f"sum4/{seed}/{i}", numbers))
    return out


def rushed_step(numbers: list[int]) -> int:
    """The step the student gets wrong: fixed by the problem, spread over 1..3."""
    return (numbers[0] * 7 + numbers[1] * 3 + numbers[2]) % STEPS_PER_SUM + 1


def solution_text(numbers: list[int], wrong_step: int | None) -> str:
    """The student's three steps; ``wrong_step`` is off by ten and says it was rushed."""
    running, lines = numbers[0], []
    for step, addend in enumerate(numbers[1:], start=1):
        result = running + addend + (10 if step == wrong_step else 0)
        note = RUSHED if step == wrong_step else ""
        lines.append(f"Step {step}{note}: {running} + {addend} = {result}.")
        running = result
    return "\n".join(lines) + f"\nSo the answer is \\boxed{{{running}}}."


def latest_feedback(text: str) -> str | None:
    """The feedback on the attempt being revised (earlier ones are headed 'Feedback on
    attempt N:'), or ``None`` on the first attempt."""
    start = text.rfind("\nFeedback:\n")
    if start < 0:
        return None
    end = text.find("Revise your previous solution", start)
    return text[start + len("\nFeedback:\n") : end if end >= 0 else None]


def student(messages) -> str:
    """The fixed student: fixes its rushed step only when the feedback names exactly it."""
    text = "\n".join(m["content"] for m in messages)
    numbers = [int(n) for n in _QUESTION.search(text).groups()]
    wrong = rushed_step(numbers)
    feedback = latest_feedback(text)
    if feedback is not None and {int(n) for n in _STEP_NAMED.findall(feedback)} == {wrong}:
        return solution_text(numbers, None)
    return solution_text(numbers, wrong)


def env_kwargs(problem_list: list[Problem], k_max: int) -> dict:
    return {
        "student": ScriptedBackend(student, spec="scripted:feedback-demo-student"),
        "problems": problem_list,
        "k_max": k_max,
        "reward": "auc",
        "teacher_reference": "none",
    }


PHRASES = (
    "Look again at step {k}.",
    "The mistake is in step {k}.",
    "Check the addition in step {k}.",
)


def format_examples(dataset, seed: int) -> list[dict]:
    """Well-formed feedback naming a step drawn at random: they teach the format only."""
    rng = random.Random(seed)
    return [
        {
            "prompt": row["prompt"],
            "completion": [
                {
                    "role": "assistant",
                    "content": "<feedback>"
                    + rng.choice(PHRASES).format(k=rng.randint(1, STEPS_PER_SUM))
                    + "</feedback>",
                }
            ],
        }
        for row in dataset
    ]


class _Sampler:
    """What :class:`FeedbackRollout` reads of a trainer, for sampling a model outside
    training (the same dialogue and generation code as in GRPO)."""

    def __init__(self, model, tokenizer):
        from accelerate import Accelerator

        self.processing_class = tokenizer
        self.accelerator = Accelerator(cpu=not torch.cuda.is_available())
        self.model_wrapped = model
        self.args = SimpleNamespace(ds3_gather_for_generation=False)


def evaluate(model, tokenizer, rollout: FeedbackRollout, dataset, samples: int, seed: int) -> dict:
    """Mean AUC reward over ``samples`` sampled episodes per held-out problem."""
    torch.manual_seed(seed)
    model.eval()
    sampler = _Sampler(model, tokenizer)
    rows = [dataset[i] for i in range(len(dataset)) for _ in range(samples)]
    outcomes = {"episode_reward": [], "solved": [], "teacher_turns": []}
    for start in range(0, len(rows), 8):
        batch = rows[start : start + 8]
        out = rollout([r["prompt"] for r in batch], sampler)
        for key in outcomes:
            outcomes[key] += out[key]
    by_problem: dict[str, list[float]] = {}
    solved: dict[str, list[float]] = {}
    for row, reward, ok in zip(rows, outcomes["episode_reward"], outcomes["solved"], strict=True):
        by_problem.setdefault(row["problem_id"], []).append(float(reward))
        solved.setdefault(row["problem_id"], []).append(float(ok))
    return {
        "reward": bootstrap(by_problem, lambda eps: float(np.mean(eps))).to_dict(),
        "solved": bootstrap(solved, lambda eps: float(np.mean(eps))).to_dict(),
        "teacher_turns": float(np.mean(outcomes["teacher_turns"])),
        "rewards_by_problem": by_problem,
    }


def reference_policies(problem_list: list[Problem], k_max: int) -> dict:
    """Mean AUC reward of fixed feedback policies on the held-out problems, played
    through the env itself (the scripted student reads only the feedback)."""

    def rushed(numbers):
        return f"<feedback>Look again at step {rushed_step(numbers)}.</feedback>"

    def other(numbers):
        return (
            f"<feedback>Look again at step {rushed_step(numbers) % STEPS_PER_SUM + 1}.</feedback>"
        )

    def vague(numbers):
        return "<feedback>Check your additions carefully.</feedback>"

    env = gym.make(ENV, **env_kwargs(problem_list, k_max)).unwrapped
    out = {}
    policies = {
        "names_the_rushed_step": rushed,
        "names_another_step": other,
        "names_no_step": vague,
    }
    for name, policy in policies.items():
        rewards = {}
        for index, problem in enumerate(problem_list):
            numbers = [int(n) for n in _QUESTION.search(problem.question).groups()]
            env.reset(seed=index, options={"problem_index": index})  # plays attempt 1
            total, terminated = 0.0, False
            while not terminated:
                _, reward, terminated, _, _ = env.step(policy(numbers))
                total += reward
            rewards[problem.id] = [float(total)]
        out[name] = bootstrap(rewards, lambda eps: float(np.mean(eps))).to_dict()
    env.close()
    return out


def markdown(result: dict) -> str:
    """The results table written next to the JSON file."""
    setting = result["setting"]
    refs = result["reference_policies"]
    lines = [
        "# GRPO learning demo: feedback env, AUC reward, multi-turn",
        "",
        f"Policy: {result['model']} ({result['trainable_parameters']:,} trainable parameters); "
        f"{setting['eval_problems']} held-out problems x {setting['samples']} sampled episodes "
        f"(temperature 1, K = {setting['k_max']}); 95% bootstrap CIs over problems.  torch "
        f"{result['torch']}, {result['threads']} threads.",
        "",
        f"Command: `{result['command']}` (settings: {json.dumps(setting, default=str)})",
        "",
        "| policy | mean AUC reward | solved by attempt K | teacher turns |",
        "|---|---:|---:|---:|",
    ]
    for label, key in (
        (f"format-primed ({setting['prime_steps']} SFT steps, random step named)", "format_primed"),
        (
            f"+ GRPO ({setting['steps']} steps, lr {setting['lr']:g} after "
            f"{setting['warmup_steps']} warmup steps, KL beta {setting['beta']:g})",
            "grpo",
        ),
    ):
        row = result[key]
        lines.append(
            f"| {label} | {demo.ci_text(row['reward'])} | {demo.ci_text(row['solved'])} | {row['teacher_turns']:.2f} |"
        )
    for name, stats in refs.items():
        lines.append(f"| reference: {name.replace('_', ' ')} | {demo.ci_text(stats)} | | |")
    lines += [
        "",
        "Gain in mean AUC reward, paired on the held-out problems (95% CI): GRPO over the "
        f"format-primed model {demo.ci_text(result['gain_of_grpo_over_format_primed'])}.",
        "",
        f"Time: format priming {result['seconds']['format_priming']:.0f} s, GRPO "
        f"{result['seconds']['grpo']:.0f} s, total {result['seconds']['total']:.0f} s.",
        "",
        "GRPO log (mean over each step's completions):",
        "",
        "| step | AUC reward | solved | teacher turns |",
        "|---:|---:|---:|---:|",
    ]
    for i, entry in enumerate(result["grpo_log"], start=1):
        lines.append(
            f"| {entry.get('step', i)} | {entry['reward']:+.3f} "
            f"| {entry.get('feedback/solved', float('nan')):.2f} "
            f"| {entry.get('feedback/teacher_turns', float('nan')):.2f} |"
        )
    return "\n".join(lines) + "\n"


def parser() -> argparse.ArgumentParser:
    parser = demo.recipe_parser(__doc__.splitlines()[0])
    parser.add_argument("--max-turn-tokens", type=int, default=24)
    parser.add_argument("--k-max", type=int, default=2, help="attempts per episode (K)")
    parser.add_argument(
        "--out", type=Path, default=Path(__file__).parent / "results" / "train_feedback_demo.json"
    )
    return parser


def run_demo(args: argparse.Namespace) -> dict:
    """Prime, evaluate, train with multi-turn GRPO, evaluate; returns the result (also
    written to ``args.out``)."""
    started_run = time.perf_counter()
    os.environ.setdefault("INTBENCH_CACHE", tempfile.mkdtemp(prefix="intbench-demo-cache-"))
    os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")
    from trl import GRPOTrainer

    eval_problems = problems(args.eval_problems, seed=2)
    train_rollout = FeedbackRollout(
        ENV,
        env_kwargs(problems(args.train_problems, seed=1), args.k_max),
        args.max_turn_tokens,
        1.0,
    )
    eval_rollout = FeedbackRollout(
        ENV, env_kwargs(eval_problems, args.k_max), args.max_turn_tokens, 1.0
    )
    train_set = train_rollout.dataset(seed=args.seed)
    eval_set = eval_rollout.dataset(seed=0)
    references = reference_policies(eval_problems, args.k_max)
    model, tokenizer, trainable = demo.trainable_policy("smollm2", args.train_layers)

    def score(label: str) -> dict:
        started = time.perf_counter()
        result = evaluate(model, tokenizer, eval_rollout, eval_set, args.samples, seed=1234)
        result["seconds"] = round(time.perf_counter() - started, 1)
        print(f"{label}:", json.dumps(result["reward"]), flush=True)
        return result

    with tempfile.TemporaryDirectory() as out_dir:
        examples = format_examples(train_set, seed=args.seed)
        prime_seconds = demo.prime_format(model, tokenizer, examples, args, out_dir)
        primed = score("format-primed")
        model, tokenizer = demo.reload_primed(model, tokenizer, out_dir, args.train_layers)
        trainer = GRPOTrainer(
            model=model,
            processing_class=tokenizer,
            reward_funcs=[feedback_reward],
            rollout_func=train_rollout,
            train_dataset=train_set.shuffle(seed=args.seed),
            args=demo.grpo_args(args, out_dir, max_completion_length=512),
        )
        train_seconds, history = demo.train_logged(
            trainer,
            ("feedback/solved", "feedback/teacher_turns"),
        )
    trained = score("after GRPO")
    return demo.write_result(
        args,
        "train_feedback_demo.py",
        trainable,
        markdown,
        primed,
        trained,
        reference_policies=references,
        grpo_log=history,
        seconds=demo.seconds_since(started_run, format_priming=prime_seconds, grpo=train_seconds),
    )


if __name__ == "__main__":
    run_demo(parser().parse_args())
