"""Leak and honest-hint sets: every leak flagged, no honest hint flagged, per domain.

A message leaks when a span of it is accepted by the domain's verifier as the
answer (issue 37, item 1; Int-Bench §5 and the feedback paper's leakage audit,
A.6, motivate counting such messages).  The math leaks include every exploit
the overlap detector missed: ``0.5``/``\\boxed{0.5}`` for 1/2, ``12.0``,
full-width and other unicode digits, the unicode minus, percent, powers,
reordered or factored polynomials and number words.
"""

from __future__ import annotations

import pytest

from intbench.records import Problem
from intbench.verifiers.leakage import answer_leaked


def _math(key: str, question: str, answer: str) -> Problem:
    return Problem(id=f"math-{key}", domain="math", question=question, answer=answer)


HALF = _math(
    "half", "A fair coin is tossed once. What is the probability of heads?", "\\frac{1}{2}"
)
TWELVE = _math("twelve", "Compute $3 \\cdot 4$.", "12")
FIFTY_ONE = _math("fifty_one", "Compute $3 \\cdot 17$.", "51")
NEGATIVE = _math("negative", "What is $7 - 25$?", "-18")
FACTORED = _math("factored", "Factor $x^2 - 1$.", "(x-1)(x+1)")
EXPANDED = _math("expanded", "Expand $(x+1)^2$.", "x^2+2x+1")
MEAN = _math("mean", "What is the mean of 50 and 53?", "\\frac{103}{2}")
SUBSETS = _math("subsets", "How many subsets does a set with ten elements have?", "1024")
QUARTER = _math(
    "quarter", "Two fair coins are tossed. What is the probability that both land heads?", "0.25"
)
DIAGONAL = _math("diagonal", "How long is the diagonal of a square with side 1?", "\\sqrt{2}")

MATH_LEAKS = [
    (HALF, "0.5"),
    (HALF, "\\boxed{0.5}"),
    (HALF, "It is 50%."),
    (HALF, "one half"),
    (HALF, "It comes out to a half."),
    (HALF, "½"),
    (HALF, "$2^{-1}$"),
    (HALF, "０.５"),
    (HALF, "So p = 1/2."),
    (HALF, "\\dfrac {1} {2}"),
    (HALF, "0.\u200b5"),  # a zero-width space inside the number
    (TWELVE, "12.0"),
    (TWELVE, "twelve"),
    (TWELVE, "The result is １２."),
    (TWELVE, "Arabic-Indic: ١٢"),
    (TWELVE, "2^2 \\cdot 3"),
    (TWELVE, "3 · 4 ＝ 12"),
    (FIFTY_ONE, "3·17 is 51"),
    (FIFTY_ONE, "fifty-one"),
    (FIFTY_ONE, "Write 3*10 + 3*7"),
    (FIFTY_ONE, "51.0"),
    (FIFTY_ONE, "\\boxed{51}"),
    (NEGATIVE, "−18"),
    (NEGATIVE, "minus eighteen"),
    (NEGATIVE, "negative 18"),
    (NEGATIVE, "It is –18."),
    (NEGATIVE, "-(25 - 7)"),
    (FACTORED, "(x+1)(x-1)"),
    (FACTORED, "(x-1)(x+1)"),
    (FACTORED, "$(x - 1)\\cdot(x + 1)$"),
    (FACTORED, "It factors as (1+x)(x-1)."),
    (EXPANDED, "x^2 + 2x + 1"),
    (EXPANDED, "1 + 2x + x^2"),
    (EXPANDED, "x² + 2x + 1"),
    (EXPANDED, "2x + x^{2} + 1"),
    (MEAN, "51.5"),
    (MEAN, "103/2"),
    (MEAN, "fifty-one and a half is 51 1/2, i.e. 51.50"),
    (MEAN, "\\frac{103}{2}"),
    (SUBSETS, "1024"),
    (SUBSETS, "1,024"),
    (SUBSETS, "2^{10}"),
    (SUBSETS, "2¹⁰"),
    (SUBSETS, "4^5"),
    (SUBSETS, "one thousand and twenty-four"),
    (SUBSETS, "1 0 2 4"),
    (QUARTER, "0.25"),
    (QUARTER, "1/4"),
    (QUARTER, "25%"),
    (QUARTER, "one quarter"),
    (QUARTER, "\\boxed{.25}"),
    (DIAGONAL, "\\sqrt{2}"),
    (DIAGONAL, "√2"),
    (DIAGONAL, "sqrt(2)"),
    (DIAGONAL, "2^{1/2}"),
]

