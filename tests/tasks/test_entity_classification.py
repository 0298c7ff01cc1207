import json

import numpy as np
import pytest
import torch

from jaket.tasks.entity_classification import run as ec


def test_split_is_disjoint_and_sized():
    labels = np.array([0, 1, -1] * 40)  # 80 labelled
    split = ec.split_entities(labels, seed=3)
    parts = [set(split.train), set(split.dev), set(split.test)]
    assert len(split.train) == 16 and len(split.dev) == 16 and len(split.test) == 48
    assert not (parts[0] & parts[1] or parts[0] & parts[2] or parts[1] & parts[2])
    assert all(labels[i] >= 0 for p in parts for i in p)
    small = ec.split_entities(labels, seed=3, train_fraction=0.05)
    assert len(small.train) == 1 and set(small.train) <= parts[0]
    assert np.array_equal(small.test, split.test)
    assert not np.array_equal(ec.split_entities(labels, seed=4).train, split.train)


def test_label_leakage_detects_spelled_category(small_kg):
    clean = ec.label_leakage(small_kg)
    assert clean["descriptions_with_full_category_name"] == 0
    leaky = small_kg.drop_triples(np.zeros(small_kg.num_triples, dtype=bool))
    leaky.entity_descriptions = list(leaky.entity_descriptions)
    leaky.entity_descriptions[0] = "dog: noun.animal"
    report = ec.label_leakage(leaky)
    assert report["descriptions_with_full_category_name"] == 1
    assert report["categories_spelled"] == ["noun.animal"]


def test_label_leakage_matches_whole_words_of_entity_descriptions_only():
    """A category spelled inside another word ("art" in "artifact", "language" in "languages") is
    not a leak, and relation descriptions are not read; a whole-word category name is."""
    from jaket.kg.graph import KnowledgeGraph

    def kg(descriptions, relation_description="links two things"):
        return KnowledgeGraph(
            entity_ids=["a", "b", "c"], entity_names=["a", "b", "c"], entity_descriptions=descriptions,
            entity_aliases=[[], [], []], entity_category=np.array([0, 1, -1]), category_names=["art", "language"],
            relation_ids=["r"], relation_names=["r"], relation_descriptions=[relation_description],
            triples=np.array([[0, 0, 1]]))

    clean = ec.label_leakage(kg(["a tool or artifact", "one of many languages", "part of a set"],
                                relation_description="the art of a language"))
    assert clean["descriptions_with_full_category_name"] == 0 and clean["categories_spelled"] == []
    assert clean["descriptions_checked"] == 3  # the entities only
    assert clean["labelled_descriptions_containing_own_category_word"] == 0
    leaky = ec.label_leakage(kg(["a work of art.", "a programming language", "Art, Language"]))
    assert leaky["descriptions_with_full_category_name"] == 4
    assert leaky["categories_spelled"] == ["art", "language"]
    assert leaky["labelled_descriptions_containing_own_category_word"] == 2


def test_heldout_regions_and_pretraining_split(small_kg):
    from jaket.kg.corpus import Mention, MentionCorpus

    heldout = ec.choose_heldout(small_kg, 0.3, seed=0, regions=2)
    assert abs(len(heldout) - round(0.3 * small_kg.num_entities)) <= 1
    corpus = MentionCorpus(["the dog and the oak", "a hammer"],
                           [[Mention(4, 7, 0), Mention(16, 19, 24)], [Mention(2, 8, 12)]])
    kg_pre, corpus_pre, kg_prime, info = ec.split_pretraining(small_kg, corpus, heldout)
    assert kg_prime.num_entities == len(heldout)
    assert set(kg_pre.entity_ids).isdisjoint(kg_prime.entity_ids)
    assert kg_prime.num_triples > 0  # regions keep structure
    assert info["texts_kept"] + info["texts_dropped_mentioning_heldout"] == 2
    for text, ms in zip(corpus_pre.texts, corpus_pre.mentions):
        for m in ms:  # re-indexed mentions still point at the right name
            assert text[m.start:m.end] == kg_pre.entity_names[m.entity]


