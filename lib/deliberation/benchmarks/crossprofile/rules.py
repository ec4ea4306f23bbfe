"""The CrossProfile verifier's rules: every check a template and a bank must pass.

Per-template checks (:func:`verify_template`): schema and types are the loader's (names
NFKC-normalised; invisible and look-alike characters refused, :mod:`.characters`); 3 distinct
criteria and options; the key is an option; 12 facts s1..s5, d1..d3, i1..i4 in that order; each
support fact favours the correct option or disfavours a wrong one, each decoy favours a wrong
option or disfavours the correct one (it points away from the key), on a stated criterion;
irrelevant attributes are not criteria and their tones are two +1 and two -1; all-facts scores are +2 for the key and 0 for each competitor; each text is one
sentence of 14-28 words naming its own option and no other; support and decoy facts use no
weak or self-reported wording (:mod:`.wording`); the description has 2-4 sentences and names
all three options, in the order ``options`` lists them, the title none; and the balance design
(:mod:`.design`: the bank-v5 layout, no decoy sharing a criterion with a support fact on its
option).

Cross-file checks (:func:`verify_bank`, across the files verified together): unique template
ids, no fact text used twice, no title or description naming an option of another template.
Composition checks (``composition=True``): 60 main + 10 pilot templates, 5 main templates
(``-01``..``-05``) in each of the 12 domains, and the bank-level design
(``design.check_bank_design``: the key's slot counterbalanced). Warnings (:func:`warnings_for`)
are reported, never failed.
"""

from __future__ import annotations

import functools
import re
import unicodedata
from collections import Counter, defaultdict
from collections.abc import Sequence
from pathlib import Path

from deliberation.benchmarks.crossprofile import design, wording
from deliberation.benchmarks.crossprofile.errors import Violation
from deliberation.benchmarks.crossprofile.loader import bank_dir, display_name
from deliberation.benchmarks.crossprofile.schema import (
    DOMAINS,
    MAIN_PER_DOMAIN,
    ROLE_COUNTS,
    ROLES,
    EvidenceFact,
    IrrelevantFact,
    Template,
)
from deliberation.benchmarks.crossprofile.scoring import score_options

N_OPTIONS = 3
_N_CRITERIA = 3
_IRRELEVANT_TONES: dict[int, int] = {1: 2, -1: 2}
MIN_WORDS, MAX_WORDS = 14, 28
_N_PILOT = 10
CORRECT_SCORE, COMPETITOR_SCORE = 2, 0

# Words that give a fact's role away; failures. Words that only might (a "support" desk is a
# fair thing to report about software) are warnings.
_LEAKING_WORDS = ("decoy", "decoys", "irrelevant")
_SUSPECT_WORDS = ("support", "agent", "agents")
_STOPWORDS = frozenset(
    [
        "a",
        "an",
        "and",
        "the",
        "of",
        "for",
        "to",
        "in",
        "on",
        "at",
        "by",
        "with",
        "from",
        "or",
        "its",
        "their",
        "per",
        "as",
        "is",
        "are",
        "be",
        "over",
        "under",
    ]
)


# ---------------------------------------------------------------- text rules


def word_count(text: str) -> int:
    """Words are whitespace-separated runs ("4.5" and "on-call" are one word each)."""
    return len(text.split())


# A sentence ends at '.', '!' or '?' followed by whitespace or the end of the text (optionally
# after a closing quote or bracket). So decimals ("4.5") and inner dots ("U.S") do not end one,
# but an abbreviation's final dot before a space ("U.S. market", "Dr. Lee") does: the format
# forbids such abbreviations, and this rule catches them.
_SENTENCE_END = re.compile(r"[.!?][\"')\]]*(?=\s|$)")


def sentence_problems(text: str) -> list[str]:
    """Why ``text`` is not exactly one sentence ending with a period (empty list if it is)."""
    problems = []
    if text != text.strip():
        problems.append("has leading or trailing whitespace")
    stripped = text.strip()
    if "\n" in stripped:
        problems.append("contains a line break")
    if not stripped.rstrip("\"')]").endswith("."):
        problems.append("must end with a period")
    ends = list(_SENTENCE_END.finditer(stripped))
    inner = [m for m in ends if m.end() < len(stripped)]
    if inner:
        shown = ", ".join(repr(stripped[max(0, m.start() - 12) : m.end()]) for m in inner[:3])
        problems.append(
            f"must be one sentence: sentence-ending punctuation inside at {shown} "
            "(abbreviations with periods count as sentence ends)"
        )
    if "!" in stripped or "?" in stripped:
        problems.append("must not contain '!' or '?'")
    return problems


