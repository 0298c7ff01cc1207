"""The batch of one pre-training micro-step, built off the model: the text order, walks, pairs,
subgraph, masks and negatives (paper, "Pre-training"; docs/pretraining.md, step 2).

:meth:`BatchBuilder.sample_batch` samples root entities, random-walks from them
(``random_walks``), picks triples among the walked entities for relation prediction, draws a text
batch (:func:`text_batch_indices`), removes ~15% of its mentions (``fuse_mask`` False) for masked
entity prediction, masks 15% of its tokens, and samples the subgraph around walked entities, pair
ends and fused mention entities with every triple joining a predicted pair hidden
(``exclude_triples``). Every draw of micro-step ``p`` on rank ``r`` comes from generators seeded
with ``(seed, p, r)``: a batch depends on nothing but its position, so :func:`batch_loader` can
build the batches ahead in worker processes and a resumed run repeats the uninterrupted one.

Without a corpus (``data.train`` None: the KG tasks only) a batch has no text (``text`` None, no
mention, no masked token, no entity candidate) and draws nothing for one.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import torch
from torch.utils.data import DataLoader, Dataset

from jaket.kg.corpus import TextBatch, collate_texts
from jaket.kg.sampling import Subgraph, random_walks, sample_neighbors
from jaket.train import tasks
from jaket.train.config import PretrainConfig

#: how many batches a length-sorted window holds (``data.group_by_length``)
LENGTH_WINDOW = 32


def length_sorted_window(texts: np.ndarray, lengths: np.ndarray, batch_size: int,
                         rng: np.random.Generator) -> list[np.ndarray]:
    """One window of an epoch's shuffled ``texts`` (indices) as batches of like length: sorted by
    ``lengths[text]`` (stable), cut into batches of ``batch_size`` (the last may be shorter), the
    batches in an order drawn from ``rng``. Pre-training's ``data.group_by_length``
    (:func:`text_batch_indices`, windows of :data:`LENGTH_WINDOW` batches) and word-in-context's
    ``group_by_length`` (:func:`jaket.tasks.training.length_grouped_batches`) batch so: a batch is
    padded to its longest text, so texts of like length together carry little padding, while every
    text is still drawn once per epoch and the windows keep the epoch's order random."""
    texts = np.asarray(texts)
    texts = texts[np.argsort(lengths[texts], kind="stable")]
    batches = [texts[begin:begin + batch_size] for begin in range(0, len(texts), batch_size)]
    return [batches[k] for k in rng.permutation(len(batches))]


def _text_stream(n: int, seed: int, start: int, count: int) -> np.ndarray:
    """Positions ``[start, start + count)`` of the endless text order: epoch after epoch, each a
    permutation of the ``n`` texts seeded by ``(seed, epoch)``."""
    out = []
    while count > 0:
        epoch, offset = divmod(start, n)
        take = min(count, n - offset)
        out.append(np.random.default_rng([seed, epoch]).permutation(n)[offset:offset + take])
        start, count = start + take, count - take
    return np.concatenate(out) if out else np.zeros(0, dtype=np.int64)


def text_batch_indices(lengths: np.ndarray, position: int, batch_size: int, seed: int,
                       group_by_length: bool = True, rank: int = 0, world_size: int = 1) -> np.ndarray:
    """The texts of micro-step ``position`` for ``rank`` (the data position is the step itself).

    An epoch is a permutation of the ``n`` texts seeded by ``(seed, epoch)``, cut into
    ``n // (batch_size * world_size)`` global batches (the few texts left over wait for a later
    epoch's order, as with ``drop_last``). With ``group_by_length`` each run of ``LENGTH_WINDOW``
    batches of an epoch is sorted by text length and its batches are taken in a shuffled order,
    so a batch holds texts of similar length (far less padding) while every text is still drawn
    at most once per epoch. Ranks take strided shares of the global batch. A corpus smaller than
    one global batch is cycled through.
    """
    n = len(lengths)
    size = batch_size * world_size
    per_epoch = n // size
    if per_epoch == 0:
        chosen = _text_stream(n, seed, position * size, size)
    else:
        epoch, j = divmod(position, per_epoch)
        order = np.random.default_rng([seed, epoch]).permutation(n)[:per_epoch * size]
        if group_by_length:
            window, slot = divmod(j, LENGTH_WINDOW)
            first = window * LENGTH_WINDOW
            count = min(LENGTH_WINDOW, per_epoch - first)
            chosen = length_sorted_window(order[first * size:(first + count) * size], lengths, size,
                                          np.random.default_rng([seed, epoch, window]))[slot]
        else:
            chosen = order[j * size:(j + 1) * size]
    return np.asarray(chosen[rank::world_size], dtype=np.int64)


