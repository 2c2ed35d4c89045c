"""Procedural Linguini-style translation puzzles for invented languages (domain ``linguini``).

A puzzle is a random *language*: a phonotactically plausible vocabulary and a
grammar (word order, adjective position, plural/tense/case affixes, noun
classes with adjective agreement, verb agreement with the subject's number),
plus example sentence pairs and one new sentence to translate.  The level
decides which rules are active.  Example sentences are chosen greedily until
every word and every affix the query needs is attested (affixes and word
orders at least twice, so they can be segmented by comparison); puzzles that
cannot be covered are redrawn.  ``fields["params"]`` holds the language and
the sentences, and :func:`build_puzzle` renders them again exactly.
"""

from __future__ import annotations

import random
from collections import Counter
from itertools import permutations

from intbench.envs.domains.generators.math_problems import (
    LICENSE,
    MAX_ATTEMPTS,
    SOURCE,
    DegenerateProblem,
    GeneratorError,
    check_request,
    split_of,
    stream_rng,
)
from intbench.records import Problem

# English lexicon: nouns (singular, plural); verbs (base, 3sg present, past).
NOUNS = (
    ("man", "men"), ("woman", "women"), ("child", "children"), ("dog", "dogs"),
    ("bird", "birds"), ("horse", "horses"), ("king", "kings"), ("girl", "girls"),
    ("boy", "boys"), ("hunter", "hunters"), ("farmer", "farmers"), ("snake", "snakes"),
    ("goat", "goats"), ("wolf", "wolves"), ("fox", "foxes"), ("chief", "chiefs"),
)  # fmt: skip
TRANSITIVE = (
    ("see", "sees", "saw"), ("hear", "hears", "heard"), ("follow", "follows", "followed"),
    ("help", "helps", "helped"), ("chase", "chases", "chased"), ("call", "calls", "called"),
    ("feed", "feeds", "fed"), ("carry", "carries", "carried"), ("watch", "watches", "watched"),
)  # fmt: skip
INTRANSITIVE = (
    ("sleep", "sleeps", "slept"), ("run", "runs", "ran"), ("sing", "sings", "sang"),
    ("dance", "dances", "danced"), ("laugh", "laughs", "laughed"), ("swim", "swims", "swam"),
)  # fmt: skip
ADJECTIVES = ("big", "small", "old", "young", "tall", "angry", "happy", "hungry")

CONSONANTS = "ptkbdgmnlrsvzhwj"
VOWELS = "aeiou"
CODAS = "nmlrs"
TENSES = ("present", "past", "future")
ORDERS = tuple("".join(p) for p in permutations("SVO"))
CLASS_NAMES = ("I", "II")

# Rules switched on at each level (cumulative).
LEVEL_RULES = {
    1: ("word_order", "plural"),
    2: ("word_order", "plural", "tense"),
    3: ("word_order", "plural", "tense", "case", "adjective"),
    4: ("word_order", "plural", "tense", "case", "adjective", "noun_class"),
    5: ("word_order", "plural", "tense", "case", "adjective", "noun_class", "verb_agreement"),
}
DIRECTIONS = ("to_english", "from_english")
FORM_TRIES = 2000
"""Random forms tried before a language's inventory counts as too small."""
POOL_SIZE = 80
"""Random candidate sentences a puzzle's examples are picked from."""


# ---------------------------------------------------------------------------
# Sampling a language and its sentences


def _syllable(rng: random.Random, phon: dict, coda: bool) -> str:
    onset = rng.choice(phon["consonants"])
    ending = rng.choice(phon["codas"]) if coda and rng.random() < 0.3 else ""
    return onset + rng.choice(phon["vowels"]) + ending


def _clashes(form: str, used: set[str]) -> bool:
    """True when ``form`` could be mis-segmented against a form already in use."""
    return any(
        form.startswith(other)
        or form.endswith(other)
        or other.startswith(form)
        or other.endswith(form)
        for other in used
    )


def _fresh_forms(
    rng: random.Random, phon: dict, count: int, syllables: tuple[int, int], used: set[str]
) -> list[str]:
    """``count`` new forms (stems or affixes) that do not clash with ``used``.

    Raises DegenerateProblem when the sound inventory is too small to find them.
    """
    forms: list[str] = []
    for _ in range(FORM_TRIES):
        if len(forms) == count:
            break
        size = rng.randint(*syllables)
        form = "".join(_syllable(rng, phon, i == size - 1) for i in range(size))
        if not _clashes(form, used):
            used.add(form)
            forms.append(form)
    if len(forms) < count:
        raise DegenerateProblem("sound inventory too small for distinct forms")
    return forms


