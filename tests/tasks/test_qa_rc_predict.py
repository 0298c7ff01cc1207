"""KGQA and relation classification end to end through the CLI: the MetaQA split flags, FewRel
training relations from other files (and the overlap refusal), the saved fine-tuned folders and
``jaket predict``; the loaded models give the scores of the models that were saved."""

import json

import numpy as np
import pytest
import torch

from jaket.cli import main


def _rows(path):
    return [json.loads(line) for line in path.read_text().splitlines()]


def _fewrel(path, relations, per_relation=6, seed=0):
    """FewRel JSON with the given relation ids; relation k's sentences say 'rel{k}'."""
    rng = np.random.default_rng(seed)
    words = ["alpha", "beta", "gamma", "delta", "river", "city", "team", "singer"]
    data = {}
    for relation in relations:
        k = int(relation[1:])
        items = []
        for i in range(per_relation):
            tokens = [words[(k + i + j) % len(words)] for j in range(6)] + [f"rel{k}", "."]
            h, t = int(rng.integers(0, 2)), int(rng.integers(3, 5))
            items.append({"tokens": tokens, "h": [tokens[h], f"Q{h}", [[h]]], "t": [tokens[t], f"Q{t}", [[t]]]})
        data[relation] = items
    path.write_text(json.dumps(data))
    return path


# ----------------------------------------------------------------------------- KGQA


