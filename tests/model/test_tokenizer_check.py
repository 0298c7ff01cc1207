"""A folder whose tokenizer lost its vocabulary is refused when loaded: Transformers still builds a
tokenizer of the special tokens alone from ``tokenizer_config.json``, which reads every word as
[UNK]."""

import shutil

import pytest

from jaket.cli import main
from jaket.model.language import EncoderLoadError, SplitLanguageModel


def _without_vocabulary(folder):
    for name in ("tokenizer.json", "vocab.txt"):
        (folder / name).unlink(missing_ok=True)


def test_an_encoder_without_its_vocabulary_is_refused(tiny_bert_dir, tmp_path):
    folder = tmp_path / "encoder"
    shutil.copytree(tiny_bert_dir, folder)
    assert SplitLanguageModel.from_pretrained(folder).tokenizer("the dog")["input_ids"][1] != 100  # not [UNK]
    _without_vocabulary(folder)
    assert (folder / "tokenizer_config.json").is_file()  # what the 5-token tokenizer is built from
    with pytest.raises(EncoderLoadError) as caught:
        SplitLanguageModel.from_pretrained(folder)
    assert str(caught.value) == (f"{folder}: the tokenizer has 5 tokens but the encoder's vocabulary has 30522 "
                                 f"(is tokenizer.json / vocab.txt missing?)")


def test_a_model_folder_without_the_vocabulary_is_one_line_from_the_cli(toy_jaket, tmp_path, capsys):
    from jaket.kg.io import save_kg
    from jaket.kg.toy import toy_kg

    model, _ = toy_jaket()
    model.save_pretrained(tmp_path / "model", save_memory=False)
    _without_vocabulary(tmp_path / "model" / "encoder")
    kg, corpus = toy_kg()
    save_kg(kg, tmp_path / "kg", corpus=corpus)
    status = main(["embed", "--model", str(tmp_path / "model"), "--kg", str(tmp_path / "kg"),
                   "--out", str(tmp_path / "e.npy")])
    err = [line for line in capsys.readouterr().err.splitlines() if not line.startswith(("INFO", "WARNING"))]
    assert status == 1 and err == [f"error: {tmp_path / 'model' / 'encoder'}: the tokenizer has 5 tokens "
                                   f"but the encoder's vocabulary has 30522 (is tokenizer.json / vocab.txt "
                                   f"missing?)"]
    assert not (tmp_path / "e.npy").exists()
