"""Context linking (`jaket link --model`, :class:`jaket.senses.linker.ContextLinker`): the
pre-trained masked-entity head ranks a mention's candidates from its context (task 4, Eq. 7).

The hand-written KG's model is arranged so that the context must decide: a *bag-of-words* tiny
BERT (uniform attention, every layer adds the mean of the tokens to each token; each content word
a unit vector of its own, every other token zero) and an entity head that is the identity. A
mention's query is then its word plus its context's words, an entity's memory row its name plus
its description's words, so the inner product grows with their shared words: "bank" beside a river
must link the river bank, beside a loan the money bank, and with the head negated the choice flips.
"""

from __future__ import annotations

import json
import logging
import re
from pathlib import Path

import numpy as np
import pytest
import torch

from jaket.cli import main as jaket_main
from jaket.kg.graph import KnowledgeGraph
from jaket.kg.io import load_corpus, load_kg, save_corpus, save_kg
from jaket.kg.linking import EntityLinker, Target
from jaket.model.jaket import JaketConfig, JaketModel
from jaket.model.memory import EntityContextMemory
from jaket.senses.linker import ContextLinker

#: the words of the bag-of-words encoder (one unit vector each; every other token is zero)
WORDS = ["bank", "river", "water", "mud", "shore", "money", "loan", "cash", "account", "deposit", "stream"]
RIVER, MONEY, VERB = "bank.n.01", "bank.n.02", "bank.v.01"
TEXTS = ["we sat on the bank of the river in the mud",
         "she took a loan from the bank to pay cash into her account",
         "the bank"]


def _bag_of_words_model(encoder: Path, sign: float = 1.0, scale: float = 0.1) -> JaketModel:
    """The model of the module docstring; the head is ``sign * scale`` times the identity (the
    scale keeps the probabilities away from 0 and 1)."""
    torch.manual_seed(0)
    model = JaketModel(JaketConfig(encoder=str(encoder), km_heads=4, fanouts=(3, 3), description_max_length=16))
    ids = model.language.tokenizer.convert_tokens_to_ids(WORDS)
    eye = torch.eye(model.hidden_size)
    with torch.no_grad():
        for name, parameter in model.language.named_parameters():
            if name.endswith("word_embeddings.weight"):
                parameter.zero_()
                parameter[ids] = eye[:len(ids)]
            elif "LayerNorm" in name:
                parameter.fill_(1.0 if name.endswith("weight") else 0.0)
            elif ("attention.self.value" in name or "attention.output.dense" in name) and parameter.dim() == 2:
                parameter.copy_(eye)  # the mean over the tokens, added to each token
            elif "embeddings" in name or "attention" in name or "output.dense" in name:
                parameter.zero_()  # no positions, uniform attention, no feed-forward
        head = model.entity_head  # g(x) = W2 GELU(W1 x + b1) + b2 = x (GELU(x + 20) = x + 20 here)
        head.w1.weight.copy_(eye)
        head.w1.bias.fill_(20.0)
        head.w2.weight.copy_(sign * scale * eye)
        head.w2.bias.fill_(-sign * scale * 20.0)
    return model.eval()


def _bank_kg() -> KnowledgeGraph:
    """Two nouns named "bank" (a river's, a money's), a verb "bank", and two other entities."""
    ids = [RIVER, MONEY, VERB, "river.n.01", "money.n.01"]
    return KnowledgeGraph(
        entity_ids=ids, entity_names=["bank", "bank", "bank", "river", "money"],
        entity_descriptions=["bank: the sloping land beside a river, mud and water at the shore",
                             "bank: a place where money is kept: a loan, cash, a deposit in an account",
                             "bank: to put money into an account", "river: a large stream of water",
                             "money: cash and coins"],
        entity_aliases=[[] for _ in ids], entity_category=np.full(len(ids), -1), category_names=[],
        relation_ids=["related"], relation_names=["related"], relation_descriptions=["related to"],
        triples=np.asarray([[0, 0, 3], [1, 0, 4], [2, 0, 4]]))


@pytest.fixture(scope="module")
def bank(tiny_bert_dir, tmp_path_factory):
    """``(kg, kg_dir, model_dir, negated_model_dir)``."""
    root = tmp_path_factory.mktemp("bank")
    kg = _bank_kg()
    save_kg(kg, root / "kg")
    _bag_of_words_model(tiny_bert_dir).save_pretrained(root / "model", save_memory=False)
    _bag_of_words_model(tiny_bert_dir, sign=-1.0).save_pretrained(root / "negated", save_memory=False)
    return load_kg(root / "kg"), root / "kg", root / "model", root / "negated"


def _linked(kg, linked) -> list[list[tuple[str, str, float, float]]]:
    return [[(t.text[m.start:m.end], kg.entity_ids[m.entity], m.score, m.margin) for m in t.mentions]
            for t in linked]


def test_the_context_decides_between_two_entities_sharing_a_name(bank):
    kg, _, model_dir, negated_dir = bank
    # the verb is a "bank" too; the gazetteer proposes all three, nothing restricts by part of speech
    linked = _linked(kg, ContextLinker.from_pretrained(model_dir, kg, device="cpu", scorer="head").link(TEXTS))
    assert [[(w, e) for w, e, _, _ in text] for text in linked] == [
        [("bank", RIVER), ("river", "river.n.01")], [("bank", MONEY)], [("bank", linked[2][0][1])]]
    (_, _, river_p, river_margin), (_, _, river_alone, alone_margin) = linked[0]
    assert 0.5 < river_p < 1.0 and 0.0 < river_margin < river_p
    assert river_alone == alone_margin == 1.0  # one candidate: probability 1, nothing to beat
    negated = _linked(kg, ContextLinker.from_pretrained(negated_dir, kg, device="cpu", scorer="head").link(TEXTS))
    assert negated[0][0][1] != RIVER and negated[1][0][1] != MONEY


