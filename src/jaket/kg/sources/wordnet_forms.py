"""The forms of a WordNet lemma and where they occur in a text (:mod:`jaket.kg.sources.wordnet`).

A usage example is linked to its synset where one of the synset's lemma forms occurs in it:
the lemma itself, its regular inflections (plural, third person, past, participles, comparative
and superlative, by the usual English spelling rules) and WordNet's exception lists
(``noun.exc``, ``verb.exc``, ...), matched case-insensitively on word boundaries with ``_``,
``-`` and spaces interchangeable.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from jaket.jsonio import quote
from jaket.kg.errors import Problem

#: part-of-speech codes as inputs write them -> WordNet's (satellite adjectives ``s`` count as ``a``)
POS_CODES = {"n": "n", "v": "v", "a": "a", "s": "a", "r": "r", "noun": "n", "verb": "v",
             "adj": "a", "adjective": "a", "adv": "r", "adverb": "r"}


def part_of_speech(value, path, line: int | None, problems: list[Problem]) -> str | None:
    """WordNet's code (``n``, ``v``, ``a``, ``r``) of a part of speech an input gives (None when
    it gives none); an unknown one is a problem ``path:line`` (and None)."""
    if value is None or value == "":
        return None
    code = POS_CODES.get(str(value).strip().lower())
    if code is None:
        problems.append(Problem(str(path), line, f"unknown part of speech {quote(value)} "
                                                 f"(one of n, v, a, r or noun, verb, adj, adv)"))
    return code


#: an entity id in WordNet's naming, ``lemma.pos.NN`` (``bank.n.01``, ``sit.v.01``)
_WORDNET_ID = re.compile(r"^(?P<lemma>.+)\.(?P<pos>[nvasr])\.\d+$")


def id_part_of_speech(entity_id: str) -> str | None:
    """WordNet's code (``n``, ``v``, ``a``, ``r``; a satellite ``s`` as ``a``) of an entity id in
    WordNet's naming (``bank.n.01``), or None for any other id."""
    match = _WORDNET_ID.match(entity_id)
    return POS_CODES[match["pos"]] if match else None


_VOWELS = set("aeiou")

def _doubles(word: str) -> bool:
    """Whether the final consonant may double before -ed/-ing/-er (stop -> stopped, big -> bigger)."""
    return (len(word) >= 3 and word[-1] not in _VOWELS and word[-1] not in "wxy"
            and word[-2] in _VOWELS and word[-3] not in _VOWELS and word[-1].isalpha())

def regular_inflections(word: str, pos: str) -> set[str]:
    """The base form and the regular inflections of one lower-case word for a part of speech
    (``n``, ``v``, ``a``/``s``, ``r``). Over-generates on purpose: a form is only used when it
    occurs in the example sentence."""
    forms = {word}
    if not word or not word[-1].isalpha():
        return forms
    consonant_y = len(word) >= 2 and word[-1] == "y" and word[-2] not in _VOWELS
    if pos in ("n", "v"):  # plural / third person singular
        forms.add(word + "s")
        forms.add(word + "es")
        if consonant_y:
            forms.add(word[:-1] + "ies")
    if pos == "n":
        if word.endswith("f"):
            forms.add(word[:-1] + "ves")
        elif word.endswith("fe"):
            forms.add(word[:-2] + "ves")
        if word.endswith("man"):
            forms.add(word[:-3] + "men")
    elif pos == "v":
        stem = word[:-1] if word.endswith("e") else word
        forms.update((stem + "ed", stem + "ing", word + "ed"))
        if word.endswith("e"):
            forms.add(word + "ing")  # dye -> dyeing, see -> seeing
        if word.endswith("ie"):
            forms.add(word[:-2] + "ying")
        if consonant_y:
            forms.add(word[:-1] + "ied")
        if _doubles(word):
            forms.update((word + word[-1] + "ed", word + word[-1] + "ing"))
        if word.endswith("c"):
            forms.update((word + "ked", word + "king", word + "ks"))
    elif pos in ("a", "s", "r"):
        stem = word[:-1] if word.endswith("e") else word
        forms.update((stem + "er", stem + "est"))
        if consonant_y:
            forms.update((word[:-1] + "ier", word[:-1] + "iest"))
        if _doubles(word):
            forms.update((word + word[-1] + "er", word + word[-1] + "est"))
    return forms

_SEPARATORS = re.compile(r"[\s_\-]+")

def lemma_forms(lemma: str, pos: str, exceptions: dict[str, list[str]] | None = None) -> set[str]:
    """Every surface form of a lemma searched for in examples: lower case, words separated by one
    space (hyphens and underscores become spaces), the first and the last word inflected."""
    exceptions = exceptions or {}
    words = [w for w in _SEPARATORS.split(lemma.lower()) if w]
    if not words:
        return set()
    whole = " ".join(words)
    forms = {whole}
    forms.update(exceptions.get(whole, ()))
    word_pos = "a" if pos == "s" else pos

    def word_forms(word: str) -> set[str]:
        return regular_inflections(word, word_pos) | set(exceptions.get(word, ()))

    for k, word in enumerate(words):  # one word inflected at a time (look up -> looked up)
        forms.update(" ".join(words[:k] + [f] + words[k + 1:]) for f in word_forms(word))
    return {_SEPARATORS.sub(" ", f).strip() for f in forms if f.strip()}

def _normalise(text: str) -> str:
    """Lower case with hyphens and underscores as spaces, keeping every character's position."""
    lowered = text.lower()
    if len(lowered) != len(text):
        lowered = "".join(c.lower() if len(c.lower()) == 1 else c for c in text)
    return lowered.replace("-", " ").replace("_", " ")

def find_mention(text: str, forms: Iterable[str]) -> tuple[int, int] | None:
    """The character span of the best occurrence of any form in ``text`` (case-insensitive, on
    word boundaries; hyphens in the text match spaces): the longest, then the earliest."""
    normalised = _normalise(text)
    best: tuple[int, int] | None = None
    for form in forms:
        length = len(form)
        start = normalised.find(form)
        while start >= 0:
            end = start + length
            if (start == 0 or not normalised[start - 1].isalnum()) and \
                    (end == len(normalised) or not normalised[end].isalnum()):
                if best is None or length > best[1] - best[0] or \
                        (length == best[1] - best[0] and start < best[0]):
                    best = (start, end)
                break
            start = normalised.find(form, start + 1)
    return best
