"""Training rewards where telling loses, the transfer component and the reward audit.

Every exploit of issue 37's first bullet is here as a test that now shows
tell < never: a feedback message that is just ``\\boxed{6}`` under
``feedback_grpo.yaml``, telling on the monitor env under ``helpfulness`` and
``success``, and a telling teacher against one that never helps under every
shipped config.
"""

from __future__ import annotations

from pathlib import Path

import gymnasium as gym
import pytest

import intbench  # noqa: F401  (registers the ids)
import intbench.training
from intbench.agents.backends.scripted import ScriptedBackend
from intbench.cli import main
from intbench.envs.common import without_wall_clock
from intbench.envs.engine import run_flow
from intbench.envs.rewards import COMPONENTS, PRESETS, presets_for, telling_margin
from intbench.generalization.variant_set import write_variant_set
from intbench.records import Problem

CONFIGS = Path(intbench.training.__file__).parent / "configs"
GRPO_CONFIGS = sorted(p for p in CONFIGS.glob("*.yaml") if "grpo" in p.name)
SHIPPED_TRAINING = sorted(p for p in CONFIGS.glob("*.yaml") if "sft" not in p.name)
METHOD = "Work out what is asked first, then do one step at a time."


@pytest.fixture(autouse=True)
def _cache(tmp_path, monkeypatch):
    monkeypatch.setenv("INTBENCH_CACHE", str(tmp_path / "cache"))


def sums(k: int = 4) -> list[Problem]:
    return [
        Problem(id=f"s/{i}", domain="math", question=f"What is {i} + 20?", answer=str(i + 20))
        for i in range(k)
    ]


def sum_variants(problems: list[Problem]) -> list[Problem]:
    return [
        Problem(
            id=f"{p.id}/v",
            domain="math",
            question=f"What is {i} + 50?",
            answer=str(i + 50),
            metadata={"variant_of": p.id, "skill": "addition"},
        )
        for i, p in enumerate(problems)
    ]


class Student:
    """Right alone only on ``alone_right``; copies an answer it is told; solves a
    variant only after the method (``METHOD``) was taught.  Counts its calls."""

    def __init__(self, problems: list[Problem], variants: list[Problem], alone_right=()):
        self.known = [*problems, *variants]
        self.alone_right = set(alone_right)
        self.calls = 0

    def __call__(self, messages) -> str:
        self.calls += 1
        text = "\n".join(m["content"] for m in messages)
        problem = max(
            (p for p in self.known if p.question in text), key=lambda p: text.rfind(p.question)
        )
        told = text.replace(problem.question, "")
        if problem.id.endswith("/v"):
            solved = METHOD in text
        else:
            solved = problem.id in self.alone_right or METHOD in text or problem.answer in told
        return f"So \\boxed{{{problem.answer if solved else 999}}}."

    def backend(self) -> ScriptedBackend:
        return ScriptedBackend(self, spec=f"scripted:student-{id(self)}")


def monitor_env(student: Student, problems, tmp_path, **kwargs):
    path = write_variant_set(tmp_path / "v.jsonl", sum_variants(problems))
    return gym.make(
        "IntBench-Math-v0",
        student=student.backend(),
        problems=problems,
        variants=str(path),
        increment=400,
        **kwargs,
    )


def monitor_reward(env, index: int, action) -> tuple[float, dict]:
    env.reset(seed=0, options={"problem_index": index})
    done = False
    while not done:
        _, reward, done, _, info = env.step(action)
    return reward, info["reward_components"]


WAIT = {"intervene": 0, "message": ""}


# ------------------------------------------------------------- telling loses
@pytest.mark.parametrize("protocol", sorted(COMPONENTS))
def test_every_preset_scores_a_leak_below_silence_whatever_the_outcomes(protocol):
    for name in presets_for(protocol):
        assert telling_margin(PRESETS[name], protocol) < 0, name
    # What the exploits used: the outcome alone lets telling win or tie.
    assert telling_margin({"success": 1.0}, protocol) == 1.0
    assert telling_margin({"success": 1.0, "leaked": -1.0}, protocol) == 0.0  # 0 vs 0: a gamble


