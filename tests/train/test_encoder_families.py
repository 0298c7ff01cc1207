"""Pre-training with an encoder of another family than the bundled BERT: MPNet (the family of
all-mpnet-base-v2), whose layers each take the encoder's relative position bias."""

import torch

from tests.train.conftest import CONFIGS


def test_an_mpnet_encoder_pretrains_saves_and_reloads(tiny_mpnet_dir, tmp_path):
    from transformers import AutoModel

    from jaket.cli import main
    from jaket.model.jaket import JaketModel

    out = tmp_path / "run"
    assert main(["pretrain", "--config", str(CONFIGS / "pretrain-tiny.yaml"), "--encoder", str(tiny_mpnet_dir),
                 "--out", str(out), "--no-progress", "--steps", "2"]) == 0
    model = JaketModel.from_pretrained(out / "model")
    language = model.language.eval()
    assert language.config.model_type == "mpnet"
    start = AutoModel.from_pretrained(tiny_mpnet_dir)
    name = "encoder.layer.0.attention.attn.q.weight"
    assert not torch.equal(language.encoder.base_model.state_dict()[name], start.state_dict()[name])  # it trained
    batch = language.tokenizer(["the dog barked at the cat", "a cat"], padding=True, return_tensors="pt")
    with torch.no_grad():  # the reloaded split is still the saved encoder, bias included
        expected = language.encoder.base_model(**batch).last_hidden_state
        got = language(batch["input_ids"], batch["attention_mask"])
    valid = batch["attention_mask"].bool()
    assert torch.allclose(got[valid], expected[valid], atol=1e-5)


def test_an_encoder_the_split_cannot_run_is_one_line_from_the_cli(tmp_path, capsys):
    """DeBERTa-v2 loads as a masked LM with ``embeddings`` and ``encoder.layer``, but its layers need
    relative embeddings: `jaket pretrain --encoder` stops before training with one line naming it."""
    from transformers import AutoTokenizer, DebertaV2Config, DebertaV2ForMaskedLM

    from jaket.cli import main
    from jaket.paths import default_model_path

    folder = tmp_path / "deberta"
    tokenizer = AutoTokenizer.from_pretrained(default_model_path())
    torch.manual_seed(0)
    DebertaV2ForMaskedLM(DebertaV2Config(
        vocab_size=tokenizer.vocab_size, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
        intermediate_size=64, max_position_embeddings=64, relative_attention=True, position_biased_input=False,
        pos_att_type=["p2c", "c2p"])).save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    code = main(["pretrain", "--config", str(CONFIGS / "pretrain-tiny.yaml"), "--encoder", str(folder),
                 "--out", str(tmp_path / "run"), "--no-progress", "--steps", "1"])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 1 and len(err) == 1, err
    assert "cannot split a 'deberta-v2' encoder" in err[0] and "MPNet" in err[0]
    assert not (tmp_path / "run" / "model").exists()
