"""LM1 / LM2 split of a Transformers masked LM (Eq. 6, 10)."""

import pytest
import torch
from transformers import AutoModel

from jaket.model.language import SplitLanguageModel, UnsupportedArchitectureError


def _batch(tokenizer):
    return tokenizer(["the dog barked at the cat", "Paris is the capital of France ."],
                     padding=True, return_tensors="pt")


@pytest.mark.parametrize("fixture", ["tiny_bert_dir", "tiny_roberta_dir", "tiny_mpnet_dir"])
def test_lm2_of_lm1_equals_the_unsplit_encoder(fixture, request):
    path = request.getfixturevalue(fixture)
    reference = AutoModel.from_pretrained(path).eval()
    for k in (0, 1, 2, 4):
        lm = SplitLanguageModel.from_pretrained(path, lm1_layers=k).eval()
        batch = _batch(lm.tokenizer)
        assert batch["attention_mask"].min() == 0  # padding is exercised
        with torch.no_grad():
            expected = reference(**batch).last_hidden_state
            z = lm.lm1(batch["input_ids"], batch["attention_mask"])
            got = lm.lm2(z, batch["attention_mask"])
        valid = batch["attention_mask"].bool()
        assert torch.allclose(got[valid], expected[valid], atol=1e-5), (fixture, k)


def test_default_split_is_half_and_bounds_are_checked(tiny_bert_dir):
    lm = SplitLanguageModel.from_pretrained(tiny_bert_dir)
    assert (lm.lm1_layers, lm.num_layers) == (2, 4)
    with pytest.raises(ValueError, match="lm1_layers"):
        SplitLanguageModel.from_pretrained(tiny_bert_dir, lm1_layers=5)


def test_mlm_head_gives_vocabulary_logits(tiny_bert_dir):
    lm = SplitLanguageModel.from_pretrained(tiny_bert_dir)
    hidden = torch.randn(3, lm.hidden_size)
    assert lm.mlm_logits(hidden).shape == (3, lm.config.vocab_size)


def test_a_checkpoint_without_head_gets_a_tied_head(tmp_path, tiny_bert_dir, caplog):
    """A plain BertModel folder (like the bundled MiniLM) loads with a fresh head tied to the
    word embeddings, and says so."""
    from transformers import AutoTokenizer

    AutoModel.from_pretrained(tiny_bert_dir).save_pretrained(tmp_path)
    AutoTokenizer.from_pretrained(tiny_bert_dir).save_pretrained(tmp_path)
    with caplog.at_level("INFO", logger="jaket.model.language"):
        lm = SplitLanguageModel.from_pretrained(tmp_path)
    assert "no MLM head" in caplog.text and "tied" in caplog.text
    encoder = lm.encoder
    assert encoder.get_output_embeddings().weight.data_ptr() == encoder.get_input_embeddings().weight.data_ptr()


def test_an_architecture_that_cannot_be_split_is_named(tmp_path):
    from transformers import GPT2Config, GPT2LMHeadModel

    with pytest.raises(UnsupportedArchitectureError, match="gpt2"):
        SplitLanguageModel(GPT2LMHeadModel(GPT2Config(n_layer=2, n_embd=32, n_head=2)), tokenizer=None)


def test_mpnet_layers_get_the_relative_position_bias(tiny_mpnet_dir):
    """MPNet's layers each add the encoder's relative position bias to their attention scores: run
    without it (as every other family runs) the split is wrong, so it is passed, and LM1 reports
    the bias among the parameters a memory refresh depends on."""
    lm = SplitLanguageModel.from_pretrained(tiny_mpnet_dir).eval()
    batch = _batch(lm.tokenizer)
    hidden = lm._embeddings[0](input_ids=batch["input_ids"])
    assert set(lm._layer_inputs(hidden)) == {"position_bias"}
    layer = lm._layers[0][0]
    with torch.no_grad():
        mask = lm._mask(hidden, batch["attention_mask"])
        assert not torch.allclose(layer(hidden, mask, **lm._layer_inputs(hidden))[0], layer(hidden, mask)[0])
        states = lm.hidden_states(batch["input_ids"], batch["attention_mask"])
        assert len(states) == lm.num_layers
        assert torch.equal(states[-1], lm(batch["input_ids"], batch["attention_mask"]))
    bias = lm._base[0].encoder.relative_attention_bias.weight
    assert any(p is bias for p in lm.lm1_parameters())


def test_an_encoder_whose_layers_need_more_inputs_is_refused(tmp_path, tiny_bert_dir):
    """DeBERTa-v2 has ``embeddings`` and ``encoder.layer`` like BERT, but its layers read relative
    embeddings the split does not pass: the probe at construction refuses it by name instead of
    running it wrongly."""
    from transformers import DebertaV2Config, DebertaV2ForMaskedLM

    torch.manual_seed(0)
    config = DebertaV2Config(vocab_size=120, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                             intermediate_size=64, max_position_embeddings=64, relative_attention=True,
                             position_biased_input=False, pos_att_type=["p2c", "c2p"])
    with pytest.raises(UnsupportedArchitectureError, match="deberta-v2.*layers need inputs"):
        SplitLanguageModel(DebertaV2ForMaskedLM(config), tokenizer=None)


def test_a_split_that_runs_but_differs_is_refused(tiny_mpnet_dir, monkeypatch):
    """Without its position bias MPNet's layers still run, to the wrong states (as every jaket
    before this check ran it, silently): the probe measures the difference and refuses."""
    from transformers import AutoModelForMaskedLM

    encoder = AutoModelForMaskedLM.from_pretrained(tiny_mpnet_dir)
    with torch.no_grad():  # a trained model's bias is of this size (random init: 0.02)
        encoder.base_model.encoder.relative_attention_bias.weight.normal_(0.0, 1.0)
    assert SplitLanguageModel(encoder, tokenizer=None) is not None
    monkeypatch.setattr(SplitLanguageModel, "_layer_inputs", lambda self, hidden: {})
    with pytest.raises(UnsupportedArchitectureError, match="'mpnet'.*own output"):
        SplitLanguageModel(encoder, tokenizer=None)


def test_the_probe_leaves_the_training_mode_as_it_was(tiny_bert_dir):
    from transformers import AutoModelForMaskedLM

    encoder = AutoModelForMaskedLM.from_pretrained(tiny_bert_dir).train()
    assert SplitLanguageModel(encoder, tokenizer=None).encoder.training
    assert not SplitLanguageModel(encoder.eval(), tokenizer=None).encoder.training


def test_missing_folder_is_a_clear_error(tmp_path):
    with pytest.raises(FileNotFoundError, match="config.json"):
        SplitLanguageModel.from_pretrained(tmp_path / "nowhere")


@pytest.mark.slow
def test_bundled_minilm_splits_exactly():
    from jaket.paths import default_model_path

    path = default_model_path()
    reference = AutoModel.from_pretrained(path).eval()
    lm = SplitLanguageModel.from_pretrained(path).eval()
    assert (lm.lm1_layers, lm.num_layers, lm.hidden_size) == (3, 6, 384)
    batch = _batch(lm.tokenizer)
    with torch.no_grad():
        expected = reference(**batch).last_hidden_state
        got = lm(batch["input_ids"], batch["attention_mask"])
    valid = batch["attention_mask"].bool()
    assert torch.allclose(got[valid], expected[valid], atol=1e-5)
