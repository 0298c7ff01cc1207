"""`jaket bench pretrain`: runs the real loop on the toy KG and derives the paper-scale ratios."""

from __future__ import annotations

import json

import pytest

from jaket.bench.pretrain import PAPER, paper_refresh_steps
from jaket.cli import main as jaket_main


def test_paper_schedule_refresh_count():
    # T = 10, 10, 10, 20, 20, 20, 40, ...: refreshes before steps 10, 20, 30, 50, 70, 90, 130, ...
    assert paper_refresh_steps(10) == 1
    assert paper_refresh_steps(31) == 4  # the initial fill + steps 10, 20, 30
    assert paper_refresh_steps(91) == 7
    # once the interval is 500, one refresh every 500 steps
    assert paper_refresh_steps(100_000) - paper_refresh_steps(50_000) == 100


def test_bench_pretrain_cli(capsys, tiny_bert_dir):
    status = jaket_main(["bench", "pretrain", "--json", "--source", "toy", "--steps", "1",
                         "--text-batch", "2", "--fanout", "2", "--encoder", str(tiny_bert_dir),
                         "--workers", "0,1", "--description-length", "16"])
    assert status == 0
    figures = json.loads(capsys.readouterr().out)
    assert figures["description_max_length"] == 16  # the memory and the on-the-fly mode's cut
    assert figures["steps_per_second_memory"] > 0 and figures["steps_per_second_on_the_fly"] > 0
    assert figures["on_the_fly_description_seconds_per_step"] > 0
    assert figures["schedule_refreshes"] == paper_refresh_steps(figures["schedule_steps"])
    assert 0 < figures["refresh_share"] < 1
    # the data pipeline: a batch built on the main thread is waited for in full; a worker's not
    assert figures["batch_build_seconds_per_step"] > 0 and figures["model_step_seconds_per_step"] > 0
    # without workers the loop waits for every batch it builds (a ratio of two timings would be a
    # timed assertion: it failed once on a loaded machine)
    assert figures["batch_wait_seconds_per_step_workers_0"] > 0
    assert figures["loop_step_seconds_workers_1"] > 0
    assert figures["paper_scale_descriptions_per_step"] == PAPER["entities"] / 500
    assert figures["paper_scale_unique_entities_for_15x_no_grad"] == pytest.approx(
        3 * figures["paper_scale_unique_entities_for_15x_with_grad"], rel=1e-9)
