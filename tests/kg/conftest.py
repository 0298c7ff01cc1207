"""Fixtures and hypothesis strategies for the KG data layer."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import strategies as st

from jaket.kg.graph import KnowledgeGraph
from jaket.kg.toy import toy_kg


@pytest.fixture
def toy():
    return toy_kg()


@pytest.fixture(scope="session")
def bert_tokenizer(tiny_bert_dir):
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(tiny_bert_dir)


@pytest.fixture(scope="session")
def roberta_tokenizer():
    """A RoBERTa-style byte-level BPE fast tokenizer trained here.

    (Built directly rather than from the ``tiny_roberta_dir`` fixture: with Transformers 5,
    ``RobertaTokenizerFast(vocab_file=..., merges_file=...)`` there encodes every text as the
    special tokens alone.)
    """
    from tokenizers import ByteLevelBPETokenizer
    from tokenizers.processors import RobertaProcessing
    from transformers import PreTrainedTokenizerFast

    bpe = ByteLevelBPETokenizer(trim_offsets=True)
    bpe.train_from_iterator(_BPE_TRAINING_TEXT * 20, vocab_size=400, min_frequency=1,
                            special_tokens=["<s>", "<pad>", "</s>", "<unk>", "<mask>"])
    bpe._tokenizer.post_processor = RobertaProcessing(("</s>", 2), ("<s>", 0), trim_offsets=True)
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=bpe._tokenizer, bos_token="<s>",
                                        eos_token="</s>", pad_token="<pad>", unk_token="<unk>",
                                        mask_token="<mask>", cls_token="<s>", sep_token="</s>")
    assert len(tokenizer("dog", add_special_tokens=False)["input_ids"]) > 0
    return tokenizer


_BPE_TRAINING_TEXT = [
    "the dog barked at the cat", "a member of the genus Canis", "an animal that barks",
    "the sun is the star at the center of the solar system", "snowboarding is unbelievable",
]

_ID_ALPHABET = st.characters(blacklist_characters="\t\n\r\x00", blacklist_categories=("Cs",))
_TEXT = st.text(st.characters(blacklist_categories=("Cs",)), max_size=12)


@st.composite
def knowledge_graphs(draw, max_entities: int = 12, max_relations: int = 4, max_triples: int = 40,
                     unicode_strings: bool = False) -> KnowledgeGraph:
    """Random small KGs (possibly with isolated entities, duplicate triples and self-loops)."""
    n = draw(st.integers(1, max_entities))
    p = draw(st.integers(1, max_relations))
    t = draw(st.integers(0, max_triples))
    if unicode_strings:
        entity_ids = draw(st.lists(st.text(_ID_ALPHABET, min_size=1, max_size=8), min_size=n,
                                   max_size=n, unique=True))
        relation_ids = draw(st.lists(st.text(_ID_ALPHABET, min_size=1, max_size=8), min_size=p,
                                     max_size=p, unique=True))
        names = draw(st.lists(_TEXT, min_size=n, max_size=n))
        descriptions = draw(st.lists(_TEXT, min_size=n, max_size=n))
        aliases = draw(st.lists(st.lists(_TEXT, max_size=2), min_size=n, max_size=n))
        categories = sorted(set(draw(st.lists(st.text(_ID_ALPHABET, min_size=1, max_size=5),
                                              max_size=3))))
        relation_names = draw(st.lists(_TEXT, min_size=p, max_size=p))
        relation_descriptions = draw(st.lists(_TEXT, min_size=p, max_size=p))
    else:
        entity_ids = [f"e{i}" for i in range(n)]
        relation_ids = [f"r{i}" for i in range(p)]
        names = [f"entity {i}" for i in range(n)]
        descriptions = [f"entity {i} described" for i in range(n)]
        aliases = [[] for _ in range(n)]
        categories = ["a", "b"]
        relation_names = relation_ids
        relation_descriptions = [f"relation {i}" for i in range(p)]
    category = draw(st.lists(st.integers(-1, len(categories) - 1), min_size=n, max_size=n))
    if unicode_strings:  # the file format stores categories through entities: keep only used ones
        used = sorted({c for c in category if c >= 0})
        category = [used.index(c) if c >= 0 else -1 for c in category]
        categories = [categories[c] for c in used]
    triples = draw(st.lists(st.tuples(st.integers(0, n - 1), st.integers(0, p - 1),
                                      st.integers(0, n - 1)), min_size=t, max_size=t))
    return KnowledgeGraph(
        entity_ids=entity_ids, entity_names=names, entity_descriptions=descriptions,
        entity_aliases=aliases, entity_category=np.array(category, dtype=np.int32),
        category_names=categories, relation_ids=relation_ids, relation_names=relation_names,
        relation_descriptions=relation_descriptions,
        triples=np.array(triples, dtype=np.int32).reshape(-1, 3),
    )
