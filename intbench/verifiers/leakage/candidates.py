"""The candidate answers a message holds, for the math leak detector.

The message, in :func:`~.notation.recovery_text` notation, is cut into tokens
(numbers, single-letter variables, LaTeX commands, operators, brackets,
relations, separators).  Words, line breaks and long gaps end a *run* of math
tokens.  A candidate is a window of at most :data:`MAX_WINDOW` tokens of a run
that stands on its own: each end of it is the run's end, a relation, a comma or
semicolon, sentence punctuation, a bracket that encloses a group or closes
nothing (``12 (see above)``), or an operator left dangling at the run's end.
A window that is an operand of an operator next to it is part of a longer
expression, not a candidate: the 5 of ``x^2 - 5x + 6``, the 3 of ``\\frac{3}{4}``,
the 12 of ``f(12)``.

Longer stretches are candidates only whole: each run, each side of its relations
and each item of their lists, however long (``1+1+...+1``), when it holds no
variable: the detector reads those by exact arithmetic alone.

Readings put together from parts are added, marked *assembled* (never written
whole, so never a copy of the statement): a fraction named by parts, in one
sentence or two ("The numerator is 3. The denominator is 4." as ``3/4``); digits
named in turn ("the first digit is 1. The second is 9." as 19); coordinates named
in turn ("The first coordinate is -1. The second coordinate is -2." as
``(-1, -2)``).  Digits split by commas are read together (``1,2`` as 12), marked
*derived*: a list of small numbers is common, so the detector needs
answer-position evidence for it.  When
the message says the answer "is negative" apart, each of these is read negated
too.  A value the message picks out of a list it gives ("one of 9, 11, 10: the
third one") is a candidate marked *pointed*: the pointer is answer-position
evidence.

Each token starts at most :data:`MAX_WINDOW` windows, so the count of
candidates, and the work, is linear in the message's length.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

MAX_WINDOW = 32
"""Most tokens in a window candidate; longer stretches count only as whole runs, sides, items."""

_RELATION_COMMANDS = r"le|ge|leq|geq|lt|gt|ne|neq|approx|to|implies|Rightarrow|mapsto"
_TOKEN = re.compile(
    # 1,024 is one number, and so is a dotted numeral such as 1.2.3 (a version, no value).
    r"(?P<num>[0-9]{1,3}(?:,[0-9]{3})+(?![0-9])(?:\.[0-9]+)?|[0-9]+(?:\.[0-9]+)*"
    r"|(?<![0-9A-Za-z.])\.[0-9]+)"
    rf"|(?P<rel>->|<=|>=|[=<>≤≥≠≈]|\\(?:{_RELATION_COMMANDS})(?![A-Za-z]))"
    r"|(?P<box>\\(?:boxed|fbox)(?![A-Za-z]))"
    r"|(?P<cmd>\\[A-Za-z]+|(?:sqrt|sin|cos|tan|log|ln|exp)(?![A-Za-z]))"
    r"|(?P<word>[^\W\d_]+(?:['’][^\W\d_]+)+|[^\W\d_]{2,})"  # it's is a word, not s
    r"|(?P<var>[A-Za-z])"
    r"|(?P<op>[-+*/^_]|\\pm)"
    r"|(?P<open>[(\[{])|(?P<close>[)\]}])"
    r"|(?P<sep>[,;])|(?P<punct>[.:?])|(?P<bang>!)|(?P<pct>%)|(?P<pipe>\|)"
    r"|(?P<gap>[ \t]{1,3}(?![ \t]))"
    r"|(?P<other>[\s\S])"
)
_BREAKS = {"word", "other"}
_ATOM_COMMANDS = {"\\pi", "\\infty"}
_STARTS = {"num", "var", "cmd", "open", "pipe"}
_ENDS = {"num", "var", "close", "bang", "pct", "pipe"}
_PAIRS = {"(": ")", "[": "]", "{": "}"}
# A list marker at a line's start ("1.", "(2)", "- ") is no number of the message.
_LIST_MARKER = re.compile(r"^[ \t]*(?:\(?[0-9]{1,2}[.)]|[-*•])[ \t]+", re.MULTILINE)
# (The two parts may be two sentences: "The numerator is 3. The denominator is 4.")
# A part is a number or an expression written without spaces ("9\\sqrt{51}").
_PART = r"(-?(?:[0-9]+(?![0-9A-Za-z\\{])|[0-9A-Za-z\\{}^()+*/]*[0-9}][0-9A-Za-z\\{}^()+*/]*))"
_FRACTION_PARTS = re.compile(
    rf"\bnumerator\b\W{{0,3}}(?:is\s+|of\s+)?{_PART}[^\n]{{0,48}}?\bdenominator\b\W{{0,3}}(?:is\s+|of\s+)?{_PART}"
    rf"|\bdenominator\b\W{{0,3}}(?:is\s+|of\s+)?{_PART}[^\n]{{0,48}}?\bnumerator\b\W{{0,3}}(?:is\s+|of\s+)?{_PART}",
    re.IGNORECASE,
)
# Coordinates named in turn ("The first coordinate is -1. The second coordinate is -2.").
_COORDINATE = re.compile(
    r"\b(first|second|third|fourth|x|y|z)[\s-]*(?:coordinate|component|entry)\s+(?:is|=|:)\s*"
    r"([^\s,;]+(?:\s*[-+*/^]\s*[^\s,;]+)*?)\s*(?=[.,;]?\s|[.,;]?$)",
    re.IGNORECASE,
)
_COORDINATE_ORDER = {"first": 0, "second": 1, "third": 2, "fourth": 3, "x": 0, "y": 1, "z": 2}
# Digits named in turn ("The first digit is 1. The second is 9."; "starts with the digits
# 1. Right after them come the digits 94"): each number after a digit or order word.
_DIGIT_PART = re.compile(
    r"\b(?:digits?|first|second|third|fourth|fifth|sixth|seventh|eighth|ninth|tenth|next|"
    r"then|last|after)\b[^0-9\n]{0,24}?(?<![\w.])([0-9]+)(?![\w]|\.[0-9])",
    re.IGNORECASE,
)
_DIGIT_PART_GAP = 40  # most characters between two parts of one chain
# The sign said apart ("It is negative; its digits are 1, 8").
_NEGATIVE = re.compile(r"\b(?:is|it's|be)\s+negative\b|\bnegative\s*[.;:]", re.IGNORECASE)
# One of several values, pointed at ("one of 9, 11, 10: the third one").
_ORDINALS = {"first": 0, "second": 1, "third": 2, "fourth": 3, "fifth": 4, "sixth": 5,
             "last": -1}  # fmt: skip
_POINTED = re.compile(
    r"\b(?:one\s+of|among|between|either)\s+(?P<items>[^:;\n]{1,160}?)\s*[:;,.\-]?\s*"
    r"(?:(?:it\s+is|it's|namely|pick|take)\s+)?the\s+(?P<which>" + "|".join(_ORDINALS) + r")\b",
    re.IGNORECASE,
)
_ITEM_SPLIT = re.compile(r"\s*(?:,|\bor\b|\band\b)\s*")


@dataclass(frozen=True)
class Candidate:
    """A candidate answer: its text, where it lies in the read message, how it was read."""

    text: str
    start: int
    end: int
    derived: bool = False  # joined digits: a reading, not the text as written
    whole: bool = False  # longer than a window: a whole run, side or item
    pointed: bool = False  # the message points at it as the answer (answer-position evidence)
    assembled: bool = False  # put together from parts: never written whole, so never a copy


class _Token:
    __slots__ = ("kind", "text", "start", "end")

    def __init__(self, kind: str, text: str, start: int, end: int) -> None:
        self.kind, self.text, self.start, self.end = kind, text, start, end


def _runs(text: str, variables: frozenset[str]) -> Iterator[list[_Token]]:
    """Maximal runs of math tokens; a short word of the reference's variables (``2xy``) is
    read letter by letter, any other word ends the run."""
    run: list[_Token] = []
    for match in _TOKEN.finditer(text):
        kind, value = match.lastgroup or "", match.group()
        if kind == "word" and len(value) <= 3 and set(value) <= variables:
            run.extend(_Token("var", c, match.start() + k, match.start() + k + 1)
                       for k, c in enumerate(value))  # fmt: skip
        elif kind in _BREAKS:
            if run:
                yield run
            run = []
        elif kind != "gap":
            run.append(_Token(kind, value, match.start(), match.end()))
    if run:
        yield run


def _groups(run: list[_Token]) -> tuple[list[bool], list[int]]:
    """For each token: whether it is a bracket that bounds a window (it encloses a group that
    is no argument or factor, or matches nothing), and its bracket depth step."""
    bounds = [False] * len(run)
    steps = [0] * len(run)
    stack: list[int] = []
    for k, token in enumerate(run):
        if token.kind == "open":
            stack.append(k)
        elif token.kind == "close":
            if stack and _PAIRS[run[stack[-1]].text] == token.text:
                opener = stack.pop()
                steps[opener], steps[k] = 1, -1
                bounds[opener] = bounds[k] = _standalone_group(run, opener, k)
            else:
                bounds[k] = True  # closes nothing in this run
    for k in stack:
        bounds[k] = True  # opens nothing that closes in this run
    return bounds, steps


def _standalone_group(run: list[_Token], opener: int, closer: int) -> bool:
    """A bracketed group that is not a command's argument, a power, a product or a call."""
    before = run[opener - 1] if opener else None
    after = run[closer + 1] if closer + 1 < len(run) else None
    if before is not None and (
        before.kind in ("num", "var", "cmd", "close", "bang", "pct") or before.text in "^_"
    ):
        return False
    return after is None or not (
        after.kind in ("num", "var", "cmd", "open", "bang", "pct") or after.text in "^_"
    )


