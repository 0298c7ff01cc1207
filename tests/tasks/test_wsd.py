"""Word-sense disambiguation on a hand-written mini corpus in the unified framework's format, over
WordNet's senses of its words: the files are read (and bad ones named by line), every scorer runs
on the same targets, the scores are the framework's (recounted by hand), the key files are what its
scorer reads, the paired differences and the sense-order prior are there."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch

from jaket.kg.errors import KGFormatError

#: (sentence tokens, {token index: (instance lemma, pos)})
_SENTENCES = [
    (["He", "deposited", "the", "money", "in", "the", "bank", "."],
     {1: ("deposit", "VERB"), 6: ("bank", "NOUN")}),
    (["The", "plant", "grew", "on", "the", "bank", "of", "the", "river", "."],
     {1: ("plant", "NOUN"), 5: ("bank", "NOUN")}),
    (["She", "pointed out", "the", "xyzzyx", "."], {1: ("point_out", "VERB"), 3: ("xyzzyx", "NOUN")}),
    (["They", "bank", "on", "it", "."], {1: ("bank", "VERB")}),
]
#: instance id -> gold sense key; the comment says what WordNet's first sense does with it
_GOLD = {
    "d000.s000.t000": "deposit%2:35:00::",  # deposit.v's sense 1: first sense right
    "d000.s000.t001": "bank%1:14:00::",  # the financial institution, sense 2: first sense wrong
    "d000.s001.t000": "plant%1:03:00::",  # flora, sense 2: wrong
    "d000.s001.t001": "bank%1:17:01::",  # sloping land, sense 1: right
    "d000.s002.t000": "point_out%2:32:01::",  # sense 1: right
    "d000.s002.t001": "bank%1:04:00::",  # a lemma without any candidate: no answer
    "d000.s003.t000": "bank%1:17:01::",  # a noun sense of a verb: the gold is not among the candidates
}


def _xml(sentences=_SENTENCES) -> str:
    lines = ['<?xml version="1.0" encoding="UTF-8" ?>', '<corpus lang="en" source="mini">', '<text id="d000">']
    for s, (tokens, instances) in enumerate(sentences):
        lines.append(f'<sentence id="d000.s{s:03d}">')
        count = 0
        for t, token in enumerate(tokens):
            if t in instances:
                lemma, pos = instances[t]
                lines.append(f'<instance id="d000.s{s:03d}.t{count:03d}" lemma="{lemma}" pos="{pos}">{token}</instance>')
                count += 1
            else:
                lines.append(f'<wf lemma="{token.lower()}" pos="X">{token}</wf>')
        lines.append("</sentence>")
    return "\n".join(lines + ["</text>", "</corpus>", ""])


@pytest.fixture()
def mini(tmp_path) -> Path:
    data = tmp_path / "mini.data.xml"
    data.write_text(_xml(), encoding="utf-8")
    (tmp_path / "mini.gold.key.txt").write_text("".join(f"{i} {k}\n" for i, k in _GOLD.items()), encoding="utf-8")
    return data


@pytest.fixture(scope="module")
def sense_kg(tmp_path_factory):
    """Every WordNet synset of the mini corpus's words and their neighbours (the candidates are then
    exactly WordNet's), saved as a KG folder for the command line."""
    from jaket.kg.io import save_kg
    from jaket.kg.sources.wordnet import full_wordnet_kg, sense_order
    from jaket.senses.graph import neighbourhood

    full = full_wordnet_kg()
    position = {e: i for i, e in enumerate(full.entity_ids)}
    order = sense_order()
    senses = [position[s] for word in ("bank", "plant", "point out", "deposit") for pos in "nvar"
              for s in order.get((word, pos), [])]
    kg, _ = full.induced_subgraph(neighbourhood(full, senses, 1))
    folder = tmp_path_factory.mktemp("sense-kg") / "kg"
    save_kg(kg, folder)
    return kg, folder


