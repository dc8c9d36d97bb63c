"""Generated tasks: data the project writes itself, seeded, with labels known by construction.

Each section is one task (a dataclass per example and a seeded generator). Nothing here reads a corpus.
"""
from __future__ import annotations

import random
from dataclasses import dataclass

__all__ = ["AgreementExample", "agreement_examples", "agreement_vocabulary", "AGREEMENT_VERBS"]


# ----------------------------------------------------------------------------------------------------------------
# Subject-verb agreement across distractors (SLP 9.21: "The flights the airline was cancelling were full.")
# ----------------------------------------------------------------------------------------------------------------
_NOUNS = (("flight", "flights"), ("key", "keys"), ("author", "authors"), ("pilot", "pilots"),
          ("student", "students"), ("senator", "senators"), ("painting", "paintings"), ("dog", "dogs"),
          ("cabinet", "cabinets"), ("airline", "airlines"), ("door", "doors"), ("city", "cities"))
_PREPOSITIONS = ("near", "behind", "with", "for", "beside", "under")
_ADJECTIVES = ("old", "new", "small", "famous", "busy", "red")
_PAST_VERBS = ("saw", "liked", "cancelled", "praised", "found", "visited")  # past tense: no agreement of their own
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
    return words + list(_PAST_VERBS) + list(AGREEMENT_VERBS)


def _noun_phrase(rng: random.Random, plural: bool) -> list[str]:
    """'the (adjective) noun' with the noun in the given number."""
    adj = [rng.choice(_ADJECTIVES)] if rng.random() < 0.3 else []
    return ["the", *adj, rng.choice(_NOUNS)[int(plural)]]


def agreement_examples(n: int, max_phrases: int = 4, *, seed: int = 0, p_relative: float = 0.4,
                       p_attractor: float = 0.5) -> list[AgreementExample]:
    """`n` agreement prefixes with 0..max_phrases distractor phrases each (uniformly), seeded.

    A distractor phrase is a prepositional phrase ("near the old doors") or, with probability `p_relative`, an
    object relative clause ("that the airline cancelled"); each distractor noun has the opposite number of the subject
    with probability `p_attractor`. Half of the subjects are plural. Only `random.Random(seed)` is used.
    """
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise ValueError(f"n (number of examples) must be a positive int, got {n!r}")
    if isinstance(max_phrases, bool) or not isinstance(max_phrases, int) or max_phrases < 0:
        raise ValueError(f"max_phrases must be a non-negative int, got {max_phrases!r}")
    for name, p in (("p_relative", p_relative), ("p_attractor", p_attractor)):
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
                tokens += ["that", *_noun_phrase(rng, other), rng.choice(_PAST_VERBS)]
            else:
                tokens += [rng.choice(_PREPOSITIONS), *_noun_phrase(rng, other)]
        out.append(AgreementExample(tuple(tokens), int(plural), k, len(tokens) - 2, attractors))
    return out
