"""jaket folders among Transformers' tools: the Auto classes, a Hub repo id (read from a local
cache, offline), push_to_hub up to the upload call, and the model card save_pretrained writes."""

import json
import shutil

import pytest
import torch

from jaket.kg.toy import toy_kg
from jaket.model.config import ModelFolderError
from jaket.model.jaket import JaketConfig, JaketModel


@pytest.fixture(scope="module")
def folder(tiny_bert_dir, tmp_path_factory):
    kg, _ = toy_kg()
    torch.manual_seed(0)
    model = JaketModel(JaketConfig(encoder=str(tiny_bert_dir), km_heads=2, km_layers=1, fanouts=(3, 3))
                       .for_kg(kg))
    model.attach_memory(model.memory_for(kg, progress=False), kg)
    return model.save_pretrained(tmp_path_factory.mktemp("m") / "model", card={"Pre-training": {"steps": 7}})


def _same_weights(a, b):
    sa, sb = a.state_dict(), b.state_dict()
    return sa.keys() == sb.keys() and all(torch.equal(sa[k], sb[k]) for k in sa)


def test_auto_classes_load_a_jaket_folder(folder):
    from transformers import AutoConfig, AutoModel

    config = AutoConfig.from_pretrained(folder)
    assert config.model_type == "jaket" and config.km_layers == 1
    model = AutoModel.from_pretrained(folder)
    assert isinstance(model, JaketModel) and not model.training
    assert _same_weights(model, JaketModel.from_pretrained(folder))
    assert model.memory is not None and model.memory.num_entities == 40


def _cache(folder, root, repo="acme/jaket-tiny", revision="0" * 40):
    """``folder`` laid out as huggingface_hub's cache holds a downloaded repo."""
    base = root / f"models--{repo.replace('/', '--')}"
    shutil.copytree(folder, base / "snapshots" / revision)
    (base / "refs").mkdir()
    (base / "refs" / "main").write_text(revision)
    return repo


def test_a_hub_repo_id_is_read_from_the_local_cache_offline(folder, tmp_path, monkeypatch):
    from transformers import AutoModel

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    repo = _cache(folder, tmp_path)
    model = JaketModel.from_pretrained(repo, cache_dir=tmp_path)
    assert _same_weights(model, JaketModel.from_pretrained(folder))
    assert isinstance(AutoModel.from_pretrained(repo, cache_dir=tmp_path), JaketModel)
    with pytest.raises(ModelFolderError, match="acme/missing: no such folder, and the Hub repo is not in the local cache"):
        JaketModel.from_pretrained("acme/missing", cache_dir=tmp_path)
    with pytest.raises(TypeError, match="unexpected keyword arguments \\['revison'\\]"):
        JaketModel.from_pretrained(folder, revison="main")


def test_push_to_hub_uploads_the_saved_folder(folder, monkeypatch):
    from huggingface_hub import HfApi

    calls = {}
    monkeypatch.setattr(HfApi, "create_repo", lambda self, repo_id, **kw: calls.setdefault("create", (repo_id, kw)))

    def upload(self, folder_path, repo_id, commit_message):
        from pathlib import Path

        calls["upload"] = (repo_id, sorted(p.name for p in Path(folder_path).iterdir()), commit_message)
        return "https://huggingface.co/acme/jaket-tiny/commit/1"

    monkeypatch.setattr(HfApi, "upload_folder", upload)
    url = JaketModel.from_pretrained(folder).push_to_hub("acme/jaket-tiny", private=True)
    assert url.endswith("/commit/1")
    assert calls["create"] == ("acme/jaket-tiny", {"private": True, "exist_ok": True})
    assert calls["upload"][1] == ["README.md", "config.json", "encoder", "jaket.safetensors", "memory"]


def test_the_model_card_says_what_the_model_is(folder, tiny_bert_dir):
    card = (folder / "README.md").read_text()
    assert card.startswith("---\nlibrary_name: jaket\n")
    config = json.loads((folder / "config.json").read_text())
    assert str(tiny_bert_dir) in card and f"{config['num_categories']} categories" in card
    assert "memory of 40 entity descriptions" in card and '"steps": 7' in card
    from transformers import AutoModelForMaskedLM  # what the card says about encoder/ holds

    _, info = AutoModelForMaskedLM.from_pretrained(folder / "encoder", output_loading_info=True)
    assert "AutoModelForMaskedLM" in card and not info["missing_keys"] and not info["unexpected_keys"]


@pytest.mark.parametrize("first", ["jaket", "transformers"])
def test_import_jaket_registers_the_auto_classes_without_loading_transformers(folder, first):
    """Issue #40: ``import jaket`` (not only ``import jaket.model.jaket``) makes ``AutoModel`` load a
    jaket folder, whichever is imported first; ``import jaket`` alone loads neither Transformers
    nor torch (it installs a hook: registering at once would cost seconds, jaket.model.auto)."""
    import subprocess
    import sys
    from pathlib import Path

    imports = ("import jaket\nlight = not {'transformers', 'torch'} & set(sys.modules)\n"
               "from transformers import AutoConfig, AutoModel\n")
    if first == "transformers":
        imports = "from transformers import AutoConfig, AutoModel\nimport jaket\nlight = True\n"
    code = ("import sys\n" + imports +
            f"config = AutoConfig.from_pretrained({str(folder)!r})\n"
            f"model = AutoModel.from_pretrained({str(folder)!r})\n"
            "print(light, type(config).__name__, type(model).__module__, type(model).__name__)\n")
    src = Path(__file__).resolve().parents[2] / "src"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env={"PYTHONPATH": str(src), "PATH": "/usr/bin:/bin", "OMP_NUM_THREADS": "1",
                               "HF_HUB_OFFLINE": "1"})
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split() == ["True", "JaketTransformersConfig", "jaket.model.jaket", "JaketModel"]
