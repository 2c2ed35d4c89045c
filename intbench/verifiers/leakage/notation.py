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
from fractions import Fraction
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
# "score" (20) and "gross" (144) count only after a number ("three score and ten").
_SCALES = {"hundred": 100, "thousand": 10**3, "million": 10**6, "billion": 10**9, "dozen": 12,
           "score": 20, "gross": 144}  # fmt: skip
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
_ANY_NUMBER_WORD = re.compile(
    r"\b(?:" + "|".join([*_UNITS, *_TENS, *_DENOMINATORS, *_OPERATOR_WORDS, *_SCALES]) + r")\b",
    re.IGNORECASE,
)
# LaTeX commands, words, hyphens, and runs of anything else (one token per digit run keeps
# the scan short).  A command is one token: the "times" of \times is no number word.
_WORD = re.compile(r"\\[A-Za-z]+|[A-Za-z]+|-|[^\sA-Za-z-]+", re.ASCII)


def _cardinal(words: list[str], start: int) -> tuple[int, int] | None:
    """The integer spelled by ``words[start:]`` ("one hundred and five"): ``(value, end)``.

    English grammar bounds a cardinal: a unit follows only a tens word ("twenty-one"),
    "hundred" or a scale, so "one nine four" is three numbers (digits read out), and
    "and" joins only after "hundred" or a scale ("two and three" is two numbers)."""
    total = current = 0
    i, last = start, None  # last: the kind of the previous number word
    while i < len(words):
        step = _cardinal_word(words, i, last, total, current)
        if step is not None:
            last, total, current = step
        elif not _joins_cardinal(words, i, last):
            break
        i += 1
    return (total + current, i) if last is not None else None


def _cardinal_word(
    words: list[str], i: int, last: str | None, total: int, current: int
) -> tuple[str, int, int] | None:
    """``words[i]`` read as the next word of a cardinal after a word of kind ``last``:
    ``(kind, total, current)`` with the running sum of completed scales and the part
    after them, or ``None`` where it does not go on the cardinal."""
    word = words[i]
    if last is None and _starts_with_one(words, i):
        return "unit", total, 1  # "a hundred and five", "a dozen", "a score"
    if word == "dozen" and last is None:
        return "scale", total, 12
    if word in _UNITS and _unit_may_follow(word, last):
        return "unit", total, current + _UNITS[word]
    if word in _TENS and last in (None, "hundred", "scale"):
        return "tens", total, current + _TENS[word]
    if word == "hundred" and last in ("unit", "tens"):
        return "hundred", total, current * 100
    if word in _SCALES and word != "hundred" and last is not None:
        return "scale", total + current * _SCALES[word], 0
    return None


def _starts_with_one(words: list[str], i: int) -> bool:
    """Whether ``words[i]`` is an "a" that counts one of the scale after it ("a dozen")."""
    return words[i] == "a" and _scale_after_a(words, i + 1)


def _unit_may_follow(word: str, last: str | None) -> bool:
    """Whether the unit ``word`` goes on a cardinal after a word of kind ``last``: first,
    after "hundred" or a scale, or a single digit after a tens word ("twenty-one")."""
    return last in (None, "hundred", "scale") or (last == "tens" and _UNITS[word] < 10)


def _joins_cardinal(words: list[str], i: int, last: str | None) -> bool:
    """Whether ``words[i]`` joins two parts of one cardinal before another number word:
    "and" after "hundred" or a scale, a hyphen after a tens word ("twenty-one")."""
    word = words[i]
    joiner = (word == "and" and last in ("hundred", "scale")) or (word == "-" and last == "tens")
    return joiner and i + 1 < len(words) and _is_number_word(words[i + 1])


def _scale_after_a(words: list[str], i: int) -> bool:
    """Whether ``words[i]`` is a scale that "a" counts ("a dozen"); "a score of 80" and "a
    gross mistake" use the word otherwise."""
    if i >= len(words) or words[i] not in _SCALES:
        return False
    if words[i] in ("score", "gross"):
        following = words[i + 1] if i + 1 < len(words) else ""
        return not following.isalpha() or following == "and"
    return True


def _is_number_word(word: str) -> bool:
    return word in _UNITS or word in _TENS


