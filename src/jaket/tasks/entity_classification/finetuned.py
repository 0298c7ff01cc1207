"""The fine-tuned entity classifier (:mod:`jaket.tasks.entity_classification.model` in a folder
that predicts: ``jaket finetune|predict entity-classification``); training is in
:mod:`jaket.tasks.entity_classification.run`."""

from __future__ import annotations

import logging
from pathlib import Path

import numpy as np
import torch

from jaket.kg.graph import KnowledgeGraph
from jaket.model.jaket import JaketModel
from jaket.tasks.finetuned import (FinetunedFolder, FinetunedFormatError, FinetunedModel, backbone_model,
                                   prediction_memory)
from jaket.tasks.entity_classification.model import EntityClassifier
from jaket.tasks.variants import VARIANT_LABELS, Backbone, full_graph
from jaket.tasks.settings import variant as variant_spec
from jaket.tasks.entity_classification.data import read_prediction_inputs
from jaket.tasks.entity_classification.job import TASK

logger = logging.getLogger(__name__)


class FinetunedEntityClassifier(FinetunedModel):
    """A fine-tuned entity classifier: the backbone (LM1 + the fine-tuned KM), the head and the
    label names, saved and loaded like a Transformers model (:meth:`save_pretrained`,
    :meth:`from_pretrained`; folder layout in :mod:`jaket.tasks.finetuned`).

    :meth:`predict` labels entities of any KG: its memory is recomputed from that KG's
    descriptions by the backbone's LM1 (for the ``gnn`` / ``lm+g`` settings: the same seeded
    random memory as in fine-tuning, which only means something on the KG it was trained on), the
    KM runs over the whole graph and the head gives a probability per label.
    """

    task = TASK

    def __init__(self, backbone: Backbone, classifier: EntityClassifier, labels: list[str],
                 variant_config=None, settings: dict | None = None):
        self.backbone = backbone
        self.classifier = classifier.eval()
        self.labels = list(labels)
        self.variant_config = variant_config
        self.settings = dict(settings or {})

    @property
    def variant(self) -> str:
        return self.backbone.variant

    def backbone_model(self) -> JaketModel:
        if self.variant_config is None:
            raise ValueError("this classifier was loaded from a folder; copy that folder instead of saving it again")
        return backbone_model(self.backbone, self.variant_config, self.classifier.knowledge)

    def head_state(self) -> dict[str, torch.Tensor]:
        return self.classifier.head_state()

    def task_config(self) -> dict:
        return {"variant": self.variant, "labels": self.labels, "hidden_size": int(self.backbone.hidden_size),
                **self.settings}

    @classmethod
    def from_folder(cls, folder: FinetunedFolder, directory: Path) -> "FinetunedEntityClassifier":
        settings = dict(folder.task_config)
        variant, labels = settings.get("variant"), settings.get("labels")
        if variant not in VARIANT_LABELS or not isinstance(labels, list) or not labels:
            raise FinetunedFormatError(f"{directory}/task.json: needs 'variant' (one of {', '.join(VARIANT_LABELS)}) "
                                       "and a non-empty list 'labels'")
        model = folder.backbone.eval()
        hidden = int(model.hidden_size)
        knowledge = model.knowledge if variant_spec(variant).has_km else None
        backbone = Backbone(variant, hidden, model.language, knowledge, model.fusion)
        classifier = EntityClassifier(knowledge, hidden, len(labels), float(settings.get("dropout", 0.0)))
        try:
            classifier.load_head_state(folder.head)
        except (RuntimeError, KeyError) as error:
            first = str(error).strip().splitlines()[0]
            raise FinetunedFormatError(f"{directory}/head.safetensors: does not fit {len(labels)} labels and "
                                       f"{hidden} features: {first}") from None
        return cls(backbone, classifier, labels, settings=settings)

    def to(self, device) -> "FinetunedEntityClassifier":
        """Move the backbone and the classifier to ``device`` (in place; the memory follows
        them); returns self."""
        self.backbone.to(device)
        self.classifier.to(device)
        return self

    @torch.no_grad()
    def probabilities(self, kg: KnowledgeGraph) -> torch.Tensor:
        """(N, labels): the probability of every label for every entity of ``kg``."""
        memory = prediction_memory(self.backbone, kg, self.settings)
        self.classifier.eval()
        edges = (t.to(memory.entities.device) for t in full_graph(kg))
        return torch.softmax(self.classifier(memory, *edges), dim=-1).cpu()

    def unlabelled(self, kg: KnowledgeGraph) -> np.ndarray:
        """Entities of ``kg`` that had no label in fine-tuning (and, when the labels were the KG's
        categories, that have no category in ``kg``)."""
        known = set(self.settings.get("labelled_entity_ids", []))
        keep = np.fromiter((entity not in known for entity in kg.entity_ids), dtype=bool, count=kg.num_entities)
        if self.settings.get("label_source", "categories") == "categories":
            keep &= np.asarray(kg.entity_category) < 0
        return np.flatnonzero(keep)

    def predict(self, kg: KnowledgeGraph, entities=None, top_k: int = 1) -> list[dict]:
        """One row per entity (default: :meth:`unlabelled`; else entity ids, indices or a mix, as
        :meth:`KnowledgeGraph.entity_indices` reads them): ``{"entity", "name", "label",
        "probability"}``, and with ``top_k > 1`` the ``top_k`` most probable labels (``"top"``;
        ``ValueError`` for a ``top_k`` below 1)."""
        if top_k < 1:
            raise ValueError(f"top_k must be at least 1, got {top_k}")
        entities = self.unlabelled(kg) if entities is None else kg.entity_indices(entities)
        if not len(entities):
            return []
        probabilities = self.probabilities(kg)[torch.as_tensor(entities)]
        values, indices = probabilities.topk(min(top_k, len(self.labels)), dim=1)
        rows = []
        for i, entity in enumerate(entities.tolist()):
            row = {"entity": kg.entity_ids[entity], "name": kg.entity_names[entity],
                   "label": self.labels[int(indices[i, 0])], "probability": round(float(values[i, 0]), 6)}
            if top_k > 1:
                row["top"] = [{"label": self.labels[int(k)], "probability": round(float(v), 6)}
                              for v, k in zip(values[i].tolist(), indices[i].tolist())]
            rows.append(row)
        return rows