@functools.lru_cache(maxsize=4096)
def _name_pattern(name: str, *, ignore_case: bool) -> re.Pattern[str]:
    flags = re.IGNORECASE if ignore_case else 0
    return re.compile(rf"(?<!\w){re.escape(name)}(?!\w)", flags)


def mentions(text: str, name: str, *, ignore_case: bool) -> bool:
    """Whether ``name`` occurs in ``text`` as a whole word or phrase (not inside a longer word).

    Both are compared in NFKC, so a compatibility spelling (full-width letters, a no-break
    space) still counts as naming."""
    text, name = unicodedata.normalize("NFKC", text), unicodedata.normalize("NFKC", name)
    return _name_pattern(name, ignore_case=ignore_case).search(text) is not None


def mention_count(text: str, name: str, *, ignore_case: bool) -> int:
    """How many times ``name`` occurs in ``text`` as a whole word or phrase (NFKC, as
    :func:`mentions`)."""
    text, name = unicodedata.normalize("NFKC", text), unicodedata.normalize("NFKC", name)
    return len(_name_pattern(name, ignore_case=ignore_case).findall(text))


def _content_words(phrase: str) -> set[str]:
    return {w for w in re.findall(r"[a-z0-9]+", phrase.lower()) if w not in _STOPWORDS}


# ---------------------------------------------------------------- per-template checks


def _check_header(t: Template, file: str, path: Path | None) -> list[Violation]:
    out: list[Violation] = []

    def bad(where: str, message: str) -> None:
        out.append(Violation(file, where, message))

    if path is not None and path.name != f"{t.id}.yaml":
        bad("id", f"file name must be '{t.id}.yaml' (the template id), not '{path.name}'")
    main_id = re.fullmatch(rf"{re.escape(t.domain)}-0[1-{MAIN_PER_DOMAIN}]", t.id)
    pilot_id = re.fullmatch(rf"{re.escape(t.domain)}-p[1-9][0-9]*", t.id)
    if t.pilot and not pilot_id:
        bad("id", f"pilot template id must be '{t.domain}-p1', '{t.domain}-p2', ..., not '{t.id}'")
    if not t.pilot and not main_id:
        bad(
            "id",
            f"main template id must be '{t.domain}-01' .. '{t.domain}-0{MAIN_PER_DOMAIN}'"
            f" (domain '{t.domain}'), not '{t.id}'",
        )

    if len(t.criteria) != _N_CRITERIA:
        bad("criteria", f"expected exactly {_N_CRITERIA} criteria, found {len(t.criteria)}")
    for name, count in Counter(c.casefold() for c in t.criteria).items():
        if count > 1:
            bad("criteria", f"criterion {name!r} is listed {count} times")

    if len(t.options) != N_OPTIONS:
        bad("options", f"expected exactly {N_OPTIONS} options, found {len(t.options)}")
    for name, count in Counter(o.casefold() for o in t.options).items():
        if count > 1:
            bad("options", f"option {name!r} is listed {count} times")
    for a in t.options:
        for b in t.options:
            if a.casefold() != b.casefold() and a.casefold() in b.casefold():
                bad("options", f"option {a!r} is part of option {b!r}; names must not nest")
    if t.correct not in t.options:
        bad("correct", f"correct option {t.correct!r} is not one of the options {list(t.options)}")
    return out


