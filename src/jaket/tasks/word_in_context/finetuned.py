"""A fine-tuned word-in-context model: saved by ``jaket finetune word-in-context``, used by
``jaket predict word-in-context --finetuned DIR --pairs FILE``.

The folder is the fine-tuned layout of :mod:`jaket.tasks.finetuned`: the backbone as fine-tuned
(LM1 + LM2, and with a KM the KM, the fusion and the masked-entity head that scores the senses),
the pair head in ``head.safetensors``, the setting in ``task.json``. The sense KG is not stored:
the memory is recomputed from the descriptions of the sense KG a prediction runs on (default:
WordNet 3.0).
"""

from __future__ import annotations

import logging
from pathlib import Path

import numpy as np
import torch

from jaket.kg.graph import KnowledgeGraph
from jaket.model.config import JaketConfig
from jaket.model.jaket import JaketModel
from jaket.tasks.finetuned import FinetunedFolder, FinetunedFormatError, FinetunedModel
from jaket.tasks.word_in_context.job import TASK, WordInContextConfig
from jaket.tasks.settings import variant as variant_spec
from jaket.senses.inventory import SenseInventory, load_sense_kg
from jaket.tasks.word_in_context.data import WordPair, read_prediction_inputs
from jaket.tasks.word_in_context.model import (SUPPORTED_VARIANTS, WordInContextModel, encode_pairs,
                                               predict_probabilities, restrict_to_candidates, sense_graph)
from jaket.senses.graph import SenseGraph

logger = logging.getLogger(__name__)


class FinetunedWordInContext(FinetunedModel):
    """A fine-tuned word-in-context model with its settings and sense KG (``jaket predict``)."""

    task = TASK

    def __init__(self, model: WordInContextModel, settings: dict, kg: KnowledgeGraph | None):
        self.model = model.eval()
        self.settings = dict(settings)
        self.kg = kg

    def backbone_model(self) -> JaketModel:
        """The backbone as fine-tuned, the masked-entity head among its pre-training heads."""
        model = self.model
        language = model.language
        km = self.settings.get("km") or {}
        jconfig = JaketConfig(lm1_layers=language.lm1_layers, km_layers=int(km.get("layers", 2)),
                              km_heads=int(km.get("heads", 8)), composition=km.get("composition", "add"))
        if model.fusion is not None:
            jconfig.fusion_normalize = model.fusion.normalize
        jconfig.description_max_length = int(self.settings.get("description_max_length", 32))
        jconfig.use_relation_memory = bool(self.settings.get("relation_memory", True))
        backbone = JaketModel(jconfig, language=language)
        for name in ("knowledge", "fusion", "entity_head"):
            part = getattr(model, name)
            if part is not None:
                getattr(backbone, name).load_state_dict(part.state_dict())
        return backbone

    def head_state(self) -> dict[str, torch.Tensor]:
        return self.model.classifier.state_dict()

    def task_config(self) -> dict:
        settings = {**self.settings, "hidden_size": int(self.model.language.hidden_size)}
        if self.kg is not None:
            settings["kg"] = {"fingerprint": self.kg.fingerprint(), "entities": self.kg.num_entities}
        return settings

    @classmethod
    def from_folder(cls, folder: FinetunedFolder, directory: Path) -> "FinetunedWordInContext":
        settings = folder.task_config
        variant = settings.get("variant")
        if variant not in SUPPORTED_VARIANTS:
            raise FinetunedFormatError(f"{directory}/task.json: 'variant' must be one of {', '.join(SUPPORTED_VARIANTS)}")
        b = folder.backbone
        uses_kg = variant_spec(variant).has_km
        model = WordInContextModel(variant, b.language, b.knowledge if uses_kg else None,
                                   b.fusion if uses_kg else None, b.entity_head if uses_kg else None,
                                   float(settings.get("dropout", 0.1)), settings.get("sense_fusion", "attention"))
        try:
            model.classifier.load_state_dict(folder.head)
        except RuntimeError as error:
            first = str(error).strip().splitlines()[0]
            raise FinetunedFormatError(f"{directory}/head.safetensors: not a word-in-context head: {first}") from None
        return cls(model, settings, None)

    def to(self, device) -> "FinetunedWordInContext":
        self.model.to(device)
        return self

    def _sense_graph(self, kg: KnowledgeGraph, index_of: np.ndarray) -> SenseGraph:
        """The memory of the part ``kg`` of the sense KG the pairs' candidates need (built per call:
        another call's pairs need another part)."""
        config = WordInContextConfig(description_max_length=int(self.settings.get("description_max_length", 32)),
                                     relation_memory=bool(self.settings.get("relation_memory", True)),
                                     fanouts=tuple(self.settings.get("fanouts", (5, 5))))
        return sense_graph(self.model, kg, config, index_of)

    def predict(self, pairs: list[WordPair], kg: KnowledgeGraph | None = None, batch_size: int = 64) -> list[dict]:
        """One row per pair: ``same`` (bool), ``probability``, and with a KM the most likely sense of
        the target in each text (entity id and its probability)."""
        inventory = None
        graph = None
        if self.model.uses_kg:
            if kg is None:
                raise ValueError(f"a {self.settings['variant']} model reads the target's senses: give the sense KG")
            inventory = SenseInventory.for_wordnet(kg)
        data = encode_pairs(pairs, self.model.language.tokenizer, inventory, int(self.settings.get("max_length", 96)),
                            int(self.settings.get("max_candidates", 64)))
        if self.model.uses_kg:
            graph = self._sense_graph(*restrict_to_candidates(kg, [data], len(self.model.knowledge.layers)))
            data = graph.localise(data)
            kg = graph.kg
        probability, senses = predict_probabilities(self.model, data, graph, batch_size)
        rows = []
        for i, (pair, prob) in enumerate(zip(pairs, probability)):
            row = {"lemma": pair.lemma, "same": bool(prob >= 0.5), "probability": round(float(prob), 6)}
            if pair.label is not None:
                row["label"] = pair.label
            if senses is not None:
                for k, r in (("sense1", i), ("sense2", len(pairs) + i)):
                    valid = data.candidates[r] >= 0
                    if valid.any():
                        best = int(np.argmax(np.where(valid, senses[r, :len(valid)], -1)))
                        row[k] = {"entity": kg.entity_ids[int(data.candidates[r, best])],
                                  "probability": round(float(senses[r, best]), 6)}
            rows.append(row)
        return rows

def predict_rows(finetuned: FinetunedWordInContext, pairs_path: Path, gold: Path | None = None,
                 kg_path: Path | None = None, inputs: tuple | None = None) -> list[dict]:
    """``jaket predict word-in-context``: the rows of :meth:`FinetunedWordInContext.predict` for a
    pairs file (WiC or JSONL) over the sense KG (default: WordNet 3.0)."""
    pairs, kg = inputs if inputs is not None else read_prediction_inputs(pairs_path, gold, kg_path)
    if not finetuned.model.uses_kg:
        kg = None
    elif kg is None:
        kg = load_sense_kg()
        trained_on = finetuned.settings.get("kg", {}).get("fingerprint")
        if trained_on not in (None, kg.fingerprint()):
            logger.info("predicting over another sense KG than the fine-tuning one (its memory is recomputed)")
    return finetuned.predict(pairs, kg)

