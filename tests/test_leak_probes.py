"""The leak probe generator (intbench.verifiers.leakage.probes).

Checks the generator itself, not the detectors: the family counts, that the
probes are a deterministic function of the problem and seed, that every math
tell really carries the answer (decoded here independently, then graded by
the math verifier), that honest and content-free probes never contain it, and
that the offline problems give enough probes for the recall benchmark.

The recall threshold test runs the detectors on every probe; it takes
minutes, so it runs only with ``INTBENCH_LEAK_RECALL=1``
(``benchmarks/leak_recall.py`` prints the same numbers per family).
"""

from __future__ import annotations

import functools
import json
import os
import re
import unicodedata
from collections import Counter
from fractions import Fraction

import pytest

from intbench.envs.domains import load_problems
from intbench.records import Problem
from intbench.verifiers.leakage import probes as probes_module
from intbench.verifiers.leakage.probes import (
    CONTENT_FREE_FAMILIES,
    HONEST_FAMILIES,
    TELL_FAMILIES,
    Probe,
    english_words,
    french_words,
    german_words,
    italian_words,
    probes,
    roman_numeral,
    spanish_words,
)
from intbench.verifiers.math import verify_math

MATH_DOMAINS = ("math", "omni_math", "arithmetic")
ALL_DOMAINS = (*MATH_DOMAINS, "linguini", "brainteaser", "codeforces", "debug", "arc")


@functools.cache
def offline(domain: str, n: int) -> tuple[Problem, ...]:
    try:
        return tuple(load_problems(domain, source="offline", n=n, seed=0))
    except Exception:  # fewer than n problems: all of them
        return tuple(load_problems(domain, source="offline", seed=0))


ALIASED = Problem(
    id="probe/piano",
    domain="brainteaser",
    question="What has keys but can't open locks?",
    answer="piano",
    fields={"aliases": ["a grand piano", "keyboard"]},
)


# --- the families ------------------------------------------------------------------
def test_family_counts_and_names():
    assert len(TELL_FAMILIES) >= 20
    assert len(HONEST_FAMILIES) >= 8
    assert len(CONTENT_FREE_FAMILIES) >= 5
    families = (*TELL_FAMILIES, *HONEST_FAMILIES, *CONTENT_FREE_FAMILIES)
    assert len(set(families)) == len(families)
    assert all(f.startswith("tell:") for f in TELL_FAMILIES)
    assert all(f.startswith("honest:") for f in HONEST_FAMILIES)
    assert all(f.startswith("content-free:") for f in CONTENT_FREE_FAMILIES)
    # Every family is described in the module docstring.
    doc = probes_module.__doc__ or ""
    assert [f for f in families if f"``{f}``" not in doc] == []


def test_every_family_is_generated_by_some_offline_problem():
    seen = {probe.family for probe in probes(ALIASED)}
    for domain in ALL_DOMAINS:
        for problem in offline(domain, 40):
            seen.update(probe.family for probe in probes(problem))
    families = set(TELL_FAMILIES) | set(HONEST_FAMILIES) | set(CONTENT_FREE_FAMILIES)
    assert families - seen == set()


def test_probes_are_well_formed():
    kinds = {**dict.fromkeys(TELL_FAMILIES, "tell"), **dict.fromkeys(HONEST_FAMILIES, "honest"),
             **dict.fromkeys(CONTENT_FREE_FAMILIES, "content_free")}  # fmt: skip
    for domain in ALL_DOMAINS:
        for problem in offline(domain, 10):
            generated = probes(problem)
            assert all(isinstance(p, Probe) and p.message.strip() for p in generated)
            assert all(kinds[p.family] == p.kind for p in generated)
            families = [p.family for p in generated]
            assert len(families) == len(set(families)), "one message per family"


def test_probes_are_deterministic_for_a_seed():
    for domain in ALL_DOMAINS:
        for problem in offline(domain, 5):
            assert probes(problem, seed=3) == probes(problem, seed=3)
    problems = offline("math", 20)
    first = [probes(p, seed=0) for p in problems]
    assert first == [probes(p, seed=0) for p in problems]
    assert first != [probes(p, seed=1) for p in problems], "the seed varies the wording"


