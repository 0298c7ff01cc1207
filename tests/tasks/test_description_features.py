"""`description_features` (the ``lm`` setting's and the JAKET scorers' description rows, Eq. 7): read in
the memory refresh's length-sorted batches, each row returned at its description's position."""

from __future__ import annotations

import torch

from jaket.kg.corpus import encode_descriptions
from jaket.model.heads import span_mean
from jaket.model.language import SplitLanguageModel
from jaket.model.memory import description_features

NAMES = ["dog", "cat", "river bank", "loan", "tree", "sky"]
TEXTS = ["a dog barks",
         "the cat, a small domesticated carnivorous mammal with soft fur, a short snout and retractable claws",
         "the river bank is the sloping land beside a body of water",
         "a loan",
         "a tall perennial woody plant having a main trunk and branches forming a distinct elevated crown",
         "sky"]


def _alone(language, text: str, name: str, full: bool, max_length: int) -> torch.Tensor:
    """Eq. 7 of one description read alone (no padding): ``(Z_s + Z_o) / 2`` at its name."""
    ids, mask, start, end = encode_descriptions([text], [name], language.tokenizer, max_length=max_length)
    z = language.lm1(ids, mask)
    if full:
        z = language.lm2(z, mask)
    return span_mean(z, torch.arange(1), start, end)[0]


def test_rows_come_back_in_the_order_given_from_length_sorted_batches(tiny_bert_dir):
    language = SplitLanguageModel.from_pretrained(tiny_bert_dir).eval()
    widths = []
    read = language.lm1

    def lm1(ids, mask):  # the batches the pass reads: their padded widths
        widths.append((ids.shape[0], ids.shape[1], int(mask.sum())))
        return read(ids, mask)

    language.lm1 = lm1
    with torch.no_grad():
        for full in (False, True):
            widths.clear()
            rows = description_features(language, TEXTS, NAMES, full=full, max_length=24, batch_size=2)
            batches = list(widths)
            assert rows.shape == (len(TEXTS), language.hidden_size) and rows.dtype == torch.float32
            for i, (text, name) in enumerate(zip(TEXTS, NAMES)):
                torch.testing.assert_close(rows[i], _alone(language, text, name, full, 24), atol=1e-5, rtol=1e-4)
            # three batches of two, by length: the widths grow, and the padding is what sorting leaves
            assert [n for n, _, _ in batches] == [2, 2, 2]
            assert [w for _, w, _ in batches] == sorted(w for _, w, _ in batches)
            lengths = sorted(len(language.tokenizer(t, truncation=True, max_length=24)["input_ids"]) for t in TEXTS)
            assert [w for _, w, _ in batches] == lengths[1::2]
        assert description_features(language, [], [], full=True).shape == (0, language.hidden_size)
