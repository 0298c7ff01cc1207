"""Context linking: pre-training's masked-entity head as an entity linker over any KG.

Pre-training task 4, masked entity prediction, reads a mention whose entity is removed from the
fusion (Eq. 8-9) as ``q = g((Z_s + Z_o) / 2)`` over LM1 and LM2 (Eq. 6, 10; ``g`` of
:class:`jaket.model.heads.EntityHead`) and scores it by inner product against rows of the entity
context memory ``E^context`` -- the true entity among KG neighbours and random ones. A row of
``E^context`` is LM1's reading of the entity's *description* at the entity's name (Eq. 7). So the
head, restricted to the entities a mention's words can name, is a linker, and it links over any KG
whose entities have descriptions: WordNet, a user's own KG, or one the model never saw (its rows
are read from the descriptions by the model's LM1, as the paper's adaptation to an unseen KG does).

:class:`ContextLinker` holds a pre-trained :class:`~jaket.model.jaket.JaketModel` and a KG:

* :meth:`~ContextLinker.entity_rows`: the ``E^context`` rows (Eq. 7) of given entities, computed
  on first need only for those, in batches, and kept per entity;
* :meth:`~ContextLinker.queries`: ``q`` of each mention (a character span of a text), read as in
  masked entity prediction: its tokens visible, nothing fused (the other mentions' entities are
  what is being linked); each text is read once however many of its mentions are asked for;
* :meth:`~ContextLinker.logits` and :meth:`~ContextLinker.score`: the inner products
  ``q · E^context`` over each mention's candidates, and their softmax over the candidates;
* :meth:`~ContextLinker.link`: texts in, :class:`LinkedText` out.

Two scorers rank a mention's candidates (:data:`LINK_SCORERS`):

* ``scorer="text+kg"``, the default (of the class and of ``jaket link --model``: the best measured,
  docs/results.md, WordNet WSD): the mention read as the encoder reads it (``(Z_s + Z_o) / 2`` over
  LM1 + LM2, no head) against each candidate's ``(text + kg)`` row (:func:`text_kg_rows`: its
  names, aliases, description and usage examples read as a sentence, plus ``β`` times the mean of
  its KG neighbours'), by cosine over :data:`COSINE_TEMPERATURE`. Its usage examples are given
  with ``texts`` (:class:`SenseTexts`; ``jaket link`` reads them from the KG's corpus,
  :func:`jaket.tasks.link_cli.kg_usage_examples`); none by default;
* ``scorer="head"``: the masked-entity head against ``E^context`` above (``q · E^context``).

The candidates are those of the gazetteer (:class:`jaket.kg.linking.EntityLinker`: names and
aliases, plurals folded, the longest match first), or, for the spans an input gives
(:class:`jaket.kg.linking.Target`), the entities named by the target's lemma (or its written form
and that form's singulars), of its part of speech when the KG's ids follow WordNet's
``lemma.pos.NN`` naming (:class:`jaket.senses.inventory.SenseInventory`). The most
probable candidate is linked; a mention whose probability is below ``min_confidence`` is left
unlinked and kept in :attr:`LinkedText.unlinked`.

The encoder's passes (the rows and the mentions) run at ``precision``: ``"fp32"``, ``"bf16"``
autocast, or ``"auto"`` (bf16 where the device computes it natively:
:func:`jaket.model.device.choose_precision`, as every command's ``--precision``); None (the
default) leaves the caller's autocast in force (word-sense disambiguation's run sets it).

A mention with one candidate has probability 1 (the softmax over one score) and is not read. One
that lies past the first ``max_length`` tokens of its text, or covers no token, cannot be read: its
scores are ``None`` and :meth:`link` leaves it unlinked (counted in
:attr:`ContextLinkStats.unreadable`). Results are deterministic: the same texts, spans and
candidates give the same probabilities.

**Sense texts** (the ``text+kg`` scorer, and word-sense disambiguation's ``(text)`` and ``(text + kg)``
scorers) are read in :mod:`jaket.senses.texts` (one step of message passing over the
KG, Eq. 1-5's aggregation without weights), their vectors kept in the text-vector cache, so a second
run reads none again. Each stage's time is in :attr:`ContextLinkStats.stages` (``jaket link --model``'s
summary: ``seconds``).
"""

