"""Property-based tests: random bytes, random JSON and mutated valid files fed to every loader a user
points jaket at (KG folder, corpus, pre-training config, model folder, checkpoint). The only
outcomes allowed are a loaded object or the project's own error type naming the file; any other
exception (KeyError, IndexError, a library's error ...) fails the test. Example counts are bounded
so that `make test` stays fast."""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

pytestmark = pytest.mark.filterwarnings("ignore")
CONFIGS = Path(__file__).resolve().parents[1] / "configs"


def fuzz(examples: int):
    """``examples`` per test (times ``JAKET_FUZZ_SCALE`` for a longer hunt outside `make test`)."""
    scale = int(os.environ.get("JAKET_FUZZ_SCALE", "1"))
    return settings(max_examples=examples * scale, deadline=None, database=None,
                    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow,
                                           HealthCheck.data_too_large])


# ------------------------------------------------------------------------ strategies
json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-10**6, 10**6) | st.floats(allow_nan=True) | st.text(max_size=12),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4),
    max_leaves=12)


@st.composite
def mutated(draw, data: bytes) -> bytes:
    """``data`` with a few random edits: truncation, deletion, insertion, byte flips, a line doubled."""
    for _ in range(draw(st.integers(1, 3))):
        kind = draw(st.sampled_from(["truncate", "delete", "insert", "flip", "line"]))
        at = draw(st.integers(0, max(0, len(data) - 1)))
        if kind == "truncate":
            data = data[:at]
        elif kind == "delete":
            data = data[:at] + data[at + draw(st.integers(1, 40)):]
        elif kind == "insert":
            data = data[:at] + draw(st.binary(min_size=1, max_size=12)) + data[at:]
        elif kind == "flip" and data:
            data = data[:at] + bytes([data[at] ^ (1 << draw(st.integers(0, 7)))]) + data[at + 1:]
        elif kind == "line":
            lines = data.split(b"\n")
            k = draw(st.integers(0, len(lines) - 1))
            data = b"\n".join(lines[:k + 1] + lines[k:])
    return data


def content(valid: bytes, keys: tuple[str, ...] = ()):
    """Random bytes, random JSON lines, JSON objects with the right keys and random values, or the
    valid file mutated."""
    records = st.lists(st.fixed_dictionaries({k: json_values for k in keys}) if keys else json_values,
                       min_size=1, max_size=5)
    return st.one_of(
        st.binary(max_size=200),
        records.map(lambda rows: "".join(json.dumps(r) + "\n" for r in rows).encode()),
        mutated(valid))


@pytest.fixture(scope="module")
def kg_folder(tmp_path_factory):
    from jaket.kg.io import save_kg
    from jaket.kg.toy import toy_kg

    kg, corpus = toy_kg()
    return save_kg(kg, tmp_path_factory.mktemp("fuzz") / "kg", corpus=corpus)


def _scratch(folder: Path) -> tuple[tempfile.TemporaryDirectory, Path]:
    holder = tempfile.TemporaryDirectory(prefix="jaket-fuzz-")
    target = Path(holder.name) / folder.name
    shutil.copytree(folder, target, ignore=shutil.ignore_patterns(".jaket-cache"))
    return holder, target


_KG_FILES = {"entities.jsonl": ("id", "name", "description", "category", "aliases"),
             "relations.jsonl": ("id", "name", "description"), "triples.tsv": (),
             "corpus.jsonl": ("text", "mentions")}


# ------------------------------------------------------------------------ KG folder and corpus
@fuzz(60)
@given(data=st.data(), name=st.sampled_from(sorted(_KG_FILES)))
def test_kg_folder_and_corpus(kg_folder, data, name):
    from jaket.kg.graph import KnowledgeGraph
    from jaket.kg.io import KGFormatError, load_corpus, load_kg, validate_kg_dir

    holder, folder = _scratch(kg_folder)
    with holder:
        path = folder / name
        path.write_bytes(data.draw(content(path.read_bytes(), _KG_FILES[name])))
        validate_kg_dir(folder)  # lists problems, never raises
        try:
            kg = load_kg(folder)
            assert isinstance(kg, KnowledgeGraph)
            corpus = load_corpus(folder, kg)
            assert len(corpus) >= 0
        except KGFormatError as error:
            assert error.problems and all(p.path.startswith(str(folder)) for p in error.problems), error


# ------------------------------------------------------------------------ pre-training config
_CONFIG_KEYS = ("data", "model", "tasks", "optim", "memory", "steps", "seed", "text_batch_size")


@fuzz(60)
@given(data=st.data())
def test_pretraining_config(tmp_path, data):
    import yaml

    from jaket.train.config import ConfigError, PretrainConfig, load_config

    valid = (CONFIGS / "pretrain-tiny.yaml").read_bytes()
    values = st.fixed_dictionaries({}, optional={k: json_values for k in _CONFIG_KEYS})
    raw = data.draw(st.one_of(st.binary(max_size=200), mutated(valid),
                              values.map(lambda v: yaml.safe_dump(v).encode())))
    path = tmp_path / "config.yaml"
    path.write_bytes(raw)
    try:
        assert isinstance(load_config(path), PretrainConfig)
    except ConfigError as error:
        assert error.problems and all(p.startswith(str(path)) for p in error.problems), error.problems