@dataclass
class StepBatch:
    """Everything one micro-step consumes (:meth:`BatchBuilder.sample_batch`).

    Local indices point into ``subgraph.node_ids``; ``entity_candidates`` holds global entity
    indices (column 0 the truth) and ``entity_valid`` masks padding and negatives equal to it.
    """

    position: int  # the micro-step (``step * accumulation_steps + micro``) it was drawn for
    text: TextBatch | None  # token-masked texts; None without a corpus
    mlm_labels: torch.Tensor  # (B, L) original ids at predicted positions, -100 elsewhere
    subgraph: Subgraph  # every triple joining a predicted pair hidden
    mention_node: torch.Tensor  # (M,) local node of each fused mention's entity, -1 if removed
    fuse_mask: torch.Tensor  # (M,) False = removed (masked entity prediction)
    category_node: torch.Tensor  # (c,) walked entities that have a category
    category_label: torch.Tensor  # (c,)
    relation_head: torch.Tensor  # (r,) local
    relation_tail: torch.Tensor  # (r,) local
    relation_label: torch.Tensor  # (r,)
    predicted_triples: np.ndarray  # (r,) triple indices whose relation is predicted
    hidden_triples: np.ndarray  # triples hidden from the sampler (all joining a predicted pair)
    entity_candidates: torch.Tensor  # (k, C)
    entity_valid: torch.Tensor  # (k, C) bool
    counts: dict[str, int] = field(default_factory=dict)
    #: ``tasks.description_rows``: local nodes whose E^(0) is LM1 over their description with
    #: gradients, and those descriptions tokenised (ids, mask, span start, span end); empty = off
    description_local: torch.Tensor = field(default_factory=lambda: torch.zeros(0, dtype=torch.long))
    description_tokens: tuple[torch.Tensor, ...] = ()

    def _map(self, move) -> "StepBatch":
        """Every tensor (and the text and subgraph) through ``move``; arrays and counts as they are."""
        moved = {name: move(value) if isinstance(value, (torch.Tensor, TextBatch, Subgraph)) else value
                 for name, value in self.__dict__.items()}
        moved["description_tokens"] = tuple(move(t) for t in self.description_tokens)
        return StepBatch(**moved)

    def to(self, device, non_blocking: bool = False) -> "StepBatch":
        """On ``device``; ``non_blocking`` copies from pinned memory (:meth:`pin_memory`) overlap
        the copy with the work already queued on the GPU."""
        return self._map(lambda value: value.to(device, non_blocking=non_blocking))

    def pin_memory(self) -> "StepBatch":
        """A copy in pinned host memory: the DataLoader's pinning thread calls this for a loader
        built with ``pin_memory=True`` (a dataclass without it comes back unpinned, and its copy
        to the GPU blocks)."""
        return self._map(lambda value: value.pin_memory())


