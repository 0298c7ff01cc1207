"""English inflections of surface forms, for the gazetteer (:mod:`jaket.kg.linking`).

A text writes a KG's name inflected: ``"wolves"`` for ``wolf``, ``"baked"`` for ``bake``, ``"sat"``
for ``sit``. :func:`inflection_bases` guesses the base forms of a word, each with the parts of
speech it is an inflection in: the irregular forms of WordNet's exception lists (``noun.exc``,
``verb.exc``, ``adj.exc``, ``adv.exc``, shipped with WordNet 3.0 in ``wn``; read for any KG, as
English morphology), the regular plural / third person (:func:`singular_forms`) and the regular
``-ed`` / ``-ing`` forms of verbs. The guesses over-generate on purpose: the gazetteer looks each
one up, and a wrong one names nothing.
"""

from __future__ import annotations

import logging
from functools import lru_cache

from jaket.kg.sources.wordnet_db import irregular_bases
from jaket.paths import MissingResourceError

log = logging.getLogger(__name__)

#: plural -> singular for common irregular English nouns
_IRREGULAR_PLURALS = {
    "men": "man", "women": "woman", "children": "child", "people": "person", "mice": "mouse",
    "geese": "goose", "teeth": "tooth", "feet": "foot", "oxen": "ox", "lice": "louse",
    "dice": "die", "criteria": "criterion", "phenomena": "phenomenon", "cacti": "cactus",
    "fungi": "fungus", "nuclei": "nucleus", "bacteria": "bacterium", "data": "datum",
}
_ES_STEMS = ("s", "x", "z", "ch", "sh", "o")


def singular_forms(token: str) -> tuple[str, ...]:
    """Candidate singulars of an English plural ``token`` (empty when it does not look plural).

    Regular rules (``-ies -> -y / -ie``, ``-ves -> -f / -fe``, ``-es`` after a sibilant or ``o``,
    ``-s``) and a short list of irregular nouns; letter case is kept. Only a guess: the caller
    looks the candidates up in the gazetteer, so a wrong one simply finds nothing.
    """
    lower = token.lower()
    if lower in _IRREGULAR_PLURALS:
        singular = _IRREGULAR_PLURALS[lower]
        if token.isupper():
            return (singular.upper(),)
        return (singular.capitalize() if token[0].isupper() else singular,)
    if len(token) < 4 or not token.isalpha() or lower[-1] != "s" or lower.endswith(("ss", "us", "is")):
        return ()
    if lower.endswith("ies"):  # berries; movies, pies
        return (token[:-3] + ("Y" if token[-3].isupper() else "y"), token[:-1])
    forms: list[str] = []
    if lower.endswith("ves"):  # wolves, knives
        forms += [token[:-3] + "f", token[:-3] + "fe"]
    if lower.endswith("es") and lower[:-2].endswith(_ES_STEMS):
        # boxes, churches, glasses: "-es" first; horses, shoes: "-s" first
        if lower[:-2].endswith(("ss", "x", "z", "ch", "sh")):
            return tuple(forms + [token[:-2], token[:-1]])
        return tuple(forms + [token[:-1], token[:-2]])
    forms.append(token[:-1])
    return tuple(forms)


def _restore_case(like: str, word: str) -> str:
    """``word`` (lower case) written with the capitals of ``like``: all capitals, a capital first
    letter, or as it is."""
    if like.isupper() and len(like) > 1:
        return word.upper()
    return word[:1].upper() + word[1:] if like[:1].isupper() else word


def _ick(stem: str) -> bool:
    """A stem of ``picnicked`` / ``panicking``: a verb in ``-ic`` takes a ``k`` before ``-ed`` / ``-ing``."""
    return len(stem) > 5 and stem.endswith("ick")


def _verb_bases(word: str) -> list[str]:
    """Guesses at the base of a lower-case ``-ed`` / ``-ing`` form (``baked -> bake``, ``stopped ->
    stop``, ``carried -> carry``, ``dying -> die``); empty for anything else."""
    out: list[str] = []
    if word.endswith("ied") and len(word) > 4:
        out.append(word[:-3] + "y")
    if word.endswith("ed") and len(word) > 4:
        stem = word[:-2]
        out += [stem, word[:-1]]
        if (len(stem) > 2 and stem[-1] == stem[-2] and stem[-1] not in "aeiouls") or _ick(stem):
            out.append(stem[:-1])
    elif word.endswith("ing") and len(word) > 4:
        stem = word[:-3]
        if stem.endswith("y") and len(stem) > 2:
            out.append(stem[:-1] + "ie")
        out += [stem, stem + "e"]
        if (stem[-1] == stem[-2] and stem[-1] not in "aeiouls") or _ick(stem):
            out.append(stem[:-1])
    return out


@lru_cache(maxsize=1)
def _irregular() -> dict[str, dict[str, str]]:
    """WordNet's exception lists (inflected -> base -> parts of speech), or nothing when WordNet
    is not installed."""
    try:
        return irregular_bases()
    except (MissingResourceError, OSError) as error:  # pragma: no cover - wn is a dependency
        log.warning("irregular English inflections are not folded: %s", error)
        return {}


@lru_cache(maxsize=1 << 16)
def inflection_bases(token: str, regular: bool = True) -> tuple[tuple[str, str], ...]:
    """``(base, parts of speech)`` for every candidate base form of an inflected English word
    ``token`` (empty when it does not look inflected), in order: the irregular bases of WordNet's
    exception lists with their parts of speech (``sat -> sit, "v"``; ``geese -> goose, "n"``;
    ``better -> good, "a"`` and ``well, "ar"``), the singulars of :func:`singular_forms` (also the
    bases of a third person: ``runs -> run, "nv"``), then the regular ``-ed`` / ``-ing`` rules of
    verbs (``baked -> bake, "v"``, ``stopping -> stop, "v"``). Letter case follows ``token``. Only
    guesses: the caller looks them up in the gazetteer, so a wrong one finds nothing. Comparatives
    are folded only where irregular (``better -> good``): a rule for ``-er`` would turn ``corner``
    into ``corn``. ``regular=False``: the irregular bases only."""
    if not token or not token.isalpha():
        return ()
    lower = token.lower()
    found: dict[str, str] = {}
    guesses = [*((b, "nv") for b in singular_forms(lower)), *((b, "v") for b in _verb_bases(lower))] \
        if regular else []
    for base, pos in (*_irregular().get(lower, {}).items(), *guesses):
        if base != lower:
            found[base] = found.get(base, "") + "".join(p for p in pos if p not in found.get(base, ""))
    if lower != token:
        return tuple((_restore_case(token, base), pos) for base, pos in found.items())
    return tuple(found.items())


def base_forms(token: str, regular: bool = True) -> tuple[str, ...]:
    """The candidate base forms of :func:`inflection_bases`, without their parts of speech."""
    return tuple(base for base, _ in inflection_bases(token, regular))


__all__ = ["base_forms", "inflection_bases", "singular_forms"]
