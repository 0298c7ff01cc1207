"""SplitLanguageModel.reading_copy: the copy the bf16 memory refresh reads descriptions through (#68).

It must compute the model's own function (MPNet's attention rewritten as one q/k/v product and a
fused attention included), leave the model it was made from untouched, and share its tokenizer."""

import pytest
import torch

from jaket.model.language import ReadingSelfAttention, SplitLanguageModel

TEXTS = ["a bank: sloping land beside a body of water", "bank", "a financial institution that accepts deposits "
         "and channels the money into lending activities, with a long tail of words to pad the others"]


def _batch(language):
    encoded = language.tokenizer(TEXTS, padding=True, return_tensors="pt")
    return encoded["input_ids"], encoded["attention_mask"]


@pytest.mark.parametrize("encoder", ["tiny_bert_dir", "tiny_mpnet_dir"])
def test_a_reading_copy_computes_the_model_s_function_and_leaves_it_untouched(encoder, request):
    language = SplitLanguageModel.from_pretrained(request.getfixturevalue(encoder)).eval()
    before = {name: p.detach().clone() for name, p in language.named_parameters()}
    ids, mask = _batch(language)
    assert mask.min() == 0  # padded rows: the mask is exercised
    copy32 = language.reading_copy(torch.float32)
    assert copy32.tokenizer is language.tokenizer and not copy32.training
    assert not any(p.requires_grad for p in copy32.parameters())
    fused = [m for m in copy32.modules() if isinstance(m, ReadingSelfAttention)]
    assert len(fused) == (language.num_layers if encoder == "tiny_mpnet_dir" else 0)
    valid = mask.bool()
    with torch.no_grad():
        expected = language.lm1(ids, mask)
        torch.testing.assert_close(copy32.lm1(ids, mask)[valid], expected[valid], rtol=1e-5, atol=1e-5)
        torch.testing.assert_close(copy32(ids, mask)[valid], language(ids, mask)[valid], rtol=1e-5, atol=1e-5)
        bf16 = language.reading_copy(torch.bfloat16)
        assert {p.dtype for p in bf16.parameters()} == {torch.bfloat16}
        rows = bf16.lm1(ids, mask).float()
    cosine = torch.nn.functional.cosine_similarity(rows[valid], expected[valid], dim=-1)
    assert cosine.min() > 0.99  # bf16's precision
    for name, p in language.named_parameters():
        assert p.dtype == torch.float32 and torch.equal(p.detach(), before[name]), name


def test_a_reading_copy_refuses_to_return_attention_weights(tiny_mpnet_dir):
    language = SplitLanguageModel.from_pretrained(tiny_mpnet_dir).eval()
    attention = next(m for m in language.reading_copy(torch.float32).modules() if isinstance(m, ReadingSelfAttention))
    with pytest.raises(ValueError, match="attention weights"):
        attention(torch.zeros(1, 3, language.hidden_size), output_attentions=True)