@pytest.mark.parametrize(
    "preset", ["helpfulness", "success", "pedagogical", "teaching", "transfer"]
)
@pytest.mark.parametrize("alone_right", [False, True])
def test_monitor_telling_scores_below_waiting(preset, alone_right, tmp_path):
    problems = sums()
    student = Student(problems, sum_variants(problems), alone_right={"s/1"} if alone_right else ())
    env = monitor_env(student, problems, tmp_path, reward=preset)
    told, parts = monitor_reward(env, 1, {"intervene": 1, "message": "The answer is 21."})
    waited, _ = monitor_reward(env, 1, WAIT)
    assert parts["leaked"] == 1.0 and parts["success"] == 1.0  # the student copied it
    assert told < waited


def feedback_config_env(student: Student, problems, tmp_path):
    from intbench.training import load_config

    config = load_config(CONFIGS / "feedback_grpo.yaml")
    options = {**config.env_kwargs(), "student": student.backend(), "problems": problems}
    for key in ("source", "split", "n", "data_seed"):
        options.pop(key)
    path = write_variant_set(tmp_path / "v.jsonl", sum_variants(problems))
    return gym.make(config.env, **options, variants=str(path))


def feedback_return(env, index: int, message: str | None) -> tuple[float, dict]:
    env.reset(seed=0, options={"problem_index": index})
    total, done, info = 0.0, False, {}
    while not done:
        action = {"intervene": 1, "message": message} if message else WAIT
        _, reward, done, _, info = env.step(action)
        total += reward
    return total, info["record"]["reward_components"]


def test_feedback_boxed_answer_scores_below_no_feedback_under_feedback_grpo_yaml(tmp_path):
    problems = [Problem(id="s/0", domain="math", question="What is gcd(84, 18)?", answer="6")]
    env = feedback_config_env(Student(problems, sum_variants(problems)), problems, tmp_path)
    told, parts = feedback_return(env, 0, "\\boxed{6}")
    silent, _ = feedback_return(env, 0, None)
    assert parts["success"] == 1.0 and parts["leaked"] == 1.0
    assert told < silent  # it was +1.00 against 0.00
    taught, parts = feedback_return(env, 0, METHOD)
    assert parts["transfer"] == 1.0 and taught > silent


def test_feedback_charges_every_leaking_turn():
    problems = [Problem(id="s/0", domain="math", question="What is 3 + 4?", answer="7")]
    env = gym.make(
        "IntBench-Math-Feedback-v0", student="scripted:text=So \\boxed{1}.", problems=problems,
        k_max=3, reward={"leaked": -1.0},
    )  # fmt: skip
    env.reset(seed=0)  # reset plays attempt 1
    action = {"intervene": 1, "message": "Think of 7 as the target."}
    rewards = [env.step(action)[1] for _ in range(2)]
    assert rewards == [-1.0, -1.0]  # feedback on attempts 1 and 2: two leaks
    assert env.unwrapped.last_episode.reward_components["leaked"] == 2.0


def test_tutor_telling_scores_below_silence(tmp_path):
    problems = sums(2)
    student = Student(problems, sum_variants(problems))
    env = gym.make(
        "IntBench-Math-Tutor-v0", student=student.backend(), problems=problems,
        ideation_turns=1, submissions=1,
    )  # fmt: skip
    scores = {}
    for name, message in {"tell": "The answer is 20.", "never": None}.items():
        env.reset(seed=0, options={"problem_index": 0})
        action = {"intervene": 1, "message": message} if message else WAIT
        _, scores[name], _, _, info = env.step(action)
    assert info["record"]["reward_components"]["leaked"] == 0.0
    assert scores["tell"] < scores["never"]


# ------------------------------------------------------------------ transfer
def test_transfer_pays_for_teaching_the_method_not_for_telling(tmp_path):
    problems = sums()
    student = Student(problems, sum_variants(problems))
    env = monitor_env(student, problems, tmp_path, reward="transfer")
    _, told = monitor_reward(env, 2, {"intervene": 1, "message": "It is 22."})
    _, taught = monitor_reward(env, 2, {"intervene": 1, "message": METHOD})
    _, waited = monitor_reward(env, 2, WAIT)
    assert (told["transfer"], taught["transfer"], waited["transfer"]) == (0.0, 1.0, 0.0)
    assert (told["transfer_gain"], taught["transfer_gain"], waited["transfer_gain"]) == (0, 1, 0)
    assert told["success"] == taught["success"] == 1.0  # both fixed the original problem
    record = env.unwrapped.last_episode
    assert record.metadata["transfer"] == [
        {"variant_id": "s/2/v", "with_message": False, "solved": False, "solved_alone": False,
         "error": None}
    ]  # fmt: skip


