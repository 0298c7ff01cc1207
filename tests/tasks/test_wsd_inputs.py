"""Word-sense disambiguation's inputs (issue 53, items 2 and 4): data with no target is refused in
one line naming the file and what it holds; a gold sense the sense KG lacks is a warning, or an
error when none is there; a malformed file is refused in the time it takes to read it, before the
scorers' code (the encoders, the KM, WordNet's graph) loads."""

from __future__ import annotations

import json
import logging
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from jaket.errors import EmptyInputError
from jaket.kg.errors import KGFormatError

_CORPUS = ('<?xml version="1.0"?>\n<corpus lang="en" source="t">\n<text id="d0">\n<sentence id="d0.s0">\n'
           '{tokens}\n</sentence>\n</text>\n</corpus>\n')
_BANK = '<wf lemma="the" pos="DET">the</wf>\n<instance id="d0.s0.t0" lemma="bank" pos="NOUN">bank</instance>'
#: an entity bomb: ten levels of ten references each (expat refuses the amplification)
_BOMB = ('<?xml version="1.0"?>\n<!DOCTYPE corpus [\n<!ENTITY a "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa">\n'
         + "".join(f'<!ENTITY {b} "{("&" + a + ";") * 10}">\n' for a, b in zip("abcdefgh", "bcdefghi"))
         + ']>\n<corpus lang="en"><text id="d0"><sentence id="s0"><instance id="t0" lemma="bank" pos="NOUN">&i;'
           '</instance></sentence></text></corpus>\n')


def _target(**fields) -> str:
    row = {"id": "t1", "text": "the river bank", "start": 10, "end": 14, "lemma": "bank", "pos": "n", **fields}
    return json.dumps(row) + "\n"


def test_data_with_no_target_is_refused_in_one_line(tmp_path):
    from jaket.tasks.word_sense.data import load_wsd

    empty, blank = tmp_path / "empty.jsonl", tmp_path / "blank.jsonl"
    empty.write_bytes(b"")
    blank.write_text("\n  \n\t\n", encoding="utf-8")
    for path in (empty, blank):
        with pytest.raises(EmptyInputError) as error:
            load_wsd(path)
        assert str(error.value) == f"--data {path}: the file is empty (or only white space): nothing to disambiguate"
    no_instance = tmp_path / "words.data.xml"
    no_instance.write_text(_CORPUS.format(tokens='<wf lemma="the" pos="DET">the</wf>'), encoding="utf-8")
    with pytest.raises(KGFormatError) as error:
        load_wsd(no_instance)
    assert str(error.value).splitlines() == [
        f"{no_instance}: no <instance> in its 1 sentence: no target to disambiguate (the framework marks each "
        "target with <instance>)"]
    data = tmp_path / "bank.data.xml"
    data.write_text(_CORPUS.format(tokens=_BANK), encoding="utf-8")
    keys = tmp_path / "bank.gold.key.txt"  # found beside the data: an empty one is refused too
    keys.write_text("\n", encoding="utf-8")
    with pytest.raises(EmptyInputError, match=f"--gold {keys}: the file is empty"):
        load_wsd(data)
    keys.write_text("d0.s0.t0 bank%1:17:01::\n", encoding="utf-8")
    assert [i.gold for i in load_wsd(data)] == [("bank.n.01",)]


def test_the_command_refuses_empty_data_with_one_line(tmp_path, capsys):
    from jaket.cli import main

    for name, content, expected in [
            ("empty.jsonl", "", "error: --data {path}: the file is empty (or only white space): nothing to disambiguate"),
            ("none.data.xml", _CORPUS.format(tokens='<wf lemma="a" pos="DET">a</wf>'),
             "{path}: no <instance> in its 1 sentence: no target to disambiguate (the framework marks each target "
             "with <instance>)")]:
        path = tmp_path / name
        path.write_text(content, encoding="utf-8")
        out = tmp_path / f"out-{name}"
        assert main(["evaluate", "word-sense-disambiguation", "--data", str(path), "--out", str(out)]) == 1
        assert capsys.readouterr().err.splitlines() == [expected.format(path=path)]
        assert not out.exists()  # nothing written: no empty key files, no metrics.json without scores