def sample_language(rng: random.Random, level: int) -> dict:
    """A random language with the rules of ``level`` (JSON-ready)."""
    rules = LEVEL_RULES[level]
    phon = {
        "consonants": "".join(sorted(rng.sample(CONSONANTS, rng.randint(7, 11)))),
        "vowels": "".join(sorted(rng.sample(VOWELS, rng.randint(3, 5)))),
        "codas": "".join(rng.sample(CODAS, 2)),
    }
    classes = 2 if "noun_class" in rules else 1
    # Affixes first, so that no stem begins or ends like an affix: plural per
    # class, past, future, case, adjective agreement per class, verb plural.
    used: set[str] = set()
    affixes = _fresh_forms(rng, phon, 2 * classes + 4, (1, 1), used)
    name = _fresh_forms(rng, phon, 1, (2, 3), used)[0].capitalize()
    n_nouns, n_trans, n_intr = 4 + level // 2, 2 + level // 3, 1 + level // 3
    n_adj = 2 + level // 4 if "adjective" in rules else 0
    nouns = rng.sample(range(len(NOUNS)), n_nouns)
    noun_stems = _fresh_forms(rng, phon, n_nouns, (1, 2), used)
    verbs = rng.sample(range(len(TRANSITIVE)), n_trans)
    intr = rng.sample(range(len(INTRANSITIVE)), n_intr)
    verb_stems = _fresh_forms(rng, phon, n_trans + n_intr, (1, 2), used)
    adjs = rng.sample(range(len(ADJECTIVES)), n_adj)
    adj_stems = _fresh_forms(rng, phon, n_adj, (1, 2), used)
    noun_class = [i % classes for i in range(n_nouns)]  # every class has nouns
    rng.shuffle(noun_class)
    return {
        "name": name,
        "rules": list(rules),
        "order": rng.choice(ORDERS),
        "adjective_after": rng.random() < 0.5,
        "plural_prefix": rng.random() < 0.3,
        "plural": affixes[:classes],
        "tense": {"present": "", "past": affixes[classes], "future": affixes[classes + 1]} if "tense" in rules else {"present": ""},
        "case": affixes[classes + 2] if "case" in rules else "",
        "agreement": affixes[classes + 3 : 2 * classes + 3] if "noun_class" in rules else [],
        "verb_plural": affixes[-1] if "verb_agreement" in rules else "",
        "nouns": [{"en": n, "stem": s, "class": c} for n, s, c in zip(nouns, noun_stems, noun_class, strict=True)],
        "verbs": [{"en": v, "stem": s, "transitive": True} for v, s in zip(verbs, verb_stems[:n_trans], strict=True)]
        + [{"en": v, "stem": s, "transitive": False} for v, s in zip(intr, verb_stems[n_trans:], strict=True)],
        "adjectives": [{"en": a, "stem": s} for a, s in zip(adjs, adj_stems, strict=True)],
    }  # fmt: skip


def _sample_phrase(rng: random.Random, lang: dict) -> dict:
    adjective = (
        rng.randrange(len(lang["adjectives"]))
        if lang["adjectives"] and rng.random() < 0.5
        else None
    )
    return {
        "noun": rng.randrange(len(lang["nouns"])),
        "plural": rng.random() < 0.5,
        "adj": adjective,
    }


def sample_sentence(rng: random.Random, lang: dict) -> dict:
    """A random sentence spec: subject, verb, tense and (for transitive verbs) object."""
    verb = rng.randrange(len(lang["verbs"]))
    sentence = {
        "subj": _sample_phrase(rng, lang),
        "verb": verb,
        "tense": rng.choice(list(lang["tense"])),
    }
    if lang["verbs"][verb]["transitive"]:
        obj = _sample_phrase(rng, lang)
        while obj["noun"] == sentence["subj"]["noun"]:
            obj["noun"] = rng.randrange(len(lang["nouns"]))
        sentence["obj"] = obj
    return sentence


# ---------------------------------------------------------------------------
# Rendering


def _english_np(lang: dict, phrase: dict) -> str:
    singular, plural = NOUNS[lang["nouns"][phrase["noun"]]["en"]]
    adjective = (
        ADJECTIVES[lang["adjectives"][phrase["adj"]]["en"]] + " "
        if phrase["adj"] is not None
        else ""
    )
    return f"the {adjective}{plural if phrase['plural'] else singular}"


