"""The ``model:`` section of the pre-training config is the model's JaketConfig: every field is
settable from YAML and ``--set``, the KG fills its own fields, pre-training's defaults stay, and
the keys of the earlier layout are still read."""

from types import SimpleNamespace

import pytest

from jaket.kg.toy import toy_kg
from jaket.model.jaket import JaketConfig, JaketModel
from jaket.train.build import build_model
from jaket.train.config import ConfigError, PretrainConfig, dump_config, load_config
from jaket.train.pretrain import Pretrainer

from .conftest import CONFIGS


def test_the_default_model_section_is_the_one_pretraining_always_had():
    """The defaults of the former ``ModelSection`` (km_heads 4, fanouts [5, 5], descriptions of
    16 tokens; the relation memory off as ``tasks.use_relation_memory`` was), as a JaketConfig;
    a section that sets one field keeps the others."""
    before = JaketConfig(encoder=None, lm1_layers=None, km_layers=2, km_heads=4, composition="add",
                         fanouts=(5, 5), description_max_length=16, memory_momentum=0.8,
                         memory_dtype="float32", use_relation_memory=False)
    assert PretrainConfig().model == before
    assert PretrainConfig().init is None and PretrainConfig().memory.path is None
    assert load_config(None, ["model.km_layers=1"]).model == JaketConfig(**{**vars(before), "km_layers": 1})


def test_every_model_field_reaches_the_model(tmp_path, tiny_bert_dir):
    """``km_activation``, ``km_dropout`` and ``fusion_normalize`` (from a YAML file and from
    ``--set``) build a model that uses them, and its saved config.json keeps them."""
    kg, _ = toy_kg()
    path = tmp_path / "config.yaml"
    path.write_text(f"model:\n  encoder: {tiny_bert_dir}\n  km_heads: 2\n  km_activation: gelu\n"
                    f"  fusion_normalize: mentions\n  use_relation_memory: true\n", encoding="utf-8")
    config = load_config(path, ["model.km_activation=relu", "model.km_dropout=0.25"])
    model = build_model(config, kg)
    assert [layer.activation for layer in model.knowledge.layers] == ["relu"] * 2
    assert [layer.dropout for layer in model.knowledge.layers] == [0.25] * 2
    assert model.fusion.normalize == "mentions" and model.use_relation_memory
    assert (model.config.num_categories, model.config.relation_names) == (kg.num_categories, kg.relation_names)
    loaded = JaketModel.from_pretrained(model.save_pretrained(tmp_path / "model"), load_memory=False)
    assert loaded.knowledge.layers[0].activation == "relu" and loaded.fusion.normalize == "mentions"


@pytest.mark.parametrize("key, value", [("num_categories", "3"), ("relation_names", "[a, b]")])
def test_the_fields_the_kg_fills_are_refused(tmp_path, key, value):
    with pytest.raises(ConfigError) as caught:
        load_config(None, [f"model.{key}={value}"])
    assert caught.value.problems == [f"--set model.{key}={value}: model.{key}: filled from the KG when the "
                                     f"model is built (num_categories, num_relations, category_names, "
                                     f"relation_names); remove it"]
    path = tmp_path / "config.yaml"
    path.write_text(f"steps: 3\nmodel:\n  km_layers: 1\n  {key}: {value}\n", encoding="utf-8")
    with pytest.raises(ConfigError) as caught:
        load_config(path)
    assert caught.value.problems[0].startswith(f"{path}:4: model.{key}: filled from the KG")


def test_the_printed_config_loads_again(tmp_path):
    """``--print-config`` leaves the KG's fields out, so its output is a valid config file."""
    config = load_config(None, ["model.km_activation=gelu", "memory.path=m.npy", "init=runs/a/model"])
    printed = tmp_path / "printed.yaml"
    printed.write_text(dump_config(config), encoding="utf-8")
    assert "num_categories" not in printed.read_text() and load_config(printed) == config


def test_an_unknown_model_key_lists_the_keys():
    with pytest.raises(ConfigError) as caught:
        load_config(None, ["model.km_activations=relu"])
    assert caught.value.problems[0].startswith("--set model.km_activations=relu: model.km_activations: "
                                               "unknown key; the model keys are: encoder, lm1_layers,")
    assert "num_categories" not in caught.value.problems[0]


def test_the_keys_of_the_earlier_layout_are_read(tmp_path):
    """``model.init``, ``model.memory_path`` and ``tasks.use_relation_memory`` (a YAML file or
    ``--set``) land at ``init``, ``memory.path``, ``model.use_relation_memory``; both names at once
    are refused, naming the file."""
    old = tmp_path / "old.yaml"
    old.write_text("model:\n  init: runs/a/model\n  memory_path: m.npy\n  km_heads: 2\n"
                   "tasks:\n  use_relation_memory: true\n", encoding="utf-8")
    new = tmp_path / "new.yaml"
    new.write_text("init: runs/a/model\nmodel:\n  km_heads: 2\n  use_relation_memory: true\n"
                   "memory:\n  path: m.npy\n", encoding="utf-8")
    assert load_config(old) == load_config(new)
    assert load_config(new).init == "runs/a/model" and load_config(new).memory.path == "m.npy"
    flags = load_config(None, ["model.init=runs/a/model", "model.memory_path=m.npy",
                               "tasks.use_relation_memory=true", "model.km_heads=2"])
    assert flags == load_config(new)
    assert load_config(old, ["model.init=runs/b"]).init == "runs/b"  # a flag still overrides the file
    both = tmp_path / "both.yaml"
    both.write_text("init: x\nmodel:\n  init: y\n", encoding="utf-8")
    with pytest.raises(ConfigError, match=f"^{both}: model.init \\(the old name of init\\) and init are both given"):
        load_config(both)


def test_a_checkpoint_of_the_earlier_layout_resumes_without_config_changes():
    """Resuming compares the saved config with the run's: one saved before the move (old keys, no
    km_activation etc.) differs in nothing."""
    config = load_config(None, ["memory.path=m.npy", "model.use_relation_memory=true"])
    saved = config.model_dump(mode="json")
    saved["model"] = {k: v for k, v in saved["model"].items()
                      if k not in ("km_activation", "km_dropout", "fusion_normalize", "use_relation_memory")}
    saved["model"]["memory_path"] = saved["memory"].pop("path")
    saved["model"]["init"] = saved.pop("init")
    saved["tasks"]["use_relation_memory"] = True
    trainer = SimpleNamespace(config=config)
    assert Pretrainer._config_changes(trainer, {"config": saved}) == []
    saved["model"]["km_heads"] = 2
    assert Pretrainer._config_changes(trainer, {"config": saved}) == ["model.km_heads (2 -> 4)"]


def test_the_tiny_config_builds_what_it_says(tiny_bert_dir):
    config = load_config(CONFIGS / "pretrain-tiny.yaml", [], {"model.encoder": str(tiny_bert_dir)})
    model = build_model(config, toy_kg()[0])
    assert (model.config.km_layers, model.config.km_heads, model.config.fanouts,
            model.config.description_max_length) == (1, 2, (3, 3), 24)
    assert model.memory.momentum == 0.8 and model.config.encoder == str(tiny_bert_dir)