def _check_fact_list(t: Template, file: str) -> list[Violation]:
    out: list[Violation] = []
    counts = Counter(f.role for f in t.facts)
    if len(t.facts) != sum(ROLE_COUNTS.values()) or any(
        counts[r] != n for r, n in ROLE_COUNTS.items()
    ):
        found = "/".join(str(counts[r]) for r in ROLES)
        bad_roles = ", ".join(
            f"{counts[r]} {r} (expected {n})" for r, n in ROLE_COUNTS.items() if counts[r] != n
        )
        out.append(
            Violation(
                file,
                "facts",
                f"expected 12 facts with roles 5/3/4 (support/decoy/irrelevant), found "
                f"{len(t.facts)} with {found}: {bad_roles}",
            )
        )

    id_counts = Counter(f.id for f in t.facts)
    for fid, n in id_counts.items():
        if n > 1:
            where = [i for i, f in enumerate(t.facts) if f.id == fid]
            out.append(
                Violation(
                    file,
                    fid,
                    f"duplicate fact id: used {n} times (facts[{'], facts['.join(map(str, where))}])",
                )
            )

    role_rank = {r: i for i, r in enumerate(ROLES)}
    seen_in_role: Counter[str] = Counter()
    previous = 0
    for index, fact in enumerate(t.facts):
        seen_in_role[fact.role] += 1
        expected = f"{fact.role[0]}{seen_in_role[fact.role]}"
        if id_counts[fact.id] == 1 and fact.id != expected:
            out.append(
                Violation(
                    file,
                    fact.id,
                    f"fact id should be '{expected}' (facts[{index}] is {fact.role} fact number "
                    f"{seen_in_role[fact.role]}; ids run s1..s5, d1..d3, i1..i4)",
                )
            )
        if role_rank[fact.role] < previous:
            out.append(
                Violation(
                    file,
                    fact.id,
                    f"{fact.role} fact out of order: list support facts, then decoys, "
                    "then irrelevant facts",
                )
            )
        previous = max(previous, role_rank[fact.role])
    return out


def _check_fact(t: Template, file: str, fact: EvidenceFact | IrrelevantFact) -> list[Violation]:
    out: list[Violation] = []

    def bad(message: str, suffix: str = "") -> None:
        out.append(Violation(file, fact.id + suffix, message))

    wrong = t.wrong_options
    if fact.option not in t.options:
        bad(f"option {fact.option!r} is not one of the options {list(t.options)}", ".option")

    if fact.role in ("support", "decoy"):
        if fact.criterion not in t.criteria:
            near = [c for c in t.criteria if c.casefold() == fact.criterion.casefold()]
            hint = f" (did you mean {near[0]!r}?)" if near else ""
            bad(
                f"criterion {fact.criterion!r} is not one of the stated criteria "
                f"{list(t.criteria)}{hint}",
                ".criterion",
            )
        if fact.option in t.options and t.correct in t.options:
            if fact.role == "support":
                if fact.option == t.correct and fact.polarity != 1:
                    bad(
                        f"support fact is unfavourable (polarity -1) to the correct option "
                        f"{t.correct!r}; on the correct option a support fact must be +1"
                    )
                if fact.option != t.correct and fact.polarity != -1:
                    bad(
                        f"support fact favours (polarity +1) the wrong option {fact.option!r}; "
                        f"on a wrong option a support fact must be -1"
                    )
            elif fact.option == t.correct and fact.polarity != -1:
                bad(
                    f"decoy favours the correct option {t.correct!r}; a decoy points away from "
                    f"the key: it favours a wrong option ({' or '.join(map(repr, wrong))}, "
                    "polarity +1) or is unfavourable to the correct one (polarity -1)"
                )
            elif fact.option != t.correct and fact.polarity != 1:
                bad(
                    f"decoy is unfavourable (polarity -1) to the wrong option {fact.option!r}; "
                    "on a wrong option a decoy must favour it (+1)"
                )
    else:
        attribute = fact.attribute.casefold().strip()
        for criterion in t.criteria:
            c = criterion.casefold().strip()
            if attribute == c:
                bad(f"irrelevant attribute {fact.attribute!r} is a stated criterion", ".attribute")
            elif attribute in c or c in attribute:
                bad(
                    f"irrelevant attribute {fact.attribute!r} overlaps the criterion "
                    f"{criterion!r}; it must lie outside the criteria",
                    ".attribute",
                )

    text = fact.text
    for problem in sentence_problems(text):
        bad(f"text {problem}", ".text")
    words = word_count(text)
    if not MIN_WORDS <= words <= MAX_WORDS:
        bad(f"text has {words} words; must be {MIN_WORDS} to {MAX_WORDS}", ".text")
    if fact.option in t.options and not mentions(text, fact.option, ignore_case=False):
        bad(f"text does not name its own option {fact.option!r} (exact case)", ".text")
    for other in t.options:
        if other != fact.option and mentions(text, other, ignore_case=True):
            bad(f"text names another option {other!r}; a fact must name only its own", ".text")
    for word in _LEAKING_WORDS:
        if mentions(text, word, ignore_case=True):
            bad(f"text uses the word {word!r}, which gives the fact's role away", ".text")
    if fact.role in ("support", "decoy") and (weak := wording.weak_wording(text)):
        bad(
            f"weak or self-reported wording {weak!r}: support and decoy facts must be verified "
            "observations (records, audits, measured results, dated events), not promises, "
            "offers, plans, claims or hedges",
            ".text",
        )
    return out


