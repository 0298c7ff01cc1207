"""A model folder is checked before its weights are loaded: config.json typed and bounded as the
training config, its fit with the encoder and the tensors' shapes; only safetensors are read."""

import json
import shutil
import typing

import pytest
import torch

from jaket import fields
from jaket.model.jaket import JaketConfig, JaketModel, ModelFolderError
from jaket.model.language import EncoderLoadError


@pytest.fixture(scope="module")
def folder(toy_jaket, tmp_path_factory):
    model, _ = toy_jaket(km_layers=1, fanouts=(3, 3))
    return model.save_pretrained(tmp_path_factory.mktemp("m") / "model")


def _copy(folder, tmp_path, **changes):
    target = tmp_path / "copy"
    shutil.copytree(folder, target)
    config = json.loads((target / "config.json").read_text())
    config.update(changes)
    (target / "config.json").write_text(json.dumps(config))
    return target


def test_the_choices_are_the_model_modules_own():
    from jaket.model import fusion, knowledge, memory

    assert typing.get_args(fields.Composition) == knowledge.COMPOSITIONS
    assert set(typing.get_args(fields.Activation)) == set(knowledge._ACTIVATIONS)
    assert typing.get_args(fields.FusionNormalize) == fusion.NORMALIZE
    assert set(typing.get_args(fields.MemoryDtype)) == set(memory.DTYPES)


def test_a_saved_config_round_trips(folder):
    data = json.loads((folder / "config.json").read_text())
    config = JaketConfig.from_dict(data)
    assert config.to_dict() | {"encoder": "encoder"} == {k: v for k, v in data.items()
                                                          if k not in ("model_type", "jaket_version")}
    assert JaketModel.from_pretrained(folder).config.km_heads == 2


def test_a_config_json_of_the_first_format_still_loads(folder, tmp_path):
    """A config.json as jaket wrote it before ``config_version`` existed (the fields of that
    JaketConfig.to_dict(), no version) loads into the same model; saved again it carries the
    current version. A version from a newer jaket is refused."""
    from jaket.model.config import CONFIG_VERSION

    first_format = {"encoder": "encoder", "lm1_layers": 2, "km_layers": 1, "km_heads": 2, "composition": "add",
                    "km_activation": "elu", "km_dropout": 0.0, "fanouts": [3, 3], "description_max_length": 64,
                    "memory_momentum": 0.8, "memory_dtype": "float32", "fusion_normalize": "all",
                    "num_categories": 4, "num_relations": 5, "use_relation_memory": False,
                    "category_names": [], "relation_names": [], "model_type": "jaket", "jaket_version": "0.1.0"}
    target = tmp_path / "old"
    shutil.copytree(folder, target)
    (target / "config.json").write_text(json.dumps(first_format, indent=2))
    old = JaketModel.from_pretrained(target)
    assert old.config == JaketConfig(encoder=str(target / "encoder"), lm1_layers=2, km_layers=1, km_heads=2,
                                     fanouts=(3, 3), num_categories=4, num_relations=5)
    now = JaketModel.from_pretrained(folder)
    assert all(torch.equal(v, now.state_dict()[k]) for k, v in old.state_dict().items())
    assert JaketConfig.from_dict({**first_format, "encoder": ""}).encoder is None  # "" meant the bundled MiniLM
    resaved = json.loads((old.save_pretrained(tmp_path / "again") / "config.json").read_text())
    assert resaved["config_version"] == CONFIG_VERSION == 2
    future = _copy(folder, tmp_path / "future", config_version=CONFIG_VERSION + 1)
    with pytest.raises(ModelFolderError, match=f"config_version {CONFIG_VERSION + 1} is not one this jaket reads"):
        JaketModel.from_pretrained(future)