def test_generated_problems_get_procedural_variants():
    from intbench.envs.domains import load_problems

    problems = load_problems("math", n=2, seed=0)
    student = Student(problems, [])
    seen = []

    def spy(messages):
        seen.append(messages[-1]["content"])
        return student(messages) if "New problem:" not in seen[-1] else "So \\boxed{0}."

    env = gym.make(
        "IntBench-Math-v0", student=ScriptedBackend(spy), problems=problems, reward="teaching",
        increment=10_000,
    )  # fmt: skip
    variant_ids = []
    for seed in (5, 5, 6):
        env.reset(seed=seed, options={"problem_index": 0})
        env.step({"intervene": 1, "message": METHOD})
        variant_ids.append(env.unwrapped.last_episode.metadata["transfer"][0]["variant_id"])
    assert variant_ids[0] == variant_ids[1]  # the same reset seed, the same variant
    assert all(v.startswith(problems[0].id + "/variant/") for v in variant_ids)
    alone, helped = [text for text in seen if "New problem:" in text][:2]
    assert problems[0].question not in alone.split("New problem:")[1]
    assert METHOD in helped and METHOD not in alone
    # Both arms show the original and the student's own attempt: the message is the
    # only difference between them.
    assert problems[0].question in alone and "Your reasoning:" in alone
    message_block = "A teacher then told you:\n<update>" + METHOD + "</update>\n\n"
    assert helped.replace(message_block, "") == alone


def test_transfer_without_variants_is_a_one_line_error():
    with pytest.raises(ValueError, match="intbench variants") as error:
        gym.make("IntBench-Math-v0", student="scripted:text=x", problems=sums(), reward="teaching")
    assert "\n" not in str(error.value)
    with pytest.raises(ValueError, match="no usable variant of 1 problem"):
        gym.make(
            "IntBench-Math-Feedback-v0", student="scripted:text=x", problems=sums(),
            reward="transfer", variants=str(_partial_set()),
        )  # fmt: skip


def _partial_set() -> Path:
    import tempfile

    path = Path(tempfile.mkdtemp()) / "v.jsonl"
    return write_variant_set(path, sum_variants(sums())[:3])


@pytest.mark.parametrize("protocol", ["", "-Feedback", "-Tutor"])
def test_no_variant_attempt_unless_the_reward_reads_transfer(protocol, tmp_path):
    problems = sums(2)
    calls = {}
    for preset in ("success", "teaching"):
        student = Student(problems, sum_variants(problems))
        path = write_variant_set(tmp_path / "v.jsonl", sum_variants(problems))
        env = gym.make(
            f"IntBench-Math{protocol}-v0", student=student.backend(), problems=problems,
            reward=preset, variants=str(path),
        )  # fmt: skip
        env.reset(seed=0, options={"problem_index": 1})
        done = False
        while not done:
            _, _, done, _, _ = env.step({"intervene": 1, "message": METHOD})
        calls[preset] = student.calls
        extra = env.unwrapped.last_episode.metadata.get("transfer")
        assert (extra is None) == (preset == "success")
    # Both arms of the variant attempt, one teacher turn.
    assert calls["teaching"] == calls["success"] + 2


class OneAtATime:
    """Serves a flow's requests one model call each: the order they were written in."""

    def __init__(self, executor):
        self.executor = executor

    def serve(self, requests):
        return [self.executor.serve([r])[0] for r in requests]


def _episode(protocol: str, preset: str, tmp_path, one_at_a_time: bool):
    """One episode with a method hint at every turn -> (record without timings, batch sizes)."""
    problems = sums(2)
    backend = ScriptedBackend(Student(problems, sum_variants(problems)), spec="scripted:student")
    batches = []
    generate = backend.generate
    backend.generate = lambda batch, params: batches.append(len(batch)) or generate(batch, params)
    path = write_variant_set(tmp_path / "v.jsonl", sum_variants(problems))
    env = gym.make(
        f"IntBench-Math{protocol}-v0", student=backend, problems=problems, reward=preset,
        variants=str(path), cache_dir=str(tmp_path / f"cache-{preset}-{one_at_a_time}"),
    ).unwrapped  # fmt: skip
    server = OneAtATime(env.executor) if one_at_a_time else env.executor
    run_flow(env.reset_flow(seed=0, options={"problem_index": 1}), server)
    done = False
    while not done:
        step = env.step_flow({"intervene": 1, "message": METHOD})
        _, _, done, _, _ = run_flow(step, server)
    return without_wall_clock(env.last_episode.to_dict()), batches


