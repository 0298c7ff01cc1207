"""Every fine-tuning task on the fake accelerator of tests/conftest.py (a GPU's code path on the CPU).

The backbone each task loads is placed on the fake device (its tensors refuse ``.numpy()`` as CUDA
tensors do), the task then runs with ``device="cpu"`` exactly as it runs with ``--device cpu``:
every ``.to(device)`` a GPU run takes is taken, and each tensor the model computed that is read
back without ``.cpu()`` fails the test."""

import numpy as np
import pytest
import torch


def test_entity_classification_on_the_fake_device(small_kg, tiny_bert_dir, fake_device):
    """Fine-tuning and the zero-shot head on the model's device read predictions back with
    .cpu() (today's code called .numpy() on them)."""
    from jaket.tasks import entity_classification as ec
    from jaket.tasks.variants import full_graph, kg_memory, load_backbone

    config = ec.EntityClassificationConfig(variants=("lm+g+m",), epochs=3, encoder=tiny_bert_dir, km_heads=4)
    backbone = load_backbone(config.variant_config("lm+g+m"), seed=0)
    memory = kg_memory(backbone, small_kg, 0, max_length=16)
    fake_device(backbone.language, backbone.knowledge)
    split = ec.make_split(np.asarray(small_kg.entity_category), 0, config, 1.0)
    run = ec.train_one(backbone, memory, small_kg, split, config, seed=0, edges=full_graph(small_kg))
    assert run["test_predictions"].shape == (len(split.test),)
    backbone.category_head = fake_device(torch.nn.Linear(backbone.hidden_size, 3))
    backbone.category_names = tuple(small_kg.category_names)
    predicted = ec.zero_shot_predictions(backbone, memory, small_kg, full_graph(small_kg))
    assert predicted.shape == (small_kg.num_entities,)


@pytest.fixture
def on_fake_device(monkeypatch, fake_device):
    """``on_fake_device(module)``: the task module's ``load_backbone`` returns backbones whose
    parts sit on the fake device; the list it returns collects them (so a test can check that the
    run really used them)."""
    from jaket.tasks import variants

    loaded = []

    def load(*args, **kwargs):
        backbone = variants.load_backbone(*args, **kwargs)
        fake_device(*[part for part in (backbone.language, backbone.knowledge, backbone.fusion)
                      if part is not None])
        loaded.append(backbone)
        return backbone

    def patch(module):
        monkeypatch.setattr(module, "load_backbone", load)
        return loaded

    return patch


def _on_device(module, fake_device) -> bool:
    return all(isinstance(p, fake_device.Tensor) for p in module.parameters())


@pytest.mark.parametrize("variant,train_encoder", [("lm", False), ("lm+g+m", False), ("lm+g+m", True)],
                         ids=["frozen-lm", "frozen-lm+g+m", "train-encoder"])
def test_link_prediction_on_the_fake_device(variant, train_encoder, small_kg, tiny_bert_dir, tmp_path,
                                            on_fake_device, fake_device):
    """Training (frozen memory and --train-encoder, bf16 autocast on the run's device), the
    filtered ranking and the saved predictor's ranking all run from device tensors."""
    from jaket.tasks import link_prediction as lp
    from jaket.tasks.link_predictor import FinetunedLinkPredictor, Query

    loaded = on_fake_device(lp)
    triples = np.asarray(small_kg.triples, dtype=np.int64)
    config = lp.LinkPredictionConfig(variants=(variant,), scorers=("rotate",), steps=3, batch_size=8, negatives=4,
                                     fanouts=(3, 3), encoder=tiny_bert_dir, km_heads=4, description_max_length=16,
                                     train_encoder=train_encoder, refresh_initial=2, queue_batches=1,
                                     hard_negatives=2, bf16=train_encoder)
    results = lp.run_link_prediction(small_kg, triples[6:], {"valid": triples[:6]}, config,
                                     save_dir=tmp_path / "model", device="cpu")
    assert results["device"] == "cpu" and loaded and _on_device(loaded[0].language, fake_device)
    run = results["runs"][f"{variant}/rotate"][0]
    assert len(run["train_loss"]) == 3 and np.isfinite(run["train_loss"]).all()
    assert 0 < run["valid"]["mrr"] <= 1
    predictor = FinetunedLinkPredictor.from_pretrained(tmp_path / "model")
    fake_device(*[m for m in (predictor.backbone.language, predictor.backbone.knowledge, predictor.scorer)
                  if m is not None])
    rows = predictor.to("cpu").predict(small_kg, [Query(1, 0, 0, None), Query(2, None, 0, 0)], top_k=5,
                                       exclude_known=True)
    assert [len(row["answers"]) for row in rows] == [5, 5]


