"""The sense-text pass (:func:`jaket.senses.texts.text_vectors`): length-sorted batches give
each text the vector it has read alone, the text-vector cache is hit by a second run and missed by
a changed text or changed weights, every long stage is timed, and linking is linear in the mentions
of a line."""

from __future__ import annotations

import json
import logging
import time

import numpy as np
import pytest
import torch

from jaket.kg.graph import KnowledgeGraph
from jaket.model.language import SplitLanguageModel
from jaket.model.memory import length_sorted_batches
from jaket.model.memory_cache import TextVectorCache
from jaket.senses.linker import _grouped
from jaket.senses.texts import SenseTexts, sense_text, text_kg_rows, text_vectors

from tests.tasks.test_wsd import mini, sense_kg  # noqa: F401  (fixtures: the mini WSD file and its sense KG)

TEXTS = ["a bank: the sloping land beside a river",
         "money",
         "a place where money is kept, and a loan is asked for, and an account is opened for a deposit of cash",
         "a river: a large natural stream of water",
         "cash: money in coins or notes, not in an account",
         "mud"]


@pytest.fixture()
def language(tiny_bert_dir):
    torch.manual_seed(0)
    return SplitLanguageModel.from_pretrained(tiny_bert_dir).eval()


@pytest.fixture()
def cache_dir(tmp_path, monkeypatch):
    folder = tmp_path / "cache"
    monkeypatch.setenv("JAKET_CACHE", str(folder))
    return folder


def _counting(language: SplitLanguageModel) -> list[int]:
    """Wrap ``language``'s forward pass: the list holds the texts of each batch it read."""
    read: list[int] = []
    forward = language.forward

    def counted(input_ids, attention_mask, *args, **kwargs):
        read.append(int(input_ids.shape[0]))
        return forward(input_ids, attention_mask, *args, **kwargs)

    language.forward = counted
    return read


def _kg(descriptions: list[str]) -> KnowledgeGraph:
    """Six entities in a chain (0-1-2-3-4-5), each with one of ``descriptions``."""
    n = len(descriptions)
    return KnowledgeGraph(
        entity_ids=[f"e{i}" for i in range(n)], entity_names=[f"thing {i}" for i in range(n)],
        entity_descriptions=list(descriptions), entity_aliases=[[] for _ in range(n)],
        entity_category=np.full(n, -1), category_names=[], relation_ids=["r"], relation_names=["r"],
        relation_descriptions=["related"], triples=np.asarray([[i, 0, i + 1] for i in range(n - 1)]))


# ----------------------------------------------------------------------------- sorted batches


def test_length_sorted_batches_cover_every_position_once_shortest_first():
    lengths = np.asarray([5, 1, 9, 1, 3, 7, 2])
    batches = length_sorted_batches(lengths, 3)
    assert [b.tolist() for b in batches] == [[1, 3, 6], [4, 0, 5], [2]]
    with pytest.raises(ValueError, match="batch_size"):
        length_sorted_batches(lengths, 0)


def test_sorted_batches_give_each_text_its_own_vector_in_the_order_given(language):
    """Every text's vector is the one it gets read alone (no padding at all), in the order given,
    whatever the batch size: the sorting changes float noise only."""
    alone = torch.cat([text_vectors(language, [text]) for text in TEXTS])
    for batch_size in (1, 2, 4, 64):
        together = text_vectors(language, TEXTS, batch_size=batch_size)
        assert together.shape == (len(TEXTS), language.hidden_size)
        assert torch.allclose(together, alone, atol=1e-5), batch_size
    assert torch.allclose(together.norm(dim=1), torch.ones(len(TEXTS)), atol=1e-5)
    assert text_vectors(language, []).shape == (0, language.hidden_size)


# ----------------------------------------------------------------------------- the text-vector cache


