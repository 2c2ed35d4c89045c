"""What every protocol env shares: options, problems, models, cached student calls
and the episode skeleton."""

from __future__ import annotations

import copy
import hashlib
import logging
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from intbench.agents.backends.loading import backend_name, shared_backend
from intbench.agents.base import ChatBackend, Completion, SamplingParams
from intbench.cache import JsonCache
from intbench.envs import flows
from intbench.envs.engine import run_flow
from intbench.envs.env_options import EnvOptions
from intbench.envs.flows import Generate, RequestExecutor, Verify
from intbench.envs.spaces import UnicodeText
from intbench.envs.student_calls import cached_student_call
from intbench.options import check_keys, field_names
from intbench.records import Attempt, Episode, Problem, Verdict
from intbench.verifiers import verify
from intbench.verifiers.leakage import leak_verdict

if TYPE_CHECKING:
    from intbench.envs.transfer import VariantSource

logger = logging.getLogger(__name__)

# The student's sampling in every protocol: the feedback paper's (App. A.2: T=0.7,
# top-p 0.95, the domain's output limit, 8,192 tokens or ARC's 16,000); Int-Bench
# states T=0.7 for students and teachers.  On a CPU, `intbench eval --max-tokens` caps it.
STUDENT_DEFAULTS = {"temperature": 0.7, "top_p": 0.95}
MAX_MESSAGE = 8_000
"""Teacher messages are cut to this many characters."""


def resolve_problems(
    domain: str,
    problems: Sequence[Problem | dict] | None,
    source: str,
    split: str | None,
    n: int | None,
    data_seed: int,
) -> list[Problem]:
    """The env's problem list: given explicitly, or loaded from a source."""
    if problems is not None:
        resolved = [p if isinstance(p, Problem) else Problem.from_dict(p) for p in problems]
    else:
        from intbench.envs.domains import load_problems

        resolved = load_problems(domain, source=source, split=split, n=n, seed=data_seed)
    if not resolved:
        raise ValueError(f"no problems for domain {domain!r} (source={source!r}, split={split!r})")
    wrong = [p.id for p in resolved if p.domain != domain]
    if wrong:
        raise ValueError(f"problems {wrong[:3]} are not of domain {domain!r}")
    return resolved


class ProblemPool:
    """Draws problems in a seeded random order, each once per pass.

    ``reset(seed=s)`` restarts the order for seed ``s``; ``reset()`` moves on.
    ``options={"problem_index": i}`` or ``{"problem_id": "..."}`` picks one
    (the envs also accept ``{"student_seed": s}`` to pick the baseline sample).
    """

    def __init__(self, problems: list[Problem]):
        self.problems = problems
        self._index = {p.id: i for i, p in enumerate(problems)}
        self._order: np.ndarray | None = None
        self._cursor = 0

    def draw(self, np_random: np.random.Generator, reseeded: bool, options: dict | None) -> Problem:
        options = options or {}
        if "problem_id" in options:
            try:
                return self.problems[self._index[options["problem_id"]]]
            except KeyError:
                raise ValueError(f"unknown problem_id {options['problem_id']!r}") from None
        if "problem_index" in options:
            index = int(options["problem_index"])
            if not 0 <= index < len(self.problems):
                raise ValueError(f"problem_index {index} out of range 0..{len(self.problems) - 1}")
            return self.problems[index]
        if reseeded or self._order is None or self._cursor >= len(self._order):
            self._order = np_random.permutation(len(self.problems))
            self._cursor = 0
        problem = self.problems[int(self._order[self._cursor])]
        self._cursor += 1
        return problem


def output_tokens(domain: str) -> int:
    """The domain's default token limit of a student or feedback-teacher call."""
    from intbench.envs.domains import registry

    return registry.get_domain(domain).max_output_tokens


EMBEDDED_STUDENT_TOKENS = 256
"""Default token limit of a student call when the student is the embedded SmolLM2-135M.

The papers' limits (8,192 tokens, ARC 16,000) are sized for models that
reason at length; the embedded model on a CPU writes a few dozen tokens a
second, so that limit let one ``reset`` run for minutes, while 256 tokens
bounds it to seconds (``benchmarks/results/first_block.md``).  Any other
student keeps the papers' limits; ``student_sampling={"max_tokens": N}``
(``--max-tokens N``) overrides both."""


def student_tokens(student: str | ChatBackend, domain: str) -> int:
    """The default token limit of a student call: the papers' for the domain, or
    :data:`EMBEDDED_STUDENT_TOKENS` for the embedded model."""
    if backend_name(student).partition("?")[0] == "smollm2":
        return EMBEDDED_STUDENT_TOKENS
    return output_tokens(domain)


