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
    assert printed["tasks"]["use_relation_memory"] is True