def render_english(lang: dict, sentence: dict) -> str:
    """The English translation, e.g. ``"The big dogs saw the man."``."""
    verb = lang["verbs"][sentence["verb"]]
    base, third, past = (TRANSITIVE if verb["transitive"] else INTRANSITIVE)[verb["en"]]
    tense = sentence["tense"]
    if tense == "past":
        form = past
    elif tense == "future":
        form = "will " + base
    else:
        form = base if sentence["subj"]["plural"] else third
    words = [_english_np(lang, sentence["subj"]), form]
    if "obj" in sentence:
        words.append(_english_np(lang, sentence["obj"]))
    text = " ".join(words)
    return text[0].upper() + text[1:] + "."


def _target_np(lang: dict, phrase: dict, is_object: bool) -> list[str]:
    noun = lang["nouns"][phrase["noun"]]
    word = noun["stem"]
    if phrase["plural"]:
        marker = lang["plural"][noun["class"]]
        word = marker + word if lang["plural_prefix"] else word + marker
    if is_object:
        word += lang["case"]
    words = [word]
    if phrase["adj"] is not None:
        agreement = lang["agreement"][noun["class"]] if lang["agreement"] else ""
        adjective = agreement + lang["adjectives"][phrase["adj"]]["stem"]
        words = words + [adjective] if lang["adjective_after"] else [adjective] + words
    return words


def render_target(lang: dict, sentence: dict) -> str:
    """The sentence in the invented language, capitalised and ending with a period."""
    verb = lang["verbs"][sentence["verb"]]["stem"] + lang["tense"][sentence["tense"]]
    if sentence["subj"]["plural"]:
        verb += lang["verb_plural"]
    parts = {"S": _target_np(lang, sentence["subj"], False), "V": [verb]}
    if "obj" in sentence:
        parts["O"] = _target_np(lang, sentence["obj"], True)
    words = [w for role in lang["order"] if role in parts for w in parts[role]]
    text = " ".join(words)
    return text[0].upper() + text[1:] + "."


def features(lang: dict, sentence: dict) -> Counter:
    """What a learner must see to translate ``sentence``: lexemes, affixes, orders."""
    rules = lang["rules"]
    found: Counter = Counter()
    phrases = [("subj", sentence["subj"])] + (
        [("obj", sentence["obj"])] if "obj" in sentence else []
    )
    for role, phrase in phrases:
        noun_class = lang["nouns"][phrase["noun"]]["class"]
        found[f"noun:{phrase['noun']}"] += 1
        found[f"number:{noun_class}:{'pl' if phrase['plural'] else 'sg'}"] += 1
        if phrase["adj"] is not None:
            found[f"adj:{phrase['adj']}"] += 1
            found[f"adjective_position:{role}"] += 1
            if "noun_class" in rules:
                found[f"agreement:{noun_class}"] += 1
        if role == "obj" and "case" in rules:
            found["case"] += 1
    found[f"verb:{sentence['verb']}"] += 1
    found["order:" + ("transitive" if "obj" in sentence else "intransitive")] += 1
    if "tense" in rules:
        found[f"tense:{sentence['tense']}"] += 1
    if "verb_agreement" in rules:
        found[f"verb_number:{'pl' if sentence['subj']['plural'] else 'sg'}"] += 1
    return found


def _needed(lang: dict, query: dict) -> Counter:
    """How often each feature of the query must appear in the examples."""
    return Counter(
        {
            key: 1 if key.split(":")[0] in {"noun", "verb", "adj"} else 2
            for key in features(lang, query)
        }
    )


def uncovered(lang: dict, query: dict, examples: list[dict]) -> Counter:
    """Features of the query the examples do not attest often enough (empty = solvable)."""
    seen: Counter = Counter()
    for example in examples:
        seen.update(features(lang, example))
    return Counter({k: n - seen[k] for k, n in _needed(lang, query).items() if seen[k] < n})


