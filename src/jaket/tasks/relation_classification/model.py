"""PAIR's encoder (Gao et al., 2019) for few-shot relation classification (the paper's Table 1).

One sequence per query and support, ``query [SEP] support``, read by LM1 then LM2 (Eq. 10, no
fusion: FewRel's entities are not in the pre-training KG); a linear layer on the [CLS] output
gives the "same relation" score. Training and evaluation are in
:mod:`jaket.tasks.relation_classification`, the fine-tuned model in
:mod:`jaket.tasks.relation_classification.finetuned`; both import this module.
"""

from __future__ import annotations

from pathlib import Path

import torch
from torch import nn

from jaket.model.jaket import JaketModel
from jaket.model.language import SplitLanguageModel
from jaket.paths import default_model_path
from jaket.tasks.relation_classification.job import SUPPORTED_VARIANTS
from jaket.tasks.settings import VariantError
from jaket.tasks.settings import variant as variant_spec


class PairEncoder(nn.Module):
    """An encoder over ``query [SEP] support`` and a linear "same relation" score from [CLS]."""

    def __init__(self, variant: str, encoder: Path | None = None, pretrained: Path | None = None, *,
                 language: SplitLanguageModel | None = None):
        super().__init__()
        if variant not in SUPPORTED_VARIANTS:
            raise VariantError(
                f"variant {variant!r} needs the FewRel entities in the KG; relation classification "
                f"supports {', '.join(SUPPORTED_VARIANTS)} (see the module docstring)")
        self.variant = variant
        # Both settings read a pair through the same code path, LM2(LM1(x)) of a
        # SplitLanguageModel, so that the rows differ only by their weights (in particular no
        # setting gets segment embeddings the other does not: LM1 takes no token types).
        if language is not None:  # a fine-tuned folder's (see FinetunedPairClassifier)
            self.language = language
        elif variant_spec(variant).pretrained:
            if pretrained is None:
                raise VariantError("variant 'jaket' needs a pre-trained model folder (--model DIR)")
            self.language = JaketModel.from_pretrained(pretrained, load_memory=False).language
        else:
            if encoder is None:
                encoder = default_model_path()
            self.language = SplitLanguageModel.from_pretrained(encoder)
        self.tokenizer = self.language.tokenizer
        hidden = int(self.language.hidden_size)
        self.score = nn.Linear(hidden, 1)

    def forward(self, queries: list[str], supports: list[str], max_length: int) -> torch.Tensor:
        batch = self.tokenizer(queries, supports, truncation=True, max_length=max_length,
                               padding=True, return_tensors="pt")
        device = self.score.weight.device
        ids, mask = batch["input_ids"].to(device), batch["attention_mask"].to(device)
        hidden = self.language.lm2(self.language.lm1(ids, mask), mask)
        with torch.autocast(device_type=hidden.device.type, enabled=False):  # scores in fp32 (no bf16 ties)
            return self.score(hidden[:, 0].float()).squeeze(-1)

    def encoder_parameters(self):
        return self.language.parameters()
