"""Gazetteer entity linking (`jaket link`): matching rules, ambiguity, files and the CLI."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from jaket.cli import main as jaket_main
from jaket.kg.corpus import MentionCorpus, check_mentions
from jaket.kg.io import KGFormatError, load_corpus, load_kg, save_kg, validate_kg_dir
from jaket.kg.linking import (EntityLinker, LinkStats, Target, base_forms, inflection_bases, keeps_capitals,
                               read_texts, singular_forms, tokenize, write_corpus)
from jaket.kg.toy import toy_kg


@pytest.fixture(scope="module")
def toy_linker():
    kg, _ = toy_kg()
    return kg, EntityLinker.from_kg(kg)


def _linked(kg, linker, text: str) -> list[tuple[str, str]]:
    return [(text[m.start:m.end], kg.entity_ids[m.entity]) for m in linker.link(text)]


def test_names_and_aliases(toy_linker):
    kg, linker = toy_linker
    assert _linked(kg, linker, "The hound barked at a kitty in the woods.") == [
        ("hound", "dog"), ("kitty", "cat"), ("woods", "forest")]
    assert _linked(kg, linker, "A dog, a Cat and an EAGLE.") == [
        ("dog", "dog"), ("Cat", "cat"), ("EAGLE", "eagle")]


def test_longest_match_wins(toy_linker):
    kg, linker = toy_linker
    text = "An apple tree and an apple."
    mentions = linker.link(text)
    assert [(m.start, m.end, kg.entity_ids[m.entity]) for m in mentions] == [
        (3, 13, "apple_tree"), (21, 26, "apple")]
    # several spaces or a line break between the words still make the name
    assert _linked(kg, linker, "apple   tree") == [("apple   tree", "apple_tree")]


def test_word_boundaries(toy_linker):
    kg, linker = toy_linker
    assert _linked(kg, linker, "a category of dogma in the catalogue") == []
    assert _linked(kg, linker, "cat-like (cat) cat's \"cat\" cat.") == [("cat", "cat")] * 5
    assert _linked(kg, linker, "kitty_cat") == [("kitty", "cat"), ("cat", "cat")]


def test_plurals_link_unless_exact_forms(toy_linker):
    kg, linker = toy_linker
    assert _linked(kg, linker, "Wolves chase sheep past apple trees and dogs.") == [
        ("Wolves", "wolf"), ("sheep", "sheep"), ("apple trees", "apple_tree"), ("dogs", "dog")]
    exact = EntityLinker.from_kg(kg, inflections=False)
    assert _linked(kg, exact, "Wolves chase sheep past apple trees and dogs.") == [
        ("sheep", "sheep"), ("apple", "apple")]
    stats = LinkStats()
    linker.link("two cats", stats)
    assert stats.inflected == 1
    assert singular_forms("berries")[0] == "berry" and singular_forms("glass") == ()
    assert singular_forms("boxes")[0] == "box" and singular_forms("Geese") == ("Goose",)


def test_case_sensitive(toy_linker):
    kg, _ = toy_linker
    linker = EntityLinker.from_kg(kg, case_sensitive=True)
    assert _linked(kg, linker, "Dog and dog, Apple tree and apple tree") == [
        ("dog", "dog"), ("tree", "tree"), ("apple tree", "apple_tree")]


def test_base_forms_of_inflected_words():
    # WordNet's exception lists first (every part of speech), then the plural and -ed / -ing rules
    assert base_forms("sat") == ("sit",) and base_forms("geese") == ("goose",)
    assert base_forms("went") == ("go",) and set(base_forms("better")) == {"good", "well"}
    assert "bake" in base_forms("baked") and "stop" in base_forms("stopped") and "stop" in base_forms("stopping")
    assert base_forms("carried")[0] == "carry" and base_forms("dying")[0] == "die"
    assert "picnic" in base_forms("picnicked") and "run" in base_forms("runs")
    # no comparative rule ("corner" is no inflection of "corn"); the letter case follows the token
    assert base_forms("corner") == () and base_forms("cat") == () and base_forms("C++") == ()
    assert base_forms("Sat") == ("Sit",) and base_forms("GEESE") == ("GOOSE",)
    assert base_forms("baked", regular=False) == () and base_forms("found", regular=False) == ("find",)
    # each base with the parts of speech it is an inflection in
    assert inflection_bases("sat") == (("sit", "v"),)
    assert dict(inflection_bases("better")) == {"good": "a", "well": "ar"}
    assert dict(inflection_bases("runs"))["run"] == "nv" and dict(inflection_bases("baked"))["bake"] == "v"


def test_an_inflection_names_only_entities_of_its_parts_of_speech(make_kg):
    """Entity ids in WordNet's naming give the part of speech: "watched" (a regular -ed, a verb's)
    finds the verb watch, not the noun; "watches" (plural or third person) both; without such ids
    nothing is restricted."""
    names = ["watch", "watch", "good", "good", "well"]
    ids = ["watch.n.01", "watch.v.01", "good.n.01", "good.a.01", "well.r.01"]
    linker = EntityLinker.from_kg(make_kg(names, ids=ids))

    def candidates(linker, text):
        return [sorted(int(e) for e in s.candidates) for s in linker.candidate_spans(text)]

    assert candidates(linker, "she watched, he watches, it got better") == [[1], [0, 1], [3, 4]]
    plain = EntityLinker.from_kg(make_kg(names))
    assert candidates(plain, "she watched, it got better") == [[0, 1], [2, 3, 4]]


def test_verbs_and_irregular_forms_link_to_their_base(make_kg):
    """"sat" is the verb sit (an irregular past, WordNet's verb.exc), "baked" / "stopping" regular
    inflections; an exact form keeps its regular inflections out ("glasses" is not glass), but an
    irregular base stands beside it ("found": found and find), the exact form first."""
    kg = make_kg(["sit", "bake", "stop", "glasses", "glass", "found", "find"],
                 ["sit: be seated", "bake: cook in an oven", "stop: come to a halt", "glasses: spectacles",
                  "glass: a hard brittle substance", "found: set up or establish", "find: come upon"])
    linker = EntityLinker.from_kg(kg)
    stats = LinkStats()
    text = "She sat down, baked bread, then stopping she found her glasses."
    assert [(text[m.start:m.end], kg.entity_names[m.entity]) for m in linker.link(text, stats)] == [
        ("sat", "sit"), ("baked", "bake"), ("stopping", "stop"), ("found", "found"), ("glasses", "glasses")]
    assert stats.inflected == 3
    spans = {text[s.start:s.end]: (sorted(kg.entity_names[e] for e in s.candidates), s.inflected)
             for s in linker.candidate_spans(text)}
    assert spans["found"] == (["find", "found"], True) and spans["glasses"] == (["glasses"], False)
    # the context decides between the form and the irregular base; the inflection is counted then
    stats = LinkStats()
    [m] = linker.link("we found what we were looking for, we come upon it", stats)
    assert kg.entity_names[m.entity] == "find" and stats.inflected == 1 and stats.resolved_by_context == 1
    exact = EntityLinker.from_kg(kg, inflections=False)
    assert [kg.entity_names[m.entity] for m in exact.link(text)] == ["found", "glasses"]


def test_short_and_all_capital_forms_keep_their_capitals(make_kg, tmp_path: Path, capsys):
    """The defect found linking WordNet text: the alias "Sat" of Saturday claimed the verb "sat"."""
    assert keeps_capitals("Sat") and keeps_capitals("NASA") and keeps_capitals("C++") and keeps_capitals("Go")
    assert not keeps_capitals("Saturday") and not keeps_capitals("sat") and not keeps_capitals("New York")
    kg = make_kg(["Saturday", "sit", "NASA", "Paris", "bill", "Bill"],
                 ["the day after Friday", "be seated", "a space agency", "a city", "an invoice", "a man's name"],
                 aliases=[["Sat"], [], [], [], [], []])
    linker = EntityLinker.from_kg(kg)

    def named(linker, text):
        return [(text[s.start:s.end], sorted(kg.entity_names[e] for e in s.candidates))
                for s in linker.candidate_spans(text)]

    assert named(linker, "we sat on saturday; nasa in paris paid the bill") == [
        ("sat", ["sit"]), ("saturday", ["Saturday"]), ("paris", ["Paris"]), ("bill", ["bill"])]
    # with its capitals a short form names its entity (beside an irregular base), and in capitals too
    assert named(linker, "Sat in NASA's office, SAT, Bill") == [
        ("Sat", ["Saturday", "sit"]), ("NASA", ["NASA"]), ("SAT", ["Saturday", "sit"]), ("Bill", ["Bill", "bill"])]
    assert linker.candidates("sat") == [] and linker.candidates("Sat") == [0] and linker.candidates("BILL") == [4, 5]
    # ignore_case: every form in any case (the behaviour before); case_sensitive: every form exactly
    loose = EntityLinker.from_kg(kg, ignore_case=True)
    assert named(loose, "sat in nasa") == [("sat", ["Saturday", "sit"]), ("nasa", ["NASA"])]
    assert named(EntityLinker.from_kg(kg, case_sensitive=True), "saturday Sat sit") == [
        ("Sat", ["Saturday"]), ("sit", ["sit"])]
    with pytest.raises(ValueError, match="exclude each other"):
        EntityLinker.from_kg(kg, case_sensitive=True, ignore_case=True)
    assert loose.rules.ignore_case and not loose.rules.case_sensitive  # the rules it was built with, kept
    with pytest.raises(ValueError, match="max_ambiguity must be at least 1, got 0"):
        EntityLinker.from_kg(kg, max_ambiguity=0)
    # the command line: --ignore-case, and not with --case-sensitive
    save_kg(kg, tmp_path / "kg")
    (tmp_path / "texts.txt").write_text("we sat in nasa\n", encoding="utf-8")
    args = ["link", "--kg", str(tmp_path / "kg"), "--texts", str(tmp_path / "texts.txt"), "--out"]
    assert jaket_main(args + [str(tmp_path / "a.jsonl")]) == 0
    assert json.loads(capsys.readouterr().out)["mentions"] == 1
    assert [kg.entity_names[m.entity] for m in load_corpus(tmp_path / "a.jsonl", kg).mentions[0]] == ["sit"]
    assert jaket_main(args + [str(tmp_path / "b.jsonl"), "--ignore-case"]) == 0
    assert json.loads(capsys.readouterr().out)["mentions"] == 2
    with pytest.raises(SystemExit):
        jaket_main(args + [str(tmp_path / "c.jsonl"), "--ignore-case", "--case-sensitive"])
    assert "not allowed with argument" in capsys.readouterr().err


def test_min_length_and_stop_words(make_kg):
    kg = make_kg(["ox", "The Who", "it", "yak", "on"], ["an ox", "a band", "a pronoun", "a yak", "a word"],
                 aliases=[[], [], [], ["the"], []])
    linker = EntityLinker.from_kg(kg)
    assert [kg.entity_ids[m.entity] for m in linker.link("it is an ox, the yak of The Who")] == ["e3"]
    stats = linker.gazetteer_stats
    assert stats.skipped_short == 3 and stats.skipped_stop_words == 2 and stats.surface_forms == 1
    relaxed = EntityLinker.from_kg(kg, min_length=1, stop_words=[])
    # "the" is the yak's alias; inside "The Who" the longer name wins
    assert [kg.entity_ids[m.entity] for m in relaxed.link("it is an ox, the yak of The Who")] == [
        "e2", "e0", "e3", "e3", "e1"]


def test_short_names_are_listed_and_linked_when_asked(make_kg, tmp_path: Path, capsys, caplog):
    """"Go", "C" and "JS" are shorter than the default minimum: they are named (summary, warning),
    and linked when listed in --short-forms or with a lower --min-length."""
    kg = make_kg(["Go", "C", "Rust", "JavaScript"],
                 ["a programming language", "a programming language", "a systems language", "a web language"],
                 aliases=[[], [], [], ["JS"]])
    text = "Go and C compile, JS runs in browsers, Rust is safe."
    linker = EntityLinker.from_kg(kg)
    assert [kg.entity_ids[m.entity] for m in linker.link(text)] == ["e2"]
    stats = linker.gazetteer_stats
    assert stats.skipped_short == 3 and stats.skipped_short_forms == [
        {"entity": "e0", "form": "Go"}, {"entity": "e1", "form": "C"}, {"entity": "e3", "form": "JS"}]
    assert "3 name(s)/alias(es) shorter than 3 characters are not linked: 'Go' (e0), 'C' (e1), 'JS' (e3)" \
        in caplog.text and "--short-forms" in caplog.text
    chosen = EntityLinker.from_kg(kg, short_forms=["go", "JS"])  # case folded like the texts
    assert [kg.entity_ids[m.entity] for m in chosen.link(text)] == ["e0", "e3", "e2"]
    assert chosen.gazetteer_stats.short_forms_linked == 2
    assert chosen.gazetteer_stats.skipped_short_forms == [{"entity": "e1", "form": "C"}]
    every = EntityLinker.from_kg(kg, min_length=1)
    assert [kg.entity_ids[m.entity] for m in every.link(text)] == ["e0", "e1", "e3", "e2"]
    # the command line: the summary lists what was left out; --short-forms / --min-name-length link it
    save_kg(kg, tmp_path / "kg")
    (tmp_path / "texts.txt").write_text(text + "\n", encoding="utf-8")
    args = ["link", "--kg", str(tmp_path / "kg"), "--texts", str(tmp_path / "texts.txt"), "--out"]
    assert jaket_main(args + [str(tmp_path / "a.jsonl"), "--short-forms", "Go,JS"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["mentions"] == 3 and summary["gazetteer"]["skipped_short_forms"] == [{"entity": "e1", "form": "C"}]
    assert jaket_main(args + [str(tmp_path / "b.jsonl"), "--min-name-length", "1"]) == 0
    assert json.loads(capsys.readouterr().out)["mentions"] == 4


def test_ambiguity_by_context_then_degree(make_kg):
    kg = make_kg(["bank", "bank", "river", "money"],
                 ["bank: an institution that accepts deposits of money and lends it",
                  "bank: the sloping land beside a river or lake",
                  "river: a stream", "money: a medium of exchange"],
                 triples=[(0, 0, 3), (0, 0, 2), (0, 0, 3), (1, 0, 2)])
    linker = EntityLinker.from_kg(kg)
    assert linker.candidates("Bank") == [0, 1]
    stats = LinkStats()
    (m,) = [m for m in linker.link("We sat on the bank of the lake, by the sloping shore.", stats)]
    assert m.entity == 1
    (m,) = linker.link("She deposits her savings at the bank.", stats)
    assert m.entity == 0
    (m,) = linker.link("The bank.", stats)  # no context words: the better connected one
    assert m.entity == 0 and kg.degree()[0] > kg.degree()[1]
    assert stats.ambiguous_resolved == 3 and stats.resolved_by_context == 2
    # over the ambiguity limit: not linked, counted, and the span hides nothing shorter
    strict = EntityLinker.from_kg(kg, max_ambiguity=1)
    stats = LinkStats()
    assert [kg.entity_ids[m.entity] for m in strict.link("the bank of the river", stats)] == ["e2"]
    assert stats.too_ambiguous == 1 and stats.mentions == 1


def test_name_beats_alias_when_context_is_silent(make_kg):
    kg = make_kg(["jaguar", "panther"], ["jaguar: a car maker", "panther: a big cat"],
                 aliases=[[], ["jaguar"]], triples=[(1, 0, 1), (1, 0, 1)])
    (m,) = EntityLinker.from_kg(kg).link("a jaguar")
    assert m.entity == 0  # its name, although the alias's entity has the higher degree


_WORDS = ["apple", "tree", "apple tree", "dog", "hound", "cat", "category", "the", "sea", "seaweed",
          "kelp", "wolves", "Dogs", "-", ",", "\n", "é", "apple_tree", "kitties", "Sheep"]


def _tokens(text: str) -> list[str]:
    return [t for _, _, t in tokenize(text.lower())]


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(_WORDS), st.sampled_from(["", " ", "  ", "-", "_"])),
                max_size=20))
def test_mentions_are_disjoint_forms_on_word_boundaries(pieces):
    text = "".join(word + separator for word, separator in pieces)
    kg, _ = toy_kg()
    mentions = EntityLinker.from_kg(kg).link(text)
    check_mentions(text, mentions)  # inside the text, non-empty, disjoint
    assert [m.start for m in mentions] == sorted(m.start for m in mentions)
    for m in mentions:
        assert m.start == 0 or not text[m.start - 1].isalnum()
        assert m.end == len(text) or not text[m.end].isalnum()
        span = _tokens(text[m.start:m.end])
        forms = [_tokens(f) for f in (kg.entity_names[m.entity], *kg.entity_aliases[m.entity])]
        assert any(f == span or (f[:-1] == span[:-1] and f[-1] in base_forms(span[-1]))
                   for f in forms), (text, m)
    # nothing linkable is left: every exact name standing alone between separators is covered
    covered = np.zeros(len(text) + 1, dtype=bool)
    for m in mentions:
        covered[m.start:m.end] = True
    cursor = 0
    for word, separator in pieces:
        alone = (cursor == 0 or not text[cursor - 1].isalnum()) and \
            (cursor + len(word) == len(text) or not text[cursor + len(word)].isalnum())
        if alone and word in ("hound", "dog", "kelp", "seaweed"):
            assert covered[cursor:cursor + len(word)].all(), (text, word)
        cursor += len(word) + len(separator)


def test_scripts_without_spaces(make_kg):
    kg = make_kg(["東京都", "dog"], ["東京都: the capital", "a dog"])
    text = "我住在東京都。dog"
    assert [(text[m.start:m.end], m.entity) for m in EntityLinker.from_kg(kg).link(text)] == [
        ("東京都", 0), ("dog", 1)]


def test_link_texts_round_trip_beside_the_kg(tmp_path: Path):
    kg, corpus = toy_kg()
    save_kg(kg, tmp_path)
    linker = EntityLinker.from_kg(load_kg(tmp_path))
    stats = LinkStats()
    linked = linker.link_texts(corpus.texts + ["nothing to see here"], stats)
    assert isinstance(linked, MentionCorpus)
    assert stats.texts == len(corpus) + 1 and stats.unlinked_texts == 1
    assert stats.linked_texts == len(corpus) and stats.mentions == linked.num_mentions
    # every hand-made mention of the toy corpus is found again
    for expected, found in zip(corpus.mentions, linked.mentions):
        assert set(expected) <= set(found)
    write_corpus(linked, tmp_path / "corpus.jsonl", kg)
    assert not [p for p in validate_kg_dir(tmp_path) if p.is_error]
    assert load_corpus(tmp_path, kg) == linked


def test_cli_end_to_end(tmp_path: Path, capsys):
    kg, _ = toy_kg()
    save_kg(kg, tmp_path / "kg")
    plain = tmp_path / "texts.txt"
    plain.write_text("The hound ate meat.\n\nAn apple tree grows on the farm.\r\nNo entity here.\n",
                     encoding="utf-8")
    out = tmp_path / "kg" / "corpus.jsonl"
    status = jaket_main(["link", "--kg", str(tmp_path / "kg"), "--texts", str(plain), "--out", str(out)])
    assert status == 0
    captured = capsys.readouterr()
    summary = json.loads(captured.out)
    assert summary["texts"] == 3 and summary["blank_lines_skipped"] == 1
    assert summary["mentions"] == 4 and summary["linked_texts"] == 2 and summary["unlinked_texts"] == 1
    assert summary["gazetteer"]["surface_forms"] == 49 and "4 mentions in 2 of 3 texts" in captured.err
    records = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    assert records[0] == {"text": "The hound ate meat.", "mentions": [
        {"start": 4, "end": 9, "entity": "dog"}, {"start": 14, "end": 18, "entity": "meat"}]}
    assert records[1]["mentions"] == [{"start": 3, "end": 13, "entity": "apple_tree"},
                                      {"start": 27, "end": 31, "entity": "farm"}]
    assert not [p for p in validate_kg_dir(tmp_path / "kg") if p.is_error]
    assert load_corpus(out, load_kg(tmp_path / "kg")).num_mentions == 4
    assert not [p for p in (tmp_path / "kg").iterdir() if p.name.startswith(".corpus.jsonl.tmp")]
    # JSONL input, case-sensitive
    jsonl = tmp_path / "texts.jsonl"
    jsonl.write_text(json.dumps({"text": "Dog and dog", "id": 7}) + "\n", encoding="utf-8")
    assert jaket_main(["link", "--kg", str(tmp_path / "kg"), "--texts", str(jsonl), "--out",
                       str(tmp_path / "out.jsonl"), "--case-sensitive"]) == 0
    assert json.loads(capsys.readouterr().out)["mentions"] == 1
    assert json.loads((tmp_path / "out.jsonl").read_text())["mentions"] == [
        {"start": 8, "end": 11, "entity": "dog"}]


def test_bad_input_names_path_and_line(tmp_path: Path, capsys):
    kg, _ = toy_kg()
    save_kg(kg, tmp_path / "kg")
    bad = tmp_path / "texts.jsonl"
    bad.write_bytes(b'{"text": "a dog"}\n{"text": "a cat"\n\n[1]\n{"title": "x"}\n'
                    b'{"text": "caf\xe9"}\n{"text": 3}\n')
    out = tmp_path / "out.jsonl"
    status = jaket_main(["link", "--kg", str(tmp_path / "kg"), "--texts", str(bad), "--out", str(out)])
    assert status == 1
    err = capsys.readouterr().err.splitlines()
    assert err == [f"{bad}:2: invalid JSON: Expecting ',' delimiter (column 17)",
                   f"{bad}:4: expected a JSON object, found list",
                   f"{bad}:5: missing field 'text'",
                   f"{bad}:6: invalid UTF-8 (byte 13 of the line)",
                   f"{bad}:7: field 'text' must be a string, found int"]
    assert not out.exists()
    plain = tmp_path / "texts.txt"
    plain.write_bytes(b"a dog\n\xff\xfe\n")
    with pytest.raises(KGFormatError, match=rf"^{plain}:2: invalid UTF-8"):
        read_texts(plain)
    assert jaket_main(["link", "--kg", str(tmp_path / "kg"), "--texts", str(tmp_path / "missing.txt"),
                       "--out", str(out)]) == 1
    assert "missing.txt: cannot read" in capsys.readouterr().err
    assert jaket_main(["link", "--kg", str(tmp_path / "nokg"), "--texts", str(plain),
                       "--out", str(out)]) == 1
    assert "not a directory" in capsys.readouterr().err


def test_input_read_another_way_than_written_is_refused(tmp_path: Path):
    """JSON records in a file not named .jsonl (they would be linked as JSON text) are refused;
    targets given where nothing reads them are counted; a record whose text is blank is skipped and
    counted like a blank line."""
    records = tmp_path / "texts.json"
    records.write_text('{"text": "The dog eats meat."}\n{not json, a plain line}\n', encoding="utf-8")
    with pytest.raises(KGFormatError) as error:
        read_texts(records)
    assert str(error.value).splitlines() == [
        f"{records}:1: the line is a JSON object with a 'text'; name the file .jsonl to read its text "
        f"(plain lines are linked as written)"]
    given = tmp_path / "given.jsonl"
    given.write_text('{"text": "a dog", "targets": [{"start": 2, "end": 5}]}\n{"text": "  "}\n{"text": "x"}\n',
                     encoding="utf-8")
    plain = read_texts(given)  # targets are not read: counted, for `jaket link` to say so
    assert plain.texts == ["a dog", "x"] and plain.ignored_targets == 1 and plain.targets == []
    read = read_texts(given, targets=True)
    assert read.texts == ["a dog", "x"] and read.blank_lines == 1 and read.targets[0] == (Target(2, 5),)


def test_lazy_string_tables(tmp_path: Path):
    """A large KG loads with lazily decoded names and aliases; the gazetteer reads them in bulk."""
    kg, _ = toy_kg()
    save_kg(kg, tmp_path)
    load_kg(tmp_path)
    lazy = load_kg(tmp_path, lazy_strings=True)
    a, b = EntityLinker.from_kg(kg), EntityLinker.from_kg(lazy)
    text = "the hound and the kitty under an apple tree by the sea"
    assert a.link(text) == b.link(text) and len(a.link(text)) == 4
    assert a.gazetteer_stats == b.gazetteer_stats