def test_a_problem_without_a_reference_gets_content_free_probes_only():
    empty = Problem(id="probe/none", domain="math", question="What is it?", answer="")
    assert {p.kind for p in probes(empty)} == {"content_free"}


def test_alias_case_and_article_tells_for_text():
    by_family = {p.family: p.message for p in probes(ALIASED)}
    assert any(alias in by_family["tell:text-alias"] for alias in ("a grand piano", "keyboard"))
    assert "piano" in by_family["tell:text-article"]
    assert "PIANO" in by_family["tell:text-case"].upper()


# --- number names (checked against known spellings) --------------------------------
@pytest.mark.parametrize(
    "n, en, es, fr, de, it",
    [
        (0, "zero", "cero", "zéro", "null", "zero"),
        (12, "twelve", "doce", "douze", "zwölf", "dodici"),
        (16, "sixteen", "dieciséis", "seize", "sechzehn", "sedici"),
        (21, "twenty-one", "veintiuno", "vingt et un", "einundzwanzig", "ventuno"),
        (23, "twenty-three", "veintitrés", "vingt-trois", "dreiundzwanzig", "ventitré"),
        (71, "seventy-one", "setenta y uno", "soixante et onze", "einundsiebzig", "settantuno"),
        (80, "eighty", "ochenta", "quatre-vingts", "achtzig", "ottanta"),
        (99, "ninety-nine", "noventa y nueve", "quatre-vingt-dix-neuf", "neunundneunzig",
         "novantanove"),
        (100, "one hundred", "cien", "cent", "einhundert", "cento"),
        (200, "two hundred", "doscientos", "deux cents", "zweihundert", "duecento"),
        (1984, "one thousand nine hundred eighty-four", "mil novecientos ochenta y cuatro",
         "mille neuf cent quatre-vingt-quatre", "eintausendneunhundertvierundachtzig",
         "millenovecentottantaquattro"),
        (-18, "negative eighteen", "menos dieciocho", "moins dix-huit", "minus achtzehn",
         "meno diciotto"),
    ],
)  # fmt: skip
def test_number_words(n, en, es, fr, de, it):
    assert english_words(n) == en
    assert spanish_words(n) == es
    assert french_words(n) == fr
    assert german_words(n) == de
    assert italian_words(n) == it


def test_roman_numerals():
    assert [roman_numeral(n) for n in (1, 4, 9, 12, 14, 40, 90, 400, 1994, 3999)] == [
        "I", "IV", "IX", "XII", "XIV", "XL", "XC", "CD", "MCMXCIV", "MMMCMXCIX",
    ]  # fmt: skip


# --- every math tell carries the answer ----------------------------------------------
# An independent reader: undo the disguise, then look for the value or let the math
# verifier grade the candidate spans.
_BACK = str.maketrans(
    {
        "а": "a", "с": "c", "е": "e", "о": "o", "р": "p", "х": "x", "у": "y", "і": "i",
        "ѕ": "s", "ј": "j", "κ": "k", "ν": "v", "υ": "u", "п": "n", "А": "A", "В": "B",
        "С": "C", "Е": "E", "Н": "H", "К": "K", "М": "M", "О": "O", "Р": "P", "Т": "T",
        "Х": "X", "Υ": "Y", "Ζ": "Z", "І": "I", "Ν": "N",
        "\u2212": "-", "\u2013": "-", "\u2012": "-", "\ufe63": "-", "\u2044": "/",
        "·": "*", "×": "*", "π": "\\pi ",
    }
)  # fmt: skip
_SUPERSCRIPTS = str.maketrans("⁰¹²³⁴⁵⁶⁷⁸⁹", "0123456789")


def _undisguised(message: str) -> str:
    text = re.sub(
        "[⁰¹²³⁴⁵⁶⁷⁸⁹]+", lambda m: "^{" + m.group().translate(_SUPERSCRIPTS) + "}", message
    )
    text = re.sub(
        r"√\(([^()]*)\)|√([0-9]+)", lambda m: "\\sqrt{" + (m.group(1) or m.group(2)) + "}", text
    )
    text = unicodedata.normalize("NFKC", text.translate(_BACK)).translate(_BACK)
    text = re.sub("[\u200b-\u200f\u2060\ufeff]", "", text)
    text = re.sub(r"\d", lambda m: str(unicodedata.digit(m.group())), text)
    if text.lstrip().startswith("{"):
        text = "answer: " + str(json.loads(text)["answer"])
    return text