from __future__ import annotations

import contextlib
import heapq
import json
import logging
import math
import os
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path

import numpy as np
import torch
from tqdm import tqdm

from jaket.atomic import write_lines
from jaket.kg.corpus import Mention, MentionCorpus, collate_texts
from jaket.kg.graph import KnowledgeGraph
from jaket.kg.inflection import base_forms
from jaket.kg.io import load_kg
from jaket.kg.linking import CandidateSpan, EntityLinker, LinkStats, Target
from jaket.model.device import autocast, choose_precision, resolve_device
from jaket.model.heads import span_mean
from jaket.model.jaket import JaketModel, text_list
from jaket.model.memory import description_features, length_sorted_batches
from jaket.model.memory_cache import TextVectorCache
from jaket.senses.inventory import SenseInventory
from jaket.senses.texts import COSINE_TEMPERATURE, SenseTexts, text_kg_rows
from jaket.stages import StageTimes

logger = logging.getLogger(__name__)

#: digits kept of a probability in :meth:`LinkedText.as_json`
DIGITS = 6
#: how :class:`ContextLinker` ranks a mention's candidates (module docstring); the first, the best measured
#: (docs/results.md), is the default of the class and of ``jaket link --model``
LINK_SCORERS = ("text+kg", "head")
DEFAULT_SCORER = LINK_SCORERS[0]


@dataclass(frozen=True)
class ScoredMention:
    """A mention ``[start, end)`` with its candidates ranked by the scorer: ``candidates`` holds
    ``(entity index, probability)``, the most probable first (ties: the lower index); ``entity`` /
    ``score`` are the first of them, ``margin`` its lead over the runner-up (the score itself when
    there is no runner-up); ``inflected``: the gazetteer found it through an inflection of its
    form (:func:`jaket.kg.linking.base_forms`)."""

    start: int
    end: int
    entity: int
    score: float
    margin: float
    candidates: tuple[tuple[int, float], ...]
    inflected: bool = False

    def as_json(self, kg: KnowledgeGraph) -> dict:
        """The corpus format's mention (``start``, ``end``, ``entity`` id) with ``score``,
        ``margin`` and ``candidates`` (``[{"entity", "score"}]``) beside it."""
        return {"start": self.start, "end": self.end, "entity": kg.entity_ids[self.entity],
                "score": round(self.score, DIGITS), "margin": round(self.margin, DIGITS),
                "candidates": [{"entity": kg.entity_ids[e], "score": round(p, DIGITS)} for e, p in self.candidates]}


@dataclass(frozen=True)
class UnlinkedSpan:
    """A span left unlinked and why: ``"below confidence"`` (``scored`` holds its ranking),
    ``"not read"`` (past ``max_length`` tokens, or no token) or ``"no candidate"`` (a given target
    whose lemma names no entity)."""

    start: int
    end: int
    reason: str
    scored: ScoredMention | None = None

    def as_json(self, kg: KnowledgeGraph) -> dict:
        record = self.scored.as_json(kg) if self.scored is not None else {"start": self.start, "end": self.end}
        return {**record, "reason": self.reason}


@dataclass
class LinkedText:
    """A text, the mentions linked in it, and the spans left unlinked."""

    text: str
    mentions: list[ScoredMention] = field(default_factory=list)
    unlinked: list[UnlinkedSpan] = field(default_factory=list)

    def as_json(self, kg: KnowledgeGraph) -> dict:
        """One line of the corpus format (``jaket pretrain`` reads it; the extra fields are
        ignored), with ``unlinked`` when some span was left unlinked."""
        record: dict = {"text": self.text, "mentions": [m.as_json(kg) for m in self.mentions]}
        if self.unlinked:
            record["unlinked"] = [u.as_json(kg) for u in self.unlinked]
        return record

    def corpus_mentions(self) -> list[Mention]:
        """The linked mentions as the corpus holds them."""
        return [Mention(m.start, m.end, m.entity) for m in self.mentions]