def test_the_framework_files_are_read_with_spans_lemmas_and_gold_synsets(mini):
    from jaket.tasks.word_sense.data import load_wsd

    instances = load_wsd(mini)  # the key file beside it is found
    assert [i.id for i in instances] == list(_GOLD)
    first = instances[1]
    assert first.text == "He deposited the money in the bank ." and first.text[first.start:first.end] == "bank"
    assert (first.lemma, first.pos, first.gold) == ("bank", "n", ("depository_financial_institution.n.01",))
    pointed = instances[4]
    assert pointed.text[pointed.start:pointed.end] == "pointed out" and pointed.lemma == "point out"
    assert pointed.pos == "v" and pointed.gold == ("comment.v.01",)
    assert load_wsd(mini, gold=None)[3].gold == ("bank.n.01",)


def test_bad_input_is_one_line_each(tmp_path, mini):
    from jaket.tasks.word_sense.data import load_wsd

    broken = tmp_path / "broken.data.xml"
    broken.write_text(_xml().replace('pos="VERB">deposited</instance>', 'pos="VERB">deposited</wf>'))
    with pytest.raises(KGFormatError) as error:
        load_wsd(broken)
    assert str(error.value).splitlines() == [f"{broken}:6: malformed XML: mismatched tag (column 69)"]

    misplaced = tmp_path / "misplaced.data.xml"
    misplaced.write_text(_xml().replace('<instance id="d000.s003.t000" lemma="bank" pos="VERB">',
                                        '<instance id="d000.s000.t000" lemma="bank" pos="PRON">')
                         .replace('<wf lemma="they" pos="X">They</wf>', '<wf>They<wf>x</wf></wf>'))
    with pytest.raises(KGFormatError) as error:
        load_wsd(misplaced)
    assert str(error.value).splitlines() == [
        f"{misplaced}:34: <wf> inside <wf>: a token holds text only",
        f"{misplaced}:35: <instance> d000.s000.t000: part of speech 'PRON' is not one of NOUN, VERB, ADJ, ADV"]

    keys = tmp_path / "bad.gold.key.txt"
    keys.write_text("d000.s000.t000 deposit%2:35:00::\nd009.s000.t000 bank%1:14:00::\n"
                    "d000.s000.t001 bank%1:99:00:: bank%1:14:00::\nd000.s000.t000 deposit%2:35:00::\nlonely\n")
    with pytest.raises(KGFormatError) as error:
        load_wsd(mini, keys)
    assert str(error.value).splitlines() == [
        f"{keys}:2: instance 'd009.s000.t000' is not in the data",
        f"{keys}:3: unknown WordNet 3.0 sense key(s) 'bank%1:99:00::'",
        f"{keys}:4: instance d000.s000.t000 given twice (first at line 1)",
        f"{keys}:5: expected 'instance-id sense-key [sense-key ...]', got 'lonely'"]

    jsonl = tmp_path / "bad.jsonl"
    jsonl.write_text(json.dumps({"id": "a", "text": "the bank", "start": 4, "end": 8, "lemma": "bank", "pos": "noun",
                                 "gold": ["bank%1:17:01::"]}) + "\n"
                     + json.dumps({"id": "b", "text": "x", "start": 0, "end": 5, "lemma": "x", "pos": "q"}) + "\n"
                     + json.dumps({"id": "a", "text": "y", "start": 0, "end": 1, "lemma": "y", "pos": "n"}) + "\n")
    with pytest.raises(KGFormatError) as error:
        load_wsd(jsonl)
    assert str(error.value).splitlines() == [
        f"{jsonl}:2: span [0, 5) is not a non-empty span of the text (length 1)",
        f"{jsonl}:2: unknown part of speech 'q' (one of n, v, a, r or NOUN, VERB, ADJ, ADV)",
        f"{jsonl}:3: id a given twice (first at line 1)"]


def test_our_jsonl_takes_sense_keys_or_entity_ids(tmp_path):
    from jaket.tasks.word_sense.data import load_wsd

    path = tmp_path / "targets.jsonl"
    path.write_text(json.dumps({"id": "a", "text": "the river bank", "start": 10, "end": 14, "lemma": "bank",
                                "pos": "NOUN", "gold": ["bank%1:17:01::", "bank.n.03"]}) + "\n"
                    + json.dumps({"id": "b", "text": "they bank", "start": 5, "end": 9, "lemma": "bank", "pos": "v"})
                    + "\n")
    a, b = load_wsd(path)
    assert (a.pos, a.gold) == ("n", ("bank.n.01", "bank.n.03")) and (b.pos, b.gold) == ("v", ())


