"""Issue #40: what pre-training drops is said, in the log and in the run's data_report.json (as a
missing corpus already was): a KG without categories drops the category task; a triple given twice
is counted once (real pre-training on the tiny BERT, the toy KG saved without its categories and
with three triples repeated)."""

import json
import logging

from jaket.cli import main

from .conftest import CONFIGS


def test_no_category_and_repeated_triples_are_said_and_counted_once(tiny_bert_dir, tmp_path, caplog):
    from jaket.kg.io import load_kg, save_kg
    from jaket.kg.toy import toy_kg

    kg, corpus = toy_kg()
    folder = save_kg(kg, tmp_path / "kg", corpus=corpus)
    rows = [json.loads(line) for line in (folder / "entities.jsonl").read_text().splitlines()]
    (folder / "entities.jsonl").write_text("".join(json.dumps({k: v for k, v in row.items() if k != "category"}) + "\n"
                                                   for row in rows))
    triples = (folder / "triples.tsv").read_text().splitlines()
    (folder / "triples.tsv").write_text("\n".join(triples + triples[:2] + triples[:1]) + "\n")
    assert load_kg(folder).num_triples == kg.num_triples + 3  # the KG keeps what its file says
    out = tmp_path / "run"
    with caplog.at_level(logging.WARNING):
        assert main(["pretrain", "--config", str(CONFIGS / "pretrain-tiny.yaml"), "--encoder", str(tiny_bert_dir),
                     "--kg", str(folder), "--out", str(out), "--no-progress", "--steps", "2"]) == 0
    warnings = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING
                and str(folder) in r.getMessage()]
    assert warnings == [
        f"{folder / 'triples.tsv'}: 3 triple(s) given again (the same head, relation and tail as an earlier one); "
        "pre-training counts each once",
        f"pre-training drops the category task (tasks.weight_category=1): no entity of {folder / 'entities.jsonl'} "
        "has a category; give entities categories to train it"]
    report = json.loads((out / "data_report.json").read_text())
    assert report["tasks"] == ["relation", "mlm", "entity"]
    assert report["tasks_dropped"] == {"category": f"no entity of {folder / 'entities.jsonl'} has a category"}
    assert report["repeated_triples_counted_once"] == 3 and report["triples"] == kg.num_triples
    state = json.loads((out / "checkpoints" / "step-0000002" / "state.json").read_text())
    assert state["kg"]["triples"] == kg.num_triples and state["kg"]["categories"] == 0


def test_a_kg_of_one_relation_names_relation_prediction_as_having_nothing_to_learn(tiny_bert_dir, tmp_path, caplog):
    """Issue 65, item 4: one relation type trained relation prediction on nothing (loss 0.000 at every
    step) without a word; now the task is dropped and said at start, with its reason."""
    from jaket.kg.io import save_kg
    from jaket.kg.toy import toy_kg

    kg, corpus = toy_kg()
    folder = save_kg(kg, tmp_path / "kg", corpus=corpus)
    rows = [line.split("\t") for line in (folder / "triples.tsv").read_text().splitlines()]
    (folder / "triples.tsv").write_text("".join(f"{h}\t{rows[0][1]}\t{t}\n" for h, _, t in rows))
    out = tmp_path / "run"
    with caplog.at_level(logging.WARNING):
        assert main(["pretrain", "--config", str(CONFIGS / "pretrain-tiny.yaml"), "--encoder", str(tiny_bert_dir),
                     "--kg", str(folder), "--out", str(out), "--no-progress", "--steps", "2"]) == 0
    said = [r.getMessage() for r in caplog.records if "drops the relation task" in r.getMessage()]
    assert said == [f"pre-training drops the relation task (tasks.weight_relation=1): every triple of "
                    f"{folder / 'triples.tsv'} has the same relation, so relation prediction has one answer and "
                    "nothing to learn (its loss would be 0 at every step); a KG of several relations trains it"]
    report = json.loads((out / "data_report.json").read_text())
    assert "relation" not in report["tasks"] and "relation" in report["tasks_dropped"]
