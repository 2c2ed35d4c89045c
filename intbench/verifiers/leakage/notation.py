"""Rewrite the many ways of writing a number into the one the math verifier reads.

A teacher can state ``1/2`` as ``½``, ``０.５``, ``one half``, ``50 percent``,
``٠.٥`` or ``−0.5``; :func:`plain_math` turns every such form into ASCII
LaTeX-style notation (``1/2``, ``0.5``, ``50%``, ``-0.5``, ``x^{2}``) so that
the leak detector and the tutor checker see one notation.  Every step is a
single left-to-right pass, so the cost is linear in the text's length.
"""

from __future__ import annotations

import re
import unicodedata
from functools import lru_cache

_SUPERSCRIPTS = str.maketrans("⁰¹²³⁴⁵⁶⁷⁸⁹⁺⁻", "0123456789+-")
_SUBSCRIPTS = str.maketrans("₀₁₂₃₄₅₆₇₈₉", "0123456789")
_SUPERSCRIPT_RUN = re.compile("[⁰¹²³⁴⁵⁶⁷⁸⁹⁺⁻]+")
_SUBSCRIPT_RUN = re.compile("[₀₁₂₃₄₅₆₇₈₉]+")
# Symbols NFKC leaves alone (or maps to something the verifier does not read).
_SYMBOLS = str.maketrans(
    {
        "\u2212": "-",  # minus sign
        "\u2010": "-",
        "\u2011": "-",
        "\u2012": "-",
        "\u2013": "-",  # en dash
        "\u2014": "-",  # em dash
        "\ufe63": "-",
        "\u00d7": "*",  # multiplication sign
        "\u00b7": "*",  # middle dot
        "\u22c5": "*",  # dot operator
        "\u2219": "*",
        "\u2715": "*",
        "\u00f7": "/",
        "\u2215": "/",
        "\u2044": "/",  # fraction slash (NFKC writes ½ as 1⁄2)
        "\u03c0": "\\pi ",
        "\u221e": "\\infty ",
        "\u2192": " -> ",
        "\u27f6": " -> ",
        "\u21d2": " -> ",
        "\u27f9": " -> ",
    }
)
_NON_ASCII_DIGIT = re.compile(r"(?![0-9])\d")
_INVISIBLE = re.compile("[\u00ad\u200b-\u200f\u2060-\u2064\ufeff]")  # soft hyphen, zero-width marks
_SQRT_SIGN = re.compile(r"(?:√|(?<!\\)\bsqrt)\s*(\d+(?:\.\d+)?|\(([^()\n]{0,60})\)|[a-zA-Z])")
_LATEX_DELIMITERS = re.compile(r"\$+|\\[()\[\]]")
_VULGAR_FRACTION = re.compile("([0-9])?([\u00bc-\u00be\u2150-\u215e])")

# --- number words -----------------------------------------------------------
_UNITS = {
    word: value
    for value, word in enumerate(
        "zero one two three four five six seven eight nine ten eleven twelve thirteen "
        "fourteen fifteen sixteen seventeen eighteen nineteen".split()
    )
}
_TENS = {
    word: 10 * (i + 2)
    for i, word in enumerate("twenty thirty forty fifty sixty seventy eighty ninety".split())
}
_SCALES = {"hundred": 100, "thousand": 10**3, "million": 10**6, "billion": 10**9}
_DENOMINATORS = {
    "half": 2, "halves": 2, "third": 3, "thirds": 3, "quarter": 4, "quarters": 4,
    "fourth": 4, "fourths": 4, "fifth": 5, "fifths": 5, "sixth": 6, "sixths": 6,
    "seventh": 7, "sevenths": 7, "eighth": 8, "eighths": 8, "ninth": 9, "ninths": 9,
    "tenth": 10, "tenths": 10, "hundredth": 100, "hundredths": 100,
}  # fmt: skip
_OPERATOR_WORDS = {
    "plus": "+", "minus": "-", "negative": "-", "times": "*", "over": "/",
    "squared": "^{2}", "cubed": "^{3}", "percent": "%",
}  # fmt: skip
# Words, hyphens, and runs of anything else (one token per digit run keeps the scan short).
_ANY_NUMBER_WORD = re.compile(
    r"\b(?:" + "|".join([*_UNITS, *_TENS, *_DENOMINATORS, *_OPERATOR_WORDS]) + r")\b",
    re.IGNORECASE,
)
_WORD = re.compile(r"[A-Za-z]+|-|[^\sA-Za-z-]+", re.ASCII)


def _cardinal(words: list[str], start: int) -> tuple[int, int] | None:
    """The integer spelled by ``words[start:]`` ("one hundred and five"): ``(value, end)``."""
    total = current = 0
    i, seen = start, False
    while i < len(words):
        word = words[i]
        if word in _UNITS:
            current += _UNITS[word]
        elif word in _TENS:
            current += _TENS[word]
        elif word == "hundred" and seen:
            current *= 100
        elif word in _SCALES and seen:
            total += current * _SCALES[word]
            current = 0
        elif word in ("and", "-") and seen and i + 1 < len(words) and _is_number_word(words[i + 1]):
            i += 1
            continue
        else:
            break
        seen = True
        i += 1
    return (total + current, i) if seen else None


