"""Procedural competition-math problems (domains ``math`` and ``omni_math``).

Every skill is a pair of functions: ``sample(rng, level) -> params`` draws
JSON-ready parameters (numbers, names, template choices) and
``build(params) -> Built`` turns them into the question, the answer, a worked
solution and a second, independent computation of the answer (usually with
sympy).  The driver refuses a problem whose two answers disagree or whose
answer is degenerate (infinite, NaN, symbolic), so a generator bug surfaces
as an error instead of a wrong reference answer.  Because ``build`` depends
on the parameters alone, ``fields["params"]`` regenerates a problem exactly
(:func:`rebuild`).

Streams: problem ``i`` of ``(kind, split, seed)`` draws from its own RNG, and a
question is kept only if its text hashes to the requested split, so the
train/validation/test streams never share a question.
"""

from __future__ import annotations

import hashlib
import itertools
import math
import random
import re
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import sympy

from intbench.records import Problem

SPLITS = ("train", "validation", "test")
SOURCE = "intbench-procedural"
LICENSE = "Apache-2.0"
MAX_ATTEMPTS = 200
"""Draws per problem before giving up (split filter and duplicates reject ~2/3)."""


class DegenerateProblem(ValueError):
    """Raised when drawn parameters give no well-posed problem (the driver redraws)."""


class GeneratorError(RuntimeError):
    """Raised when a generator contradicts its own cross-check (a bug, never bad luck)."""


@dataclass(frozen=True)
class Built:
    """What a skill's ``build`` returns: the answer computed two independent ways."""

    question: str
    answer: Any  # sympy expression, or a tuple of them for ordered pairs
    check: Any  # the same value computed another way
    steps: str  # worked solution without the final boxed answer


@dataclass(frozen=True)
class Skill:
    """One fine-grained problem type."""

    name: str
    kind: str  # "math" or "omni_math"
    generator: str  # topic key, e.g. "number_theory"
    subject: str  # MATH subject name or Omni-MATH domain label
    sample: Callable[[random.Random, int], dict]
    build: Callable[[dict], Built]
    base_difficulty: float = 0.0  # omni_math only: difficulty at level 1


# ---------------------------------------------------------------------------
# Formatting and checking helpers


def to_latex(value: Any) -> str:
    """MATH-500 style LaTeX for an answer: ``\\frac{3}{4}``, ``2\\sqrt{3}``, ``(2, -1)``, ``3 - 2i``."""
    if isinstance(value, tuple):
        return "(" + ", ".join(to_latex(v) for v in value) + ")"
    value = sympy.sympify(value)
    if value.has(sympy.I):
        real, imag = value.as_real_imag()
        return _complex_latex(sympy.nsimplify(real), sympy.nsimplify(imag))
    text = sympy.latex(value)
    # sympy writes "2 \sqrt{3}" and "25 \pi"; MATH answers are written "2\sqrt{3}".
    text = re.sub(r"(?<=[\d}])\s+(?=\\)", "", text)
    return re.sub(r"^- ", "-", text)


def _complex_latex(real: sympy.Expr, imag: sympy.Expr) -> str:
    if imag == 0:
        return to_latex(real)
    magnitude = abs(imag)
    imag_text = "i" if magnitude == 1 else to_latex(magnitude) + "i"
    if real == 0:
        return ("-" if imag < 0 else "") + imag_text
    return f"{to_latex(real)} {'-' if imag < 0 else '+'} {imag_text}"


def _poly_latex(coeffs: list[int], var: str = "x") -> str:
    """LaTeX of an integer polynomial from its coefficients, highest degree first."""
    degree = len(coeffs) - 1
    terms: list[str] = []
    for i, c in enumerate(coeffs):
        if c == 0:
            continue
        power = degree - i
        monomial = "" if power == 0 else var if power == 1 else f"{var}^{{{power}}}"
        size = "" if abs(c) == 1 and monomial else str(abs(c))
        sign = ("-" if c < 0 else "") if not terms else (" - " if c < 0 else " + ")
        terms.append(f"{sign}{size}{monomial}")
    return "".join(terms) or "0"


def _poly_power(base: list[int], exponent: int) -> list[int]:
    """Coefficients (lowest degree first) of ``base(x) ** exponent`` by repeated convolution."""
    result = [1]
    for _ in range(exponent):
        product = [0] * (len(result) + len(base) - 1)
        for i, a in enumerate(result):
            for j, b in enumerate(base):
                product[i + j] += a * b
        result = product
    return result


def _signed(n: int | Fraction) -> str:
    """``+ 3`` / ``- 3`` for writing terms after the first."""
    return (
        f"+ {to_latex(abs(sympy.Rational(n)))}"
        if n >= 0
        else f"- {to_latex(abs(sympy.Rational(n)))}"
    )


def _linear_latex(a: int, var: str, b: int) -> str:
    """LaTeX of ``a*var + b``."""
    return sympy.latex(a * sympy.Symbol(var) + b)


def _same(a: Any, b: Any) -> bool:
    """Exact for rationals, 40-digit numeric agreement otherwise."""
    if isinstance(a, tuple) or isinstance(b, tuple):
        return (
            isinstance(a, tuple)
            and isinstance(b, tuple)
            and len(a) == len(b)
            and all(_same(x, y) for x, y in zip(a, b, strict=True))
        )
    a, b = sympy.sympify(a), sympy.sympify(b)
    if a.is_Rational and b.is_Rational:
        return a == b
    try:
        return abs(complex(sympy.N(a - b, 50))) < 1e-30
    except TypeError:  # not a number: the check failed to evaluate, so it does not agree
        return False


def _assert_well_posed(value: Any) -> None:
    """Refuse answers that are infinite, NaN or still contain unknowns."""
    if isinstance(value, tuple):
        for item in value:
            _assert_well_posed(item)
        return
    expr = sympy.sympify(value)
    if expr.has(sympy.zoo, sympy.nan, sympy.oo, -sympy.oo) or expr.free_symbols:
        raise GeneratorError(f"degenerate answer {expr!r}")
    if not expr.is_number or not expr.is_finite:
        raise GeneratorError(f"answer {expr!r} is not a finite number")


def _nonzero(rng: random.Random, low: int, high: int) -> int:
    while True:
        value = rng.randint(low, high)
        if value != 0:
            return value


def _q(value: Fraction | int) -> sympy.Rational:
    value = Fraction(value)
    return sympy.Rational(value.numerator, value.denominator)


NAMES = (
    "Alice", "Bruno", "Chen", "Dana", "Emeka", "Farah", "Gita", "Hugo", "Ines", "Jamal",
    "Keiko", "Luis", "Mira", "Nikolai", "Olga", "Priya", "Quinn", "Rosa", "Sami", "Tomas",
)  # fmt: skip


# ---------------------------------------------------------------------------
# Algebra


def _sample_linear_system(rng: random.Random, level: int) -> dict:
    bound = 2 + 2 * level
    while True:
        a, b, c, d = (_nonzero(rng, -bound, bound) for _ in range(4))
        if a * d - b * c != 0:
            break
    if level <= 3:  # integer solution: choose it, then the right-hand sides
        x, y = rng.randint(-bound, bound), rng.randint(-bound, bound)
        e, f = a * x + b * y, c * x + d * y
    else:
        e, f = rng.randint(-4 * bound, 4 * bound), rng.randint(-4 * bound, 4 * bound)
    names = rng.choice([("x", "y"), ("a", "b"), ("p", "q"), ("m", "n"), ("u", "v")])
    return {"coeffs": [a, b, c, d], "rhs": [e, f], "vars": list(names)}


def _build_linear_system(p: dict) -> Built:
    (a, b, c, d), (e, f), (u, v) = p["coeffs"], p["rhs"], p["vars"]
    det = a * d - b * c
    if det == 0:
        raise DegenerateProblem("singular system")
    x, y = Fraction(e * d - b * f, det), Fraction(a * f - e * c, det)
    solved = sympy.Matrix([[a, b], [c, d]]).LUsolve(sympy.Matrix([e, f]))
    row1 = sympy.latex(a * sympy.Symbol(u) + b * sympy.Symbol(v))
    row2 = sympy.latex(c * sympy.Symbol(u) + d * sympy.Symbol(v))
    question = (
        f"Find the ordered pair $({u}, {v})$ that satisfies $${row1} = {e}$$ and $${row2} = {f}.$$"
    )
    steps = (
        f"Eliminate ${v}$: multiply the first equation by ${d}$ and the second by ${b}$ and subtract, "
        f"giving ${det}{u} = {e * d - b * f}$, so ${u} = {to_latex(_q(x))}$. "
        f"Substituting back gives ${v} = {to_latex(_q(y))}$."
    )
    return Built(question, (_q(x), _q(y)), (solved[0], solved[1]), steps)


def _sample_quadratic(rng: random.Random, level: int) -> dict:
    if level <= 2:  # integer roots, asked for the larger one
        r, s = rng.sample(range(-4 * level - 3, 4 * level + 4), 2)
        return {"a": 1, "b": -(r + s), "c": r * s, "ask": rng.choice(["larger", "sum_sq"])}
    while True:
        a = 1 if level == 3 else rng.randint(1, level - 1)
        b, c = rng.randint(-12, 12), rng.randint(-20, 20)
        disc = b * b - 4 * a * c
        if disc > 0 and sympy.sqrt(disc).is_Integer is False:
            return {"a": a, "b": b, "c": c, "ask": rng.choice(["larger", "difference"])}


def _build_quadratic(p: dict) -> Built:
    a, b, c, ask = p["a"], p["b"], p["c"], p["ask"]
    disc = b * b - 4 * a * c
    if disc <= 0:
        raise DegenerateProblem("no two real roots")
    root = sympy.sqrt(disc)
    r1, r2 = (-b + root) / (2 * a), (-b - root) / (2 * a)
    x = sympy.Symbol("x")
    roots = sorted(sympy.roots(sympy.Poly(a * x**2 + b * x + c, x)).keys(), key=sympy.N)
    poly = sympy.latex(a * x**2 + b * x + c)
    if ask == "larger":
        what, answer, check = "the larger solution", sympy.radsimp(r1), roots[-1]
    elif ask == "difference":
        what, answer, check = (
            "the positive difference between the solutions",
            root / a,
            roots[1] - roots[0],
        )
    else:
        what, answer = "the sum of the squares of the solutions", sympy.expand(r1**2 + r2**2)
        check = sum(r**2 for r in roots)
    question = f"Find {what} of $${poly} = 0.$$"
    if not sympy.sqrt(disc).is_Integer:
        question += " Express your answer in simplest radical form."
    steps = (
        f"By the quadratic formula the solutions are $x = \\frac{{{-b} \\pm \\sqrt{{{disc}}}}}{{{2 * a}}}$, "
        f"that is ${to_latex(sympy.radsimp(r1))}$ and ${to_latex(sympy.radsimp(r2))}$."
    )
    return Built(question, sympy.radsimp(answer), check, steps)