def _damage(data, path: Path) -> bytes:
    """New content for a file of a saved folder: for JSON, also the valid object with one value
    replaced by random JSON; for binary files, random or mutated bytes."""
    valid = path.read_bytes()
    if path.suffix == ".json":
        original = json.loads(valid)
        key = data.draw(st.sampled_from(sorted(original)))
        replaced = json.dumps(original | {key: data.draw(json_values)}).encode()
        return data.draw(st.one_of(content(valid), st.just(replaced)))
    return data.draw(st.one_of(st.binary(max_size=200), mutated(valid)))


# ------------------------------------------------------------------------ model folder
@pytest.fixture(scope="module")
def model_folder(tiny_bert_dir, tmp_path_factory):
    import torch

    from jaket.kg.toy import toy_kg
    from jaket.model.jaket import JaketConfig, JaketModel

    kg, _ = toy_kg()
    torch.manual_seed(0)
    from jaket.model.memory import EntityContextMemory

    model = JaketModel(JaketConfig(encoder=str(tiny_bert_dir), km_heads=2, km_layers=1,
                                   num_categories=kg.num_categories, num_relations=kg.num_relations))
    model.attach_memory(EntityContextMemory(kg.num_entities, kg.num_relations, model.hidden_size))
    return model.save_pretrained(tmp_path_factory.mktemp("fuzz") / "model")


@fuzz(30)
@given(data=st.data(), name=st.sampled_from(["config.json", "jaket.safetensors", "encoder/model.safetensors",
                                              "memory/memory.json", "memory/memory.safetensors"]))
def test_model_folder(model_folder, data, name):
    """(The encoder's config.json is Transformers' to check: a mutated digit can ask for a model
    of a million layers, which would be built before any weight is read.)"""
    from jaket.model.jaket import JaketModel, ModelFolderError
    from jaket.model.language import EncoderLoadError

    holder, folder = _scratch(model_folder)
    with holder:
        path = folder / name
        path.write_bytes(_damage(data, path))
        try:
            assert isinstance(JaketModel.from_pretrained(folder), JaketModel)
        except (ModelFolderError, EncoderLoadError) as error:
            assert str(folder) in str(error), error


# ------------------------------------------------------------------------ checkpoint
@pytest.fixture(scope="module")
def checkpoint_run(tiny_bert_dir, tmp_path_factory):
    from jaket.cli import main

    out = tmp_path_factory.mktemp("fuzz") / "run"
    assert main(["pretrain", "--config", str(CONFIGS / "pretrain-tiny.yaml"), "--encoder", str(tiny_bert_dir),
                 "--out", str(out), "--no-progress", "--steps", "1", "--set", "eval_texts=0"]) == 0
    return out


@pytest.fixture(scope="module")
def fresh_trainer(tiny_bert_dir, checkpoint_run):
    from jaket.train.config import load_config
    from jaket.train.build import build_model, load_kg_and_corpus, prepare_data
    from jaket.train.pretrain import Pretrainer

    config = load_config(CONFIGS / "pretrain-tiny.yaml", ["steps=1", "eval_texts=0"],
                         {"model.encoder": str(tiny_bert_dir)})
    kg, corpus, report = load_kg_and_corpus(config)
    model = build_model(config, kg)
    data = prepare_data(kg, corpus, model.language.tokenizer, config, report)
    return lambda out: Pretrainer(config, model, data, out)


@fuzz(30)
@given(data=st.data(), name=st.sampled_from(["manifest.json", "state.json", "model.safetensors",
                                              "optimizer.safetensors", "memory.safetensors",
                                              "rng.safetensors"]),
       rehash=st.booleans())
def test_checkpoint(checkpoint_run, fresh_trainer, data, name, rehash):
    """A damaged file is caught by the manifest; with the manifest rewritten to match (``rehash``:
    damage the hash cannot see), reading and checking the content must still name the file."""
    import hashlib

    from jaket.train import checkpoint as ckpt

    holder, out = _scratch(checkpoint_run)
    with holder:
        folder = out / "checkpoints" / "step-0000001"
        path = folder / name
        raw = _damage(data, path)
        path.write_bytes(raw)
        if rehash and name != "manifest.json":
            manifest = json.loads((folder / "manifest.json").read_text())
            manifest["files"][name] = {"size": len(raw), "sha256": hashlib.sha256(raw).hexdigest()}
            (folder / "manifest.json").write_text(json.dumps(manifest))
        trainer = fresh_trainer(out)
        try:
            assert trainer.resume() and trainer.step == 1
        except ckpt.CheckpointError as error:
            assert str(out) in str(error), error