def test_a_second_run_reads_no_text_and_gets_the_same_rows(language, cache_dir, caplog):
    kg = _kg(TEXTS)
    entities = np.asarray([1, 3])
    read = _counting(language)
    first = text_kg_rows(language, kg, entities, SenseTexts({}), cache=TextVectorCache.for_encoder(language, 128))
    assert sum(read) == 5  # entities 1 and 3 and their neighbours 0, 2, 4
    assert list(cache_dir.glob("text-vectors/*/*.safetensors")) and list(cache_dir.glob("text-vectors/*/*.json"))
    read.clear()
    again = TextVectorCache.for_encoder(language, 128)  # a new run: the folder is read again
    with caplog.at_level(logging.INFO, logger="jaket.senses.texts"):
        second = text_kg_rows(language, kg, entities, SenseTexts({}), cache=again)
    assert read == [] and again.read == 5 and again.stored == 0
    assert "5 of 5 texts read from the text-vector cache" in caplog.text
    for a, b in zip(first, second):
        assert torch.equal(a, b)
    # more entities: only the texts not seen before are read
    text_kg_rows(language, kg, np.asarray([5]), SenseTexts({}), cache=again)
    assert sum(read) == 1 and again.stored == 1


def test_a_changed_text_or_changed_weights_miss_the_cache(language, cache_dir):
    kg = _kg(TEXTS)
    entities = np.arange(len(TEXTS))
    own, _ = text_kg_rows(language, kg, entities, SenseTexts({}), cache=TextVectorCache.for_encoder(language, 128))
    # one description edited: that text alone is read again, and its old vector is not used
    edited = _kg([*TEXTS[:2], "a bank that lends money", *TEXTS[3:]])
    read = _counting(language)
    cache = TextVectorCache.for_encoder(language, 128)
    changed, _ = text_kg_rows(language, edited, entities, SenseTexts({}), cache=cache)
    assert sum(read) == 1 and cache.read == len(TEXTS) - 1
    assert not torch.allclose(changed[2], own[2], atol=1e-3)
    assert torch.allclose(changed[2], text_vectors(language, [sense_text(edited, 2)])[0], atol=1e-5)
    # other weights (one parameter moved): nothing is read from the cache
    with torch.no_grad():
        next(language.parameters()).add_(0.01)
    read.clear()
    moved = TextVectorCache.for_encoder(language, 128)
    assert moved.key != cache.key
    text_kg_rows(language, kg, entities, SenseTexts({}), cache=moved)
    assert sum(read) == len(TEXTS) and moved.read == 0
    # another length or precision: another key
    assert TextVectorCache.for_encoder(language, 64).key != moved.key
    assert TextVectorCache.for_encoder(language, 128, precision="bfloat16").key != moved.key


def test_a_damaged_or_foreign_shard_is_reported_and_never_used(language, cache_dir, caplog):
    kg = _kg(TEXTS)
    cache = TextVectorCache.for_encoder(language, 128)
    text_kg_rows(language, kg, np.asarray([0]), SenseTexts({}), cache=cache)
    (shard,) = cache.folder.glob("*.safetensors")
    shard.write_bytes(shard.read_bytes()[:40])  # cut short
    read = _counting(language)
    again = TextVectorCache.for_encoder(language, 128)
    with caplog.at_level(logging.WARNING):
        text_kg_rows(language, kg, np.asarray([0]), SenseTexts({}), cache=again)
    assert "unreadable text-vector cache shard" in caplog.text and sum(read) == 2 and again.read == 0
    # a shard of another key moved into this folder: refused by the key in its header
    other = TextVectorCache(cache.folder, "another-key", cache.dim)
    other.store(["money"], torch.ones(1, cache.dim))
    caplog.clear()
    third = TextVectorCache.for_encoder(language, 128)
    with caplog.at_level(logging.WARNING):
        assert third.lookup(["money"]) == {}
    assert "written for cache key 'another-key'" in caplog.text