def _left_bound(run: list[_Token], bounds: list[bool], i: int) -> bool:
    if i == 0:
        return True
    before = run[i - 1]
    return before.kind in ("rel", "sep", "punct", "box") or bounds[i - 1]


def _right_bound(run: list[_Token], bounds: list[bool], j: int) -> bool:
    if j == len(run):
        return True
    after = run[j]
    if after.kind in ("rel", "sep", "punct") or bounds[j]:
        return True
    # An operator with nothing after it lost its operand ("12 *" before a word), and a
    # "!" that ends the run may end a sentence ("The answer is 5!"): both readings count.
    return after.kind in ("op", "bang") and j + 1 == len(run)


def _ends_well(token: _Token) -> bool:
    return token.kind in _ENDS or token.text in _ATOM_COMMANDS


def _starts_well(token: _Token) -> bool:
    return token.kind in _STARTS or token.text in ("-", "+")


def candidates(text: str, variables: frozenset[str] = frozenset()) -> Iterator[Candidate]:
    """Every candidate of ``text`` (in :func:`~.notation.recovery_text` notation), in order;
    the same text may come more than once, at different places."""
    text = _LIST_MARKER.sub(lambda m: " " * len(m.group()), text)
    composed: list[Candidate] = []
    for run in _runs(text, variables):
        yield from _windows(text, run)
        yield from _whole_pieces(text, run)
        composed.extend(_joined_digits(text, run))
    composed.extend(_composed(text))
    negative = _NEGATIVE.search(text) is not None
    for candidate in composed:
        yield candidate
        if negative and not candidate.text.startswith("-"):
            yield Candidate("-" + candidate.text, candidate.start, candidate.end,
                            derived=candidate.derived, assembled=candidate.assembled)  # fmt: skip
    yield from _pointed(text)