def _check_title_and_description(t: Template, file: str) -> list[Violation]:
    out = []
    sentences = len(_SENTENCE_END.findall(t.description.strip()))
    if not 2 <= sentences <= 4:
        out.append(
            Violation(file, "description", f"has {sentences} sentences; the format asks for 2-4")
        )
    for option in t.options:
        if not mentions(t.description, option, ignore_case=False):
            out.append(
                Violation(
                    file,
                    "description",
                    f"does not name the option {option!r} (exact case); the description names "
                    "all three options",
                )
            )
        if mentions(t.title, option, ignore_case=False):
            out.append(Violation(file, "title", f"names the option {option!r}; a title names none"))
    named = [o for o in t.options if mentions(t.description, o, ignore_case=False)]
    first = sorted(named, key=lambda o: _first_mention(t.description, o))
    if first != named:
        out.append(
            Violation(
                file,
                "description",
                f"names the options in the order {first}, not as `options` lists them "
                f"{named}: the listed order is what the bank balances, and a model reads both",
            )
        )
    return out


def _first_mention(text: str, name: str) -> int:
    found = _name_pattern(unicodedata.normalize("NFKC", name), ignore_case=False).search(
        unicodedata.normalize("NFKC", text)
    )
    return found.start() if found else len(text)


def _check_scores(t: Template, file: str) -> list[Violation]:
    if t.correct not in t.options:
        return []
    scores = score_options((f for f in t.facts if f.option in t.options), t.options)
    expected = {o: (CORRECT_SCORE if o == t.correct else COMPETITOR_SCORE) for o in t.options}
    if scores == expected:
        return []
    shown = ", ".join(f"{o} {scores[o]:+d}" for o in t.options)
    detail = [
        f"{o!r} ties or beats the correct option"
        for o in t.wrong_options
        if scores[o] >= scores[t.correct]
    ]
    extra = f"; {'; '.join(detail)}" if detail else ""
    return [
        Violation(
            file,
            "scores",
            f"all-facts scores must be +{CORRECT_SCORE} for the correct option {t.correct!r} and "
            f"{COMPETITOR_SCORE} for each competitor; found {shown}{extra}",
        )
    ]


def _check_tones(t: Template, file: str) -> list[Violation]:
    tones = Counter(f.tone for f in t.facts if f.role == "irrelevant")
    if tones == Counter(_IRRELEVANT_TONES):
        return []
    return [
        Violation(
            file,
            "facts",
            f"irrelevant tones must be two +1 and two -1, found {tones[1]} x +1 and {tones[-1]} x -1",
        )
    ]


def verify_template(template: Template, file: str, path: Path | None = None) -> list[Violation]:
    """Every per-template rule broken by ``template`` (named ``file`` in messages)."""
    out = _check_header(template, file, path)
    out += _check_fact_list(template, file)
    for fact in template.facts:
        out += _check_fact(template, file, fact)
    out += _check_tones(template, file)
    out += _check_scores(template, file)
    out += _check_title_and_description(template, file)
    out += design.check_design(template, file)
    return out


def warnings_for(t: Template, file: str) -> list[Violation]:
    out = design.layout_warnings(t, file)
    criteria_words = {c: _content_words(c) for c in t.criteria}
    for fact in t.facts:
        for word in _SUSPECT_WORDS:
            if mentions(fact.text, word, ignore_case=True):
                out.append(
                    Violation(file, fact.id, f"text uses {word!r}; check it does not hint a role")
                )
        if fact.role == "irrelevant" and (risk := wording.risk_word(fact.text)):
            out.append(
                Violation(
                    file,
                    f"{fact.id}.text",
                    f"possible risk signal {risk!r}: check that a risk-minded reader would not "
                    "count this irrelevant fact",
                )
            )
        if fact.role == "irrelevant":
            for criterion, words in criteria_words.items():
                shared = _content_words(fact.attribute) & words
                if shared and fact.attribute.casefold() not in criterion.casefold():
                    out.append(
                        Violation(
                            file,
                            f"{fact.id}.attribute",
                            f"attribute {fact.attribute!r} shares {sorted(shared)} with criterion "
                            f"{criterion!r}; check it is not a near-synonym",
                        )
                    )
    return out