def sampling_from(
    options: Mapping[str, Any] | SamplingParams | None, **defaults: Any
) -> SamplingParams:
    """Build sampling parameters from an options dict over per-role defaults."""
    if isinstance(options, SamplingParams):
        return options
    merged = {**defaults, **(options or {})}
    try:
        return SamplingParams(**merged)
    except TypeError as exc:
        raise ValueError(f"bad sampling options {options!r}: {exc}") from None


def attempt_from(completion: Completion, verdict: Verdict | None, seconds: float = 0.0) -> Attempt:
    return Attempt(
        text=completion.text,
        answer=verdict.answer if verdict else None,
        verdict=verdict,
        prompt_tokens=completion.prompt_tokens,
        completion_tokens=completion.completion_tokens,
        seconds=seconds,
        finish_reason=completion.finish_reason,
        error=completion.error,
    )


class ActionError(ValueError):
    """A malformed action: the step counts it as a wait and reports it in ``info["action_error"]``."""


_ACTION_KEYS = ("intervene", "message", "error")


def parse_action(
    action: Any,
    optional: Mapping[str, tuple[Any, Callable[[str, Any], Any]]] | None = None,
    accepted: str = "a dict or 0/1",
) -> dict[str, Any]:
    """Check a dict (or bare 0/1) action -> its fields, defaults filled in.

    ``intervene`` is required and ``message`` optional (a string, non-empty to
    intervene); ``optional`` maps further allowed keys to ``(default, check)``.
    An ``error`` string is what a wrapper sends for a reply it could not
    parse.  Anything else raises :class:`ActionError` with a short reason.
    """
    optional = optional or {}
    if _is_number(action):
        action = {"intervene": action}
    if not isinstance(action, Mapping):
        raise ActionError(f"action must be {accepted}, got {type(action).__name__}")
    _raise_reported_error(action)
    unknown = [repr(key)[:40] for key in action if key not in (*_ACTION_KEYS, *optional)]
    if unknown:
        raise ActionError(f"unknown action key(s): {', '.join(unknown[:3])}")
    if "intervene" not in action:
        raise ActionError("action lacks 'intervene'")
    fields: dict[str, Any] = {
        "intervene": intervene_flag(action["intervene"]),
        "message": text_field("message", action.get("message", "")),
    }
    for name, (default, check) in optional.items():
        fields[name] = check(name, action.get(name, default))
    if fields["intervene"] and not fields["message"].strip():
        raise ActionError("intervene=1 with an empty message")
    return fields


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float, np.number, np.bool_)) or (
        isinstance(value, np.ndarray) and value.shape == ()
    )


def _raise_reported_error(action: Mapping) -> None:
    error = action.get("error", "")
    if not isinstance(error, str):
        raise ActionError(f"'error' must be a string, got {type(error).__name__}")
    if error:
        raise ActionError(error[:500])


def intervene_flag(value: Any) -> bool:
    """``intervene`` as a bool: 0/1 as an int, a bool or an integral float."""
    if isinstance(value, np.ndarray) and value.shape == ():
        value = value.item()
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    if isinstance(value, (int, float, np.integer, np.floating)) and value in (0, 1):
        return bool(value)
    raise ActionError(f"intervene must be 0 or 1, got {value!r:.60}")


def integer_field(name: str, value: Any, low: int, high: int) -> int:
    """An integer action field in ``[low, high]``; integral floats count, bools do not."""
    if isinstance(value, np.ndarray) and value.shape == ():
        value = value.item()
    if isinstance(value, (float, np.floating)) and np.isfinite(value) and float(value).is_integer():
        value = int(value)
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
        raise ActionError(f"{name} must be an integer, got {value!r:.60}")
    if not low <= value <= high:
        raise ActionError(f"{name} must be in [{low}, {high}], got {value!r:.60}")
    return int(value)


def text_field(name: str, value: Any) -> str:
    if not isinstance(value, str):
        raise ActionError(f"{name} must be a string, got {type(value).__name__}")
    return value


def parse_message_action(
    action: Any, parse_text: Callable[[str], str], max_chars: int
) -> tuple[str | None, str | None]:
    """Read a message-only action (feedback, tutor) -> (message or None, error).

    Accepted: ``{"intervene": 0|1, "message": str}``, a bare 0/1, or a raw
    string (the teacher's reply, cleaned by ``parse_text``).  A malformed
    action says nothing and comes back with an error for ``info["action_error"]``.
    """
    if isinstance(action, str):
        return (parse_text(action).strip()[:max_chars] or None), None
    try:
        fields = parse_action(action, accepted="a dict, a string or 0/1")
    except ActionError as exc:
        return None, str(exc)
    if not fields["intervene"]:
        return None, None
    return fields["message"].strip()[:max_chars], None


