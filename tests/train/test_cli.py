from pathlib import Path

import yaml

from jaket.cli import main
from jaket.train.config import PretrainConfig, load_config

CONFIGS = Path(__file__).resolve().parents[2] / "configs"


def test_default_yaml_is_the_embedded_default():
    assert load_config(CONFIGS / "pretrain-default.yaml") == PretrainConfig()
    assert load_config(CONFIGS / "pretrain-tiny.yaml").data.source == "toy"


def test_print_config_applies_overrides(capsys):
    assert main(["pretrain", "--print-config", "--steps", "5", "--set", "optim.km_lr=0.5",
                 "--relation-memory"]) == 0
    printed = yaml.safe_load(capsys.readouterr().out)
    assert printed["steps"] == 5 and printed["optim"]["km_lr"] == 0.5
    assert printed["model"]["use_relation_memory"] is True


def test_init_continues_from_a_jaket_folder_and_model_names_it(tiny_bert_dir, tmp_path, capsys):
    """``--init DIR`` builds the model from a jaket folder (its encoder, KM, fusion, heads);
    ``--model DIR`` with a jaket folder says to use ``--init``; ``--encoder`` and ``--init`` together
    are refused."""
    import torch

    from jaket.model.jaket import JaketModel
    from jaket.train.build import build_model, load_kg_and_corpus

    first = tmp_path / "first"
    assert main(["pretrain", "--config", str(CONFIGS / "pretrain-tiny.yaml"), "--encoder", str(tiny_bert_dir),
                 "--out", str(first), "--no-progress", "--steps", "3", "--set", "eval_texts=0"]) == 0
    config = load_config(CONFIGS / "pretrain-tiny.yaml", [f"init={first / 'model'}", "model.km_heads=1"])
    kg, _, _ = load_kg_and_corpus(config)
    continued = build_model(config, kg).state_dict()
    saved = JaketModel.from_pretrained(first / "model", load_memory=False).state_dict()
    assert continued.keys() == saved.keys()
    assert all(torch.equal(continued[k], saved[k]) for k in saved)  # the folder's heads (2) win over km_heads=1
    fresh = load_config(CONFIGS / "pretrain-tiny.yaml", [f"model.encoder={tiny_bert_dir}"])
    km = "knowledge.layers.0.lin.weight"
    assert not torch.equal(build_model(fresh, kg).state_dict()[km], saved[km])

    capsys.readouterr()
    assert main(["pretrain", "--model", str(first / "model"), "--print-config"]) == 2
    err = capsys.readouterr().err
    assert f"(--init {first / 'model'})" in err and "warning: --model is deprecated; use --encoder" in err
    assert main(["pretrain", "--encoder", str(first / "model"), "--print-config"]) == 2  # the new name: the same check
    assert f"encoder {first / 'model'}: a jaket model folder; to continue pre-training from it give it as init" \
        in capsys.readouterr().err
    assert main(["pretrain", "--encoder", str(tiny_bert_dir), "--init", str(first / "model"), "--print-config"]) == 2
    assert "model.encoder (a base encoder) or init (a jaket folder: --init), not both" in capsys.readouterr().err