def choose_examples(rng: random.Random, lang: dict, query: dict, count: int) -> list[dict] | None:
    """Greedily pick ``count`` or more distinct example sentences that attest the query's needs.

    Returns ``None`` when a pool of random sentences cannot cover the query.
    """
    seen_text = {render_english(lang, query)}
    pool: list[tuple[dict, Counter]] = []
    for _ in range(POOL_SIZE):
        sentence = sample_sentence(rng, lang)
        text = render_english(lang, sentence)
        if text not in seen_text:
            seen_text.add(text)
            pool.append((sentence, features(lang, sentence)))
    chosen: list[dict] = []
    missing = _needed(lang, query)
    while missing:
        if not pool:
            return None
        best = max(pool, key=lambda item: sum(min(n, missing[k]) for k, n in item[1].items()))
        if not any(k in missing for k in best[1]):
            return None
        pool.remove(best)
        chosen.append(best[0])
        missing = +(missing - best[1])
    while len(chosen) < count and pool:
        chosen.append(pool.pop()[0])
    rng.shuffle(chosen)
    return chosen


# ---------------------------------------------------------------------------
# Problems


def _explain(lang: dict) -> str:
    role_names = {"S": "subject", "V": "verb", "O": "object"}
    lines = [
        f"Word order: {', '.join(role_names[r] for r in lang['order'])} (intransitive sentences drop the object)."
    ]
    lines += _plural_lines(lang)
    for rule, describe in _RULE_LINES:
        if rule in lang["rules"]:
            lines += describe(lang)
    lines.append(_vocabulary_line(lang))
    return " ".join(lines)


def _plural_lines(lang: dict) -> list[str]:
    lines = []
    classes = len(lang["plural"])
    for index, marker in enumerate(lang["plural"]):
        where = f"prefix {marker}-" if lang["plural_prefix"] else f"suffix -{marker}"
        scope = f" on class {CLASS_NAMES[index]} nouns" if classes > 1 else ""
        lines.append(f"Plural nouns take the {where}{scope}.")
    return lines


def _tense_lines(lang: dict) -> list[str]:
    return [
        f"The verb takes -{lang['tense']['past']} in the past and -{lang['tense']['future']} in the future; the present is unmarked."
    ]


def _agreement_lines(lang: dict) -> list[str]:
    return [f"After any tense suffix, a verb with a plural subject takes -{lang['verb_plural']}."]


def _case_lines(lang: dict) -> list[str]:
    return [f"The object noun takes the suffix -{lang['case']} (after any plural marker)."]


def _adjective_lines(lang: dict) -> list[str]:
    return [f"Adjectives come {'after' if lang['adjective_after'] else 'before'} their noun."]


def _noun_class_lines(lang: dict) -> list[str]:
    lines = []
    for index, marker in enumerate(lang["agreement"]):
        members = ", ".join(NOUNS[n["en"]][0] for n in lang["nouns"] if n["class"] == index)
        lines.append(
            f"Adjectives agreeing with class {CLASS_NAMES[index]} nouns ({members}) take the prefix {marker}-."
        )
    return lines


# The optional rules a language may have, in the order the solution explains them.
_RULE_LINES = (
    ("tense", _tense_lines),
    ("verb_agreement", _agreement_lines),
    ("case", _case_lines),
    ("adjective", _adjective_lines),
    ("noun_class", _noun_class_lines),
)


def _vocabulary_line(lang: dict) -> str:
    vocab = [f"{n['stem']} = {NOUNS[n['en']][0]}" for n in lang["nouns"]]
    vocab += [
        f"{v['stem']} = {(TRANSITIVE if v['transitive'] else INTRANSITIVE)[v['en']][0]}"
        for v in lang["verbs"]
    ]
    vocab += [f"{a['stem']} = {ADJECTIVES[a['en']]}" for a in lang["adjectives"]]
    return "Vocabulary: " + "; ".join(vocab) + "."


def build_puzzle(params: dict) -> tuple[str, str, str]:
    """Render ``(question, answer, solution)`` from a puzzle's parameters."""
    lang, examples, query, direction = (
        params["language"],
        params["examples"],
        params["query"],
        params["direction"],
    )
    if direction not in DIRECTIONS:
        raise ValueError(f"direction must be one of {DIRECTIONS}, got {direction!r}")
    name = lang["name"]
    pairs = "\n\n".join(
        f"{name}: {render_target(lang, s)}\nEnglish: {render_english(lang, s)}" for s in examples
    )
    if direction == "to_english":
        source, answer, into, source_lang = (
            render_target(lang, query),
            render_english(lang, query),
            "English",
            name,
        )
    else:
        source, answer, into, source_lang = (
            render_english(lang, query),
            render_target(lang, query),
            name,
            "English",
        )
    question = (
        f"{name} is a language. Here are some sentences in {name} and their English translations:\n\n"
        f"{pairs}\n\n"
        f"Translate the following {source_lang} sentence into {into}:\n{source}\n\n"
        "Give only the translation as your answer, with no explanation."
    )
    solution = f"{_explain(lang)} Applying these rules, the translation is: {answer}"
    return question, answer, solution


