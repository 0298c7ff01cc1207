"""The knowledge probe of issue 66 (results/metaqa_recall.py): each probe text says one triple with
the tail's name replaced by the mask token, the tail linked at the mask and the head at its name."""

from __future__ import annotations

import numpy as np

from jaket.kg.verbalize import Phrasing
from jaket.tasks.kgqa.data import kb_to_kg, read_kb
from jaket.tasks.kgqa.run import relation_phrasing
from results.metaqa_recall import probe_texts


def test_the_tail_is_masked_and_both_mentions_sit_on_their_words(tmp_path):
    (tmp_path / "kb.txt").write_text("Kismet|directed_by|William Dieterle\nKismet|release_year|1944\n"
                                     "Kismet|has_genre|Drama\n", encoding="utf-8")
    kg = kb_to_kg(read_kb(tmp_path / "kb.txt"))
    phrasings = [Phrasing(*relation_phrasing(str(r), str(n))) for r, n in zip(kg.relation_ids, kg.relation_names)]
    corpus = probe_texts(kg, np.asarray(kg.triples), phrasings, "[MASK]")
    assert corpus.texts == ["Kismet was directed by [MASK].", "Kismet was released in [MASK].",
                            "Kismet is a [MASK] film."]
    names = list(kg.entity_names)
    for text, mentions, (h, _, t) in zip(corpus.texts, corpus.mentions, np.asarray(kg.triples).tolist()):
        head, tail = mentions
        assert text[head.start:head.end] == "Kismet" and head.entity == h
        assert text[tail.start:tail.end] == "[MASK]" and tail.entity == t
        assert names[t] not in text