def test_scores_are_the_softmax_of_pretrainings_inner_products(bank, tiny_bert_dir):
    """``logits`` are the inner products masked entity prediction computes: the head's query of the
    mention against the rows pre-training's memory holds (EntityContextMemory.from_kg, Eq. 7)."""
    kg, _, model_dir, _ = bank
    linker = ContextLinker.from_pretrained(model_dir, kg, device="cpu", batch_size=2, scorer="head")
    spans = [(TEXTS[0].index("bank"), TEXTS[0].index("bank") + 4), (TEXTS[1].index("bank"), TEXTS[1].index("bank") + 4)]
    candidates = [[0, 1, 2], [2, 0]]
    logits = linker.logits(TEXTS[:2], spans, candidates)
    model = linker.model
    memory = EntityContextMemory.from_kg(model.language, kg, max_length=model.config.description_max_length)
    for text, (start, end), entities, got in zip(TEXTS, spans, candidates, logits):
        encoded = model.language.tokenizer(text, return_offsets_mapping=True, return_tensors="pt")
        inside = [k for k, (a, b) in enumerate(encoded["offset_mapping"][0].tolist()) if b > a and a < end and b > start]
        hidden = model.language(encoded["input_ids"], encoded["attention_mask"])
        q = model.entity_head.query(hidden, torch.tensor([0]), torch.tensor([inside[0]]), torch.tensor([inside[-1]]))[0]
        expected = memory.entity_rows(torch.tensor(entities)) @ q
        np.testing.assert_allclose(got, expected.detach().numpy(), rtol=1e-4, atol=1e-4)
    probabilities = linker.score(TEXTS[:2], spans, candidates)
    for p, z in zip(probabilities, logits):
        np.testing.assert_allclose(p, np.exp(z - z.max()) / np.exp(z - z.max()).sum(), rtol=1e-9)
        assert p.sum() == pytest.approx(1.0)
    # only the rows asked for were read, each once (the third call reads nothing new)
    assert linker.stats.descriptions_encoded == 3
    linker.score(TEXTS[:2], spans, candidates)
    assert linker.stats.descriptions_encoded == 3
    # one candidate: probability 1, none: nothing, both unread; a span outside its text is refused
    assert [p.tolist() for p in linker.score(["the bank", "the bank"], [(4, 8), (4, 8)], [[1], []])] == [[1.0], []]
    with pytest.raises(ValueError, match="mention 1: span \\[4, 80\\)"):
        linker.score(["the bank"], [(4, 80)], [[0, 1]])


def test_a_mention_past_max_length_is_not_read(bank):
    kg, _, model_dir, _ = bank
    linker = ContextLinker.from_pretrained(model_dir, kg, device="cpu", max_length=8)
    text = "the river " * 10 + "bank"
    assert linker.score([text], [(len(text) - 4, len(text))], [[0, 1]]) == [None]
    [result] = linker.link([text])
    assert [(u.start, u.reason) for u in result.unlinked] == [(len(text) - 4, "not read")]
    assert linker.stats.unreadable == 1


def test_given_targets_are_restricted_by_their_part_of_speech(bank):
    kg, _, model_dir, _ = bank
    linker = ContextLinker.from_pretrained(model_dir, kg, device="cpu")
    text = "they bank at the river bank"
    noun, verb = (text.rindex("bank"), len(text)), (5, 9)
    [result] = linker.link([text], targets=[[Target(*verb, pos="v"), Target(*noun, lemma="bank", pos="n"),
                                             Target(0, 4, pos="n")]])
    got = {(m.start, m.end): sorted(kg.entity_ids[e] for e, _ in m.candidates) for m in result.mentions}
    assert got == {verb: [VERB], noun: [RIVER, MONEY]}
    assert [(u.start, u.reason) for u in result.unlinked] == [(0, "no candidate")]  # "they" names nothing
    assert (linker.stats.targets, linker.stats.targets_without_candidate) == (3, 1)


def test_a_target_without_lemma_finds_the_base_of_its_inflection(bank):
    """A given span without a lemma reads as the gazetteer would: "banked" (a regular -ed) is the
    verb bank, "banks" one of the nouns, restricted by the part of speech given."""
    kg, _, model_dir, _ = bank
    linker = ContextLinker.from_pretrained(model_dir, kg, device="cpu")
    text = "she banked her pay at two banks"
    assert [kg.entity_ids[e] for e in linker.target_candidates(text, Target(4, 10, pos="v"))] == [VERB]
    assert sorted(kg.entity_ids[e] for e in linker.target_candidates(text, Target(26, 31, pos="n"))) == \
        sorted([RIVER, MONEY])
    assert [kg.entity_ids[e] for e in linker.target_candidates(text, Target(26, 31, pos="v"))] == [VERB]
    assert linker.target_candidates(text, Target(14, 17)) == []  # "pay" names nothing


def _link(capsys, *argv) -> tuple[int, dict | None, list[str]]:
    status = jaket_main(["link", *map(str, argv)])
    captured = capsys.readouterr()
    assert "Traceback" not in captured.err
    return status, json.loads(captured.out) if status == 0 else None, captured.err.strip().splitlines()