@pytest.mark.parametrize("changes, message", [
    ({"km_heads": "two"}, "km_heads: Input should be a valid integer (got 'two')"),
    ({"km_heads": 0}, "km_heads: Input should be greater than or equal to 1 (got 0)"),
    ({"km_layers": True}, "km_layers: Input should be a valid integer (got True)"),
    ({"composition": "concat"}, "composition: Input should be 'add', 'sub', 'mult' or 'mlp'"),
    ({"fanouts": []}, "fanouts: List should have at least 1 item"),
    ({"fanouts": [3, -1]}, "fanouts.1: Input should be greater than or equal to 1 (got -1)"),
    ({"memory_momentum": 1.5}, "memory_momentum: Input should be less than 1 (got 1.5)"),
    ({"lm1_layers": -2}, "lm1_layers: Input should be greater than or equal to 0 (got -2)"),
    ({"km_heads": 3}, "km_heads=3 does not divide the encoder's width 32"),
    ({"lm1_layers": 9}, "lm1_layers=9 exceeds the encoder's 4 layers"),
    ({"num_relations": 7}, "relation_head.out.weight has 5 rows; "),
    ({"km_layers": 2}, "missing ['knowledge.layers.1."),
    ({"nonsense": 1}, "unknown JaketConfig fields: ['nonsense']"),
])
def test_a_bad_config_json_is_named_before_loading(folder, tmp_path, changes, message):
    target = _copy(folder, tmp_path, **changes)
    with pytest.raises(ModelFolderError) as caught:
        JaketModel.from_pretrained(target)
    assert str(target) in str(caught.value) and message in str(caught.value)


def test_truncated_weights_are_named(folder, tmp_path):
    target = _copy(folder, tmp_path)
    weights = target / "jaket.safetensors"
    weights.write_bytes(weights.read_bytes()[:100])
    with pytest.raises(ModelFolderError, match=f"^{weights}: not a readable safetensors file"):
        JaketModel.from_pretrained(target)


def test_a_pickle_weight_file_is_never_opened(folder, tmp_path, monkeypatch):
    """Only safetensors are read: an encoder folder holding a pickle (pytorch_model.bin) instead
    is refused without unpickling it (a pickle can run any code when loaded)."""
    target = _copy(folder, tmp_path)
    (target / "encoder" / "model.safetensors").unlink()
    marker = tmp_path / "pickle-was-run"

    class Payload:
        def __reduce__(self):
            return (open, (str(marker), "w"))

    torch.save({"weights": Payload()}, target / "encoder" / "pytorch_model.bin")
    loads = []
    real_load = torch.load
    monkeypatch.setattr(torch, "load", lambda *a, **k: loads.append(a) or real_load(*a, **k))
    with pytest.raises(EncoderLoadError) as caught:
        JaketModel.from_pretrained(target)
    assert str(target / "encoder") in str(caught.value) and "safetensors" in str(caught.value)
    assert not loads and not marker.exists()


def test_saving_never_replaces_a_file_or_a_folder_of_something_else(folder, tmp_path):
    """``save_pretrained`` replaces its folder as a whole: a folder that is no model (no
    ``jaket.safetensors``) was emptied and a file replaced by a folder, without a word."""
    model = JaketModel.from_pretrained(folder)
    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "a.txt").write_text("mine")
    (tmp_path / "file.txt").write_text("mine")
    refusal = r"notes: is not a jaket model folder \(no jaket.safetensors; it holds a.txt\)"
    with pytest.raises(ValueError, match=refusal):
        model.save_pretrained(tmp_path / "notes")
    with pytest.raises(ValueError, match=r"file.txt: is a file; a jaket model is saved as a folder"):
        model.save_pretrained(tmp_path / "file.txt")
    assert (tmp_path / "notes" / "a.txt").read_text() == (tmp_path / "file.txt").read_text() == "mine"
    # a new folder, an empty one, an earlier model's and the model's own are saved as before
    (tmp_path / "empty").mkdir()
    for target in (tmp_path / "new", tmp_path / "empty", tmp_path / "new"):
        model.save_pretrained(target)
    own = shutil.copytree(folder, tmp_path / "own")
    JaketModel.from_pretrained(own).save_pretrained(own)
    assert JaketModel.from_pretrained(own).config.km_layers == model.config.km_layers