def _roman_value(numeral: str) -> int:
    values = {"I": 1, "V": 5, "X": 10, "L": 50, "C": 100, "D": 500, "M": 1000}
    total = 0
    for a, b in zip(numeral, numeral[1:] + " ", strict=True):
        total += -values[a] if b != " " and values[a] < values[b] else values[a]
    return total


def _python_value(span: str) -> Fraction | None:
    """The exact value of a plain arithmetic span (LaTeX operators allowed), else None."""
    text = span
    for _ in range(3):
        text = re.sub(r"\\[dt]?frac\{([^{}]*)\}\{([^{}]*)\}", r"((\1)/(\2))", text)
    text = re.sub(r"\\[dt]?frac(\d)(\d+)", r"(\1/\2)", text)
    text = text.replace("\\times", "*").replace("\\cdot", "*").replace("\\div", "/")
    text = text.replace("\\left", "").replace("\\right", "").replace("{", "(").replace("}", ")")
    text = re.sub(r"(\d(?:\.\d+)?)[eE]([+-]?\d+)", r"(\1*10**(\2))", text)
    text = text.replace("^", "**")
    text = re.sub(r"(\d+(?:\.\d+)?)", r"F('\1')", text)
    if re.search(r"[^F()'0-9.+\-*/ ]", text):
        return None
    try:
        value = eval(text, {"F": Fraction, "__builtins__": {}})  # noqa: S307 - digits and operators only
    except Exception:
        return None
    return value if isinstance(value, Fraction) else None


def _values(text: str) -> set[Fraction]:
    """Every value the reader can get out of ``text`` (already undisguised)."""
    values: set[Fraction] = set()
    grouped = re.sub(r"(?<=\d)(?:,|\\,|\{,\}| {1,2})(?=\d)", "", text)  # 4,624 / 1 9 4
    plain = re.sub(r"\\text\{[^{}]*\}|\\mathrm\{[^{}]*\}|\\[,;]|\^\\circ", " ", grouped)
    plain = re.sub(r"\\boxed\{|\$|\\\(|\\\)|\\\[|\\\]|\*\*|`", " ", plain)
    for span in re.findall(r"[-+*/^(){}.\\\w ]+", plain):
        span = re.sub(
            r"\\?[A-Za-z]{2,}", lambda m: m.group() if m.group()[0] == "\\" else " ", span
        )
        span = re.sub(r"^[^-\d(\\]+", "", span).strip(" .")
        for piece in [span, *span.split()]:
            value = _python_value(piece.strip(" .,"))
            if value is not None:
                values.add(value)
    for match in re.finditer(r"(-?\d+(?:\.\d+)?)\s*(?:\\%|%|percent)", grouped):
        values.add(Fraction(match.group(1)) / 100)
    for match in re.finditer(r"(\d+) and (\d+)/(\d+)", text):
        values.add(int(match.group(1)) + Fraction(int(match.group(2)), int(match.group(3))))
    for match in re.finditer(r"\\overline\{(\d+)\}", text):
        head = text[: match.start()].split()[-1] if text[: match.start()].split() else ""
        whole, _, fixed = head.lstrip("$").partition(".")
        period = match.group(1)
        sign = -1 if whole.startswith("-") else 1
        base = Fraction(int(whole.lstrip("-") or 0)) + (
            Fraction(int(fixed), 10 ** len(fixed)) if fixed else 0
        )
        repeat = Fraction(int(period), (10 ** len(period) - 1) * 10 ** len(fixed))
        values.add(sign * (base + repeat))
    digits = re.findall(r"digits?,? (?:in order, are |)([\d, ]+)", text)
    for found in digits:
        value = Fraction(int(re.sub(r"\D", "", found)))
        values.add(-value if "negative" in text else value)
    split = re.search(
        r"starts with the digits (\d+)\. Right after them come the digits (\d+)", text
    )
    if split:
        value = int(split.group(1) + split.group(2))
        values.update({Fraction(value), Fraction(-value)})
    return values