def _records(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_jaket_link_model_writes_scores_and_a_pretraining_corpus(bank, tmp_path, capsys):
    kg, kg_dir, model_dir, _ = bank
    texts = tmp_path / "texts.txt"
    texts.write_text("\n".join(TEXTS) + "\n")
    status, summary, _ = _link(capsys, "--kg", kg_dir, "--texts", texts, "--out", tmp_path / "all.jsonl",
                               "--model", model_dir, "--device", "cpu", "--scorer", "head")
    assert status == 0
    records = _records(tmp_path / "all.jsonl")
    assert [[(r["text"][m["start"]:m["end"]], m["entity"]) for m in r["mentions"]] for r in records][:2] == [
        [("bank", RIVER), ("river", "river.n.01")], [("bank", MONEY)]]
    banks = [r["mentions"][0] for r in records]
    for mention in banks:
        probabilities = [c["score"] for c in mention["candidates"]]
        assert sorted(c["entity"] for c in mention["candidates"]) == [RIVER, MONEY, VERB]
        assert probabilities == sorted(probabilities, reverse=True) and sum(probabilities) == pytest.approx(1, abs=1e-5)
        assert mention["score"] == probabilities[0] and mention["entity"] == mention["candidates"][0]["entity"]
        assert mention["margin"] == pytest.approx(probabilities[0] - probabilities[1], abs=1e-5)
    assert summary["mentions"] == 4 and summary["model"]["scored"] == 3 and summary["model"]["below_confidence"] == 0
    # the linked file is a pre-training corpus: the corpus reader takes it, extra fields and all
    corpus = load_corpus(tmp_path / "all.jsonl", kg)
    assert [[(m.start, m.end, kg.entity_ids[m.entity]) for m in ms] for ms in corpus.mentions] == \
        [[(m["start"], m["end"], m["entity"]) for m in r["mentions"]] for r in records]
    # --min-confidence between the two most confident banks leaves the others unlinked, counted
    scores = sorted(m["score"] for m in banks)
    threshold = (scores[-1] + scores[-2]) / 2
    status, summary, err = _link(capsys, "--kg", kg_dir, "--texts", texts, "--out", tmp_path / "sure.jsonl",
                                 "--model", model_dir, "--device", "cpu", "--min-confidence", threshold,
                                 "--scorer", "head")
    sure = _records(tmp_path / "sure.jsonl")
    kept = [m for r in sure for m in r["mentions"] if m["entity"].startswith("bank.")]
    dropped = [u for r in sure for u in r.get("unlinked", [])]
    assert [m["score"] for m in kept] == [scores[-1]]
    assert sorted(u["score"] for u in dropped) == scores[:-1] and {u["reason"] for u in dropped} == {"below confidence"}
    assert summary["model"]["below_confidence"] == 2 and summary["mentions"] == 2
    assert "2 left unlinked below --min-confidence" in err[-1]
    # deterministic: the same run writes the same bytes
    _link(capsys, "--kg", kg_dir, "--texts", texts, "--out", tmp_path / "again.jsonl", "--model", model_dir,
          "--device", "cpu", "--scorer", "head")
    assert (tmp_path / "again.jsonl").read_bytes() == (tmp_path / "all.jsonl").read_bytes()


def test_jaket_link_without_model_is_the_gazetteer_unchanged(bank, tmp_path, capsys, caplog):
    kg, kg_dir, _, _ = bank
    texts = tmp_path / "texts.jsonl"
    texts.write_text("".join(json.dumps({"text": t, "targets": [{"start": 0, "end": 2, "pos": "x"}]}) + "\n"
                             for t in TEXTS))  # targets are read with --model only: not read here, and said so
    status, summary, _ = _link(capsys, "--kg", kg_dir, "--texts", texts, "--out", tmp_path / "out.jsonl")
    assert status == 0
    assert f"--texts {texts}: {len(TEXTS)} record(s) give 'targets', which only --model reads" in caplog.text
    save_corpus(EntityLinker.from_kg(kg).link_texts(TEXTS), tmp_path / "expected.jsonl", kg)
    assert (tmp_path / "out.jsonl").read_bytes() == (tmp_path / "expected.jsonl").read_bytes()
    assert list(summary) == ["kg", "input", "output", "texts", "mentions", "linked_texts", "unlinked_texts",
                             "ambiguous_resolved", "resolved_by_context", "too_ambiguous", "inflected",
                             "blank_lines_skipped", "rules", "gazetteer"]
    assert summary["rules"] == {"min_length": 3, "case_sensitive": False, "ignore_case": False, "max_ambiguity": None,
                                "inflections": True, "context_window": 50}  # what it matched by, in the summary


def test_jaket_link_bad_input_is_one_line(bank, tiny_bert_dir, tmp_path, capsys):
    kg, kg_dir, model_dir, _ = bank
    texts = tmp_path / "texts.txt"
    texts.write_text(TEXTS[0] + "\n")
    out = tmp_path / "out.jsonl"
    status, _, err = _link(capsys, "--kg", kg_dir, "--texts", texts, "--out", out, "--min-confidence", "0.5")
    assert status == 2 and err == ["error: --min-confidence: only with --model (the gazetteer alone has no probabilities)"]
    status, _, err = _link(capsys, "--kg", kg_dir, "--texts", texts, "--out", out, "--model", tmp_path / "nowhere")
    assert status == 1 and len(err) == 1 and err[0].startswith(f"error: --model {tmp_path / 'nowhere'}: no such folder")
    status, _, err = _link(capsys, "--kg", kg_dir, "--texts", texts, "--out", out, "--model", tiny_bert_dir)
    assert status == 1 and len(err) == 1 and "config.json" in err[0]  # an encoder, not a jaket model folder
    with pytest.raises(SystemExit):
        jaket_main(["link", "--kg", str(kg_dir), "--texts", str(texts), "--out", str(out), "--model", str(model_dir),
                    "--min-confidence", "1.5"])
    assert "must be a probability in [0, 1], got 1.5" in capsys.readouterr().err
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps({"text": "the bank", "targets": [{"start": 4, "end": 8, "pos": "x"}]}) + "\n"
                   + json.dumps({"text": "the bank", "targets": [{"start": 4, "end": 80}]}) + "\n")
    status, _, err = _link(capsys, "--kg", kg_dir, "--texts", bad, "--out", out, "--model", model_dir, "--device", "cpu")
    assert status == 1 and err[:2] == [
        f"{bad}:1: unknown part of speech 'x' (one of n, v, a, r or noun, verb, adj, adv)",
        f"{bad}:2: target 1: span [4, 80) is empty or outside the text (length 8)"]
    assert not out.exists()


