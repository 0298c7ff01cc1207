"""Every fine-tuning task on the fake accelerator of tests/conftest.py (a GPU's code path on the CPU).

In its strict form (``strict_fake_device``) a task runs with ``device="cpu"`` exactly as
``--device cpu`` runs it, and whatever the code places on the run's device (``module.to(device)``,
``tensor.to(device)``, ``torch.arange(..., device=)``) lands on the fake device: a tensor the code
forgot to move meets a device tensor and fails as on a GPU ("Expected all tensors to be on the
same device"), and a device tensor read with ``.numpy()`` without ``.cpu()`` fails as well."""

import numpy as np
import pytest
import torch


def test_entity_classification_on_the_fake_device(small_kg, tiny_bert_dir, fake_device):
    """Fine-tuning and the zero-shot head on the model's device read predictions back with
    .cpu() (today's code called .numpy() on them)."""
    from jaket.tasks.entity_classification import run as ec
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


@pytest.mark.parametrize("variant", ["lm", "lm+g+m"])
@pytest.mark.gpu
def test_entity_classification_run_and_predict_on_the_strict_fake_device(variant, small_kg, tiny_bert_dir, tmp_path,
                                                                        strict_fake_device, run_device):
    """The whole run as ``--device`` runs it (backbone, memory, classifier and every tensor
    placed through the same calls as on a GPU), then the saved classifier moved with .to(device)."""
    from jaket.tasks.entity_classification import run as ec
    from jaket.tasks.entity_classification.finetuned import FinetunedEntityClassifier

    config = ec.EntityClassificationConfig(variants=(variant,), train_fractions=(1.0,), seeds=(0,), epochs=2,
                                           encoder=tiny_bert_dir, km_heads=4, description_max_length=16)
    results = ec.run_entity_classification(small_kg, config, save_dir=tmp_path / "model", device=run_device)
    assert torch.device(results["device"]).type == torch.device(run_device).type and 0 <= results["runs"][variant]["1.0"][0]["test_accuracy"] <= 1
    classifier = FinetunedEntityClassifier.from_pretrained(tmp_path / "model").to(run_device)
    rows = classifier.predict(small_kg, np.arange(4), top_k=2)
    assert len(rows) == 4 and all(len(row["top"]) == 2 for row in rows)


def test_the_strict_fake_device_refuses_what_a_gpu_refuses(strict_fake_device):
    """The checker itself: an unmoved input fails, a moved one runs, CPU indices into a device
    tensor and 0-dim CPU tensors are allowed, a CPU tensor indexed by device indices is not, and
    a tensor placed with device= goes with either side (here it cannot tell the run's device
    from the CPU)."""
    layer = torch.nn.Linear(3, 2).to("cpu")
    assert isinstance(layer.weight, strict_fake_device.Tensor)
    with pytest.raises(RuntimeError, match="same device"):
        layer(torch.ones(4, 3))
    out = layer(torch.ones(4, 3).to("cpu"))
    assert isinstance(out, strict_fake_device.Tensor)
    assert out[torch.tensor([0, 2])].shape == (2, 2) and (out * torch.tensor(2.0)).shape == (4, 2)
    with pytest.raises(RuntimeError, match="same device"):
        torch.zeros(4)[out.argmax(1)]
    assert torch.zeros(4)[torch.arange(2, device="cpu")].shape == (2,)
    with pytest.raises(TypeError, match="call .cpu"):
        out.argmax(1).numpy()
    assert out.argmax(1).cpu().numpy().shape == (4,)
    loss = layer(torch.ones(4, 3, device="cpu")).sum()
    loss.backward()
    assert isinstance(layer.weight.grad, strict_fake_device.Tensor)  # an optimizer step stays on the device


@pytest.mark.parametrize("variant,train_encoder", [("lm", False), ("lm+g+m", False), ("lm+g+m", True)],
                         ids=["frozen-lm", "frozen-lm+g+m", "train-encoder"])
