"""A fine-tuned question answerer: saved by ``jaket finetune kgqa``, used by
``jaket predict kgqa --model DIR --questions FILE``.

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

from jaket.kg.graph import KnowledgeGraph
from jaket.kg.io import load_kg, save_kg
from jaket.tasks.finetuned import FinetunedFormatError, backbone_model, read_finetuned_setting, write_finetuned
from jaket.tasks.kgqa import QuestionAnswerer, rank_candidates
from jaket.tasks.kgqa_graph import QAGraph
from jaket.tasks.metaqa import QAExample, entity_lookup, missing_answer_report, read_questions
from jaket.tasks.settings import KGQAConfig, VariantConfig
from jaket.tasks.variants import Backbone, kg_memory

logger = logging.getLogger(__name__)

TASK = "kgqa"
KG_DIR = "kg"


class FinetunedQuestionAnswerer:
    """A :class:`QuestionAnswerer` with the settings it was fine-tuned with."""

    task = TASK

    def __init__(self, model: QuestionAnswerer, settings: dict, variant_config: VariantConfig | None = None,
                 backbone: Backbone | None = None):
        self.model = model.eval()
        self.settings = dict(settings)
        self.variant_config = variant_config
        self.backbone = backbone

    def to(self, device) -> "FinetunedQuestionAnswerer":
        """Move the model to ``device`` (in place; the memory and the questions follow it); returns self."""
        self.model.to(device)
        return self

    def _backbone(self) -> Backbone:
        m = self.model
        return Backbone(m.variant, int(m.language.hidden_size), m.language, m.knowledge, m.fusion)

    def save_pretrained(self, directory, kg: KnowledgeGraph) -> Path:
        """Write the fine-tuned folder with ``kg`` in ``kg/`` (replaced atomically)."""
        if self.variant_config is None:
            raise ValueError("this model was loaded from a folder; copy that folder instead of saving it again")
        model = backbone_model(self._backbone(), self.variant_config, self.model.knowledge)
        settings = {**self.settings, "hidden_size": int(self.model.language.hidden_size),
                    "kg": {"fingerprint": kg.fingerprint(), "entities": int(kg.num_entities),
                           "triples": int(kg.num_triples)}}
        return write_finetuned(directory, TASK, model, self.model.head_state(), settings,
                               extra=lambda tmp: save_kg(kg, tmp / KG_DIR))

    @classmethod
    def from_pretrained(cls, directory) -> "FinetunedQuestionAnswerer":
        """Read a folder written by :meth:`save_pretrained` (safetensors and JSON only)."""
        folder, variant = read_finetuned_setting(directory, TASK)
        settings = dict(folder.task_config)
        saved = folder.backbone.eval()
        knowledge = saved.knowledge if variant != "lm" else None
        model = QuestionAnswerer(Backbone(variant, int(saved.hidden_size), saved.language, knowledge,
                                          saved.fusion if knowledge is not None else None))
        missing, unexpected = model.load_state_dict(folder.head, strict=False)
        missing = [k for k in missing if not k.startswith(("language.", "knowledge."))]
        if missing or unexpected:
            raise FinetunedFormatError(f"{directory}/head.safetensors: not a {variant} question-answering head "
                                       f"(missing {missing[:3]}, unexpected {unexpected[:3]})")
        finetuned = cls(model, settings)
        finetuned.directory = Path(directory)
        return finetuned

    def answer(self, kg: KnowledgeGraph, questions: list[QAExample], hops: int, top_k: int = 5) -> list[dict]:
        """One row per question: the ``top_k`` candidates with their scores."""
        trained_on = self.settings.get("kg", {}).get("fingerprint")
        if self.model.variant == "lm+g" and trained_on not in (None, kg.fingerprint()):
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


def predict_rows(model: FinetunedQuestionAnswerer, args) -> list[dict]:
    """The rows ``jaket predict kgqa`` prints (one per question)."""
    kg_dir = args.kg if args.kg is not None else getattr(model, "directory", Path(".")) / KG_DIR
    kg = load_kg(kg_dir)
    hops = args.hops if args.hops is not None else max(model.settings.get("hops") or [1])
    if hops < 1 or args.top_k < 1:
        raise ValueError(f"--hops and --top-k must be at least 1, got {hops} and {args.top_k}")
    missing: list[tuple[str, int, str]] = []
    questions, _ = read_questions(args.questions, entity_lookup(kg.entity_names, kg.entity_ids), hops, strict=True,
                                  missing=missing)
    if not questions:
        raise ValueError(f"{args.questions}: no question")
    if missing:
        report = missing_answer_report(missing)
        logger.warning("%d gold answer(s) of %d question(s) are not entities of %s (listed as gold_not_in_kg), "
                       "e.g. %s", report["answers"], report["questions"], kg_dir, "; ".join(report["examples"]))
    return model.answer(kg, questions, hops, args.top_k)
