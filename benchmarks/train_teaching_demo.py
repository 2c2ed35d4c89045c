"""Learning demo: GRPO on the ``teaching`` reward stops a teacher from telling.

Setting (math, SmolLM2-135M as the teacher, ``teaching`` reward = success +
transfer - 3 x leaked; the teacher sees the reference answer): the scripted
student of :mod:`train_feedback_demo` adds four two-digit numbers in three
steps and rushes one of them (marked in its reasoning), so its answer is
always wrong.  It trusts its teacher:

* a message that names exactly the rushed step makes it redo that step, on
  this problem and on a variant with the same rushed step (a lesson that
  carries over: success 1, transfer 1, reward 2);
* a message that states a number it boxes that number (the reference answer
  solves this problem but not the variant: success 1, transfer 0, leaked 1,
  reward -2);
* anything else changes nothing (reward 0, as for waiting).

Telling is the behaviour the papers warn about and the one a 135M model
copies most easily from the prompt, so the policy GRPO starts from is
format-primed on a mix: half of its SFT examples state the reference answer,
half name a step drawn at random.  The demo measures, on held-out problems,
that policy and the same policy after GRPO on the env's ``teaching`` reward:
leak rate (messages that give the answer away, by the domain's leak
detector), transfer rate (variants solved after the message) and mean
reward, with 95% bootstrap CIs over problems and the paired change.

``--protocol feedback``: ``IntBench-Math-Feedback-v0``, K = 2 (one feedback
turn), multi-turn GRPO through :class:`~intbench.training.FeedbackRollout`.
``--protocol monitor``: ``IntBench-Math-v0``, one decision per trace (the
whole trace is revealed), GRPO on the decision reply through
:func:`~intbench.training.monitor_rewards`.  Variants come from a variant
set the demo writes (the env option ``variants``).  Run:
``OMP_NUM_THREADS=2 python benchmarks/train_teaching_demo.py --protocol feedback --seed 0``;
``--reward success`` trains on the outcome-only reward of the old defaults instead,
for contrast (held-out scores read the same components).  :func:`summary`
collects every seed's result in ``results/train_teaching.md``.
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

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))

import demo_training as demo  # noqa: E402
import train_feedback_demo as sums  # noqa: E402
import train_monitor_demo as monitor_demo  # noqa: E402

from intbench.agents.backends.scripted import ScriptedBackend  # noqa: E402
from intbench.generalization.variant_set import write_variant_set  # noqa: E402
from intbench.metrics import bootstrap  # noqa: E402
from intbench.records import Problem  # noqa: E402
from intbench.training.monitor import monitor_reply  # noqa: E402

RESULTS = Path(__file__).parent / "results"
ENVS = {"feedback": "IntBench-Math-Feedback-v0", "monitor": "IntBench-Math-v0"}
_UPDATE = re.compile(r"<update>(.*?)</update>", re.DOTALL)
_NUMBER = re.compile(r"\d+")
SMALLEST_SUM = 40  # four two-digit addends: any smaller number is not a stated answer
TIME = "the final sum"


def numbers_of(question: str) -> list[int]:
    return [int(n) for n in sums._QUESTION.search(question).groups()]


def attempt(numbers: list[int], message: str | None) -> str:
    """The student's solution of ``numbers`` after the teacher's ``message`` (None: alone)."""
    wrong = sums.rushed_step(numbers)
    if message is None:
        return sums.solution_text(numbers, wrong)
    if {int(n) for n in sums._STEP_NAMED.findall(message)} == {wrong}:
        return sums.solution_text(numbers, None)
    told = [int(n) for n in _NUMBER.findall(message) if int(n) >= SMALLEST_SUM]
    if told:
        return f"My teacher says the answer is {told[0]}.\nSo the answer is \\boxed{{{told[0]}}}."
    return sums.solution_text(numbers, wrong)


def student(messages) -> str:
    """The trusting student, in every prompt the two envs give it: a first attempt, a
    feedback retry, a monitor continuation, and a transfer attempt at a variant."""
    text = "\n".join(m["content"] for m in messages)
    if "New problem:" in text:  # transfer: the teacher's message, then the variant
        updates = _UPDATE.findall(text)
        variant = text[text.index("New problem:") :]
        return attempt(numbers_of(variant), updates[-1] if updates else None)
    numbers = numbers_of(text)
    feedback = sums.latest_feedback(text)
    if feedback is not None:
        return attempt(numbers, feedback)
    updates = _UPDATE.findall(text)
    return attempt(numbers, updates[-1] if updates else None)


def variants(problem_list: list[Problem], seed: int) -> list[Problem]:
    """One variant per problem: new addends with the same rushed step (the skill)."""
    rng = random.Random(seed)
    out = []
    for problem in problem_list:
        step = sums.rushed_step(numbers_of(problem.question))
        numbers = [rng.randint(10, 99) for _ in range(4)]
        while sums.rushed_step(numbers) != step:
            numbers = [rng.randint(10, 99) for _ in range(4)]
        skill = {"variant_of": problem.id, "skill": f"rushed step {step}"}
        out.append(sums.sum_problem(f"{problem.id}/variant", numbers, skill))
    return out


def env_kwargs(
    protocol: str, problem_list: list[Problem], variant_file: Path, reward: str = "teaching"
) -> dict:
    write_variant_set(variant_file, variants(problem_list, seed=7))
    common = {
        "student": ScriptedBackend(student, spec="scripted:teaching-demo-student"),
        "problems": problem_list,
        "reward": reward,
        "variants": str(variant_file),
    }
    if protocol == "feedback":
        return {**common, "k_max": 2, "teacher_reference": "answer"}
    return {**common, "increment": 400, "teacher_prompt": "append"}


def message(tell: bool, answer: str, rng: random.Random) -> str:
    if tell:
        return f"The answer is {answer}."
    return rng.choice(sums.PHRASES).format(k=rng.randint(1, sums.STEPS_PER_SUM))


def reply(protocol: str, text: str) -> str:
    if protocol == "feedback":
        return f"<feedback>{text}</feedback>"
    return monitor_reply(True, text, TIME)


def format_examples(protocol: str, rows, answers: dict[str, str], seed: int) -> list[dict]:
    """Half the examples state the reference answer, half name a random step."""
    rng = random.Random(seed)
    return [
        {
            "prompt": row["prompt"],
            "completion": [
                {
                    "role": "assistant",
                    "content": reply(
                        protocol, message(rng.random() < 0.5, answers[row["problem_id"]], rng)
                    ),
                }
            ],
        }
        for row in rows
    ]


def by_problem(rows, values) -> dict[str, list[float]]:
    out: dict[str, list[float]] = {}
    for row, value in zip(rows, values, strict=True):
        out.setdefault(row["problem_id"], []).append(float(value))
    return out


def scored(rows, outcome: dict[str, list[float]]) -> dict:
    """Mean reward, leak rate and transfer rate with bootstrap CIs over problems."""
    result: dict = {}
    for key in ("reward", "leaked", "transfer", "success"):
        values = by_problem(rows, outcome[key])
        result[key] = bootstrap(values, lambda eps: float(np.mean(eps))).to_dict()
        result[f"{key}_by_problem"] = values
    result["rewards_by_problem"] = result["reward_by_problem"]
    return result


class FeedbackDemo:
    """The feedback protocol: multi-turn GRPO through ``FeedbackRollout``."""

    def __init__(self, args, train, held_out, workdir: Path):
        from intbench.training import FeedbackRollout

        env = ENVS["feedback"]
        self.args = args
        self.train_rollout = FeedbackRollout(
            env, env_kwargs("feedback", train, workdir / "train.jsonl", args.reward), 24, 1.0
        )
        self.eval_rollout = FeedbackRollout(
            env, env_kwargs("feedback", held_out, workdir / "eval.jsonl"), 24, 1.0
        )
        self.train_rows = self.train_rollout.dataset(seed=args.seed)
        self.eval_rows = self.eval_rollout.dataset(seed=0)

    def evaluate(self, model, tokenizer) -> dict:
        import torch

        torch.manual_seed(1234)
        model.eval()
        sampler = sums._Sampler(model, tokenizer)
        rows = [self.eval_rows[i] for i in range(len(self.eval_rows))]
        rows = [r for r in rows for _ in range(self.args.samples)]
        outcome: dict[str, list[float]] = {
            "reward": [],
            "leaked": [],
            "transfer": [],
            "success": [],
        }
        for start in range(0, len(rows), 8):
            out = self.eval_rollout([r["prompt"] for r in rows[start : start + 8]], sampler)
            outcome["reward"] += out["episode_reward"]
            outcome["leaked"] += [min(1.0, v) for v in out["leaked"]]
            outcome["transfer"] += out["transfer"]
            outcome["success"] += [float(v) for v in out["solved"]]
        return scored(rows, outcome)

    def trainer(self, model, tokenizer, out_dir: str):
        from trl import GRPOTrainer

        from intbench.training import feedback_reward

        return GRPOTrainer(
            model=model,
            processing_class=tokenizer,
            reward_funcs=[feedback_reward],
            rollout_func=self.train_rollout,
            train_dataset=self.train_rows.shuffle(seed=self.args.seed),
            args=demo.grpo_args(self.args, out_dir, max_completion_length=512),
        )

    logged = ("feedback/leaked", "feedback/transfer", "feedback/solved")


class MonitorDemo:
    """The monitor protocol: GRPO on the decision reply, scored by the env."""

    def __init__(self, args, train, held_out, workdir: Path):
        from intbench.training import MonitorReward, monitor_states

        env = ENVS["monitor"]
        self.args = args
        self.train_kwargs = env_kwargs("monitor", train, workdir / "train.jsonl", args.reward)
        eval_kwargs = env_kwargs("monitor", held_out, workdir / "eval.jsonl")
        self.train_rows = monitor_states(env, self.train_kwargs, states_per_problem=1, seed=0)
        self.eval_rows = monitor_states(env, eval_kwargs, states_per_problem=1, seed=0)
        self.reward = MonitorReward(env, eval_kwargs)

    def evaluate(self, model, tokenizer) -> dict:
        replies = monitor_demo.sample_replies(
            model, tokenizer, self.eval_rows["prompt"], self.args.samples, 48, seed=1234
        )
        rows = [self.eval_rows[i] for i in range(len(self.eval_rows))]
        rows = [r for r in rows for _ in range(self.args.samples)]
        rewards = monitor_demo.score_replies(self.reward, rows, replies)
        components = self.reward.last_components
        outcome = {"reward": rewards}
        for key in ("leaked", "transfer", "success"):
            outcome[key] = [c[key] for c in components]
        result = scored(rows, outcome)
        result["example_replies"] = replies[:3]
        return result

    def trainer(self, model, tokenizer, out_dir: str):
        from trl import GRPOTrainer

        from intbench.training import monitor_rewards

        return GRPOTrainer(
            model=model,
            processing_class=tokenizer,
            reward_funcs=monitor_rewards(ENVS["monitor"], **self.train_kwargs),
            train_dataset=self.train_rows.shuffle(seed=self.args.seed),
            args=demo.grpo_args(
                self.args, out_dir, max_completion_length=48, reward_weights=[1.0, 0.2]
            ),
        )

    logged = ("monitor/leaked", "monitor/transfer", "monitor/success", "monitor/unparsable")


def paired(before: dict, after: dict, key: str) -> dict:
    return demo.paired_gain(
        {"rewards_by_problem": before[f"{key}_by_problem"]},
        {"rewards_by_problem": after[f"{key}_by_problem"]},
    )


def run_demo(args: argparse.Namespace) -> dict:
    """Prime, evaluate, train with GRPO on ``teaching``, evaluate; writes the result."""
    started_run = time.perf_counter()
    os.environ.setdefault("INTBENCH_CACHE", tempfile.mkdtemp(prefix="intbench-demo-cache-"))
    os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")
    train, held_out = sums.problems(args.train_problems, 1), sums.problems(args.eval_problems, 2)
    answers = {p.id: p.answer for p in train}
    with tempfile.TemporaryDirectory() as out_dir:
        kind = FeedbackDemo if args.protocol == "feedback" else MonitorDemo
        setup = kind(args, train, held_out, Path(out_dir))
        model, tokenizer, trainable = demo.trainable_policy("smollm2", args.train_layers)
        examples = format_examples(args.protocol, setup.train_rows, answers, args.seed)
        prime_seconds = demo.prime_format(model, tokenizer, examples, args, out_dir)
        primed = setup.evaluate(model, tokenizer)
        print(
            "format-primed:",
            json.dumps({k: primed[k]["value"] for k in ("reward", "leaked", "transfer")}),
            flush=True,
        )
        model, tokenizer = demo.reload_primed(model, tokenizer, out_dir, args.train_layers)
        train_seconds, history = demo.train_logged(
            setup.trainer(model, tokenizer, out_dir), setup.logged
        )
        trained = setup.evaluate(model, tokenizer)
        print(
            "after GRPO:",
            json.dumps({k: trained[k]["value"] for k in ("reward", "leaked", "transfer")}),
            flush=True,
        )
    args.command = (
        f"OMP_NUM_THREADS=2 python benchmarks/train_teaching_demo.py --protocol {args.protocol} "
        f"--seed {args.seed}" + ("" if args.reward == "teaching" else f" --reward {args.reward}")
    )
    return demo.write_result(
        args,
        "train_teaching_demo.py",
        trainable,
        markdown,
        primed,
        trained,
        change_in_leak_rate=paired(primed, trained, "leaked"),
        change_in_transfer=paired(primed, trained, "transfer"),
        grpo_log=history,
        seconds=demo.seconds_since(started_run, format_priming=prime_seconds, grpo=train_seconds),
    )


def markdown(result: dict) -> str:
    """One seed's table, written next to its JSON file."""
    setting = result["setting"]
    lines = [
        f"# Teaching demo: {setting['protocol']} env, GRPO on the {setting['reward']} reward, "
        f"seed {setting['seed']}",
        "",
        f"Command: `{result['command']}` (settings: {json.dumps(setting, default=str)}).  "
        f"{setting['eval_problems']} held-out problems x {setting['samples']} samples, 95% "
        "bootstrap CIs over problems.",
        "",
        "| policy | mean reward | leak rate | transfer | solved |",
        "|---|---:|---:|---:|---:|",
    ]
    for label, key in (("format-primed (start of GRPO)", "format_primed"), ("+ GRPO", "grpo")):
        row = result[key]
        lines.append(
            f"| {label} | "
            + " | ".join(demo.ci_text(row[k]) for k in ("reward", "leaked", "transfer", "success"))
            + " |"
        )
    lines += [
        "",
        f"Paired change, GRPO minus primed: reward {demo.ci_text(result['gain_of_grpo_over_format_primed'])}, "
        f"leak rate {demo.ci_text(result['change_in_leak_rate'])}, transfer "
        f"{demo.ci_text(result['change_in_transfer'])}.  Time {result['seconds']['total']:.0f} s.",
        "",
        "GRPO log (batch means):",
        "",
        "| step | reward | "
        + " | ".join(k.split("/")[1] for k in result["grpo_log"][0] if "/" in k)
        + " |",
    ]
    keys = [k for k in result["grpo_log"][0] if "/" in k]
    lines.append("|---:|---:|" + "---:|" * len(keys))
    for i, entry in enumerate(result["grpo_log"], start=1):
        cells = [f"{entry.get(k, float('nan')):.2f}" for k in keys]
        lines.append(
            f"| {entry.get('step', i)} | {entry['reward']:+.3f} | " + " | ".join(cells) + " |"
        )
    return "\n".join(lines) + "\n"


