"""Sense linking: linked WordNet examples become sense examples (the gold among the candidates of
the word as written), and every scorer runs; the first-sense figure is recounted by hand."""

from __future__ import annotations

import numpy as np
import pytest


@pytest.fixture(scope="module")
def wordnet_subset():
    from jaket.kg.sources.registry import build_source

    bundle = build_source("wordnet", max_entities=400, seed=0)
    return bundle.kg, bundle.corpus


def test_examples_hold_their_gold_sense_and_scorers_run(wordnet_subset, tiny_bert_dir, tiny_jaket_dir):
    from jaket.tasks.word_sense.run import evaluate_sense_linking, sense_examples
    from jaket.senses.inventory import SenseInventory

    kg, corpus = wordnet_subset
    inventory = SenseInventory.for_wordnet(kg)
    examples, info = sense_examples(corpus, kg, kg, inventory)
    assert info["examples"] == len(examples) > 50
    for e in examples:
        (gold,) = e.gold
        assert gold in e.candidates
        assert kg.entity_ids[gold].split(".")[1] in {kg.entity_ids[c].split(".")[1] for c in e.candidates}
    examples = examples[:40]
    results = evaluate_sense_linking(examples, kg, pretrained=tiny_jaket_dir, encoder=tiny_bert_dir,
                                     seeds=(0,), description_max_length=16)
    first = np.mean([e.candidates[0] in e.gold for e in examples])
    assert results["scorers"]["first sense"]["accuracy"] == pytest.approx(first)
    assert results["scorers"]["random"]["accuracy"] == pytest.approx(np.mean([1 / len(e.candidates) for e in examples]))
    for name in ("lesk", "lm", "lm+g+m", "jaket", "jaket (cosine)", "lm (text)", "lm (text + kg)", "jaket (text)",
                 "jaket (text + kg)"):
        assert 0.0 <= results["scorers"][name]["accuracy"] <= 1.0


def test_unseen_examples_are_the_texts_of_the_unseen_kg(tmp_path):
    """The texts of an unseen KG' (as ``jaket prepare wordnet-reference`` writes it): each example's
    gold is a KG' synset, every text mentioning one is used, and the KG'-only option keeps just
    KG' candidates (the gold among them)."""
    from jaket.kg.io import save_kg
    from jaket.kg.sources.registry import build_source
    from jaket.tasks.word_sense.run import unseen_examples
    from jaket.senses.inventory import SenseInventory

    bundle = build_source("wordnet", max_entities=None, seed=0)
    kg, corpus = bundle.kg, bundle.corpus
    inventory = SenseInventory.for_wordnet(kg)
    mentioned = sorted({m.entity for mentions in corpus.mentions[:2000] for m in mentions})
    rng = np.random.default_rng(0)
    chosen = np.sort(rng.choice(mentioned, size=40, replace=False))
    # the unseen KG' with the chosen synsets and their same-lemma siblings, so some stay ambiguous
    siblings = {c for e in chosen for c in inventory.candidates(kg.entity_names[e], None)}
    prime, _ = kg.induced_subgraph(np.asarray(sorted(set(chosen.tolist()) | siblings), dtype=np.int64))
    save_kg(prime, tmp_path / "kg-unseen")
    unseen = set(prime.entity_ids)
    examples, info = unseen_examples(tmp_path, kg, inventory)
    expected = sum(any(kg.entity_ids[m.entity] in unseen for m in mentions) for mentions in corpus.mentions)
    assert info["texts_mentioning_unseen"] == expected > 0
    assert len(examples) == info["examples"] > 0
    assert all(kg.entity_ids[next(iter(e.gold))] in unseen for e in examples)
    assert any(kg.entity_ids[c] not in unseen for e in examples for c in e.candidates)  # seen senses compete
    only, _ = unseen_examples(tmp_path, kg, inventory, unseen_candidates_only=True)
    assert [e.gold for e in only] == [e.gold for e in examples]
    for e in only:
        assert e.gold <= set(e.candidates) and all(kg.entity_ids[c] in unseen for c in e.candidates)