def test_kgqa_split_flags_save_and_predict(metaqa_splits_dir, tiny_bert_dir, tmp_path, capsys):
    out = tmp_path / "qa"
    assert main(["finetune", "kgqa", "--data", str(metaqa_splits_dir), "--train", "dev", "--test",
                 "test", "--selection-fraction", "0.2", "--encoder", str(tiny_bert_dir), "--km-heads", "4",
                 "--steps", "2", "--batch-size", "4", "--select-every", "1", "--kg-settings", "full",
                 "--fanouts", "2", "--device", "cpu", "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "jaket predict kgqa --finetuned" in printed
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["data"]["split"]["test"] == 7 and metrics["data"]["split"]["selection"] == 5
    assert metrics["data"]["train_split"] == "dev" and metrics["data"]["eval_split"] == "test"
    assert metrics["config"]["km_fanout"] == 2 and metrics["device"] == "cpu"
    assert "20 train, 5 model selection, 7 test (the test split; 6 1-hop, 1 2-hop)" in (out / "report.md").read_text()
    run = metrics["runs"]["lm+g+m"]["full"][0]
    assert [s for s, _ in run["selection_curve"]] == [1, 2] and set(run["test"]) == {"1-hop", "2-hop", "all"}
    model_dir = out / "model"
    task = json.loads((model_dir / "task.json").read_text())
    assert task["task"] == "kgqa" and task["variant"] == "lm+g+m" and task["hops"] == [1, 2]
    assert (model_dir / "kg" / "triples.tsv").exists() or any((model_dir / "kg").iterdir())

    questions = tmp_path / "questions.txt"
    questions.write_text("who directed [Film 10]\tDirector 2\n\nwhen was [film 3] released\n")
    rows_path = tmp_path / "answers.jsonl"
    assert main(["predict", "kgqa", "--finetuned", str(model_dir), "--questions", str(questions), "--hops", "1",
                 "--top-k", "3", "--device", "cpu", "--out", str(rows_path)]) == 0
    rows = _rows(rows_path)
    assert [r["line"] for r in rows] == [1, 3] and rows[0]["gold"] == ["Director 2"] and "gold" not in rows[1]
    assert rows[1]["topic"] == "Film 3"  # the topic is found ignoring case
    for row in rows:
        scores = [a["score"] for a in row["answers"]]
        assert len(scores) == 3 == min(3, row["candidates"]) and scores == sorted(scores, reverse=True)
    # 1 hop from a film: its director, year and genre, nothing else
    assert {a["entity"] for a in rows[0]["answers"]} == {"Director 2", "1994", "Comedy"}

    questions.write_text("who directed [Film 10]\nwho directed [Nobody]\n")
    assert main(["predict", "kgqa", "--finetuned", str(model_dir), "--questions", str(questions)]) == 1
    assert f"{questions}:2: topic entity 'Nobody' is not in the KG" in capsys.readouterr().err
    assert main(["predict", "relation-classification", "--finetuned", str(model_dir), "--support", str(questions),
                 "--queries", str(questions)]) == 1
    assert "a fine-tuned kgqa model, not relation-classification" in capsys.readouterr().err


def test_kgqa_saved_model_scores_like_the_trained_one(metaqa_splits_dir, tiny_bert_dir, tmp_path):
    from jaket.tasks.kgqa import run as kgqa
    from jaket.tasks.kgqa.model import QAGraph
    from jaket.tasks.kgqa.finetuned import FinetunedQuestionAnswerer
    from jaket.tasks.kgqa.data import load_metaqa_task
    from jaket.tasks.variants import kg_memory, load_backbone

    data = load_metaqa_task(metaqa_splits_dir, "dev", "test")
    config = kgqa.KGQAConfig(variants=("lm+g+m",), encoder=tiny_bert_dir, km_heads=4, steps=2, batch_size=4,
                             select_every=0)
    backbone = load_backbone(config.variant_config("lm+g+m"), seed=0)
    memory = kg_memory(backbone, data.kg, 0)
    graph = QAGraph(data.kg)
    _, model = kgqa.train_qa(backbone, memory, graph, data.questions, data.train, data.selection, data.test,
                             config, seed=0)
    FinetunedQuestionAnswerer(model, {"variant": "lm+g+m", "hops": [1, 2], "max_length": config.max_length},
                              variant_config=config.variant_config("lm+g+m"), kg=data.kg).save_pretrained(tmp_path / "m")
    loaded = FinetunedQuestionAnswerer.from_pretrained(tmp_path / "m")
    test = [data.questions[i] for i in data.test]
    rows = loaded.predict(data.kg, test, hops=2, top_k=100)
    for hops, top_k in ((0, 5), (2, 0), (2, -1)):  # the Python API refuses what the flags refuse
        with pytest.raises(ValueError, match=f"^hops and top_k must be at least 1, got {hops} and {top_k}$"):
            loaded.predict(data.kg, test, hops=hops, top_k=top_k)
    cands = [graph.candidates(q.topic, 2, config.max_candidates) for q in test]
    for row, (cand, scores) in zip(rows, kgqa.rank_candidates(model, memory, graph, test, cands, config)):
        expected = {str(data.kg.entity_ids[c]): float(s) for c, s in zip(cand, scores)}
        assert len(row["answers"]) == len(expected)
        for answer in row["answers"]:
            assert answer["score"] == pytest.approx(expected[answer["entity"]], abs=1e-5)


# ----------------------------------------------------------------------------- relation classification


def test_fewrel_train_data_overlap_is_refused_then_dropped(tiny_bert_dir, tmp_path, capsys):
    train = _fewrel(tmp_path / "train.json", ["P0", "P1", "P2", "P3"])
    more = _fewrel(tmp_path / "more.json", ["P9"], seed=1)
    evaluation = _fewrel(tmp_path / "eval.json", ["P3", "P4", "P5", "P6"], seed=2)
    common = ["--data", str(evaluation), "--encoder", str(tiny_bert_dir), "--steps", "2", "--train-way", "2",
              "--episodes", "3", "--settings", "3-1"]
    assert main(["finetune", "relation-classification", "--train", str(train), str(more), *common]) == 1
    err = capsys.readouterr().err
    assert "P3 are in both --train and --data" in err and "--drop-overlap" in err
    out = tmp_path / "rc"
    assert main(["finetune", "relation-classification", "--train", str(train), str(more), "--drop-overlap",
                 *common, "--out", str(out)]) == 0
    metrics = json.loads((out / "metrics.json").read_text())
    assert list(metrics["train_relations"]) == ["P0", "P1", "P2", "P9"]
    assert list(metrics["eval_relations"]) == ["P3", "P4", "P5", "P6"]  # every relation of --data
    assert (out / "model" / "task.json").exists()
    assert main(["finetune", "relation-classification", "--train", str(train), "--encoder",
                 str(tiny_bert_dir)]) == 2  # flags that do not go together: usage
    assert "--train needs --data" in capsys.readouterr().err


def test_relation_classification_save_and_predict(tiny_bert_dir, tmp_path, capsys):
    train = _fewrel(tmp_path / "train.json", ["P0", "P1", "P2"])
    evaluation = _fewrel(tmp_path / "eval.json", ["P3", "P4", "P5"], seed=2)
    out = tmp_path / "rc"
    assert main(["finetune", "relation-classification", "--train", str(train), "--data", str(evaluation),
                 "--encoder", str(tiny_bert_dir), "--steps", "2", "--train-way", "2", "--episodes", "2",
                 "--settings", "3-1", "--device", "cpu", "--out", str(out)]) == 0
    assert json.loads((out / "metrics.json").read_text())["device"] == "cpu"
    support = _fewrel(tmp_path / "support.json", ["P3", "P4", "P5"], per_relation=2, seed=5)
    queries = tmp_path / "queries.jsonl"
    items = json.loads(evaluation.read_text())
    lines = [json.dumps({**items["P4"][0], "relation": "P4"}), "", json.dumps(items["P5"][1])]
    queries.write_text("\n".join(lines) + "\n")
    rows_path = tmp_path / "rows.jsonl"
    assert main(["predict", "relation-classification", "--finetuned", str(out / "model"), "--support", str(support),
                 "--queries", str(queries), "--device", "cpu", "--out", str(rows_path)]) == 0
    rows = _rows(rows_path)
    assert [r["line"] for r in rows] == [1, 3] and rows[0]["gold"] == "P4" and "gold" not in rows[1]
    for row in rows:
        assert set(row["scores"]) == {"P3", "P4", "P5"}
        assert row["relation"] == max(row["scores"], key=row["scores"].get)

    # the loaded model scores every pair as the saved one did
    from jaket.tasks.relation_classification.data import load_fewrel, read_query_lines
    from jaket.tasks.relation_classification.model import PairEncoder
    from jaket.tasks.relation_classification.finetuned import FinetunedPairClassifier

    loaded = FinetunedPairClassifier.from_pretrained(out / "model")
    fresh = FinetunedPairClassifier(PairEncoder("lm", tiny_bert_dir), {"max_length": 128})
    a = loaded.predict(load_fewrel(support), read_query_lines(queries))
    b = fresh.predict(load_fewrel(support), read_query_lines(queries))
    assert [r["scores"] for r in a] == [r["scores"] for r in rows]
    assert any(abs(a[0]["scores"][k] - b[0]["scores"][k]) > 1e-4 for k in a[0]["scores"])  # it was trained

    queries.write_text(lines[0] + "\n" + '{"tokens": ["a", "b"], "h": ["a", "Q1", [[0]]], "t": ["b", "Q2", [[7]]]}\n')
    assert main(["predict", "relation-classification", "--finetuned", str(out / "model"), "--support", str(support),
                 "--queries", str(queries)]) == 1
    assert f"{queries}:2: entity position outside the 2 tokens" in capsys.readouterr().err
    queries.write_text("{not json\n")
    assert main(["predict", "relation-classification", "--finetuned", str(out / "model"), "--support", str(support),
                 "--queries", str(queries)]) == 1
    assert f"{queries}:1: invalid JSON" in capsys.readouterr().err
    torch.manual_seed(0)
