"""The entity classifier of KG': KM over the whole graph + a two-layer head, optionally started
from the pre-trained category head (:func:`category_prior`). The run loop
(:mod:`jaket.tasks.entity_classification.run`) and the fine-tuned folder
(:mod:`jaket.tasks.entity_classification.finetuned`) import it; it imports neither."""

from __future__ import annotations

import torch
from torch import nn

from jaket.tasks.variants import Backbone
from jaket.model.memory import FrozenMemory


class EntityClassifier(nn.Module):
    """KM over the whole KG' (full batch) followed by a two-layer head; without a KM the head
    reads the frozen features directly. With a ``prior`` (a linear map of the same features,
    :func:`category_prior`) the logits are ``head(x) + prior(x)``."""

    def __init__(self, knowledge: nn.Module | None, hidden: int, num_classes: int, dropout: float,
                 prior: nn.Linear | None = None):
        super().__init__()
        self.knowledge = knowledge
        self.head = nn.Sequential(nn.Dropout(dropout), nn.Linear(hidden, hidden), nn.GELU(),
                                  nn.Dropout(dropout), nn.Linear(hidden, num_classes))
        self.prior = prior

    def forward(self, memory: FrozenMemory, edge_index, edge_type) -> torch.Tensor:
        x = memory.entities
        if self.knowledge is not None:
            x = self.knowledge(x, edge_index, edge_type, memory.relations)
        logits = self.head(x)
        return logits if self.prior is None else logits + self.prior(x)

    def head_state(self) -> dict[str, torch.Tensor]:
        """The head's tensors as saved in a fine-tuned folder (the prior's under ``prior.``)."""
        state = dict(self.head.state_dict())
        if self.prior is not None:
            state.update({f"prior.{k}": v for k, v in self.prior.state_dict().items()})
        return state

    def load_head_state(self, state: dict[str, torch.Tensor]) -> None:
        prior = {k.removeprefix("prior."): v for k, v in state.items() if k.startswith("prior.")}
        if prior:
            self.prior = nn.Linear(prior["weight"].shape[1], prior["weight"].shape[0])
            self.prior.load_state_dict(prior)
        self.head.load_state_dict({k: v for k, v in state.items() if not k.startswith("prior.")})


def category_prior(backbone: Backbone, category_names) -> nn.Linear | None:
    """A linear classifier over ``category_names`` copied from the pre-trained category head
    (pre-training task 1, ``E^KM -> categories``): the rows of the categories it knows by name;
    a category it does not know gets weight 0 and the lowest known bias. ``None`` when the
    backbone has no category head or shares no name. Fine-tuning from it starts at the
    zero-shot predictions (:func:`zero_shot_predictions`) instead of at chance."""
    if backbone.category_head is None or backbone.knowledge is None:
        return None
    known = {name: i for i, name in enumerate(backbone.category_names)}
    rows = [known.get(name, -1) for name in category_names]
    if all(r < 0 for r in rows):
        return None
    source = backbone.category_head.classifier
    prior = nn.Linear(source.in_features, len(rows))
    with torch.no_grad():
        prior.weight.zero_()
        prior.bias.fill_(float(source.bias[[r for r in rows if r >= 0]].min()))
        for i, r in enumerate(rows):
            if r >= 0:
                prior.weight[i] = source.weight[r]
                prior.bias[i] = source.bias[r]
    return prior