def test_many_shards_are_merged_into_one(language, cache_dir, monkeypatch):
    """Each run adds a shard; a folder of more than MAX_SHARDS is merged when read, every text kept."""
    from jaket.model import memory_cache

    for run in range(6):
        cache = TextVectorCache.for_encoder(language, 128)
        cache.store([f"text {run} {k}" for k in range(2)], torch.full((2, cache.dim), float(run)))
    folder = cache.folder
    assert len(list(folder.glob("*.safetensors"))) == 6
    monkeypatch.setattr(memory_cache, "MAX_SHARDS", 3)
    found = TextVectorCache.for_encoder(language, 128).lookup([f"text {r} {k}" for r in range(6) for k in range(2)])
    assert len(found) == 12 and all(float(found[2 * r + k][0]) == r for r in range(6) for k in range(2))
    assert len(list(folder.glob("*.safetensors"))) == 1 and len(list(folder.glob("*.json"))) == 1
    assert float(TextVectorCache.for_encoder(language, 128).lookup(["text 5 1"])[0][0]) == 5.0


def test_the_cache_is_off_with_jaket_cache_off(language, monkeypatch):
    monkeypatch.setenv("JAKET_CACHE", "off")
    assert TextVectorCache.for_encoder(language, 128) is None


# ----------------------------------------------------------------------------- stages, WSD end to end


def test_wsd_reports_every_stage_and_a_second_run_reads_no_sense_text(mini, sense_kg, tiny_bert_dir,  # noqa: F811
                                                                       tmp_path, monkeypatch, caplog):
    from jaket.tasks.word_sense.data import load_wsd
    from jaket.tasks.word_sense.job import WordSenseConfig
    from jaket.tasks.word_sense.run import run_wsd

    monkeypatch.setenv("JAKET_CACHE", str(tmp_path / "cache"))
    kg, _ = sense_kg
    config = WordSenseConfig(encoder=tiny_bert_dir, variants=("lm",), description_max_length=16, bootstrap=50)
    with caplog.at_level(logging.INFO):
        first = run_wsd(load_wsd(mini), kg, config, tmp_path / "first")
    stages = first["stages"]
    assert ["usage examples", "lesk", "base encoder: load", "base encoder: contexts", "base encoder: descriptions",
            "base encoder: sense texts", "paired differences"] == list(stages)
    assert all(isinstance(seconds, float) and seconds >= 0 for seconds in stages.values())
    assert json.loads((tmp_path / "first" / "metrics.json").read_text())["stages"] == stages
    assert "Stages (wall-clock seconds): usage examples" in (tmp_path / "first" / "report.md").read_text()
    assert "stage: base encoder: sense texts ..." in caplog.text
    caplog.clear()
    with caplog.at_level(logging.INFO):
        second = run_wsd(load_wsd(mini), kg, config, tmp_path / "second")
    line = next(r.getMessage() for r in caplog.records if "text-vector cache" in r.getMessage())
    found, total = [int(x) for x in line.split(": ", 1)[1].split(" texts")[0].split(" of ")]
    assert found == total > 0 and line.endswith(", 0 to encode")
    assert second["scorers"] == first["scorers"]  # the same F1s, bit for bit


# ----------------------------------------------------------------------------- linking: linear in the mentions


def test_grouping_keeps_overlapping_spans_apart_and_each_mention_once():
    text = "the river bank of the river"
    spans = [(4, 14), (10, 14), (4, 9), (22, 27), (0, 3), (4, 14)]
    corpus = _grouped([text] * len(spans), spans)
    assert set(corpus.texts) == {text}
    seen = sorted(m.entity for mentions in corpus.mentions for m in mentions)
    assert seen == list(range(len(spans)))
    for mentions in corpus.mentions:  # MentionCorpus checked them disjoint; each is its own span
        for m in mentions:
            assert (m.start, m.end) == spans[m.entity]
    assert len(corpus) == 3  # [4, 9), [4, 14) and [4, 14) overlap each other: three copies, the rest fit beside
    other = _grouped(["a b", "c d", "a b"], [(0, 1), (0, 1), (2, 3)])
    assert other.texts == ["a b", "c d"] and [len(m) for m in other.mentions] == [2, 1]


def test_forty_thousand_mentions_of_one_line_are_grouped_in_seconds():
    """A 1 MB line of repeated mentions (issue 53): each span was compared with every earlier one,
    ~8 * 10^8 comparisons here; sorted once, well under the bound."""
    word = "bank "
    text = word * 40_000
    spans = [(k * len(word), k * len(word) + 4) for k in range(40_000)][::-1]
    began = time.perf_counter()
    corpus = _grouped([text] * len(spans), spans)
    assert time.perf_counter() - began < 10
    assert len(corpus) == 1 and len(corpus.mentions[0]) == 40_000


