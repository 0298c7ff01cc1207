"""WordNet 3.0 as the embedded default KG: parser, inflection-aware mentions, subsets, round trip."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from jaket.cli import main
from jaket.kg.io import load_corpus, load_kg, save_kg, validate_kg_dir
from jaket.kg.sources import wordnet as wn
from jaket.kg.sources import wordnet_db, wordnet_forms
from jaket.kg.sources.wordnet import (WordNetError, build_wordnet, find_mention, lemma_forms,
                                      synset_offsets_index)

# --------------------------------------------------------------------------- a tiny fake WordNet

_HEADER = "  1 This software and database is being provided to you, the LICENSEE\n"


@pytest.fixture()
def tiny_wordnet(tmp_path: Path) -> Path:
    """Five synsets in the Princeton format (CRLF line ends, as the bundled files have)."""
    folder = tmp_path / "wordnet"
    folder.mkdir()
    files = {
        "lexnames": "00\tadj.all\t3\n02\tadv.all\t4\n03\tnoun.Tops\t1\n05\tnoun.animal\t1\n"
                    "30\tverb.change\t2\n32\tverb.communication\t2\n",
        "data.noun": _HEADER
        + "00000010 05 n 02 dog 0 domestic_dog 0 001 @ 00000020 n 0000 | a domesticated canine; "
          '"the dog slept all night"; "my pet is a cat"\n'
        + "00000020 05 n 01 canine 0 001 ~ 00000010 n 0000 | a carnivore of the dog family\n"
        + '00000030 03 n 01 dog 1 000 | a contemptible man; "you dirty dogs"\n',
        "data.verb": _HEADER
        + "00000100 32 v 01 bark 0 001 + 00000010 n 0101 01 + 02 00 | make barking sounds; "
          '"the hounds barked at the stranger"\n'
        + '00000110 30 v 01 go 0 000 01 + 01 00 | move away; "she went home early"\n',
        "data.adj": _HEADER, "data.adv": _HEADER,
        "index.noun": _HEADER + "canine n 1 1 ~ 1 0 00000020\ndog n 2 1 @ 2 0 00000010 00000030\n"
                                "domestic_dog n 1 1 @ 1 0 00000010\n",
        "index.verb": _HEADER + "bark v 1 1 + 1 0 00000100\ngo v 1 0 1 0 00000110\n",
        "index.adj": _HEADER, "index.adv": _HEADER,
        "verb.exc": "went go\n", "noun.exc": "", "adj.exc": "", "adv.exc": "",
    }
    for name, text in files.items():
        (folder / name).write_bytes(text.replace("\n", "\r\n").encode())
    return folder


def test_parser_on_a_tiny_database(tiny_wordnet):
    kg, corpus, report = build_wordnet(directory=tiny_wordnet)
    assert list(kg.entity_ids) == ["dog.n.01", "canine.n.01", "dog.n.02", "bark.v.01", "go.v.01"]
    dog = kg.entity_index("dog.n.01")
    assert kg.entity_names[dog] == "dog" and list(kg.entity_aliases[dog]) == ["domestic dog"]
    assert kg.entity_descriptions[dog] == "dog, domestic dog: a domesticated canine"
    assert kg.category_names[kg.entity_category[dog]] == "noun.animal"
    assert kg.category_names[kg.entity_category[kg.entity_index("dog.n.02")]] == "noun.Tops"
    # hypernym (@) and hyponym (~) fold into one triple; the lexical "+" lifts to the synsets
    triples = {(kg.entity_ids[h], kg.relation_ids[r], kg.entity_ids[t]) for h, r, t in kg.triples.tolist()}
    assert triples == {("dog.n.01", "hypernym", "canine.n.01"),
                       ("dog.n.01", "derivationally_related_form", "bark.v.01")}
    assert report["wordnet"]["duplicate_triples_merged"] == 1
    # corpus: inflected forms (plural, -ed, irregular from verb.exc); the cat example is reported
    found = {corpus.texts[i][m.start:m.end]: kg.entity_ids[m.entity]
             for i, ms in enumerate(corpus.mentions) for m in ms}
    assert found == {"dog": "dog.n.01", "dogs": "dog.n.02", "barked": "bark.v.01", "went": "go.v.01"}
    assert report["examples"] == 5 and report["mentions"] == 4
    assert report["examples_without_mention"] == 1
    assert report["examples_without_mention_sample"][0]["text"] == "my pet is a cat"
    assert "my pet is a cat" not in corpus.texts


def test_malformed_data_line_names_file_and_line(tiny_wordnet):
    path = tiny_wordnet / "data.noun"
    path.write_text(path.read_text() + "00000040 05 n zz broken\n")
    with pytest.raises(WordNetError, match=r"data\.noun:5: malformed synset line"):
        build_wordnet(directory=tiny_wordnet)


# --------------------------------------------------------------------------- inflection


@pytest.mark.parametrize("lemma, pos, expected", [
    ("bark", "v", {"bark", "barks", "barked", "barking"}),
    ("stop", "v", {"stopped", "stopping", "stops"}),
    ("carry", "v", {"carried", "carries", "carrying"}),
    ("make", "v", {"making", "makes"}),
    ("die", "v", {"dying", "died"}),
    ("panic", "v", {"panicked", "panicking"}),
    ("big", "a", {"bigger", "biggest"}),
    ("happy", "s", {"happier", "happiest"}),
    ("fly", "n", {"flies"}),
    ("box", "n", {"boxes"}),
    ("look_up", "v", {"look up", "looked up", "looking up", "looks up"}),
    ("well-known", "a", {"well known"}),
    ("attorney_general", "n", {"attorneys general", "attorney generals"}),
])
def test_regular_inflections(lemma, pos, expected):
    assert expected <= lemma_forms(lemma, pos)


def test_irregular_forms_come_from_the_exception_lists():
    exceptions = wordnet_db._read_exceptions(wn.load_wordnet_data().directory)
    assert {"went", "gone"} <= lemma_forms("go", "v", exceptions["v"])
    assert "mice" in lemma_forms("mouse", "n", exceptions["n"])
    assert "better" in lemma_forms("good", "a", exceptions["a"])
    assert "broke down" in lemma_forms("break_down", "v", exceptions["v"])


def test_find_mention_respects_word_boundaries_and_prefers_the_longest():
    forms = lemma_forms("bark", "v")
    assert find_mention("The dogs barked at the stranger", forms) == (9, 15)
    assert find_mention("They embark at dawn", forms) is None
    text = "A Domestic-Dog sleeps; the dog wakes"
    start, end = find_mention(text, lemma_forms("domestic_dog", "n") | lemma_forms("dog", "n"))
    assert text[start:end] == "Domestic-Dog"


# --------------------------------------------------------------------------- the real WordNet


def test_roots_subset_is_the_hyponym_closure():
    kg, corpus, report = build_wordnet(roots=["dog.n.01"])
    dog = kg.entity_index("dog.n.01")
    assert kg.entity_names[dog] == "dog"
    assert list(kg.entity_aliases[dog]) == ["domestic dog", "Canis familiaris"]
    assert kg.entity_descriptions[dog].startswith(
        "dog, domestic dog, Canis familiaris: a member of the genus Canis")
    assert kg.category_names == ["noun.animal"]
    for name in ("puppy.n.01", "poodle.n.01", "dalmatian.n.02"):
        kg.entity_index(name)  # in the closure (KeyError otherwise)
    assert "cat.n.01" not in set(kg.entity_ids)
    # every entity reaches dog.n.01 by hypernym edges inside the subset
    hypernym = kg.relation_index("hypernym")
    parents: dict[int, list[int]] = {}
    for h, r, t in kg.triples.tolist():
        if r == hypernym:
            parents.setdefault(h, []).append(t)
    for entity in range(kg.num_entities):
        seen, frontier = {entity}, [entity]
        while frontier and dog not in seen:
            frontier = [p for v in frontier for p in parents.get(v, []) if p not in seen]
            seen.update(frontier)
        assert dog in seen, kg.entity_ids[entity]
    assert report["entities"] == kg.num_entities and report["mentions"] == corpus.num_mentions
    assert report["examples"] == len(corpus) + report["examples_without_mention"]
    # with max_entities the closure is cut in breadth-first order: the roots and their children first
    small, _, _ = build_wordnet(roots=["dog.n.01", "cat.n.01"], max_entities=12)
    assert small.num_entities == 12 and {"dog.n.01", "cat.n.01"} <= set(small.entity_ids)


def test_barked_is_found_for_bark_v_04():
    kg, corpus, report = build_wordnet(roots=["bark.v.04"])
    bark = kg.entity_index("bark.v.04")
    spans = {corpus.texts[i][m.start:m.end] for i, ms in enumerate(corpus.mentions) for m in ms
             if m.entity == bark and corpus.texts[i] == "The dogs barked at the stranger"}
    assert spans == {"barked"}
    assert kg.entity_descriptions[bark].startswith("bark: make barking sounds")


def test_example_without_any_lemma_form_is_reported():
    kg, corpus, report = build_wordnet(roots=["alienation.n.04"])
    texts = [s["text"] for s in report["examples_without_mention_sample"]]
    assert "his behavior alienated the other students" in texts
    assert "his behavior alienated the other students" not in corpus.texts
    assert report["examples_without_mention"] >= 1


def test_mentions_are_lemma_forms_of_their_entity():
    kg, corpus, _ = build_wordnet(max_entities=1500, seed=2)
    exceptions = wordnet_db._read_exceptions(wn.load_wordnet_data().directory)
    assert len(corpus) > 300
    kinds = set()
    for text, ms in zip(corpus.texts, corpus.mentions):
        (m,) = ms
        surface = wordnet_forms._normalise(text[m.start:m.end])
        pos = kg.entity_ids[m.entity].split(".")[-2]
        kinds.add(pos)
        table = exceptions["a" if pos == "s" else pos]
        forms = set().union(*(lemma_forms(lemma, pos, table)
                              for lemma in [kg.entity_names[m.entity], *kg.entity_aliases[m.entity]]))
        assert surface in forms, (text, surface)
    assert {"n", "v"} <= kinds


def test_unknown_root_is_a_clear_error():
    with pytest.raises(WordNetError, match=r"unknown WordNet synset 'dog\.n\.99'.*dog\.n\.01"):
        build_wordnet(roots=["dog.n.99"])


def test_max_entities_subset_is_deterministic_connected_and_varied():
    kg, corpus, report = build_wordnet(max_entities=600, seed=0)
    again, _, _ = build_wordnet(max_entities=600, seed=0)
    other, _, _ = build_wordnet(max_entities=600, seed=1)
    assert kg.num_entities == 600 and kg == again and list(other.entity_ids) != list(kg.entity_ids)
    assert kg.num_categories >= 5 and report["categories"] == kg.num_categories
    assert (kg.entity_category >= 0).all()
    assert (kg.degree() == 0).mean() < 0.01
    assert kg.num_triples >= kg.num_entities - 1
    assert all(0 <= m.entity < kg.num_entities for ms in corpus.mentions for m in ms)
    assert report["examples"] == len(corpus) + report["examples_without_mention"]


def test_subset_round_trips_through_the_directory_format(tmp_path):
    kg, corpus, _ = build_wordnet(max_entities=300, seed=3)
    save_kg(kg, tmp_path, corpus=corpus)
    assert validate_kg_dir(tmp_path) == []
    loaded = load_kg(tmp_path)
    assert loaded == kg
    assert load_corpus(tmp_path, loaded) == corpus


def test_synset_offsets_index():
    index = synset_offsets_index()
    assert index[(2084071, "n")] == "dog.n.01"
    satellite = index[(14358, "a")]  # "abounding, galore(ip)" is a satellite adjective
    assert satellite.split(".")[1] == "s" and index[(14358, "s")] == satellite


def test_relations_have_descriptions_and_inverse_pairs_are_stored_once():
    kg, _, report = build_wordnet(roots=["dog.n.01"])
    assert len(set(kg.relation_ids)) == kg.num_relations == len(wn.RELATIONS)
    assert all(d.endswith(".") and len(d.split()) >= 6 for d in kg.relation_descriptions)
    assert "hyponym" not in kg.relation_ids and "part_meronym" not in kg.relation_ids
    triples = {tuple(x) for x in kg.triples.tolist()}
    assert not any((t, r, h) in triples for h, r, t in triples)


# --------------------------------------------------------------------------- the command


def test_build_wordnet_command(tmp_path, capsys):
    out = tmp_path / "dogs"
    assert main(["kg", "build", "wordnet", "--roots", "dog.n.01", "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert str(out) in printed and "190 entities" in printed
    report = json.loads((out / "build-report.json").read_text())
    assert report["entities"] == 190 and report["selection"]["roots"] == ["dog.n.01"]
    assert validate_kg_dir(out) == []
    assert load_kg(out).num_entities == 190


def test_build_wordnet_command_unknown_root(tmp_path, capsys):
    status = main(["kg", "build", "wordnet", "--roots", "nosuch.n.01", "--out", str(tmp_path / "x")])
    err = capsys.readouterr().err
    assert status == 1 and "error: unknown WordNet synset 'nosuch.n.01'" in err
    assert "Traceback" not in err
    assert not (tmp_path / "x").exists()


@pytest.mark.slow
def test_full_wordnet(tmp_path, capsys):
    out = tmp_path / "wordnet"
    assert main(["kg", "build", "wordnet", "--out", str(out)]) == 0
    capsys.readouterr()
    assert main(["kg", "stats", str(out), "--json"]) == 0
    stats = json.loads(capsys.readouterr().out)
    assert stats["entities"] == 117_659
    assert stats["categories"] == 45 and stats["entities_with_category"] == 117_659
    assert stats["relations"] == len(wn.RELATIONS)
    assert stats["corpus_mentions"] >= 45_000 and stats["corpus_texts"] == stats["corpus_mentions"]
    report = json.loads((out / "build-report.json").read_text())
    assert report["examples"] == 48_339
    assert report["examples_without_mention"] == 48_339 - stats["corpus_mentions"]
    assert report["triples"] == stats["triples"] == int(np.sum(list(report["triples_per_relation"].values())))
    assert all(count > 0 for count in report["triples_per_relation"].values())
    assert [p for p in validate_kg_dir(out) if p.is_error] == []