# ---------------------------------------------------------------- bank checks


def _normal_text(text: str) -> str:
    return " ".join(text.casefold().split())


def verify_bank(entries: Sequence[tuple[str, Template]], *, composition: bool) -> list[Violation]:
    """Cross-file rules over ``(file, template)`` pairs; composition rules if asked."""
    out: list[Violation] = []
    first_file: dict[str, str] = {}
    for file, t in entries:
        if t.id in first_file:
            out.append(
                Violation(file, "id", f"template id {t.id!r} is also used by {first_file[t.id]}")
            )
        else:
            first_file[t.id] = file

    first_text: dict[str, tuple[str, str]] = {}
    for file, t in entries:
        for fact in t.facts:
            key = _normal_text(fact.text)
            if key in first_text:
                other_file, other_id = first_text[key]
                out.append(
                    Violation(
                        file, fact.id, f"same text as {other_file} {other_id}; texts must be unique"
                    )
                )
            else:
                first_text[key] = (file, fact.id)

    out += _check_names_of_other_templates(entries)
    if composition:
        out += _check_composition([t for _, t in entries])
        out += design.check_bank_design([t for _, t in entries], display_name(bank_dir()))
    return out


def _check_names_of_other_templates(entries: Sequence[tuple[str, Template]]) -> list[Violation]:
    """A title or description naming another template's option (exact case, whole words) is
    a stale or borrowed name: the reader would look for an option that is not there."""
    owners: dict[str, list[str]] = defaultdict(list)
    for _, t in entries:
        for option in t.options:
            owners[option].append(t.id)
    if not owners:
        return []
    out = []
    for file, t in entries:
        own = _names_pattern(tuple(t.options))
        for where in ("title", "description"):
            # Blank out the template's own options first: "Harbor" must not be found inside
            # the own option "Harbor View".
            text = own.sub(" ", unicodedata.normalize("NFKC", getattr(t, where)))
            # a substring test first: the whole-word pattern runs only on the few candidates
            candidates = tuple(n for n in owners if n in text and n not in t.options)
            if not candidates:
                continue
            for name in dict.fromkeys(_names_pattern(candidates).findall(text)):
                out.append(
                    Violation(
                        file,
                        where,
                        f"names {name!r}, an option of {', '.join(owners[name])} and not of "
                        f"this template",
                    )
                )
    return out


def _names_pattern(names: tuple[str, ...]) -> re.Pattern[str]:
    """One pattern matching any of ``names`` as whole words (exact case), longest first."""
    ordered = sorted(set(names), key=len, reverse=True)
    return re.compile("|".join(rf"(?<!\w){re.escape(n)}(?!\w)" for n in ordered))


def _check_composition(templates: Sequence[Template]) -> list[Violation]:
    out: list[Violation] = []
    where = display_name(bank_dir())
    ids = {t.id for t in templates}
    main = [t for t in templates if not t.pilot]
    pilot = [t for t in templates if t.pilot]
    n_main = MAIN_PER_DOMAIN * len(DOMAINS)
    if len(main) != n_main:
        out.append(Violation(where, "bank", f"expected {n_main} main templates, found {len(main)}"))
    if len(pilot) != _N_PILOT:
        out.append(
            Violation(where, "bank", f"expected {_N_PILOT} pilot templates, found {len(pilot)}")
        )
    for domain in DOMAINS:
        expected = [f"{domain}-0{k}" for k in range(1, MAIN_PER_DOMAIN + 1)]
        missing = [i for i in expected if i not in ids]
        extra = sorted(t.id for t in main if t.domain == domain and t.id not in expected)
        if missing or extra:
            parts = []
            if missing:
                parts.append(f"missing {', '.join(missing)}")
            if extra:
                parts.append(f"unexpected {', '.join(extra)}")
            out.append(
                Violation(
                    where,
                    f"bank.{domain}",
                    f"domain needs exactly {MAIN_PER_DOMAIN} main templates "
                    f"({expected[0]}..{expected[-1]}): {'; '.join(parts)}",
                )
            )
    return out
