"""A fine-tuned question answerer: saved by ``jaket finetune kgqa``, used by
``jaket predict kgqa --finetuned DIR --questions FILE``.

The folder is the fine-tuned layout of :mod:`jaket.tasks.finetuned` plus ``kg/``, the KG the model
was fine-tuned on (directory format, with the descriptions its memory was computed from): the
backbone holds LM1, LM2 and the KM as fine-tuned, ``head.safetensors`` the fusion (Eq. 8-9) and
the question / entity projections, ``task.json`` the setting and the hop counts it was trained on.
Prediction recomputes the memory from the KG's descriptions (``--kg DIR`` answers over another
KG), ranks the candidates of each question (every entity within ``--hops`` hops of its topic)
by the model's score and writes the ``--top-k`` best, one JSON row per question.
"""

from __future__ import annotations

import logging
from pathlib import Path

import numpy as np
import torch

from jaket.kg.graph import KnowledgeGraph
from jaket.kg.io import save_kg
from jaket.model.jaket import JaketModel
from jaket.tasks.finetuned import FinetunedFolder, FinetunedFormatError, FinetunedModel, backbone_model, checked_variant
from jaket.tasks.kgqa.model import QuestionAnswerer, rank_candidates
from jaket.tasks.kgqa.model import QAGraph
from jaket.tasks.kgqa.data import KG_DIR, QAExample, read_prediction_inputs
from jaket.tasks.kgqa.job import TASK, KGQAConfig
from jaket.tasks.settings import VariantConfig
from jaket.tasks.variants import Backbone, kg_memory
from jaket.tasks.settings import variant as variant_spec

logger = logging.getLogger(__name__)



class FinetunedQuestionAnswerer(FinetunedModel):
    """A :class:`QuestionAnswerer` with the settings it was fine-tuned with and, to save, the KG it
    was fine-tuned on (written to ``kg/``: the default KG of its predictions)."""

    task = TASK

    def __init__(self, model: QuestionAnswerer, settings: dict, variant_config: VariantConfig | None = None,
                 backbone: Backbone | None = None, kg: KnowledgeGraph | None = None):
        self.model = model.eval()
        self.settings = dict(settings)
        self.variant_config = variant_config
        self.backbone = backbone
        self.kg = kg

    def to(self, device) -> "FinetunedQuestionAnswerer":
        """Move the model to ``device`` (in place; the memory and the questions follow it); returns self."""
        self.model.to(device)
        return self

    def _backbone(self) -> Backbone:
        m = self.model
        return Backbone(m.variant, int(m.language.hidden_size), m.language, m.knowledge, m.fusion)

    def backbone_model(self) -> JaketModel:
        if self.variant_config is None or self.kg is None:
            raise ValueError("this model was loaded from a folder; copy that folder instead of saving it again")
        return backbone_model(self._backbone(), self.variant_config, self.model.knowledge)

    def head_state(self) -> dict[str, torch.Tensor]:
        return self.model.head_state()

    def task_config(self) -> dict:
        return {**self.settings, "hidden_size": int(self.model.language.hidden_size),
                "kg": {"fingerprint": self.kg.fingerprint(), "entities": int(self.kg.num_entities),
                       "triples": int(self.kg.num_triples)}}

    def write_extra(self, folder: Path) -> None:
        save_kg(self.kg, folder / KG_DIR)

    @classmethod
    def from_folder(cls, folder: FinetunedFolder, directory: Path) -> "FinetunedQuestionAnswerer":
        variant = checked_variant(folder, directory)
        settings = dict(folder.task_config)
        saved = folder.backbone.eval()
        knowledge = saved.knowledge if variant_spec(variant).has_km else None
        model = QuestionAnswerer(Backbone(variant, int(saved.hidden_size), saved.language, knowledge,
                                          saved.fusion if knowledge is not None else None))
        missing, unexpected = model.load_state_dict(folder.head, strict=False)
        missing = [k for k in missing if not k.startswith(("language.", "knowledge."))]
        if missing or unexpected:
            raise FinetunedFormatError(f"{directory}/head.safetensors: not a {variant} question-answering head "
                                       f"(missing {missing[:3]}, unexpected {unexpected[:3]})")
        return cls(model, settings)

    def predict(self, kg: KnowledgeGraph, questions: list[QAExample], hops: int, top_k: int = 5) -> list[dict]:
        """One row per question: the ``top_k`` candidates with their scores (``hops``, ``top_k``: at
        least 1)."""
        if hops < 1 or top_k < 1:
            raise ValueError(f"hops and top_k must be at least 1, got {hops} and {top_k}")
        trained_on = self.settings.get("kg", {}).get("fingerprint")
        if variant_spec(self.model.variant).random_memory and trained_on not in (None, kg.fingerprint()):
            logger.warning("an lm+g model's memory is random per entity index: its answers on another KG than "
                           "the one it was fine-tuned on mean nothing")
        memory = kg_memory(self._backbone(), kg, int(self.settings.get("memory_seed", 0)),
                           max_length=int(self.settings.get("description_max_length", 64)),
                           relation_memory=bool(self.settings.get("relation_memory", True)))
        graph = QAGraph(kg)
        limit = int(self.settings.get("max_candidates", 2000))
        candidates = [graph.candidates(q.topic, hops, limit) for q in questions]
        config = KGQAConfig(max_length=int(self.settings.get("max_length", 48)))
        rows = []
        for q, (cand, scores) in zip(questions, rank_candidates(self.model, memory, graph, questions, candidates, config)):
            order = np.argsort(-scores, kind="stable")[:top_k]
            row = {"line": q.line, "question": q.text, "topic": str(kg.entity_ids[q.topic]), "candidates": len(cand),
                   "answers": [{"entity": str(kg.entity_ids[int(cand[i])]), "name": str(kg.entity_names[int(cand[i])]),
                                "score": round(float(scores[i]), 6)} for i in order]}
            if q.answers:
                row["gold"] = [str(kg.entity_ids[a]) for a in q.answers]
            if q.missing_answers:
                row["gold_not_in_kg"] = list(q.missing_answers)  # named in the file, not entities of the KG
            rows.append(row)
        return rows


def predict_rows(model: FinetunedQuestionAnswerer, questions_path: Path, kg_path: Path | None = None,
                 hops: int | None = None, top_k: int = 5, inputs: tuple | None = None) -> list[dict]:
    """``jaket predict kgqa``'s rows (one per question of the file ``questions_path``) over the KG
    folder ``kg_path`` (default: the model folder's ``kg/``, the fine-tuning KG), candidates within
    ``hops`` hops (default: the largest hop count it was fine-tuned on); ``inputs``: what
    :func:`~jaket.tasks.kgqa.data.read_prediction_inputs` read of them, before the model was loaded."""
    if inputs is None:
        inputs = read_prediction_inputs(model.directory, questions_path, kg_path, hops, top_k, model.settings)
    kg, _, questions, hops = inputs
    return model.predict(kg, questions, hops, top_k)