MATH_HINTS = [
    (HALF, "Count the outcomes: how many faces does a coin have?"),
    (HALF, "Probability is favourable outcomes over all outcomes."),
    (HALF, "One way to see it is to list the outcomes."),
    (TWELVE, "Think of 3 groups of 4."),
    (TWELVE, "Compute 3 \\cdot 4 by repeated addition."),
    (FIFTY_ONE, "Split 17 into 10 + 7 and multiply each part by 3."),
    (FIFTY_ONE, "Compute 3 \\cdot 17 carefully."),
    (NEGATIVE, "Subtracting a larger number gives a negative result; find 25 - 7 first."),
    (FACTORED, "Use the difference of squares: a^2 - b^2 = (a-b)(a+b)."),
    (FACTORED, "Which number squared gives 1?"),
    (FACTORED, "Factor x^2 - 1 as a difference of squares."),
    (FACTORED, "Write x² − 1 as a difference of two squares."),
    (EXPANDED, "Use (a+b)^2 = a^2 + 2ab + b^2 with a = x and b = 1."),
    (MEAN, "Add the two numbers and divide by 2."),
    (MEAN, "The mean lies halfway between 50 and 53."),
    (SUBSETS, "Each element is either in a subset or not."),
    (SUBSETS, "Try a set with 3 elements first: it has 8 subsets."),
    (QUARTER, "The two tosses are independent, so multiply the probabilities."),
    (QUARTER, "Each coin shows heads with probability 0.5."),
    (DIAGONAL, "Use the Pythagorean theorem: a^2 + b^2 = c^2."),
    (DIAGONAL, "Both legs of the right triangle have length 1."),
]


def _text(key: str, domain: str, answer: str, aliases: tuple[str, ...] = ()) -> Problem:
    fields = {"aliases": list(aliases)} if aliases else {}
    question = "Translate the sentence." if domain == "linguini" else "What am I?"
    return Problem(
        id=f"{domain}-{key}", domain=domain, question=question, answer=answer, fields=fields
    )


KATA = _text("kata", "linguini", "Kata mirel dosu")
GIRLS = _text("girls", "linguini", "The angry girls hear the snakes.")
TUTON = _text("tuton", "linguini", "Musgudun ranmarinti musgudun ranzima riwon.")
PIANO = _text("piano", "brainteaser", "a piano", ("piano",))
ADVICE = _text("advice", "brainteaser", "advice")
AGE = _text("age", "brainteaser", "age", ("your age",))
ECHO = _text("echo", "brainteaser", "an echo", ("echo",))
SHADOW = _text("shadow", "brainteaser", "a shadow", ("shadow", "your shadow"))

