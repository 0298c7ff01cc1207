"""data.exclude_texts: a benchmark's sentences never reach pre-training (planted overlaps)."""

from __future__ import annotations

import json

import pytest

from jaket.kg.corpus import Mention, MentionCorpus
from jaket.kg.errors import KGFormatError
from jaket.kg.exclusion import exclude_texts, normalise_text, read_exclusion_texts

from pathlib import Path

CONFIGS = Path(__file__).resolve().parents[2] / "configs"


def _corpus() -> MentionCorpus:
    texts = ["The man's dog barked at the mailman.",
             "she sat on the river bank",
             "He deposited cash at the bank.",
             "A completely unrelated sentence.",
             "\u201cRun!\u201d, she said \u2014 and ran."]
    mentions = [[Mention(10, 13, 0)], [Mention(20, 24, 1)], [Mention(25, 29, 2)], [],
                [Mention(1, 4, 3)]]
    return MentionCorpus(texts, mentions)


def test_normalisation_ignores_case_punctuation_spacing_and_tokenisation():
    assert normalise_text("The man 's dog barked at the mailman .") == normalise_text("the man's dog barked at the mailman")
    assert normalise_text("\u201cRun ! \u201d , she said -- and ran") == normalise_text("\u201cRun!\u201d, she said \u2014 and ran.")
    assert normalise_text("bank") != normalise_text("banks")


def test_planted_wic_sentences_are_dropped_and_counted(tmp_path):
    wic = tmp_path / "train.data.txt"  # WiC's format: both sentences count, tokenised
    wic.write_text("dog\tN\t2-2\tThe man 's dog barked at the mailman .\tNothing like the corpus .\n"
                   "bank\tN\t5-3\tShe sat on the River Bank\tyet another sentence\n", encoding="utf-8")
    jsonl = tmp_path / "own.jsonl"
    jsonl.write_text(json.dumps({"text1": "Run ! , she said -- and ran", "text2": "x y", "start1": 0,
                                 "end1": 3}) + "\n", encoding="utf-8")
    corpus = _corpus()
    kept, report = exclude_texts(corpus, [wic, jsonl])
    assert kept.texts == ["He deposited cash at the bank.", "A completely unrelated sentence."]
    assert report["texts_dropped"] == 3 and report["mentions_dropped"] == 3
    assert report["matches_remaining"] == 0 and report["corpus_texts"] == 5
    assert [f["sentences"] for f in report["files"]] == [4, 2]
    assert [f["found_in_corpus"] for f in report["files"]] == [2, 1]