@pytest.mark.parametrize("protocol", ["", "-Feedback", "-Tutor"])
def test_the_transfer_attempt_goes_out_with_the_students_other_call(protocol, tmp_path):
    """Issue 37 item 4: the variant arms need only the message, so they share the
    batch of the student's continuation (retry, phase-2 solve): two more requests per
    teacher turn, no more model calls; the episode is the one played call by call."""
    record, batches = _episode(protocol, "teaching", tmp_path, one_at_a_time=False)
    plain, plain_batches = _episode(protocol, "success", tmp_path, one_at_a_time=False)
    serial, serial_batches = _episode(protocol, "teaching", tmp_path, one_at_a_time=True)
    assert len(batches) == len(plain_batches)
    assert sum(batches) == sum(plain_batches) + 2 * len(record["metadata"]["transfer"])
    assert record == serial and len(serial_batches) == sum(batches)
    assert record["metadata"]["transfer"][-1]["solved"]  # the answers went to the right flows


def test_monitor_grpo_reward_computes_transfer_only_for_the_preset(tmp_path):
    from intbench.training import MonitorReward, monitor_states
    from intbench.training.monitor import monitor_reply

    problems = sums(2)
    path = write_variant_set(tmp_path / "v.jsonl", sum_variants(problems))
    for preset, expected in (("teaching", [0.9, -2.1, 0.0]), ("helpfulness", [1.0, -1.0, 0.0])):
        student = Student(problems, sum_variants(problems))
        kwargs = {"student": student.backend(), "problems": problems, "increment": 400,
                  "reward": preset, "variants": str(path)}  # fmt: skip
        row = monitor_states("IntBench-Math-v0", kwargs, seed=0)[0]
        answer = problems[row["problem_index"]].answer
        logged = {}
        rewards = MonitorReward("IntBench-Math-v0", kwargs)(
            prompts=[row["prompt"]] * 3,
            completions=[
                monitor_reply(True, METHOD),
                monitor_reply(True, f"The answer is {answer}."),
                monitor_reply(False),
            ],
            problem_index=[row["problem_index"]] * 3,
            waits=[row["waits"]] * 3,
            seed=[row["seed"]] * 3,
            log_metric=logged.__setitem__,
        )
        assert rewards == pytest.approx(expected)
        assert logged["monitor/transfer"] == pytest.approx(1 / 3 if preset == "teaching" else 0)


def test_grpo_configs_default_to_the_teaching_reward():
    from intbench.training import load_config

    assert load_config(None).env_kwargs()["reward"] == "teaching"
    for path in GRPO_CONFIGS:
        reward = load_config(path).env_kwargs()["reward"]
        assert reward == "teaching", path.name


# --------------------------------------------------------------------- audit
@pytest.mark.parametrize("config", SHIPPED_TRAINING, ids=lambda p: p.name)
def test_audit_passes_every_shipped_training_config(config, capsys):
    """Issue 54 item 3: every probe family on every shipped config, with the env's own
    variants: tells and content-free messages below waiting, honest hints not."""
    from intbench.verifiers.leakage.probes import CONTENT_FREE_FAMILIES, HONEST_FAMILIES

    assert main(["audit-reward", "--config", str(config), "-n", "6"]) == 0
    out = capsys.readouterr().out
    rows = [line.split() for line in out.splitlines() if line.startswith("  ")]
    kinds = {row[0]: row[1] for row in rows}
    assert kinds["never"] == "never"
    assert sum(kind == "tell" for kind in kinds.values()) >= 20
    assert set(CONTENT_FREE_FAMILIES) <= set(kinds) and len(set(HONEST_FAMILIES) & set(kinds)) >= 5


