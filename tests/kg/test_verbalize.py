"""Text from a KG that has none (issue 66): descriptions and a corpus made from the triples,
deterministic, with mentions at the right offsets; templates read or refused with their line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from jaket.cli import main
from jaket.kg.errors import KGFormatError
from jaket.kg.io import load_corpus, load_kg
from jaket.kg.sources.registry import build_source
from jaket.kg.verbalize import corpus_from_kg, describe_entities, read_phrasings

ROOT = Path(__file__).resolve().parents[2]
KB = ROOT / "examples" / "films-kb"


@pytest.fixture(scope="module")
def kb(tmp_path_factory):
    folder = tmp_path_factory.mktemp("kb") / "kg"
    assert main(["kg", "import", "triples", str(KB / "kb.txt"), "--separator", "pipe", "--out", str(folder)]) == 0
    return folder, load_kg(folder)


def test_descriptions_name_the_entity_then_its_most_informative_facts(kb):
    folder, kg = kb
    described, report = describe_entities(kg, read_phrasings(folder, kg, KB / "templates.jsonl"))
    text = dict(zip(described.entity_ids, described.entity_descriptions))
    assert report["descriptions_made_for_entities_without_one"] == kg.num_entities
    # a film's release year (one film a year here) before its director (2.5 films a director on average)
    vertigo = text["Vertigo"]
    assert vertigo.startswith("Vertigo: ")
    assert vertigo.index("was released in 1958") < vertigo.index("was directed by Alfred Hitchcock")
    assert text["Alfred Hitchcock"] == "Alfred Hitchcock: directed North by Northwest, Notorious, Rear Window, Vertigo"
    # deterministic, and cut at the word budget (a fact's names kept as many as fit)
    again, _ = describe_entities(kg, read_phrasings(folder, kg, KB / "templates.jsonl"))
    assert list(again.entity_descriptions) == list(described.entity_descriptions)
    short, _ = describe_entities(kg, read_phrasings(folder, kg, KB / "templates.jsonl"), max_words=6)
    assert all(len(d.split()) <= 6 for d in short.entity_descriptions)
    # without templates: the relation's name; an existing description is kept unless shorter than min_words
    plain, _ = describe_entities(kg)
    assert "directed by Alfred Hitchcock" in dict(zip(plain.entity_ids, plain.entity_descriptions))["Vertigo"]
    kept, report = describe_entities(plain, min_words=0)
    assert list(kept.entity_descriptions) == list(plain.entity_descriptions)
    assert report["descriptions_made_for_entities_without_one"] == 0


def test_the_corpus_says_every_triple_once_with_mentions_where_the_names_are(kb):
    folder, kg = kb
    corpus, report = corpus_from_kg(kg, read_phrasings(folder, kg, KB / "templates.jsonl"), seed=3)
    assert report["triples_said"] == kg.num_triples and len(corpus) == report["texts"]
    said = set()
    for text, mentions in zip(corpus.texts, corpus.mentions):
        head = mentions[0]
        assert head.start == 0 and text[:head.end] == kg.entity_names[head.entity]
        for mention in mentions:
            assert text[mention.start:mention.end] == kg.entity_names[mention.entity]
        said |= {(head.entity, m.entity) for m in mentions[1:]}
        assert text.endswith(".") and len(mentions) <= 4  # three facts a text at most
    assert said == {(h, t) for h, _, t in kg.triples.tolist()}
    same, _ = corpus_from_kg(kg, read_phrasings(folder, kg, KB / "templates.jsonl"), seed=3)
    other, _ = corpus_from_kg(kg, read_phrasings(folder, kg, KB / "templates.jsonl"), seed=4)
    assert same.texts == corpus.texts and other.texts != corpus.texts and sorted(other.texts) != []
    one, _ = corpus_from_kg(kg, facts_per_text=1, max_texts=5)
    assert len(one) == 5 and all(len(m) == 2 for m in one.mentions)


def test_both_sides_says_every_triple_from_its_tail_too_by_the_inverse_phrase(kb):
    folder, kg = kb
    phrasings = read_phrasings(folder, kg, KB / "templates.jsonl")
    head_only, _ = corpus_from_kg(kg, phrasings, seed=3)
    both, report = corpus_from_kg(kg, phrasings, seed=3, both_sides=True)
    assert report["triples_said"] == 2 * kg.num_triples and report["both_sides"]
    assert sorted(both.texts) != sorted(head_only.texts) and set(head_only.texts) <= set(both.texts)
    from_tail = set()
    for text, mentions in zip(both.texts, both.mentions):
        for mention in mentions:
            assert text[mention.start:mention.end] == kg.entity_names[mention.entity]
        if text in head_only.texts:
            continue
        subject = mentions[0].entity
        from_tail |= {(m.entity, subject) for m in mentions[1:]}
    assert from_tail == {(h, t) for h, _, t in kg.triples.tolist()}
    # the inverse template's phrase after the tail's name: "{tail} directed {head}"
    hitchcock = " ".join(t for t in both.texts if t.startswith("Alfred Hitchcock "))
    assert "directed Vertigo" in hitchcock and "directed Notorious" in hitchcock
    again, _ = corpus_from_kg(kg, phrasings, seed=3, both_sides=True)
    assert again.texts == both.texts


def test_the_commands_write_a_kg_and_a_corpus_pretraining_reads(kb, tmp_path, capsys):
    folder, kg = kb
    out = tmp_path / "described"
    assert main(["kg", "describe", str(folder), "--templates", str(KB / "templates.jsonl"), "--out", str(out)]) == 0
    assert main(["kg", "corpus", str(out), "--templates", str(KB / "templates.jsonl"), "--out",
                 str(out / "corpus.jsonl"), "--json"]) == 0
    printed = capsys.readouterr().out
    assert f"{kg.num_triples} of {kg.num_triples} triples" in printed
    corpus = load_corpus(out / "corpus.jsonl", load_kg(out))
    assert corpus.num_mentions == json.loads(printed[printed.index("{"):])["mentions"]
    assert build_source("dir", path=out).corpus is not None  # pre-training picks it up


def test_a_bad_template_is_refused_with_its_line(kb, tmp_path):
    folder, kg = kb
    bad = tmp_path / "templates.jsonl"
    bad.write_text('{"id": "directed_by", "template": "{head} was directed"}\n{"id": "no_such", "template": '
                   '"{head} x {tail}"}\n', encoding="utf-8")
    with pytest.raises(KGFormatError) as refused:
        read_phrasings(folder, kg, bad)
    assert [(p.line, p.message.split(" ")[0]) for p in refused.value.problems] == [(1, "template"), (2, "'no_such'")]