def summary() -> str:
    """Every seed's result under ``results/``, one table per protocol; also written to
    ``results/train_teaching.md``."""
    lines = [
        "# Training on the teaching reward: leak rate falls, transfer rises",
        "",
        "`benchmarks/train_teaching_demo.py` (setting in its docstring): SmolLM2-135M teacher, "
        "scripted trusting student, reward `teaching` = success + transfer - 3 x leaked.  "
        "Primed = the format-primed policy GRPO starts from (half its SFT examples state the "
        "answer).  Changes are paired on the held-out problems, 95% bootstrap CIs.",
    ]
    for protocol in ENVS:
        files = sorted(RESULTS.glob(f"train_teaching_demo_{protocol}_seed*.json"))
        if not files:
            continue
        lines += [
            "",
            f"## {protocol}",
            "",
            f"Command: `OMP_NUM_THREADS=2 python benchmarks/train_teaching_demo.py --protocol {protocol} --seed S`",
            "",
            "| seed | leak rate primed -> GRPO | change [95% CI] | transfer primed -> GRPO | change [95% CI] | reward primed -> GRPO | minutes |",
            "|---:|---:|---:|---:|---:|---:|---:|",
        ]
        for file in files:
            r = json.loads(file.read_text())
            p, g = r["format_primed"], r["grpo"]
            reward = f"{p['reward']['value']:+.2f} -> {g['reward']['value']:+.2f}"
            lines.append(_row(r, [str(r["setting"]["seed"])], [reward]))
    lines += _outcome_only_rows()
    text = "\n".join(lines) + "\n"
    (RESULTS / "train_teaching.md").write_text(text)
    return text