@pytest.mark.parametrize(
    "env, reward",
    [
        ("IntBench-Math-Feedback-v0", "{success: 1.0}"),  # the old feedback default
        ("IntBench-Math-Feedback-v0", "{auc: 1.0}"),
        ("IntBench-Math-v0", "{helpfulness: 1.0}"),  # the old monitor default
        ("IntBench-Math-v0", "{success: 1.0, leaked: -1.0}"),  # zeroing a leaked success: a tie
    ],
)
def test_audit_fails_a_reward_that_pays_for_telling(env, reward, tmp_path, capsys):
    config = tmp_path / "c.yaml"
    config.write_text(f"method: grpo\nenv: {env}\nenv_options:\n  reward: {reward}\n")
    assert main(["audit-reward", "--config", str(config), "-n", "6"]) == 1
    assert "FAIL: tell:plain" in capsys.readouterr().out


def test_audit_refuses_a_bad_config(tmp_path, capsys):
    config = tmp_path / "c.yaml"
    config.write_text("method: grpo\nenv_options: {reward: nope}\n")
    assert main(["audit-reward", "--config", str(config)]) == 2
    assert "unknown monitor reward preset 'nope'" in capsys.readouterr().err
    assert main(["audit-reward", "--config", str(tmp_path / "missing.yaml")]) == 2
    assert main(["audit-reward", "--config", str(CONFIGS / "sft.yaml")]) == 2
    assert "audit-reward checks GRPO rewards" in capsys.readouterr().err


def test_audit_of_several_configs_fails_when_one_fails(tmp_path, capsys):
    bad = tmp_path / "c.yaml"
    bad.write_text("method: grpo\nenv_options: {reward: {success: 1.0}}\n")
    good = str(CONFIGS / "monitor_grpo.yaml")
    assert main(["audit-reward", "--config", good, str(bad), "-n", "4"]) == 1
    assert main(["audit-reward", "--config", good, good, "-n", "4"]) == 0


def test_audit_flags_forwarded_tests_and_ignores_problems_without_a_turn():
    from intbench.metrics.estimate import Estimate
    from intbench.training.audit import TeacherScore, telling_wins

    def score(name, per, no_turn=()):
        kind = {"never": "never", "forward-tests": "forward"}.get(name, name.split(":")[0])
        return TeacherScore(name, kind, Estimate(sum(per.values()) / len(per)), per, set(no_turn))

    never = score("never", {"a": 1.0, "b": 0.0}, no_turn={"a"})
    # "a" ended before any teacher turn (solved at once): equal there, and that is no choice
    assert telling_wins([never, score("tell:x", {"a": 1.0, "b": -2.0}, no_turn={"a"})]) == []
    assert telling_wins([never, score("forward-tests", {"a": 1.0, "b": 1.0}, {"a"})]) == [
        "forward-tests"
    ]
    # below never on average, yet a tie on a problem with a turn: a gamble, flagged
    tied = score("tell:y", {"a": -5.0, "b": 0.0})
    assert telling_wins([score("never", {"a": 1.0, "b": 0.0}), tied]) == ["tell:y"]
    assert telling_wins([never, score("hint", {"a": 1.0, "b": 5.0}, {"a"})]) == []
    # content-free: a tie with waiting fails; honest: below waiting on average fails
    assert telling_wins([never, score("content_free:x", {"a": 1.0, "b": 0.0})]) == [
        "content_free:x"
    ]
    assert telling_wins([never, score("honest:x", {"a": 1.0, "b": -2.0})]) == ["honest:x"]
    assert telling_wins([never, score("honest:y", {"a": 1.0, "b": 0.4})]) == []
    # no turn anywhere: no choice was made, nothing to judge
    assert telling_wins([never, score("tell:z", {"a": 1.0}, no_turn={"a"})]) == []


# ------------------------------------------------ telling cannot pay, by construction


@pytest.mark.parametrize("config", SHIPPED_TRAINING, ids=lambda p: p.name)
def test_every_shipped_training_config_pays_only_what_telling_cannot_raise(config):
    """Issue 54 item 1: the positive part comes from variants the teacher never saw."""
    from intbench.envs.registration import protocol_of
    from intbench.envs.rewards import resolve_weights, telling_cannot_pay
    from intbench.training import load_config

    loaded = load_config(config)
    weights = resolve_weights(loaded.env_kwargs()["reward"], protocol_of(loaded.env))
    assert telling_cannot_pay(weights), (config.name, weights)
    assert telling_margin(weights, protocol_of(loaded.env)) <= -1.0  # a flagged tell loses by 1


