"""A stand-in for jaket.model with the documented API (docs/design.md "Public APIs / jaket.model"),
small and fast, so the training loop, checkpoints and DDP are tested on their own."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
from torch import nn


@dataclass
class _Out:
    hidden: torch.Tensor
    entity_km: torch.Tensor
    mlm_logits: torch.Tensor


class _Language(nn.Module):
    def __init__(self, tokenizer, dim):
        super().__init__()
        self.tokenizer = tokenizer
        self.hidden_size = dim
        self.embed = nn.Embedding(tokenizer.vocab_size, dim)
        self.layer1 = nn.Linear(dim, dim)
        self.layer2 = nn.Linear(dim, dim)
        self.norm = nn.LayerNorm(dim)
        self.dropout = nn.Dropout(0.1)
        self.decoder = nn.Linear(dim, tokenizer.vocab_size)

    def lm1(self, input_ids, attention_mask):
        return self.dropout(torch.tanh(self.layer1(self.embed(input_ids))))

    def lm2(self, z, attention_mask):
        return self.norm(z + torch.tanh(self.layer2(z)))

    def mlm_logits(self, z):
        return self.decoder(z)


class _Memory:
    def __init__(self, n, p, dim, momentum=0.8):
        self.entities = torch.zeros(n, dim)
        self.relations = torch.zeros(p, dim)
        self.momentum = momentum
        self.filled = False

    def entity_rows(self, index):
        return self.entities[index]

    def relation_rows(self, index=None):
        return self.relations if index is None else self.relations[index]

    @torch.no_grad()
    def refresh(self, language, kg, batch_size=64, max_length=64, rank=0, world_size=1, momentum=None,
                entity_subset=None):
        tok = language.tokenizer
        rows = np.arange(kg.num_entities) if entity_subset is None else np.asarray(entity_subset)
        rows = rows[rank::world_size]
        for i in rows:
            ids = torch.tensor(tok(kg.entity_descriptions[i], truncation=True,
                                   max_length=max_length)["input_ids"])[None]
            vec = language.lm1(ids, torch.ones_like(ids))[0].mean(0)
            m = self.momentum if momentum is None else momentum
            self.entities[i] = m * self.entities[i] + (1 - m) * vec
        self.filled = True
        return {"entities": len(rows)}


class FakeJaket(nn.Module):
    def __init__(self, tokenizer, kg, dim=16):
        super().__init__()
        self.language = _Language(tokenizer, dim)
        self.knowledge = nn.Linear(dim, dim)
        self.rel = nn.Embedding(max(1, 2 * kg.num_relations), dim)
        self.fuse = nn.Linear(dim, dim)
        self.category_head = nn.Linear(dim, max(1, kg.num_categories))
        self._relation = nn.Linear(2 * dim, max(1, kg.num_relations))
        self.entity_head = nn.Linear(dim, dim)
        self.memory = _Memory(kg.num_entities, kg.num_relations, dim)

    def relation_head(self, h, t):
        return self._relation(torch.cat([h, t], -1))

    def knowledge_forward(self, subgraph):
        x = self.memory.entity_rows(subgraph.node_ids)
        src, dst = subgraph.edge_index
        msg = x[src] + self.rel(subgraph.edge_type)
        agg = torch.zeros_like(x).index_add(0, dst, msg)
        return torch.tanh(self.knowledge(x + agg))

    def forward(self, text, subgraph, mention_node, fuse_mask):
        e = self.knowledge_forward(subgraph)
        z = self.language.lm1(text.input_ids, text.attention_mask)
        add = torch.zeros_like(z)
        b = text.mention_batch[fuse_mask]
        s = text.mention_start[fuse_mask]
        add = add.index_put((b, s), self.fuse(e[mention_node[fuse_mask]]), accumulate=True)
        h = self.language.lm2(z + add, text.attention_mask)
        return _Out(h, e, self.language.mlm_logits(h))


