"""Merging knowledge-module entity embeddings into the text at the mentions (Eq. 8-9).

For every token position ``k`` inside a mention ``m_i = (e, s, o)`` (``s <= k <= o``),
``Z^merge_k = Z_k + E^KM_e`` (Eq. 8); other positions keep ``Z_k``; then ``Z' = LayerNorm(Z^merge)``
(Eq. 9). Mentions removed for masked entity prediction (``fuse_mask`` False) receive nothing.

``normalize="all"`` applies the LayerNorm at every position, as Eq. 9 is written. ``"mentions"``
applies it only where something was added, leaving every other token's LM1 state exactly as the
pre-trained LM2 expects it (see docs/design.md for why this is offered and what it changes).
"""

from __future__ import annotations

import torch
from torch import nn

NORMALIZE = ("all", "mentions")


def mention_positions(mention_batch: torch.Tensor, mention_start: torch.Tensor,
                      mention_end: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Every token position covered by the (inclusive) spans: ``(mention, batch, position)``."""
    lengths = (mention_end - mention_start + 1).clamp(min=0)
    mention = torch.repeat_interleave(torch.arange(len(lengths), device=lengths.device), lengths)
    first = torch.cumsum(lengths, 0) - lengths
    offset = torch.arange(int(lengths.sum()), device=lengths.device) - first[mention]
    return mention, mention_batch[mention], mention_start[mention] + offset


class MentionFusion(nn.Module):
    """``Z' = LayerNorm(Z + Σ_mentions E^KM)`` (Eq. 8-9).

    ``forward(Z (B, L, F), mention_batch, mention_start, mention_end (M,), mention_embedding (M, F),
    fuse_mask (M,) bool = None) -> Z' (B, L, F)``.
    """

    def __init__(self, channels: int, normalize: str = "all", layer_norm_eps: float = 1e-12):
        super().__init__()
        if normalize not in NORMALIZE:
            raise ValueError(f"normalize must be one of {NORMALIZE}, not {normalize!r}")
        self.normalize = normalize
        self.norm = nn.LayerNorm(channels, eps=layer_norm_eps)

    def forward(self, z: torch.Tensor, mention_batch: torch.Tensor, mention_start: torch.Tensor,
                mention_end: torch.Tensor, mention_embedding: torch.Tensor,
                fuse_mask: torch.Tensor | None = None) -> torch.Tensor:
        if fuse_mask is not None:
            keep = fuse_mask.to(torch.bool)
            mention_batch, mention_start = mention_batch[keep], mention_start[keep]
            mention_end, mention_embedding = mention_end[keep], mention_embedding[keep]
        mention, batch, position = mention_positions(mention_batch, mention_start, mention_end)
        flat = batch * z.size(1) + position
        added = torch.zeros(z.size(0) * z.size(1), z.size(2), dtype=z.dtype, device=z.device)
        added = added.index_add(0, flat, mention_embedding[mention].to(z.dtype))  # Eq. 8
        merged = z + added.view_as(z)
        if self.normalize == "all":
            return self.norm(merged)  # Eq. 9
        touched = torch.zeros(z.size(0) * z.size(1), dtype=torch.bool, device=z.device)
        touched[flat] = True
        touched = touched.view(z.size(0), z.size(1), 1)
        return torch.where(touched, self.norm(merged), z)