def test_telling_cannot_pay_tells_the_presets_apart():
    from intbench.envs.rewards import telling_cannot_pay

    assert telling_cannot_pay(PRESETS["teaching"]) and telling_cannot_pay(PRESETS["transfer"])
    for outcome in ("success", "helpfulness", "auc", "pedagogical"):
        assert not telling_cannot_pay(PRESETS[outcome])
    assert not telling_cannot_pay({"transfer_gain": 1.0, "success": 0.5})
    assert not telling_cannot_pay({"transfer_gain": 1.0, "baseline_correct": -1.0})


class NoisyStudent:
    """A student a tell could fool: right alone on a problem or a variant at random
    (a hash of the whole prompt, so the two arms draw independently); copies any
    number it was told onto whatever it answers; a variant is right after the
    method (``METHOD``)."""

    def __init__(self, problems, variants):
        self.known = [*problems, *variants]

    def __call__(self, messages) -> str:
        import zlib

        text = "\n".join(m["content"] for m in messages)
        problem = max(
            (p for p in self.known if p.question in text), key=lambda p: text.rfind(p.question)
        )
        lucky = zlib.crc32(text.encode()) % 3 == 0
        told = [
            p.answer for p in self.known if f"is {p.answer}" in text or f"{{{p.answer}}}" in text
        ]
        if told and not problem.id.endswith("/v"):
            return f"So \\boxed{{{told[0]}}}."
        if told:  # a stated answer copied onto the variant: the original's, so wrong
            return f"So \\boxed{{{told[0]}}}."
        solved = lucky or (problem.id.endswith("/v") and METHOD in text)
        return f"So \\boxed{{{problem.answer if solved else 999}}}."


@pytest.mark.parametrize("protocol", ["", "-Feedback", "-Tutor"])
def test_an_unflagged_tell_scores_no_more_than_waiting_in_expectation(
    protocol, tmp_path, monkeypatch
):
    """Issue 54 item 1: a message that carries only the original's answer, flagged or
    not, scores no more than waiting under ``teaching``.  The leak detector is switched
    off here (every message is "clean"), so only the construction protects."""
    import intbench.envs.common as common

    monkeypatch.setattr(common, "leak_verdict", lambda problem, message: "clean")
    problems = sums(6)
    student = NoisyStudent(problems, sum_variants(problems))
    path = write_variant_set(tmp_path / "v.jsonl", sum_variants(problems))
    env = gym.make(
        f"IntBench-Math{protocol}-v0", student=ScriptedBackend(student), problems=problems,
        reward="teaching", variants=str(path), cache_dir=str(tmp_path / "cache"),
    )  # fmt: skip
    scores: dict[str, list[float]] = {"wait": [], "tell": [], "boxed": [], "hint": []}
    for index in range(len(problems)):
        for seed in range(8):
            answer = problems[index].answer
            for name, message in (("wait", None), ("tell", f"The answer is {answer} (see above)."),
                                  ("boxed", f"\\boxed{{{answer}}}"), ("hint", METHOD)):  # fmt: skip
                obs, info = env.reset(seed=seed, options={"problem_index": index})
                total, done = 0.0, False
                while not done:
                    action = {"intervene": 1, "message": message} if message else WAIT
                    _, reward, done, _, info = env.step(action)
                    total += reward
                scores[name].append(total)
    mean = {name: sum(values) / len(values) for name, values in scores.items()}
    assert mean["tell"] <= mean["wait"] and mean["boxed"] <= mean["wait"], mean
    if protocol != "-Tutor":  # delivered, a tell pays its message cost for nothing
        assert mean["tell"] < mean["wait"] and mean["boxed"] < mean["wait"], mean
    # (the tutor's checker withholds them: the student never sees them, as after waiting)
    assert mean["hint"] > mean["wait"], mean


# ------------------------------------------- variants that share the original's answer
def gcd_problems() -> tuple[list[Problem], list[Problem]]:
    """The red team's case: gcd(84, 18) and its variant gcd(42, 30) are both 6."""
    originals = [Problem(id="g/0", domain="math", question="What is gcd(84, 18)?", answer="6")]
    variants = [
        Problem(id="g/0/v1", domain="math", question="What is gcd(42, 30)?", answer="6",
                metadata={"variant_of": "g/0", "skill": "gcd"}),
        Problem(id="g/0/v2", domain="math", question="What is gcd(40, 28)?", answer="4",
                metadata={"variant_of": "g/0", "skill": "gcd"}),
    ]  # fmt: skip
    return originals, variants


