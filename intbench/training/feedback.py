"""Multi-turn GRPO for the feedback teacher through TRL's ``rollout_func``.

One sample is a whole feedback episode.  The policy writes a teacher turn;
the frozen student (the env's student model) retries and is verified; while
the student is still wrong and attempts remain, the policy writes the next
turn.  The teacher sees one growing chat: the env's teacher prompt after the
first failed attempt, then for each retry a user turn with the new attempt
(:data:`FOLLOW_UP`).  The sample's completion is that whole dialogue after
the prompt, as tokens: the policy's tokens have ``env_mask`` 1 and the
student/env tokens 0, so only the teacher's tokens carry loss.  Generation is
conditioned on exactly these tokens, so training and sampling see the same
context.  The episode outcome (the env's reward) is the sample's reward.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

import numpy as np

from intbench.training.envpool import EnvPool

FOLLOW_UP = (
    "The student read your feedback and tried again (attempt {attempt}). It is still not correct.\n\n"
    "New attempt:\n{text}\n\n{execution}"
    "Write your next feedback inside <feedback>...</feedback> tags."
)
RETRY = {"intervene": 0, "message": ""}


def _prompt_key(messages: list[dict]) -> str:
    canonical = json.dumps([[m["role"], m["content"]] for m in messages], ensure_ascii=False)
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


def _first_attempt_flow(env, problem_index: int, seed: int):
    """Flow: reset and play attempt 1 (cached); -> (terminated, info)."""
    yield from env.reset_flow(seed=seed, options={"problem_index": problem_index})
    _, _, terminated, _, info = yield from env.step_flow(RETRY)
    return terminated, info


def _feedback_step_flow(env, feedback: str):
    """Flow: the student retries after the policy's raw reply.

    The env parses it (text inside ``<feedback>`` tags, or all of it); an
    empty reply is a plain retry.
    """
    observation, reward, terminated, _, info = yield from env.step_flow(feedback)
    return reward, terminated, info, observation


class FeedbackRollout:
    """``rollout_func`` for ``GRPOTrainer`` that plays whole feedback episodes.

    Build the training set with :meth:`dataset` (it registers each prompt, so
    the rollout knows which problem and seed a prompt stands for), then pass
    ``rollout_func=rollout`` and ``reward_funcs=[feedback_reward]``.  Extra
    fields handed to the reward functions: ``episode_reward``, ``solved``,
    ``teacher_turns`` and ``leaked`` (one value per sample).
    """

    def __init__(
        self,
        env_id: str = "IntBench-Math-Feedback-v0",
        env_kwargs: dict[str, Any] | None = None,
        max_turn_tokens: int = 128,
        temperature: float = 1.0,
        pool: EnvPool | None = None,
    ):
        self.pool = pool or EnvPool(env_id, env_kwargs)
        if self.pool.protocol != "feedback":
            raise ValueError(f"FeedbackRollout needs a feedback env id, got {self.pool.env_id!r}")
        if max_turn_tokens < 1:
            raise ValueError(f"max_turn_tokens must be positive, got {max_turn_tokens}")
        self.max_turn_tokens = max_turn_tokens
        self.temperature = temperature
        self._states: dict[str, tuple[int, int]] = {}

    def dataset(self, repeats: int = 1, seed: int = 0):
        """A ``datasets.Dataset`` of the problems whose first attempt failed.

        Columns: ``prompt`` (the env's teacher prompt after attempt 1),
        ``problem_index``, ``problem_id`` and ``seed``.  Problems the student
        solves alone are left out: there is nothing for a teacher to do.
        """
        from datasets import Dataset

        rng = np.random.default_rng(seed)
        plan = [
            (i, int(rng.integers(2**31 - 1)))
            for i in range(self.pool.problem_count())
            for _ in range(repeats)
        ]
        envs = self.pool.take(len(plan))
        starts = self.pool.run(
            [_first_attempt_flow(env, i, s) for env, (i, s) in zip(envs, plan, strict=True)]
        )
        rows = []
        for (index, state_seed), (terminated, info) in zip(plan, starts, strict=True):
            if terminated:
                continue
            self._states[_prompt_key(info["messages"])] = (index, state_seed)
            rows.append(
                {
                    "prompt": info["messages"],
                    "problem_index": index,
                    "problem_id": info["problem_id"],
                    "seed": state_seed,
                }
            )
        if not rows:
            raise ValueError(
                "the student solved every problem on its first attempt: no feedback states to train on"
            )
        return Dataset.from_list(rows)

    def __call__(self, prompts: list[list[dict]], trainer: Any) -> dict[str, list]:
        states = []
        for prompt in prompts:
            state = self._states.get(_prompt_key(prompt))
            if state is None:
                raise KeyError(
                    "a prompt reached the rollout that FeedbackRollout.dataset() did not build"
                )
            states.append(state)
        tokenizer = trainer.processing_class
        envs = self.pool.take(len(prompts))
        starts = self.pool.run(
            [_first_attempt_flow(env, i, s) for env, (i, s) in zip(envs, states, strict=True)]
        )
        dialogues = [list(p) for p in prompts]
        rendered = [_render(tokenizer, d) for d in dialogues]
        prompt_ids = [_encode(tokenizer, text) for text in rendered]
        completion_ids: list[list[int]] = [[] for _ in prompts]
        env_mask: list[list[int]] = [[] for _ in prompts]
        rewards = [0.0] * len(prompts)
        turns = [0] * len(prompts)
        leaked = [0.0] * len(prompts)
        active = [i for i, (terminated, _) in enumerate(starts) if not terminated]
        while active:
            generated = _generate(
                trainer,
                [prompt_ids[i] + completion_ids[i] for i in active],
                self.max_turn_tokens,
                self.temperature,
            )
            texts = [tokenizer.decode(ids, skip_special_tokens=True) for ids in generated]
            steps = self.pool.run(
                [_feedback_step_flow(envs[i], text) for i, text in zip(active, texts, strict=True)]
            )
            still_active = []
            for i, ids, text, (reward, terminated, info, obs) in zip(
                active, generated, texts, steps, strict=True
            ):
                completion_ids[i] += ids
                env_mask[i] += [1] * len(ids)
                rewards[i] += reward
                turns[i] += 1
                if terminated:
                    continue
                follow_up = FOLLOW_UP.format(
                    attempt=info["attempt"],
                    text=obs["attempt"],
                    execution=f"Execution results:\n{obs['execution']}\n\n"
                    if obs["execution"]
                    else "",
                )
                dialogues[i] += [
                    {"role": "assistant", "content": text},
                    {"role": "user", "content": follow_up},
                ]
                new_text = _render(tokenizer, dialogues[i])
                segment = _env_segment(
                    tokenizer,
                    rendered[i],
                    text,
                    new_text,
                    ended=bool(ids) and ids[-1] == tokenizer.eos_token_id,
                )
                rendered[i] = new_text
                completion_ids[i] += segment
                env_mask[i] += [0] * len(segment)
                still_active.append(i)
            active = still_active
        for i in range(len(prompts)):
            if not completion_ids[i]:  # the env ended before any teacher turn (e.g. a model error)
                completion_ids[i] = [tokenizer.eos_token_id]
                env_mask[i] = [0]
            episode = envs[i].last_episode
            if episode is not None:
                leaked[i] = float(any(f.leaked for f in episode.feedback))
        return {
            "prompt_ids": prompt_ids,
            "completion_ids": completion_ids,
            "logprobs": None,
            "env_mask": env_mask,
            "episode_reward": rewards,
            "solved": [
                float(e.last_episode is not None and e.last_episode.solved_at is not None)
                for e in envs
            ],
            "teacher_turns": turns,
            "leaked": leaked,
        }


def _render(tokenizer: Any, messages: list[dict]) -> str:
    return tokenizer.apply_chat_template(messages, add_generation_prompt=True, tokenize=False)


def _encode(tokenizer: Any, text: str) -> list[int]:
    return list(tokenizer(text, add_special_tokens=False)["input_ids"])


def _env_segment(tokenizer: Any, before: str, reply: str, after: str, ended: bool) -> list[int]:
    """Tokens the chat template puts between the policy's reply and its next turn."""
    if not after.startswith(before + reply):
        raise ValueError(
            "the policy's chat template is not prefix-stable (re-rendering a dialogue changes "
            "earlier turns), so multi-turn rollouts cannot be masked token-exactly"
        )
    segment = after[len(before) + len(reply) :]
    if ended and segment.startswith(tokenizer.eos_token):
        segment = segment[len(tokenizer.eos_token) :]  # the policy already generated it
    return _encode(tokenizer, segment)


def _generate(
    trainer: Any, contexts: list[list[int]], max_new_tokens: int, temperature: float
) -> list[list[int]]:
    """Sample one teacher turn per context with the policy; cut after the first EOS."""
    import torch
    from trl.models import unwrap_model_for_generation

    tokenizer = trainer.processing_class
    pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else tokenizer.eos_token_id
    width = max(len(c) for c in contexts)
    input_ids = torch.tensor([[pad] * (width - len(c)) + c for c in contexts])
    attention = torch.tensor([[0] * (width - len(c)) + [1] * len(c) for c in contexts])
    device = trainer.accelerator.device
    with (
        unwrap_model_for_generation(
            trainer.model_wrapped,
            trainer.accelerator,
            gather_deepspeed3_params=trainer.args.ds3_gather_for_generation,
        ) as model,
        torch.no_grad(),
    ):
        output = model.generate(
            input_ids=input_ids.to(device),
            attention_mask=attention.to(device),
            max_new_tokens=max_new_tokens,
            do_sample=True,
            temperature=temperature,
            pad_token_id=pad,
        )
    turns = []
    for row in output[:, width:].tolist():
        if tokenizer.eos_token_id in row:
            row = row[: row.index(tokenizer.eos_token_id) + 1]
        turns.append(row)
    return turns


def feedback_reward(
    completions: list,
    episode_reward: list[float],
    solved: list[float],
    teacher_turns: list[int],
    leaked: list[float],
    log_metric=None,
    **_: Any,
) -> list[float]:
    """TRL reward function: the episode outcome from :class:`FeedbackRollout`.

    Logs ``feedback/solved``, ``feedback/teacher_turns`` and ``feedback/leaked``
    (batch means) through ``log_metric``.
    """
    if len(episode_reward) != len(completions):
        raise ValueError(
            f"{len(episode_reward)} episode rewards for {len(completions)} completions"
        )
    if log_metric is not None:
        log_metric("feedback/solved", float(np.mean(solved)))
        log_metric("feedback/teacher_turns", float(np.mean(teacher_turns)))
        log_metric("feedback/leaked", float(np.mean(leaked)))
    return [float(r) for r in episode_reward]