def test_every_scorer_runs_on_the_same_targets_with_the_frameworks_scores(mini, sense_kg, tiny_bert_dir,
                                                                          tiny_jaket_dir, tmp_path):
    from jaket.tasks.word_sense.job import WordSenseConfig
    from jaket.tasks.word_sense.run import run_wsd
    from jaket.tasks.word_sense.data import load_wsd

    kg, _ = sense_kg
    config = WordSenseConfig(encoder=tiny_bert_dir, pretrained=tiny_jaket_dir, seeds=(0, 1),
                             description_max_length=16, first_sense_prior=(0.5, 1000.0), bootstrap=200)
    out = tmp_path / "out"
    results = run_wsd(load_wsd(mini), kg, config, out)
    counts = results["data"]
    assert (counts["instances"], counts["with_gold"], counts["without_candidates"],
            counts["gold_not_among_candidates"]) == (7, 7, 1, 1)
    assert counts["without_candidates_named"] == ["d000.s002.t001 xyzzyx (NOUN)"]
    scorers = results["scorers"]
    assert list(scorers)[:7] == ["first sense", "random", "lesk", "lm", "lm+g+m", "jaket", "jaket (cosine)"]
    # first sense: right on 3 of the 6 answered targets, 7 with gold (by hand, see _GOLD)
    first = scorers["first sense"]
    assert (first["precision"], first["recall"], first["f1"]) == pytest.approx((3 / 6, 3 / 7, 6 / 13))
    assert first["by_pos"]["NOUN"]["f1"] == pytest.approx(2 / 7) and first["by_pos"]["VERB"]["f1"] == pytest.approx(2 / 3)
    # jaket link's rule reads "money" in the financial institution's gloss
    lesk = dict(line.split() for line in (out / "lesk.key.txt").read_text().splitlines())
    assert lesk["d000.s000.t001"] == "bank%1:14:00::"
    first_keys = (out / "first-sense.key.txt").read_text().splitlines()
    assert first_keys[:2] == ["d000.s000.t000 deposit%2:35:00::", "d000.s000.t001 bank%1:17:01::"]
    assert len(first_keys) == 6  # the target without a candidate has no answer
    assert scorers["lm+g+m"]["seeds"] == [0, 1] and len(scorers["lm+g+m"]["runs"]) == 2
    assert {"lm+g+m.seed0.key.txt", "lm+g+m.seed1.key.txt", "jaket.key.txt"} <= {p.name for p in out.iterdir()}
    assert not (out / "random.key.txt").exists()
    # a prior of overwhelming weight is the first sense; the scorers alone are reported beside it
    assert scorers["jaket + prior 1000"]["f1"] == pytest.approx(first["f1"])
    assert (out / "jaket.prior-1000.key.txt").read_text().splitlines() == first_keys
    paired = results["paired"]
    assert paired["jaket - first sense"]["mean"] == pytest.approx(scorers["jaket"]["f1"] - first["f1"])
    assert paired["jaket - first sense"]["ci_low"] <= paired["jaket - first sense"]["mean"] <= \
        paired["jaket - first sense"]["ci_high"]
    assert paired["jaket - lm+g+m"]["seeds"] == [0, 1]
    assert paired["jaket - lm+g+m"]["values"] == pytest.approx([scorers["jaket"]["f1"] - r["f1"]
                                                                for r in scorers["lm+g+m"]["runs"]])
    report = (out / "report.md").read_text()
    assert "1 without a candidate sense" in report and "sense-order prior (w = 0.5)" in report
    assert json.loads((out / "metrics.json").read_text())["scorers"]["random"]["f1"] == pytest.approx(
        scorers["random"]["f1"])