def test_jaket_link_model_on_wordnet_counts_what_min_confidence_leaves(tiny_jaket_dir, tmp_path, capsys):
    """WordNet's own text with a pre-trained model (random weights here): every candidate span of the
    gazetteer is either linked with a score >= P or left unlinked below it, and the summary counts them."""
    from jaket.kg.sources.registry import build_source

    bundle = build_source("wordnet", max_entities=300, seed=0)
    save_kg(bundle.kg, tmp_path / "wordnet")
    kg = load_kg(tmp_path / "wordnet")
    texts = bundle.corpus.texts[:30]
    (tmp_path / "texts.txt").write_text("\n".join(texts) + "\n")
    gazetteer = EntityLinker.from_kg(kg)
    spans = [s for t in texts for s in gazetteer.candidate_spans(t)]
    assert sum(len(s.candidates) > 1 for s in spans) >= 3  # some words have several senses here
    status, summary, err = _link(capsys, "--kg", tmp_path / "wordnet", "--texts", tmp_path / "texts.txt",
                                 "--out", tmp_path / "linked.jsonl", "--model", tiny_jaket_dir, "--device", "cpu",
                                 "--min-confidence", "0.7", "--scorer", "head")
    assert status == 0
    records = _records(tmp_path / "linked.jsonl")
    linked = [m for r in records for m in r["mentions"]]
    below = [u for r in records for u in r.get("unlinked", [])]
    assert all(m["score"] >= 0.7 for m in linked) and all(u["score"] < 0.7 for u in below)
    assert len(linked) + len(below) == len(spans)
    assert summary["mentions"] == len(linked) and summary["model"]["below_confidence"] == len(below) > 0
    assert summary["model"]["scored"] == sum(len(s.candidates) > 1 for s in spans)
    assert f"{len(below)} left unlinked below --min-confidence 0.7" in err[-1]
    assert load_corpus(tmp_path / "linked.jsonl", kg).num_mentions == len(linked)
    # the text+kg scorer over the same spans: the same accounting
    status, summary, _ = _link(capsys, "--kg", tmp_path / "wordnet", "--texts", tmp_path / "texts.txt",
                               "--out", tmp_path / "kg.jsonl", "--model", tiny_jaket_dir, "--device", "cpu",
                               "--min-confidence", "0.7", "--scorer", "text+kg")
    records = _records(tmp_path / "kg.jsonl")
    linked = [m for r in records for m in r["mentions"]]
    below = [u for r in records for u in r.get("unlinked", [])]
    assert status == 0 and summary["model"]["scorer"] == "text+kg"
    assert all(m["score"] >= 0.7 for m in linked) and all(u["score"] < 0.7 for u in below)
    assert len(linked) + len(below) == len(spans) and summary["model"]["below_confidence"] == len(below)


def test_the_text_kg_scorer_reads_each_candidates_text_and_its_neighbours(bank, tmp_path, capsys):
    """``scorer="text+kg"``: the mention as the encoder reads it (no head) against each candidate's
    text plus β times its KG neighbours' mean, by cosine over the temperature; the context still
    decides (here the neighbours "river" and "money" add their words), and ``jaket link --scorer
    text+kg`` writes the same corpus format."""
    from jaket.model.heads import span_mean
    from jaket.senses.texts import COSINE_TEMPERATURE, SenseTexts, text_kg_rows

    kg, kg_dir, model_dir, negated_dir = bank
    linker = ContextLinker.from_pretrained(model_dir, kg, device="cpu", scorer="text+kg",
                                           texts=SenseTexts({}, neighbour_weight=0.5))
    spans = [(TEXTS[0].index("bank"), TEXTS[0].index("bank") + 4), (TEXTS[1].index("bank"), TEXTS[1].index("bank") + 4)]
    candidates = [[0, 1, 2], [2, 0, 1]]
    logits = linker.logits(TEXTS[:2], spans, candidates)
    language = linker.model.language
    _, rows = text_kg_rows(language, kg, np.asarray([0, 1, 2]), SenseTexts({}, neighbour_weight=0.5))
    for text, (start, end), entities, got in zip(TEXTS, spans, candidates, logits):
        encoded = language.tokenizer(text, return_offsets_mapping=True, return_tensors="pt")
        inside = [k for k, (a, b) in enumerate(encoded["offset_mapping"][0].tolist()) if b > a and a < end and b > start]
        hidden = language(encoded["input_ids"], encoded["attention_mask"])
        q = span_mean(hidden, torch.tensor([0]), torch.tensor([inside[0]]), torch.tensor([inside[-1]]))[0]
        expected = torch.nn.functional.cosine_similarity(q[None], rows[entities]) / COSINE_TEMPERATURE
        np.testing.assert_allclose(got, expected.detach().numpy(), rtol=1e-4, atol=1e-4)
    # the head plays no part: the negated head's model links the same way
    for folder in (model_dir, negated_dir):
        found = _linked(kg, ContextLinker.from_pretrained(folder, kg, device="cpu", scorer="text+kg").link(TEXTS[:2]))
        assert [[(w, e) for w, e, _, _ in text] for text in found] == [
            [("bank", RIVER), ("river", "river.n.01")], [("bank", MONEY)]]
    with pytest.raises(ValueError, match="scorer must be one of text\\+kg, head"):
        ContextLinker(linker.model, kg, scorer="cosine")
    texts = tmp_path / "texts.txt"
    texts.write_text("\n".join(TEXTS[:2]) + "\n")
    status, summary, _ = _link(capsys, "--kg", kg_dir, "--texts", texts, "--out", tmp_path / "kg.jsonl", "--model",
                               model_dir, "--device", "cpu", "--scorer", "text+kg", "--neighbour-weight", "0.5")
    records = _records(tmp_path / "kg.jsonl")
    assert status == 0 and summary["model"]["scorer"] == "text+kg" and summary["model"]["neighbour_weight"] == 0.5
    assert [r["mentions"][0]["entity"] for r in records] == [RIVER, MONEY]
    assert records[0]["mentions"][0]["candidates"][0]["score"] == pytest.approx(
        float(np.exp(logits[0] - logits[0].max()).max() / np.exp(logits[0] - logits[0].max()).sum()), abs=1e-5)
    status, _, err = _link(capsys, "--kg", kg_dir, "--texts", texts, "--out", tmp_path / "no.jsonl", "--scorer",
                           "text+kg")
    assert status == 2 and err == ["error: --scorer: only with --model (the gazetteer alone has no probabilities)"]
    status, _, err = _link(capsys, "--kg", kg_dir, "--texts", texts, "--out", tmp_path / "no.jsonl", "--model",
                           model_dir, "--neighbour-weight", "2", "--scorer", "head")
    assert status == 2 and err == ["error: --neighbour-weight: only with --scorer text+kg (the head reads no "
                                   "neighbours or usage examples)"]
    status, _, err = _link(capsys, "--kg", kg_dir, "--texts", texts, "--out", tmp_path / "no.jsonl", "--model",
                           model_dir, "--no-usage-examples", "--scorer", "head")
    assert status == 2 and err[0].startswith("error: --no-usage-examples: only with --scorer text+kg")


