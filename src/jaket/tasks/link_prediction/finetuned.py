"""The fine-tuned link predictor that ``jaket finetune link-prediction`` saves and
``jaket predict link-prediction`` uses.

The folder is the common fine-tuned layout (:mod:`jaket.tasks.finetuned`): the backbone (LM1 as
fine-tuned with ``--train-encoder``, else as it was; the fine-tuned KM), ``head.safetensors`` (the
relation maps, the entity projection of the ``lm`` setting, the learned temperature) and
``task.json`` (setting, scorer, metric, description length, training record).

Queries (``--queries FILE``), one a line, tab-separated like the split files, ``?`` for the
entity to predict; blank lines and lines starting with ``#`` are skipped::

    02084071<TAB>_hypernym<TAB>?        top-k tails of (h, r, ?)
    ?<TAB>_hypernym<TAB>02083346        top-k heads of (?, r, t)

Each query gives one JSON row: the query, ``predict`` (``"tail"`` or ``"head"``) and ``answers``,
the ``top_k`` entities by score, each with ``known`` = the completed triple is already in the KG
(``--exclude-known`` leaves those out).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch

from jaket.kg.graph import KnowledgeGraph
from jaket.model.jaket import JaketModel
from jaket.tasks.finetuned import (FinetunedFolder, FinetunedFormatError, FinetunedModel, backbone_model,
                                   prediction_memory)
from jaket.tasks.link_prediction.data import (Query, QueryFormatError, read_prediction_inputs,  # noqa: F401
                                              read_queries)
from jaket.tasks.link_prediction.model import LinkScorer, known_answers
from jaket.tasks.link_prediction.job import METRICS, SCORERS, TASK, LinkPredictionConfig
from jaket.tasks.variants import VARIANT_LABELS, Backbone, full_graph
from jaket.tasks.settings import variant as variant_spec



def check_queries(kg: KnowledgeGraph, queries: list[Query]) -> None:
    """Queries built in Python (:func:`read_queries` checks a file's): each asks for exactly one of
    head and tail, with integer indices inside ``kg`` (a ``ValueError`` naming the query; an index of
    -1 picked the last entity without a word)."""
    sizes = {"head": kg.num_entities, "relation": kg.num_relations, "tail": kg.num_entities}
    for i, query in enumerate(queries):
        if not isinstance(query, Query):
            raise TypeError(f"queries[{i}]: expected a Query, got {type(query).__name__}")
        if (query.head is None) == (query.tail is None):
            raise ValueError(f"queries[{i}] (line {query.line}): exactly one of head and tail must be None")
        for part, size in sizes.items():
            index = getattr(query, part)
            if index is None:
                continue
            if isinstance(index, bool) or not isinstance(index, (int, np.integer)) or not 0 <= index < size:
                raise ValueError(f"queries[{i}] (line {query.line}): {part} {index!r} is not an index of the "
                                 f"KG's {size} {'relations' if part == 'relation' else 'entities'}")


class FinetunedLinkPredictor(FinetunedModel):
    """A fine-tuned link predictor (:meth:`save_pretrained` / :meth:`from_pretrained`).

    :meth:`predict` ranks every entity of a KG for ``(h, r, ?)`` / ``(?, r, t)``: the memory is
    recomputed from that KG's descriptions by the saved LM1, the KM reads that KG's triples."""

    task = TASK

    def __init__(self, backbone: Backbone, scorer: LinkScorer, config: LinkPredictionConfig | None = None,
                 variant: str | None = None,
                 settings: dict | None = None):
        self.backbone = backbone
        self.scorer = scorer.eval()
        self.config = config
        self.variant = variant or backbone.variant
        self.settings = dict(settings or {})
        if config is not None:  # in memory, it reads a KG as its saved folder will (task_config)
            self.settings = {"description_max_length": int(config.description_max_length),
                             "relation_memory": bool(config.relation_memory), **self.settings}

    def backbone_model(self) -> JaketModel:
        if self.config is None:
            raise ValueError("this predictor was loaded from a folder; copy that folder instead of saving it again")
        return backbone_model(self.backbone, self.config.variant_config(self.variant), self.scorer.knowledge)

    def head_state(self) -> dict[str, torch.Tensor]:
        return {k: v for k, v in self.scorer.state_dict().items() if not k.startswith("knowledge.")}

    def task_config(self) -> dict:
        return {"variant": self.variant, "scorer": self.scorer.scorer, "metric": self.scorer.metric,
                "hidden_size": int(self.backbone.hidden_size),
                "description_max_length": int(self.config.description_max_length),
                "relation_memory": bool(self.config.relation_memory),
                "train_encoder": bool(self.config.train_encoder), **self.settings}

    @classmethod
    def from_folder(cls, folder: FinetunedFolder, directory: Path) -> "FinetunedLinkPredictor":
        settings = dict(folder.task_config)
        variant, scorer, metric = settings.get("variant"), settings.get("scorer"), settings.get("metric", "native")
        if variant not in VARIANT_LABELS or scorer not in SCORERS or metric not in METRICS:
            raise FinetunedFormatError(f"{directory}/task.json: needs 'variant' (one of {', '.join(VARIANT_LABELS)}), "
                                       f"'scorer' (one of {', '.join(SCORERS)}) and 'metric' ({', '.join(METRICS)})")
        model = folder.backbone.eval()
        hidden = int(model.hidden_size)
        backbone = Backbone(variant, hidden, model.language, model.knowledge if variant_spec(variant).has_km else None,
                            model.fusion)
        link = LinkScorer(backbone, scorer, 0, metric=metric)
        missing, unexpected = link.load_state_dict(folder.head, strict=False)
        wrong = unexpected + [k for k in missing if not k.startswith("knowledge.")]
        if wrong:
            raise FinetunedFormatError(f"{directory}/head.safetensors: does not fit a {scorer} scorer of width "
                                       f"{hidden}: {', '.join(sorted(wrong)[:4])}")
        return cls(backbone, link, settings=settings)

    def to(self, device) -> "FinetunedLinkPredictor":
        """Move the backbone and the scorer to ``device`` (in place; the memory and the queries
        follow them); returns self."""
        self.backbone.to(device)
        self.scorer.to(device)
        return self

    @torch.no_grad()
    def embed(self, kg: KnowledgeGraph) -> tuple[torch.Tensor, torch.Tensor]:
        """Entity (N, F) and relation embeddings of ``kg`` as the scorer reads them (on the
        model's device)."""
        memory = prediction_memory(self.backbone, kg, self.settings)
        self.scorer.eval()
        edges = (t.to(memory.entities.device) for t in full_graph(kg))
        return self.scorer.entities(memory, *edges), self.scorer.relations(memory)

    @torch.no_grad()
    def predict(self, kg: KnowledgeGraph, queries: list[Query], top_k: int = 10,
                exclude_known: bool = False) -> list[dict]:
        """One row per query (module docstring); ``ValueError`` for a ``top_k`` below 1 or a query
        that does not fit ``kg`` (:func:`check_queries`)."""
        if top_k < 1:
            raise ValueError(f"top_k must be at least 1, got {top_k}")
        check_queries(kg, queries)
        if not queries:
            return []
        entities, relations = self.embed(kg)
        device = entities.device
        tails_of, heads_of = known_answers(np.asarray(kg.triples, dtype=np.int64).reshape(-1, 3))
        rows = []
        for query in queries:
            r = torch.tensor([query.relation], device=device)
            if query.tail is None:
                scores = self.scorer.tail_scores(entities, relations, torch.tensor([query.head], device=device), r)[0]
                known = set(tails_of.get((query.head, query.relation), ()))
            else:
                scores = self.scorer.head_scores(entities, relations, r, torch.tensor([query.tail], device=device))[0]
                known = set(heads_of.get((query.relation, query.tail), ()))
            if exclude_known and known:
                scores[torch.tensor(sorted(known), dtype=torch.long, device=device)] = -torch.inf
            values, order = scores.topk(min(top_k, len(scores)))
            answers = [{"entity": kg.entity_ids[c], "name": kg.entity_names[c], "score": round(float(v), 6),
                        "known": c in known}
                       for v, c in zip(values.tolist(), order.tolist()) if v > -np.inf]
            rows.append({"line": query.line,
                         "head": None if query.head is None else kg.entity_ids[query.head],
                         "relation": kg.relation_ids[query.relation],
                         "tail": None if query.tail is None else kg.entity_ids[query.tail],
                         "predict": "tail" if query.tail is None else "head", "answers": answers})
        return rows


def predict_rows(model: FinetunedLinkPredictor, kg_path: Path, queries: Path, top_k: int = 10,
                 exclude_known: bool = False, inputs: tuple | None = None) -> list[dict]:
    """``jaket predict link-prediction``'s rows (one per query of the file ``queries``) on the KG
    folder ``kg_path`` (``inputs``: what :func:`~jaket.tasks.link_prediction.data.read_prediction_inputs`
    read of them, before the model was loaded)."""
    kg, parsed = inputs if inputs is not None else read_prediction_inputs(kg_path, queries)
    return model.predict(kg, parsed, top_k=top_k, exclude_known=exclude_known)
