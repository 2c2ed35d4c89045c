"""A small, bounded reader of LaTeX-style expressions, for cheap leak screening.

The math leak detector grades candidate spans with the math verifier, whose
symbolic step (sympy, in a worker process) costs tens of milliseconds per span.
This module decides most spans in process instead:

* :func:`exact_value` gives the exact rational value of plain arithmetic
  (``3*17``, ``\\frac{103}{2}``, ``2^{-1}``, ``5!``, ``\\binom{7}{2}``), so the
  verifier's fast path can grade the value;
* :func:`sample_values` evaluates an expression with variables, surds and
  ``\\pi`` at fixed sample points.  Two expressions whose samples differ
  cannot be equal, so such a span is cleared without the verifier; only spans
  that agree with the reference everywhere are sent to it;
* :func:`log10_magnitude` bounds what neither can evaluate, a power tower
  (``9^{9^{9}}``, ``10^{10^{100}}``): its ``log10`` in floating point, so a tower
  far from the reference's size is cleared without the verifier (whose sympy
  step could only time out on it).

Parsing is one pass over at most a few hundred characters; powers, factorials
and intermediate values are bounded, so nothing here can hang.  Anything the
reader does not know (relations, lists, ``%``, functions) gives ``None``:
"cannot tell", never "different".
"""

from __future__ import annotations

import cmath
import math
import re
from fractions import Fraction

MAX_EXPONENT = 64
MAX_FACTORIAL = 100
MAX_BITS = 512
SAMPLE_POINTS = 3
RELATIVE_TOLERANCE = 1e-9

_TOKEN = re.compile(r"\s*(\\[A-Za-z]+|[0-9]+(?:\.[0-9]+)?|\.[0-9]+|[A-Za-z]|[-+*/^!(){}\[\]])")
_DROPPED = re.compile(r"\\(?:left|right|displaystyle|[,;!: ])(?![A-Za-z])")
_DIGIT_GROUPING = re.compile(r"(?<=[0-9])\s+(?=[0-9])")
_ALIASES = {"\\cdot": "*", "\\times": "*", "\\div": "/", "\\dfrac": "\\frac", "\\tfrac": "\\frac"}
_ATOM_START = re.compile(r"[0-9A-Za-z({\[]|\\(?:frac|sqrt|binom|pi)$")
_CLOSERS = {"(": ")", "{": "}", "[": "]"}


class Unreadable(Exception):
    """The span is not an expression this reader knows."""


class Fragment(Unreadable):
    """The span stops before its expression does (``\\frac{1}``, ``\\sqrt``)."""


def parse(span: str) -> tuple:
    """The expression tree of ``span``; raises :class:`Unreadable`."""
    # Spaces between digits group them, as the verifier reads them (32 349 is 32349).
    span = _DIGIT_GROUPING.sub("", _DROPPED.sub(" ", span))
    tokens, position = [], 0
    for match in _TOKEN.finditer(span):
        if match.start() != position:
            raise Unreadable(span)
        tokens.append(_ALIASES.get(match.group(1), match.group(1)))
        position = match.end()
    if not tokens or span[position:].strip():
        raise Unreadable(span)
    tree, end = _Parser(tokens).sum(0)
    if end != len(tokens):
        raise Unreadable(span)
    return tree


