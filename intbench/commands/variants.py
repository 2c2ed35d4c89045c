"""``intbench variants`` (write a variant set) and ``intbench generalize`` (score it).

intbench variants math -n 20 --per-problem 3 --out variants.jsonl
intbench variants brainteaser --model smollm2 --out teasers.jsonl
intbench variants brainteaser --model smollm2 --keep all --out all-valid.jsonl
intbench variants math --run runs/math --out variants.jsonl
intbench generalize --run runs/math --variants variants.jsonl --out runs/math-gen
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from intbench.cache import atomic_write_json
from intbench.rundir import RunDir


def add_parser(subparsers: Any) -> None:
    """Register ``variants`` and ``generalize``."""
    make = subparsers.add_parser(
        "variants",
        help="write a variant set (procedural, or with the four-step LLM pipeline)",
        description="Write variants of a domain's problems to a JSONL variant set. Generated "
        "offline problems get exact procedural variants; with --model (or for other "
        "problems) the LLM pipeline extracts skills, clusters them, generates and validates. "
        "A log of every decision goes to OUT with the suffix .log.json.",
    )
    make.add_argument("domain", help="domain of the problems, e.g. math")
    make.add_argument("--out", required=True, type=Path, help="variant-set file (.jsonl)")
    make.add_argument(
        "--run", type=Path, default=None, help="use the problems of this eval run directory"
    )
    make.add_argument("--source", default="offline", help="offline (default), hub, or a local file")
    make.add_argument("--split", default=None)
    make.add_argument("-n", type=int, default=10, help="number of original problems (default 10)")
    make.add_argument("--seed", type=int, default=0, help="problem and variant seed (default 0)")
    make.add_argument(
        "--per-problem",
        type=int,
        default=None,
        help="procedural: variants per problem (default 3); LLM pipeline: candidates generated "
        "per problem before validation (default 5, as in Int-Bench App. C.2)",
    )
    make.add_argument(
        "--keep",
        choices=("one", "all"),
        default="one",
        help="LLM pipeline: one validated variant per problem, sampled with --seed (default, "
        "as in Int-Bench §3.4), or all validated variants",
    )
    make.add_argument(
        "--model", default=None, help="model spec for the LLM pipeline (e.g. smollm2)"
    )
    make.add_argument(
        "--cache-dir", default=None, help="reply cache root (default $INTBENCH_CACHE)"
    )
    make.set_defaults(func=run_variants)

    score = subparsers.add_parser(
        "generalize",
        help="run the student on a variant set under the three context conditions",
        description="For each monitor episode of --run (with an applied intervention unless "
        "--all-episodes) and each of its problem's variants, ask the student under "
        "No-Context, Problem-Context and Intervention-Context; records go to the "
        "run directory OUT (resumable) and G is printed.",
    )
    score.add_argument("--run", required=True, type=Path, help="monitor eval run directory")
    score.add_argument("--variants", required=True, type=Path, help="variant-set file")
    score.add_argument("--out", required=True, type=Path, help="output directory")
    score.add_argument("--student", default=None, help="student model spec (default: the run's)")
    score.add_argument(
        "--contexts",
        default="no_context,problem_context,intervention_context",
        help="comma-separated subset of the contexts",
    )
    score.add_argument("--seed", type=int, default=0)
    score.add_argument("--max-tokens", type=int, default=None, help="student generation budget")
    score.add_argument(
        "--all-episodes", action="store_true", help="also use episodes without an intervention"
    )
    score.add_argument(
        "--cache-dir", default=None, help="student cache root (default $INTBENCH_CACHE)"
    )
    score.set_defaults(func=run_generalize)


def _fail(message: str) -> int:
    print(f"error: {message}", file=sys.stderr)
    return 2


def _originals(args):
    from intbench.envs.domains import get_domain, load_problems

    domain = get_domain(args.domain).name
    if args.run is not None:
        problems = RunDir(args.run).problems()
        wrong = {p.domain for p in problems} - {domain}
        if wrong:
            raise ValueError(f"run {args.run} is of domain {sorted(wrong)}, not {domain!r}")
        return problems
    return load_problems(domain, source=args.source, split=args.split, n=args.n, seed=args.seed)


def run_variants(args) -> int:
    """``intbench variants``: write the variant set and its log; 0 on success."""
    from intbench.envs.domains import DataSourceError
    from intbench.generalization import VariantPipeline, procedural_variants, write_variant_set
    from intbench.generalization.procedural import ProceduralResult, is_procedural
    from intbench.generalization.variants import DEFAULT_CANDIDATES, PipelineResult

    if args.per_problem is not None and args.per_problem < 1:
        return _fail("--per-problem must be at least 1")
    if args.out.suffix != ".jsonl":
        return _fail(f"--out must end in .jsonl, got {args.out}")
    try:
        problems = _originals(args)
        result: ProceduralResult | PipelineResult
        if args.model is None and all(is_procedural(p) for p in problems):
            result = procedural_variants(problems, args.per_problem or 3, args.seed)
            method = "procedural"
        elif args.model is None:
            return _fail(
                f"{args.domain} problems from this source are not generated offline; "
                "pass --model SPEC to use the LLM pipeline"
            )
        else:
            pipeline = VariantPipeline(
                args.model,
                args.per_problem or DEFAULT_CANDIDATES,
                args.cache_dir,
                keep=args.keep,
                seed=args.seed,
            )
            result = pipeline.run(problems)
            method = f"LLM pipeline ({args.model})"
    except (DataSourceError, FileNotFoundError, ValueError) as exc:
        return _fail(str(exc))
    write_variant_set(args.out, result.variants)
    log_path = args.out.with_suffix(".log.json")
    atomic_write_json(log_path, {"method": method, **result.to_dict()})
    validated = (
        f" ({len(result.validated)} validated, kept {args.keep})"
        if isinstance(result, PipelineResult)
        else ""
    )
    print(
        f"{args.out}: {len(result.variants)} variant(s){validated} of {len(problems)} problem(s) "
        f"[{method}]; log in {log_path}"
    )
    return 0


def run_generalize(args) -> int:
    """``intbench generalize``: write generalization records and print G; 0 on success."""
    from intbench.generalization import (
        evaluate_generalization,
        generalization_table,
        read_variant_set,
    )

    contexts = [c.strip() for c in args.contexts.split(",") if c.strip()]
    try:
        run = RunDir(args.run)
        problems = run.problems()  # also checks that this is a run directory
        episodes = run.episodes()
        # The run's own student (eval runs and human studies record it on every episode).
        student = args.student or next((e.student for e in episodes if e.student), None)
        if student is None:
            raise ValueError(
                f"{args.run} holds no episodes to take the student from; pass --student"
            )
        variants = read_variant_set(args.variants)
        sampling = None
        if args.max_tokens:
            recorded: dict = next(
                (e.config["student_sampling"] for e in episodes if "student_sampling" in e.config),
                {},
            )
            sampling = {**recorded, "max_tokens": args.max_tokens}
        result = evaluate_generalization(
            episodes,
            variants,
            problems,
            student,
            contexts=contexts,
            sampling=sampling,
            seed=args.seed,
            only_intervened=not args.all_episodes,
            out_dir=args.out,
            cache_dir=args.cache_dir,
        )
    except (FileNotFoundError, ValueError) as exc:
        return _fail(str(exc))
    reasons: dict[str, int] = {}
    for item in result.skipped:
        reasons[item["reason"]] = reasons.get(item["reason"], 0) + 1
    print(
        f"{args.out}: {result.ran} record(s) run, {len(result.records) - result.ran} already done"
    )
    if reasons:
        print("skipped episodes: " + json.dumps(reasons, ensure_ascii=False))
    print(generalization_table(result.records).to_markdown())
    return 0