def test_the_job_names_a_missing_or_double_source(capsys):
    """The examples come from exactly one source; a job without one, or with both (a config file can
    give both, the flags cannot), is one line naming the key."""
    from jaket.cli import main

    assert main(["evaluate", "sense-linking", "--print-config"]) == 2
    assert "data.heldout_of: give the examples: --heldout-of RUN" in capsys.readouterr().err
    assert main(["evaluate", "sense-linking", "--unseen-of", "D", "--set", "data.heldout_of=R", "--print-config"]) == 2
    assert "data.unseen_of: give the examples once" in capsys.readouterr().err
    assert main(["evaluate", "sense-linking", "--unseen-of", "D", "--max-examples", "0", "--print-config"]) == 2
    assert "--max-examples 0: data.max_examples: must be at least 1" in capsys.readouterr().err
    # a negative seed is named once (the job's own check and every job's used to say it twice)
    assert main(["evaluate", "sense-linking", "--unseen-of", "D", "--set", "seeds=[-1]", "--print-config"]) == 2
    assert [line for line in capsys.readouterr().err.splitlines() if "seeds" in line] == [
        "error: --set seeds=[-1]: seeds: seed -1 is negative (seeds are 0 or more)"]


@pytest.mark.slow
def test_the_pipeline_runs_the_commands_runner_with_its_scores(tmp_path, capsys):
    """``pipeline("sense-linking")`` calls the command's runner: the same scores as ``--json``, one
    row per scorer, nothing written without ``out`` (the rule scorers only: no encoder is read)."""
    import json

    from jaket.cli import main
    from jaket.kg.io import save_kg
    from jaket.kg.sources.wordnet import full_wordnet_kg
    from jaket.pipelines import pipeline

    kg = full_wordnet_kg()
    prime, _ = kg.induced_subgraph(np.arange(0, kg.num_entities, 50, dtype=np.int64))
    save_kg(prime, tmp_path / "data" / "kg-unseen")
    save_kg(prime, tmp_path / "senses")  # the sense KG: KG' itself (not all of WordNet, read again)
    assert main(["evaluate", "sense-linking", "--unseen-of", str(tmp_path / "data"), "--no-baselines",
                 "--kg", str(tmp_path / "senses"), "--max-examples", "30", "--seeds", "1",
                 "--out", str(tmp_path / "cli"), "--json"]) == 0
    command = json.loads(capsys.readouterr().out)
    result = pipeline("sense-linking", seeds=1, baselines=False, data__unseen_of=tmp_path / "data",
                      data__kg=tmp_path / "senses", data__max_examples=30)
    assert result.task == "sense-linking" and result.finetuned is None and result.summary == command
    assert set(command) == {"first sense", "random"} and result["data"]["examples_used"] == 30
    frame = result.to_dataframe()
    assert list(frame["variant"]) == ["first sense", "random"]
    assert list(frame["accuracy"]) == [command[name]["accuracy"] for name in frame["variant"]]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["cli", "data", "senses"]


def test_the_shipped_config_lists_every_key_with_its_default():
    import dataclasses as dc
    from pathlib import Path

    from jaket.tasks.config import load_task_config, read_yaml_mapping
    from jaket.tasks.word_sense.job import SenseLinkingJob

    path = Path(__file__).resolve().parents[2] / "configs" / "evaluate-sense-linking.yaml"
    assert load_task_config(SenseLinkingJob, path, ["data.heldout_of=RUN"]) == SenseLinkingJob(
        data=dc.replace(SenseLinkingJob().data, heldout_of=Path("RUN")))
    assert set(read_yaml_mapping(path)) == {f.name for f in dc.fields(SenseLinkingJob)}
    assert set(read_yaml_mapping(path)["data"]) == {f.name for f in dc.fields(SenseLinkingJob().data)}