@pytest.mark.gpu
def test_link_prediction_on_the_fake_device(variant, train_encoder, small_kg, tiny_bert_dir, tmp_path,
                                            strict_fake_device, run_device):
    """Training (frozen memory, and --train-encoder with its memory refresh, queue, hard negatives
    and bf16 autocast on the run's device), the filtered ranking, and the saved predictor moved
    with .to(device) and ranking queries."""
    from jaket.tasks.link_prediction import run as lp
    from jaket.tasks.link_prediction.finetuned import FinetunedLinkPredictor, Query

    triples = np.asarray(small_kg.triples, dtype=np.int64)
    config = lp.LinkPredictionConfig(variants=(variant,), scorers=("rotate",), steps=3, batch_size=8, negatives=4,
                                     fanouts=(3, 3), encoder=tiny_bert_dir, km_heads=4, description_max_length=16,
                                     train_encoder=train_encoder, refresh_initial=2, queue_batches=1,
                                     hard_negatives=2, bf16=train_encoder)
    results = lp.run_link_prediction(small_kg, triples[6:], {"valid": triples[:6]}, config,
                                     save_dir=tmp_path / "model", device=run_device)
    assert torch.device(results["device"]).type == torch.device(run_device).type
    run = results["runs"][variant]["rotate"][0]
    assert len(run["train_loss"]) == 3 and np.isfinite(run["train_loss"]).all()
    assert 0 < run["valid"]["mrr"] <= 1
    predictor = FinetunedLinkPredictor.from_pretrained(tmp_path / "model").to(run_device)
    assert isinstance(predictor.scorer.relation_projection.weight, strict_fake_device.Tensor)
    rows = predictor.predict(small_kg, [Query(1, 0, 0, None), Query(2, None, 0, 0)], top_k=5, exclude_known=True)
    assert [len(row["answers"]) for row in rows] == [5, 5]


@pytest.mark.parametrize("variant,subgraph", [("lm", True), ("lm+g+m", True), ("lm+g+m", False)],
                         ids=["lm", "lm+g+m", "lm+g+m-whole-graph"])
@pytest.mark.gpu
def test_kgqa_on_the_fake_device(variant, subgraph, small_kg, tiny_bert_dir, tmp_path, strict_fake_device, run_device):
    """Training on the step's subgraph (or the whole graph), model selection, and the saved
    answerer moved with .to(device) rank candidates on the device and read the scores back with
    .cpu() (rank_candidates called .numpy() on them)."""
    from jaket.tasks.kgqa import run as kgqa
    from jaket.tasks.kgqa.finetuned import FinetunedQuestionAnswerer

    questions = kgqa.wordnet_questions(small_kg, seed=0, max_questions=40)
    config = kgqa.KGQAConfig(variants=(variant,), kg_settings=("full",), seeds=(0,), steps=2, batch_size=4,
                             select_every=1, max_selection=4, encoder=tiny_bert_dir, km_heads=4,
                             description_max_length=16, subgraph=subgraph, km_fanout=2 if subgraph else 0)
    results = kgqa.run_kgqa(small_kg, questions, config, save_dir=tmp_path / "model", device=run_device)
    assert torch.device(results["device"]).type == torch.device(run_device).type
    run = results["runs"][variant]["full"][0]
    assert len(run["selection_curve"]) == 2 and 0 <= run["test"]["all"] <= 1
    answerer = FinetunedQuestionAnswerer.from_pretrained(tmp_path / "model").to(run_device)
    assert isinstance(answerer.model.question_projection.weight, strict_fake_device.Tensor)
    rows = answerer.predict(small_kg, questions[:3], hops=2, top_k=3)
    assert len(rows) == 3 and all(len(row["answers"]) <= 3 for row in rows)


@pytest.mark.gpu
def test_relation_classification_on_the_fake_device(fewrel_file, tiny_bert_dir, tmp_path, strict_fake_device,
                                                    run_device):
    """PAIR training under bf16 autocast on the run's device, the episodes, and the saved
    classifier moved with .to(device)."""
    from jaket.tasks.relation_classification import run as rc
    from jaket.tasks.relation_classification.data import load_fewrel
    from jaket.tasks.relation_classification.finetuned import FinetunedPairClassifier

    data = load_fewrel(fewrel_file)
    config = rc.RelationClassificationConfig(variants=("lm",), settings=((3, 1),), seeds=(0,), train_steps=2,
                                             train_way=2, episodes=4, max_length=32, encoder=tiny_bert_dir,
                                             bf16=True)
    results = rc.run_relation_classification(data, config, save_dir=tmp_path / "model", device=run_device)
    assert torch.device(results["device"]).type == torch.device(run_device).type and 0 <= results["runs"]["lm"][0]["3-1"] <= 1
    classifier = FinetunedPairClassifier.from_pretrained(tmp_path / "model").to(run_device)
    assert isinstance(classifier.model.score.weight, strict_fake_device.Tensor)
    rows = classifier.predict(data, [(1, data.instances[data.relations[3]][0])])
    assert rows[0]["relation"] in data.relations and set(rows[0]["scores"]) == set(data.relations)