class _Parser:
    def __init__(self, tokens: list[str]) -> None:
        self.tokens = tokens

    def _at(self, i: int) -> str:
        return self.tokens[i] if i < len(self.tokens) else ""

    def _need(self, i: int) -> str:
        """The token at ``i``, which the expression needs: none there is a fragment."""
        if i >= len(self.tokens):
            raise Fragment(i)
        return self.tokens[i]

    def sum(self, i: int) -> tuple[tuple, int]:
        tree, i = self.product(i)
        while self._at(i) in ("+", "-"):
            right, j = self.product(i + 1)
            tree, i = ("add" if self._at(i) == "+" else "sub", tree, right), j
        return tree, i

    def product(self, i: int) -> tuple[tuple, int]:
        tree, i = self.unary(i)
        while True:
            token = self._at(i)
            if token in ("*", "/"):
                right, i = self.unary(i + 1)
                tree = ("mul" if token == "*" else "div", tree, right)
            elif token and _ATOM_START.match(token):  # juxtaposition: 2x, (x-1)(x+1)
                right, i = self.power(i)
                tree = ("mul", tree, right)
            else:
                return tree, i

    def unary(self, i: int) -> tuple[tuple, int]:
        if self._at(i) in ("+", "-"):
            operand, j = self.unary(i + 1)
            return (operand if self._at(i) == "+" else ("neg", operand)), j
        return self.power(i)

    def power(self, i: int) -> tuple[tuple, int]:
        base, i = self.postfix(i)
        if self._at(i) == "^":
            if self._at(i + 1) in ("+", "-"):
                exponent, i = self.unary(i + 1)
            else:
                exponent, i = self.power(i + 1)
            return ("pow", base, exponent), i
        return base, i

    def postfix(self, i: int) -> tuple[tuple, int]:
        tree, i = self.atom(i)
        while self._at(i) == "!":
            tree, i = ("fact", tree), i + 1
        return tree, i

    def group(self, i: int) -> tuple[tuple, int]:
        """A LaTeX argument: ``{...}``, or one digit or letter (``\\frac12``)."""
        token = self._need(i)
        if token == "{":
            return self.atom(i)
        if re.fullmatch(r"[0-9]|[A-Za-z]", token):
            return self.atom(i)
        raise Unreadable(token)

    def atom(self, i: int) -> tuple[tuple, int]:
        token = self._at(i)
        if token in _CLOSERS:
            tree, j = self.sum(i + 1)
            if self._at(j) != _CLOSERS[token]:
                raise Unreadable(token)
            return tree, j + 1
        if token[:1].isdigit() or token[:1] == ".":
            return ("num", Fraction(token)), i + 1
        if len(token) == 1 and token.isalpha():
            return ("var", token), i + 1
        if token == "\\pi":
            return ("pi",), i + 1
        if token == "\\sqrt":
            operand, j = self.group(i + 1)
            return ("sqrt", operand), j
        if token == "\\frac" and re.fullmatch(r"[0-9]{2,}", self._at(i + 1)):
            digits = self._at(i + 1)  # \frac12: the first digit over the rest
            return ("div", ("num", Fraction(digits[0])), ("num", Fraction(digits[1:]))), i + 2
        if token in ("\\frac", "\\binom"):
            first, j = self.group(i + 1)
            second, j = self.group(j)
            return ("div" if token == "\\frac" else "binom", first, second), j
        raise Unreadable(token)


# --- exact values ---------------------------------------------------------------
class _Inexact(Exception):
    pass


def _bounded(value: Fraction) -> Fraction:
    if max(value.numerator.bit_length(), value.denominator.bit_length()) > MAX_BITS:
        raise _Inexact
    return value


def _integer(value: Fraction, limit: int) -> int:
    if value.denominator != 1 or not 0 <= value <= limit:
        raise _Inexact
    return int(value)


def _exact(tree: tuple) -> Fraction:
    kind = tree[0]
    if kind == "num":
        return tree[1]
    if kind in ("var", "pi"):
        raise _Inexact
    if kind in _EXACT_UNARY:
        return _EXACT_UNARY[kind](_exact(tree[1]))
    left, right = _exact(tree[1]), _exact(tree[2])
    return _EXACT_BINARY.get(kind, _exact_div)(left, right)


def _exact_sqrt(value: Fraction) -> Fraction:
    if value < 0:
        raise _Inexact
    root = Fraction(math.isqrt(value.numerator), math.isqrt(value.denominator))
    if root * root != value:
        raise _Inexact
    return root


def _exact_pow(left: Fraction, right: Fraction) -> Fraction:
    if right.denominator != 1 or abs(right) > MAX_EXPONENT or (left == 0 and right < 0):
        raise _Inexact
    return _bounded(left ** int(right))


