"""Entity classification on the fake accelerator of tests/conftest.py (a GPU's code path on the CPU)."""

import numpy as np
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
