"""``jaket finetune link-prediction`` saves a fine-tuned folder; ``jaket predict link-prediction``
ranks tails / heads with it, exactly as fine-tuning evaluated."""

import json

import numpy as np
import pytest

from jaket.cli import main
from jaket.kg.io import load_kg, save_kg
from jaket.pipelines import pipeline
from jaket.tasks.registry import load_finetuned
from jaket.tasks.link_prediction import run as lp
from jaket.tasks.link_prediction.finetuned import Query, read_queries
from jaket.tasks.results import TaskResult


@pytest.fixture()
def lp_data(small_kg, tmp_path):
    """A KG folder of the training triples and a WN18RR-format valid file of 6 held-out triples."""
    triples = np.asarray(small_kg.triples, dtype=np.int64)
    order = np.random.default_rng(1).permutation(len(triples))
    train, valid = triples[order[6:]], triples[order[:6]]
    kg_dir = save_kg(lp.train_view(small_kg, train), tmp_path / "kg")
    e, r = small_kg.entity_ids, small_kg.relation_ids
    valid_file = tmp_path / "valid.txt"
    valid_file.write_text("".join(f"{e[h]}\t{r[p]}\t{e[t]}\n" for h, p, t in valid.tolist()))
    return kg_dir, valid_file, train, valid


@pytest.mark.parametrize("mode", [["--train-encoder", "--description-max-length", "16"],
                                  ["--train-encoder", "--objective", "contrastive", "--description-max-length", "16"],
                                  ["--variant", "lm"]],
                         ids=["train-encoder", "train-encoder-contrastive", "frozen-lm"])
def test_finetune_then_predict_reproduces_the_evaluation(mode, small_kg, lp_data, tiny_bert_dir, tmp_path, capsys):
    kg_dir, valid_file, train, valid = lp_data
    out = tmp_path / "run"
    assert main(["finetune", "link-prediction", "--kg", str(kg_dir), "--test", str(valid_file),
                 "--encoder", str(tiny_bert_dir), "--km-heads", "4", "--scorers", "rotate", "--steps", "6",
                 "--batch-size", "16", "--negatives", "4", "--fanouts", "3,3", *mode, "--device", "cpu",
                 "--out", str(out)]) == 0
    model_dir = out / "model"
    assert f"fine-tuned model: {model_dir}" in capsys.readouterr().out
    task = json.loads((model_dir / "task.json").read_text())
    assert task["task"] == "link-prediction" and task["scorer"] == "rotate"
    assert task["metric"] == ("cosine" if "contrastive" in mode else "native")
    assert not list(model_dir.rglob("*.bin")) and not list(model_dir.rglob("*.pt"))
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["device"] == "cpu"
    (by_scorer,) = metrics["runs"].values()  # the one setting fine-tuned
    run = by_scorer["rotate"][0]
    # one tail query and one head query per valid triple, with every entity as an answer
    e, r = small_kg.entity_ids, small_kg.relation_ids
    queries = tmp_path / "queries.tsv"
    queries.write_text("# valid triples\n" + "".join(f"{e[h]}\t{r[p]}\t?\n?\t{r[p]}\t{e[t]}\n"
                                                     for h, p, t in valid.tolist()))
    predictions = tmp_path / "predictions.jsonl"
    assert main(["predict", "link-prediction", "--finetuned", str(model_dir), "--kg", str(kg_dir),
                 "--queries", str(queries), "--top-k", "36", "--device", "cpu", "--out", str(predictions)]) == 0
    rows = [json.loads(line) for line in predictions.read_text().splitlines()]
    assert len(rows) == 12 and [row["line"] for row in rows] == list(range(2, 14))
    known = {tuple(x) for x in train.tolist()}
    true = known | {tuple(x) for x in valid.tolist()}
    reciprocal = []
    for row, (h, p, t) in zip(rows, np.repeat(valid, 2, axis=0).tolist()):
        answers = [small_kg.entity_index(a["entity"]) for a in row["answers"]]
        assert len(answers) == 36 and all(a["score"] >= b["score"] for a, b in zip(row["answers"], row["answers"][1:]))
        if row["predict"] == "tail":
            assert (row["head"], row["tail"]) == (e[h], None)
            complete, target = (lambda c: (h, p, c)), t
        else:
            assert (row["head"], row["tail"]) == (None, e[t])
            complete, target = (lambda c: (c, p, t)), h
        assert [a["known"] for a in row["answers"]] == [complete(c) in known for c in answers]
        # the filtered rank: the other true answers above the target do not count
        before = answers[: answers.index(target)]
        reciprocal.append(1.0 / (1 + sum(complete(c) not in true for c in before)))
    assert np.mean(reciprocal) == pytest.approx(run["valid"]["mrr"], abs=1e-9)
    # --exclude-known drops the answers already in the KG
    assert main(["predict", "link-prediction", "--finetuned", str(model_dir), "--kg", str(kg_dir),
                 "--queries", str(queries), "--top-k", "36", "--exclude-known"]) == 0
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert all(not a["known"] for row in rows for a in row["answers"])
    assert sum(len(row["answers"]) for row in rows) < 12 * 36
    # a top_k below 1 is refused, not read as 1
    kg = load_kg(kg_dir)
    with pytest.raises(ValueError, match="^top_k must be at least 1, got 0$"):
        load_finetuned(model_dir).predict(kg, read_queries(queries, kg), top_k=0)