def test_heldout_counts_are_checked(small_kg, tmp_path, capsys):
    """No held-out entity, more than the KG has, or no region: one line, not a silent 1 or n."""
    from jaket.cli import main
    from jaket.tasks.reference import wordnet_reference

    n = small_kg.num_entities
    assert len(ec.choose_heldout(small_kg, 1.0, seed=0, regions=3)) == n
    for fraction in (0.0, -0.1, 1.5):
        with pytest.raises(ValueError, match=f"^the held-out fraction must be in \\(0, 1\\] \\(a share of the "
                                             f"KG's {n} entities\\), got {fraction}$"):
            ec.choose_heldout(small_kg, fraction, seed=0)
    for regions in (0, -2):
        with pytest.raises(ValueError, match=f"^the held-out entities need at least 1 region, got {regions}$"):
            ec.choose_heldout(small_kg, 0.3, seed=0, regions=regions)
    with pytest.raises(ValueError, match="^heldout_entities and regions must be at least 1, got 10 and 0$"):
        wordnet_reference(tmp_path / "never", heldout_entities=10, regions=0)  # before WordNet is read
    for flag in ("--regions", "--heldout-entities"):
        with pytest.raises(SystemExit) as caught:
            main(["prepare", "wordnet-reference", "--out", str(tmp_path / "never"), flag, "0"])
        assert caught.value.code == 2
        assert f"argument {flag}: must be a positive integer, got 0" in capsys.readouterr().err
    assert not (tmp_path / "never").exists()


@pytest.mark.parametrize("variant", ["lm", "gnn", "lm+g+m"])
def test_runs_each_variant_and_writes_report(small_kg, tiny_bert_dir, tmp_path, variant):
    config = ec.EntityClassificationConfig(variants=(variant,), train_fractions=(1.0, 0.2), seeds=(0, 1),
                                           epochs=20, encoder=tiny_bert_dir, km_heads=4)
    results = ec.run_entity_classification(small_kg, config, tmp_path)
    runs = results["runs"][variant]["1.0"]
    assert [r["seed"] for r in runs] == [0, 1]
    for r in runs:
        assert 0.0 <= r["test_accuracy"] <= 1.0 and len(r["history"]["train_loss"]) == 20
    # full-batch training on the labelled part lowers the training loss
    losses = runs[0]["history"]["train_loss"]
    assert min(losses[10:]) < losses[0]
    metrics = json.loads((tmp_path / "metrics.json").read_text())
    assert {"capability", "model", "avx512_bf16", "amx"} <= set(metrics["machine"]["cpu"])  # issue #31
    assert metrics["summary"][variant]["0.2"]["test_accuracy"]["values"] == [
        r["test_accuracy"] for r in results["runs"][variant]["0.2"]]
    assert "| Model | 100% | 20% |" in (tmp_path / "report.md").read_text()
    for name in ("accuracy.png", "learning_curves.png", "confusion.png"):
        assert (tmp_path / name).exists()


def test_jaket_needs_a_model(small_kg):
    from jaket.tasks.variants import VariantError

    with pytest.raises(VariantError, match="pre-trained model"):
        ec.EntityClassificationConfig(variants=("jaket",)).variant_config("jaket")


def test_label_space_is_the_categories_in_use(small_kg, tiny_bert_dir):
    """A KG' built in memory keeps every category name of its source; saved and loaded it keeps
    those in use. Both must give the same classes and the same results."""
    import dataclasses

    names = sorted(small_kg.category_names + ["adj.all", "verb.weather"])  # two unused categories
    remap = np.array([names.index(c) for c in small_kg.category_names])
    wide = dataclasses.replace(small_kg, category_names=names,
                               entity_category=remap[np.asarray(small_kg.entity_category)])
    compact, dropped = ec.present_categories(wide)
    assert dropped == ["adj.all", "verb.weather"] and compact.category_names == small_kg.category_names
    assert np.array_equal(compact.entity_category, small_kg.entity_category)
    config = ec.EntityClassificationConfig(variants=("gnn",), train_fractions=(1.0,), seeds=(0,), epochs=4,
                                           encoder=tiny_bert_dir, km_heads=4)
    a, b = ec.run_entity_classification(wide, config), ec.run_entity_classification(small_kg, config)
    assert a["kg"]["categories"] == 3 and a["kg"]["unused_categories_dropped"] == ["adj.all", "verb.weather"]
    assert a["runs"]["gnn"]["1.0"][0]["history"] == b["runs"]["gnn"]["1.0"][0]["history"]


class _PassThrough(torch.nn.Module):
    def forward(self, x, edge_index, edge_type, relations):
        return x


