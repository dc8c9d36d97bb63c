"""Generated tasks: data the project writes itself, seeded, with labels known by construction.

Each section is one task (a dataclass per example and a seeded generator). Nothing here reads a corpus.
"""
from __future__ import annotations

import random
from dataclasses import dataclass

__all__ = ["AgreementExample", "agreement_examples", "agreement_vocabulary", "AGREEMENT_VERBS",
           "DateExample", "DATE_FORMATS", "DATE_YEARS", "date_examples", "date_task", "date_patterns"]


# ----------------------------------------------------------------------------------------------------------------
# Subject-verb agreement across distractors (SLP 9.21: "The flights the airline was cancelling were full.")
# ----------------------------------------------------------------------------------------------------------------
_NOUNS = (("flight", "flights"), ("key", "keys"), ("author", "authors"), ("pilot", "pilots"),
          ("student", "students"), ("senator", "senators"), ("painting", "paintings"), ("dog", "dogs"),
          ("cabinet", "cabinets"), ("airline", "airlines"), ("door", "doors"), ("city", "cities"))
_PREPOSITIONS = ("near", "behind", "with", "for", "beside", "under")
_ADJECTIVES = ("old", "new", "small", "famous", "busy", "red")
_PAST_VERBS = ("saw", "liked", "cancelled", "praised", "found", "visited")  # past tense: no agreement of their own
#: present tense (singular, plural): a relative clause's own verb, agreeing with the clause's subject (the attractor)
_PRESENT_VERBS = (("sees", "see"), ("likes", "like"), ("cancels", "cancel"), ("praises", "praise"), ("finds", "find"),
                  ("visits", "visit"))
#: the verb to predict after the prefix, by the subject's number: label 0 = singular, 1 = plural
AGREEMENT_VERBS: tuple[str, str] = ("is", "are")


@dataclass(frozen=True)
class AgreementExample:
    """One sentence prefix whose next word is a verb that must agree in number with its subject (tokens[1]).

    "the flights that the airline cancelled near the city" -> "are": the attractors (airline, city) are singular.
    """

    tokens: tuple[str, ...]  # the prefix, up to and not including the verb
    label: int  # 0: the subject is singular (verb "is"), 1: plural ("are")
    phrases: int  # distractor phrases between subject and verb (prepositional phrases and relative clauses)
    distance: int  # words between the subject noun and the verb
    attractors: int  # nouns between subject and verb whose number differs from the subject's

    @property
    def verb(self) -> str:
        return AGREEMENT_VERBS[self.label]


def agreement_vocabulary() -> list[str]:
    """Every word the generator can emit (articles, nouns in both numbers, prepositions, ...) and both verbs."""
    words = ["the", "that"] + [w for pair in _NOUNS for w in pair] + list(_PREPOSITIONS) + list(_ADJECTIVES)
    return words + list(_PAST_VERBS) + [w for pair in _PRESENT_VERBS for w in pair] + list(AGREEMENT_VERBS)


def _noun_phrase(rng: random.Random, plural: bool) -> list[str]:
    """'the (adjective) noun' with the noun in the given number."""
    adj = [rng.choice(_ADJECTIVES)] if rng.random() < 0.3 else []
    return ["the", *adj, rng.choice(_NOUNS)[int(plural)]]


def agreement_examples(n: int, max_phrases: int = 4, *, seed: int = 0, p_relative: float = 0.4,
                       p_attractor: float = 0.5, p_present: float = 0.0) -> list[AgreementExample]:
    """`n` agreement prefixes with 0..max_phrases distractor phrases each (uniformly), seeded.

    A distractor phrase is a prepositional phrase ("near the old doors") or, with probability `p_relative`, an
    object relative clause ("that the airline cancelled"); each distractor noun has the opposite number of the subject
    with probability `p_attractor`. With probability `p_present` a relative clause's verb is in the present tense and
    agrees with the clause's own subject ("the flights that the airline cancels" -> "are"): a language model reading
    the sentence must then get two agreements right, the inner one with the nearest noun and the outer one past it.
    Half of the subjects are plural. Only `random.Random(seed)` is used; with p_present=0 (the default) the draws,
    and so the examples, are those of the generator without that option.
    """
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise ValueError(f"n (number of examples) must be a positive int, got {n!r}")
    if isinstance(max_phrases, bool) or not isinstance(max_phrases, int) or max_phrases < 0:
        raise ValueError(f"max_phrases must be a non-negative int, got {max_phrases!r}")
    for name, p in (("p_relative", p_relative), ("p_attractor", p_attractor), ("p_present", p_present)):
        if not 0 <= p <= 1:
            raise ValueError(f"{name} is a probability and must be in [0, 1], got {p!r}")
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        plural = rng.random() < 0.5
        tokens = ["the", rng.choice(_NOUNS)[int(plural)]]
        k = rng.randint(0, max_phrases)
        attractors = 0
        for _ in range(k):
            other = plural != (rng.random() < p_attractor)             # the distractor noun's number
            attractors += other != plural
            if rng.random() < p_relative:
                clause = ["that", *_noun_phrase(rng, other)]
                if p_present and rng.random() < p_present:                 # the clause's verb agrees with its noun
                    tokens += [*clause, rng.choice(_PRESENT_VERBS)[int(other)]]
                else:
                    tokens += [*clause, rng.choice(_PAST_VERBS)]
            else:
                tokens += [rng.choice(_PREPOSITIONS), *_noun_phrase(rng, other)]
        out.append(AgreementExample(tuple(tokens), int(plural), k, len(tokens) - 2, attractors))
    return out