def _exact_div(left: Fraction, right: Fraction) -> Fraction:
    if right == 0:
        raise _Inexact
    return _bounded(left / right)


_EXACT_UNARY = {
    "neg": lambda value: -value,
    "sqrt": _exact_sqrt,
    "fact": lambda value: Fraction(math.factorial(_integer(value, MAX_FACTORIAL))),
}
# Operators of two operands; any other kind is a division.
_EXACT_BINARY = {
    "binom": lambda left, right: Fraction(math.comb(_integer(left, 10**6), _integer(right, 10**6))),
    "pow": _exact_pow,
    "add": lambda left, right: _bounded(left + right),
    "sub": lambda left, right: _bounded(left - right),
    "mul": lambda left, right: _bounded(left * right),
}


def is_fragment(span: str) -> bool:
    """Whether ``span`` ends before a command has its arguments (``\\frac{1}``): a piece of
    an expression, which no verifier reads as an answer."""
    try:
        parse(span)
    except Fragment:
        return True
    except (Unreadable, RecursionError, ValueError):
        return False
    return False


def exact_value(span: str) -> Fraction | None:
    """The exact value of a variable-free rational expression, else ``None``."""
    try:
        return _exact(parse(span))
    except (Unreadable, _Inexact, RecursionError, ValueError):
        return None


# --- sampled values -------------------------------------------------------------
def _point(letter: str, k: int) -> complex:
    """A fixed, irregular value for ``letter`` at sample ``k`` (no small-integer coincidences)."""
    return complex(0.6180339887 + 0.7071067811 * k + 0.0377 * (ord(letter) - 96), 0.0)


def _numeric(tree: tuple, k: int) -> complex:
    kind = tree[0]
    if kind == "num":
        return complex(tree[1])
    if kind == "var":
        return _point(tree[1], k)
    if kind == "pi":
        return complex(math.pi)
    if kind == "neg":
        return -_numeric(tree[1], k)
    if kind == "sqrt":
        return cmath.sqrt(_numeric(tree[1], k))
    if kind == "fact":
        value = _numeric(tree[1], k)
        return complex(math.factorial(_integer(Fraction(round(value.real)), MAX_FACTORIAL)))
    left, right = _numeric(tree[1], k), _numeric(tree[2], k)
    if kind == "binom":
        n, r = (_integer(Fraction(round(v.real)), 10**6) for v in (left, right))
        return complex(math.comb(n, r))
    if kind == "pow":
        if abs(right) > MAX_EXPONENT:
            raise _Inexact
        return left**right
    if kind == "add":
        return left + right
    if kind == "sub":
        return left - right
    if kind == "mul":
        return left * right
    return left / right


def sample_values(span: str) -> tuple[complex, ...] | None:
    """The expression's values at :data:`SAMPLE_POINTS` fixed points, or ``None``."""
    try:
        tree = parse(span)
        return tuple(_numeric(tree, k) for k in range(SAMPLE_POINTS))
    except (Unreadable, _Inexact, RecursionError, ValueError, ZeroDivisionError, OverflowError):
        return None


def samples_differ(a: tuple[complex, ...], b: tuple[complex, ...]) -> bool:
    """Whether two sample tuples show different values (beyond rounding)."""
    for x, y in zip(a, b, strict=True):
        if not (cmath.isfinite(x) and cmath.isfinite(y)):
            return x != y
        if abs(x - y) > RELATIVE_TOLERANCE * max(1.0, abs(x), abs(y)):
            return True
    return False


# --- magnitudes -----------------------------------------------------------------
def _float(sign: int, magnitude: float) -> float:
    if sign == 0:
        return 0.0
    return sign * (math.inf if magnitude > 300 else 10.0**magnitude)


