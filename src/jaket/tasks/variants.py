"""The paper's five comparison settings, built into every task.

=========  ===================================================================================
variant    what the task fine-tunes on top of
=========  ===================================================================================
``lm``     the base encoder alone ("LM only", the paper's RoBERTa row). For KG-only tasks an
           entity is its description read by the *full* encoder (LM1 + LM2) and embedded as
           ``(Z_s + Z_o) / 2`` at its mention (Eq. 7 applied to the last layer); the encoder is
           frozen and the task head is trained on these features.
``gnn``    the knowledge module alone, randomly initialised, over a *random* memory (one fixed
           Gaussian vector per entity and relation): the paper's vanilla GNN.
``lm+g``   LM + KM with a random memory (RoBERTa+GNN). For KG-only tasks (entity classification,
           link prediction) LM2 is not used, so ``lm+g`` and ``gnn`` coincide there; they differ
           where a question text is read (KGQA).
``lm+g+m`` LM + KM with the memory computed by the base encoder's LM1 from the descriptions
           (Eq. 7), KM randomly initialised (RoBERTa+GNN+M): no joint pre-training.
``jaket``  a jointly pre-trained model folder (``JaketModel.from_pretrained``): its LM1
           recomputes the memory from the (possibly unseen) KG's descriptions, its KM is the
           pre-trained one.
=========  ===================================================================================

In every setting the memory is computed once and frozen during fine-tuning, as the paper does
("we do not update the entity context memory during fine-tuning").
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
from torch import nn

from jaket.kg.graph import KnowledgeGraph, both_directions
from jaket.model.fusion import MentionFusion
from jaket.model.jaket import JaketModel
from jaket.model.knowledge import KnowledgeModule
from jaket.model.language import SplitLanguageModel
from jaket.model.memory import EntityContextMemory, FrozenMemory, description_features
from jaket.model.memory_cache import cached_rows
from jaket.paths import default_model_path
from jaket.tasks.settings import (VARIANT_LABELS, VARIANTS, BackboneSettings, VariantConfig,  # noqa: F401
                                  VariantError)
from jaket.tasks.settings import variant as variant_spec

logger = logging.getLogger(__name__)


@dataclass
class Backbone:
    """The pre-trained (or fresh) parts a task starts from."""

    variant: str
    hidden_size: int
    language: SplitLanguageModel | None = None  # None for gnn
    knowledge: KnowledgeModule | None = None  # None for lm
    fusion: MentionFusion | None = None  # KGQA
    #: ``jaket`` only: the pre-trained entity-category head and the category names it predicts
    category_head: nn.Module | None = None
    category_names: tuple[str, ...] = ()

    @property
    def uses_memory_from_lm(self) -> bool:
        return variant_spec(self.variant).memory == "lm1"

    def to(self, device) -> "Backbone":
        """Move every part to ``device`` (in place); returns self."""
        for part in (self.language, self.knowledge, self.fusion, self.category_head):
            if part is not None:
                part.to(device)
        return self


def _encoder_path(config: VariantConfig) -> Path:
    if config.encoder is not None:
        return Path(config.encoder)
    return default_model_path()


def load_backbone(config: VariantConfig, seed: int = 0, *, need_language: bool = True,
                  device="cpu") -> Backbone:
    """Build the parts of one setting on ``device``; the KM of every non-``jaket`` setting is
    freshly seeded (on the CPU, so a seed gives the same weights on every device, then moved:
    the same call on every device, a no-op on the CPU)."""
    return _load_backbone(config, seed, need_language).to(device)


def _load_backbone(config: VariantConfig, seed: int, need_language: bool) -> Backbone:
    torch.manual_seed(seed)
    spec = variant_spec(config.variant)
    if spec.pretrained:
        model = JaketModel.from_pretrained(config.pretrained).train()  # the tasks set the mode
        language = model.language
        return Backbone("jaket", int(language.hidden_size), language, model.knowledge,
                        model.fusion, category_head=model.category_head,
                        category_names=tuple(model.config.category_names or ()))
    language = None
    if need_language or spec.needs_encoder:
        language = SplitLanguageModel.from_pretrained(_encoder_path(config), lm1_layers=config.lm1_layers)
        hidden = int(language.hidden_size)
    else:
        from transformers import AutoConfig

        hidden = int(AutoConfig.from_pretrained(_encoder_path(config)).hidden_size)
    if not spec.has_km:
        return Backbone("lm", hidden, language, None, None)
    torch.manual_seed(seed)
    structure = config.km_structure()
    knowledge = KnowledgeModule(hidden, num_layers=structure["layers"], heads=structure["heads"],
                                composition=structure["composition"])
    fusion = None
    if language is not None:
        fusion = MentionFusion(hidden)
    return Backbone(config.variant, hidden, language if spec.reads_text else None, knowledge, fusion)


# ----------------------------------------------------------------------------- graph + memory


def full_graph(kg, triple_mask: np.ndarray | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """:meth:`jaket.kg.graph.KnowledgeGraph.edge_index` as tensors, for ``kg`` or any object with
    ``triples`` and ``num_relations`` (e.g. a task's training triples): the edge convention is
    :func:`jaket.kg.graph.both_directions`'s, defined there once (row 0 the neighbour, row 1 the
    node being updated)."""
    triples = np.asarray(kg.triples, dtype=np.int64).reshape(-1, 3)
    if triple_mask is not None:
        triples = triples[np.asarray(triple_mask, dtype=bool)]
    node, neighbour, edge_type = both_directions(triples, int(kg.num_relations))
    return (torch.from_numpy(np.stack([neighbour, node])).long(),
            torch.from_numpy(np.asarray(edge_type)).long())


def kg_memory(backbone: Backbone, kg: KnowledgeGraph, seed: int = 0, *, max_length: int = 64,
              batch_size: int = 64, relation_memory: bool = True) -> FrozenMemory:
    """The memory a setting starts from on ``kg``.

    ``gnn`` / ``lm+g``: one fixed random Gaussian row per entity and relation (seeded);
    ``lm+g+m`` / ``jaket``: recomputed from ``kg``'s descriptions with the setting's LM1
    (``EntityContextMemory.from_kg``) -- for an unseen KG this is the paper's adaptation step;
    ``lm``: the full encoder's description features (there is no KM).
    ``relation_memory=False`` sets every relation row to 0 (see :class:`VariantConfig`).
    """
    memory = _kg_memory(backbone, kg, seed, max_length=max_length, batch_size=batch_size)
    parts = [backbone.knowledge, backbone.language]
    memory = memory.to(next(next(p.parameters()) for p in parts if p is not None).device)
    if not relation_memory:
        memory = FrozenMemory(memory.entities, torch.zeros_like(memory.relations))
    return memory


def _kg_memory(backbone: Backbone, kg: KnowledgeGraph, seed: int, *, max_length: int, batch_size: int) -> FrozenMemory:
    n, p, f = int(kg.num_entities), int(kg.num_relations), backbone.hidden_size
    if variant_spec(backbone.variant).random_memory:
        generator = torch.Generator().manual_seed(10_000 + seed)
        return FrozenMemory(torch.randn(n, f, generator=generator), torch.randn(p, f, generator=generator))
    language = backbone.language
    if language is None:
        raise VariantError(f"variant {backbone.variant!r} has no language module")
    if variant_spec(backbone.variant).memory == "lm1":  # E^context / R^context by LM1, the code pre-training uses
        memory = EntityContextMemory.from_kg(language, kg, batch_size=batch_size, max_length=max_length,
                                             progress=True)
        return FrozenMemory(memory.entity_rows(torch.arange(n)).clone(), memory.relation_rows().clone())
    def compute() -> tuple[torch.Tensor, torch.Tensor]:
        entities = description_features(language, list(kg.entity_descriptions), list(kg.entity_names),
                                        full=True, max_length=max_length, batch_size=batch_size,
                                        desc="entity memory")
        relations = description_features(language, list(kg.relation_descriptions), list(kg.relation_names),
                                         full=True, max_length=max_length, batch_size=batch_size,
                                         desc="relation memory")
        return entities.detach(), relations.detach()

    entities, relations = cached_rows(language, kg, max_length, compute, kind="full")  # the disk cache
    return FrozenMemory(entities, relations)


class SettingCache:
    """The backbone and the memory the runs of a comparison share (:mod:`jaket.tasks.grid`): one
    backbone per (setting, seed), loaded when a cell of a new pair comes; one memory per setting,
    computed by the setting's first backbone (per seed for the random-memory settings, ``gnn`` and
    ``lm+g``: each seed draws its own). ``fresh=True`` loads a new backbone for the cell (a task that
    trains LM1 must not reuse it)."""

    def __init__(self, settings: BackboneSettings, kg: KnowledgeGraph, device, *, max_length: int = 64,
                 relation_memory: bool = True, need_language: bool | None = None):
        self.settings, self.kg, self.device = settings, kg, device
        self.max_length, self.relation_memory, self.need_language = max_length, relation_memory, need_language
        self._backbone_key = self._memory_key = None
        self._backbone: Backbone | None = None
        self._memory: FrozenMemory | None = None

    def backbone(self, variant: str, seed: int, *, fresh: bool = False) -> Backbone:
        if fresh or self._backbone_key != (variant, seed):
            need = variant_spec(variant).needs_encoder if self.need_language is None else self.need_language
            self._backbone = load_backbone(self.settings.variant_config(variant), seed=seed, need_language=need,
                                           device=self.device)
            self._backbone_key = (variant, seed)
        return self._backbone

    def memory(self, variant: str, seed: int, *, kg: KnowledgeGraph | None = None, tag=None) -> FrozenMemory:
        """The memory of ``variant`` (computed by :meth:`backbone`'s current backbone when new);
        ``kg``: the same entities with other descriptions (a KGQA setting's own, ``tag`` naming it)."""
        key = (variant, seed if variant_spec(variant).random_memory else None, tag)
        if self._memory_key != key:
            self._memory = kg_memory(self.backbone(variant, seed), kg if kg is not None else self.kg, seed,
                                     max_length=self.max_length, relation_memory=self.relation_memory)
            self._memory_key = key
        return self._memory
