"""A fine-tuned PAIR relation classifier: saved by ``jaket finetune relation-classification``,
used by ``jaket predict relation-classification --finetuned DIR --support FILE --queries FILE``.

The folder is the fine-tuned layout of :mod:`jaket.tasks.finetuned`: ``backbone/`` holds the
language module (LM1 + LM2) as fine-tuned, ``head.safetensors`` the linear "same relation" score
and ``task.json`` the setting. Prediction follows PAIR (Gao et al., 2019): each query sentence is
paired with every support sentence, ``query [SEP] support``, and goes to the relation whose
supports have the highest mean score. The relations are those of the support file, any number of
them, any number of examples each (docs/data.md).
"""

from __future__ import annotations

from pathlib import Path

import torch

from jaket.tasks.relation_classification.data import FewRelData, read_prediction_inputs
from jaket.model.jaket import JaketModel
from jaket.tasks.finetuned import FinetunedFolder, FinetunedFormatError, FinetunedModel, backbone_model, checked_variant
from jaket.tasks.relation_classification.model import PairEncoder
from jaket.tasks.relation_classification.job import TASK, RelationClassificationConfig
from jaket.tasks.settings import VariantConfig
from jaket.tasks.variants import Backbone



class FinetunedPairClassifier(FinetunedModel):
    """A :class:`PairEncoder` with the settings it was fine-tuned with (and, to save, the base
    encoder or pre-trained model it started from: ``config``)."""

    task = TASK

    def __init__(self, model: PairEncoder, settings: dict, config: RelationClassificationConfig | None = None):
        self.model = model.eval()
        self.settings = dict(settings)
        self.config = config

    def backbone_model(self) -> JaketModel:
        if self.config is None:
            raise ValueError("this classifier was loaded from a folder; copy that folder instead of saving it again")
        variant = self.settings["variant"]
        language = self.model.language
        backbone = Backbone(variant, int(language.hidden_size), language)
        return backbone_model(backbone, VariantConfig(variant=variant, encoder=self.config.encoder,
                                                      pretrained=self.config.pretrained))

    def head_state(self) -> dict[str, torch.Tensor]:
        return self.model.score.state_dict()

    def task_config(self) -> dict:
        return {**self.settings, "hidden_size": int(self.model.language.hidden_size)}

    @classmethod
    def from_folder(cls, folder: FinetunedFolder, directory: Path) -> "FinetunedPairClassifier":
        variant = checked_variant(folder, directory)
        model = PairEncoder(variant, language=folder.backbone.language)
        try:
            model.score.load_state_dict(folder.head)
        except RuntimeError as error:
            first = str(error).strip().splitlines()[0]
            raise FinetunedFormatError(f"{directory}/head.safetensors: not a PAIR score head: {first}") from None
        return cls(model, dict(folder.task_config))

    def to(self, device) -> "FinetunedPairClassifier":
        """Move the encoder and the score head to ``device`` (in place); returns self."""
        self.model.to(device)
        return self

    @torch.no_grad()
    def predict(self, supports: FewRelData, queries, batch_size: int = 64) -> list[dict]:
        """One row per query: the chosen relation and the mean pair score of every relation."""
        relations = supports.relations
        flat = [(r, s.marked_text()) for r in relations for s in supports.instances[r]]
        max_length = int(self.settings.get("max_length", 128))
        self.model.eval()
        rows = []
        for line, query in queries:
            text = query.marked_text()
            scores = []
            for begin in range(0, len(flat), batch_size):
                part = flat[begin:begin + batch_size]
                scores.append(self.model([text] * len(part), [s for _, s in part], max_length))
            scores = torch.cat(scores).cpu()  # read back once, from the model's device
            means = {r: float(scores[[i for i, (rel, _) in enumerate(flat) if rel == r]].mean()) for r in relations}
            best = max(relations, key=lambda r: means[r])
            row = {"line": line, "head": query.head_name, "tail": query.tail_name, "relation": best,
                   "name": supports.relation_names.get(best, best),
                   "scores": {r: round(v, 6) for r, v in means.items()}}
            if query.relation:
                row["gold"] = query.relation
            rows.append(row)
        return rows


def predict_rows(model: FinetunedPairClassifier, support: Path, queries: Path,
                 inputs: tuple | None = None) -> list[dict]:
    """``jaket predict relation-classification``'s rows (one per query sentence of the file
    ``queries``), the relations those of the FewRel-format file ``support``."""
    supports, query_lines = inputs if inputs is not None else read_prediction_inputs(support, queries)
    return model.predict(supports, query_lines)
