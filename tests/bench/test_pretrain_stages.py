"""benchmarks/pretrain_stages.py on the tiny config: the rows each refresh interval reads are
counted from the batches the run would build, and the step split and the A/B come back."""

from pathlib import Path

import numpy as np

from benchmarks.pretrain_stages import compile_ab, main

CONFIG = Path(__file__).resolve().parents[2] / "configs" / "pretrain-tiny.yaml"


def test_the_stage_benchmark_counts_each_intervals_rows_and_times_both_readings(tiny_bert_dir, tmp_path, capsys):
    out = tmp_path / "stages.json"
    result = main(["--config", str(CONFIG), "--encoder", str(tiny_bert_dir), "--precision", "fp32",
                   "--steps", "2", "--out", str(out)])
    assert out.is_file()
    intervals = result["rows_read_per_interval"]
    assert [i["steps"][0] for i in intervals][0] == 0 and intervals[-1]["steps"][1] == 8
    assert all(0 < i["rows_read"] <= result["entities"] for i in intervals)
    assert all(i["knowledge_module_rows"] <= i["rows_read"] for i in intervals)
    assert np.isclose(intervals[0]["share_read"], intervals[0]["rows_read"] / result["entities"], atol=1e-5)
    assert result["step_split_seconds"]["step"] > 0
    assert {"padding groups", "one padded batch"} == set(result["padding_groups_ab"])
    assert all(v["steps"] == 2 for v in result["padding_groups_ab"].values())


def test_the_stage_benchmark_times_each_number_of_description_rows(tiny_bert_dir):
    result = main(["--config", str(CONFIG), "--encoder", str(tiny_bert_dir), "--precision", "fp32", "--steps", "4",
                   "--rows", "4,2,0", "--no-groups-ab", "--set", "tasks.description_rows=4"])
    assert "padding_groups_ab" not in result
    timed = result["description_rows_ab"]
    assert list(timed) == ["4", "2", "0"] and all(v["steps"] == 4 and v["median_s"] > 0 for v in timed.values())
    assert timed["4"]["rows_a_step"] > timed["2"]["rows_a_step"] > timed["0"]["rows_a_step"] == 0
    assert timed["2"]["rows_a_step"] == 2


def test_the_compile_ab_times_both_and_leaves_the_layers_eager(make_trainer, tmp_path):
    trainer = make_trainer(tmp_path / "run", 'mixed_precision="no"')
    trainer.refresh_memory()
    layers = list(trainer.model.language._layers[0])
    timed = compile_ab(trainer, 6, backend="eager")  # dynamo without code generation: seconds, not minutes
    assert timed["compile_and_warm_up_seconds"] > 0
    assert timed["eager"]["steps"] == timed["compiled"]["steps"] == 6
    assert all(layer._compiled_call_impl is None for layer in layers)  # switched back
    assert trainer.step == 4 + 12