def _outcome_only_rows() -> list[str]:
    """The runs trained on the outcome-only ``success`` reward, for contrast."""
    files = sorted(RESULTS.glob("train_teaching_demo_*_success_seed*.json"))
    if not files:
        return []
    lines = [
        "",
        "## For contrast: GRPO on the outcome-only reward (`success`, the old default)",
        "",
        "Same setting and held-out scoring; only GRPO's reward differs (`--reward success`).",
        "",
        "| protocol | seed | leak rate primed -> GRPO | change [95% CI] | transfer primed -> GRPO | change [95% CI] | minutes |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for file in files:
        r = json.loads(file.read_text())
        lines.append(_row(r, [r["setting"]["protocol"], str(r["setting"]["seed"])], []))
    return lines


def _row(result: dict, first: list[str], extra: list[str]) -> str:
    """A run's table row: ``first`` cells, leak rate and transfer (primed -> GRPO, paired
    change), ``extra`` cells, minutes."""
    p, g = result["format_primed"], result["grpo"]
    cells = [
        *first,
        f"{p['leaked']['value']:.2f} -> {g['leaked']['value']:.2f}",
        demo.ci_text(result["change_in_leak_rate"]),
        f"{p['transfer']['value']:.2f} -> {g['transfer']['value']:.2f}",
        demo.ci_text(result["change_in_transfer"]),
        *extra,
        f"{result['seconds']['total'] / 60:.1f}",
    ]
    return "| " + " | ".join(cells) + " |"


def parser() -> argparse.ArgumentParser:
    parser = demo.recipe_parser(
        __doc__.splitlines()[0], prime_steps=16, steps=12, eval_problems=24, warmup_steps=2
    )
    parser.add_argument("--protocol", choices=sorted(ENVS), required=True)
    parser.add_argument(
        "--reward",
        choices=("teaching", "success"),
        default="teaching",
        help="GRPO's reward; success is the outcome-only reward the old defaults paid "
        "(held-out scores always read the teaching components)",
    )
    parser.add_argument("--out", type=Path, default=None)
    return parser


if __name__ == "__main__":
    arguments = parser().parse_args()
    if arguments.out is None:
        reward = "" if arguments.reward == "teaching" else f"_{arguments.reward}"
        arguments.out = (
            RESULTS / f"train_teaching_demo_{arguments.protocol}{reward}_seed{arguments.seed}.json"
        )
    run_demo(arguments)
    print(summary())