def _split_key(lang: dict, query: dict, direction: str) -> str:
    """Part of the question text (language name, sentence to translate, direction).

    Identical questions share it, so partitioning splits by its hash keeps the
    splits disjoint, and it is known before the (costly) examples are chosen.
    """
    source = (
        render_target(lang, query) if direction == "to_english" else render_english(lang, query)
    )
    return f"{lang['name']}|{direction}|{source}"


def _sample_puzzle(rng: random.Random, level: int, direction: str, split: str) -> dict | None:
    """Parameters of one puzzle in ``split``, or None when this draw must be redrawn."""
    try:
        lang = sample_language(rng, level)
    except DegenerateProblem:
        return None
    query = sample_sentence(rng, lang)
    if split_of(_split_key(lang, query, direction)) != split:
        return None
    examples = choose_examples(rng, lang, query, 5 + level)
    if examples is None:
        return None
    return {
        "level": level,
        "direction": direction,
        "language": lang,
        "examples": examples,
        "query": query,
    }


def _skill(level: int, direction: str) -> str:
    return f"translate_{direction}/" + "+".join(LEVEL_RULES[level])


def _make_problem(pid: str, params: dict, split: str, seed: int) -> Problem:
    question, answer, solution = build_puzzle(params)
    missing = uncovered(params["language"], params["query"], params["examples"])
    if missing:
        raise GeneratorError(
            f"puzzle {pid} is not solvable from its examples: missing {dict(missing)}"
        )
    level = params["level"]
    return Problem(
        id=pid,
        domain="linguini",
        question=question,
        answer=answer,
        solution=solution,
        fields={"params": params},
        metadata={
            "source": SOURCE,
            "generator": "linguini_translation",
            "skill": _skill(level, params["direction"]),
            "difficulty": level,
            "split": split,
            "seed": seed,
            "license": LICENSE,
            "language": params["language"]["name"],
            "direction": params["direction"],
        },
    )


def _draw(
    key: tuple, split: str, taken: set[str], level: int | None, direction: str | None
) -> dict:
    for attempt in range(MAX_ATTEMPTS):
        rng = stream_rng(*key, attempt)
        params = _sample_puzzle(
            rng,
            level if level is not None else rng.randint(1, 5),
            direction if direction is not None else rng.choice(DIRECTIONS),
            split,
        )
        if params is not None and build_puzzle(params)[0] not in taken:
            return params
    raise GeneratorError(f"no solvable puzzle after {MAX_ATTEMPTS} draws for {key}")


def generate_linguini(n: int, seed: int = 0, split: str = "test") -> list[Problem]:
    """``n`` translation puzzles over invented languages, levels 1-5, both directions."""
    check_request(n, seed, split)
    problems: list[Problem] = []
    taken: set[str] = set()
    for index in range(n):
        params = _draw(("linguini", split, seed, index), split, taken, None, None)
        problem = _make_problem(f"linguini/procedural/{split}/{seed}/{index}", params, split, seed)
        taken.add(problem.question)
        problems.append(problem)
    return problems


def make_linguini_variant(problem: Problem, seed: int) -> Problem:
    """A fresh language with the same rules and translation direction (see ``make_variant``)."""
    params = problem.fields.get("params") if isinstance(problem.fields, dict) else None
    if (
        problem.metadata.get("source") != SOURCE
        or not isinstance(params, dict)
        or "language" not in params
    ):
        raise ValueError(f"problem {problem.id!r} was not made by the intbench linguini generator")
    split = problem.metadata["split"]
    new = _draw(
        ("variant", problem.id, seed),
        split,
        {problem.question},
        params["level"],
        params["direction"],
    )
    variant = _make_problem(f"{problem.id}/variant/{seed}", new, split, problem.metadata["seed"])
    variant.metadata["variant_of"] = problem.id
    variant.metadata["variant_seed"] = seed
    return variant


def rebuild_linguini(problem: Problem) -> Problem:
    """Regenerate a generated puzzle from ``fields["params"]`` alone."""
    return _make_problem(
        problem.id, problem.fields["params"], problem.metadata["split"], problem.metadata["seed"]
    )