def test_texts_and_targets_given_the_wrong_way_are_refused(bank):
    """One string was linked character by character; a target past its text's end or ending before
    it starts was linked as given when it had one candidate (or kept as "no candidate"); a flat list
    of targets, a float span or an entity index 1.7 failed deep inside or were read otherwise."""
    kg, _, model_dir, _ = bank
    linker = ContextLinker.from_pretrained(model_dir, kg, device="cpu")
    text = "the river bank"
    with pytest.raises(TypeError, match=r"texts: give a list of texts \(link\(\[text\]\)\), not one string"):
        linker.link(text)
    with pytest.raises(TypeError, match=r"texts\[1\]: expected a string, got NoneType"):
        linker.link([text, None])
    for start, end in ((40, 50), (9, 4), (4, 4)):
        for lemma in ("river", "zzz"):  # one candidate (was linked as given), none (was "no candidate")
            with pytest.raises(ValueError, match=rf"targets\[1\]\[0\]: span \[{start}, {end}\) is empty or outside "
                                                 r"text 1 \(length 14\)"):
                linker.link([text, text], targets=[None, [Target(start, end, lemma=lemma)]])
    with pytest.raises(TypeError, match=r"targets\[0\]: give text 0's targets as a list of Target"):
        linker.link([text], targets=[Target(4, 9, lemma="river")])
    with pytest.raises(TypeError, match=r"targets\[0\]\[0\]: start and end must be integers, got 4.0, 9"):
        linker.link([text], targets=[[Target(4.0, 9, lemma="river")]])
    with pytest.raises(ValueError, match="entity 1.7: give an entity id"):
        linker.entity_rows([1.7])
    assert torch.equal(linker.entity_rows([RIVER]), linker.entity_rows([0]))  # ids, as everywhere else
    [result] = linker.link([text], targets=[[Target(4, 9, lemma="river")]])  # a valid target links as before
    assert [(m.start, m.end, kg.entity_ids[m.entity]) for m in result.mentions] == [(4, 9, "river.n.01")]


# ----------------------------------------------------------------------------- the defaults of jaket link --model

#: the bank KG's own corpus (its usage examples): a money bank's, a river bank's, and one that is a
#: text being linked (TEXTS[0]: left out, counted)
USAGE = [("a deposit of cash in the bank", [(24, 28, MONEY)]),
         ("the bank of the stream", [(4, 8, RIVER)]),
         (TEXTS[0], [(14, 18, RIVER), (26, 31, "river.n.01")])]


def _kg_with_usage(kg, tmp_path) -> Path:
    from jaket.kg.corpus import Mention, MentionCorpus

    folder = tmp_path / "kg-with-usage"
    index = {e: i for i, e in enumerate(kg.entity_ids)}
    save_kg(kg, folder, corpus=MentionCorpus([t for t, _ in USAGE],
                                             [[Mention(a, b, index[e]) for a, b, e in ms] for _, ms in USAGE]))
    return folder


def test_jaket_link_model_defaults_to_the_text_kg_scorer(bank, tmp_path, capsys):
    """Issue 51: `jaket link --model M` with no --scorer writes the links of --scorer text+kg (the best
    measured), byte for byte, and not the head's."""
    kg, kg_dir, model_dir, _ = bank
    kg_dir = _kg_with_usage(kg, tmp_path)
    texts = tmp_path / "texts.txt"
    texts.write_text("\n".join(TEXTS) + "\n")
    outputs = {}
    for name, extra in (("default", ()), ("text+kg", ("--scorer", "text+kg")), ("head", ("--scorer", "head"))):
        status, summary, _ = _link(capsys, "--kg", kg_dir, "--texts", texts, "--out", tmp_path / f"{name}.jsonl",
                                   "--model", model_dir, "--device", "cpu", *extra)
        assert status == 0
        outputs[name] = ((tmp_path / f"{name}.jsonl").read_bytes(),
                         {k: v for k, v in summary["model"].items() if k != "seconds"})  # timings vary
    assert outputs["default"] == outputs["text+kg"] and outputs["default"][1]["scorer"] == "text+kg"
    assert outputs["head"][0] != outputs["default"][0]


