"""The four self-supervised tasks of JAKET pre-training (paper, "Pre-training").

Pure functions on tensors / arrays so that each task's sampling is testable on its own:

* :func:`mask_tokens` — masked token prediction: 15% of the non-special, non-padding tokens,
  of which 80% become the mask token, 10% a random token and 10% stay (labels -100 elsewhere);
* :func:`choose_masked_mentions` — masked entity prediction: 15% of the mentions are removed
  (``fuse_mask`` False: no knowledge embedding is fused there);
* :func:`entity_candidates` — for every removed mention, the true entity in column 0, up to
  ``hard`` KG neighbours (hard negatives) and ``random`` uniformly drawn entities; the score is the
  inner product of q = g((Z_s + Z_o) / 2) with each candidate's memory row, trained with
  cross-entropy (target always column 0; a negative equal to the true entity is masked out);
* :func:`homonym_index` — beyond the paper (``tasks.entity_homonym_negatives``): the entities
  sharing a name or alias with each entity (the other senses of its words), drawn as extra hard
  negatives so that masked entity prediction also learns to tell a word's senses apart;
* :func:`role_index` — beyond the paper (``tasks.entity_role_negatives``): the entities playing a
  relation role of each entity (the other tails of a relation it is a tail of, the other heads of
  one it heads: the other directors of a director, the other films of a film), drawn as extra
  hard negatives so that the task must tell apart entities of the same kind, which uniform draws
  over a large KG almost never put side by side;
* :func:`all_entities_loss` — beyond the paper (``tasks.entity_all_candidates``): a removed mention
  scored against every memory row instead of the sampled candidates, the ranking it is evaluated
  by (the memory rows take no gradient, so the whole softmax costs one product);
* :func:`sample_relation_pairs` — relation prediction: triples among the sampled entities whose
  relation the model predicts from the pair's E^KM. Every triple joining the same two entities
  (either direction, any relation: :class:`PairIndex`) is passed to
  ``sample_neighbors(exclude_triples=...)``, so the GNN sees no edge between a pair whose relation
  it predicts. Only positive pairs (true triples) are used: the label space is the P relations,
  with no "no relation" class, so there are no sampled negative pairs; when a pair has several
  relations each triple is its own example (a multi-class loss over a multi-label truth, as in
  the paper).
* entity category prediction uses the category of each sampled entity (entities with category -1
  are skipped and counted).
"""

from __future__ import annotations

import numpy as np
import torch

from jaket.kg.graph import KnowledgeGraph, name_key


def mask_tokens(input_ids: torch.Tensor, special_mask: torch.Tensor, mask_token_id: int,
                vocab_size: int, probability: float = 0.15, generator: torch.Generator | None = None
                ) -> tuple[torch.Tensor, torch.Tensor]:
    """BERT masking. ``special_mask`` is True at special and padding tokens (never masked).

    Returns ``(masked_input_ids, labels)`` with labels -100 where nothing is predicted.
    """
    labels = input_ids.clone()
    probs = torch.full(input_ids.shape, probability)
    probs[special_mask] = 0.0
    chosen = torch.bernoulli(probs, generator=generator).bool()
    labels[~chosen] = -100
    masked = input_ids.clone()
    replace = torch.bernoulli(torch.full(input_ids.shape, 0.8), generator=generator).bool() & chosen
    masked[replace] = mask_token_id
    randomise = (torch.bernoulli(torch.full(input_ids.shape, 0.5), generator=generator).bool()
                 & chosen & ~replace)
    random_ids = torch.randint(vocab_size, input_ids.shape, generator=generator)
    masked[randomise] = random_ids[randomise]
    return masked, labels