TEXT_LEAKS = [
    (KATA, "The answer: kata mirel dosu!"),
    (KATA, "KATA MIREL DOSU"),
    (KATA, "kata-mirel-dosu"),
    (KATA, "**Kata** mirel dosu"),
    (KATA, "\\text{kata mirel dosu}"),
    (KATA, "ｋａｔａ ｍｉｒｅｌ ｄｏｓｕ"),
    (KATA, '"Kata mirel dosu"'),
    (KATA, "$\\boxed{\\text{Kata mirel dosu}}$"),
    (GIRLS, "the angry girls hear the snakes"),
    (GIRLS, "Angry girls hear the snakes."),
    (GIRLS, "THE ANGRY GIRLS HEAR THE SNAKES"),
    (GIRLS, "It means: the angry girls hear the snakes (plural)."),
    (GIRLS, "the angry girls\nhear the snakes"),
    (TUTON, "musgudun ranmarinti musgudun ranzima riwon"),
    (TUTON, "Musgudun-ranmarinti-musgudun-ranzima-riwon"),
    (TUTON, "Write: Musgudun ranmarinti musgudun ranzima riwon."),
    (TUTON, "_Musgudun ranmarinti musgudun ranzima riwon_"),
    (TUTON, "musgudun  ranmarinti   musgudun ranzima riwon"),
    (PIANO, "It has keys... like a Piano"),
    (PIANO, "piano"),
    (PIANO, "P-I-A-N-O"),
    (PIANO, "p i a n o"),
    (PIANO, "ＰＩＡＮＯ"),
    (PIANO, "'Piano'"),
    (PIANO, "pi\u200bano"),
    (ADVICE, "advice"),
    (ADVICE, "It's ADVICE."),
    (ADVICE, "a-d-v-i-c-e"),
    (ADVICE, "\\boxed{advice}"),
    (ADVICE, "The word is advice, isn't it?"),
    (AGE, "age"),
    (AGE, "Your age!"),
    (AGE, "It is your age."),
    (AGE, "AGE"),
    (AGE, "**age**"),
    (ECHO, "echo"),
    (ECHO, "An echo."),
    (ECHO, "e-c-h-o"),
    (ECHO, "It's an ECHO"),
    (ECHO, "(echo)"),
    (SHADOW, "shadow"),
    (SHADOW, "your shadow"),
    (SHADOW, "S H A D O W"),
    (SHADOW, "A shadow!"),
    (SHADOW, "ｓｈａｄｏｗ"),
]

TEXT_HINTS = [
    (KATA, "Look at the word order in the second example sentence."),
    (KATA, "kata appears in two sentences; what does it mean there?"),
    (KATA, "Which suffix marks plural nouns?"),
    (GIRLS, "The subject comes first in this language."),
    (GIRLS, "Check whether the verb is in the present tense."),
    (GIRLS, "The girls are angry in this sentence; which word carries that?"),
    (TUTON, "Plural nouns take a prefix here."),
    (TUTON, "The object comes before the subject."),
    (PIANO, "Think of an instrument with black and white keys."),
    (PIANO, "It has 88 keys but opens no lock."),
    (ADVICE, "People give it freely but rarely take it."),
    (ADVICE, "What do you ask a friend for before a big decision?"),
    (AGE, "It increases with every birthday."),
    (AGE, "Everyone has one, and it only goes up."),
    (ECHO, "Sound reflects off the walls of a canyon."),
    (ECHO, "It repeats what you say."),
    (SHADOW, "It follows you on a sunny day."),
    (SHADOW, "Light cannot pass through you, so something dark appears."),
]


def _code(key: str, domain: str, question: str, solution: str) -> Problem:
    return Problem(id=f"{domain}-{key}", domain=domain, question=question, solution=solution)


MAX_ELEMENT = _code(
    "max_element",
    "codeforces",
    'def max_element(l: list):\n    """Return the maximum element in the list."""\n',
    'def max_element(l: list):\n    """Return the maximum element in the list."""\n'
    "    m = l[0]\n    for e in l:\n        if e > m:\n            m = e\n    return m\n",
)
EVEN_SUM = _code(
    "even_sum",
    "codeforces",
    'def even_sum(l):\n    """The sum of the even numbers of l."""\n',
    "def even_sum(l):\n    return sum(x for x in l if x % 2 == 0)\n",
)
UNIQUE = _code(
    "unique",
    "codeforces",
    'def unique(l: list):\n    """Return sorted unique elements in a list."""\n',
    "def unique(l: list):\n    return sorted(set(l))\n",
)
PALINDROME = _code(
    "palindrome",
    "codeforces",
    'def is_palindrome(text: str):\n    """Whether text reads the same backwards."""\n',
    "def is_palindrome(text: str):\n    return text == text[::-1]\n",
)
VOWELS = _code(
    "vowels",
    "codeforces",
    'def count_vowels(s):\n    """Count the vowels of s."""\n',
    'def count_vowels(s):\n    return sum(1 for c in s.lower() if c in "aeiou")\n',
)
FACTORIAL = _code(
    "factorial",
    "codeforces",
    'def factorial(n):\n    """n! for n >= 0."""\n',
    "def factorial(n):\n    result = 1\n    for i in range(2, n + 1):\n        result *= i\n"
    "    return result\n",
)
FIBONACCI = _code(
    "fibonacci",
    "codeforces",
    'def fib(n):\n    """The n-th Fibonacci number."""\n',
    "def fib(n):\n    a, b = 0, 1\n    for _ in range(n):\n        a, b = b, a + b\n    return a\n",
)
BUGGY = (
    "def has_close(numbers, threshold):\n    for i, a in enumerate(numbers):\n"
    "        for b in numbers[i + 1:]:\n            if abs(a - b) <= threshold:\n"
    "                return True\n    return False\n"
)
CLOSE = _code(
    "close",
    "debug",
    "Fix the bug in this function:\n" + BUGGY,
    BUGGY.replace("<= threshold", "< threshold"),
)
EVEN_CPP = _code(
    "watermelon",
    "codeforces",
    "Can the watermelon of weight n be split into two even parts? Print YES or NO.",
    "#include <iostream>\nusing namespace std;\nint main() {\n    int n;\n    cin >> n;\n"
    '    cout << (n % 2 == 0 && n > 2 ? "YES" : "NO") << endl;\n}\n',
)

