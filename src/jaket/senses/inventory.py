"""The sense inventory: which entities of a sense KG a word can name.

:class:`SenseInventory` maps a lemma and part of speech to the candidate entities of a KG: the
entities whose name or alias is the lemma (case, spaces and underscores ignored, :data:`lemma_key`),
of that part of speech when the KG's ids follow WordNet's ``lemma.pos.NN`` naming, in WordNet's sense
order (the order of its ``index.*`` files: the first is the most frequent sense) when the KG is
WordNet's. :func:`load_sense_kg` gives the sense KG itself: a KG folder, or all of WordNet 3.0.
Word in context, word-sense disambiguation, sense linking and ``jaket link --model`` all read their
candidates here.
"""

from __future__ import annotations

from pathlib import Path

from jaket.kg.graph import KnowledgeGraph, name_key
from jaket.kg.io import load_kg
from jaket.kg.sources.registry import build_source
from jaket.kg.sources.wordnet import sense_order
from jaket.kg.sources.wordnet_forms import id_part_of_speech

#: how lemmas are compared: lower case, runs of spaces / underscores as one space
lemma_key = name_key


class SenseInventory:
    """Lemma and part of speech -> candidate entity indices of ``kg`` (module docstring)."""

    def __init__(self, kg: KnowledgeGraph, sense_order: dict[tuple[str, str], list[str]] | None = None):
        self.kg = kg
        self._by_key: dict[tuple[str, str | None], list[int]] = {}
        #: whether some entity's id carries a part of speech (WordNet's naming), so one can restrict
        self.has_pos = False
        for index, (entity_id, name, aliases) in enumerate(zip(kg.entity_ids, kg.entity_names, kg.entity_aliases)):
            pos = id_part_of_speech(entity_id)
            self.has_pos |= pos is not None
            for word in {lemma_key(name), *(lemma_key(a) for a in aliases)}:
                self._by_key.setdefault((word, pos), []).append(index)
                if pos is not None:
                    self._by_key.setdefault((word, None), []).append(index)
        self._rank: dict[tuple[str, str], dict[int, int]] = {}
        if sense_order:
            position = {entity_id: i for i, entity_id in enumerate(kg.entity_ids)}
            for (word, pos), ids in sense_order.items():
                self._rank[(lemma_key(word), pos)] = {position[e]: r for r, e in enumerate(ids) if e in position}

    @classmethod
    def for_wordnet(cls, kg: KnowledgeGraph) -> "SenseInventory":
        """An inventory in WordNet's sense order (:func:`jaket.kg.sources.wordnet.sense_order`)."""
        return cls(kg, sense_order())

    def candidates(self, lemma: str, pos: str | None = None) -> list[int]:
        """The entities the lemma can name: the most frequent sense first when known, then by index."""
        key = lemma_key(lemma)
        found = self._by_key.get((key, pos), [])
        rank = self._rank.get((key, pos), {}) if pos is not None else {}
        return sorted(set(found), key=lambda e: (rank.get(e, 1 << 30), e))


def load_sense_kg(path: Path | None = None) -> KnowledgeGraph:
    """The sense KG: a KG folder, or (None) the whole of WordNet 3.0 (117,659 synsets)."""
    if path is None:
        return build_source("wordnet", max_entities=None, seed=0).kg
    return load_kg(path)


__all__ = ["SenseInventory", "lemma_key", "load_sense_kg"]