@dataclass
class ContextLinkStats:
    """Counts of :meth:`ContextLinker.link`: ``gazetteer`` as plain ``jaket link`` counts them
    (``mentions``: linked ones; ``ambiguous_resolved``: mentions of several candidates the model
    linked; ``resolved_by_context`` is the overlap rule's and stays 0), and what the model did."""

    gazetteer: LinkStats = field(default_factory=LinkStats)
    targets: int = 0  # spans given by the input
    targets_without_candidate: int = 0  # ... whose lemma names no entity (of its part of speech)
    scored: int = 0  # mentions of two or more candidates, ranked by the model
    below_confidence: int = 0  # left unlinked: probability under min_confidence
    unreadable: int = 0  # left unlinked: past max_length tokens, or covering no token
    descriptions_encoded: int = 0  # E^context rows computed (Eq. 7)
    descriptions_empty: int = 0  # ... of entities without a description (read from [CLS] [SEP] alone)
    sense_texts_read: int = 0  # text+kg: sense texts read through the encoder
    sense_texts_cached: int = 0  # ... found in the text-vector cache instead, not read again
    stages: StageTimes = field(default_factory=StageTimes)  # each stage's seconds (as_dict: "seconds")

    def as_dict(self) -> dict:
        out = {f.name: getattr(self, f.name) for f in fields(self) if f.name not in ("gazetteer", "stages")}
        return {"gazetteer": asdict(self.gazetteer), **out, "seconds": self.stages.as_dict()}


def _softmax(logits: np.ndarray) -> np.ndarray:
    if not len(logits):
        return logits.astype(np.float64)
    shifted = np.exp(logits.astype(np.float64) - logits.max())
    return shifted / shifted.sum()


def _grouped(texts: Sequence[str], spans: Sequence[tuple[int, int]]) -> MentionCorpus:
    """One corpus entry per distinct text holding its mentions (their ``entity`` field is the
    mention's position in ``spans``), so each text is read once; a span overlapping one already
    in its text's entry goes to another copy of the text (the corpus holds disjoint spans).

    Linear in the mentions (but for a sort): a text's spans are taken by start, and a span joins
    the copy whose spans end first when it starts at or after that end (a heap of the copies by
    their last end), else a new copy: never compared with every earlier span."""
    by_text: dict[str, list[int]] = {}
    for i, (text, (start, end)) in enumerate(zip(texts, spans)):
        if not (isinstance(start, (int, np.integer)) and isinstance(end, (int, np.integer))
                and 0 <= start < end <= len(text)):
            raise ValueError(f"mention {i + 1}: span [{start}, {end}) is empty or outside its text "
                             f"(length {len(text)})")
        by_text.setdefault(text, []).append(i)
    entries: list[list[Mention]] = []
    owners: list[str] = []
    for text, mine in by_text.items():
        copies: list[tuple[int, int]] = []  # (end of the copy's last span, index of the copy in entries)
        for i in sorted(mine, key=lambda k: (int(spans[k][0]), int(spans[k][1]), k)):
            start, end = int(spans[i][0]), int(spans[i][1])
            if copies and copies[0][0] <= start:
                entry = heapq.heapreplace(copies, (end, copies[0][1]))[1]
            else:
                entry = len(entries)
                entries.append([])
                owners.append(text)
                heapq.heappush(copies, (end, entry))
            entries[entry].append(Mention(start, end, i))
    return MentionCorpus(owners, entries)