def test_plain_lines_and_bad_jsonl_name_the_line(tmp_path):
    plain = tmp_path / "sentences.txt"
    plain.write_text("first sentence\n\nsecond one\n", encoding="utf-8")
    assert read_exclusion_texts(plain) == ["first sentence", "second one"]
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"text": "fine"}\n{"text": \n{"label": 1}\n', encoding="utf-8")
    with pytest.raises(KGFormatError) as error:
        read_exclusion_texts(bad)
    assert str(error.value).splitlines() == [f"{bad}:2: invalid JSON: Expecting value (column 10)",
                                             f"{bad}:3: no text field (one of text, text1, text2, sentence, "
                                             f"sentence1, sentence2, question)"]
    with pytest.raises(KGFormatError, match="missing.txt: no such file"):
        read_exclusion_texts(tmp_path / "missing.txt")


def test_one_malformed_wic_line_is_an_error_not_a_file_read_as_plain_lines(tmp_path):
    """The audit's leak: one 4-column line made the whole WiC file read as plain lines, whose tabbed
    texts matched nothing, so no WiC sentence was excluded and nothing said so."""
    wic = tmp_path / "train.data.txt"
    wic.write_text("dog\tN\t2-2\tThe man 's dog barked at the mailman .\tNothing like the corpus .\n"
                   "bank\tN\t5-3\tShe sat on the River Bank\n"
                   "run\tV\tfirst\tA sentence .\tAnother one .\n", encoding="utf-8")
    with pytest.raises(KGFormatError) as error:
        exclude_texts(_corpus(), [wic])
    assert str(error.value).splitlines() == [
        f"{wic}:2: expected WiC's 5 tab-separated fields (lemma, POS, i-j, sentence1, sentence2), got 4",
        f"{wic}:3: expected WiC's 5 tab-separated fields (lemma, POS, i-j, sentence1, sentence2), got 5 "
        f"with a third field that is not i-j"]


def test_pretraining_data_excludes_the_files_and_reports_it(tmp_path):
    from jaket.kg.toy import toy_kg
    from jaket.train.build import load_kg_and_corpus
    from jaket.train.config import load_config

    _, corpus = toy_kg()
    planted = tmp_path / "benchmark.txt"
    planted.write_text(corpus.texts[0].upper() + "\n" + corpus.texts[2] + " !\n", encoding="utf-8")
    config = load_config(CONFIGS / "pretrain-tiny.yaml", [f"data.exclude_texts=[{planted}]"])
    _, kept, report = load_kg_and_corpus(config)
    assert len(kept) == len(corpus) - 2
    assert corpus.texts[0] not in kept.texts and corpus.texts[2] not in kept.texts
    assert report["excluded_texts"]["texts_dropped"] == 2
    assert report["excluded_texts"]["matches_remaining"] == 0
    assert report["texts"] == len(corpus) - 2 and report["texts_before_exclusion"] == len(corpus)


def _framework_xml(sentences: list[list[str]]) -> str:
    """The unified WSD framework's XML of tokenised sentences (the first token an instance)."""
    lines = ['<?xml version="1.0" encoding="UTF-8" ?>', '<corpus lang="en" source="planted">', '<text id="d000">']
    for s, tokens in enumerate(sentences):
        lines.append(f'<sentence id="d000.s{s:03d}">')
        for t, token in enumerate(tokens):
            if t == 0:
                lines.append(f'<instance id="d000.s{s:03d}.t000" lemma="{token.lower()}" pos="NOUN">{token}</instance>')
            else:
                lines.append(f'<wf lemma="{token.lower()}" pos="X">{token}</wf>')
        lines.append("</sentence>")
    return "\n".join(lines + ["</text>", "</corpus>", ""])


def test_the_wsd_framework_xml_is_read_by_its_sentences(tmp_path):
    xml = tmp_path / "planted.data.xml"
    xml.write_text(_framework_xml([["The", "man", "'s", "dog", "barked", "at", "the", "mailman", "."],
                                   ["Nothing", "like", "the", "corpus"]]), encoding="utf-8")
    assert read_exclusion_texts(xml) == ["The man 's dog barked at the mailman .", "Nothing like the corpus"]
    kept, report = exclude_texts(_corpus(), [xml])
    assert "The man's dog barked at the mailman." not in kept.texts and len(kept) == 4
    assert report["files"] == [{"file": str(xml), "sentences": 2, "distinct": 2, "found_in_corpus": 1}]
    broken = tmp_path / "broken.data.xml"
    broken.write_text('<corpus>\n<text id="d">\n<sentence id="s">\n<wf>x</sentence>\n</text>\n</corpus>\n')
    with pytest.raises(KGFormatError) as error:
        read_exclusion_texts(broken)
    assert str(error.value).splitlines() == [f"{broken}:4: malformed XML: mismatched tag (column 8)"]


def test_pretraining_reports_the_matches_of_a_wsd_xml(tmp_path):
    from jaket.kg.toy import toy_kg
    from jaket.train.build import load_kg_and_corpus
    from jaket.train.config import load_config

    _, corpus = toy_kg()
    planted = tmp_path / "semeval.data.xml"
    planted.write_text(_framework_xml([corpus.texts[1].replace(".", " .").split(), ["no", "such", "text"]]),
                       encoding="utf-8")
    config = load_config(CONFIGS / "pretrain-tiny.yaml", [f"data.exclude_texts=[{planted}]"])
    _, kept, report = load_kg_and_corpus(config)
    assert corpus.texts[1] not in kept.texts and len(kept) == len(corpus) - 1
    assert report["excluded_texts"]["files"] == [{"file": str(planted), "sentences": 2, "distinct": 2,
                                                  "found_in_corpus": 1}]
    assert report["excluded_texts"]["texts_dropped"] == 1 and report["excluded_texts"]["matches_remaining"] == 0