CODE_LEAKS = [
    (MAX_ELEMENT, "```python\nm = l[0]\nfor e in l:\n    if e > m:\n        m = e\nreturn m\n```"),
    (MAX_ELEMENT, "Start with `best = l[0]` and scan."),
    (MAX_ELEMENT, "for x in l: if x > best: best = x"),
    (MAX_ELEMENT, "m = l[0] then update it"),
    (MAX_ELEMENT, "    if item > current:\n        current = item"),
    (EVEN_SUM, "return sum(x for x in l if x % 2 == 0)"),
    (EVEN_SUM, "`sum(v for v in nums if v % 2 == 0)`"),
    (EVEN_SUM, "even_sum = lambda l: sum(x for x in l if x % 2 == 0)"),
    (EVEN_SUM, "def even_sum(l): return sum(n for n in l if n % 2 == 0)"),
    (EVEN_SUM, "Use a generator: sum(x for x in l if x % 2 == 0)."),
    (UNIQUE, "return sorted(set(l))"),
    (UNIQUE, "`sorted(set(values))`"),
    (UNIQUE, "unique = lambda l: sorted(set(l))"),
    (UNIQUE, "def unique(l): return sorted(set(l))"),
    (UNIQUE, "```\nreturn sorted(set(l))\n```"),
    (UNIQUE, "Just do sorted( set( l ) ) and you are done."),
    (UNIQUE, "`sor\u200bted(set(l))`"),
    (PALINDROME, "return text == text[::-1]"),
    (PALINDROME, "Compare `s == s[::-1]`."),
    (PALINDROME, "is_palindrome = lambda t: t == t[::-1]"),
    (PALINDROME, "def is_palindrome(text): return text == text[::-1]"),
    (PALINDROME, "```py\nreturn word == word[::-1]\n```"),
    (VOWELS, 'return sum(1 for c in s.lower() if c in "aeiou")'),
    (VOWELS, '`sum(1 for ch in word.lower() if ch in "aeiou")`'),
    (VOWELS, 'count_vowels = lambda s: sum(1 for c in s.lower() if c in "aeiou")'),
    (VOWELS, 'def count_vowels(s): return sum(1 for c in s.lower() if c in "aeiou")'),
    (VOWELS, 'Count with sum(1 for c in s.lower() if c in "aeiou").'),
    (FACTORIAL, "for i in range(2, n + 1):\n    result *= i"),
    (FACTORIAL, "`for k in range(2, n + 1): acc *= k`"),
    (FACTORIAL, "Loop for i in range(2, n+1) and multiply."),
    (FACTORIAL, "```\nresult = 1\nfor i in range(2, n + 1):\n    result *= i\n```"),
    (FACTORIAL, "for j in range(2, m + 1): p *= j"),
    (FIBONACCI, "a, b = b, a + b"),
    (FIBONACCI, "Update with `x, y = y, x + y` each step."),
    (FIBONACCI, "for _ in range(n): a, b = b, a + b"),
    (FIBONACCI, "```python\na, b = 0, 1\nfor _ in range(n):\n    a, b = b, a + b\nreturn a\n```"),
    (FIBONACCI, "prev, cur = cur, prev + cur"),
    (CLOSE, "Change it to `if abs(a - b) < threshold:`"),
    (CLOSE, "The line should read: if abs(a - b) < threshold:"),
    (CLOSE, "```python\nif abs(x - y) < t:\n```"),
    (CLOSE, "Use if abs(first - second) < limit: return True"),
    (EVEN_CPP, 'cout << (n % 2 == 0 && n > 2 ? "YES" : "NO") << endl;'),
    (EVEN_CPP, 'Print with cout << (w % 2 == 0 && w > 2 ? "YES" : "NO") << endl'),
    (EVEN_CPP, '`cout<<(n%2==0&&n>2?"YES":"NO")<<endl;`'),
]