def test_the_text_kg_scorer_reads_the_kgs_usage_examples(bank, tmp_path, capsys):
    """The usage examples of a KG are its corpus texts (module docstring of jaket.tasks.link_cli):
    each entity's sense text holds those that mention it, except a text being linked; the links are
    the linker's with exactly those examples, and --no-usage-examples reads none."""
    from jaket.tasks.link_cli import kg_usage_examples
    from jaket.senses.texts import SenseTexts

    kg, _, model_dir, _ = bank
    kg_dir = _kg_with_usage(kg, tmp_path)
    index = {e: i for i, e in enumerate(kg.entity_ids)}
    usage, counts = kg_usage_examples(kg_dir, kg, TEXTS, limit=128)
    assert usage == {index[MONEY]: (USAGE[0][0],), index[RIVER]: (USAGE[1][0],)}
    assert counts == {"usage_examples": 2, "usage_examples_dropped": 2}  # TEXTS[0]'s two entities
    assert kg_usage_examples(kg_dir, kg, TEXTS, limit=0)[0] == {}
    assert kg_usage_examples(tmp_path / "nowhere", kg, TEXTS, limit=128) == (
        {}, {"usage_examples": 0, "usage_examples_dropped": 0})  # a KG without a corpus has none

    texts = tmp_path / "texts.txt"
    texts.write_text("\n".join(TEXTS) + "\n")
    status, summary, _ = _link(capsys, "--kg", kg_dir, "--texts", texts, "--out", tmp_path / "usage.jsonl",
                               "--model", model_dir, "--device", "cpu")
    assert status == 0 and {k: summary["model"][k] for k in counts} == counts
    status, plain_summary, _ = _link(capsys, "--kg", kg_dir, "--texts", texts, "--out", tmp_path / "plain.jsonl",
                                     "--model", model_dir, "--device", "cpu", "--no-usage-examples")
    assert status == 0 and "usage_examples" not in plain_summary["model"]

    def expected(sense_texts):
        linker = ContextLinker.from_pretrained(model_dir, kg, device="cpu", scorer="text+kg", texts=sense_texts)
        return [[(m.start, m.end, kg.entity_ids[m.entity], round(m.score, 5)) for m in t.mentions]
                for t in linker.link(TEXTS)]

    def written(path):
        return [[(m["start"], m["end"], m["entity"], round(m["score"], 5)) for m in r["mentions"]]
                for r in _records(path)]

    assert written(tmp_path / "usage.jsonl") == expected(SenseTexts(usage))
    assert written(tmp_path / "plain.jsonl") == expected(SenseTexts({}))
    assert written(tmp_path / "usage.jsonl") != written(tmp_path / "plain.jsonl")  # the examples count


def test_model_flags_given_without_model_are_refused_even_at_their_default(bank, tmp_path, capsys):
    kg, kg_dir, _, _ = bank
    texts = tmp_path / "texts.txt"
    texts.write_text(TEXTS[0] + "\n")
    for flags in (["--scorer", "text+kg"], ["--batch-size", "64"], ["--no-usage-examples"]):
        status, _, err = _link(capsys, "--kg", kg_dir, "--texts", texts, "--out", tmp_path / "o.jsonl", *flags)
        assert status == 2 and err == [f"error: {flags[0]}: only with --model (the gazetteer alone has no "
                                       f"probabilities)"]


# ----------------------------------------------------------------------------- one default, precision, checked inputs

def test_the_python_linker_defaults_to_the_commands_scorer(bank, tmp_path, capsys):
    """Issue 55: ``ContextLinker`` without ``scorer`` is the linker of ``jaket link --model`` without
    ``--scorer`` (text+kg, the best measured): the same corpus byte for byte on a KG without usage
    examples; ``scorer="head"`` stays selectable and links otherwise; the command offers exactly the
    class's scorers."""
    import argparse

    from jaket.cli import build_parser
    from jaket.senses.linker import DEFAULT_SCORER, LINK_SCORERS, write_linked_corpus

    kg, kg_dir, model_dir, _ = bank
    default = ContextLinker.from_pretrained(model_dir, kg, device="cpu")
    assert default.scorer == DEFAULT_SCORER == "text+kg"
    texts = tmp_path / "texts.txt"
    texts.write_text("\n".join(TEXTS) + "\n")
    status, summary, _ = _link(capsys, "--kg", kg_dir, "--texts", texts, "--out", tmp_path / "command.jsonl",
                               "--model", model_dir, "--device", "cpu")
    assert status == 0 and summary["model"]["scorer"] == DEFAULT_SCORER
    python = write_linked_corpus(default.link(TEXTS), tmp_path / "python.jsonl", kg)
    assert python.read_bytes() == (tmp_path / "command.jsonl").read_bytes()
    head = write_linked_corpus(ContextLinker.from_pretrained(model_dir, kg, device="cpu", scorer="head").link(TEXTS),
                               tmp_path / "head.jsonl", kg)
    assert head.read_bytes() != python.read_bytes()

    def subparser(parser, name):
        action = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
        return action.choices[name]

    scorer_flag = next(a for a in subparser(build_parser(), "link")._actions if "--scorer" in a.option_strings)
    assert sorted(scorer_flag.choices) == sorted(LINK_SCORERS)


def _forward_precisions(linker) -> list:
    """The autocast state (None, or its dtype) seen by every module of the linker's encoder that runs
    (LM1's layers for the head's descriptions, the whole encoder for sense texts and mentions)."""
    seen = []

    def hook(module, inputs):
        seen.append(torch.get_autocast_dtype("cpu") if torch.is_autocast_enabled("cpu") else None)

    for module in linker.model.language.modules():
        module.register_forward_pre_hook(hook)
    return seen