def _bank_kg() -> KnowledgeGraph:
    """Two entities named "bank" (so a mention of it is ranked) in the chain of :func:`_kg`."""
    kg = _kg(TEXTS)
    kg.entity_names[:] = ["bank", "bank", "loan", "river", "cash", "mud"]
    return kg


def test_jaket_link_model_times_its_stages_and_a_second_run_reads_no_sense_text(tiny_jaket_dir, tmp_path,
                                                                               monkeypatch, capsys):
    from jaket.cli import main as jaket_main
    from jaket.kg.io import save_kg

    monkeypatch.setenv("JAKET_CACHE", str(tmp_path / "cache"))
    save_kg(_bank_kg(), tmp_path / "kg")
    summaries = []
    for run, text in enumerate(["we sat on the bank of the river", "she asked the bank for a loan"]):
        (tmp_path / f"texts{run}.txt").write_text(text + "\n")
        status = jaket_main(["link", "--kg", str(tmp_path / "kg"), "--texts", str(tmp_path / f"texts{run}.txt"),
                             "--out", str(tmp_path / f"linked{run}.jsonl"), "--model", str(tiny_jaket_dir),
                             "--device", "cpu", "--scorer", "text+kg"])
        assert status == 0
        summaries.append(json.loads(capsys.readouterr().out)["model"])
    first, second = summaries
    assert {"candidates", "sense texts", "mentions"} <= set(first["seconds"])
    assert first["sense_texts_read"] == 3 and first["sense_texts_cached"] == 0  # "bank" x 2 and a neighbour
    # another text, the same model and KG: every sense text from the cache
    assert second["sense_texts_read"] == 0 and second["sense_texts_cached"] == 3


def test_a_line_of_forty_thousand_mentions_is_linked_in_seconds_without_the_length_warning(tiny_jaket_dir):
    """``jaket link --model`` on one line of 40,000 mentions (issue 53: 32,000 took 67 s, quadratic):
    linked end to end under a bound a quadratic grouping cannot meet on any machine this runs on
    (~8 * 10^8 span comparisons), the mentions past ``max_length`` tokens left unlinked as not read,
    and no "sequence length is longer than the specified maximum" warning: jaket truncates on purpose."""
    from jaket.senses.linker import ContextLinker

    linker = ContextLinker.from_pretrained(tiny_jaket_dir, _bank_kg(), device="cpu", max_length=32)
    began = time.perf_counter()
    (linked,) = linker.link(["bank " * 40_000])
    assert time.perf_counter() - began < 30
    assert len(linked.mentions) + len(linked.unlinked) == 40_000
    assert 0 < len(linked.mentions) < 32 and {u.reason for u in linked.unlinked} == {"not read"}
    assert not linker.model.language.tokenizer.deprecation_warnings.get(
        "sequence-length-is-longer-than-the-specified-maximum")


def test_the_same_encoder_loaded_again_has_the_same_key(tiny_bert_dir, cache_dir, tmp_path):
    """A checkpoint without an MLM head (as the bundled MiniLM) gets a fresh one at each load: the key
    reads the weights the vectors depend on (LM1 + LM2), not the head, so a second run finds the first
    one's vectors."""
    from transformers import AutoModel, AutoTokenizer

    headless = tmp_path / "headless"
    AutoModel.from_pretrained(tiny_bert_dir).save_pretrained(headless)
    AutoTokenizer.from_pretrained(tiny_bert_dir).save_pretrained(headless)
    keys, heads = set(), set()
    for seed in (0, 1):
        torch.manual_seed(seed)
        language = SplitLanguageModel.from_pretrained(headless)
        keys.add(TextVectorCache.for_encoder(language, 128).key)
        heads.add(float(sum(p.detach().sum() for p in language.parameters())))
    assert len(heads) == 2 and len(keys) == 1  # a new head each time, the same key