def _composed(text: str) -> Iterator[Candidate]:
    """Readings put together from parts: a fraction named by parts, coordinates or digits
    named in turn."""
    yield from _named_fractions(text)
    yield from _named_coordinates(text)
    yield from _named_digits(text)


def _named_fractions(text: str) -> Iterator[Candidate]:
    """A fraction named by its parts ("the numerator is 3 and the denominator 4")."""
    for match in _FRACTION_PARTS.finditer(text):
        numerator = match.group(1) or match.group(4)
        denominator = match.group(2) or match.group(3)
        if not (numerator.lstrip("-").isdigit() and denominator.isdigit()):
            numerator, denominator = f"({numerator})", f"({denominator})"
        yield Candidate(f"{numerator}/{denominator}", match.start(), match.end(), assembled=True)


def _named_coordinates(text: str) -> Iterator[Candidate]:
    """The tuple of coordinates named in turn, from the first on, when two or more are."""
    coordinates: dict[int, re.Match[str]] = {}
    for match in _COORDINATE.finditer(text):
        coordinates.setdefault(_COORDINATE_ORDER[match.group(1).lower()], match)
    count = next(k for k in range(len(coordinates) + 1) if k not in coordinates)
    if count > 1:
        parts = [coordinates[k] for k in range(count)]
        tuple_text = "(" + ", ".join(m.group(2).strip() for m in parts) + ")"
        yield Candidate(tuple_text, parts[0].start(), parts[-1].end(), assembled=True)