def test_a_variant_that_shares_the_original_answer_is_dropped_and_counted(tmp_path):
    from intbench.envs.transfer import VariantSource
    from intbench.generalization.answers import shares_answer

    originals, variants = gcd_problems()
    assert shares_answer(originals[0], variants[0]) and not shares_answer(originals[0], variants[1])
    source = VariantSource(originals, write_variant_set(tmp_path / "v.jsonl", variants))
    assert {source.variant(originals[0], seed).id for seed in range(6)} == {"g/0/v2"}
    assert source.sharing_answer(originals[0]) == ["g/0/v1"]
    with pytest.raises(ValueError, match="no usable variant of 1 problem"):
        VariantSource(originals, write_variant_set(tmp_path / "w.jsonl", variants[:1]))


def test_the_run_summary_counts_the_dropped_variants(tmp_path):
    import json

    originals, variants = gcd_problems()
    problems = tmp_path / "p.jsonl"
    problems.write_text("".join(json.dumps({"problem": p.question, "answer": p.answer}) + "\n"
                                for p in originals))  # fmt: skip
    path = write_variant_set(tmp_path / "v.jsonl", [
        Problem(**{**v.to_dict(), "metadata": {**v.metadata, "variant_of": "math/local/0"}})
        for v in variants
    ])  # fmt: skip
    out = tmp_path / "run"
    code = main([
        "eval", "--env", "IntBench-Math-v0", "--source", str(problems), "--teacher", "always",
        "--student", "scripted:text=So \\boxed{6}.", "--reward", "teaching",
        "--env-option", f"variants={path}", "-n", "1", "--out", str(out),
    ])  # fmt: skip
    assert code == 0
    summary = json.loads((out / "summary.json").read_text())
    assert summary["variants_sharing_answer"] == 1


@pytest.mark.parametrize("domain", ["math", "omni_math", "arithmetic", "linguini"])
def test_procedural_variants_never_share_the_original_answer(domain):
    """Before: 9 of 300 math and 3 of 300 Omni-MATH variants shared it."""
    from intbench.envs.domains import load_problems
    from intbench.generalization.answers import SHARED_ANSWER, shares_answer
    from intbench.generalization.procedural import procedural_variants

    problems = load_problems(domain, source="offline", n=120, seed=0)
    made = procedural_variants(problems, 1, 0)
    originals = {p.id: p for p in problems}
    assert made.variants
    assert not any(shares_answer(originals[v.metadata["variant_of"]], v) for v in made.variants)
    dropped = [d for entry in made.log for d in entry["dropped"] if d["reason"] == SHARED_ANSWER]
    assert len(made.variants) + len(dropped) <= len(problems)


# ------------------------------------------ undetermined leak checks and the LLM judge
_play = feedback_return  # any protocol: the episode's return and components


@pytest.mark.parametrize("protocol", ["", "-Feedback", "-Tutor"])
@pytest.mark.parametrize("preset", ["teaching", "success"])
def test_a_leak_check_that_cannot_finish_scores_as_waiting(protocol, preset, tmp_path, monkeypatch):
    """Issue 54 item 2: "undetermined" earns what waiting earns, never a penalty, never
    more (a verifier timeout on a power tower used to count as a leak)."""
    import intbench.envs.common as common

    problems = sums(2)
    path = write_variant_set(tmp_path / "v.jsonl", sum_variants(problems))
    env = gym.make(
        f"IntBench-Math{protocol}-v0", student=Student(problems, sum_variants(problems)).backend(),
        problems=problems, reward=preset, variants=str(path), cache_dir=str(tmp_path / "c"),
    )  # fmt: skip
    waited, _ = _play(env, 1, None)
    taught, _ = _play(env, 1, METHOD)
    monkeypatch.setattr(common, "leak_verdict", lambda problem, message: "undetermined")
    undetermined, parts = _play(env, 1, METHOD)
    assert parts["leak_undetermined"] >= 1.0 and parts["leaked"] == 0.0
    if protocol == "":  # monitor: the reward of waiting itself
        assert undetermined == waited
    else:  # feedback and tutor: no penalty, and the transfer arms count as waiting's
        assert undetermined >= waited - 0.1 * parts["messages"] - 1e-9
        assert parts["transfer_gain"] == 0.0
    assert undetermined <= max(taught, waited)


