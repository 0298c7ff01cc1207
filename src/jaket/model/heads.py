"""Prediction heads of the four pre-training tasks (the MLM head lives in the language module).

- :class:`EntityHead`: masked entity prediction, ``q = g((Z^LM_s + Z^LM_o) / 2)`` with
  ``g(x) = GELU(x W1) W2``, scored by inner product against candidate rows of ``E^context``.
- :class:`CategoryHead`: entity category prediction from ``E^KM`` (cross-entropy over categories).
- :class:`RelationHead`: relation prediction for an entity pair from their ``E^KM`` rows.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn


def span_mean(hidden: torch.Tensor, batch: torch.Tensor, start: torch.Tensor,
              end: torch.Tensor) -> torch.Tensor:
    """``(Z_s + Z_o) / 2`` of each span ``[start, end]`` of text ``batch`` (Eq. 7 over a
    description; the mention representation of masked entity prediction)."""
    return (hidden[batch, start] + hidden[batch, end]) / 2


class EntityHead(nn.Module):
    """``g(x) = GELU(x W1) W2`` (masked entity prediction)."""

    def __init__(self, channels: int):
        super().__init__()
        self.w1 = nn.Linear(channels, channels)
        self.w2 = nn.Linear(channels, channels)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.w2(F.gelu(self.w1(x)))

    def query(self, hidden: torch.Tensor, batch: torch.Tensor, start: torch.Tensor,
              end: torch.Tensor) -> torch.Tensor:
        """``q = g((Z_s + Z_o) / 2)`` of each mention span (masked entity prediction)."""
        return self(span_mean(hidden, batch, start, end))


class CategoryHead(nn.Module):
    """Category logits from ``E^KM`` (entity category prediction, loss ``L_c``)."""

    def __init__(self, channels: int, num_categories: int):
        super().__init__()
        self.classifier = nn.Linear(channels, max(1, num_categories))

    def forward(self, entity_km: torch.Tensor) -> torch.Tensor:
        return self.classifier(entity_km)


class RelationHead(nn.Module):
    """Relation logits of a (head, tail) pair from their ``E^KM`` rows (loss ``L_r``).

    The pair is read as ``[h ⊕ t ⊕ h ⊙ t]`` by a two-layer MLP; the order matters (relations are
    directed).
    """

    def __init__(self, channels: int, num_relations: int):
        super().__init__()
        self.hidden = nn.Linear(3 * channels, channels)
        self.out = nn.Linear(channels, max(1, num_relations))

    def forward(self, head: torch.Tensor, tail: torch.Tensor) -> torch.Tensor:
        return self.out(F.gelu(self.hidden(torch.cat([head, tail, head * tail], dim=-1))))