def mask_mention_tokens(masked_ids: torch.Tensor, labels: torch.Tensor, input_ids: torch.Tensor,
                        mention_batch: torch.Tensor, mention_start: torch.Tensor, mention_end: torch.Tensor,
                        removed: torch.Tensor, mask_token_id: int, probability: float,
                        generator: torch.Generator | None = None) -> int:
    """Entity-level masking of removed mentions (beyond the paper; ``tasks.mention_token_masking``).

    Each removed mention (``removed`` True) is, with ``probability``, hidden from the text too: every
    token of its inclusive span ``[start, end]`` becomes ``mask_token_id`` in ``masked_ids`` and a
    masked-token target in ``labels`` (its original id), in place. Masked entity prediction must then
    name the entity from its context alone -- what the text says of it, knowledge -- instead of
    linking a name it can read (the paper's task, ``probability`` 0, which draws nothing). Returns
    how many mentions were hidden."""
    if probability <= 0 or not bool(removed.any()):
        return 0
    hide = removed & (torch.rand(len(removed), generator=generator) < probability)
    for b, s, o in zip(mention_batch[hide].tolist(), mention_start[hide].tolist(), mention_end[hide].tolist()):
        labels[b, s:o + 1] = input_ids[b, s:o + 1]
        masked_ids[b, s:o + 1] = mask_token_id
    return int(hide.sum())


def choose_masked_mentions(num_mentions: int, probability: float = 0.15,
                           generator: torch.Generator | None = None) -> torch.Tensor:
    """``fuse_mask`` (M,) bool: False for the ~15% of mentions that are removed and predicted.

    At least one mention is removed whenever there are any, so the task always has a target.
    """
    if num_mentions == 0:
        return torch.ones(0, dtype=torch.bool)
    removed = torch.rand(num_mentions, generator=generator) < probability
    if not removed.any():
        removed[torch.randint(num_mentions, (1,), generator=generator)] = True
    return ~removed


def homonym_index(kg: KnowledgeGraph) -> tuple[np.ndarray, np.ndarray]:
    """``(indptr, homonyms)``, a CSR table: ``homonyms[indptr[e]:indptr[e + 1]]`` are the other
    entities that share a name or alias with entity ``e`` (case and spacing ignored), sorted."""
    by_word: dict[str, list[int]] = {}
    for e, (name, aliases) in enumerate(zip(kg.entity_names, kg.entity_aliases)):
        for word in {name_key(w) for w in [name, *aliases]}:
            by_word.setdefault(word, []).append(e)
    pairs = [(a, b) for group in by_word.values() if len(group) > 1 for a in group for b in group if a != b]
    if not pairs:
        return np.zeros(kg.num_entities + 1, dtype=np.int64), np.zeros(0, dtype=np.int64)
    table = np.unique(np.asarray(pairs, dtype=np.int64), axis=0)
    indptr = np.zeros(kg.num_entities + 1, dtype=np.int64)
    np.add.at(indptr, table[:, 0] + 1, 1)
    return np.cumsum(indptr), table[:, 1].copy()


def role_index(kg: KnowledgeGraph) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """``(role_indptr, roles, pool_indptr, pool)``, two CSR tables: ``roles[role_indptr[e]:role_indptr[e
    + 1]]`` are the roles entity ``e`` plays, a role being ``2 r`` (a head of relation ``r``) or ``2 r + 1``
    (a tail of it), and ``pool[pool_indptr[q]:pool_indptr[q + 1]]`` the entities playing role ``q``,
    sorted and each once."""
    triples = np.asarray(kg.triples, dtype=np.int64).reshape(-1, 3)
    plays = np.concatenate([np.stack([triples[:, 0], 2 * triples[:, 1]], axis=1),
                            np.stack([triples[:, 2], 2 * triples[:, 1] + 1], axis=1)])
    plays = np.unique(plays, axis=0) if len(plays) else np.zeros((0, 2), np.int64)  # sorted by entity, role
    role_indptr = np.zeros(kg.num_entities + 1, dtype=np.int64)
    np.add.at(role_indptr, plays[:, 0] + 1, 1)
    by_role = plays[np.lexsort((plays[:, 0], plays[:, 1]))]
    pool_indptr = np.zeros(2 * kg.num_relations + 1, dtype=np.int64)
    np.add.at(pool_indptr, by_role[:, 1] + 1, 1)
    return np.cumsum(role_indptr), plays[:, 1].copy(), np.cumsum(pool_indptr), by_role[:, 0].copy()