def _spoken_number(words: list[str], i: int) -> tuple[str, int] | None:
    """The numeral for the number phrase at ``words[i]``, and where the phrase ends.

    Halves count: "half a dozen" is 6, "two and a half" 5/2, "two and a half dozen" 30,
    "a dozen and a half" 18."""
    spoken = _fraction_of_one(words, i)
    if spoken is not None:
        return spoken
    cardinal = _cardinal(words, i)
    if cardinal is None:
        return None
    value, end = cardinal
    spoken = (
        _and_a_half(words, value, end)
        or _spoken_fraction(words, value, end)
        or _spoken_decimal(words, value, end)
    )
    if spoken is not None:
        return spoken
    if _pronoun_one(words, i, end):
        return None
    return str(value), end


def _fraction_of_one(words: list[str], i: int) -> tuple[str, int] | None:
    """A fraction of one at ``words[i]``: "a third" is 1/3, "half a dozen" 6."""
    if words[i] == "a" and i + 1 < len(words) and words[i + 1] in _DENOMINATORS:
        return f"1/{_DENOMINATORS[words[i + 1]]}", i + 2
    if words[i : i + 2] == ["half", "a"] and _scale_after_a(words, i + 2):
        return _numeral(Fraction(_SCALES[words[i + 2]], 2)), i + 3
    return None


def _and_a_half(words: list[str], value: int, end: int) -> tuple[str, int] | None:
    """``value`` and the "and a half" at ``end``: "two and a half" is 5/2, "two and a half
    dozen" 30, "a dozen and a half" 18 (half of the cardinal's last scale)."""
    if words[end : end + 3] != ["and", "a", "half"]:
        return None
    if end + 3 < len(words) and words[end + 3] in _SCALES:  # "two and a half dozen"
        return _numeral((value + Fraction(1, 2)) * _SCALES[words[end + 3]]), end + 4
    scale = _SCALES.get(words[end - 1], 1)  # "a dozen and a half": half of the last scale
    return _numeral(value + Fraction(scale, 2)), end + 3


def _pronoun_one(words: list[str], i: int, end: int) -> bool:
    """Whether a lone "one" at ``words[i]`` is a pronoun or article ("one way to see it"):
    it stands before a word that is neither another digit ("one nine four") nor an
    operator on a number ("one over sixteen")."""
    if not (words[i] == "one" and end == i + 1 and end < len(words) and words[end].isalpha()):
        return False
    operator = words[end] in _OPERATOR_WORDS and _next_is_number(words, end)
    return not (operator or _is_number_word(words[end]))


def _numeral(value: Fraction) -> str:
    return (
        str(value.numerator) if value.denominator == 1 else f"{value.numerator}/{value.denominator}"
    )


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
    return _spell_out_numbers(_plain_symbols(text))


def _plain_symbols(text: str) -> str:
    """:func:`plain_math` but for number words."""
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
    return _LATEX_DELIMITERS.sub(" ", text)


# --- the leak detector's reading: plain_math and every other way to mask a number ------
# Letters of other scripts that look like Latin ones: "х^2-1" with a Cyrillic х is x^2-1
# to a reader, "мilκ" is milk.  Only look-alikes: a Greek α or π is a symbol of its own
# and stays.
_CONFUSABLES = str.maketrans(
    "аеорсухіјѕԁԛԝѵһӏпкмтвнκνυϲɡıАВЕКМНОРСТХУІЈЅԚԜΑΒΕΖΗΙΚΜΝΟΡΤΥΧο",
    "aeopcyxijsdqwvhlnkmtbhkvucgiABEKMHOPCTXYIJSQWABEZHIKMNOPTYXo",
)
# LaTeX written inside a JSON string has its backslashes doubled ("\\frac{1}{2}").
_DOUBLED_BACKSLASH = re.compile(r"\\\\(?=[A-Za-z(\[{%$])")
# Markdown emphasis and code marks around a number are no part of it (**6**, ```6```).
_MARKDOWN = re.compile(
    r"(?<![\w)\]}])(\*\*|__)(?=\S)([^\n]{1,200}?)(?<=\S)\1(?![\w(\[{])|```[A-Za-z]*|`"
)
# LaTeX that dresses a number without changing it.  Words in \text{...} are prose (a unit,
# "and"); \! is the thousands glue of 10,\!000, other spacing commands are spaces.
_LATEX_WORDS = re.compile(
    r"\\(?:text|textrm|textbf|textit|mathrm|mathbf|mathit|mbox|operatorname)\s*\{([^{}]*)\}"
)
_LATEX_SIGNS = {"\\%": "%", "\\times": "*", "\\cdot": "*", "\\ast": "*", "\\div": "/",
                "\\dfrac": "\\frac", "\\tfrac": "\\frac", "\\!": "", "\\$": " "}  # fmt: skip