# ----------------------------------------------------------------------------------------------------------------
# Date normalisation (chapter 5): "3rd of March 1999" -> "1999-03-03", many surface forms, crisp alignments
# ----------------------------------------------------------------------------------------------------------------
_MONTHS = ("January", "February", "March", "April", "May", "June", "July", "August", "September", "October",
           "November", "December")
_WEEKDAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")


def _ordinal(n: int) -> str:
    return f"{n}{'th' if 10 <= n % 100 <= 20 else {1: 'st', 2: 'nd', 3: 'rd'}.get(n % 10, 'th')}"


#: every surface form the generator writes, by name: each takes a datetime.date and returns the text
DATE_FORMATS = {
    "d_month_y": lambda d: f"{d.day} {_MONTHS[d.month - 1]} {d.year}",                     # 3 March 1999
    "dth_of_month_y": lambda d: f"{_ordinal(d.day)} of {_MONTHS[d.month - 1]} {d.year}",   # 3rd of March 1999
    "the_dth_of_month_y": lambda d: f"the {_ordinal(d.day)} of {_MONTHS[d.month - 1].lower()}, {d.year}",
    "month_d_y": lambda d: f"{_MONTHS[d.month - 1]} {d.day}, {d.year}",                    # March 3, 1999
    "month_dth_y": lambda d: f"{_MONTHS[d.month - 1]} {_ordinal(d.day)}, {d.year}",        # March 3rd, 1999
    "d_mon_y": lambda d: f"{d.day} {_MONTHS[d.month - 1][:3]} {d.year}",                   # 3 Mar 1999
    "mon_d_y": lambda d: f"{_MONTHS[d.month - 1][:3]} {d.day} {d.year}",                   # Mar 3 1999
    "dd_mon_yy": lambda d: f"{d.day:02d}-{_MONTHS[d.month - 1][:3].upper()}-{d.year % 100:02d}",  # 03-MAR-99
    "us_slash": lambda d: f"{d.month}/{d.day}/{d.year}",                                   # 3/3/1999 (m/d/y)
    "eu_dots": lambda d: f"{d.day:02d}.{d.month:02d}.{d.year}",                            # 03.03.1999 (d.m.y)
    "weekday_month_d_y": lambda d: f"{_WEEKDAYS[d.weekday()]}, {_MONTHS[d.month - 1]} {d.day}, {d.year}",
    "weekday_the_dth_of_month_y": lambda d: (f"{_WEEKDAYS[d.weekday()]} the {_ordinal(d.day)} of "
                                             f"{_MONTHS[d.month - 1]} {d.year}"),  # Wednesday the 3rd of March 1999
    "y_month_d": lambda d: f"{d.year}, {_MONTHS[d.month - 1]} {d.day}",                    # 1999, March 3
}
#: the years the generator draws from: a century, so two-digit years (dd_mon_yy) are unambiguous, read as POSIX
#: strptime's %y does (69-99 -> 19xx, 00-68 -> 20xx)
DATE_YEARS = (1969, 2068)