class _Oracle(torch.nn.Module):
    """A 'pre-trained category head' over its own list of names: logit 1 at ``answer[i]``."""

    def __init__(self, answer: np.ndarray, width: int):
        super().__init__()
        self.answer, self.width = torch.as_tensor(answer), width

    def forward(self, x):
        return torch.nn.functional.one_hot(self.answer, self.width).float()


def test_zero_shot_matches_categories_by_name(small_kg):
    """The pre-trained head's category i is KG' category ``names[i]``, whatever the order; a name
    KG' lacks is never right; no shared name means no zero-shot figure at all."""
    from jaket.tasks.variants import Backbone, full_graph
    from jaket.model.memory import FrozenMemory

    n, gold = small_kg.num_entities, np.asarray(small_kg.entity_category)
    names = list(small_kg.category_names)
    head_names = ["noun.unknown"] + names[::-1]  # another order, plus a category KG' lacks
    as_head_index = np.array([head_names.index(names[c]) for c in gold])
    memory = FrozenMemory(torch.zeros(n, 4), torch.zeros(small_kg.num_relations, 4))
    edges, everyone = full_graph(small_kg), np.arange(n)

    def accuracy(answer, category_names):
        backbone = Backbone("jaket", 4, None, _PassThrough(), category_head=_Oracle(answer, len(head_names)),
                            category_names=tuple(category_names))
        return ec.zero_shot_accuracy(backbone, memory, small_kg, everyone, edges)

    assert accuracy(as_head_index, head_names) == 1.0
    wrong_on_half = np.where(everyone % 2 == 0, as_head_index, 0)  # 0 = the unknown name
    assert accuracy(wrong_on_half, head_names) == pytest.approx(0.5, abs=0.02)
    assert accuracy(as_head_index, ["x.a", "x.b", "x.c", "x.d"]) is None
    runs = [{"seed": s, "test_accuracy": 0.5, "dev_accuracy": 0.5} for s in (0, 1)]
    table = ec.results_table({"config": {"train_fractions": [1.0]}, "runs": {"jaket": {"1.0": runs}},
                              "zero_shot": {"jaket": [{"test_accuracy": 0.25}, {"test_accuracy": 0.35}]}})
    assert "| JAKET, zero-shot (pre-trained category head, no label) | 30.0 ± 7.1 |" in table  # ddof 1


def test_category_head_init_starts_at_the_zero_shot_predictions(small_kg):
    """``head_init="category"``: before any step the classifier predicts what the pre-trained
    category head predicts (rows matched by name, whatever their order); the prior survives a
    save/load of the head; without a shared name there is no prior."""
    from jaket.model.heads import CategoryHead
    from jaket.model.knowledge import KnowledgeModule
    from jaket.tasks.variants import Backbone, full_graph
    from jaket.model.memory import FrozenMemory

    torch.manual_seed(0)
    names = list(small_kg.category_names)
    head_names = names[::-1]
    width = 8
    knowledge = KnowledgeModule(width, num_layers=1, heads=2).eval()
    category_head = CategoryHead(width, len(head_names))
    backbone = Backbone("jaket", width, None, knowledge, category_head=category_head,
                        category_names=tuple(head_names))
    memory = FrozenMemory(torch.randn(small_kg.num_entities, width), torch.randn(small_kg.num_relations, width))
    edges = full_graph(small_kg)
    prior = ec.category_prior(backbone, names)
    classifier = ec.EntityClassifier(knowledge, width, len(names), 0.0, prior).eval()
    torch.nn.init.zeros_(classifier.head[-1].weight)
    torch.nn.init.zeros_(classifier.head[-1].bias)
    with torch.no_grad():
        predicted = classifier(memory, *edges).argmax(-1).numpy()
    expected = ec.zero_shot_predictions(backbone, memory, small_kg, edges)
    assert len(set(expected.tolist())) > 1 and (predicted == expected).all()

    torch.nn.init.normal_(classifier.head[-1].weight)
    again = ec.EntityClassifier(knowledge, width, len(names), 0.0).eval()
    again.load_head_state(classifier.head_state())
    with torch.no_grad():
        assert torch.allclose(again(memory, *edges), classifier(memory, *edges))
    other = Backbone("jaket", width, None, knowledge, category_head=category_head,
                     category_names=tuple(f"x.{i}" for i in range(len(head_names))))
    assert ec.category_prior(other, names) is None