def test_a_gold_sense_missing_from_the_sense_kg_is_a_warning_or_an_error(make_kg, caplog):
    """Two targets of "bank": one's gold is a sense of the KG, the other names one the KG lacks (a
    warning with the count and the first example; the target is scored wrong); when no gold sense
    is in the KG, nothing could be scored: an error naming the gold file and the sense KG."""
    from jaket.senses.inventory import SenseInventory
    from jaket.tasks.word_sense.data import WsdInstance
    from jaket.tasks.word_sense.job import WordSenseConfig
    from jaket.tasks.word_sense.run import GoldNotInSenseKG, run_wsd, wsd_examples

    kg = make_kg(["bank", "bank"], ["sloping land beside a river", "a financial institution"],
                 ids=["bank.n.01", "depository_financial_institution.n.01"])
    river = WsdInstance("t1", "the river bank", 10, 14, "bank", "n", ("bank.n.01",))
    lost = WsdInstance("t2", "the money bank", 10, 14, "bank", "n", ("bank.n.09",))
    with caplog.at_level(logging.WARNING, logger="jaket.tasks.word_sense.run"):
        examples, counts = wsd_examples([river, lost], kg, SenseInventory.for_wordnet(kg))
    assert [r.getMessage() for r in caplog.records] == [
        "1 of 2 target(s) with a gold sense name one that is not in the sense KG (where none of a target's is, it "
        "is scored wrong), e.g. t2 (bank.n.09)"]
    assert (counts["gold_not_in_sense_kg"], counts["gold_not_in_sense_kg_named"]) == (1, ["t2 (bank.n.09)"])
    assert [set(e.gold) for e in examples] == [{0}, set()]
    config = WordSenseConfig(variants=(), seeds=(0,), bootstrap=100)
    with pytest.raises(GoldNotInSenseKG) as error:
        run_wsd([lost], kg, config, None, data_info={"data": "x.data.xml", "gold": "x.gold.key.txt",
                                                     "sense_kg": "kg/"})
    assert str(error.value) == ("x.gold.key.txt: none of the gold senses of the 1 target(s) with one is an entity of "
                                "the sense KG, e.g. t2 (bank.n.09): is it the sense KG the gold names? (sense KG: kg/)")
    results = run_wsd([river, lost], kg, config, None)  # one of two found: scored, the lost one wrong
    assert results["scorers"]["first sense"]["recall"] == pytest.approx(0.5)


#: run in a fresh interpreter (this one has imported everything already): the command on each file,
#: timed without the torch import every command pays first (the device check), and the scorers'
#: modules it loaded
_PROBE = textwrap.dedent("""
    import json, sys, time
    import torch  # noqa: F401
    from jaket.cli import main

    found = {}
    for path in sys.argv[1:]:
        start = time.perf_counter()
        status = main(["evaluate", "word-sense-disambiguation", "--data", path, "--out", path + ".out"])
        found[path] = [status, time.perf_counter() - start]
    heavy = ("transformers", "torch_geometric", "jaket.senses.scorers", "jaket.model.jaket")
    print(json.dumps({"runs": found, "loaded": [m for m in heavy if m in sys.modules]}))
""")