def _sample_composition(rng: random.Random, level: int) -> dict:
    return {
        "f": [_nonzero(rng, -level - 2, level + 2), rng.randint(-6, 6)],
        "g": [
            1 if level < 3 else _nonzero(rng, -3, 3),
            rng.randint(-level, level),
            rng.randint(-9, 9),
        ],
        "x0": rng.randint(-level - 2, level + 2),
        "order": rng.choice(["fg", "gf"]) if level >= 2 else "fg",
        "twice": level >= 5,
    }


def _build_composition(p: dict) -> Built:
    (fa, fb), (ga, gb, gc), x0 = p["f"], p["g"], p["x0"]

    def f(t):
        return fa * t + fb

    def g(t):
        return ga * t * t + gb * t + gc

    x = sympy.Symbol("x")
    f_expr, g_expr = fa * x + fb, ga * x**2 + gb * x + gc
    outer, inner = (f, g) if p["order"] == "fg" else (g, f)
    outer_e, inner_e = (f_expr, g_expr) if p["order"] == "fg" else (g_expr, f_expr)
    o, i = p["order"]
    value = outer(inner(x0))
    composed = outer_e.subs(x, inner_e)
    label = f"{o}({i}({x0}))"
    if p["twice"]:
        value = outer(inner(value))
        composed = outer_e.subs(x, inner_e.subs(x, composed))
        label = f"{o}({i}({o}({i}({x0}))))"
    question = (
        f"Let $f(x) = {sympy.latex(f_expr)}$ and $g(x) = {sympy.latex(g_expr)}$. What is ${label}$?"
    )
    steps = f"Work from the inside out: ${i}({x0}) = {inner(x0)}$, and applying the outer functions in turn gives ${label} = {value}$."
    return Built(question, sympy.Integer(value), composed.subs(x, x0), steps)


def _sample_line(rng: random.Random, level: int) -> dict:
    bound = 3 + 2 * level
    while True:
        x1, y1, x2, y2 = (rng.randint(-bound, bound) for _ in range(4))
        if x1 != x2 and y1 != y2:
            break
    ask = rng.choice(
        ["slope", "y_intercept"] if level <= 2 else ["y_intercept", "x_intercept", "sum"]
    )
    return {"p1": [x1, y1], "p2": [x2, y2], "ask": ask}


def _build_line(p: dict) -> Built:
    (x1, y1), (x2, y2), ask = p["p1"], p["p2"], p["ask"]
    if x1 == x2 or y1 == y2:
        raise DegenerateProblem("vertical or horizontal line")
    m = Fraction(y2 - y1, x2 - x1)
    b = y1 - m * x1
    x, y = sympy.symbols("x y")
    # Second route: the determinant form of the line through two points.
    line = sympy.expand(sympy.Matrix([[x, y, 1], [x1, y1, 1], [x2, y2, 1]]).det())
    slope_c = -line.coeff(x) / line.coeff(y)
    yint_c = -line.subs({x: 0, y: 0}) / line.coeff(y)
    values = {
        "slope": (_q(m), slope_c, "the slope"),
        "y_intercept": (_q(b), yint_c, "the $y$-intercept"),
        "x_intercept": (_q(-b / m), -yint_c / slope_c, "the $x$-intercept"),
        "sum": (_q(m + b), slope_c + yint_c, "the sum of the slope and the $y$-intercept"),
    }
    answer, check, what = values[ask]
    question = f"A line passes through the points $({x1}, {y1})$ and $({x2}, {y2})$. What is {what} of the line? Express your answer as a common fraction if necessary."
    steps = (
        f"The slope is $m = \\frac{{{y2} - ({y1})}}{{{x2} - ({x1})}} = {to_latex(_q(m))}$ and "
        f"the $y$-intercept is $b = {y1} - m\\cdot({x1}) = {to_latex(_q(b))}$."
    )
    return Built(question, answer, check, steps)


# ---------------------------------------------------------------------------
# Number theory


def _sample_gcd_lcm(rng: random.Random, level: int) -> dict:
    common = rng.randint(2, 3 + 3 * level)
    count = 2 if level < 4 else 3
    factors = rng.sample(range(1, 6 + 4 * level), count)
    ask = rng.choice(["gcd", "lcm"] if level < 3 else ["gcd", "lcm", "sum"])
    return {"numbers": [common * f for f in factors], "ask": ask}


def _build_gcd_lcm(p: dict) -> Built:
    numbers, ask = p["numbers"], p["ask"]
    if len(set(numbers)) < len(numbers) or min(numbers) <= 0:
        raise DegenerateProblem("numbers must be distinct and positive")
    g, lcm = math.gcd(*numbers), math.lcm(*numbers)
    g_s, l_s = sympy.gcd(list(numbers)), sympy.ilcm(*numbers)
    listed = ", ".join(f"${n}$" for n in numbers[:-1]) + f" and ${numbers[-1]}$"
    if ask == "gcd":
        question, answer, check = f"What is the greatest common divisor of {listed}?", g, g_s
    elif ask == "lcm":
        question, answer, check = f"What is the least common multiple of {listed}?", lcm, l_s
    else:
        question = f"What is the sum of the greatest common divisor and the least common multiple of {listed}?"
        answer, check = g + lcm, g_s + l_s
    factored = "; ".join(f"${n} = {_factor_latex(n)}$" for n in numbers)
    steps = f"Factor: {factored}. The gcd takes the lowest powers, ${g}$; the lcm takes the highest powers, ${lcm}$."
    return Built(question, sympy.Integer(answer), check, steps)


def _factor_latex(n: int) -> str:
    parts = sympy.factorint(n)
    return " \\cdot ".join(f"{q}^{{{e}}}" if e > 1 else str(q) for q, e in sorted(parts.items()))


def _sample_modpow(rng: random.Random, level: int) -> dict:
    return {
        "base": rng.randint(2, 5 + 4 * level),
        "exp": rng.randint(10 * level, 60 * level),
        "mod": rng.choice([5, 7, 9, 10, 11, 13] if level <= 2 else [7, 11, 13, 17, 19, 100, 1000]),
    }


def _build_modpow(p: dict) -> Built:
    a, b, m = p["base"], p["exp"], p["mod"]
    answer = pow(a, b, m)
    check = sympy.Mod(sympy.Integer(a) ** b, m)
    question = f"What is the remainder when ${a}^{{{b}}}$ is divided by ${m}$?"
    period = next(
        k
        for k in range(1, m + 1)
        if pow(a, b + k, m) == pow(a, b, m) and pow(a, 2 * m + k, m) == pow(a, 2 * m, m)
    )
    steps = (
        f"The powers of ${a}$ modulo ${m}$ eventually repeat with period ${period}$; "
        f"reducing the exponent accordingly gives ${a}^{{{b}}} \\equiv {answer} \\pmod{{{m}}}$."
    )
    return Built(question, sympy.Integer(answer), check, steps)