class BatchBuilder(Dataset):
    """The batches of one rank: ``builder[position]`` is :meth:`sample_batch` (a map-style
    dataset, so a :class:`~torch.utils.data.DataLoader` can build them in worker processes).

    ``fanouts``: neighbours sampled per hop around the step's seed entities (the model's
    ``config.fanouts``); ``description_tokens``: the KG's tokenised entity descriptions
    (:meth:`jaket.model.memory.EntityContextMemory.description_tokens`), needed only with
    ``tasks.description_rows > 0``."""

    def __init__(self, config: PretrainConfig, data, fanouts, rank: int = 0, world_size: int = 1,
                 description_tokens=None):
        self.config, self.data, self.fanouts = config, data, tuple(fanouts)
        self.rank, self.world_size = rank, world_size
        self.pairs = tasks.PairIndex(data.kg)
        self.homonyms = tasks.homonym_index(data.kg) if config.tasks.entity_homonym_negatives > 0 else None
        self.roles = tasks.role_index(data.kg) if config.tasks.entity_role_negatives > 0 else None
        texts = data.train.input_ids if data.train is not None else []
        self.lengths = np.array([len(ids) for ids in texts], dtype=np.int64)
        if config.tasks.description_rows > 0 and description_tokens is None:
            raise ValueError("tasks.description_rows > 0 needs the tokenised descriptions")
        self.description_tokens = description_tokens

    def __getitem__(self, position: int) -> "StepBatch":
        return self.sample_batch(int(position))

    def __len__(self) -> int:
        return self.config.steps * self.config.optim.accumulation_steps

    def text_indices(self, position: int) -> np.ndarray:
        """This rank's texts for micro-step ``position`` (:func:`text_batch_indices`)."""
        return text_batch_indices(self.lengths, position, self.config.text_batch_size,
                                  self.config.seed, self.config.data.group_by_length,
                                  self.rank, self.world_size)

    def special_mask(self, batch: TextBatch) -> torch.Tensor:
        """True at special tokens and padding: never masked."""
        mask = batch.attention_mask == 0
        for token in self.data.special_ids:
            mask |= batch.input_ids == token
        return mask

    def sample_batch(self, position: int) -> StepBatch:
        """All random choices of micro-step ``position`` on this rank (module docstring); every
        draw comes from generators seeded with ``(seed, position, rank)``."""
        cfg, kg = self.config, self.data.kg
        t = cfg.tasks
        rng = np.random.default_rng([cfg.seed, position, self.rank])
        tgen = torch.Generator().manual_seed(int(rng.integers(2**62)))
        counts: dict[str, int] = {}
        # knowledge-module batch: roots + random walks; triples among them for relation prediction
        roots = rng.integers(0, kg.num_entities, size=t.root_entities)
        walks = random_walks(kg, roots, t.walk_length, rng)
        walked = np.unique(walks[walks >= 0])
        if t.weight_relation > 0:
            predicted = tasks.sample_relation_pairs(kg, walked, t.relation_pairs, rng)
        else:
            predicted = np.zeros(0, dtype=np.int64)
        hidden = self.pairs.triples_of_pairs(predicted)
        triples = kg.triples[predicted].astype(np.int64).reshape(-1, 3)
        # text batch: ~15% of the mentions removed (not fused), the others' entities are seeds
        text = collate_texts(self.data.train, self.text_indices(position), self.data.pad_id) \
            if self.data.train is not None else None
        num_mentions = len(text.mention_entity) if text is not None else 0
        if text is None:
            fuse_mask = torch.ones(0, dtype=torch.bool)
        elif t.weight_entity > 0:
            fuse_mask = tasks.choose_masked_mentions(num_mentions, t.entity_mask_probability, tgen)
        else:
            fuse_mask = torch.ones(num_mentions, dtype=torch.bool)
        fused_entities = text.mention_entity[fuse_mask].numpy() if text is not None else np.zeros(0, np.int64)
        seeds = np.concatenate([walked, triples[:, 0], triples[:, 2], fused_entities]).astype(np.int64)
        subgraph = sample_neighbors(kg, seeds, self.fanouts, rng,
                                    exclude_triples=hidden if len(hidden) else None)
        local = subgraph.seed_local
        n_walk, n_pair = len(walked), len(triples)
        mention_node = torch.full((num_mentions,), -1, dtype=torch.long)
        mention_node[fuse_mask] = local[n_walk + 2 * n_pair:]
        # entity category prediction targets (entities without a category are skipped, counted)
        category = torch.from_numpy(kg.entity_category[walked].astype(np.int64))
        has_category = category >= 0
        counts["category_skipped"] = int((~has_category).sum())
        if t.weight_category <= 0:
            has_category[:] = False
        removed = ~fuse_mask
        text, mlm_labels, candidates, valid = self._text_targets(text, removed, rng, tgen, counts)
        description_local = torch.zeros(0, dtype=torch.long)
        description_tokens: tuple[torch.Tensor, ...] = ()
        if t.description_rows > 0:
            pool = np.unique(local[:n_walk + 2 * n_pair].numpy())
            chosen = np.sort(rng.permutation(pool)[:t.description_rows])
            description_tokens = self.description_tokens.batch(subgraph.node_ids[chosen].numpy())
            description_local = torch.from_numpy(chosen.astype(np.int64))
        counts.update(category=int(has_category.sum()), relation=n_pair,
                      mlm=int((mlm_labels != -100).sum()), entity=int(removed.sum()),
                      texts=len(text.input_ids) if text is not None else 0, subgraph_nodes=subgraph.num_nodes,
                      subgraph_edges=subgraph.num_edges, hidden_triples=len(hidden))
        return StepBatch(
            position=position, text=text, mlm_labels=mlm_labels, subgraph=subgraph, mention_node=mention_node, fuse_mask=fuse_mask,
            category_node=local[:n_walk][has_category], category_label=category[has_category],
            relation_head=local[n_walk:n_walk + n_pair],
            relation_tail=local[n_walk + n_pair:n_walk + 2 * n_pair],
            relation_label=torch.from_numpy(triples[:, 1].copy()),
            predicted_triples=predicted, hidden_triples=hidden,
            entity_candidates=torch.from_numpy(candidates), entity_valid=torch.from_numpy(valid),
            counts=counts, description_local=description_local, description_tokens=description_tokens)


    def _text_targets(self, text: TextBatch | None, removed: torch.Tensor, rng: np.random.Generator,
                      tgen: torch.Generator, counts: dict) -> tuple:
        """The text tasks' targets of a step: its tokens masked (masked token prediction, and the hidden
        mentions of ``tasks.mention_token_masking``) and each removed mention's candidate entities
        (masked entity prediction: the truth, KG neighbours, random entities); ``(text, mlm_labels,
        candidates, valid)``, drawn from ``rng`` and ``tgen`` in the order the batch's other draws follow."""
        t = self.config.tasks
        if text is None:
            width = (1 + t.entity_hard_negatives + t.entity_homonym_negatives + t.entity_role_negatives
                     + t.entity_random_negatives)
            empty = np.zeros((0, width), np.int64)
            return None, torch.zeros((0, 0), dtype=torch.long), empty, empty.astype(bool)
        masked_ids, mlm_labels = tasks.mask_tokens(text.input_ids, self.special_mask(text), self.data.mask_id,
                                                   self.data.vocab_size, t.mlm_probability, tgen)
        if t.mention_token_masking > 0:  # entity-level masking (beyond the paper; 0 draws nothing)
            counts["mentions_hidden"] = tasks.mask_mention_tokens(
                masked_ids, mlm_labels, text.input_ids, text.mention_batch, text.mention_start,
                text.mention_end, removed, self.data.mask_id, t.mention_token_masking, tgen)
        if t.weight_mlm <= 0:
            mlm_labels[:] = -100
        candidates, valid = tasks.entity_candidates(
            self.data.kg, text.mention_entity[removed].numpy(), t.entity_hard_negatives,
            t.entity_random_negatives, rng, self.homonyms, t.entity_homonym_negatives, self.roles,
            t.entity_role_negatives)
        text = TextBatch(masked_ids, text.attention_mask, text.mention_batch, text.mention_start,
                         text.mention_end, text.mention_entity)
        return text, mlm_labels, candidates, valid

def _one_thread(_worker: int) -> None:
    torch.set_num_threads(1)  # the workers share the cores with the model step


def batch_loader(builder: BatchBuilder, start: int, workers: int, prefetch: int = 2,
                 pin_memory: bool = False):
    """The batches of micro-steps ``start, start + 1, ...`` in order; with ``workers > 0`` built
    ahead (``prefetch`` per worker) in worker processes while the model steps."""
    if workers == 0:
        return (builder.sample_batch(p) for p in range(start, len(builder)))
    return iter(DataLoader(builder, batch_size=None, sampler=range(start, len(builder)),
                           num_workers=workers, prefetch_factor=prefetch, pin_memory=pin_memory,
                           worker_init_fn=_one_thread, collate_fn=_identity))


def _identity(batch):
    return batch