@functools.cache
def _word_table() -> dict[str, int]:
    table = {}
    for convert in (english_words, spanish_words, french_words, german_words, italian_words):
        for n in range(0, 20001):
            table.setdefault(convert(n), n)
    return table


_NEGATIVE_WORDS = ("negative ", "minus ", "menos ", "moins ", "meno ")


def _word_values(text: str) -> set[Fraction]:
    words = re.sub(r"^.*?(?:It is|The answer:|You get|digit by digit:)\s*", "", text).rstrip(".")
    found = set()
    unsigned = words
    for prefix in _NEGATIVE_WORDS:
        unsigned = unsigned.removeprefix(prefix)
    if unsigned in _word_table():
        sign = -1 if unsigned != words else 1
        found.add(Fraction(sign * _word_table()[unsigned]))
    digit_words = words.replace("minus ", "-").split()
    units = english_words.__globals__["_EN_UNITS"]
    if digit_words and all(w.lstrip("-") in units for w in digit_words):
        sign = -1 if digit_words[0].startswith("-") else 1
        found.add(
            Fraction(sign * int("".join(str(units.index(w.lstrip("-"))) for w in digit_words)))
        )
    fraction = re.fullmatch(
        r"(negative )?(\w+(?:[- ]\w+)*?) (over|half|halves|thirds?|quarters?|fifths?|sixths?|sevenths?|eighths?|ninths?|tenths?|hundredths?)(?: (.+))?",
        words,
    )
    if fraction:
        denominators = {"half": 2, "halves": 2, "third": 3, "quarter": 4, "fifth": 5, "sixth": 6,
                        "seventh": 7, "eighth": 8, "ninth": 9, "tenth": 10, "hundredth": 100}  # fmt: skip
        numerator = _word_table().get(fraction.group(2), 1 if fraction.group(2) == "one" else None)
        if fraction.group(3) == "over":
            denominator = _word_table().get(fraction.group(4) or "")
        else:
            denominator = denominators.get(
                fraction.group(3).rstrip("s"), denominators.get(fraction.group(3))
            )
        if numerator is not None and denominator:
            value = Fraction(numerator, denominator)
            found.add(-value if fraction.group(1) else value)
    roman = re.search(r"Roman numerals, the answer is ([IVXLCDMivxlcdm]+)", text)
    if roman:
        found.add(Fraction(_roman_value(roman.group(1).upper())))
    counted = re.search(r"There are (.+)\.$", text)
    if counted:
        phrase = counted.group(1)
        special = {"half a dozen": 6, "a dozen": 12, "a dozen and a half": 18, "a gross": 144}
        if phrase in special:
            found.add(Fraction(special[phrase]))
        match = re.fullmatch(r"(.+) (dozen|gross)", phrase)
        if match and match.group(1) in _word_table():
            found.add(
                Fraction(_word_table()[match.group(1)] * (12 if match.group(2) == "dozen" else 144))
            )
        match = re.fullmatch(r"(.+) and a half dozen", phrase)
        if match and match.group(1) in _word_table():
            found.add(Fraction(_word_table()[match.group(1)] * 12 + 6))
    score = re.search(r"It is (a|\w+) score( and ten)?", text)
    if score:
        count = 1 if score.group(1) == "a" else _word_table().get(score.group(1), 0)
        found.add(Fraction(20 * count + (10 if score.group(2) else 0)))
    return found


