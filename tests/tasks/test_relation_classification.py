import dataclasses as dc
import json
from pathlib import Path

import numpy as np
import pytest
import yaml

from jaket.cli import main
from jaket.pipelines import pipeline
from jaket.tasks.config import load_task_config, read_yaml_mapping
from jaket.tasks.registry import load_finetuned
from jaket.tasks.relation_classification.data import load_fewrel
from jaket.tasks.relation_classification import run as rc
from jaket.tasks.relation_classification.job import RelationClassificationJob
from jaket.tasks.variants import VariantError


def test_pair_episodes_and_report(fewrel_file, tiny_bert_dir, tmp_path):
    data = load_fewrel(fewrel_file)
    config = rc.RelationClassificationConfig(variants=("lm",), settings=((3, 1), (3, 2)), seeds=(0, 1),
                                             num_train_relations=3, train_steps=3, train_way=2,
                                             episodes=12, max_length=32, encoder=tiny_bert_dir)
    results = rc.run_relation_classification(data, config, tmp_path)
    assert list(results["train_relations"]) == ["P0", "P1", "P2"]
    assert set(results["eval_relations"]) == {"P3", "P4", "P5"}
    for run in results["runs"]["lm"]:
        for key in ("3-1", "3-2"):
            assert 0.0 <= run[key] <= 1.0
            # accuracy over 12 episodes is a multiple of 1/12
            assert abs(run[key] * 12 - round(run[key] * 12)) < 1e-9
        assert len(run["train_loss"]) == 3
    metrics = json.loads((tmp_path / "metrics.json").read_text())
    assert metrics["summary"]["lm"]["3-1"]["values"] == [r["3-1"] for r in results["runs"]["lm"]]
    assert "3-way 1-shot" in (tmp_path / "report.md").read_text()
    assert (tmp_path / "learning_curves.png").exists()


def test_too_many_ways_is_refused(fewrel_file, tiny_bert_dir):
    data = load_fewrel(fewrel_file)
    config = rc.RelationClassificationConfig(variants=("lm",), settings=((10, 1),), encoder=tiny_bert_dir)
    with pytest.raises(ValueError, match="10-way 1-shot cannot run"):
        rc.run_relation_classification(data, config)


def test_variants_without_entity_links_are_rejected(tiny_bert_dir):
    with pytest.raises(VariantError):
        rc.PairEncoder("lm+g+m", tiny_bert_dir, None)


def test_kg_relation_instances(small_kg):
    data = rc.kg_relation_instances(small_kg, per_relation=10, min_per_relation=5)
    assert data.relations == ["hypernym", "member_meronym", "part_holonym"]
    inst = data.instances["hypernym"][0]
    assert inst.tokens[inst.head[0]] == inst.head_name
    assert inst.tokens[inst.tail[0]] == inst.tail_name
    assert not any("hypernym" in t for t in inst.tokens)


def test_lm_and_jaket_read_pairs_through_the_same_path(fewrel_file, tiny_bert_dir, tiny_jaket_dir):
    """A `jaket` folder whose encoder is the base encoder scores every pair exactly as `lm` does:
    the two rows of Table 1 differ by their weights only (no segment embeddings on one side)."""
    import torch

    data = load_fewrel(fewrel_file)
    lm = rc.PairEncoder("lm", tiny_bert_dir, None)
    jaket = rc.PairEncoder("jaket", None, tiny_jaket_dir)
    jaket.score.load_state_dict(lm.score.state_dict())
    lm.eval(), jaket.eval()
    a, b = data.instances["P0"][0].marked_text(), data.instances["P3"][1].marked_text()
    with torch.no_grad():
        assert torch.allclose(lm([a, b], [b, a], 64), jaket([a, b], [b, a], 64), atol=1e-6)


def test_jaket_variant_runs(fewrel_file, tiny_jaket_dir, tmp_path):
    data = load_fewrel(fewrel_file)
    config = rc.RelationClassificationConfig(variants=("jaket",), settings=((3, 1),), seeds=(0,),
                                             train_steps=2, train_way=2, episodes=6, max_length=32,
                                             pretrained=tiny_jaket_dir)
    results = rc.run_relation_classification(data, config, tmp_path)
    assert len(results["runs"]["jaket"][0]["train_loss"]) == 2
    assert 0.0 <= results["summary"]["jaket"]["3-1"]["mean"] <= 1.0