_LATEX_SIGN = re.compile(
    r"\\(?:%|\$|!|(?:times|cdot|ast|div|dfrac|tfrac)(?![A-Za-z]))"
    r"|\\(?:left|right|displaystyle|quad|qquad|[,;: ])(?![A-Za-z])|~"
)
_DEGREES = re.compile(r"\^\s*\{?\s*\\circ\s*\}?")  # 30^\circ is 30 degrees, no power
# 0.58\overline{3}: a repeating decimal, read as the fraction it is.
_REPEATING = re.compile(r"(?<![\d.])(\d*)\.(\d*)\\overline\s*\{(\d+)\}")
# 1.2e1, 1.2E+01: a power of ten the exact reader evaluates (a full stop may end it).
_SCIENTIFIC = re.compile(
    r"(?<![\w.])([0-9]+(?:\.[0-9]+)?|\.[0-9]+)[eE]([-+]?[0-9]{1,3})(?!\w|\.[0-9])"
)
# The letter O for a zero inside a numeral ("1O", "2O5"), not in "H2O".
_LETTER_ZERO = re.compile(
    r"(?<![A-Za-z0-9])([1-9][0-9]*)([Oo0]*[Oo][Oo0]*)(?![A-Za-z])|(?<=[0-9])[Oo](?=[0-9])"
)
# Upper-case Roman numerals of two or more letters (a lone I is a pronoun, X a variable);
# in a message that speaks of Roman numerals, any numeral, lower case too ("ix").
_ROMAN_NUMERAL = r"(M{0,4})(CM|CD|D?C{0,3})(XC|XL|L?X{0,3})(IX|IV|V?I{0,3})(?![\w])"
_ROMAN = re.compile(r"(?<![\w\\])(?=[MDCLXVI]{2,}(?![\w]))" + _ROMAN_NUMERAL)
_ANY_ROMAN = re.compile(r"(?<![\w\\])(?=[MDCLXVI])" + _ROMAN_NUMERAL, re.IGNORECASE)
_ROMAN_MENTION = re.compile(r"\broman\b", re.IGNORECASE)
_ROMAN_VALUES = {"M": 1000, "D": 500, "C": 100, "L": 50, "X": 10, "V": 5, "I": 1}
_PI_WORD = re.compile(r"(?<![A-Za-z\\])pi(?![A-Za-z])")  # 26*pi
# "141 and 43/50" (after the number words are read: "two and three quarters").
_MIXED_NUMBER = re.compile(r"(?<![\w./])([0-9]+)\s+and\s+([0-9]+)\s*/\s*([0-9]+)(?![\w/]|\.[0-9])")
# Number words of the other languages text2num reads, in this order.  English has its
# own reader above (it also reads fractions and operator words).
FOREIGN_LANGUAGES = ("es", "fr", "it", "pt", "de", "nl", "da")
# English words that text2num reads as a number in one of them ("once" is Spanish 11),
# found by running it over the words of the offline problem statements: alone they stay
# words; inside a longer number ("dix-sept") or after a sign word ("menos once") they
# are read.
_ENGLISH_HOMONYMS = frozenset("once fire seize mil non ni ti none elf cent cents sept due".split())
# ... unless the sentence names an answer in that language ("La respuesta es once"), or
# the word stands alone in an answer's place ("The answer: once.", "You get elf.").
ANSWER_WORDS = {
    "es": {"respuesta", "resultado", "solución"}, "fr": {"réponse", "résultat", "solution"},
    "it": {"risposta", "risultato", "soluzione"}, "pt": {"resposta", "resultado", "solução"},
    "de": {"antwort", "ergebnis", "lösung"}, "nl": {"antwoord", "resultaat", "oplossing"},
    "da": {"svar", "svaret", "resultat", "resultatet", "løsning", "løsningen"},
}  # fmt: skip
_ANSWER_SLOT_BEFORE = re.compile(
    r"(?:\b(?:answer|result|solution)\b[^.\n]{0,12}|\b(?:it\s+is|it's|get|gives?|equals?)|[:=])\W*$",
    re.IGNORECASE,
)
_ANSWER_SLOT_AFTER = re.compile(r"\s*(?:[.!?]|$)")
# Numbers below 3 are read alone only in these words: the others are articles too ("un",
# "ein", "en") or English words ("to" is Danish 2), read as homonyms are.
_SMALL_NUMBER_WORDS = frozenset(
    "uno dos cero deux zéro due dois duas eins zwei zwo twee nul".split()
)
# A sign word before a number ("menos doce", "moins un", "minus eins").
_MINUS_WORDS = frozenset("menos moins meno minus min negativo negativ négatif".split())
# English number words: the English reader reads them (so "six" stays for "six hundred").
_ENGLISH_NUMBER_WORDS = frozenset([*_UNITS, *_TENS, *_SCALES])
# Italian elides cento's o before otto/ottanta ("novecentottantuno"); text2num reads
# only the full form ("novecento ottantuno").
_ITALIAN_ELISION = re.compile(r"cent(?=ott)", re.IGNORECASE)
_FOREIGN_TOKEN = re.compile(r"\w+|[^\w\s]")
_LETTERS = re.compile(r"[^\W\d_]+")
_CHUNK = 2000  # text2num is read a sentence at a time, so no call sees an unbounded text


