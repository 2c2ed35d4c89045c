"""Short-answer leaks (Linguini, BrainTeaser, worded math answers).

A message leaks when it contains the reference answer, or one of its
aliases, in the form the text grader compares: both sides go through the
grader's own normalisers (:func:`~intbench.verifiers.text.canonical_answer`
for the reference, :func:`~intbench.verifiers.text.normalize_free_text` for
the message: case, LaTeX wrappers, markdown, quotes, apostrophes, comma
spacing), after unicode compatibility folding (full-width letters).  The
answer must stand as whole words ("ka" is not in "kata"); punctuation
between its words does not matter ("kata-mirel-dosu"), nor does a leading
article, which a student copying the words would add back.  A one-word
answer of four or more letters also leaks spelled out letter by letter
("p-i-a-n-o").  Linear in the message's length.
"""

from __future__ import annotations

import re

from intbench.records import Problem
from intbench.verifiers.leakage.notation import fold
from intbench.verifiers.text import canonical_answer, normalize_free_text, reference_answers

_ARTICLE = re.compile(r"^(?:a|an|the)\s+(?=\w)")
_SEPARATORS = re.compile(r"(?:[^\w,]|_)+")  # "_" too: markdown italics
_SPELLING_GAP = r"[\s\-_.*'\",]+"


def _reference_words(reference: str) -> str:
    """The reference as the grader compares it, one space between words, no leading article."""
    words = _SEPARATORS.sub(" ", canonical_answer(reference)).strip()
    return _ARTICLE.sub("", words)


def text_leaked(problem: Problem, message: str) -> bool:
    """Whether the reference answer or an alias appears in ``message`` as whole words."""
    folded = fold(message)
    text = " " + _SEPARATORS.sub(" ", normalize_free_text(folded)) + " "
    # A comma matters only inside a list answer ("a,b"); elsewhere it ends a word.
    plain = text.replace(",", " ")
    lowered = folded.lower()
    for reference in reference_answers(problem):
        words = _reference_words(reference)
        if not words:
            continue
        if f" {words} " in (text if "," in words else plain):
            return True
        if words.isalpha() and len(words) >= 4:
            spelled = _SPELLING_GAP.join(re.escape(letter) for letter in words)
            if re.search(rf"(?<![^\W\d_]){spelled}(?![^\W\d_])", lowered):
                return True
    return False