def date_patterns() -> dict[str, str]:
    """A regular expression for each surface form of :data:`DATE_FORMATS`, made from the form's own text for a probe
    date, so a live model can say when a date is written in a form it never saw (the export writes them into the
    manifest the page reads; the kernel compiles them). It checks the shape (names, numbers, punctuation), not the
    calendar. The patterns use only syntax Python's ``re`` and JavaScript's ``RegExp`` read alike."""
    import datetime
    import re

    probe = datetime.date(2033, 11, 22)                                           # every field tells itself apart
    month, weekday = _MONTHS[probe.month - 1], _WEEKDAYS[probe.weekday()]
    any_of = lambda words: "(?:" + "|".join(words) + ")"                          # noqa: E731
    fields = [(weekday, any_of(_WEEKDAYS)),                                       # "November" is cut before "Nov"
              (month, any_of(_MONTHS)), (month.lower(), any_of(m.lower() for m in _MONTHS)),
              (month[:3], any_of(m[:3] for m in _MONTHS)),
              (month[:3].upper(), any_of(m[:3].upper() for m in _MONTHS)),
              ("22nd", r"\d{1,2}(?:st|nd|rd|th)"), ("2033", r"\d{4}"), ("33", r"\d{2}"), ("22", r"\d{1,2}"),
              ("11", r"\d{1,2}")]
    literal = lambda text: re.escape(text).replace("\\ ", " ")                  # noqa: E731  (JS reads it too)
    out = {}
    for form, write in DATE_FORMATS.items():
        parts = [(False, write(probe))]                                           # (is a pattern, text)
        for field, pattern in fields:
            parts = [q for is_pattern, text in parts
                     for q in ([(True, text)] if is_pattern else _cut(text, field, pattern))]
        out[form] = "^" + "".join(t if is_pattern else literal(t) for is_pattern, t in parts) + "$"
    return out


def _cut(text: str, field: str, pattern: str) -> list[tuple[bool, str]]:
    """``text`` as literal pieces with ``pattern`` wherever ``field`` was."""
    pieces = text.split(field)
    out = [(False, pieces[0])]
    for piece in pieces[1:]:
        out += [(True, pattern), (False, piece)]
    return [(is_pattern, t) for is_pattern, t in out if t]


@dataclass(frozen=True)
class DateExample:
    """A date written one way (``source``) and its ISO 8601 form (``target``, YYYY-MM-DD)."""

    source: str
    target: str
    form: str  # the name of the surface form in DATE_FORMATS


def _date_split(d) -> str:
    """Which split a date belongs to, fixed by the date itself: no date is seen in two splits."""
    import zlib
    b = zlib.crc32(d.isoformat().encode()) % 20
    return "test" if b == 0 else "valid" if b == 1 else "train"


def date_examples(n: int, *, seed: int = 0, split: str = "train", forms=None) -> list[DateExample]:
    """``n`` seeded examples of the date-normalisation task from one split (``"train"``, ``"valid"`` or ``"test"``).

    Dates are drawn uniformly from DATE_YEARS and the surface form uniformly from ``forms`` (default: all of
    DATE_FORMATS). Each date belongs to exactly one split (about 90/5/5 of all dates), so test dates are never
    trained on. The same ``seed`` gives the same examples.
    """
    import datetime
    if isinstance(n, bool) or not isinstance(n, int) or n < 0:
        raise ValueError(f"n must be a non-negative int (the number of examples), got {n!r}")
    if split not in ("train", "valid", "test"):
        raise ValueError(f"split must be 'train', 'valid' or 'test', got {split!r}")
    forms = list(DATE_FORMATS) if forms is None else list(forms)
    unknown = [f for f in forms if f not in DATE_FORMATS]
    if unknown or not forms:
        raise ValueError(f"unknown date forms {unknown}; choose from {', '.join(DATE_FORMATS)}")
    rng = random.Random(f"dates-{seed}-{split}")
    first = datetime.date(DATE_YEARS[0], 1, 1).toordinal()
    last = datetime.date(DATE_YEARS[1], 12, 31).toordinal()
    out: list[DateExample] = []
    while len(out) < n:
        d = datetime.date.fromordinal(rng.randint(first, last))
        if _date_split(d) != split:
            continue
        form = rng.choice(forms)
        out.append(DateExample(DATE_FORMATS[form](d), d.isoformat(), form))
    return out


def date_task(n_train: int = 10_000, n_valid: int = 500, n_test: int = 500, *, seed: int = 0, forms=None
              ) -> dict[str, list[DateExample]]:
    """The three splits of the date task: ``{"train": [...], "valid": [...], "test": [...]}``."""
    return {split: date_examples(n, seed=seed, split=split, forms=forms)
            for split, n in (("train", n_train), ("valid", n_valid), ("test", n_test))}