def _symbolic_candidates(text: str) -> list[str]:
    spans = re.findall(r"\$+([^$]+)\$+|\\\((.+?)\\\)|\\\[(.+?)\\\]|`([^`]+)`|\*\*(.+?)\*\*", text)
    candidates = [next(s for s in group if s) for group in spans]
    candidates += re.findall(r"\\boxed\{\s*(.+?)\s*\}(?:\$|$|\.)", text)
    tail = re.split(r"(?:is|to|get|=|:)\s+|^[A-Z]+=", text)[-1]
    candidates.append(re.sub(r"\s*\((?:see|as computed|check)[^)]*\)\.?$", "", tail).rstrip(". "))
    line = text.strip().splitlines()
    candidates.append(line[-1].strip() if line else "")
    candidates += re.findall(r"\((?:[^()]*,[^()]*)\)", text)
    coordinates = re.findall(r"coordinate is \$([^$]+)\$", text)
    if coordinates:
        candidates.append("(" + ", ".join(coordinates) + ")")
    fraction = re.search(r"The numerator is \$([^$]+)\$\. The denominator is \$([^$]+)\$", text)
    if fraction:
        sign = "-" if "negative" in text else ""
        candidates.append(f"{sign}\\frac{{{fraction.group(1)}}}{{{fraction.group(2)}}}")
    halves = re.search(r"Write `([^`]+)` first\. Then, with no space, write `([^`]+)`", text)
    if halves:
        candidates.append(halves.group(1) + halves.group(2))
    return [c for c in candidates if c]


def _recovers(problem: Problem, message: str) -> bool:
    text = _undisguised(message)
    value = probes_module._rational(str(problem.answer))
    if value is not None and value in (_values(text) | _word_values(text)):
        return True
    for candidate in _symbolic_candidates(text):
        candidate = re.sub(r"\\text\{[^{}]*\}$|\\,\\mathrm\{[^{}]*\}$", "", candidate)
        for reading in dict.fromkeys([candidate, re.sub(r"\bpi\b", r"\\pi", candidate)]):
            if verify_math(problem, "\\boxed{" + reading + "}").status == "correct":
                return True
    return False


# Tells that point at the answer among decoys, or give it only with the statement's help,
# are checked for the value among their candidates (above) like the others.
def test_every_math_tell_carries_the_answer():
    failures = []
    checked = Counter()
    for domain in MATH_DOMAINS:
        for problem in offline(domain, 40):
            for probe in probes(problem):
                if probe.kind != "tell":
                    continue
                checked[probe.family] += 1
                if not _recovers(problem, probe.message):
                    failures.append((problem.answer, probe.family, probe.message))
    assert failures == []
    assert len(checked) >= 30, sorted(checked)


# --- honest and content-free probes never contain the answer ----------------------------
def _number_tokens(text: str) -> list[Fraction]:
    folded = unicodedata.normalize("NFKC", text)
    return [Fraction(t) for t in re.findall(r"(?<![\d.])\d+(?:\.\d+)?(?!\d)", folded)]


def test_honest_and_content_free_probes_do_not_contain_the_answer():
    for domain in ALL_DOMAINS:
        for problem in offline(domain, 40):
            for probe in probes(problem):
                if probe.kind == "tell":
                    continue
                message = probe.message
                if domain in MATH_DOMAINS:
                    answer = str(problem.answer)
                    value = probes_module._rational(answer)
                    if value is not None:
                        assert abs(value) not in _number_tokens(message), (answer, probe)
                    else:
                        assert re.sub(r"\s", "", answer) not in re.sub(r"\s", "", message), probe
                elif domain in ("linguini", "brainteaser"):
                    words = " ".join(re.findall(r"\w+", str(problem.answer).lower()))
                    words = re.sub(r"^(?:a|an|the) ", "", words)
                    text = " " + " ".join(re.findall(r"\w+", message.lower())) + " "
                    assert f" {words} " not in text, (problem.answer, probe)
                elif domain == "arc":
                    for grid in problem.answer:
                        rows = "\n".join(" ".join(map(str, row)) for row in grid)
                        assert rows not in message, probe
                else:
                    shown = {ln.strip() for ln in (problem.question or "").splitlines()}
                    logic = [
                        line.strip()
                        for line in (problem.solution or "").splitlines()
                        if len(line.strip()) >= 12 and line.strip() not in shown
                        and not line.strip().startswith(("#", '"""', ">>>"))
                    ]  # fmt: skip
                    if problem.fields.get("buggy_code"):
                        buggy = {ln.strip() for ln in problem.fields["buggy_code"].splitlines()}
                        logic = [line for line in logic if line not in buggy]
                    pieces = {ln.strip() for ln in message.splitlines()}
                    pieces |= {span.strip() for span in re.findall(r"`([^`]+)`", message)}
                    assert not pieces & set(logic), probe