def _sample_roles(index: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray], entities: np.ndarray,
                  count: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """``count`` draws per entity: a role it plays, uniformly, then an entity of that role's pool,
    uniformly (with replacement); ``(ids, ok)``, not ok for an entity that plays no role."""
    role, ok = _sample_rows(index[0], index[1], entities, count, rng)
    ids, found = _sample_rows(index[2], index[3], role.ravel(), 1, rng)  # one draw from each role's pool
    return ids.reshape(role.shape), ok & found.reshape(role.shape)


def _sample_rows(indptr: np.ndarray, values: np.ndarray, entities: np.ndarray, count: int,
                 rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Up to ``count`` draws (with replacement) from each entity's CSR row; ``(ids, ok)``."""
    starts = indptr[entities]
    degree = indptr[entities + 1] - starts
    pick = (rng.random((len(entities), count)) * np.maximum(degree, 1)[:, None]).astype(np.int64)
    ok = np.broadcast_to((degree > 0)[:, None], (len(entities), count)).copy()
    ids = np.where(ok, values[np.where(ok, starts[:, None] + pick, 0)] if len(values) else 0, 0)
    return ids.astype(np.int64), ok


def entity_candidates(kg: KnowledgeGraph, entities: np.ndarray, hard: int, random: int,
                      rng: np.random.Generator, homonyms: tuple[np.ndarray, np.ndarray] | None = None,
                      homonym_count: int = 0, roles: tuple | None = None, role_count: int = 0
                      ) -> tuple[np.ndarray, np.ndarray]:
    """Candidates (k, 1 + hard + homonym_count + role_count + random) int64 and a validity mask of that shape.

    Column 0 is the true entity; then up to ``hard`` KG neighbours (padding invalid), up to
    ``homonym_count`` entities sharing a name with it (``homonyms``: :func:`homonym_index`), up to
    ``role_count`` entities playing a relation role of it (``roles``: :func:`role_index`), then
    ``random`` uniform entities. Candidates equal to the true entity are marked invalid; a count of
    0 draws nothing from ``rng`` (the candidates of a run without it are unchanged).
    """
    entities = np.asarray(entities, dtype=np.int64)
    k = len(entities)
    adjacency = kg.adjacency
    hard_ids = np.zeros((k, hard), dtype=np.int64)
    hard_ok = np.zeros((k, hard), dtype=bool)
    if hard:
        starts = adjacency.indptr[entities]
        degree = adjacency.indptr[entities + 1] - starts
        pick = (rng.random((k, hard)) * np.maximum(degree, 1)[:, None]).astype(np.int64)
        hard_ok = degree[:, None] > 0
        hard_ok = np.broadcast_to(hard_ok, (k, hard)).copy()
        position = np.where(hard_ok, starts[:, None] + pick, 0)
        hard_ids = np.where(hard_ok, adjacency.neighbors[position].astype(np.int64), 0)
    homonym_ids = np.zeros((k, homonym_count), dtype=np.int64)
    homonym_ok = np.zeros((k, homonym_count), dtype=bool)
    if homonym_count:
        if homonyms is None:
            raise ValueError("homonym_count > 0 needs the homonym index (homonym_index(kg))")
        homonym_ids, homonym_ok = _sample_rows(*homonyms, entities, homonym_count, rng)
    role_ids = np.zeros((k, role_count), dtype=np.int64)
    role_ok = np.zeros((k, role_count), dtype=bool)
    if role_count:
        if roles is None:
            raise ValueError("role_count > 0 needs the role index (role_index(kg))")
        role_ids, role_ok = _sample_roles(roles, entities, role_count, rng)
    random_ids = rng.integers(0, kg.num_entities, size=(k, random), dtype=np.int64)
    candidates = np.concatenate([entities[:, None], hard_ids, homonym_ids, role_ids, random_ids], axis=1)
    valid = np.concatenate([np.ones((k, 1), bool), hard_ok, homonym_ok, role_ok, np.ones((k, random), bool)],
                           axis=1)
    valid[:, 1:] &= candidates[:, 1:] != entities[:, None]
    return candidates, valid


def candidate_loss(query: torch.Tensor, candidate_rows: torch.Tensor, valid: torch.Tensor
                   ) -> tuple[torch.Tensor, torch.Tensor]:
    """Cross-entropy over inner products ``q · E^context`` (target column 0) and accuracy."""
    scores = torch.einsum("kf,kcf->kc", query.float(), candidate_rows.float())
    scores = scores.masked_fill(~valid, float("-inf"))
    target = torch.zeros(len(query), dtype=torch.long, device=query.device)
    loss = torch.nn.functional.cross_entropy(scores, target)
    accuracy = (scores.argmax(dim=1) == 0).float().mean()
    return loss, accuracy


def all_entities_loss(query: torch.Tensor, entity_rows: torch.Tensor, truth: torch.Tensor
                      ) -> tuple[torch.Tensor, torch.Tensor]:
    """Cross-entropy of each query's inner products with every row of ``E^context`` (``entity_rows``
    (N, F)) against its true entity ``truth`` (k,), and accuracy (``tasks.entity_all_candidates``)."""
    scores = query.float() @ entity_rows.float().T
    loss = torch.nn.functional.cross_entropy(scores, truth)
    accuracy = (scores.argmax(dim=1) == truth).float().mean()
    return loss, accuracy


def sample_relation_pairs(kg: KnowledgeGraph, entities: np.ndarray, count: int, rng: np.random.Generator) -> np.ndarray:
    """Up to ``count`` triple indices whose head and tail are both in ``entities``; when fewer exist
    among them, triples touching ``entities`` (the other end then joins the seeds)."""
    if kg.num_triples == 0 or count <= 0:
        return np.zeros(0, dtype=np.int64)
    inside = np.zeros(kg.num_entities, dtype=bool)
    inside[np.asarray(entities, dtype=np.int64)] = True
    heads = kg.triples[:, 0]
    tails = kg.triples[:, 2]
    both = np.flatnonzero(inside[heads] & inside[tails])
    chosen = rng.permutation(both)[:count]
    if len(chosen) < count:
        either = np.setdiff1d(np.flatnonzero(inside[heads] | inside[tails]), chosen)
        chosen = np.concatenate([chosen, rng.permutation(either)[:count - len(chosen)]])
    return chosen.astype(np.int64)


class PairIndex:
    """Which triples join the same two entities (in either direction), for hiding whole pairs."""

    def __init__(self, kg: KnowledgeGraph):
        triples = np.asarray(kg.triples, dtype=np.int64).reshape(-1, 3)
        low = np.minimum(triples[:, 0], triples[:, 2])
        high = np.maximum(triples[:, 0], triples[:, 2])
        self.key = low * max(1, kg.num_entities) + high
        self.order = np.argsort(self.key, kind="stable")
        self.sorted_key = self.key[self.order]

    def triples_of_pairs(self, triple_ids: np.ndarray) -> np.ndarray:
        """Every triple joining the two entities of any of ``triple_ids`` (sorted, unique)."""
        keys = np.unique(self.key[np.asarray(triple_ids, dtype=np.int64)])
        if not len(keys):
            return np.zeros(0, dtype=np.int64)
        first = np.searchsorted(self.sorted_key, keys, side="left")
        last = np.searchsorted(self.sorted_key, keys, side="right")
        counts = last - first
        positions = np.repeat(first, counts) + (np.arange(counts.sum()) -
                                                np.repeat(np.cumsum(counts) - counts, counts))
        return np.unique(self.order[positions])