def _named_digits(text: str) -> Iterator[Candidate]:
    """Digits named in turn, close together and called digits, read as one numeral."""
    chains: list[list[re.Match[str]]] = []
    for match in _DIGIT_PART.finditer(text):
        if chains and match.start() - chains[-1][-1].end() <= _DIGIT_PART_GAP:
            chains[-1].append(match)
        else:
            chains.append([match])
    for chain in chains:
        if len(chain) > 1 and any("digit" in m.group().lower() for m in chain):
            digits = "".join(m.group(1) for m in chain)
            yield Candidate(digits, chain[0].start(1), chain[-1].end(1), assembled=True)


def _pointed(text: str) -> Iterator[Candidate]:
    """The value a message picks out of a list it gives ("one of 9, 11, 10: the third")."""
    for match in _POINTED.finditer(text):
        items = [item for item in _ITEM_SPLIT.split(match.group("items")) if item]
        index = _ORDINALS[match.group("which").lower()]
        if len(items) < 2 or index >= len(items):
            continue
        item = items[index].strip(" $")
        start = text.find(item, match.start("items"))
        yield Candidate(item, start, start + len(item), pointed=True)


def _windows(text: str, run: list[_Token]) -> Iterator[Candidate]:
    bounds, steps = _groups(run)
    for i in range(len(run)):
        if not (_starts_well(run[i]) and _left_bound(run, bounds, i)):
            continue
        depth = 0
        for j in range(i + 1, min(len(run), i + MAX_WINDOW) + 1):
            if (bounds[j - 1] and not steps[j - 1]) or run[j - 1].kind == "punct":
                break  # a bracket that matches nothing, a full stop: the expression ended
            depth += steps[j - 1]
            if depth < 0:
                break
            if depth == 0 and _ends_well(run[j - 1]) and _right_bound(run, bounds, j):
                start, end = run[i].start, run[j - 1].end
                yield Candidate(text[start:end], start, end)


def _whole_pieces(text: str, run: list[_Token]) -> Iterator[Candidate]:
    """The run, the sides of its relations and their items, when longer than a window."""
    if len(run) <= MAX_WINDOW:
        return
    pieces: list[list[_Token]] = [run]
    piece: list[_Token] = []
    depth = 0
    for token in run:
        depth += token.kind == "open"
        depth -= token.kind == "close"
        if token.kind == "rel" or (token.kind == "sep" and depth == 0):
            pieces.append(piece)
            piece = []
        else:
            piece.append(token)
    pieces.append(piece)
    for piece in pieces:
        while piece and piece[-1].kind in ("punct", "op", "sep"):
            piece = piece[:-1]  # "1+1+...+1." ends with a full stop
        while piece and (piece[0].kind in ("punct", "sep") or piece[0].text in "*/^_"):
            piece = piece[1:]  # "...: -83 - 72 ..." starts after the colon
        # Exact arithmetic reads no variable: a long stretch with one is no candidate.
        if len(piece) > MAX_WINDOW and not any(token.kind == "var" for token in piece):
            start, end = piece[0].start, piece[-1].end
            yield Candidate(text[start:end], start, end, whole=True)


def _joined_digits(text: str, run: list[_Token]) -> Iterator[Candidate]:
    """Integers split by commas read as one numeral ("the result: 1,2" for 12)."""
    k = 0
    while k < len(run):
        j = k
        while (
            j + 2 < len(run)
            and run[j].kind == "num"
            and run[j].text.isdigit()
            and run[j + 1].text == ","
            and run[j + 2].kind == "num"
            and run[j + 2].text.isdigit()
            and j - k < 2 * MAX_WINDOW
        ):
            j += 2
        if j > k:
            digits = "".join(run[m].text for m in range(k, j + 1, 2))
            yield Candidate(digits, run[k].start, run[j].end, derived=True)
        k = j + 1