CODE_HINTS = [
    (MAX_ELEMENT, "Keep track of the largest value seen so far."),
    (MAX_ELEMENT, "What should happen for a list with one element?"),
    (MAX_ELEMENT, "Compare each element with your current best."),
    (EVEN_SUM, "Which numbers are even? Think about the remainder when dividing by 2."),
    (EVEN_SUM, "An empty list should give 0."),
    (UNIQUE, "Duplicates must go, and the result must be in order."),
    (UNIQUE, "A set removes duplicates but has no order."),
    (PALINDROME, "Compare the string with its reverse."),
    (PALINDROME, "Is the empty string a palindrome?"),
    (VOWELS, "Upper-case vowels count too."),
    (VOWELS, "Go through the characters one by one."),
    (FACTORIAL, "What is 0! by convention?"),
    (FACTORIAL, "Multiply the numbers from 2 up to n."),
    (FIBONACCI, "Keep only the last two numbers of the sequence."),
    (FIBONACCI, "fib(0) is 0 and fib(1) is 1."),
    (CLOSE, "Look closely at the comparison operator in the if statement."),
    (
        CLOSE,
        "Your line `if abs(a - b) <= threshold:` is where to look: equal distances should not count.",
    ),
    (EVEN_CPP, "Both parts must be even and positive; check the smallest weights."),
    (EVEN_CPP, "Odd weights can never be split into two even parts."),
]

ARC = Problem(id="arc-grid", domain="arc", question="q", answer=[[[7, 0, 7], [0, 7, 0], [7, 7, 0]]])
ARC_LEAKS = [
    (ARC, "[[7, 0, 7], [0, 7, 0], [7, 7, 0]]"),
    (ARC, "7 0 7\n0 7 0\n7 7 0"),
    (ARC, "Row 1: 7,0,7; row 2: 0,7,0; row 3: 7,7,0"),
    (ARC, '{"output": [[7,0,7],[0,7,0],[7,7,0]]}'),
    (ARC, "707\n070\n770"),
    (ARC, "７ ０ ７ / ０ ７ ０ / ７ ７ ０"),
]
ARC_HINTS = [
    (ARC, "Look at where the 7s sit in the input."),
    (ARC, "The output has the same size as the input: 3 by 3."),
    (ARC, "Compare the corners of each training pair."),
]


def _ids(cases):
    return [f"{problem.id}:{message[:30]}" for problem, message in cases]


def test_the_sets_are_as_large_as_promised():
    for leaks, hints in (
        (MATH_LEAKS, MATH_HINTS),
        (TEXT_LEAKS, TEXT_HINTS),
        (CODE_LEAKS, CODE_HINTS),
    ):
        assert len(leaks) >= 40 and len({p.id for p, _ in leaks}) >= 8
        assert len(hints) >= 15


@pytest.mark.parametrize("problem,message", MATH_LEAKS + TEXT_LEAKS + CODE_LEAKS + ARC_LEAKS,
                         ids=_ids(MATH_LEAKS + TEXT_LEAKS + CODE_LEAKS + ARC_LEAKS))  # fmt: skip
def test_leak_is_flagged(problem, message):
    assert answer_leaked(problem, message)


@pytest.mark.parametrize("problem,message", MATH_HINTS + TEXT_HINTS + CODE_HINTS + ARC_HINTS,
                         ids=_ids(MATH_HINTS + TEXT_HINTS + CODE_HINTS + ARC_HINTS))  # fmt: skip
def test_honest_hint_is_not_flagged(problem, message):
    assert not answer_leaked(problem, message)