class ContextLinker:
    """A pre-trained JAKET model ranking a mention's candidates over a KG, as a linker (see the
    module docstring): by default the ``text+kg`` scorer, ``scorer="head"`` the masked-entity head
    over the KG's descriptions. Build it with :meth:`from_pretrained` or from a loaded model and KG."""

    def __init__(self, model: JaketModel, kg: KnowledgeGraph, *, gazetteer: EntityLinker | None = None,
                 inventory: SenseInventory | None = None, batch_size: int = 64, max_length: int = 128,
                 scorer: str = DEFAULT_SCORER, texts: SenseTexts | None = None, precision: str | None = None):
        if not isinstance(kg, KnowledgeGraph):
            raise TypeError(f"kg: give a KnowledgeGraph (jaket.load_kg(folder)), not {type(kg).__name__}"
                            + (" (ContextLinker.from_pretrained(model, folder) loads a KG folder)"
                               if isinstance(kg, (str, os.PathLike)) else ""))
        if scorer not in LINK_SCORERS:
            raise ValueError(f"scorer must be one of {', '.join(LINK_SCORERS)}, got {scorer!r}")
        if batch_size < 1:
            raise ValueError(f"batch_size must be at least 1, got {batch_size}")
        if max_length < 4:
            raise ValueError(f"max_length must be at least 4 tokens, got {max_length}")
        self.model = model.eval()
        self.kg = kg
        self.batch_size = batch_size
        self.max_length = max_length
        self._gazetteer = gazetteer
        self._inventory = inventory
        self.scorer = scorer
        #: ``"fp32"`` or ``"bf16"``: the precision the encoder's passes run at (``precision`` resolved on
        #: the model's device); None: the caller's autocast
        self.precision = None if precision is None else choose_precision(precision, self.device)
        #: the ``text+kg`` scorer's reading of the senses (default: no usage examples, ``β = 1``)
        self.texts = texts or SenseTexts({})
        self._rows: dict[int, torch.Tensor] = {}
        self._text_vectors: dict[int, torch.Tensor] = {}  # the text+kg scorer's, neighbours' included
        self._text_cache: TextVectorCache | None = None  # ... and kept on disk (built on first need)
        self.stats = ContextLinkStats()  # descriptions_encoded / descriptions_empty over the linker's life

    @classmethod
    def from_pretrained(cls, model_dir: str | Path, kg: KnowledgeGraph | str | Path, *, device=None, dtype=None,
                        **options) -> "ContextLinker":
        """The model of a folder written by ``save_pretrained`` (``jaket pretrain``'s ``model/``)
        over ``kg``, a :class:`KnowledgeGraph` or a KG folder (read with :func:`jaket.load_kg`
        first, so a bad KG fails before the model loads); ``device``: ``cpu``, ``cuda``, ...
        (None: a GPU when one is visible); ``options``: those of the constructor (``gazetteer``,
        ``inventory``, ``batch_size``, ``max_length``, ``scorer``, ``texts``, ``precision``). The
        saved memory is not read: the rows come from ``kg``'s descriptions."""
        if isinstance(kg, (str, os.PathLike)):
            kg = load_kg(kg)
        elif not isinstance(kg, KnowledgeGraph):
            raise TypeError(f"kg: give a KnowledgeGraph or a KG folder, not {type(kg).__name__}")
        model = JaketModel.from_pretrained(model_dir, load_memory=False, device=resolve_device(device), dtype=dtype)
        return cls(model, kg, **options)

    def _autocast(self, scores: bool = False):
        """The autocast of the encoder's passes at :attr:`precision`, or with ``scores`` none (the
        scores are computed in float32); None: the caller's autocast, untouched."""
        if self.precision is None:
            return contextlib.nullcontext()
        return autocast(self.device, self.precision == "bf16" and not scores)

    @property
    def device(self) -> torch.device:
        return next(self.model.language.parameters()).device

    @property
    def gazetteer(self) -> EntityLinker:
        """The names-and-aliases gazetteer of the KG (default options, built on first need)."""
        if self._gazetteer is None:
            self._gazetteer = EntityLinker.from_kg(self.kg)
        return self._gazetteer

    @property
    def inventory(self) -> SenseInventory:
        """Lemma and part of speech -> entities (for given targets; built on first need)."""
        if self._inventory is None:
            self._inventory = SenseInventory(self.kg)
        return self._inventory

    # the two sides of the inner product ------------------------------------------------------------
    @torch.no_grad()
    def entity_rows(self, entities: Sequence[int]) -> torch.Tensor:
        """``E^context`` rows of ``entities`` (entity indices of the KG), ``(len, F)`` float32 on
        the model's device: LM1's ``(Z_s + Z_o) / 2`` of each description at the entity's name
        (Eq. 7; ``description_max_length`` tokens, as pre-training's memory), computed only for
        entities not asked for before, in batches of ``batch_size``. With ``scorer="text+kg"``:
        their ``(text + kg)`` rows (module docstring)."""
        # ids or integer indices, out of range or not an integer a ValueError (1.7 was read as entity 1)
        wanted = self.kg.entity_indices(entities)
        missing = sorted(set(wanted.tolist()) - self._rows.keys())
        if missing:
            with self._autocast():
                self._read_rows(missing)
        if not len(wanted):
            return torch.zeros(0, self.model.hidden_size, device=self.device)
        return torch.stack([self._rows[e] for e in wanted.tolist()])

    def _read_rows(self, missing: list[int]) -> None:
        """The rows of ``missing`` (entities without one yet), kept for later calls."""
        descriptions = [self.kg.entity_descriptions[e] for e in missing]
        if self.scorer == "text+kg":
            with self.stats.stages("sense texts"):
                rows = self._sense_rows(missing)
        else:
            with self.stats.stages("entity descriptions (Eq. 7)"):
                rows = description_features(self.model.language, descriptions,
                                            [self.kg.entity_names[e] for e in missing], full=False,
                                            max_length=self.model.config.description_max_length,
                                            batch_size=self.batch_size, desc="entity descriptions (Eq. 7)")
        self._rows.update(zip(missing, rows))
        self.stats.descriptions_encoded += len(missing)
        self.stats.descriptions_empty += sum(not d.strip() for d in descriptions)

    def _sense_rows(self, entities: list[int]) -> torch.Tensor:
        """The ``(text + kg)`` rows of ``entities`` (:func:`text_kg_rows`), their texts' vectors kept
        in the encoder's text-vector cache (JAKET_CACHE), so a later run on other texts over the same
        model and KG reads none of the texts this one read."""
        language = self.model.language
        if self._text_cache is None:
            self._text_cache = TextVectorCache.for_encoder(language, self.texts.max_length)
        cache, before = self._text_cache, len(self._text_vectors)
        cached = cache.read if cache is not None else 0
        _, rows = text_kg_rows(language, self.kg, np.asarray(entities), self.texts, self._text_vectors, cache=cache)
        found = (cache.read if cache is not None else 0) - cached
        self.stats.sense_texts_cached += found
        self.stats.sense_texts_read += len(self._text_vectors) - before - found
        return rows

    @torch.no_grad()
    def queries(self, texts: Sequence[str], spans: Sequence[tuple[int, int]]) -> list[torch.Tensor | None]:
        """``q = g((Z_s + Z_o) / 2)`` of mention ``i`` (the character span ``spans[i]`` of
        ``texts[i]``) over LM1 + LM2 without fusion, as masked entity prediction reads a removed
        mention (``scorer="text+kg"``: ``(Z_s + Z_o) / 2`` itself, no head), float32; ``None`` for a
        mention that is not read (past ``max_length`` tokens, no token)."""
        with self.stats.stages("mentions"):
            return self._queries(texts, spans)

    def _queries(self, texts: Sequence[str], spans: Sequence[tuple[int, int]]) -> list[torch.Tensor | None]:
        corpus = _grouped(texts, spans)
        encoded = corpus.encode(self.model.language.tokenizer, max_length=self.max_length)
        out: list[torch.Tensor | None] = [None] * len(spans)
        pad = self.model.language.tokenizer.pad_token_id
        language, head = self.model.language, self.model.entity_head
        # texts of like length together (a batch is padded to its longest): the refresh's batching
        for indices in length_sorted_batches([len(ids) for ids in encoded.input_ids], self.batch_size):
            batch = collate_texts(encoded, indices, pad if pad is not None else 0).to(self.device)
            with self._autocast():
                hidden = language(batch.input_ids, batch.attention_mask).float()
                if self.scorer == "text+kg":
                    q = span_mean(hidden, batch.mention_batch, batch.mention_start, batch.mention_end)
                else:
                    q = head.query(hidden, batch.mention_batch, batch.mention_start, batch.mention_end)
            q = q.float()  # the head's products ran under the autocast; scores are computed in float32
            for mention, row in zip(batch.mention_entity.tolist(), q):
                out[mention] = row
        return out

    # scores ----------------------------------------------------------------------------------------------
    @torch.no_grad()
    def logits(self, texts: Sequence[str], spans: Sequence[tuple[int, int]],
               candidates: Sequence[Sequence[int]]) -> list[np.ndarray | None]:
        """The scores of each mention's candidates ``e`` (entity indices, in the order given):
        ``cos(q, row_e) / T`` with ``scorer="text+kg"`` (the default), the head's ``q · E^context_e``
        with ``scorer="head"``, as masked entity prediction scores them; float32 whatever the
        precision of the passes; ``None`` for a mention that is not read (:meth:`queries`)."""
        if not len(texts) == len(spans) == len(candidates):
            raise ValueError(f"{len(texts)} texts, {len(spans)} spans and {len(candidates)} candidate lists")
        lists = [np.asarray(c, dtype=np.int64).reshape(-1) for c in candidates]
        used = np.unique(np.concatenate(lists)) if lists else np.zeros(0, np.int64)
        rows = self.entity_rows(used)
        queries = self.queries(texts, spans)
        out: list[np.ndarray | None] = []
        with self._autocast(scores=True):
            for q, entities in zip(queries, lists):
                if q is None:
                    out.append(None)
                    continue
                mine = rows[torch.from_numpy(np.searchsorted(used, entities)).to(rows.device)]
                if self.scorer == "text+kg":
                    scores = torch.nn.functional.cosine_similarity(q[None], mine) / COSINE_TEMPERATURE
                else:
                    scores = mine @ q
                out.append(scores.double().cpu().numpy())
        return out

    def score(self, texts: Sequence[str], spans: Sequence[tuple[int, int]],
              candidates: Sequence[Sequence[int]]) -> list[np.ndarray | None]:
        """The probability of each candidate of each mention: the softmax over the mention's
        candidates of :meth:`logits` (pre-training's cross-entropy over candidates, task 4). A
        mention with one candidate gets ``[1.0]`` and one without any ``[]``, neither read;
        ``None`` for a mention that is not read."""
        if not len(texts) == len(spans) == len(candidates):
            raise ValueError(f"{len(texts)} texts, {len(spans)} spans and {len(candidates)} candidate lists")
        out: list[np.ndarray | None] = [np.ones(len(c)) if len(c) < 2 else None for c in candidates]
        ranked = [i for i, c in enumerate(candidates) if len(c) >= 2]
        scores = self.logits([texts[i] for i in ranked], [spans[i] for i in ranked], [candidates[i] for i in ranked])
        for i, logits in zip(ranked, scores):
            out[i] = None if logits is None else _softmax(logits)
        return out

    # linking texts -----------------------------------------------------------------------------------
    def target_candidates(self, text: str, target: Target) -> list[int]:
        """The entities a given target can name: those whose name or alias is its lemma, of its
        part of speech where the KG's ids carry one (WordNet's ``lemma.pos.NN``; otherwise the part
        of speech is not used). Without a lemma, the gazetteer's rule (:func:`base_forms`): the
        written form's entities and its irregular bases' (``"found"``: found and find), or else
        those of the first regular guess that names any (``"baked"``: bake)."""
        pos = target.pos if self.inventory.has_pos else None
        if target.lemma:
            return self.inventory.candidates(target.lemma, pos)
        written = text[target.start:target.end]
        found: list[int] = []
        for word in [written, *base_forms(written, regular=False)]:
            found += [e for e in self.inventory.candidates(word, pos) if e not in found]
        if found:
            return found
        for word in base_forms(written):
            found = self.inventory.candidates(word, pos)
            if found:
                return found
        return []

    def link(self, texts: Sequence[str], *, targets: Sequence[Sequence[Target] | None] | None = None,
             min_confidence: float = 0.0, progress: bool = False) -> list[LinkedText]:
        """Link every text: each mention's candidates (the gazetteer's, or those of the targets
        given for the text: ``targets[i]``, None for the gazetteer) ranked by :meth:`score`; the
        most probable is linked unless its probability is below ``min_confidence``. Counts add up
        in :attr:`stats`."""
        min_confidence = _checked_confidence(min_confidence)
        texts = _checked_texts(texts)
        if targets is not None:
            targets = _checked_targets(texts, targets)
        chunk = 16 * self.batch_size
        out: list[LinkedText] = []
        with tqdm(total=len(texts), desc="linking", unit="text", disable=True if not progress else None) as bar:
            for begin in range(0, len(texts), chunk):
                given = targets[begin:begin + chunk] if targets is not None else None
                out += self._link_chunk(texts[begin:begin + chunk], given, min_confidence)
                bar.update(len(out) - bar.n)
        return out

    def _spans(self, text: str, given: Sequence[Target] | None) -> list[CandidateSpan | UnlinkedSpan]:
        """The spans of a text to link with their candidates (a given target naming no entity is
        an :class:`UnlinkedSpan`)."""
        if given is None:
            return self.gazetteer.candidate_spans(text, self.stats.gazetteer)
        spans: list[CandidateSpan | UnlinkedSpan] = []
        for target in given:
            self.stats.targets += 1
            found = self.target_candidates(text, target)
            if not found:
                self.stats.targets_without_candidate += 1
                spans.append(UnlinkedSpan(target.start, target.end, "no candidate"))
                continue
            entities = np.asarray(found, dtype=np.int64)
            spans.append(CandidateSpan(target.start, target.end, entities, np.ones(len(found), bool), False, -1, -1))
        return spans

    def _link_chunk(self, texts: list[str], targets, min_confidence: float) -> list[LinkedText]:
        results = [LinkedText(text) for text in texts]
        flat: list[tuple[int, CandidateSpan]] = []
        with self.stats.stages("candidates"):
            for i, text in enumerate(texts):
                for span in self._spans(text, targets[i] if targets is not None else None):
                    if isinstance(span, UnlinkedSpan):
                        results[i].unlinked.append(span)
                    else:
                        flat.append((i, span))
        probabilities = self.score([texts[i] for i, _ in flat], [(s.start, s.end) for _, s in flat],
                                   [s.candidates for _, s in flat])
        counts = self.stats
        for (i, span), p in zip(flat, probabilities):
            if p is None:
                counts.unreadable += 1
                results[i].unlinked.append(UnlinkedSpan(span.start, span.end, "not read"))
                continue
            inflected = span.inflected if span.exact is None else ~span.exact
            mention = ranked_mention(span.start, span.end, span.candidates, p, inflected)
            counts.scored += len(span.candidates) > 1
            if mention.score < min_confidence:
                counts.below_confidence += 1
                results[i].unlinked.append(UnlinkedSpan(span.start, span.end, "below confidence", mention))
                continue
            results[i].mentions.append(mention)
            counts.gazetteer.inflected += mention.inflected
            counts.gazetteer.ambiguous_resolved += len(span.candidates) > 1
        for result in results:
            result.unlinked.sort(key=lambda u: u.start)
            counts.gazetteer.add_text(len(result.mentions))
        return results


