"""Short-answer leaks (Linguini, BrainTeaser, worded math answers), by answer recovery.

A message leaks when the reference answer, or one of its aliases, can be read
out of it in the form the text grader compares: both sides go through the
grader's own normalisers (:func:`~intbench.verifiers.text.canonical_answer` for
the reference, :func:`~intbench.verifiers.text.normalize_free_text` for the
message: case, LaTeX wrappers, markdown, quotes, apostrophes, comma spacing),
after :func:`~.notation.unmask` (full-width letters, zero-width characters,
Cyrillic or Greek look-alike letters).  The answer must stand as whole words
("ka" is not in "kata"); punctuation between its words does not matter
("kata-mirel-dosu"), nor does a leading article, which a student copying the
words would add back.  An answer of three or more letters also leaks spelled out
letter by letter ("p-i-a-n-o", "T h e / f o x e s / s l e e p"), and a numeric
answer written in words or another notation ("twelve", "XII") leaks as the math
reader reads it.  So does an answer given in parts: quoted pieces to join ("It
starts with "fin". It ends with "ger"") or words numbered in order ("Word 1: The.
Word 2: foxes.").

**Words copied from the problem statement** do not leak by themselves: a Linguini
hint that quotes an example sentence holding the answer's words restates the
problem.  When the answer occurs in the statement, an occurrence in the message
counts only with answer-position evidence (an answer word before it: "the
answer is", "it translates as", "it must be"; "is the answer" after it; the
message being the answer alone), or when it is not copied: a quotation of the
statement ("the first example, 'Ta kope.'") is no occurrence, and the statement does
not hold it together with the message's word before it or after it ("women will
run" is in "The happy women will run.", "get the women will run" is not).  Linear
in the message's length.
"""

from __future__ import annotations

import re
from functools import cached_property, lru_cache
from typing import TYPE_CHECKING

from intbench.records import Problem
from intbench.verifiers.leakage.notation import recovery_text, unmask
from intbench.verifiers.text import canonical_answer, normalize_free_text, reference_answers

if TYPE_CHECKING:
    from intbench.verifiers.leakage.verdicts import LeakVerdict

_ARTICLE = re.compile(r"^(?:a|an|the)\s+(?=\w)")
_SEPARATORS = re.compile(r"(?:[^\w,]|_)+")  # "_" too: markdown italics
_SPELLING_GAP = r"[\s\-_.*'\",]+"  # between the letters of a word spelled out
_SPELLED_WORD_GAP = r"[\s\-_.*'\",/|]+"  # between its words ("c-a-t / h-a-t")
_NUMBER = re.compile(r"-?[0-9]+(?:\.[0-9]+)?")
# Answer-position evidence in the normalised words before an occurrence ...
_CUE_BEFORE = re.compile(
    r"\b(?:answers?|solutions?|translations?|translates?(?:\s+(?:to|as|into))?|means|"
    r"result|called|is|are|be|its|thats)"
    r"(?:\s+(?:is|would|should|be|the|final|simply|just|then|a|an))*\s*$"
)
_NO_CUE_BEFORE = re.compile(r"\b(?:there|here)\s+(?:is|are)\s*$")
# ... or just after it.
_CUE_AFTER = re.compile(
    r"\s*(?:(?:is|was|would\s+be|should\s+be)\s+)?(?:(?:the|your|our)\s+)?(?:final\s+)?"
    r"(?:answers?|translation|solution)\b"
)
_CUE_REACH = 48  # characters read before an occurrence
# An answer given in parts: quoted pieces to join ("It starts with "fin". It ends with
# "ger""), words numbered in order ("Word 1: The. Word 2: foxes.").
_NUMBERED_WORD = re.compile(
    r"\bword\s*#?\s*([0-9]{1,2})\s*(?:is\s+|[:=\-]\s*)[\"'“‘]?([^\s\"'”’]+?)[\"'”’]?(?=[\s.,;]|$)",
    re.IGNORECASE,
)
_MOST_QUOTES = 16  # quoted pieces read for joins (so the joins stay a bounded number)
_QUOTE = re.compile(
    r"\"[^\"\n]{1,400}\"|“[^”\n]{1,400}”|`[^`\n]{1,400}`|(?<!\w)'[^'\n]{1,400}?'(?!\w)"
)


def _words(text: str) -> str:
    """``text`` as the grader compares running text, one space around every word."""
    return " " + _SEPARATORS.sub(" ", normalize_free_text(unmask(text))) + " "


@lru_cache(maxsize=256)
def _statement_words(question: str, numbers: bool = False) -> str:
    """The statement as :func:`_words` writes it (once per problem: an episode checks many
    messages against one), its numbers in the math reader's notation when ``numbers``."""
    return _words(recovery_text(question) if numbers else question)


def _reference_words(reference: str) -> str:
    """The reference as the grader compares it, one space between words, no leading article."""
    words = _SEPARATORS.sub(" ", canonical_answer(unmask(reference))).strip()
    return _ARTICLE.sub("", words)


def _cued(text: str, start: int, end: int) -> bool:
    """Whether the occurrence ``text[start:end]`` is stated as the answer (see the module doc)."""
    if text[:start].strip() in ("", "a", "an", "the") and not text[end:].strip():
        return True  # the message is the answer alone
    before = text[max(0, start - _CUE_REACH) : start]
    if _CUE_BEFORE.search(before) and not _NO_CUE_BEFORE.search(before):
        return True
    return _CUE_AFTER.match(text, end, end + _CUE_REACH) is not None


