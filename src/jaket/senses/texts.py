"""Sense texts: a sense (an entity) read as the sentence encoder reads a sentence.

The ``text+kg`` scorer of ``jaket link --model`` (:class:`jaket.senses.linker.ContextLinker`)
and word-sense disambiguation's ``(text)`` and ``(text + kg)`` scorers
(:mod:`jaket.senses.scorers`) read a sense from its text (:func:`sense_text`: names and
aliases, description, usage examples where given) as the mean of its tokens through LM1 + LM2, unit
length (:func:`text_vectors`). Its ``(text + kg)`` row adds ``β`` times the mean of its KG neighbours'
vectors (:func:`text_kg_rows`): one step of message passing over the KG, the aggregation of Eq. 1-5
with uniform attention, identity composition and no weights, so a sense is also read from the senses
it is linked to. A word in context is compared with the rows by cosine; :data:`COSINE_TEMPERATURE`
turns cosines into logits (a softmax over the candidates).

The pass over the texts is the memory refresh's (Eq. 7): texts tokenised once, read in length-sorted
batches (:func:`jaket.model.memory.length_sorted_batches`), under the run's precision; their vectors
are kept in the text-vector cache (:class:`jaket.model.memory_cache.TextVectorCache`), so a second run
over the same encoder reads none of the texts again.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F
from tqdm import tqdm

from jaket.kg.exclusion import normalise_text
from jaket.kg.graph import KnowledgeGraph
from jaket.kg.sources.wordnet import load_wordnet_data
from jaket.model.language import SplitLanguageModel
from jaket.model.memory import length_sorted_batches
from jaket.model.memory_cache import TextVectorCache, pass_precision

logger = logging.getLogger(__name__)


#: the temperature at which a cosine scorer's scores are read as logits (the prior, the linker's softmax)
COSINE_TEMPERATURE = 0.1


@dataclass(frozen=True)
class SenseTexts:
    """What the ``(text)`` and ``(text + kg)`` scorers read of a sense (module docstring):
    ``usage`` maps an entity to its usage examples (none that is an evaluated sentence: the caller
    removes those), ``neighbour_weight`` is ``β`` and ``max_length`` the tokens read of a text."""

    usage: dict[int, tuple[str, ...]]
    neighbour_weight: float = 1.0
    max_length: int = 128


def sense_text(kg: KnowledgeGraph, entity: int, usage: tuple[str, ...] = ()) -> str:
    """``"name, alias, ...: description; usage example ..."`` of ``entity`` (a description that
    starts with ``"name: "``, as WordNet's do, is not given its name twice)."""
    names = list(dict.fromkeys([kg.entity_names[entity], *kg.entity_aliases[entity]]))
    body = kg.entity_descriptions[entity]
    for name in names:
        if body.startswith(f"{name}: "):
            body = body[len(name) + 2:]
            break
    return f"{', '.join(names)}: {body}" + (f"; {' '.join(usage)}" if usage else "")


#: texts per batch of the sense-text pass: sorted, 16 to 64 are level on a 2-core EPYC and 128 pays for its
#: padding (docs/performance.md, "The sense-text pass")
TEXT_BATCH = 64


@torch.no_grad()
def text_vectors(language: SplitLanguageModel, texts: list[str], *, max_length: int = 128,
                 batch_size: int = TEXT_BATCH, cache: TextVectorCache | None = None,
                 progress: bool = True, desc: str = "sense texts") -> torch.Tensor:
    """Each text as the sentence encoder reads it: the mean of its tokens (the first ``max_length``)
    through LM1 + LM2, unit length; ``(len(texts), F)`` float32 on the encoder's device.

    The texts are tokenised once and read in length-sorted batches
    (:func:`jaket.model.memory.length_sorted_batches`, as the memory refresh reads descriptions),
    each vector put back at its text's position; under the caller's autocast (the run's
    ``--precision``). ``cache`` (:class:`jaket.model.memory_cache.TextVectorCache` of this encoder,
    ``max_length`` and precision): texts found there are not read again, the others are kept there.
    ``progress``: a bar (texts, with an estimate) on stderr when there are more than a few batches."""
    language.eval()
    device = next(language.parameters()).device
    out = torch.zeros(len(texts), int(language.hidden_size), device=device)
    if cache is not None and cache.precision != pass_precision(device):
        logger.debug("text-vector cache of %s vectors not used by a %s pass", cache.precision, pass_precision(device))
        cache = None
    found = cache.lookup(texts) if cache is not None else {}
    if cache is not None and texts:
        logger.info("%s: %d of %d texts read from the text-vector cache %s, %d to encode", desc, len(found),
                    len(texts), cache.folder, len(texts) - len(found))
    for i, vector in found.items():
        out[i] = vector.to(device)
    todo = np.asarray([i for i in range(len(texts)) if i not in found], dtype=np.int64)
    if not len(todo):
        return out
    tokenizer = language.tokenizer
    ids = tokenizer([texts[i] for i in todo], truncation=True, max_length=max_length,
                    return_attention_mask=False, return_token_type_ids=False)["input_ids"]
    lengths = np.fromiter(map(len, ids), dtype=np.int64, count=len(ids))
    pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else 0
    batches = length_sorted_batches(lengths, batch_size)
    with tqdm(total=len(todo), desc=desc, unit="text", leave=False,
              disable=not progress or len(batches) <= 4) as bar:
        for positions in batches:
            width = int(lengths[positions].max())
            tokens = torch.full((len(positions), width), pad, dtype=torch.long)
            for row, position in enumerate(positions):
                tokens[row, :lengths[position]] = torch.as_tensor(ids[position], dtype=torch.long)
            mask = (torch.arange(width)[None, :] < torch.from_numpy(lengths[positions])[:, None]).long().to(device)
            hidden = language(tokens.to(device), mask).float()
            weights = mask.float()[..., None]
            out[torch.from_numpy(todo[positions]).to(device)] = F.normalize((hidden * weights).sum(1) / weights.sum(1),
                                                                             dim=1)
            bar.update(len(positions))
    if cache is not None:
        cache.store([texts[i] for i in todo], out[torch.from_numpy(todo).to(device)])
    return out


def kg_neighbours(kg: KnowledgeGraph, entity: int) -> np.ndarray:
    """The distinct entities linked to ``entity`` by a triple, either way (itself left out)."""
    adjacency = kg.adjacency
    found = np.unique(adjacency.neighbors[adjacency.indptr[entity]:adjacency.indptr[entity + 1]])
    return found[found != entity]


@torch.no_grad()
def text_kg_rows(language: SplitLanguageModel, kg: KnowledgeGraph, entities: np.ndarray, texts: SenseTexts,
                 known: dict[int, torch.Tensor] | None = None, *, cache: TextVectorCache | None = None,
                 progress: bool = True) -> tuple[torch.Tensor, torch.Tensor]:
    """The rows of ``entities`` for the ``(text)`` scorers (their texts' vectors) and for the
    ``(text + kg)`` scorers (``v_e + β mean_{n ∈ N(e)} v_n``, ``N(e)``: :func:`kg_neighbours`;
    ``v_e`` alone without neighbours). ``known``: text vectors read before (entity -> vector),
    used instead of reading those texts again and filled with the ones read here; ``cache``: the
    encoder's :class:`~jaket.model.memory_cache.TextVectorCache` (:func:`text_vectors`)."""
    known = {} if known is None else known
    neighbours = [kg_neighbours(kg, int(e)) for e in entities]
    pool = np.unique(np.concatenate([np.asarray(entities, dtype=np.int64), *neighbours]).astype(np.int64))
    unread = [int(e) for e in pool if int(e) not in known]
    read = text_vectors(language, [sense_text(kg, e, texts.usage.get(e, ())) for e in unread],
                        max_length=texts.max_length, cache=cache, progress=progress)
    known.update(zip(unread, read))
    own = torch.stack([known[int(e)] for e in entities]) if len(entities) else read[:0]
    spread = own.clone()
    for i, found in enumerate(neighbours):
        if len(found):
            spread[i] += texts.neighbour_weight * torch.stack([known[int(n)] for n in found]).mean(0)
    return own, spread


def usage_examples(kg: KnowledgeGraph, instances: Sequence, wanted: bool = True
                   ) -> tuple[dict[int, tuple[str, ...]], dict]:
    """The WordNet usage examples of the sense KG's entities (matched by synset id: a KG of other
    ids has none), without those that are the text of one of ``instances`` (anything with a ``text``:
    the evaluation's targets, so no evaluated sentence is a sense's text), and the counts;
    ``wanted=False``: none."""
    if not wanted:
        return {}, {"usage_examples": 0, "usage_examples_dropped": 0}
    wordnet = load_wordnet_data()
    position = {entity_id: i for i, entity_id in enumerate(kg.entity_ids)}
    banned = {normalise_text(i.text) for i in instances}
    found: dict[int, list[str]] = {}
    dropped = 0
    for synset, text in wordnet.raw_examples:
        entity = position.get(wordnet.ids[synset])
        if entity is None:
            continue
        if normalise_text(text) in banned:
            dropped += 1
            continue
        found.setdefault(entity, []).append(text)
    return ({e: tuple(texts) for e, texts in found.items()},
            {"usage_examples": sum(map(len, found.values())), "usage_examples_dropped": dropped})