def test_malformed_data_is_refused_before_any_model_loads(tmp_path):
    """The entity bomb, an instance without a lemma and a span past its text are refused in the
    time it takes to read them: a few seconds with the command's imports (the scorers' code loaded
    first took 17-23 s), no module of the encoders or the KM imported, no log line of WordNet or a
    model: the error is all the command says."""
    bomb = tmp_path / "bomb.data.xml"
    bomb.write_text(_BOMB, encoding="utf-8")
    no_lemma = tmp_path / "nolemma.data.xml"
    no_lemma.write_text(_CORPUS.format(tokens=_BANK.replace(' lemma="bank"', "")), encoding="utf-8")
    past = tmp_path / "past.jsonl"
    past.write_text(_target(end=40), encoding="utf-8")
    files = [bomb, no_lemma, past]
    done = subprocess.run([sys.executable, "-c", _PROBE, *map(str, files)], capture_output=True, text=True,
                          timeout=600, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    found = json.loads(done.stdout)
    assert found["loaded"] == []
    assert [found["runs"][str(path)][0] for path in files] == [1, 1, 1]
    assert done.stderr.splitlines() == [
        f"{bomb}:13: malformed XML: limit on input amplification factor (from DTD and entities) breached "
        "(column 93)",  # just past the &i; that breaches it
        f"{no_lemma}:6: <instance> without lemma",
        f"{past}:1: span [10, 40) is not a non-empty span of the text (length 14)"]
    # the first run imports the command's own modules (torch was imported before the clock started)
    assert sum(seconds for _, seconds in found["runs"].values()) < 8.0, found["runs"]
    assert not any(Path(f"{path}.out").exists() for path in files)


def _pretraining_run(folder: Path, heldout_fraction: float) -> Path:
    """A pre-training run folder as sense linking reads it: its ``config.yaml`` (the toy KG and corpus)."""
    folder.mkdir()
    (folder / "config.yaml").write_text(f"data:\n  source: toy\n  heldout_fraction: {heldout_fraction}\n",
                                        encoding="utf-8")
    return folder


def test_sense_linking_reads_its_texts_before_the_sense_kg(tmp_path, monkeypatch):
    """A missing KG', a run folder without its config and a run whose held-out share is empty are
    each one line naming the folder, found before the sense KG (all of WordNet by default) loads."""
    import jaket.tasks.word_in_context.finetuned as senses
    from jaket.tasks.word_sense.job import SenseLinkingData, SenseLinkingJob
    from jaket.tasks.word_sense.run import run_sense_linking_job

    monkeypatch.setattr(senses, "load_sense_kg", lambda *a: pytest.fail("the sense KG was loaded first"))
    (tmp_path / "data").mkdir()
    with pytest.raises(KGFormatError, match=f"{tmp_path / 'data' / 'kg-unseen'}: not a directory"):
        run_sense_linking_job(SenseLinkingJob(data=SenseLinkingData(unseen_of=tmp_path / "data")))
    with pytest.raises(ValueError, match=f"{tmp_path / 'data' / 'config.yaml'}: cannot read the config"):
        run_sense_linking_job(SenseLinkingJob(data=SenseLinkingData(heldout_of=tmp_path / "data")))
    run = _pretraining_run(tmp_path / "run", 0.0)
    with pytest.raises(ValueError) as error:
        run_sense_linking_job(SenseLinkingJob(data=SenseLinkingData(heldout_of=run)))
    assert str(error.value) == f"{run}: its held-out share of 71 texts is empty (data.heldout_fraction 0): no text to link"


def test_sense_linking_says_what_it_found_when_no_mention_links(tmp_path, make_kg):
    """Held-out texts whose mentions are no sense of the sense KG (the toy KG's films and people,
    a sense KG of "bank"): refused in one line counting the texts and why each mention was skipped."""
    from jaket.kg.io import save_kg
    from jaket.tasks.word_sense.job import SenseLinkingData, SenseLinkingJob
    from jaket.tasks.word_sense.run import run_sense_linking_job

    save_kg(make_kg(["bank", "bank"], ids=["bank.n.01", "bank.v.01"]), tmp_path / "senses")
    run = _pretraining_run(tmp_path / "run", 0.5)
    with pytest.raises(ValueError) as error:
        run_sense_linking_job(SenseLinkingJob(data=SenseLinkingData(heldout_of=run, kg=tmp_path / "senses")))
    assert str(error.value) == (f"{run}: no mention of its 36 held-out texts could be linked to a sense of "
                                f"{tmp_path / 'senses'} (mentions skipped: 72 not in sense kg)")


def test_a_target_past_max_length_is_refused_before_any_context_is_encoded(tmp_path, make_kg, tiny_bert_dir,
                                                                           monkeypatch, capsys):
    """A sentence of 40 words whose last two targets lie past ``--max-length 16``: refused after one
    tokenizer pass, before the encoder reads any sentence, in one line naming the file, the first
    such target's instance id and the limit, and the flag that raises it."""
    import jaket.senses.scorers as scorers
    from jaket.cli import main
    from jaket.kg.io import save_kg

    save_kg(make_kg(["bank", "bank"], ["sloping land beside a river", "a financial institution"],
                    ids=["bank.n.01", "depository_financial_institution.n.01"]), tmp_path / "senses")
    words = "".join(f'<wf lemma="w" pos="X">word{k}</wf>\n' for k in range(40))
    target = '<instance id="d001.s003.t00{k}" lemma="bank" pos="NOUN">bank</instance>\n'
    sentences = ('<text id="d001">\n<sentence id="d001.s001">\n' + target.replace("s003", "s001").format(k=0)
                 + '</sentence>\n<sentence id="d001.s003">\n' + target.format(k=0) + words + target.format(k=1)
                 + target.format(k=2) + '</sentence>\n</text>')
    data = tmp_path / "long.data.xml"
    data.write_text(f'<?xml version="1.0"?>\n<corpus lang="en" source="t">\n{sentences}\n</corpus>\n', encoding="utf-8")
    # the encoding of the contexts starts with a batch's token spans: it must not start
    monkeypatch.setattr(scorers, "target_spans", lambda *a, **k: pytest.fail("a batch of contexts was encoded"))
    out = tmp_path / "out"
    assert main(["evaluate", "word-sense-disambiguation", "--data", str(data), "--kg", str(tmp_path / "senses"),
                 "--encoder", str(tiny_bert_dir), "--variants", "lm", "--max-length", "16", "--no-usage-examples",
                 "--out", str(out)]) == 1
    # more words before them than the window holds: refused as the XML is read, each by its line (issue 69)
    assert capsys.readouterr().err.splitlines() == [
        f"{data}:{line}: instance d001.s003.t00{k} ('bank') lies past the first 16 tokens of its sentence ({words} "
        "words before it), all the encoder reads; raise --max-length (the setting max_length, now 16)"
        for k, line, words in ((1, 49, 41), (2, 50, 42))]
    assert not out.exists()


def test_the_check_finds_exactly_the_targets_the_encoder_cannot_read(tiny_bert_dir):
    """:func:`targets_past` (one tokenizer pass) and the encoder's own reading of each target
    (:func:`target_spans`, which refuses a target it cannot reach) agree, on targets before, across
    and past the limit, and on one sentence shared by several targets."""
    from transformers import AutoTokenizer

    from jaket.senses.graph import target_spans
    from jaket.senses.scorers import SenseExample, targets_past

    tokenizer = AutoTokenizer.from_pretrained(tiny_bert_dir)
    text = " ".join(f"w{k}" for k in range(30))  # "w0 w1 ..."; each word a few tokens
    spans = [(text.index(f"w{k} "), text.index(f"w{k} ") + len(f"w{k}")) for k in (0, 3, 4, 5, 6, 12, 28)]
    examples = [SenseExample(text, a, b, frozenset(), ()) for a, b in spans] + [
        SenseExample("a short one", 2, 7, frozenset(), ())]
    for limit in (8, 12, 16):
        refused = []
        for i, e in enumerate(examples):
            try:
                target_spans(tokenizer, [e.text], [(e.start, e.end)], limit)
            except ValueError:
                refused.append(i)
        assert targets_past(tokenizer, examples, limit) == refused and 0 < len(refused) < len(examples) - 1


def test_a_gold_sense_unknown_to_wordnet_is_refused_whichever_way_it_is_written(tmp_path):
    """One rule (issue 69, item 7): an unknown sense key and an unknown synset id are both refused
    with their file and line as the data is read; an id of another shape is a sense-KG entity id."""
    import json

    from jaket.kg.errors import KGFormatError
    from jaket.tasks.word_sense.data import load_wsd

    row = {"id": "t1", "text": "the river bank", "start": 10, "end": 14, "lemma": "bank", "pos": "n"}
    data = tmp_path / "targets.jsonl"
    data.write_text("\n".join(json.dumps({**row, "id": f"t{k}", "gold": gold}) for k, gold in enumerate(
        [["bank%1:17:01::"], ["bank%1:99:99::"], ["bank.n.99"], ["bank.n.01"], ["my-kg-sense-7"]])) + "\n",
                    encoding="utf-8")
    with pytest.raises(KGFormatError) as refused:
        load_wsd(data)
    assert [str(p) for p in refused.value.problems] == [
        f"{data}:2: unknown WordNet 3.0 sense key(s) 'bank%1:99:99::'",
        f"{data}:3: unknown WordNet 3.0 synset id(s) 'bank.n.99'"]
    lines = data.read_text(encoding="utf-8").splitlines()
    data.write_text("\n".join(lines[:1] + lines[3:]) + "\n", encoding="utf-8")
    assert [i.gold for i in load_wsd(data)] == [("bank.n.01",), ("bank.n.01",), ("my-kg-sense-7",)]