def _signed_log10(tree: tuple) -> tuple[int, float]:
    """``(sign, log10 |value|)`` of a variable-free tree in floating point, towers too
    (``9^{9^{9}}`` is about ``10^(3.7e8)``); zero is ``(0, -inf)``.  Raises
    :class:`_Inexact` where it cannot be told (variables, a sum of two huge terms that
    may cancel, a negative base to a huge power)."""
    kind = tree[0]
    if kind == "num":
        return _sign_and_log10(tree[1])
    if kind == "pi":
        return 1, math.log10(math.pi)
    if kind in ("neg", "sqrt", "fact"):
        return _unary_log10(kind, _signed_log10(tree[1]))
    if kind not in ("mul", "div", "pow", "add", "sub"):
        raise _Inexact  # variables, binomials
    left, right = _signed_log10(tree[1]), _signed_log10(tree[2])
    if kind == "mul":
        return left[0] * right[0], left[1] + right[1]
    if kind == "div":
        return _quotient_log10(left, right)
    if kind == "pow":
        return _power_log10(left, right)
    if kind == "sub":
        right = -right[0], right[1]
    return _sum_log10(left, right)


def _sign_and_log10(value: float) -> tuple[int, float]:
    """``(sign, log10 |value|)`` of a number that fits a float; zero is ``(0, -inf)``."""
    return (value > 0) - (value < 0), math.log10(abs(value)) if value else -math.inf


def _unary_log10(kind: str, operand: tuple[int, float]) -> tuple[int, float]:
    """:func:`_signed_log10` of ``-x``, ``\\sqrt{x}`` or ``x!`` from that of ``x``."""
    sign, magnitude = operand
    if kind == "neg":
        return -sign, magnitude
    if kind == "sqrt":
        if sign < 0:
            raise _Inexact
        return sign, magnitude / 2
    n = _float(sign, magnitude)  # fact
    if not 0 <= n < 1e300 or n != int(n):
        raise _Inexact
    return 1, math.lgamma(n + 1) / math.log(10)


def _quotient_log10(dividend: tuple[int, float], divisor: tuple[int, float]) -> tuple[int, float]:
    """:func:`_signed_log10` of ``a / b`` from those of ``a`` and ``b`` (nonzero)."""
    if divisor[0] == 0:
        raise _Inexact
    return dividend[0] * divisor[0], dividend[1] - divisor[1]


def _power_log10(base: tuple[int, float], power: tuple[int, float]) -> tuple[int, float]:
    """:func:`_signed_log10` of ``a^b`` from those of ``a`` and ``b``; a negative base
    needs an integer exponent, zero a nonnegative one."""
    sign, magnitude = base
    exponent = _float(*power)
    if exponent == 0 or (sign != 0 and magnitude == 0 and sign > 0):
        return 1, 0.0  # x^0, 1^x
    if sign == 0:
        if exponent < 0:
            raise _Inexact
        return 0, -math.inf
    integral = math.isfinite(exponent) and exponent == int(exponent)
    if sign < 0 and not integral:
        raise _Inexact
    odd = integral and int(exponent) % 2 == 1
    return (-1 if sign < 0 and odd else 1), magnitude * exponent


def _sum_log10(left: tuple[int, float], right: tuple[int, float]) -> tuple[int, float]:
    """:func:`_signed_log10` of ``a + b`` from those of ``a`` and ``b``: computed where both
    fit a float, the larger term where one dominates, else :class:`_Inexact`."""
    (s1, m1), (s2, m2) = left, right
    if max(m1, m2) < 300:  # both fit a float: the sum is computed
        return _sign_and_log10(_float(s1, m1) + _float(s2, m2))
    if abs(m1 - m2) > 1:  # one term dominates
        return (s1, m1) if m1 > m2 else (s2, m2)
    raise _Inexact


def log10_magnitude(span: str) -> float | None:
    """``log10 |value|`` of a variable-free expression, however large (a power tower), or
    ``None`` when it cannot be told.  Cheap: floating point on the parse tree."""
    try:
        return _signed_log10(parse(span))[1]
    except (Unreadable, _Inexact, RecursionError, ValueError, OverflowError, ZeroDivisionError):
        return None