def test_bf16_runs_the_encoder_in_bf16_and_scores_in_fp32(fewrel_file, tiny_bert_dir, monkeypatch):
    import torch

    data = load_fewrel(fewrel_file)
    seen = []
    forward = rc.PairEncoder.forward

    def recording(self, queries, supports, max_length):
        handles = [m.register_forward_hook(lambda _m, _i, out: seen.append(out.dtype))
                   for m in self.language.modules() if isinstance(m, torch.nn.Linear)][:1]
        try:
            logits = forward(self, queries, supports, max_length)
        finally:
            for h in handles:
                h.remove()
        seen.append(("logits", logits.dtype))
        return logits

    monkeypatch.setattr(rc.PairEncoder, "forward", recording)
    results = {}
    for bf16 in (False, True):
        seen.clear()
        config = rc.RelationClassificationConfig(variants=("lm",), settings=((3, 1),), seeds=(0,),
                                                 num_train_relations=3, train_steps=2, train_way=2,
                                                 episodes=6, max_length=32, encoder=tiny_bert_dir, bf16=bf16)
        results[bf16] = rc.run_relation_classification(data, config)
        products = {d for d in seen if not isinstance(d, tuple)}
        assert products == ({torch.bfloat16} if bf16 else {torch.float32})
        assert {d for d in seen if isinstance(d, tuple)} == {("logits", torch.float32)}
    run = results[True]["runs"]["lm"][0]
    assert all(np.isfinite(run["train_loss"])) and 0.0 <= run["3-1"] <= 1.0
    assert results[True]["config"]["bf16"] is True


def test_pipeline_is_the_command(fewrel_file, tiny_bert_dir, tmp_path, capsys):
    """``pipeline("relation-classification", ...)`` runs the command's runner (no argv): the scores of
    ``jaket finetune relation-classification`` with the same settings, and the first run's model in
    memory, which predicts what the saved one does; a bad setting is a ValueError naming its key."""
    assert main(["finetune", "relation-classification", "--data", str(fewrel_file), "--encoder", str(tiny_bert_dir),
                 "--steps", "2", "--train-way", "2", "--episodes", "4", "--settings", "3-1,2-2",
                 "--out", str(tmp_path / "cli")]) == 0
    result = pipeline("relation-classification", evaluate=False, out=tmp_path / "lib", encoder=tiny_bert_dir,
                      train_steps=2, train_way=2, episodes=4, settings="3-1,2-2", data__data=fewrel_file)
    written = json.loads((tmp_path / "cli" / "metrics.json").read_text())

    def measured(runs):
        return {v: [{k: x for k, x in run.items() if k != "seconds"} for run in by] for v, by in runs.items()}

    assert measured(result["runs"]) == measured(written["runs"]) and list(result["runs"]) == ["lm"]
    assert (tmp_path / "lib" / "model").is_dir()
    data = load_fewrel(fewrel_file)
    supports = data.without(["P0", "P1", "P2"])  # the evaluation relations
    queries = [(1, data.instances["P4"][5]), (2, data.instances["P5"][6])]
    saved = load_finetuned(tmp_path / "cli" / "model")
    assert result.finetuned.predict(supports, queries) == saved.predict(supports, queries)
    with pytest.raises(ValueError, match="settings: '5-x' is not N-K"):
        pipeline("relation-classification", encoder=tiny_bert_dir, settings="5-1,5-x", data__data=fewrel_file)
    with pytest.raises(ValueError, match="data.train_data: --train needs --data"):
        pipeline("relation-classification", encoder=tiny_bert_dir, data__train_data=[fewrel_file])


def test_the_job_reads_the_settings_as_the_flag_spells_them(tmp_path, capsys):
    """``--settings 5-1,5-5``, ``--set settings=[5-1, 10-1]`` and a config's ``[[5, 1]]`` are the same
    (way, shot) pairs; ``--print-config`` writes them as the flag does; a bad item is one line
    naming the key, and so are the data flags used without the one they need."""
    def shown(*flags):
        assert main(["evaluate", "relation-classification", *flags, "--print-config"]) == 0
        return yaml.safe_load(capsys.readouterr().out)

    assert shown()["settings"] == ["5-1", "5-5"]
    assert shown("--settings", "5-1, 10-1,")["settings"] == ["5-1", "10-1"]
    assert shown("--set", "settings=[5-1, 10-1]")["settings"] == ["5-1", "10-1"]
    config = tmp_path / "rc.yaml"
    config.write_text("settings: [[3, 2]]\ndata:\n  max_entities: 500\n")
    job = shown("--config", str(config))
    assert job["settings"] == ["3-2"] and job["data"]["max_entities"] == 500
    for flags, line in [(["--settings", "5-1,5-x"], "--settings 5-1,5-x: settings: '5-x' is not N-K"),
                        (["--settings", "1-1"], "--settings 1-1: settings: 1-1 is not N-K with N >= 2 ways"),
                        (["--drop-overlap"], "--drop-overlap True: data.drop_overlap: --drop-overlap needs"),
                        (["--km-heads", "4"], "--km-heads 4: km_heads: relation classification has no KM")]:
        assert main(["evaluate", "relation-classification", *flags, "--print-config"]) == 2
        assert any(x.startswith(f"error: {line}") for x in capsys.readouterr().err.splitlines()), flags


def test_the_shipped_config_lists_every_key_with_its_default():
    path = Path(__file__).resolve().parents[2] / "configs" / "finetune-relation-classification.yaml"
    assert load_task_config(RelationClassificationJob, path) == RelationClassificationJob()
    assert set(read_yaml_mapping(path)) == {f.name for f in dc.fields(RelationClassificationJob)}
    assert set(read_yaml_mapping(path)["data"]) == {f.name for f in dc.fields(RelationClassificationJob().data)}