RESET_OPTIONS = ("problem_id", "problem_index", "student_seed")


def reset_options(options: Any) -> dict[str, Any]:
    """``reset``'s ``options``, checked: a TypeError if not a mapping (or None), a
    ValueError for an unknown key or a value of the wrong type (ranges and
    unknown ids are checked when the problem is drawn)."""
    if options is None:
        return {}
    if not isinstance(options, Mapping):
        raise TypeError(f"reset options must be a dict or None, got {type(options).__name__}")
    unknown = sorted(repr(key) for key in options if key not in RESET_OPTIONS)
    if unknown:
        raise ValueError(
            f"unknown reset option(s) {', '.join(unknown)}; known: {', '.join(RESET_OPTIONS)}"
        )
    if "problem_id" in options and not isinstance(options["problem_id"], str):
        raise ValueError(f"problem_id must be a string, got {options['problem_id']!r:.60}")
    for name in ("problem_index", "student_seed"):
        value = options.get(name, 0)
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
            raise ValueError(f"{name} must be an int, got {value!r:.60}")
    if options.get("student_seed", 0) < 0:
        raise ValueError(f"student_seed must be >= 0, got {options['student_seed']}")
    return dict(options)


WALL_CLOCK_KEYS = frozenset({"timings", "seconds", "time_s"})
"""Fields that measure wall-clock time: the record's ``timings``, an attempt's or a
test run's ``seconds``, a failing test's ``time_s``."""


def without_wall_clock(value: Any) -> Any:
    """A copy of a record dict without its wall-clock fields, at any depth, so that
    seeded runs give equal step infos."""
    if isinstance(value, dict):
        return {
            key: without_wall_clock(item)
            for key, item in value.items()
            if key not in WALL_CLOCK_KEYS
        }
    if isinstance(value, list):
        return [without_wall_clock(item) for item in value]
    return value


class EpisodeRecord(Mapping):
    """``info["record"]``: the episode record, read-only, without wall-clock times.

    A mapping but not a ``dict``, so that vector envs keep each sub-env's
    record whole (``infos["record"][i]``) instead of merging its fields, whose
    types differ between episodes (an intervention or None, a step or None).
    Its fields are made from the episode on first read (a runner that keeps
    ``last_episode`` never reads them), so read them before changing that episode.
    """

    def __init__(self, episode: Episode) -> None:
        self._episode = episode
        self._fields: dict[str, Any] | None = None

    @property
    def _data(self) -> dict[str, Any]:
        if self._fields is None:
            self._fields = without_wall_clock(self._episode.to_dict())
        return self._fields

    def __getitem__(self, key: str) -> Any:
        return self._data[key]

    def __iter__(self):
        return iter(self._data)

    def __len__(self) -> int:
        return len(self._data)

    def to_dict(self) -> dict[str, Any]:
        """A plain, JSON-ready copy."""
        return copy.deepcopy(self._data)

    def __repr__(self) -> str:
        return f"EpisodeRecord({self._data!r})"


def message_action_space() -> spaces.Dict:
    """``{"intervene": 0|1, "message": str}``, the action of every protocol."""
    return spaces.Dict({"intervene": spaces.Discrete(2), "message": UnicodeText(MAX_MESSAGE)})


def registered_id(env_class: type, domain: str | None) -> str:
    """The gym id that builds ``env_class`` for ``domain`` (else the class's name), for messages."""
    entry_point = f"{env_class.__module__}:{env_class.__name__}"
    for spec in gym.registry.values():
        if spec.entry_point == entry_point and spec.kwargs.get("domain") == domain:
            return spec.id
    return env_class.__name__


def flow_env(env: gym.Env) -> FlowEnv:
    """The IntBench env under ``env``'s wrappers."""
    inner = env.unwrapped
    if not isinstance(inner, FlowEnv):
        raise TypeError(f"{type(inner).__name__} is not an IntBench env; make one with gym.make")
    return inner