def test_bad_query_lines_are_named(small_kg, lp_data, tiny_bert_dir, tmp_path, capsys):
    kg_dir, valid_file, _, _ = lp_data
    out = tmp_path / "run"
    assert main(["finetune", "link-prediction", "--kg", str(kg_dir), "--test", str(valid_file), "--encoder",
                 str(tiny_bert_dir), "--km-heads", "4", "--scorers", "transe", "--steps", "1", "--batch-size", "8",
                 "--negatives", "2", "--out", str(out)]) == 0
    capsys.readouterr()
    for line, message in [("e0\thypernym", "expected head<TAB>relation<TAB>? or ?<TAB>relation<TAB>tail"),
                          ("e0\thypernym\te1", "exactly one of head and tail must be '?'"),
                          ("?\thypernym\t?", "exactly one of head and tail must be '?'"),
                          ("e0\tnope\t?", "unknown relation id 'nope'"),
                          ("?\thypernym\te99", "unknown entity id 'e99'")]:
        queries = tmp_path / "queries.tsv"
        queries.write_text(f"e0\thypernym\t?\n\n{line}\n")
        assert main(["predict", "link-prediction", "--finetuned", str(out / "model"), "--kg", str(kg_dir),
                     "--queries", str(queries)]) == 1
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and f"{queries}:3: {message}" in err, err
    # queries built in Python are checked as the file's lines are (-1 picked the last entity)
    kg, model = load_kg(kg_dir), load_finetuned(out / "model")
    for query, message in [(Query(1, -1, 0, None), r"queries\[0\] \(line 1\): head -1 is not an index of the KG's"),
                           (Query(1, 0, kg.num_relations, None),
                            f"relation {kg.num_relations} is not an index of the KG's {kg.num_relations} relations"),
                           (Query(1, 0, 0, 1), "exactly one of head and tail must be None"),
                           (Query(1, None, 0, 0.5), "tail 0.5 is not an index")]:
        with pytest.raises(ValueError, match=message):
            model.predict(kg, [query])
    # an entity-classification folder is not a link predictor
    assert main(["predict", "entity-classification", "--finetuned", str(out / "model"), "--kg", str(kg_dir)]) == 1
    assert "a fine-tuned link-prediction model, not entity-classification" in capsys.readouterr().err


@pytest.mark.parametrize("mode", [[], ["--train-encoder", "--frozen-warmup-steps", "2"]], ids=["frozen", "train-encoder"])
def test_pipeline_is_the_command(mode, small_kg, lp_data, tiny_bert_dir, tmp_path):
    """``pipeline("link-prediction")`` runs the command's runner (the same job, the mode's defaults
    resolved alike): the same settings and scores, and the first run's model predicts in memory as
    its saved folder does."""
    kg_dir, valid_file, _, valid = lp_data
    assert main(["finetune", "link-prediction", "--kg", str(kg_dir), "--test", str(valid_file), "--encoder",
                 str(tiny_bert_dir), "--km-heads", "4", "--scorers", "rotate", "--steps", "4", "--batch-size", "8",
                 "--negatives", "4", "--fanouts", "3,3", "--description-max-length", "16", *mode,
                 "--out", str(tmp_path / "cli")]) == 0
    result = pipeline("link-prediction", evaluate=False, encoder=tiny_bert_dir, km_heads=4, scorers=["rotate"],
                      steps=4, batch_size=8, negatives=4, fanouts=[3, 3], description_max_length=16,
                      train_encoder=bool(mode), frozen_warmup_steps=2 if mode else None,
                      data={"kg": kg_dir, "eval": [valid_file]})
    written = json.loads((tmp_path / "cli" / "metrics.json").read_text())
    assert result["config"] == written["config"] and result["config"]["train_encoder"] == bool(mode)
    assert _measured(result) == _measured(written) and _measured(result)
    assert "saved_model" not in result  # out=None writes nothing
    e, r = small_kg.entity_ids, small_kg.relation_ids
    queries = tmp_path / "queries.tsv"
    queries.write_text("".join(f"{e[h]}\t{r[p]}\t?\n?\t{r[p]}\t{e[t]}\n" for h, p, t in valid.tolist()))
    kg = load_kg(kg_dir)
    asked = read_queries(queries, kg)
    saved = load_finetuned(tmp_path / "cli" / "model")
    assert result.finetuned.predict(kg, asked, top_k=5) == saved.predict(kg, asked, top_k=5)


def _measured(metrics) -> list[dict]:
    """The runs' rows without their timing (seconds, CPU rates and the refreshes' share of the time
    differ between two runs of the same cell)."""
    rows = TaskResult.from_metrics(json.loads(json.dumps(dict(metrics), default=str))).rows()
    return [{k: v for k, v in row.items() if not any(part in k for part in ("second", "share"))} for row in rows]