def predict_rows(model: FinetunedEntityClassifier, kg_path: Path, entities: Path | None = None,
                 all_entities: bool = False, top_k: int = 1, inputs: tuple | None = None) -> list[dict]:
    """``jaket predict entity-classification``'s rows (one per entity) for the KG folder
    ``kg_path``: the entities of the file ``entities``, or every one (``all_entities``), or (default)
    those that had no label in fine-tuning (``inputs``: what :func:`~jaket.tasks.entity_classification.
    data.read_prediction_inputs` read of them, before the model was loaded)."""
    kg, chosen = inputs if inputs is not None else read_prediction_inputs(kg_path, entities, all_entities)
    if chosen is None:
        chosen = model.unlabelled(kg)
        if not len(chosen):
            logger.warning(_nothing_unlabelled(model, kg, kg_path))
    return model.predict(kg, chosen, top_k=top_k)


def _nothing_unlabelled(model: FinetunedEntityClassifier, kg: KnowledgeGraph, where) -> str:
    """Why ``jaket predict entity-classification`` has no entity to label by default, and what to pass."""
    known = set(model.settings.get("labelled_entity_ids", []))
    had_label = sum(entity in known for entity in kg.entity_ids)
    reasons = [f"{had_label} had a label in fine-tuning"]
    if model.settings.get("label_source", "categories") == "categories":
        reasons.append(f"{int((np.asarray(kg.entity_category) >= 0).sum())} have a category in {where}")
    return (f"{where}: no entity to label: by default only entities without a label are predicted, and "
            f"of its {kg.num_entities} entities {' and '.join(reasons)}; pass --all to label every entity "
            "or --entities FILE to name the ones to label")