class FlowEnv(gym.Env):
    """Base of the protocol envs: shared options and models; episodes written as flows.

    A subclass names its options dataclass in ``options_class`` and implements
    ``reset_flow`` and ``step_flow`` (generators that yield model and verifier
    requests); ``reset``/``step`` run them directly, and batched drivers (the
    vector env, the runner) run many at once on the env's public ``executor``.
    """

    metadata = {"render_modes": ["ansi"]}
    options_class: type[EnvOptions] = EnvOptions

    def __init__(self, **kwargs: Any) -> None:
        if not kwargs.keys() <= set(field_names(self.options_class)):
            name = registered_id(type(self), kwargs.get("domain"))
            check_keys(kwargs, field_names(self.options_class), f"env option ... for {name}")
        options = self.options_class(**kwargs)
        self.options = options
        # EnvOptions.__post_init__ fills the domain in from the problems when not given.
        assert options.domain is not None
        self.domain: str = options.domain
        self.render_mode = options.render_mode
        self.student_sampling = sampling_from(
            options.student_sampling,
            **STUDENT_DEFAULTS,
            max_tokens=student_tokens(options.student, self.domain),
        )
        self.student_seed = int(options.student_seed)
        self.student_spec = backend_name(options.student)
        self.judge_spec = None if options.judge is None else backend_name(options.judge)
        self._pool = ProblemPool(
            resolve_problems(
                self.domain,
                options.problems,
                options.source,
                options.split,
                options.n,
                options.data_seed,
            )
        )
        self._cache = JsonCache("student", options.cache_dir)
        self._verifier = verify
        if options.judge is not None:
            from intbench.verifiers.judge import JudgeVerifier

            self._verifier = JudgeVerifier(shared_backend(options.judge))
        backends = {"student": shared_backend(options.student), **self._role_backends()}
        if options.leak_judge is not None:
            from intbench.envs.leak_judge import ROLE

            backends[ROLE] = shared_backend(options.leak_judge)
        # Public: batched drivers serve many envs' flows with one env's executor,
        # since envs built from the same specs share their backends.
        self.executor = RequestExecutor(backends)
        self.last_episode: Episode | None = None
        self._episode: Episode | None = None
        self._problem: Problem | None = None
        self._terminated = False
        # Set by _init_transfer when the reward reads transfer.
        self._variants: VariantSource | None = None

    def _role_backends(self) -> dict[str, ChatBackend]:
        """Models for roles other than the student, by role name (the tutor's checker)."""
        return {}

    def summary_settings(self) -> dict:
        """Settings the env resolved itself that summary.json should name (none here)."""
        return {}

    @property
    def problems(self) -> list[Problem]:
        """The env's problems, in their source order."""
        return self._pool.problems

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        return run_flow(self.reset_flow(seed=seed, options=options), self.executor)

    def step(self, action):
        return run_flow(self.step_flow(action), self.executor)

    def reset_flow(self, *, seed: int | None = None, options: dict | None = None):
        raise NotImplementedError

    def step_flow(self, action):
        raise NotImplementedError

    def _observation(self) -> dict:
        raise NotImplementedError

    def _info(self) -> dict:
        raise NotImplementedError

    # --------------------------------------------------- the episode skeleton
    def _draw_problem(self, seed: int | None, options: dict | None) -> Problem:
        """Seed the env, draw the episode's problem and its first student seed."""
        options = reset_options(options)
        gym.Env.reset(self, seed=seed)
        problem = self._pool.draw(self.np_random, seed is not None, options)
        self._student_seed = int(options.get("student_seed", self.student_seed))
        # Drawn only when the reward reads transfer, so other runs keep their seeds.
        self._transfer_seed = self._draw_seed() if self._variants else None
        self._terminated = False
        return problem

    def _new_episode(
        self, protocol: str, problem: Problem, condition: str, **fields: Any
    ) -> Episode:
        """The episode record of a fresh draw; its id is seeded and unique per draw."""
        draw = int(self.np_random.integers(2**63 - 1))
        episode_id = hashlib.sha1(f"{problem.id}|{condition}|{draw}".encode()).hexdigest()[:16]
        return Episode(
            protocol=protocol,
            problem_id=problem.id,
            domain=problem.domain,
            student=self.student_spec,
            judge=self.judge_spec,
            condition=condition,
            seed=self._student_seed,
            episode_id=episode_id,
            **fields,
        )

    @property
    def _current_episode(self) -> Episode:
        """The episode in progress (reset() has run)."""
        if self._episode is None:
            raise RuntimeError("call reset() before step()")
        return self._episode

    @property
    def _current_problem(self) -> Problem:
        """The problem of the episode in progress (reset() has run)."""
        if self._problem is None:
            raise RuntimeError("call reset() before step()")
        return self._problem

    def _check_steppable(self) -> None:
        if self._episode is None:
            raise RuntimeError("call reset() before step()")
        if self._terminated:
            raise RuntimeError("episode is over; call reset()")

    def _draw_seed(self) -> int:
        """A sampling seed for a model call after the first, from the env's generator."""
        return int(self.np_random.integers(2**31 - 1))

    def _cached_student_call(self, messages: list[dict], sampling: SamplingParams, problem):
        """Flow: the student's first, cached answer -> ``(attempt, from_cache)``."""
        return (
            yield from cached_student_call(
                self._cache, self.student_spec, messages, sampling, problem, self._verifier
            )
        )

    def _student_attempt(self, messages: list[dict], sampling: SamplingParams, problem):
        """Flow: a fresh student answer to ``messages``, verified unless generation failed."""
        completion = yield Generate("student", messages, sampling)
        verdict = None
        if not completion.error:
            verdict = yield Verify(problem, completion.text, self._verifier)
        return attempt_from(completion, verdict)

    def _init_transfer(self, weights: Mapping[str, float]) -> None:
        """Variants for the ``transfer`` component, only when ``weights`` read it
        (a problem without a variant fails here, when the env is built)."""
        from intbench.envs.rewards import needs_transfer
        from intbench.envs.transfer import VariantSource

        self._variants = (
            VariantSource(self.problems, self.options.variants) if needs_transfer(weights) else None
        )

    def _transfer(self, message: str | None, attempt: Attempt | None):
        """Flow: both arms of the transfer comparison for ``message`` about the student's
        ``attempt`` (:mod:`intbench.envs.transfer`) -> ``{"transfer", "transfer_alone",
        "transfer_gain"}``.  Without a message only the alone arm runs and the gain is 0.
        Without variants, or when either arm fails (student or grader error), every
        value is 0: an arm that was not measured can neither pay nor cost."""
        zero = {"transfer": 0.0, "transfer_alone": 0.0, "transfer_gain": 0.0}
        # The transfer seed is drawn whenever there are variants.
        if self._variants is None or self._transfer_seed is None:
            return zero
        from intbench.envs.transfer import TransferContext, transfer_attempt

        problem, seed = self._current_problem, self._transfer_seed
        variant = self._variants.variant(problem, seed)
        context = TransferContext(problem, attempt)

        def arm(text: str | None):
            return transfer_attempt(
                self._cache, self.student_spec, variant, context, text,
                self.student_sampling, seed, self._verifier,
            )  # fmt: skip

        if message:
            alone, helped = yield from flows.gather(arm(None), arm(message))
        else:
            alone = helped = yield from arm(None)
        measured = not any(a.error or a.status == "error" for a in (alone, helped))
        entry = {"variant_id": variant.id, "with_message": bool(message), "solved": helped.correct,
                 "solved_alone": alone.correct, "error": None if measured else (
                     helped.error or alone.error or "grader error on the variant")}  # fmt: skip
        dropped = self._variants.sharing_answer(problem)
        if dropped:  # counted in the run summary
            entry["dropped_sharing_answer"] = dropped
        self._current_episode.metadata.setdefault("transfer", []).append(entry)
        if not measured:
            return zero
        return {
            "transfer": float(helped.correct),
            "transfer_alone": float(alone.correct),
            "transfer_gain": float(helped.correct) - float(alone.correct),
        }

    def _check_leak(self, message: str | None, student_answer: object = None):
        """Flow: the leak detector's and (with a ``leak_judge``) the LLM judge's verdicts
        on ``message`` -> ``(detector, judge)``, each "leaked", "clean" or "undetermined"."""
        if not message:
            return "clean", "clean"
        detector = leak_verdict(self._current_problem, message)
        judge = "clean"
        if self.options.leak_judge is not None:
            from intbench.envs.leak_judge import judge_leak

            judge = yield from judge_leak(self._current_problem, message, student_answer)
        return detector, judge

    @property
    def variants(self) -> VariantSource | None:
        """The variants of the transfer arms (``None`` when the reward reads no transfer)."""
        return self._variants

    def _step_result(
        self, reward: float, action_error: str | None, episode: Episode, protocol_label: str
    ):
        """The step's ``(observation, reward, terminated, truncated, info)``: ``info``
        names a malformed action's error (logged on the env's own module logger) and,
        at the last step, carries the episode record."""
        info = self._info()
        if action_error:
            info["action_error"] = action_error
            logging.getLogger(type(self).__module__).info(
                "malformed %s action on %s: %s",
                protocol_label,
                self._current_problem.id,
                action_error,
            )
        if self._terminated:
            self._end_info(info, episode)
        return self._observation(), reward, self._terminated, False, info

    def _end_info(self, info: dict, episode: Episode) -> dict:
        """``info`` at the last step: ``info["record"]``, the episode record without
        wall-clock times (the full record is ``last_episode``)."""
        self.last_episode = episode
        info["record"] = EpisodeRecord(episode)
        return info

    def close(self):
        self.executor.close()
        super().close()