def _sample_divisors(rng: random.Random, level: int) -> dict:
    primes = rng.sample([2, 3, 5, 7, 11, 13], 1 + min(level, 3))
    exps = [rng.randint(1, 1 + level // 2 + 1) for _ in primes]
    ask = "count" if level <= 3 else rng.choice(["count", "sum"])
    return {"primes": primes, "exps": exps, "ask": ask}


def _build_divisors(p: dict) -> Built:
    primes, exps, ask = p["primes"], p["exps"], p["ask"]
    n = math.prod(q**e for q, e in zip(primes, exps, strict=True))
    if ask == "count":
        answer = math.prod(e + 1 for e in exps)
        check = sympy.divisor_count(n)
        question = f"How many positive divisors does ${n}$ have?"
        rule = "the number of divisors is the product of (exponent + 1)"
    else:
        answer = math.prod((q ** (e + 1) - 1) // (q - 1) for q, e in zip(primes, exps, strict=True))
        check = sympy.divisor_sigma(n)
        question = f"What is the sum of all positive divisors of ${n}$?"
        rule = "the divisor sum is multiplicative, $\\sigma(p^e) = 1 + p + \\dots + p^e$"
    steps = f"${n} = {_factor_latex(n)}$, and {rule}, giving ${answer}$."
    return Built(question, sympy.Integer(answer), check, steps)


def _sample_digit_sum(rng: random.Random, level: int) -> dict:
    return {"base": rng.choice([2, 3, 7, 11, 12]), "exp": rng.randint(4 + 3 * level, 8 + 6 * level)}


def _build_digit_sum(p: dict) -> Built:
    value = p["base"] ** p["exp"]
    answer = sum(int(ch) for ch in str(value))
    check = sum(sympy.ntheory.digits(value)[1:])
    question = (
        f"What is the sum of the digits of ${p['base']}^{{{p['exp']}}}$ when written in base ten?"
    )
    steps = f"${p['base']}^{{{p['exp']}}} = {value}$, whose digits add up to ${answer}$."
    return Built(question, sympy.Integer(answer), check, steps)


def _sample_congruence(rng: random.Random, level: int) -> dict:
    m = rng.choice([7, 9, 11, 13, 17, 19, 23, 25, 27, 29, 31, 37][: 4 + 2 * level])
    while True:
        a = rng.randint(2, m - 1)
        if math.gcd(a, m) == 1:
            break
    return {"a": a, "b": rng.randint(1, m - 1), "m": m}


def _build_congruence(p: dict) -> Built:
    a, b, m = p["a"], p["b"], p["m"]
    if math.gcd(a, m) != 1:
        raise DegenerateProblem("a must be invertible modulo m")
    inverse = pow(a, -1, m)
    answer = inverse * b % m
    check = next(x for x in range(m) if (a * x - b) % m == 0)
    question = (
        f"Find the smallest nonnegative integer $x$ such that ${a}x \\equiv {b} \\pmod{{{m}}}$."
    )
    steps = f"The inverse of ${a}$ modulo ${m}$ is ${inverse}$ since ${a}\\cdot{inverse} \\equiv 1$. Multiplying both sides by it, $x \\equiv {inverse}\\cdot{b} \\equiv {answer} \\pmod{{{m}}}$."
    return Built(question, sympy.Integer(answer), sympy.Integer(check), steps)


# ---------------------------------------------------------------------------
# Counting & probability

_GROUPS = (("club", "members", "juniors", "seniors"), ("class", "students", "girls", "boys"),
           ("team", "players", "forwards", "defenders"), ("lab", "researchers", "chemists", "physicists"))  # fmt: skip


def _sample_committee(rng: random.Random, level: int) -> dict:
    group = rng.randrange(len(_GROUPS))
    n_a, n_b = rng.randint(3, 4 + 2 * level), rng.randint(3, 4 + 2 * level)
    k = rng.randint(2, min(n_a + n_b - 1, 2 + level))
    ask = (
        ["any", "split", "each"][min((level - 1) // 2, 2)]
        if level != 3
        else rng.choice(["split", "each"])
    )
    return {"group": group, "n_a": n_a, "n_b": n_b, "k": k, "j": rng.randint(1, k - 1), "ask": ask}


def _build_committee(p: dict) -> Built:
    place, people, kind_a, kind_b = _GROUPS[p["group"]]
    n_a, n_b, k, j, ask = p["n_a"], p["n_b"], p["k"], p["j"], p["ask"]
    if not (0 < j < k <= n_a + n_b) or j > n_a or k - j > n_b:
        raise DegenerateProblem("committee sizes out of range")
    intro = f"A {place} has {n_a} {kind_a} and {n_b} {kind_b}."
    comb = math.comb
    # Second route: sum over how many members come from the first group.
    by_split = {i: sympy.binomial(n_a, i) * sympy.binomial(n_b, k - i) for i in range(k + 1)}
    if ask == "any":
        answer, check = comb(n_a + n_b, k), sum(by_split.values())
        question = f"{intro} In how many ways can a committee of {k} {people} be chosen?"
        steps = f"Choose any {k} of the {n_a + n_b} {people}: $\\binom{{{n_a + n_b}}}{{{k}}} = {answer}$."
    elif ask == "split":
        answer, check = comb(n_a, j) * comb(n_b, k - j), by_split[j]
        question = f"{intro} In how many ways can a committee of {k} {people} with exactly {j} {kind_a} be chosen?"
        steps = f"Choose the {kind_a} and the {kind_b} independently: $\\binom{{{n_a}}}{{{j}}}\\binom{{{n_b}}}{{{k - j}}} = {answer}$."
    else:
        answer = comb(n_a + n_b, k) - comb(n_a, k) - comb(n_b, k)
        check = sum(v for i, v in by_split.items() if 0 < i < k)
        question = f"{intro} In how many ways can a committee of {k} {people} be chosen if it must include at least one of the {kind_a} and at least one of the {kind_b}?"
        steps = (
            f"Subtract the one-group committees from all committees: "
            f"$\\binom{{{n_a + n_b}}}{{{k}}} - \\binom{{{n_a}}}{{{k}}} - \\binom{{{n_b}}}{{{k}}} = {answer}$."
        )
    return Built(question, sympy.Integer(answer), check, steps)


_WORDS = ("BANANA", "LETTER", "BALLOON", "COFFEE", "PEPPER", "ALABAMA", "TATTOO", "SUCCESS",
          "ASSESS", "COMMITTEE", "MISSISSIPPI", "BOOKKEEPER", "PARALLEL", "GAGGLE", "REFERRER",
          "ADDRESS", "CHEESE", "LLAMA", "RADAR", "LEVEL", "MAMMAL", "PIZZAZZ", "DEEDED")  # fmt: skip


def _sample_arrangements(rng: random.Random, level: int) -> dict:
    if rng.random() < 0.4:  # a real word of a length that fits the level
        candidates = sorted(_WORDS, key=len)
        lo = (level - 1) * len(candidates) // 5
        hi = max(lo + 1, level * len(candidates) // 5)
        return {"word": rng.choice(candidates[lo:hi])}
    # otherwise a code word over a few letters, some repeated
    letters = rng.sample("ABCDEHKLMNPRSTXZ", 2 + (level + 1) // 2)
    counts = [rng.randint(1, 1 + (level + 1) // 2) for _ in letters]
    counts[0] = max(counts[0], 2)
    word = [ch for ch, c in zip(letters, counts, strict=True) for _ in range(c)]
    rng.shuffle(word)
    return {"word": "".join(word)}


def _build_arrangements(p: dict) -> Built:
    word = p["word"]
    counts = Counter(word)
    answer = math.factorial(len(word))
    for c in counts.values():
        answer //= math.factorial(c)
    # Second route: place each letter kind into the remaining slots.
    check, left = sympy.Integer(1), len(word)
    for c in counts.values():
        check *= sympy.binomial(left, c)
        left -= c
    repeats = ", ".join(f"{c} {letter}'s" for letter, c in sorted(counts.items()) if c > 1)
    question = f"Determine the number of distinct ways to arrange the letters of {word}."
    denom = "".join(f"{c}!" for c in counts.values() if c > 1)
    steps = f"There are {len(word)} letters with repeats ({repeats}), so the count is $\\frac{{{len(word)}!}}{{{denom}}} = {answer}$."
    return Built(question, sympy.Integer(answer), check, steps)


def _sample_dice(rng: random.Random, level: int) -> dict:
    dice = 2 if level <= 3 else 3
    sides = rng.choice([4, 6, 8] if level <= 2 else [6, 8, 10, 12])
    ask = rng.choice(["equal", "at_least"] if level >= 2 else ["equal"])
    target = rng.randint(dice + 1, dice * sides - 1)
    return {"dice": dice, "sides": sides, "ask": ask, "target": target}


def _build_dice(p: dict) -> Built:
    dice, sides, ask, target = p["dice"], p["sides"], p["ask"], p["target"]
    outcomes = list(itertools.product(range(1, sides + 1), repeat=dice))

    def wanted(total: int) -> bool:
        return total == target if ask == "equal" else total >= target

    favourable = sum(1 for roll in outcomes if wanted(sum(roll)))
    if favourable in (0, len(outcomes)):
        raise DegenerateProblem("certain or impossible event")
    answer = _q(Fraction(favourable, len(outcomes)))
    # Second route: coefficients of the generating polynomial (x + ... + x^sides)^dice.
    coefficients = _poly_power([0] + [1] * sides, dice)
    count = sum(c for t, c in enumerate(coefficients) if wanted(t))
    check = sympy.Rational(count, sides**dice)
    relation = f"equal to {target}" if ask == "equal" else f"at least {target}"
    word = {2: "Two", 3: "Three"}[dice]
    question = f"{word} fair {sides}-sided dice, with faces numbered 1 through {sides}, are rolled. What is the probability that the sum of the numbers rolled is {relation}? Express your answer as a common fraction."
    steps = f"There are ${sides}^{dice} = {len(outcomes)}$ equally likely outcomes, and ${favourable}$ of them have sum {relation}, so the probability is ${to_latex(answer)}$."
    return Built(question, answer, check, steps)


def _sample_urn(rng: random.Random, level: int) -> dict:
    colors = ["red", "blue", "green", "white", "black", "yellow"]
    count = 2 if level <= 2 else 3
    return {
        "colors": rng.sample(colors, count),
        "counts": [rng.randint(1, 3 + 2 * level) for _ in range(count)],
        "ask": rng.choice(["same", "different"]),
    }


def _build_urn(p: dict) -> Built:
    colors, counts, ask = p["colors"], p["counts"], p["ask"]
    total = sum(counts)
    if total < 2:
        raise DegenerateProblem("need two balls")
    same = Fraction(sum(c * (c - 1) for c in counts), total * (total - 1))
    answer = same if ask == "same" else 1 - same
    if answer in (0, 1):
        raise DegenerateProblem("certain or impossible event")
    balls = [color for color, c in zip(colors, counts, strict=True) for _ in range(c)]
    pairs = list(itertools.permutations(range(total), 2))
    hits = sum(1 for i, j in pairs if (balls[i] == balls[j]) == (ask == "same"))
    contents = ", ".join(f"{c} {color}" for color, c in zip(colors, counts, strict=True))
    question = f"A bag contains {contents} marbles. Two marbles are drawn at random without replacement. What is the probability that they are {'the same color' if ask == 'same' else 'of different colors'}? Express your answer as a common fraction."
    same_terms = " + ".join(f"{c}\\cdot{c - 1}" for c in counts)
    steps = (
        f"There are ${total}\\cdot{total - 1}$ ordered draws; same-color draws number "
        f"${same_terms}$, so $P(\\text{{same}}) = {to_latex(_q(same))}$"
        + ("." if ask == "same" else f" and the complement is ${to_latex(_q(answer))}$.")
    )
    return Built(question, _q(answer), sympy.Rational(hits, len(pairs)), steps)


# ---------------------------------------------------------------------------
# Geometry

_TRIPLES = ((3, 4, 5), (5, 12, 13), (8, 15, 17), (7, 24, 25), (20, 21, 29), (9, 40, 41))


def _sample_pythagorean(rng: random.Random, level: int) -> dict:
    if level <= 2:
        triple = rng.choice(_TRIPLES[: 2 + 2 * level])
        scale = rng.randint(1, 3)
        return {"legs": [triple[0] * scale, triple[1] * scale], "ask": rng.choice(["hyp", "leg"])}
    a, b = rng.randint(1, 4 + 3 * level), rng.randint(1, 4 + 3 * level)
    return {"legs": [a, b], "ask": rng.choice(["hyp", "leg"])}


def _build_pythagorean(p: dict) -> Built:
    (a, b), ask = p["legs"], p["ask"]
    hyp = sympy.sqrt(a * a + b * b)
    check = sympy.Point(0, 0).distance(sympy.Point(a, b))
    if ask == "hyp":
        question = f"A right triangle has legs of length ${a}$ and ${b}$. What is the length of its hypotenuse?"
        answer, steps = (
            hyp,
            f"By the Pythagorean theorem the hypotenuse is $\\sqrt{{{a}^2 + {b}^2}} = \\sqrt{{{a * a + b * b}}} = {to_latex(hyp)}$.",
        )
    else:
        question = f"A right triangle has a leg of length ${a}$ and hypotenuse of length ${to_latex(hyp)}$. What is the length of the other leg?"
        answer, check = sympy.Integer(b), sympy.sqrt(check**2 - a * a)
        steps = (
            f"The other leg is $\\sqrt{{({to_latex(hyp)})^2 - {a}^2}} = \\sqrt{{{b * b}}} = {b}$."
        )
    if not answer.is_Integer:
        question += " Express your answer in simplest radical form."
    return Built(question, answer, check, steps)


def _sample_circle(rng: random.Random, level: int) -> dict:
    given = rng.choice(["radius", "diameter"] if level <= 2 else ["circumference", "area"])
    size = rng.randint(2, 6 + 4 * level)
    value = size * size if given == "area" else size  # an area of r^2 pi keeps r rational
    return {"given": given, "value": value, "ask": rng.choice(["area", "circumference"])}


def _build_circle(p: dict) -> Built:
    given, value, ask = p["given"], p["value"], p["ask"]
    if given == ask:
        raise DegenerateProblem("asks for what is given")
    pi = sympy.pi
    radius = {
        "radius": value,
        "diameter": _q(Fraction(value, 2)),
        "circumference": _q(Fraction(value, 2)),
        "area": sympy.sqrt(value),
    }[given]
    if given == "area" and not radius.is_Rational:
        raise DegenerateProblem("area must give a rational radius")
    shown = {
        "radius": f"${value}$",
        "diameter": f"${value}$",
        "circumference": f"${value}\\pi$",
        "area": f"${value}\\pi$",
    }[given]
    # Second route: go through the diameter and the circumference-area relation A = C^2 / (4 pi).
    circumference = pi * 2 * radius
    if ask == "area":
        answer, check = pi * radius**2, circumference**2 / (4 * pi)
    else:
        answer, check = 2 * pi * radius, circumference
    question = (
        f"A circle has {given} {shown}. What is its {ask}? Express your answer in terms of $\\pi$."
    )
    steps = f"The radius is ${to_latex(radius)}$, so the {ask} is ${to_latex(answer)}$."
    return Built(question, answer, check, steps)


def _sample_similar(rng: random.Random, level: int) -> dict:
    sides = [rng.randint(3, 6 + 2 * level) for _ in range(3)]
    return {
        "sides": sides,
        "known": rng.randint(2, 8 + 3 * level),
        "which": rng.randrange(3),
        "given": rng.randrange(3),
    }


def _build_similar(p: dict) -> Built:
    sides, known, which, given = p["sides"], p["known"], p["which"], p["given"]
    a, b, c = sorted(sides)
    if a + b <= c or which == given:
        raise DegenerateProblem("not a triangle, or asks for the given side")
    names = ("AB", "BC", "CA")
    small = dict(zip(names, sides, strict=True))
    ratio = Fraction(known, sides[given])
    answer = _q(sides[which] * ratio)
    check = sympy.solve(
        sympy.Eq(sympy.Symbol("t") / sides[which], sympy.Rational(known, sides[given]))
    )[0]
    big = ("DE", "EF", "FD")
    question = (
        f"Triangle $ABC$ is similar to triangle $DEF$, with $A$, $B$, $C$ corresponding to $D$, $E$, $F$. "
        f"If {', '.join(f'${n} = {v}$' for n, v in small.items())} and ${big[given]} = {known}$, what is ${big[which]}$? "
        "Express your answer as a common fraction if necessary."
    )
    steps = f"The scale factor is $\\frac{{{big[given]}}}{{{names[given]}}} = {to_latex(_q(ratio))}$, so ${big[which]} = {sides[which]}\\cdot {to_latex(_q(ratio))} = {to_latex(answer)}$."
    return Built(question, answer, check, steps)


def _sample_shoelace(rng: random.Random, level: int) -> dict:
    bound = 3 + 2 * level
    return {"points": [[rng.randint(-bound, bound), rng.randint(-bound, bound)] for _ in range(3)]}


def _pick_area(points: list[list[int]]) -> sympy.Rational:
    """Lattice-triangle area by Pick's theorem, counting interior points one by one."""
    (x1, y1), (x2, y2), (x3, y3) = points

    def side(ax, ay, bx, by, px, py):
        return (bx - ax) * (py - ay) - (by - ay) * (px - ax)

    boundary = sum(
        math.gcd(abs(b[0] - a[0]), abs(b[1] - a[1]))
        for a, b in ((points[0], points[1]), (points[1], points[2]), (points[2], points[0]))
    )
    interior = 0
    for px in range(min(x1, x2, x3), max(x1, x2, x3) + 1):
        for py in range(min(y1, y2, y3), max(y1, y2, y3) + 1):
            signs = (
                side(x1, y1, x2, y2, px, py),
                side(x2, y2, x3, y3, px, py),
                side(x3, y3, x1, y1, px, py),
            )
            if all(v > 0 for v in signs) or all(v < 0 for v in signs):
                interior += 1
    return sympy.Integer(interior) + sympy.Rational(boundary, 2) - 1


def _build_shoelace(p: dict) -> Built:
    (x1, y1), (x2, y2), (x3, y3) = p["points"]
    twice = x1 * (y2 - y3) + x2 * (y3 - y1) + x3 * (y1 - y2)
    if twice == 0:
        raise DegenerateProblem("collinear points")
    answer = sympy.Rational(abs(twice), 2)
    check = _pick_area(p["points"])
    pts = ", ".join(f"$({x}, {y})$" for x, y in p["points"])
    question = f"What is the area of the triangle with vertices {pts}? Express your answer as a common fraction if necessary."
    steps = f"By the shoelace formula the area is $\\frac{{1}}{{2}}\\left|{twice}\\right| = {to_latex(answer)}$."
    return Built(question, answer, check, steps)


# ---------------------------------------------------------------------------
# Precalculus


def _sample_trig(rng: random.Random, level: int) -> dict:
    base = [0, 30, 45, 60, 90] if level <= 2 else [0, 30, 45, 60, 90]
    quadrants = 2 if level == 1 else 4 if level <= 4 else 8
    functions = (
        ["sin", "cos", "tan"]
        if level <= 2
        else ["sin", "cos", "tan"]
        if level <= 4
        else ["tan", "sec", "csc", "cot"]
    )
    return {
        "angle": rng.choice(base) + 90 * rng.randrange(quadrants),
        "func": rng.choice(functions),
    }


def _build_trig(p: dict) -> Built:
    angle, func = p["angle"], p["func"]
    theta = sympy.pi * angle / 180
    s, c = sympy.sin(theta), sympy.cos(theta)
    ratio = {"sin": s, "cos": c, "tan": (s, c), "sec": (1, c), "csc": (1, s), "cot": (c, s)}[func]
    if isinstance(ratio, tuple):
        if ratio[1] == 0:
            raise DegenerateProblem(f"{func} undefined at {angle} degrees")
        answer = sympy.radsimp(ratio[0] / ratio[1])
    else:
        answer = ratio
    check = getattr(sympy, func)(sympy.Rational(angle, 180) * sympy.pi)
    reference = angle % 360
    question = f"Compute $\\{func} {angle}^\\circ$."
    steps = (
        f"${angle}^\\circ$ is coterminal with ${reference}^\\circ$; there $\\sin = {to_latex(s)}$ and "
        f"$\\cos = {to_latex(c)}$, so $\\{func} {angle}^\\circ = {to_latex(answer)}$."
    )
    return Built(question, answer, check, steps)


def _sample_vectors(rng: random.Random, level: int) -> dict:
    dim = 2 if level <= 2 else 3
    bound = 2 + level
    u = [rng.randint(-bound, bound) for _ in range(dim)]
    v = [rng.randint(-bound, bound) for _ in range(dim)]
    ask = "dot" if level <= 2 else rng.choice(["dot", "norm_sum", "orthogonal"])
    return {"u": u, "v": v, "ask": ask}


def _build_vectors(p: dict) -> Built:
    u, v, ask = p["u"], p["v"], p["ask"]
    U, V = sympy.Matrix(u), sympy.Matrix(v)

    def vec(w):
        return "\\begin{pmatrix} " + " \\\\ ".join(map(str, w)) + " \\end{pmatrix}"

    dot = sum(a * b for a, b in zip(u, v, strict=True))
    if ask == "dot":
        question = f"Compute ${vec(u)} \\cdot {vec(v)}$."
        answer, check = sympy.Integer(dot), U.dot(V)
        steps = f"Multiply componentwise and add: ${' + '.join(f'({a})({b})' for a, b in zip(u, v, strict=True))} = {dot}$."
    elif ask == "norm_sum":
        total = [a + b for a, b in zip(u, v, strict=True)]
        answer = sympy.sqrt(sum(t * t for t in total))
        check = (U + V).norm()
        question = f"Let $\\mathbf{{u}} = {vec(u)}$ and $\\mathbf{{v}} = {vec(v)}$. Find $\\|\\mathbf{{u}} + \\mathbf{{v}}\\|$."
        steps = (
            f"$\\mathbf{{u}} + \\mathbf{{v}} = {vec(total)}$, whose length is ${to_latex(answer)}$."
        )
    else:
        # find k with u . (v + k e_last) = 0, i.e. dot + k*u_last = 0
        if u[-1] == 0:
            raise DegenerateProblem("last component of u must be nonzero")
        answer = sympy.Rational(-dot, u[-1])
        k = sympy.Symbol("k")
        w = list(v[:-1]) + [v[-1] + k]
        check = sympy.solve(U.dot(sympy.Matrix(w)), k)[0]
        shown = list(map(str, v[:-1])) + [f"{v[-1]} + k"]
        question = f"Find $k$ such that the vectors ${vec(u)}$ and ${vec(shown)}$ are orthogonal."
        steps = f"Orthogonal means the dot product vanishes: ${dot} + {u[-1]}k = 0$, so $k = {to_latex(answer)}$."
    return Built(question, answer, check, steps)


def _sample_complex(rng: random.Random, level: int) -> dict:
    bound = 2 + level
    z = [rng.randint(-bound, bound), _nonzero(rng, -bound, bound)]
    w = [rng.randint(-bound, bound), _nonzero(rng, -bound, bound)]
    ops = (
        ["product"]
        if level <= 2
        else ["product", "quotient"]
        if level <= 4
        else ["quotient", "modulus"]
    )
    return {"z": z, "w": w, "op": rng.choice(ops)}


def _build_complex(p: dict) -> Built:
    (a, b), (c, d), op = p["z"], p["w"], p["op"]
    z_text, w_text = (
        _complex_latex(sympy.Integer(a), sympy.Integer(b)),
        _complex_latex(sympy.Integer(c), sympy.Integer(d)),
    )
    zs, ws = a + b * sympy.I, c + d * sympy.I
    if op == "product":
        answer = sympy.Integer(a * c - b * d) + sympy.Integer(a * d + b * c) * sympy.I
        check = sympy.expand(zs * ws)
        question = f"Simplify $({z_text})({w_text})$, where $i^2 = -1$."
        steps = f"Expand: $({a})({c}) + ({a})({d})i + ({b})({c})i + ({b})({d})i^2 = {to_latex(answer)}$."
    elif op == "quotient":
        norm = c * c + d * d
        answer = _q(Fraction(a * c + b * d, norm)) + _q(Fraction(b * c - a * d, norm)) * sympy.I
        check = sympy.expand(sympy.radsimp(zs / ws))
        question = (
            f"Simplify $\\dfrac{{{z_text}}}{{{w_text}}}$, writing the result in the form $a + bi$."
        )
        steps = f"Multiply numerator and denominator by the conjugate ${_complex_latex(sympy.Integer(c), sympy.Integer(-d))}$; the denominator becomes ${norm}$, giving ${to_latex(answer)}$."
    else:
        answer = sympy.sqrt(a * a + b * b) * sympy.sqrt(c * c + d * d)
        check = sympy.Abs(sympy.expand(zs * ws))
        question = f"Find $|({z_text})({w_text})|$."
        steps = f"The modulus is multiplicative: $\\sqrt{{{a * a + b * b}}}\\cdot\\sqrt{{{c * c + d * d}}} = {to_latex(answer)}$."
    return Built(question, answer, check, steps)


# ---------------------------------------------------------------------------
# Intermediate algebra


def _sample_vieta(rng: random.Random, level: int) -> dict:
    degree = 2 if level <= 2 else 3
    coeffs = [rng.randint(1, 1 + level // 2)] + [
        _nonzero(rng, -3 - level, 3 + level) for _ in range(degree)
    ]
    asks = (
        ["sum", "product"]
        if level <= 1
        else ["sum_sq", "recip"]
        if level <= 4
        else ["sum_sq", "recip", "sum_cubes"]
    )
    return {"coeffs": coeffs, "ask": rng.choice(asks)}


def _build_vieta(p: dict) -> Built:
    coeffs, ask = p["coeffs"], p["ask"]
    lead, degree = coeffs[0], len(coeffs) - 1
    e = [_q(Fraction((-1) ** k * coeffs[k], lead)) for k in range(degree + 1)]  # e[0] = 1
    e1, e2 = e[1], e[2]
    e3 = e[3] if degree == 3 else sympy.Integer(0)
    if e[degree] == 0:
        raise DegenerateProblem("zero root")
    values = {
        "sum": (e1, "the sum of the roots"),
        "product": (e[degree], "the product of the roots"),
        "sum_sq": (e1**2 - 2 * e2, "the sum of the squares of the roots"),
        "recip": (e[degree - 1] / e[degree], "the sum of the reciprocals of the roots"),
        "sum_cubes": (e1**3 - 3 * e1 * e2 + 3 * e3, "the sum of the cubes of the roots"),
    }
    answer, what = values[ask]
    x = sympy.Symbol("x")
    # Second route: the roots are the eigenvalues of the companion matrix, so
    # power sums are traces of its powers and the product is its determinant.
    companion = sympy.Matrix.companion(sympy.Poly(coeffs, x).monic())
    power = {"sum": 1, "sum_sq": 2, "recip": -1, "sum_cubes": 3}
    check = companion.det() if ask == "product" else (companion ** power[ask]).trace()
    poly = _poly_latex(coeffs)
    question = f"Let the roots of $${poly} = 0$$ be {'$r$ and $s$' if degree == 2 else '$r$, $s$, and $t$'}. Find {what}. Express your answer as a common fraction if necessary."
    steps = (
        f"By Vieta's formulas the elementary symmetric sums are $e_1 = {to_latex(e1)}$, $e_2 = {to_latex(e2)}$"
        + (f", $e_3 = {to_latex(e3)}$" if degree == 3 else "")
        + f"; expressing {what} in them gives ${to_latex(answer)}$."
    )
    return Built(question, answer, check, steps)


def _sample_inequality(rng: random.Random, level: int) -> dict:
    if level <= 2:
        return {
            "kind": "abs",
            "a": 1,
            "b": rng.randint(-10, 10),
            "c": rng.randint(1, 4 + 3 * level),
        }
    if level <= 3:
        return {
            "kind": "abs",
            "a": rng.randint(2, 5),
            "b": rng.randint(-20, 20),
            "c": rng.randint(3, 25),
        }
    p, q = sorted(rng.sample(range(-15, 16), 2))
    return {"kind": "quad", "a": p, "b": q, "c": rng.choice([0, 1])}


def _build_inequality(p: dict) -> Built:
    kind, a, b, c = p["kind"], p["a"], p["b"], p["c"]
    x = sympy.Symbol("x")
    if kind == "abs":
        lo, hi = math.ceil(Fraction(b - c, a)), math.floor(Fraction(b + c, a))
        answer = hi - lo + 1
        text = f"\\left|{_linear_latex(a, 'x', -b)}\\right| \\le {c}"
        window = range(lo - 50, hi + 51)
        count = sum(1 for t in window if abs(a * t - b) <= c)
        steps = f"The inequality means ${-c} \\le {_linear_latex(a, 'x', -b)} \\le {c}$, i.e. ${to_latex(_q(Fraction(b - c, a)))} \\le x \\le {to_latex(_q(Fraction(b + c, a)))}$, which holds for the integers ${lo}$ through ${hi}$."
    else:
        strict = c == 0
        expr = sympy.expand((x - a) * (x - b))
        answer = (b - a - 1) if strict else (b - a + 1)
        text = sympy.latex(expr) + (" < 0" if strict else " \\le 0")
        count = sum(
            1
            for t in range(a - 50, b + 51)
            if (t - a) * (t - b) < 0 or (not strict and (t - a) * (t - b) == 0)
        )
        steps = f"The quadratic factors as $(x {_signed(-a)})(x {_signed(-b)})$, which is {'negative' if strict else 'nonpositive'} exactly {'strictly ' if strict else ''}between ${a}$ and ${b}$, giving ${answer}$ integers."
    if answer <= 0:
        raise DegenerateProblem("no integer solutions")
    question = f"How many integers $x$ satisfy $${text}?$$"
    return Built(question, sympy.Integer(answer), sympy.Integer(count), steps)


def _sample_remainder(rng: random.Random, level: int) -> dict:
    degree = 2 + level
    return {
        "coeffs": [_nonzero(rng, -5, 5)] + [rng.randint(-6, 6) for _ in range(degree)],
        "root": _nonzero(rng, -3, 3),
    }


def _build_remainder(p: dict) -> Built:
    coeffs, r = p["coeffs"], p["root"]
    x = sympy.Symbol("x")
    poly = sympy.Poly(coeffs, x)
    answer = sum(c * r ** (len(coeffs) - 1 - i) for i, c in enumerate(coeffs))
    check = sympy.rem(poly.as_expr(), x - r, x)
    question = (
        f"Find the remainder when $${_poly_latex(coeffs)}$$ is divided by ${sympy.latex(x - r)}$."
    )
    steps = f"By the remainder theorem the remainder is the value of the polynomial at $x = {r}$, which is ${answer}$."
    return Built(question, sympy.Integer(answer), check, steps)


# ---------------------------------------------------------------------------
# Prealgebra


def _sample_percent(rng: random.Random, level: int) -> dict:
    kind = rng.choice(["of", "change"] if level <= 3 else ["change", "reverse"])
    return {"kind": kind, "p": rng.choice(range(5, 100, 5 if level <= 2 else 1)), "q": rng.choice(range(5, 60, 5)),
            "base": rng.choice(range(20, 400, 20 if level <= 2 else 4)), "name": rng.choice(NAMES)}  # fmt: skip


def _build_percent(p: dict) -> Built:
    kind, pct, q, base, name = p["kind"], p["p"], p["q"], p["base"], p["name"]
    if kind == "of":
        answer = Fraction(pct * base, 100)
        check = sympy.Rational(pct, 100) * base
        question = f"What is ${pct}\\%$ of ${base}$? Express your answer as a common fraction if necessary."
        steps = f"${pct}\\%$ of ${base}$ is $\\frac{{{pct}}}{{100}}\\cdot {base} = {to_latex(_q(answer))}$."
    elif kind == "change":
        answer = Fraction(base) * (100 + pct) / 100 * (100 - q) / 100
        check = sympy.Integer(base) * (1 + sympy.Rational(pct, 100)) * (1 - sympy.Rational(q, 100))
        question = f"{name} buys a jacket priced at $\\$${base}. The price is first raised by ${pct}\\%$ and the new price is then reduced by ${q}\\%$. What is the final price in dollars? Express your answer as a common fraction if necessary."
        steps = f"The final price is ${base}\\cdot\\frac{{{100 + pct}}}{{100}}\\cdot\\frac{{{100 - q}}}{{100}} = {to_latex(_q(answer))}$."
    else:
        final = base
        answer = Fraction(final * 100, 100 + pct)
        check = sympy.solve(sympy.Symbol("y") * (1 + sympy.Rational(pct, 100)) - final)[0]
        question = f"After a ${pct}\\%$ increase, the population of {name}'s town is ${final}$. What was the population before the increase? Express your answer as a common fraction if necessary."
        steps = f"If the original is $y$, then $y\\cdot\\frac{{{100 + pct}}}{{100}} = {final}$, so $y = {to_latex(_q(answer))}$."
    return Built(question, _q(answer), check, steps)


def _sample_ratio(rng: random.Random, level: int) -> dict:
    parts = [rng.randint(1, 3 + level) for _ in range(2 if level <= 2 else 3)]
    scale = rng.randint(2, 10 * level)
    total = sum(parts) * scale
    if level >= 4:  # harder levels: shares are no longer whole dollars
        total += rng.randint(1, sum(parts) - 1)
    return {"parts": parts, "total": total, "names": rng.sample(NAMES, len(parts))}


def _build_ratio(p: dict) -> Built:
    parts, total, names = p["parts"], p["total"], p["names"]
    if len(set(parts)) == 1:
        raise DegenerateProblem("equal shares have no largest")
    largest = max(parts)
    answer = Fraction(total * largest, sum(parts))
    # Second route: all shares at once (s_i = t * part_i), checked to add up to the total.
    shares = sympy.Matrix([parts]).T * sympy.Rational(total, sum(parts))
    if sum(shares) != total:
        raise GeneratorError(f"shares {list(shares)} do not add up to {total}")
    check = max(shares)
    who = ", ".join(names[:-1]) + f" and {names[-1]}"
    ratio = ":".join(map(str, parts))
    question = f"{who} share ${total}$ dollars in the ratio ${ratio}$, respectively. How many dollars does the person with the largest share receive? Express your answer as a common fraction if necessary."
    steps = f"There are ${sum(parts)}$ equal parts of $\\frac{{{total}}}{{{sum(parts)}}}$ dollars each; the largest share has ${largest}$ parts, giving ${to_latex(_q(answer))}$."
    return Built(question, _q(answer), check, steps)


def _sample_mean(rng: random.Random, level: int) -> dict:
    count = 3 + level
    return {
        "known": [rng.randint(50, 100) for _ in range(count - 1)],
        "mean": rng.randint(60, 95),
        "name": rng.choice(NAMES),
    }


def _build_mean(p: dict) -> Built:
    known, mean, name = p["known"], p["mean"], p["name"]
    count = len(known) + 1
    answer = mean * count - sum(known)
    s = sympy.Symbol("s")
    check = sympy.solve(sympy.Eq((sum(known) + s) / count, mean), s)[0]
    question = f"{name}'s scores on the first {count - 1} quizzes were {', '.join(map(str, known))}. What score does {name} need on quiz {count} so that the mean of all {count} scores is exactly ${mean}$?"
    steps = f"The {count} scores must total ${count}\\cdot{mean} = {count * mean}$; the first {count - 1} total ${sum(known)}$, so the last score must be ${answer}$."
    return Built(question, sympy.Integer(answer), check, steps)


# ---------------------------------------------------------------------------
# Omni-MATH style: multi-step compositions at difficulty ~4-8


def _sample_crt_power(rng: random.Random, level: int) -> dict:
    moduli = rng.choice(
        [[7, 11, 13], [8, 125], [9, 11], [16, 25], [7, 9, 11], [11, 13, 17]][: 2 + level]
    )
    return {
        "base": rng.choice([2, 3, 5, 7, 11, 13, 17]),
        "tower": [rng.randint(2, 4), rng.randint(5, 6 + 3 * level)],
        "moduli": moduli,
    }


def _build_crt_power(p: dict) -> Built:
    a, (t, s), moduli = p["base"], p["tower"], p["moduli"]
    m = math.prod(moduli)
    exponent = t**s
    answer = pow(a, exponent, m)
    residues = [
        pow(a, exponent % int(sympy.totient(q)) if math.gcd(a, q) == 1 else exponent, q)
        for q in moduli
    ]
    check = sympy.ntheory.modular.crt(moduli, residues)[0]
    question = f"Find the remainder when ${a}^{{{t}^{{{s}}}}}$ is divided by ${m}$."
    product = " \\cdot ".join(map(str, moduli))
    parts = ", ".join(
        f"${a}^{{{t}^{{{s}}}}} \\equiv {r} \\pmod{{{q}}}$"
        for q, r in zip(moduli, residues, strict=True)
    )
    steps = (
        f"Since ${m} = {product}$, work modulo each factor, reducing the exponent "
        f"${t}^{{{s}}} = {exponent}$ modulo each totient (Euler's theorem): {parts}. "
        f"The Chinese remainder theorem combines these into ${answer}$."
    )
    return Built(question, sympy.Integer(answer), check, steps)


def _sample_power_divisors(rng: random.Random, level: int) -> dict:
    primes = sorted(rng.sample([2, 3, 5, 7, 11], 2 + (level >= 3)))
    return {
        "primes": primes,
        "exps": [rng.randint(1, 3) for _ in primes],
        "k": rng.randint(2, 2 + level // 2),
        "root": rng.choice([2, 3]),
    }


def _build_power_divisors(p: dict) -> Built:
    primes, exps, k, root = p["primes"], p["exps"], p["k"], p["root"]
    n = math.prod(q**e for q, e in zip(primes, exps, strict=True))
    answer = math.prod(k * e // root + 1 for e in exps)
    check = sum(
        1 for d in sympy.divisors(n**k, generator=True) if sympy.integer_nthroot(d, root)[1]
    )
    word = {2: "perfect squares", 3: "perfect cubes"}[root]
    question = f"How many positive divisors of ${n}^{{{k}}}$ are {word}?"
    steps = (
        f"${n}^{{{k}}} = {_factor_latex(n**k)}$. A divisor is one of the {word} when every exponent is a multiple of ${root}$, "
        f"so each prime contributes $\\lfloor \\text{{exponent}}/{root} \\rfloor + 1$ choices: the count is ${answer}$."
    )
    return Built(question, sympy.Integer(answer), sympy.Integer(check), steps)


def _sample_inclusion_exclusion(rng: random.Random, level: int) -> dict:
    a, b, c = rng.sample([2, 3, 4, 5, 6, 7, 9, 10, 11], 3)
    return {"a": a, "b": b, "c": c, "limit": rng.randint(200, 1000 * level)}


def _build_inclusion_exclusion(p: dict) -> Built:
    a, b, c, limit = p["a"], p["b"], p["c"], p["limit"]
    lcm = math.lcm

    def count(d: int) -> int:
        return limit // d

    either = count(a) + count(b) - count(lcm(a, b))
    with_c = count(lcm(a, c)) + count(lcm(b, c)) - count(lcm(a, b, c))
    answer = either - with_c
    check = sum(1 for t in range(1, limit + 1) if (t % a == 0 or t % b == 0) and t % c)
    question = f"How many integers $n$ with $1 \\le n \\le {limit}$ are divisible by ${a}$ or by ${b}$ but not by ${c}$?"
    steps = (
        f"By inclusion-exclusion, ${either}$ integers are divisible by ${a}$ or ${b}$; of these, "
        f"${with_c}$ are also divisible by ${c}$ (count multiples of $\\operatorname{{lcm}}({a},{c})$ and $\\operatorname{{lcm}}({b},{c})$, minus those of $\\operatorname{{lcm}}({a},{b},{c})$). The answer is ${answer}$."
    )
    return Built(question, sympy.Integer(answer), sympy.Integer(check), steps)


def _sample_bounded_sum(rng: random.Random, level: int) -> dict:
    parts = rng.randint(3, 3 + level // 2)
    cap = rng.randint(3, 5 + level)
    return {
        "parts": parts,
        "cap": cap,
        "total": rng.randint(cap + 1, parts * cap - 1),
        "positive": rng.random() < 0.5,
    }


def _build_bounded_sum(p: dict) -> Built:
    k, cap, n, positive = p["parts"], p["cap"], p["total"], p["positive"]
    low = 1 if positive else 0
    # shift to 0 <= y_i <= cap - low, sum = n - k*low
    span, target = cap - low, n - k * low
    answer = sum(
        (-1) ** j * math.comb(k, j) * math.comb(target - j * (span + 1) + k - 1, k - 1)
        for j in range(k + 1)
        if target - j * (span + 1) >= 0
    )
    if answer <= 0:
        raise DegenerateProblem("no solutions")
    coefficients = _poly_power([0] * low + [1] * (cap - low + 1), k)  # generating function
    check = coefficients[n] if n < len(coefficients) else 0
    names = ", ".join(f"x_{{{i}}}" for i in range(1, k + 1))
    question = f"How many ordered $({names})$ of integers with ${low} \\le x_i \\le {cap}$ for every $i$ satisfy $x_1 + \\dots + x_{{{k}}} = {n}$?"
    steps = (
        f"Put $y_i = x_i - {low}$, so $0 \\le y_i \\le {span}$ and the $y_i$ sum to ${target}$. Stars and bars with "
        f"inclusion-exclusion over the variables exceeding ${span}$ gives "
        f"$\\sum_j (-1)^j \\binom{{{k}}}{{j}}\\binom{{{target} - {span + 1}j + {k - 1}}}{{{k - 1}}} = {answer}$."
    )
    return Built(question, sympy.Integer(answer), check, steps)


def _sample_lattice(rng: random.Random, level: int) -> dict:
    m, n = rng.randint(3, 4 + level), rng.randint(3, 4 + level)
    blocked = sorted(
        {(rng.randint(1, m - 1), rng.randint(1, n - 1)) for _ in range(1 + (level >= 3))}
    )
    return {"m": m, "n": n, "blocked": [list(b) for b in blocked]}


def _build_lattice(p: dict) -> Built:
    m, n = p["m"], p["n"]
    blocked = [tuple(b) for b in p["blocked"]]

    def paths(a: tuple[int, int], b: tuple[int, int]) -> int:
        dx, dy = b[0] - a[0], b[1] - a[1]
        return math.comb(dx + dy, dx) if dx >= 0 and dy >= 0 else 0

    start, end = (0, 0), (m, n)
    answer = paths(start, end) - sum(paths(start, q) * paths(q, end) for q in blocked)
    if len(blocked) == 2:
        q1, q2 = blocked
        answer += paths(start, q1) * paths(q1, q2) * paths(q2, end) + paths(start, q2) * paths(
            q2, q1
        ) * paths(q1, end)
    grid = [[0] * (n + 1) for _ in range(m + 1)]
    for i in range(m + 1):
        for j in range(n + 1):
            if (i, j) in blocked:
                continue
            grid[i][j] = (
                1
                if (i, j) == start
                else (grid[i - 1][j] if i else 0) + (grid[i][j - 1] if j else 0)
            )
    points = " and ".join(f"$({x}, {y})$" for x, y in blocked)
    question = f"A path from $(0, 0)$ to $({m}, {n})$ consists of unit steps, each one unit right or one unit up. How many such paths avoid the point{'s' if len(blocked) > 1 else ''} {points}?"
    steps = (
        f"There are $\\binom{{{m + n}}}{{{m}}} = {paths(start, end)}$ paths in all. Subtract those through each forbidden point "
        f"(paths to it times paths from it){' and add back those through both' if len(blocked) > 1 else ''}, leaving ${answer}$."
    )
    return Built(question, sympy.Integer(answer), sympy.Integer(grid[m][n]), steps)


def _sample_triangle_radii(rng: random.Random, level: int) -> dict:
    while True:
        a, b, c = sorted(rng.randint(3, 8 + 3 * level) for _ in range(3))
        if a + b > c:
            return {
                "sides": [a, b, c],
                "ask": rng.choice(
                    ["inradius", "circumradius", "area"] if level >= 3 else ["area", "inradius"]
                ),
            }


def _build_triangle_radii(p: dict) -> Built:
    (a, b, c), ask = p["sides"], p["ask"]
    if a + b <= c:
        raise DegenerateProblem("not a triangle")
    s = sympy.Rational(a + b + c, 2)
    area = sympy.sqrt(s * (s - a) * (s - b) * (s - c))
    # Second route: area = (1/2) a b sin C with C from the law of cosines.
    cos_c = sympy.Rational(a * a + b * b - c * c, 2 * a * b)
    area_2 = sympy.Rational(a * b, 2) * sympy.sqrt(1 - cos_c**2)
    values = {
        "area": (area, area_2, "the area"),
        "inradius": (area / s, area_2 / s, "the radius of the inscribed circle"),
        "circumradius": (
            sympy.Integer(a * b * c) / (4 * area),
            sympy.Integer(c) / (2 * sympy.sqrt(1 - cos_c**2)),
            "the radius of the circumscribed circle",
        ),
    }
    answer, check, what = values[ask]
    answer = sympy.radsimp(answer)
    question = f"A triangle has side lengths ${a}$, ${b}$ and ${c}$. Find {what} of the triangle."
    steps = (
        f"The semiperimeter is $s = {to_latex(s)}$ and Heron's formula gives area $K = {to_latex(area)}$. "
        f"Then $r = K/s$ and $R = \\frac{{abc}}{{4K}}$, so {what} is ${to_latex(answer)}$."
    )
    return Built(question, answer, check, steps)


def _sample_recurrence(rng: random.Random, level: int) -> dict:
    return {
        "p": _nonzero(rng, -3, 3), "q": _nonzero(rng, -3, 3), "start": [rng.randint(0, 5), rng.randint(1, 5)],
        "index": rng.randint(20 * level, 100 * level), "mod": rng.choice([7, 9, 10, 11, 13, 100, 1000]),
    }  # fmt: skip


def _build_recurrence(p: dict) -> Built:
    a, b, (x0, x1), n, m = p["p"], p["q"], p["start"], p["index"], p["mod"]
    prev, cur = x0, x1
    for _ in range(n - 1):
        prev, cur = cur, (a * cur + b * prev) % m
    answer = cur % m
    step = sympy.Matrix([[a, b], [1, 0]]) ** (n - 1)
    check = (step * sympy.Matrix([x1, x0]))[0] % m
    question = f"A sequence satisfies $a_0 = {x0}$, $a_1 = {x1}$ and $a_{{n+2}} = {_linear_latex(a, 'a_{n+1}', 0)} {_signed(b).replace(' ', ' ', 1)}a_{{n}}$ for $n \\ge 0$. Find the remainder when $a_{{{n}}}$ is divided by ${m}$."
    steps = f"Reduce modulo ${m}$ at every step; the residues are eventually periodic, and iterating (or using the period) gives $a_{{{n}}} \\equiv {answer} \\pmod{{{m}}}$."
    return Built(question, sympy.Integer(answer), check, steps)


def _sample_power_sums(rng: random.Random, level: int) -> dict:
    return {
        "coeffs": [1] + [_nonzero(rng, -2 - level, 2 + level) for _ in range(3)],
        "power": rng.randint(3, 3 + level),
    }


def _build_power_sums(p: dict) -> Built:
    coeffs, k = p["coeffs"], p["power"]
    e = [1, -coeffs[1], coeffs[2], -coeffs[3]]
    sums = [sympy.Integer(3)]  # p_0 = number of roots
    for j in range(1, k + 1):  # Newton's identities
        term = sum((-1) ** (i - 1) * e[i] * sums[j - i] for i in range(1, min(j, 3) + 1))
        if j <= 3:
            term += (-1) ** (j - 1) * j * e[j] - (-1) ** (j - 1) * e[j] * sums[0]
        sums.append(sympy.Integer(term))
    answer = sums[k]
    companion = sympy.Matrix.companion(sympy.Poly(coeffs, sympy.Symbol("x")))
    check = (companion**k).trace()  # eigenvalues of the companion matrix are the roots
    question = f"Let $r$, $s$, $t$ be the roots of $${_poly_latex(coeffs)} = 0.$$ Compute $r^{{{k}}} + s^{{{k}}} + t^{{{k}}}$."
    steps = (
        f"With $e_1 = {e[1]}$, $e_2 = {e[2]}$, $e_3 = {e[3]}$, Newton's identities "
        f"$p_j = e_1 p_{{j-1}} - e_2 p_{{j-2}} + e_3 p_{{j-3}}$ give "
        + ", ".join(f"$p_{{{j}}} = {sums[j]}$" for j in range(1, k + 1))
        + "."
    )
    return Built(question, answer, check, steps)


def _sample_expected_extreme(rng: random.Random, level: int) -> dict:
    return {
        "dice": 2 if level <= 2 else 3,
        "sides": rng.randint(4, 6 + 3 * level),
        "ask": rng.choice(["max", "min", "range"]),
    }


def _build_expected_extreme(p: dict) -> Built:
    d, n, ask = p["dice"], p["sides"], p["ask"]
    # E[max] = sum_k P(max >= k); E[min] = sum_k P(min >= k).
    # E[range] = E[max] - E[min] by linearity.
    e_max = sum(1 - Fraction(k - 1, n) ** d for k in range(1, n + 1))
    e_min = sum(Fraction(n - k + 1, n) ** d for k in range(1, n + 1))
    answer = {"max": e_max, "min": e_min, "range": e_max - e_min}[ask]

    def statistic(roll: tuple[int, ...]) -> int:
        return {"max": max(roll), "min": min(roll), "range": max(roll) - min(roll)}[ask]

    rolls = list(itertools.product(range(1, n + 1), repeat=d))
    check = sympy.Rational(sum(statistic(r) for r in rolls), len(rolls))
    word = {2: "two", 3: "three"}[d]
    what = {
        "max": "the largest number rolled",
        "min": "the smallest number rolled",
        "range": "the difference between the largest and the smallest number rolled",
    }[ask]
    question = f"Roll {word} fair {n}-sided dice numbered $1$ through ${n}$. What is the expected value of {what}?"
    steps = (
        f"For the maximum $M$ and minimum $m$, $E[M] = \\sum_{{k=1}}^{{{n}}} P(M \\ge k) = {to_latex(_q(e_max))}$ "
        f"and $E[m] = \\sum_{{k=1}}^{{{n}}} P(m \\ge k) = {to_latex(_q(e_min))}$, using independence of the dice; "
        f"so the expected value of {what} is ${to_latex(_q(answer))}$."
    )
    return Built(question, _q(answer), check, steps)


def _sample_digit_count(rng: random.Random, level: int) -> dict:
    digits = 3 if level <= 2 else 4
    return {
        "digits": digits,
        "total": rng.randint(4, 9 * digits - 4),
        "no_zero": level >= 4 and rng.random() < 0.5,
    }


def _digit_sum_ways(digits: int, total: int, no_zero: bool) -> int:
    """Numbers of ``digits`` digits summing to ``total``, by a DP over digit positions."""
    ways = {0: 1}  # ways[s] = numbers so far with digit sum s
    for position in range(digits):
        low = 1 if (position == 0 or no_zero) else 0
        nxt: dict[int, int] = {}
        for s, w in ways.items():
            for digit in range(low, 10):
                nxt[s + digit] = nxt.get(s + digit, 0) + w
        ways = nxt
    return ways.get(total, 0)


def _digit_sum_inclusion_exclusion(digits: int, total: int, no_zero: bool) -> int:
    """The same count by inclusion-exclusion over digits exceeding their range, after
    shifting every digit down to start at 0 (the second route)."""
    spans = [9 - (1 if (i == 0 or no_zero) else 0) for i in range(digits)]
    target = total - sum(1 for i in range(digits) if i == 0 or no_zero)
    check = 0
    for chosen in itertools.product((False, True), repeat=digits):
        rest = target - sum(span + 1 for span, c in zip(spans, chosen, strict=True) if c)
        if rest >= 0:
            check += (-1) ** sum(chosen) * math.comb(rest + digits - 1, digits - 1)
    return check


def _build_digit_count(p: dict) -> Built:
    digits, total, no_zero = p["digits"], p["total"], p["no_zero"]
    answer = _digit_sum_ways(digits, total, no_zero)
    if answer == 0:
        raise DegenerateProblem("no such numbers")
    check = _digit_sum_inclusion_exclusion(digits, total, no_zero)
    extra = " none of whose digits is zero" if no_zero else ""
    question = (
        f"How many {digits}-digit positive integers{extra} have digits that sum to ${total}$?"
    )
    steps = f"Count digit strings by a running tally of the digit sum (the leading digit is at least 1{', all digits at least 1' if no_zero else ''}); the tally for sum ${total}$ is ${answer}$."
    return Built(question, sympy.Integer(answer), sympy.Integer(check), steps)


# ---------------------------------------------------------------------------
# Registry


def _skill(name, kind, generator, subject, sample, build, base=0.0) -> tuple[str, Skill]:
    return name, Skill(name, kind, generator, subject, sample, build, base)


SKILLS: dict[str, Skill] = dict(
    [
        _skill("linear_system_2x2", "math", "algebra", "Algebra", _sample_linear_system, _build_linear_system),
        _skill("quadratic_roots", "math", "algebra", "Algebra", _sample_quadratic, _build_quadratic),
        _skill("function_composition", "math", "algebra", "Algebra", _sample_composition, _build_composition),
        _skill("line_through_points", "math", "algebra", "Algebra", _sample_line, _build_line),
        _skill("gcd_lcm", "math", "number_theory", "Number Theory", _sample_gcd_lcm, _build_gcd_lcm),
        _skill("modular_power", "math", "number_theory", "Number Theory", _sample_modpow, _build_modpow),
        _skill("divisor_functions", "math", "number_theory", "Number Theory", _sample_divisors, _build_divisors),
        _skill("digit_sum_of_power", "math", "number_theory", "Number Theory", _sample_digit_sum, _build_digit_sum),
        _skill("linear_congruence", "math", "number_theory", "Number Theory", _sample_congruence, _build_congruence),
        _skill("committee_selection", "math", "counting_and_probability", "Counting & Probability", _sample_committee, _build_committee),
        _skill("word_arrangements", "math", "counting_and_probability", "Counting & Probability", _sample_arrangements, _build_arrangements),
        _skill("dice_sum_probability", "math", "counting_and_probability", "Counting & Probability", _sample_dice, _build_dice),
        _skill("urn_probability", "math", "counting_and_probability", "Counting & Probability", _sample_urn, _build_urn),
        _skill("pythagorean", "math", "geometry", "Geometry", _sample_pythagorean, _build_pythagorean),
        _skill("circle_measures", "math", "geometry", "Geometry", _sample_circle, _build_circle),
        _skill("similar_triangles", "math", "geometry", "Geometry", _sample_similar, _build_similar),
        _skill("triangle_area_coordinates", "math", "geometry", "Geometry", _sample_shoelace, _build_shoelace),
        _skill("trig_special_angles", "math", "precalculus", "Precalculus", _sample_trig, _build_trig),
        _skill("vector_products", "math", "precalculus", "Precalculus", _sample_vectors, _build_vectors),
        _skill("complex_arithmetic", "math", "precalculus", "Precalculus", _sample_complex, _build_complex),
        _skill("vieta_symmetric_sums", "math", "intermediate_algebra", "Intermediate Algebra", _sample_vieta, _build_vieta),
        _skill("integer_inequality", "math", "intermediate_algebra", "Intermediate Algebra", _sample_inequality, _build_inequality),
        _skill("polynomial_remainder", "math", "intermediate_algebra", "Intermediate Algebra", _sample_remainder, _build_remainder),
        _skill("percent", "math", "prealgebra", "Prealgebra", _sample_percent, _build_percent),
        _skill("ratio_shares", "math", "prealgebra", "Prealgebra", _sample_ratio, _build_ratio),
        _skill("missing_mean", "math", "prealgebra", "Prealgebra", _sample_mean, _build_mean),
        _skill("crt_power_tower", "omni_math", "number_theory", "Mathematics -> Number Theory -> Congruences", _sample_crt_power, _build_crt_power, 5.0),
        _skill("divisors_of_power", "omni_math", "number_theory", "Mathematics -> Number Theory -> Factorization", _sample_power_divisors, _build_power_divisors, 4.0),
        _skill("inclusion_exclusion_count", "omni_math", "combinatorics", "Mathematics -> Discrete Mathematics -> Combinatorics", _sample_inclusion_exclusion, _build_inclusion_exclusion, 4.0),
        _skill("bounded_compositions", "omni_math", "combinatorics", "Mathematics -> Discrete Mathematics -> Combinatorics", _sample_bounded_sum, _build_bounded_sum, 4.5),
        _skill("lattice_paths_avoiding", "omni_math", "combinatorics", "Mathematics -> Discrete Mathematics -> Combinatorics", _sample_lattice, _build_lattice, 4.0),
        _skill("triangle_radii", "omni_math", "geometry", "Mathematics -> Geometry -> Plane Geometry -> Triangulations", _sample_triangle_radii, _build_triangle_radii, 4.5),
        _skill("linear_recurrence_mod", "omni_math", "algebra", "Mathematics -> Algebra -> Sequences and Series", _sample_recurrence, _build_recurrence, 5.0),
        _skill("newton_power_sums", "omni_math", "algebra", "Mathematics -> Algebra -> Algebra -> Polynomial Operations", _sample_power_sums, _build_power_sums, 5.5),
        _skill("expected_extreme_dice", "omni_math", "probability", "Mathematics -> Applied Mathematics -> Statistics -> Probability -> Other", _sample_expected_extreme, _build_expected_extreme, 4.5),
        _skill("digit_sum_count", "omni_math", "combinatorics", "Mathematics -> Discrete Mathematics -> Combinatorics", _sample_digit_count, _build_digit_count, 4.0),
    ]
)  # fmt: skip
"""Every skill by name; ``fields["params"]["skill"]`` refers to these keys."""


# ---------------------------------------------------------------------------
# Driver


def stream_rng(*parts: object) -> random.Random:
    """An RNG seeded from a readable key (str seeding is stable across runs and platforms)."""
    return random.Random("/".join(map(str, parts)))


def split_of(text: str) -> str:
    """The split a question belongs to: a hash partition, so splits never share a question."""
    digest = int(hashlib.sha256(text.encode("utf-8")).hexdigest(), 16)
    return SPLITS[digest % len(SPLITS)]


def check_request(n: int, seed: int, split: str) -> None:
    """Validate the common arguments of the ``generate_*`` functions."""
    if isinstance(n, bool) or not isinstance(n, int) or n < 0:
        raise ValueError(f"n must be a non-negative int, got {n!r}")
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise ValueError(f"seed must be an int, got {seed!r}")
    if split not in SPLITS:
        raise ValueError(f"split must be one of {SPLITS}, got {split!r}")


def _difficulty(skill: Skill, level: int) -> float | int:
    if skill.kind == "math":
        return level
    return min(8.0, skill.base_difficulty + 0.5 * (level - 1))


def _realise(skill: Skill, params: dict, built: Built | None = None) -> tuple[Built, str]:
    """Build (unless ``built`` is given) and cross-check one problem.

    Raises GeneratorError when the answer is degenerate or disagrees with its check.
    """
    built = built if built is not None else skill.build(params)
    _assert_well_posed(built.answer)
    if not _same(built.answer, built.check):
        raise GeneratorError(
            f"{skill.name}: answer {built.answer!r} disagrees with check {built.check!r} for {params}"
        )
    return built, to_latex(built.answer)


def _make_problem(
    pid: str,
    skill: Skill,
    level: int,
    params: dict,
    split: str,
    seed: int,
    built: Built | None = None,
) -> Problem:
    built, latex = _realise(skill, params, built)
    metadata: dict[str, Any] = {
        "source": SOURCE,
        "generator": skill.generator,
        "skill": skill.name,
        "difficulty": _difficulty(skill, level),
        "level": level,
        "split": split,
        "seed": seed,
        "license": LICENSE,
    }
    if skill.kind == "math":
        metadata["topic"] = skill.subject
    else:
        metadata["domain"] = [skill.subject]
    return Problem(
        id=pid,
        domain=skill.kind,
        question=built.question,
        answer=latex,
        solution=f"{built.steps} Therefore the answer is $\\boxed{{{latex}}}$",
        fields={"params": {"skill": skill.name, "level": level, "values": params}},
        metadata=metadata,
    )


def _draw(
    skill_choice: Callable[[random.Random], Skill],
    level_choice: Callable[[random.Random, Skill], int],
    key: tuple,
    split: str,
    taken: set[str],
) -> tuple[Skill, int, dict, Built]:
    """Draw parameters until the question is well posed, in ``split`` and not in ``taken``."""
    for attempt in range(MAX_ATTEMPTS):
        rng = stream_rng(*key, attempt)
        skill = skill_choice(rng)
        level = level_choice(rng, skill)
        params = skill.sample(rng, level)
        try:
            built = skill.build(params)
        except DegenerateProblem:
            continue
        if split_of(built.question) == split and built.question not in taken:
            return skill, level, params, built
    raise GeneratorError(f"no valid problem after {MAX_ATTEMPTS} draws for {key}")


def _generate(kind: str, n: int, seed: int, split: str) -> list[Problem]:
    check_request(n, seed, split)
    skills = [s for s in SKILLS.values() if s.kind == kind]
    taken: set[str] = set()
    problems = []
    for index in range(n):
        skill, level, params, built = _draw(
            lambda rng: rng.choice(skills),
            lambda rng, _s: rng.randint(1, 5),
            (kind, split, seed, index),
            split,
            taken,
        )
        problem = _make_problem(
            f"{kind}/procedural/{split}/{seed}/{index}", skill, level, params, split, seed, built
        )
        taken.add(problem.question)
        problems.append(problem)
    return problems


def generate_math(n: int, seed: int = 0, split: str = "test") -> list[Problem]:
    """``n`` MATH-style problems (seven subjects, levels 1-5) with checked LaTeX answers.

    Deterministic in ``(n, seed, split)``; problem ``i`` does not depend on ``n``.
    """
    return _generate("math", n, seed, split)


def generate_omni_math(n: int, seed: int = 0, split: str = "test") -> list[Problem]:
    """``n`` Omni-MATH-style multi-step problems (difficulty 4-8, ``domain`` labels)."""
    return _generate("omni_math", n, seed, split)


def _params_of(problem: Problem) -> tuple[Skill, int, dict]:
    params = problem.fields.get("params") if isinstance(problem.fields, dict) else None
    if (
        problem.metadata.get("source") != SOURCE
        or not isinstance(params, dict)
        or params.get("skill") not in SKILLS
    ):
        raise ValueError(f"problem {problem.id!r} was not made by the intbench math generators")
    return SKILLS[params["skill"]], params["level"], params["values"]


def rebuild_math(problem: Problem) -> Problem:
    """Regenerate a generated math/omni_math problem from ``fields["params"]`` alone."""
    skill, level, values = _params_of(problem)
    return _make_problem(
        problem.id, skill, level, values, problem.metadata["split"], problem.metadata["seed"]
    )


def make_math_variant(problem: Problem, seed: int) -> Problem:
    """A new problem of the same skill and level with fresh parameters (see ``make_variant``)."""
    skill, level, _ = _params_of(problem)
    split = problem.metadata["split"]
    skill_, level_, params, built = _draw(
        lambda _rng: skill,
        lambda _rng, _s: level,
        ("variant", problem.id, seed),
        split,
        {problem.question},
    )
    variant = _make_problem(
        f"{problem.id}/variant/{seed}",
        skill_,
        level_,
        params,
        split,
        problem.metadata["seed"],
        built,
    )
    variant.metadata["variant_of"] = problem.id
    variant.metadata["variant_seed"] = seed
    return variant