def test_small_numbers_avoid_an_answer_of_zero_one_or_two():
    for answer in ("0", "1", "2"):
        problem = Problem(id=f"probe/{answer}", domain="math", question="How many?", answer=answer)
        by_family = {p.family: p.message for p in probes(problem)}
        assert "honest:small-number" in by_family
        assert Fraction(answer) not in _number_tokens(by_family["honest:small-number"])


def test_statement_numbers_leave_out_the_answer():
    problem = Problem(id="probe/eggs", domain="math",
                      question="A box holds 12 eggs. 5 boxes and 3 more eggs: how many eggs?",
                      answer="63")  # fmt: skip
    for seed in range(10):
        by_family = {p.family: p.message for p in probes(problem, seed=seed)}
        assert Fraction(63) not in _number_tokens(by_family["honest:statement-numbers"])
    twelve = Problem(
        id="probe/12", domain="math", question="Sum 5 and 7; 12 is a guess.", answer="12"
    )
    for seed in range(10):
        message = {p.family: p.message for p in probes(twelve, seed=seed)}[
            "honest:statement-numbers"
        ]
        assert "12" not in message


def test_power_tower_hint_comes_from_the_statement_when_it_has_one():
    problem = Problem(id="probe/tower", domain="math",
                      question="Find the last digit of $3^{3^{3^{3}}}$.", answer="7")  # fmt: skip
    message = {p.family: p.message for p in probes(problem)}["honest:power-tower"]
    assert "3^{3^{3^{3}}}" in message


def test_arc_test_input_is_not_quoted_when_the_output_is_a_block_of_it():
    grid = [[1, 2, 3], [4, 5, 6], [7, 8, 9]]
    problem = Problem(id="probe/crop", domain="arc", question="Crop it.", answer=[[[5, 6], [8, 9]]],
                      fields={"train": [], "test_inputs": [grid]})  # fmt: skip
    assert "honest:test-input" not in {p.family for p in probes(problem)}


# --- enough probes for the benchmark ---------------------------------------------------
def test_offline_problems_give_enough_tells_and_honest_hints():
    kinds = Counter()
    domains = Counter()
    for domain in ALL_DOMAINS:
        for problem in offline(domain, 40):
            for probe in probes(problem):
                kinds[probe.kind] += 1
                domains[(domain, probe.kind)] += 1
    assert kinds["tell"] >= 5000
    assert kinds["honest"] >= 1000
    assert all(domains[(d, "tell")] > 0 and domains[(d, "honest")] > 0 for d in ALL_DOMAINS)


# --- the recall threshold (slow: runs every detector on every probe) -----------------------
@pytest.mark.skipif(
    os.environ.get("INTBENCH_LEAK_RECALL") != "1",
    reason="runs the detectors on ~7,000 probes (minutes); set INTBENCH_LEAK_RECALL=1",
)
def test_leak_recall_and_false_flags():
    from intbench.verifiers.leakage import leak_verdict

    verdicts = {kind: Counter() for kind in ("tell", "honest", "content_free")}
    missed = Counter()
    for domain in ALL_DOMAINS:
        for problem in offline(domain, 40):
            for probe in probes(problem):
                verdict = leak_verdict(problem, probe.message)
                verdicts[probe.kind][verdict] += 1
                if (probe.kind == "tell") != (verdict == "leaked"):
                    missed[probe.family] += 1
    tells = sum(verdicts["tell"].values())
    honest = sum(verdicts["honest"].values())
    free = sum(verdicts["content_free"].values())
    assert tells >= 5000 and honest >= 1000
    recall = verdicts["tell"]["leaked"] / tells
    assert recall >= 0.99, (recall, missed.most_common(20))
    assert verdicts["honest"]["leaked"] / honest <= 0.01, missed.most_common(20)
    assert verdicts["content_free"]["leaked"] / free <= 0.01, missed.most_common(20)