def _is_number_word(word: str) -> bool:
    return word in _UNITS or word in _TENS


def _spoken_number(words: list[str], i: int) -> tuple[str, int] | None:
    """The numeral for the number phrase at ``words[i]``, and where the phrase ends."""
    if words[i] == "a" and i + 1 < len(words) and words[i + 1] in _DENOMINATORS:
        return f"1/{_DENOMINATORS[words[i + 1]]}", i + 2
    cardinal = _cardinal(words, i)
    if cardinal is None:
        return None
    value, end = cardinal
    spoken = _spoken_fraction(words, value, end) or _spoken_decimal(words, value, end)
    if spoken is not None:
        return spoken
    # A lone "one" before a word is a pronoun or article ("one way to see it").
    if words[i] == "one" and end == i + 1 and end < len(words) and words[end].isalpha():
        return None
    return str(value), end


def _spoken_fraction(words: list[str], value: int, end: int) -> tuple[str, int] | None:
    """``value`` over the denominator word at ``end`` ("three quarters", "one-half")."""
    if end + 1 < len(words) and words[end] == "-" and words[end + 1] in _DENOMINATORS:
        end += 1  # "one-half"
    if end < len(words) and words[end] in _DENOMINATORS:
        return f"{value}/{_DENOMINATORS[words[end]]}", end + 1
    return None


def _spoken_decimal(words: list[str], value: int, end: int) -> tuple[str, int] | None:
    """``value`` and the digit words after a "point" at ``end`` ("three point one four")."""
    if end + 1 < len(words) and words[end] == "point" and words[end + 1] in _UNITS:
        decimals = []
        end += 1
        while end < len(words) and words[end] in _UNITS and _UNITS[words[end]] < 10:
            decimals.append(str(_UNITS[words[end]]))
            end += 1
        return f"{value}.{''.join(decimals)}", end
    return None


def _spell_out_numbers(text: str) -> str:
    """Replace spelled-out numbers and operator words by numerals and symbols."""
    if not _ANY_NUMBER_WORD.search(text):
        return text  # the usual case, decided by one regex scan
    tokens = list(_WORD.finditer(text))
    words = [m.group().lower() for m in tokens]
    pieces, last, i = [], 0, 0
    while i < len(tokens):
        found = _spoken_number(words, i)
        if found is not None:
            numeral, end = found
        elif words[i] in _OPERATOR_WORDS and _next_is_number(words, i):
            numeral, end = _OPERATOR_WORDS[words[i]], i + 1
        elif words[i] in ("squared", "cubed", "percent"):
            numeral, end = _OPERATOR_WORDS[words[i]], i + 1
        else:
            i += 1
            continue
        pieces.append(text[last : tokens[i].start()])
        pieces.append(numeral)
        # An operator word is glued to its number: "minus eighteen" is -18, not a "- " bullet.
        glued = numeral in "+-*/" and end < len(tokens)
        last = tokens[end].start() if glued else tokens[end - 1].end()
        i = end
    pieces.append(text[last:])
    return "".join(pieces)


def _next_is_number(words: list[str], i: int) -> bool:
    """Whether an operator word at ``i`` is followed by a number (digits or words)."""
    if i + 1 >= len(words):
        return False
    following = words[i + 1]
    return following[0].isdigit() or _is_number_word(following) or following == "a"


def fold(text: str) -> str:
    """Unicode compatibility folding (full-width forms, ligatures) without invisible characters,
    so that ``pi\\u200bano`` and ``ｐｉａｎｏ`` read as ``piano``."""
    return _INVISIBLE.sub("", unicodedata.normalize("NFKC", text))


@lru_cache(maxsize=16)  # the tutor checker reads one message with several rules
def plain_math(text: str) -> str:
    """``text`` with every number and operator written in ASCII math notation.

    Superscripts become ``^{...}``, full-width and other scripts' digits ASCII
    digits, unicode minus signs and dashes ``-``, ``×``/``·`` ``*``, ``√x``
    ``\\sqrt{x}``, spelled-out numbers numerals ("twenty-one" -> ``21``,
    "one half" -> ``1/2``, "fifty percent" -> ``50%``), and ``$``/``\\(``
    delimiters spaces.
    """
    text = _SUPERSCRIPT_RUN.sub(lambda m: "^{" + m.group().translate(_SUPERSCRIPTS) + "}", text)
    text = _SUBSCRIPT_RUN.sub(lambda m: "_{" + m.group().translate(_SUBSCRIPTS) + "}", text)
    # "3½" is three and a half, not the 31/2 that NFKC would make of it.
    text = _VULGAR_FRACTION.sub(
        lambda m: (
            (m.group(1) + "+" if m.group(1) else "") + unicodedata.normalize("NFKC", m.group(2))
        ),
        text,
    )
    text = fold(text).translate(_SYMBOLS)
    text = _NON_ASCII_DIGIT.sub(lambda m: str(unicodedata.decimal(m.group(), 0)), text)
    text = _SQRT_SIGN.sub(lambda m: "\\sqrt{" + (m.group(2) or m.group(1)) + "}", text)
    text = _LATEX_DELIMITERS.sub(" ", text)
    return _spell_out_numbers(text)