def unmask(text: str) -> str:
    """:func:`fold`, and letters of other scripts that look like Latin ones made Latin."""
    return fold(text).translate(_CONFUSABLES)


def _roman_value(match: re.Match[str]) -> str:
    numeral = match.group().upper()
    values = [_ROMAN_VALUES[letter] for letter in numeral]
    total = sum(
        -v if i + 1 < len(values) and v < values[i + 1] else v for i, v in enumerate(values)
    )
    return str(total)


def _letter_zero(match: re.Match[str]) -> str:
    if match.group(1) is None:
        return "0"
    return match.group(1) + re.sub("[Oo]", "0", match.group(2))


def _repeating_value(match: re.Match[str]) -> str:
    whole, fixed, period = match.groups()
    head = int(whole + fixed or "0")
    value = Fraction(int(whole + fixed + period) - head, 10 ** len(fixed) * (10 ** len(period) - 1))
    return f"\\frac{{{value.numerator}}}{{{value.denominator}}}"


def _mixed_number(match: re.Match[str]) -> str:
    whole, numerator, denominator = match.groups()
    if int(numerator) >= int(denominator):
        return match.group()
    return f"{whole}+{numerator}/{denominator}"


def _latex_words(match: re.Match[str]) -> str:
    """Words of ``\\text{...}`` as prose; one upright letter is a unit (``6\\,\\mathrm{m}``):
    a no-break space before it keeps it off the number."""
    words = match.group(1)
    if len(words.strip()) == 1 and words.strip().isalpha():
        return "\u00a0" + words.strip() + " "
    return " " + words + " "


class _Word:
    """A token as text2num's ``find_numbers`` reads it."""

    __slots__ = ("word",)

    def __init__(self, word: str) -> None:
        self.word = word

    def text(self) -> str:
        return self.word

    def nt_separated(self, previous: object) -> bool:
        return False

    def not_a_number_part(self) -> bool:
        return False


def _foreign_numbers(text: str) -> str:
    """Cardinals written in words of :data:`FOREIGN_LANGUAGES` ("doce", "zwölf") as digits."""
    from text_to_num import find_numbers  # imported here: only the leak detector needs it

    pieces, start = [], 0
    while start < len(text):
        # Sentences (or bounded slices of a long one) are read one at a time.
        end = min(len(text), start + _CHUNK)
        cut = max(text.rfind(". ", start, end), text.rfind("\n", start, end))
        end = cut + 1 if end < len(text) and cut > start else end
        pieces.append(_foreign_chunk(text[start:end], find_numbers))
        start = end
    return "".join(pieces)


@lru_cache(maxsize=1 << 16)
def _number_word(word: str, language: str) -> bool:
    """Whether text2num reads ``word`` alone as (part of) a number in ``language``."""
    from text_to_num import alpha2digit

    return alpha2digit(word, language, threshold=0) != word


def _foreign_chunk(chunk: str, find_numbers) -> str:
    """One sentence with its foreign number words read (see the rules at the constants)."""
    chunk = _ITALIAN_ELISION.sub("cento ", chunk)
    words = {word.lower() for word in _LETTERS.findall(chunk)}
    for language in FOREIGN_LANGUAGES:
        # Most text has no number word of the language: decided word by word, from a cache.
        if any(_number_word(word, language) for word in words):
            answers = bool(words & ANSWER_WORDS[language])
            chunk = _foreign_language_numbers(chunk, language, answers, find_numbers)
    return chunk


