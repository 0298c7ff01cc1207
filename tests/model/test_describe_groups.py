"""Eq. 7 with gradients (``JaketModel.describe``) reads its rows in groups of like length
(:func:`jaket.model.memory.padding_groups`): the same rows and gradients as one padded batch."""

import numpy as np
import pytest
import torch

from jaket.model.language import SplitLanguageModel
from jaket.model.memory import DescriptionTokens, padding_groups

SHORT = "a cat"
LONG = "a large domesticated carnivorous mammal that hunts mice and is kept as a pet in many homes of the world"


def test_padding_groups_split_a_mixed_batch_by_length_and_keep_every_position_once():
    lengths = np.array([30, 5, 6, 31, 4, 32, 5, 29])
    groups = padding_groups(lengths)
    assert len(groups) == 2
    assert sorted(np.concatenate(groups).tolist()) == list(range(len(lengths)))
    short, long = groups
    assert lengths[short].max() < lengths[long].min()
    padded = sum(len(g) * lengths[g].max() for g in groups)
    assert padded <= 0.8 * len(lengths) * lengths.max()


@pytest.mark.parametrize("lengths", [[12, 12, 12, 12], [10, 11, 12, 12], [7], []])
def test_padding_groups_keep_one_group_when_a_split_saves_little(lengths):
    groups = padding_groups(lengths)
    assert len(groups) == 1
    assert groups[0].tolist() == list(range(len(lengths)))


def _rows(language, texts):
    tokens = DescriptionTokens(texts, [t.split()[1] for t in texts], language.tokenizer, max_length=24)
    return tokens.batch(np.arange(len(texts)))


def test_describe_in_groups_gives_the_rows_and_gradients_of_one_padded_batch(toy_jaket, monkeypatch):
    model, _ = toy_jaket()
    widths = []
    lm1 = model.language.lm1
    monkeypatch.setattr(model.language, "lm1", lambda ids, mask: widths.append(ids.shape) or lm1(ids, mask))
    model.eval()  # no dropout: the two readings must agree
    texts = [SHORT, LONG, SHORT + " indoors", LONG, "a dog", LONG + " too"] * 3
    ids, mask, start, end = _rows(model.language, texts)
    assert len(padding_groups(mask.sum(1).numpy())) == 2  # the case under test

    def reading(grouped: bool):
        model.zero_grad(set_to_none=True)
        if grouped:
            rows = model.describe(ids, mask, start, end)
        else:
            z = model.language.lm1(ids, mask)
            rows = (z[torch.arange(len(ids)), start] + z[torch.arange(len(ids)), end]) / 2
        (rows * torch.linspace(-1, 1, rows.shape[1])).sum().backward()
        grads = {n: p.grad.clone() for n, p in model.language.named_parameters() if p.grad is not None}
        return rows.detach(), grads

    rows, grads = reading(True)
    assert len(widths) == 2 and widths[0][1] < widths[1][1] == ids.shape[1]  # two calls, the short rows cut
    assert widths[0][0] + widths[1][0] == len(texts)
    plain_rows, plain_grads = reading(False)
    torch.testing.assert_close(rows, plain_rows, rtol=1e-5, atol=1e-5)
    assert grads.keys() == plain_grads.keys() and grads
    for name in grads:
        torch.testing.assert_close(grads[name], plain_grads[name], rtol=1e-4, atol=1e-5, msg=name)


def test_a_row_read_in_a_narrower_batch_is_the_same_for_a_relative_position_encoder(tiny_mpnet_dir):
    """MPNet's relative position bias: cutting the padding off a group changes no real token's row."""
    language = SplitLanguageModel.from_pretrained(tiny_mpnet_dir).eval()
    ids, mask, start, end = _rows(language, [SHORT, LONG])
    width = int(mask[0].sum())
    with torch.no_grad():
        padded = language.lm1(ids, mask)[0, :width]
        cut = language.lm1(ids[:1, :width], mask[:1, :width])[0]
    torch.testing.assert_close(cut, padded, rtol=1e-5, atol=1e-5)