@pytest.mark.parametrize("scorer", ["text+kg", "head"])
def test_precision_sets_the_autocast_of_the_linkers_passes(bank, scorer):
    """``precision="bf16"`` runs every pass of the encoder (the candidates' rows and the mentions)
    under bf16 autocast and still scores in float32; ``"fp32"`` turns an outer autocast off and gives
    the same logits bit for bit as no autocast at all; None leaves the caller's autocast in force
    (word-sense disambiguation's run sets it); a value outside auto / fp32 / bf16 is refused."""
    kg, _, model_dir, _ = bank
    spans = [(TEXTS[0].index("bank"), TEXTS[0].index("bank") + 4), (TEXTS[1].index("bank"), TEXTS[1].index("bank") + 4)]
    candidates = [[0, 1, 2], [2, 0, 1]]
    results, seen = {}, {}
    for precision, outer in (("fp32", False), ("fp32", True), ("bf16", False), (None, True), (None, False)):
        linker = ContextLinker.from_pretrained(model_dir, kg, device="cpu", scorer=scorer, precision=precision)
        passes = _forward_precisions(linker)
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=outer):
            logits = linker.logits(TEXTS[:2], spans, candidates)
        results[precision, outer], seen[precision, outer] = logits, set(passes)
        assert all(z.dtype == np.float64 for z in logits)
        assert linker.precision == precision
    assert seen["fp32", False] == seen["fp32", True] == seen[None, False] == {None}
    assert seen["bf16", False] == seen[None, True] == {torch.bfloat16}
    for z_fp32, z_outer_off, z_plain in zip(results["fp32", False], results["fp32", True], results[None, False]):
        assert np.array_equal(z_fp32, z_plain) and np.array_equal(z_outer_off, z_plain)
    for z_bf16, z_plain in zip(results["bf16", False], results[None, False]):
        assert not np.array_equal(z_bf16, z_plain)  # read at another precision ...
        np.testing.assert_allclose(z_bf16, z_plain, atol=0.1 if scorer == "head" else 0.5)  # ... to bf16's noise
    with pytest.raises(ValueError, match="precision must be one of auto, fp32, bf16, not 'fp16'"):
        ContextLinker.from_pretrained(model_dir, kg, device="cpu", precision="fp16")


def test_jaket_link_precision_flag(bank, tmp_path, capsys, monkeypatch):
    """``jaket link --model --precision``: fp32 (the default) writes today's corpus byte for byte;
    bf16 is recorded in the summary and keys the text-vector cache apart (a bf16 run reads none of the
    fp32 run's vectors); auto resolves as every command's does; without --model the flag is refused."""
    from jaket.model.device import choose_precision

    monkeypatch.setenv("JAKET_CACHE", str(tmp_path / "cache"))
    kg, kg_dir, model_dir, _ = bank
    texts = tmp_path / "texts.txt"
    texts.write_text("\n".join(TEXTS) + "\n")
    runs = {}
    for name, extra in (("plain", ()), ("fp32", ("--precision", "fp32")), ("bf16", ("--precision", "bf16")),
                        ("auto", ("--precision", "auto"))):
        status, summary, _ = _link(capsys, "--kg", kg_dir, "--texts", texts, "--out", tmp_path / f"{name}.jsonl",
                                   "--model", model_dir, "--device", "cpu", *extra)
        assert status == 0
        runs[name] = ((tmp_path / f"{name}.jsonl").read_bytes(), summary["model"])
    assert runs["plain"][0] == runs["fp32"][0] and runs["plain"][1]["precision"] == "fp32"
    read = runs["plain"][1]["sense_texts_read"]
    assert read > 0 and (runs["fp32"][1]["sense_texts_read"], runs["fp32"][1]["sense_texts_cached"]) == (0, read)
    assert runs["bf16"][1]["precision"] == "bf16" and runs["bf16"][0] != runs["fp32"][0]
    assert (runs["bf16"][1]["sense_texts_read"], runs["bf16"][1]["sense_texts_cached"]) == (read, 0)
    assert runs["auto"][1]["precision"] == choose_precision("auto", "cpu")
    status, _, err = _link(capsys, "--kg", kg_dir, "--texts", texts, "--out", tmp_path / "no.jsonl",
                           "--precision", "bf16")
    assert status == 2 and err == ["error: --precision: only with --model (the gazetteer alone has no probabilities)"]


def test_the_kg_may_be_a_folder_and_min_confidence_must_be_a_probability(bank, tmp_path):
    """``from_pretrained(model, "kg_dir")`` loads the KG folder (before the model: a bad KG fails
    first); the constructor, which takes loaded parts, refuses a path in one line; ``min_confidence``
    of another type or outside [0, 1] is refused naming the argument and the value."""
    from jaket.kg.errors import KGFormatError

    kg, kg_dir, model_dir, _ = bank
    expected = _linked(kg, ContextLinker.from_pretrained(model_dir, kg, device="cpu").link(TEXTS))
    for given in (str(kg_dir), Path(kg_dir)):
        linker = ContextLinker.from_pretrained(str(model_dir), given, device="cpu")
        assert isinstance(linker.kg, KnowledgeGraph) and _linked(linker.kg, linker.link(TEXTS)) == expected
    with pytest.raises(KGFormatError, match="nowhere"):  # the KG is read first: the missing model is not reached
        ContextLinker.from_pretrained(tmp_path / "no-model", tmp_path / "nowhere", device="cpu")
    with pytest.raises(TypeError, match=r"kg: give a KnowledgeGraph or a KG folder, not int"):
        ContextLinker.from_pretrained(model_dir, 5, device="cpu")
    with pytest.raises(TypeError, match=r"kg: give a KnowledgeGraph \(jaket.load_kg\(folder\)\), not str "
                                        r"\(ContextLinker.from_pretrained\(model, folder\) loads a KG folder\)"):
        ContextLinker(linker.model, str(kg_dir))
    for bad, error in (("x", TypeError), (None, TypeError), (True, TypeError), ([0.5], TypeError),
                       (2, ValueError), (-0.1, ValueError), (float("nan"), ValueError)):
        with pytest.raises(error, match=rf"min_confidence must be a number in \[0, 1\], got {re.escape(repr(bad))}"):
            linker.link(TEXTS, min_confidence=bad)
    for good in (1, np.float64(0.0), 0.5):  # an int and numpy's numbers are numbers
        assert len(linker.link(TEXTS, min_confidence=good)) == len(TEXTS)
    assert linker.link(TEXTS, min_confidence=1)[1].mentions == []  # below 1: left unlinked