def _checked_confidence(value) -> float:
    """``min_confidence`` as a float: a number (not a bool) in [0, 1], else a ``TypeError`` /
    ``ValueError`` naming the argument and the value given (a string reached the comparison)."""
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise TypeError(f"min_confidence must be a number in [0, 1], got {value!r} ({type(value).__name__})")
    if not (math.isfinite(value) and 0.0 <= value <= 1.0):
        raise ValueError(f"min_confidence must be a number in [0, 1], got {value!r}")
    return float(value)


def _checked_texts(texts) -> list[str]:
    """``texts`` as a list of strings; one string alone is a ``TypeError`` (it was linked character
    by character, each a text of its own), as is an item that is not a string."""
    if isinstance(texts, str):
        raise TypeError("texts: give a list of texts (link([text])), not one string: each of its characters "
                        "would be a text")
    return text_list(texts)


def _checked_targets(texts: list[str], targets) -> list:
    """``targets``, one entry per text (None, or that text's :class:`Target` spans), each span of
    integers inside its text (``ValueError`` / ``TypeError`` naming ``targets[i][j]``): a span
    past the end, or ending before it starts, was linked as given when it had one candidate."""
    targets = list(targets)
    if len(targets) != len(texts):
        raise ValueError(f"{len(targets)} target lists for {len(texts)} texts")
    for i, (text, given) in enumerate(zip(texts, targets)):
        if given is None:
            continue
        if isinstance(given, (Target, str)) or not isinstance(given, Sequence):
            raise TypeError(f"targets[{i}]: give text {i}'s targets as a list of Target (or None), "
                            f"got {type(given).__name__}")
        for j, target in enumerate(given):
            if not isinstance(target, Target):
                raise TypeError(f"targets[{i}][{j}]: expected a Target, got {type(target).__name__}")
            if not all(isinstance(v, (int, np.integer)) and not isinstance(v, bool)
                       for v in (target.start, target.end)):
                raise TypeError(f"targets[{i}][{j}]: start and end must be integers, got "
                                f"{target.start!r}, {target.end!r}")
            if not 0 <= target.start < target.end <= len(text):
                raise ValueError(f"targets[{i}][{j}]: span [{target.start}, {target.end}) is empty or outside "
                                 f"text {i} (length {len(text)})")
    return targets


def ranked_mention(start: int, end: int, candidates: Sequence[int], probabilities: np.ndarray,
                   inflected: bool | np.ndarray = False) -> ScoredMention:
    """A mention's candidates ranked by probability (ties: the lower entity index first);
    ``inflected``: for the mention, or per candidate (the value of the one ranked first)."""
    order = sorted(range(len(candidates)), key=lambda k: (-probabilities[k], int(candidates[k])))
    ranked = tuple((int(candidates[k]), float(probabilities[k])) for k in order)
    runner_up = ranked[1][1] if len(ranked) > 1 else 0.0
    if not isinstance(inflected, bool):
        inflected = bool(np.asarray(inflected)[order[0]])
    return ScoredMention(start, end, ranked[0][0], ranked[0][1], ranked[0][1] - runner_up, ranked, inflected)


def write_linked_corpus(linked: Sequence[LinkedText], path: str | Path, kg: KnowledgeGraph) -> Path:
    """Write linked texts in the corpus format (:meth:`LinkedText.as_json`, one a line), atomically;
    ``jaket pretrain`` reads the file as its corpus."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    return write_lines(path, (json.dumps(text.as_json(kg), ensure_ascii=False) for text in linked))
