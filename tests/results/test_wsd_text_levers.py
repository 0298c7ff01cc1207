import numpy as np
import pytest
import torch
import torch.nn.functional as F

from jaket.tasks.word_sense.data import WsdInstance
from jaket.senses.scorers import SenseExample
from results.wsd_text_levers import category_centroids, document_context, second_look


def _example(candidates):
    return SenseExample("a text", 0, 1, frozenset({candidates[0]}), tuple(candidates))


def test_centroids_are_the_unit_mean_of_each_categorys_vectors():
    known = {0: torch.tensor([1.0, 0.0]), 1: torch.tensor([0.0, 1.0]), 2: torch.tensor([0.0, 3.0])}
    centroids = category_centroids(known, ["verb.motion", "verb.motion", None])
    assert set(centroids) == {"verb.motion"}
    assert torch.allclose(centroids["verb.motion"], F.normalize(torch.tensor([0.5, 0.5]), dim=0))


def test_second_look_adds_the_category_cosine_to_the_two_best_candidates_only():
    categories = ["verb.motion", "verb.stative", "verb.motion", None]
    centroids = {"verb.motion": torch.tensor([1.0, 0.0]), "verb.stative": torch.tensor([0.0, 1.0])}
    context = torch.tensor([[1.0, 0.0]])
    # candidate 1 leads, candidate 0 is second, candidate 2 third (same category as 0: left alone)
    scores = [np.array([0.5, 0.6, 0.4])]
    out = second_look([_example([0, 1, 2])], scores, context, centroids, categories, weight=0.5)
    assert out[0] == pytest.approx([0.5 + 0.5 * 1.0, 0.6 + 0.5 * 0.0, 0.4])
    assert int(np.argmax(out[0])) == 0 and int(np.argmax(scores[0])) == 1  # the second look changed the answer
    assert scores[0] == pytest.approx([0.5, 0.6, 0.4])  # the input is left as it was
    # a candidate without a category gets nothing
    out = second_look([_example([3, 1])], [np.array([0.9, 0.1])], context, centroids, categories, weight=1.0)
    assert out[0] == pytest.approx([0.9, 0.1])


def test_document_context_adds_the_sentence_and_the_mean_of_the_documents_distinct_sentences():
    instances = [WsdInstance("d000.s000.t000", "first", 0, 1, "f", "n"),
                 WsdInstance("d000.s000.t001", "first", 2, 3, "f", "n"),
                 WsdInstance("d000.s001.t000", "second", 0, 1, "s", "v"),
                 WsdInstance("d001.s000.t000", "other", 0, 1, "o", "v")]
    tokens = torch.tensor([[2.0, 0.0], [0.0, 2.0], [2.0, 0.0], [0.0, 1.0]])
    sentences = torch.tensor([[1.0, 0.0], [1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])
    out = document_context(instances, tokens, sentences, a=0.5, b=0.25)
    document = torch.tensor([0.5, 0.5])  # the two distinct sentences of d000, each once
    assert torch.allclose(out[0], torch.tensor([1.0, 0.0]) + 0.5 * sentences[0] + 0.25 * document)
    assert torch.allclose(out[2], torch.tensor([1.0, 0.0]) + 0.5 * sentences[2] + 0.25 * document)
    assert torch.allclose(out[3], torch.tensor([0.0, 1.0]) + 0.75 * sentences[3])
    assert torch.allclose(document_context(instances, tokens, sentences, 0.0, 0.0), F.normalize(tokens, dim=1))


def test_the_last_layers_mean_of_one_layer_is_the_encoders_output(tiny_bert_dir):
    from jaket.model.language import SplitLanguageModel
    from results.wsd_text_levers import LastLayersMean

    language = SplitLanguageModel.from_pretrained(tiny_bert_dir).eval()
    encoded = language.tokenizer(["a short text", "another one, longer than the first"], padding=True,
                                 return_tensors="pt")
    ids, mask = encoded["input_ids"], encoded["attention_mask"]
    with torch.no_grad():
        last = language(ids, mask)
        assert torch.allclose(LastLayersMean(language, 1)(ids, mask), last, atol=1e-6)
        both = LastLayersMean(language, 2)(ids, mask)
        before_last = language._run_layers(language._embeddings[0](input_ids=ids), mask, language._layers[0][:-1])
    assert torch.allclose(both, (last + before_last) / 2, atol=1e-5)
