"""The data layer's public names exist and work together on the toy KG."""

from __future__ import annotations

import numpy as np
import torch

from jaket.kg.corpus import collate_texts, encode_descriptions
from jaket.kg.sampling import random_walks, sample_neighbors
from jaket.kg.toy import toy_kg


def test_toy_kg_shape():
    kg, corpus = toy_kg()
    assert kg.num_entities == 40 and kg.num_categories == 4 and kg.num_relations == 5
    assert kg.triples.dtype == np.int32 and kg.triples.shape[1] == 3
    assert kg.entity_ids[kg.entity_index("dog")] == "dog"
    assert len(corpus) >= 60
    adjacency = kg.adjacency
    assert adjacency.indptr[-1] == 2 * kg.num_triples
    assert int(kg.degree().sum()) == 2 * kg.num_triples


def test_sample_then_collate(tiny_bert_dir):
    from transformers import AutoTokenizer

    kg, corpus = toy_kg()
    subgraph = sample_neighbors(kg, [kg.entity_index("dog"), kg.entity_index("cat")], (10, 10),
                                np.random.default_rng(0))
    assert subgraph.num_seeds == 2 and subgraph.node_ids[:2].tolist() == [4, 5]
    assert subgraph.edge_index.shape == (2, subgraph.edge_type.numel())
    walks = random_walks(kg, [0, 1], 4, np.random.default_rng(0))
    assert walks.shape == (2, 5) and walks.dtype == np.int64
    tokenizer = AutoTokenizer.from_pretrained(tiny_bert_dir)
    encoded = corpus.encode(tokenizer, max_length=32)
    batch = collate_texts(encoded, [0, 1], tokenizer.pad_token_id)
    assert batch.input_ids.dtype == torch.long and batch.mention_start.numel() == 4
    ids, mask, start, end = encode_descriptions(kg.entity_descriptions[:3], kg.entity_names[:3],
                                                tokenizer)
    assert ids.shape == mask.shape and start.shape == (3,)
    for i in range(3):
        span = tokenizer.decode(ids[i, start[i]:end[i] + 1])
        assert span == kg.entity_names[i]