def test_kgqa_on_the_fake_device(small_kg, tiny_bert_dir, tmp_path, on_fake_device, fake_device):
    """Training on the step's subgraph, model selection and the saved answerer's ranking read the
    candidates' scores back with .cpu() (rank_candidates called .numpy() on them)."""
    from jaket.tasks import kgqa
    from jaket.tasks.kgqa_predict import FinetunedQuestionAnswerer

    loaded = on_fake_device(kgqa)
    questions = kgqa.wordnet_questions(small_kg, seed=0, max_questions=40)
    config = kgqa.KGQAConfig(variants=("lm+g+m",), kg_settings=("full",), seeds=(0,), steps=2, batch_size=4,
                             select_every=1, max_selection=4, encoder=tiny_bert_dir, km_heads=4,
                             description_max_length=16)
    results = kgqa.run_kgqa(small_kg, questions, config, save_dir=tmp_path / "model", device="cpu")
    assert results["device"] == "cpu" and _on_device(loaded[0].knowledge, fake_device)
    run = results["runs"]["lm+g+m"]["full"][0]
    assert len(run["selection_curve"]) == 2 and 0 <= run["test"]["all"] <= 1
    answerer = FinetunedQuestionAnswerer.from_pretrained(tmp_path / "model")
    fake_device(answerer.model)
    rows = answerer.to("cpu").answer(small_kg, questions[:3], hops=2, top_k=3)
    assert len(rows) == 3 and all(len(row["answers"]) <= 3 for row in rows)


def test_relation_classification_on_the_fake_device(fewrel_file, tiny_bert_dir, tmp_path, monkeypatch,
                                                    fake_device):
    """PAIR training under bf16 autocast on the run's device, the episodes and the saved
    classifier run on the device of the encoder."""
    from jaket.tasks import relation_classification as rc
    from jaket.tasks.fewrel import load_fewrel
    from jaket.tasks.relation_classification_predict import FinetunedPairClassifier

    built = []
    encoder_class = rc.PairEncoder

    def on_fake_device(*args, **kwargs):
        built.append(fake_device(encoder_class(*args, **kwargs)))
        return built[-1]

    monkeypatch.setattr(rc, "PairEncoder", on_fake_device)
    data = load_fewrel(fewrel_file)
    config = rc.RelationClassificationConfig(variants=("lm",), settings=((3, 1),), seeds=(0,), train_steps=2,
                                             train_way=2, episodes=4, max_length=32, encoder=tiny_bert_dir,
                                             bf16=True)
    results = rc.run_relation_classification(data, config, save_dir=tmp_path / "model", device="cpu")
    assert results["device"] == "cpu" and _on_device(built[0], fake_device)
    assert 0 <= results["runs"]["lm"][0]["3-1"] <= 1
    classifier = FinetunedPairClassifier.from_pretrained(tmp_path / "model")
    fake_device(classifier.model)
    relation = data.relations[3]
    rows = classifier.to("cpu").classify(data, [(1, data.instances[relation][0])])
    assert rows[0]["relation"] in data.relations and set(rows[0]["scores"]) == set(data.relations)