def _foreign_language_numbers(chunk: str, language: str, answers: bool, find_numbers) -> str:
    """``chunk`` with the numbers text2num finds in ``language`` written as digits, those
    :func:`_reads_foreign_number` keeps; ``answers``: the sentence names an answer in it."""
    matches = list(_FOREIGN_TOKEN.finditer(chunk))
    tokens = [_Word(m.group()) for m in matches]
    pieces, last = [], 0
    for occurrence in find_numbers(tokens, language, 0):
        first, final = occurrence.start, occurrence.end - 1
        signed = first > 0 and matches[first - 1].group().lower() in _MINUS_WORDS
        if not _reads_foreign_number(occurrence, matches, chunk, signed, answers):
            continue
        begin = matches[first - 1 if signed else first].start()
        pieces += [chunk[last:begin], _foreign_numeral(occurrence.value, signed)]
        last = matches[final].end()
    return "".join(pieces) + chunk[last:] if pieces else chunk


def _reads_foreign_number(
    occurrence, matches: list[re.Match[str]], chunk: str, signed: bool, answers: bool
) -> bool:
    """Whether a number text2num found is read: no ordinal ("nono" is ninth in Italian),
    not English number words alone (the English reader reads them) unless after a sign
    word, and an ambiguous one (:func:`_ambiguous_foreign`) only after a sign word, in a
    sentence naming an answer in the language, or in an answer's place."""
    first, final = occurrence.start, occurrence.end - 1
    said = [m.group().lower() for m in matches[first : final + 1] if m.group().isalpha()]
    if occurrence.is_ordinal or (set(said) <= _ENGLISH_NUMBER_WORDS and not signed):
        return False
    if signed or answers or not _ambiguous_foreign(said, occurrence.value):
        return True
    return _in_answer_slot(chunk, matches[first].start(), matches[final].end())


def _ambiguous_foreign(said: list[str], value: float) -> bool:
    """Whether the words ``said`` may be no number: an English homonym alone ("once"), or a
    number below 3 in other words than :data:`_SMALL_NUMBER_WORDS` ("un", "ein")."""
    homonym = len(said) == 1 and said[0] in _ENGLISH_HOMONYMS
    return homonym or (value < 3 and not set(said) <= _SMALL_NUMBER_WORDS)


def _in_answer_slot(chunk: str, start: int, end: int) -> bool:
    """Whether ``chunk[start:end]`` stands in an answer's place ("The answer: once.")."""
    before = chunk[max(0, start - 40) : start]
    return bool(_ANSWER_SLOT_BEFORE.search(before) and _ANSWER_SLOT_AFTER.match(chunk, end))


def _foreign_numeral(value: float, signed: bool) -> str:
    """``value`` in digits (no ``.0`` on an integer), negated after a sign word."""
    numeral = str(int(value)) if value == int(value) else str(value)
    return "-" + numeral if signed else numeral


@lru_cache(maxsize=16)
def recovery_text(text: str) -> str:
    """``text`` as the leak detector reads it: :func:`plain_math` after :func:`unmask`, with
    LaTeX dress removed (doubled backslashes, ``\\text{ cm}`` is the word cm, ``\\times`` is
    ``*``, ``\\%`` is ``%``, ``30^\\circ`` is 30°), markdown marks removed, repeating
    decimals as fractions, scientific notation as a power of ten, a letter O inside a
    numeral as 0, Roman numerals, number words of other languages before English ones
    (so "vingt-six" is read whole), ``pi`` as ``\\pi`` and "2 and 3/4" as ``2+3/4``."""
    text = _DOUBLED_BACKSLASH.sub(r"\\", text)
    # _plain_symbols folds (after reading superscripts, which folding would make digits).
    text = _plain_symbols(text.translate(_CONFUSABLES)).translate(_CONFUSABLES)
    text = _MARKDOWN.sub(lambda m: f" {m.group(2) or ''} ", text)
    text = _LATEX_WORDS.sub(_latex_words, text)
    text = _DEGREES.sub("°", text)
    text = _LATEX_SIGN.sub(lambda m: _LATEX_SIGNS.get(m.group(), " "), text)
    text = _REPEATING.sub(_repeating_value, text)
    text = _SCIENTIFIC.sub(lambda m: f"{m.group(1)}*10^{{{m.group(2)}}}", text)
    text = _LETTER_ZERO.sub(_letter_zero, text)
    text = (_ANY_ROMAN if _ROMAN_MENTION.search(text) else _ROMAN).sub(_roman_value, text)
    text = _spell_out_numbers(_foreign_numbers(text))
    text = _PI_WORD.sub(r"\\pi ", text)
    return _MIXED_NUMBER.sub(_mixed_number, text)