def test_wsds_jaket_scorer_is_the_masked_entity_head(bank):
    """Word-sense disambiguation's ``jaket`` scorer is the masked-entity head (task 4) restricted to the
    candidates, whatever the linker's default scorer is: its scores are ``ContextLinker(scorer="head")``'s."""
    from jaket.senses.scorers import SenseExample, jaket_scores

    kg, _, model_dir, _ = bank
    spans = [(TEXTS[0].index("bank"), TEXTS[0].index("bank") + 4), (TEXTS[1].index("bank"), TEXTS[1].index("bank") + 4)]
    candidates = [(0, 1, 2), (1, 0, 2)]
    examples = [SenseExample(text, start, end, frozenset({gold}), cands, "bank")
                for text, (start, end), cands, gold in zip(TEXTS, spans, candidates, (0, 1))]
    got = jaket_scores(examples, kg, model_dir, max_length=128)["jaket"].runs[0]
    head = ContextLinker.from_pretrained(model_dir, kg, device="cpu", scorer="head").logits(TEXTS[:2], spans, candidates)
    for mine, expected in zip(got, head):
        np.testing.assert_allclose(mine, expected, rtol=1e-6, atol=1e-6)


def _longest_first() -> tuple[list[str], list[tuple[int, int]]]:
    """Texts given longest first, so that their length-sorted order is not the given one."""
    texts = sorted([*TEXTS, "bank"], key=len, reverse=True)
    return texts, [(t.index("bank"), t.index("bank") + 4) for t in texts]


def test_mentions_are_read_in_length_sorted_batches_and_put_back_in_order(bank, monkeypatch):
    """The mention pass batches texts of like length together, as the memory refresh does (a batch
    is padded to its longest text): each mention's query is the one its text gives read alone."""
    import jaket.senses.linker as linker_module

    kg, _, model_dir, _ = bank
    texts, spans = _longest_first()
    alone = ContextLinker.from_pretrained(model_dir, kg, device="cpu", batch_size=1, scorer="head")
    expected = [alone.queries([t], [s])[0] for t, s in zip(texts, spans)]
    batches, collate = [], linker_module.collate_texts
    monkeypatch.setattr(linker_module, "collate_texts",
                        lambda encoded, indices, pad: batches.append([int(i) for i in indices]) or
                        collate(encoded, indices, pad))
    linker = ContextLinker.from_pretrained(model_dir, kg, device="cpu", batch_size=3, scorer="head")
    got = linker.queries(texts, spans)
    for mine, one in zip(got, expected):
        torch.testing.assert_close(mine, one, rtol=1e-5, atol=1e-5)
    lengths = [len(ids) for ids in linker.model.language.tokenizer(texts)["input_ids"]]
    order = sorted(range(len(texts)), key=lambda i: lengths[i])
    assert batches == [order[:3], order[3:]] and order != list(range(len(texts)))


def test_wsd_context_vectors_are_read_in_length_sorted_batches(bank):
    """WSD's context vectors ``(Z_s + Z_o) / 2`` batch texts of like length too and come back in the
    examples' order: each is the text+kg linker's query of the same mention (the same mean, read alone)."""
    from jaket.senses.scorers import SenseExample, context_vectors

    kg, _, model_dir, _ = bank
    texts, spans = _longest_first()
    examples = [SenseExample(t, a, b, frozenset({0}), (0, 1), "bank") for t, (a, b) in zip(texts, spans)]
    linker = ContextLinker.from_pretrained(model_dir, kg, device="cpu", batch_size=1, scorer="text+kg")
    language, widths = linker.model.language, []
    forward = language.forward
    language.forward = lambda ids, mask, *rest, **kw: widths.append(ids.shape[1]) or forward(ids, mask, *rest, **kw)
    vectors = context_vectors(language, examples, batch_size=3, max_length=128)
    del language.forward
    lengths = sorted(len(ids) for ids in language.tokenizer(texts)["input_ids"])
    assert widths == [lengths[2], lengths[3]]  # the three shortest padded to the third, the longest alone
    assert vectors.shape == (len(texts), linker.model.hidden_size)
    for mine, t, s in zip(vectors, texts, spans):
        torch.testing.assert_close(mine, linker.queries([t], [s])[0], rtol=1e-5, atol=1e-5)


def test_jaket_link_model_says_when_it_had_nothing_to_rank(bank, tmp_path, capsys, caplog):
    """Issue 65, item 4: on texts whose every mention has one candidate, `link --model` wrote the same
    file as plain `jaket link` without a word; now it says so (and why)."""
    kg, kg_dir, model_dir, _ = bank
    texts = tmp_path / "plain.txt"
    texts.write_text("the river was wide\n")  # "river" names one entity: nothing for the model to choose
    with caplog.at_level(logging.WARNING):
        status, summary, _ = _link(capsys, "--kg", kg_dir, "--texts", texts, "--out", tmp_path / "m.jsonl",
                                   "--model", model_dir, "--device", "cpu")
    assert status == 0 and summary["model"]["scored"] == 0
    said = [r.getMessage() for r in caplog.records if "ranked no mention" in r.getMessage()]
    assert len(said) == 1 and "no mention of" in said[0] and "without --model" in said[0]
    _link(capsys, "--kg", kg_dir, "--texts", texts, "--out", tmp_path / "g.jsonl")
    assert _records(tmp_path / "m.jsonl") == _records(tmp_path / "g.jsonl") or \
        [r["mentions"] and [m["entity"] for m in r["mentions"]] for r in _records(tmp_path / "m.jsonl")] == \
        [r["mentions"] and [m["entity"] for m in r["mentions"]] for r in _records(tmp_path / "g.jsonl")]