def test_the_command_runs_on_a_kg_folder(mini, sense_kg, tiny_bert_dir, tmp_path, capsys):
    from jaket.cli import main

    _, folder = sense_kg
    out = tmp_path / "cli"
    assert main(["evaluate", "word-sense-disambiguation", "--data", str(mini), "--kg", str(folder),
                 "--encoder", str(tiny_bert_dir), "--variants", "lm", "--set", "description_max_length=16",
                 "--out", str(out), "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["scorers"]["first sense"] == pytest.approx(6 / 13) and set(summary["scorers"]) == {
        "first sense", "random", "lesk", "lm", "lm (text)", "lm (text + kg)"}
    assert summary["data"]["gold"] == str(mini.with_name("mini.gold.key.txt"))
    assert (out / "lm.key.txt").is_file()


def test_the_pipeline_runs_the_commands_runner_with_its_scores(mini, sense_kg, tiny_bert_dir, tmp_path, capsys):
    """``pipeline("word-sense-disambiguation")`` calls the command's runner (no argv): the same
    scores, one row per scorer (per seed for lm+g+m's fresh KM), no model, nothing written without
    ``out``."""
    from jaket.cli import main
    from jaket.pipelines import pipeline
    from jaket.tasks.results import TaskResult

    _, folder = sense_kg
    out = tmp_path / "cli"
    assert main(["evaluate", "word-sense-disambiguation", "--data", str(mini), "--kg", str(folder),
                 "--encoder", str(tiny_bert_dir), "--variants", "lm,lm+g+m", "--seeds", "2", "--set",
                 "description_max_length=16", "--set", "bootstrap=200", "--out", str(out), "--json"]) == 0
    command = json.loads(capsys.readouterr().out)
    result = pipeline("word-sense-disambiguation", encoder=tiny_bert_dir, variants=["lm", "lm+g+m"], seeds=2,
                      description_max_length=16, bootstrap=200, data__path=mini, data__kg=folder)
    assert result.task == "word-sense-disambiguation" and result.finetuned is None
    assert result.summary["scorers"] == command["scorers"] and set(result.paired) == set(command["paired"])
    assert {k: v["mean"] for k, v in result.paired.items()} == {k: v["mean"] for k, v in command["paired"].items()}
    assert result.rows() == TaskResult.from_metrics(out).rows()
    frame = result.to_dataframe()
    assert list(frame["variant"]) == ["first sense", "random", "lesk", "lm", "lm+g+m", "lm+g+m", "lm (text)",
                                      "lm (text + kg)"]
    assert list(frame[frame["variant"] == "lm+g+m"]["seed"]) == [0, 1]
    rules = frame[frame["variant"] != "lm+g+m"]
    assert dict(zip(rules["variant"], rules["f1"])) == {k: command["scorers"][k] for k in rules["variant"]}
    assert sorted(p.name for p in tmp_path.iterdir()) == ["cli", "mini.data.xml", "mini.gold.key.txt"]


def test_the_shipped_config_lists_every_key_with_its_default():
    import dataclasses as dc

    from jaket.tasks.config import load_task_config, read_yaml_mapping
    from jaket.tasks.word_sense.job import WordSenseJob

    path = Path(__file__).resolve().parents[2] / "configs" / "evaluate-word-sense-disambiguation.yaml"
    assert load_task_config(WordSenseJob, path, ["data.path=X.data.xml"]) == WordSenseJob(
        data=dc.replace(WordSenseJob().data, path=Path("X.data.xml")))
    assert set(read_yaml_mapping(path)) == {f.name for f in dc.fields(WordSenseJob)}
    assert set(read_yaml_mapping(path)["data"]) == {f.name for f in dc.fields(WordSenseJob().data)}


def test_the_bootstrap_interval_is_paired():
    from jaket.tasks import report as rep

    rng = np.random.default_rng(0)
    a = rng.random(200)
    same = rep.paired_bootstrap(a, a, lambda x: x.mean(axis=-1), rounds=500)
    assert same["mean"] == same["ci_low"] == same["ci_high"] == 0.0
    shifted = rep.paired_bootstrap(a + 0.1, a, lambda x: x.mean(axis=-1), rounds=500)
    assert shifted["ci_low"] == pytest.approx(0.1) and shifted["ci_high"] == pytest.approx(0.1)
    noisy = rep.paired_bootstrap(rng.random(200), a, lambda x: x.mean(axis=-1), rounds=500)
    assert noisy["ci_low"] < noisy["mean"] < noisy["ci_high"]


def test_key_file_names_are_clean_for_every_scorer_and_prior():
    from jaket.senses.scorers import SCORERS
    from jaket.tasks.word_sense.run import key_file_name

    assert key_file_name("jaket (cosine) + prior 0.5") == "jaket-cosine.prior-0.5"
    names = [key_file_name(s) for s in SCORERS] + [key_file_name(f"{s} + prior 2") for s in SCORERS]
    assert len(set(names)) == len(names)
    assert all("-." not in n and ".-" not in n and not n.startswith("-") and not n.endswith("-") for n in names)


def test_the_text_scorers_read_each_sense_and_its_kg_neighbours(mini, sense_kg, tiny_bert_dir):
    """``(text)``: the word in context against each candidate's names, description and usage
    examples read as a sentence; ``(text + kg)``: plus β times the mean of its KG neighbours'
    vectors (one uniform message-passing step); β = 0 is the text alone."""
    from jaket.model.language import SplitLanguageModel
    from jaket.senses.texts import SenseTexts, kg_neighbours, sense_text, text_kg_rows, text_vectors

    kg, _ = sense_kg
    bank = kg.entity_ids.index("bank.n.01")
    assert sense_text(kg, bank) == f"{', '.join(dict.fromkeys([kg.entity_names[bank], *kg.entity_aliases[bank]]))}: " \
        + kg.entity_descriptions[bank].split(": ", 1)[1]
    assert sense_text(kg, bank, ("they sat on the bank",)).endswith("; they sat on the bank")
    language = SplitLanguageModel.from_pretrained(tiny_bert_dir)
    linked = [e for e in range(kg.num_entities) if len(kg_neighbours(kg, e))]
    assert linked, "the sense KG of the test has triples"
    entities = np.asarray(linked[:3])
    own, spread = text_kg_rows(language, kg, entities, SenseTexts({}, neighbour_weight=2.0))
    for i, e in enumerate(entities):
        neighbours = kg_neighbours(kg, int(e))
        assert int(e) not in neighbours.tolist() and len(set(neighbours.tolist())) == len(neighbours)
        vectors = text_vectors(language, [sense_text(kg, int(n)) for n in neighbours])
        assert torch.allclose(own[i], text_vectors(language, [sense_text(kg, int(e))])[0], atol=1e-5)
        assert torch.allclose(spread[i], own[i] + 2.0 * vectors.mean(0), atol=1e-5)
    alone, same = text_kg_rows(language, kg, entities, SenseTexts({}, neighbour_weight=0.0))
    assert torch.allclose(alone, same)


def test_no_usage_example_is_a_sentence_being_evaluated(sense_kg):
    """A WordNet usage example equal to an evaluated sentence (case and punctuation aside) is
    dropped and counted, never read as sense evidence."""
    from jaket.kg.sources.wordnet import load_wordnet_data
    from jaket.tasks.word_sense.data import WsdInstance
    from jaket.senses.texts import usage_examples

    kg, _ = sense_kg
    wordnet = load_wordnet_data()
    position = {entity_id: i for i, entity_id in enumerate(kg.entity_ids)}
    synset, text = next((s, t) for s, t in wordnet.raw_examples if wordnet.ids[s] in position)
    entity = position[wordnet.ids[synset]]
    kept, counts = usage_examples(kg, [])
    assert text in kept[entity] and counts["usage_examples_dropped"] == 0
    assert counts["usage_examples"] == sum(map(len, kept.values()))
    target = WsdInstance("d0.s0.t0", text.upper() + " !", 0, 1, "x", "n")
    kept, counts = usage_examples(kg, [target])
    assert text not in kept.get(entity, ()) and counts["usage_examples_dropped"] >= 1
    assert usage_examples(kg, [target], wanted=False) == ({}, {"usage_examples": 0, "usage_examples_dropped": 0})