def test_km_lr_zero_is_a_linear_probe_of_the_frozen_km(small_kg):
    """``km_lr=0`` trains the head only: the fine-tuned KM equals the one it started from, while
    a positive ``km_lr`` moves it; a negative one is refused by name."""
    from jaket.model.knowledge import KnowledgeModule
    from jaket.tasks.variants import Backbone, full_graph
    from jaket.model.memory import FrozenMemory

    torch.manual_seed(0)
    width = 8
    knowledge = KnowledgeModule(width, num_layers=1, heads=2)
    backbone = Backbone("lm+g+m", width, None, knowledge)
    memory = FrozenMemory(torch.randn(small_kg.num_entities, width), torch.randn(small_kg.num_relations, width))
    labels = np.asarray(small_kg.entity_category)
    split = ec.split_entities(labels, seed=0)

    def trained_km(km_lr):
        config = ec.EntityClassificationConfig(epochs=3, km_lr=km_lr)
        run = ec.train_one(backbone, memory, small_kg, split, config, 0, full_graph(small_kg), keep_model=True)
        return run["model"].knowledge.state_dict()

    start = knowledge.state_dict()
    assert all(torch.equal(v, start[k]) for k, v in trained_km(0.0).items())
    assert not all(torch.equal(v, start[k]) for k, v in trained_km(1e-2).items())
    assert ("km_lr", "must be positive, or 0 to freeze the KM (a linear probe), got -1.0") in \
        ec.EntityClassificationConfig(km_lr=-1.0).check()


def test_trains_under_bf16(small_kg, tiny_bert_dir, tmp_path):
    """``bf16`` (``--precision bf16``): the KM and head under bf16 autocast, the loss in fp32."""
    config = ec.EntityClassificationConfig(variants=("lm+g+m",), train_fractions=(1.0,), seeds=(0,), epochs=3,
                                           encoder=tiny_bert_dir, km_heads=4, bf16=True)
    run = ec.run_entity_classification(small_kg, config, tmp_path)["runs"]["lm+g+m"]["1.0"][0]
    assert np.isfinite(run["history"]["train_loss"]).all() and 0.0 <= run["test_accuracy"] <= 1.0


def test_a_report_on_the_pretraining_kg_says_so_and_not_unseen(small_kg, tiny_bert_dir, tiny_jaket_dir, tmp_path):
    """Issue 65, item 4: fine-tuning on the very KG the model was pre-trained on was titled "on an
    unseen KG" / "KG': ..."; the model's entity memory names its KG, and the report follows it."""
    import shutil

    model = tmp_path / "model"
    shutil.copytree(tiny_jaket_dir, model)
    (model / "memory").mkdir(exist_ok=True)
    config = ec.EntityClassificationConfig(variants=("lm",), train_fractions=(1.0,), seeds=(0,), epochs=2,
                                           encoder=tiny_bert_dir, km_heads=4, pretrained=model)
    for fingerprint, title, intro in ((small_kg.fingerprint(), "# Entity classification on the pre-training KG",
                                       "KG (the one the model was pre-trained on"),
                                      ("another:kg:1", "# Entity classification on an unseen KG",
                                       "KG' (unseen in pre-training)")):
        (model / "memory" / "memory.json").write_text(json.dumps({"kg_fingerprint": fingerprint}))
        out = tmp_path / fingerprint.replace(":", "_")
        results = ec.run_entity_classification(small_kg, config, out)
        report = (out / "report.md").read_text()
        assert report.startswith(title + "\n") and intro in report
        assert results["kg"]["in_pretraining"] is (fingerprint == small_kg.fingerprint())
        assert ("unseen KG" in report) is (fingerprint != small_kg.fingerprint())


def test_a_zero_shot_row_reaching_the_fine_tuned_one_is_explained():
    from jaket.tasks.entity_classification.run import zero_shot_explained

    results = {"zero_shot": {"jaket": [{"test_accuracy": 1.0}]},
               "summary": {"jaket": {"1.0": {"test_accuracy": {"mean": 71.4}}}},
               "kg": {"in_pretraining": True},
               "leakage": {"descriptions_with_full_category_name": 31, "categories_spelled": ["noun.animal"],
                           "entities_spelling_a_category": ["dog.n.01"]}}
    [note, _] = zero_shot_explained(results)
    assert "the one the model was pre-trained on" in note and "label leakage: 31" in note and "dog.n.01" in note
    assert "What to do" in note
    results["zero_shot"]["jaket"] = [{"test_accuracy": 0.3}]
    assert zero_shot_explained(results) == []