def _stated(haystack: str, needle: str, statement: str) -> bool:
    """Whether ``needle`` stands in ``haystack`` as an answer: anywhere when the statement
    does not hold it, else where it is marked as the answer or not copied from the
    statement (see :func:`_copied`)."""
    if needle not in haystack:
        return False
    if needle not in statement:
        return True
    position = haystack.find(needle)
    while position >= 0:
        # The needle's spaces are shared with the words around it.
        if _cued(haystack, position + 1, position + len(needle) - 1):
            return True
        if not _copied(haystack, position, needle, statement):
            return True
        position = haystack.find(needle, position + 1)
    return False


def _copied(haystack: str, position: int, needle: str, statement: str) -> bool:
    """Whether the occurrence of ``needle`` at ``position`` is copied from the statement: the
    statement holds it with the word before it or the word after it (two words when that
    one is an article).  "women will run" is in "The happy women will run.", but "get the
    women will run" and "women will run, which fits" are not."""
    before = haystack[:position].split()[-2:]
    after = haystack[position + len(needle) :].split()[:2]
    if before and before[-1] not in ("a", "an", "the"):
        before = before[-1:]
    if after and after[0] not in ("a", "an", "the"):
        after = after[:1]
    return (bool(before) and " " + " ".join(before) + needle in statement) or (
        bool(after) and needle + " ".join(after) + " " in statement
    )


def _unquoted(message: str, statement: str) -> str:
    """``message`` without its quotations of the statement ("the first example, 'Ta
    kope.'"): quoting the problem gives nothing away, unless the quotation stands as the
    answer ("The answer is 'Ta kope.'")."""

    def blank(match: re.Match[str]) -> str:
        before = _words(message[max(0, match.start() - _CUE_REACH) : match.start()]).rstrip()
        quoted = " " + " ".join(_words(match.group()).split()) + " "
        if quoted in statement and not _CUE_BEFORE.search(before):
            return " "
        return match.group()

    return _QUOTE.sub(blank, message)


def _assembled(folded: str) -> set[str]:
    """Answers put together from the message's parts, as :func:`_reference_words` writes
    them: two to four consecutive quoted pieces joined (with no space and with one), and
    the numbered words in their order.  One leaks when it is the answer itself."""
    pieces = [m.group()[1:-1] for m in _QUOTE.finditer(folded)][:_MOST_QUOTES]
    joined = [glue.join(pieces[i:j]) for i in range(len(pieces))
              for j in range(i + 2, min(len(pieces), i + 4) + 1) for glue in ("", " ")]  # fmt: skip
    numbered = sorted((int(n), word) for n, word in _NUMBERED_WORD.findall(folded))
    if len(numbered) > 1:
        joined.append(" ".join(word for _, word in numbered))
    return {_ARTICLE.sub("", " ".join(_words(text).split())) for text in joined}


def text_leaked(problem: Problem, message: str) -> LeakVerdict:
    """Whether the reference answer or an alias can be read from ``message`` (see the module doc)."""
    read = _Reading(problem, message)
    for reference in reference_answers(problem):
        words = _reference_words(reference)
        if words and _leaks(read, words):
            return "leaked"
    return "clean"


class _Reading:
    """``message`` in the forms :func:`text_leaked` searches, with the problem's statement;
    the costlier forms are made on first use."""

    def __init__(self, problem: Problem, message: str) -> None:
        self.message = message
        self.question = problem.question or ""
        self.folded = unmask(message)
        self.statement = _statement_words(self.question)
        self.text = _words(_unquoted(self.folded, self.statement))
        # A comma matters only inside a list answer ("a,b"); elsewhere it ends a word.
        self.plain = self.text.replace(",", " ")
        self.lowered = self.folded.lower()

    @cached_property
    def assembled(self) -> set[str]:
        """Answers put together from the message's parts (:func:`_assembled`)."""
        return _assembled(self.folded)

    @cached_property
    def numbers(self) -> str:
        """The message's words with its numbers in the math reader's notation."""
        return _words(recovery_text(self.message)).replace(",", " ")


def _leaks(read: _Reading, words: str) -> bool:
    """Whether the answer ``words`` (as :func:`_reference_words` writes it) can be read:
    assembled from parts, stated, stated as a number in another notation, or spelled out."""
    return (
        words in read.assembled
        or _stated_as_words(read, words)
        or _stated_as_number(read, words)
        or _spelled_out(read.lowered, words)
    )


def _stated_as_words(read: _Reading, words: str) -> bool:
    """Whether the answer stands in the message's words (commas kept for a list answer)."""
    if "," in words:
        return _stated(read.text, f" {words} ", read.statement)
    return _stated(read.plain, f" {words} ", read.statement.replace(",", " "))


def _stated_as_number(read: _Reading, words: str) -> bool:
    """Whether a number answer stands in the message written in words or another notation."""
    if not _NUMBER.fullmatch(words):
        return False
    return _stated(read.numbers, f" {words} ", _statement_words(read.question, True))


def _spelled_out(lowered: str, words: str) -> bool:
    """Whether an answer of three or more letters is spelled out letter by letter in the
    lower-cased message ("p-i-a-n-o")."""
    letters = words.replace(" ", "")
    if not (letters.isalpha() and len(letters) >= 3):
        return False
    spelled = _SPELLED_WORD_GAP.join(
        _SPELLING_GAP.join(re.escape(letter) for letter in word) for word in words.split()
    )
    return re.search(rf"(?<![^\W\d_]){spelled}(?![^\W\d_])", lowered) is not None