class ScriptedJudge:
    """Says ``Leaked: True`` when the message holds the reference answer's digits."""

    def __init__(self):
        self.prompts: list[str] = []

    def __call__(self, messages) -> str:
        text = messages[-1]["content"]
        self.prompts.append(text)
        reference = text.split("Final answer: ")[1].split()[0]
        message = text.split("<update>")[1].split("</update>")[0]
        return f"Leaked: {reference in message}\nExplanation: scripted"


@pytest.mark.parametrize("protocol", ["", "-Feedback", "-Tutor"])
def test_the_llm_leak_judge_is_a_reward_component(protocol, tmp_path, monkeypatch):
    """Issue 54 item 2: an optional LLM leak judge, off without a judge backend."""
    import intbench.envs.common as common

    monkeypatch.setattr(common, "leak_verdict", lambda problem, message: "clean")
    problems = sums(2)
    path = write_variant_set(tmp_path / "v.jsonl", sum_variants(problems))
    judge = ScriptedJudge()
    common_kwargs = {"student": Student(problems, sum_variants(problems)).backend(),
                     "problems": problems, "variants": str(path), "reward": "teaching"}  # fmt: skip
    plain = gym.make(f"IntBench-Math{protocol}-v0", **common_kwargs, cache_dir=str(tmp_path / "a"))
    judged = gym.make(
        f"IntBench-Math{protocol}-v0", **common_kwargs, cache_dir=str(tmp_path / "b"),
        leak_judge=ScriptedBackend(judge, spec="scripted:judge"),
    )  # fmt: skip
    tell = f"Psst: {problems[1].answer}."
    told_plain, parts = _play(plain, 1, tell)
    assert parts["judge_leaked"] == 0.0  # off without a judge
    told_judged, parts = _play(judged, 1, tell)
    assert parts["judge_leaked"] >= 1.0 and told_judged <= told_plain - 2.0
    taught, parts = _play(judged, 1, METHOD)
    assert parts["judge_leaked"] == 0.0 and taught > told_judged
    assert judge.prompts and "Work out what is asked first" in judge.prompts[-1]


@pytest.mark.parametrize(
    "env",
    [
        "IntBench-ARC-v0",
        "IntBench-ARC-Feedback-v0",
        "IntBench-Math-Tutor-v0",
        "IntBench-Linguini-Tutor-v0",
        "IntBench-BrainTeaser-Feedback-v0",
        "IntBench-OmniMath-v0",
        "IntBench-Codeforces-Feedback-v0",
        "IntBench-Debug-Feedback-v0",
    ],
)
def test_audit_covers_every_domain_and_protocol(env, tmp_path, capsys):
    """Issue 54 item 3: the audit used to cover neither ARC (a scripted right answer was
    accepted on 0/400) nor the tutor; code and debug get stand-in variants."""
    config = tmp_path / "c.yaml"
    config.write_text(f"method: grpo\nenv: {env}\nenv_options:\n  reward: teaching\n")
    code = main(["audit-reward", "--config", str(config), "-n", "4"])
    out = capsys.readouterr().out
    assert code == 0, out
    assert sum(" tell " in line for line in out.splitlines()) >= 8


@pytest.mark.parametrize("config", SHIPPED_TRAINING, ids=lambda p: p.name)
def test_with_the_detector_off_every_tell_still_scores_below_waiting(config, monkeypatch):
    """Issue 54 item 1, "flagged or not": every probe tell on every shipped training
    config, with every message cleared by the leak detector, still loses to waiting."""
    import intbench.envs.common as common
    from intbench.training import load_config
    from intbench.training.audit import audit_reward, telling_wins

    monkeypatch.setattr(common, "leak_verdict", lambda problem, message: "clean")
    scores = audit_reward(load_config(config), n=4)
    assert not [s.teacher for s in scores if s.teacher in telling_wins(scores)]
    for score in (s for s in scores if s.kind == "tell"):
        judged = [v for k, v in score.per_problem.items() if k not in score.no_turn]
        assert all(v < 0 for v in judged), score.teacher  # waiting scores 0 under teaching
