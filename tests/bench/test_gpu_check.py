"""The prepared GPU check (benchmarks/gpu_check.py) kept working: its CPU smoke run at toy sizes
measures every part, writes its JSON and Markdown, and both launchers train the same run."""

import json

from benchmarks import gpu_check


def test_the_gpu_check_runs_on_the_cpu_at_toy_sizes(tmp_path, capsys):
    assert gpu_check.main(["--device", "cpu", "--tiny", "--out", str(tmp_path)]) == 0
    result = json.loads((tmp_path / "gpu_check.json").read_text())
    parts = result["parts"]
    assert not [name for name, part in parts.items() if "error" in part]
    assert "skipped" in parts["tests"]  # make test runs the gpu-marked tests on the fake device
    step = parts["step"]
    assert step["tokens_per_second"] > 0 and step["refresh_descriptions_per_second"] > 0
    assert step["tokens_per_step"] <= step["texts_per_step"] * step["text_length"]
    memory = parts["memory"]
    assert parts["ratio"]["km_over_lm"] > 0 and memory["memory_speedup"] > 0 and memory["descriptions_per_step"] > 0
    # back-propagating through the descriptions costs more than encoding them without gradients
    assert memory["on_the_fly_with_gradients_step_seconds"] > memory["memory_step_seconds"]
    assert parts["host"]["refresh_max_abs_difference_host_vs_device"] == 0.0  # the same arithmetic
    assert {k for k in parts["workers"] if k.startswith("workers_")} == {"workers_0", "workers_2", "workers_8"}
    compiled = parts["compiled"]  # torch.compile on the CPU, toy sizes: the same losses
    assert compiled["compiled_step_seconds"] > 0 and compiled["max_loss_difference"] < 1e-4
    assert set(compiled["losses_eager"]) == set(compiled["losses_compiled"]) and compiled["losses_eager"]
    launch = parts["launchers"]
    assert launch["accelerate_launch"]["returncode"] == launch["torchrun"]["returncode"] == 0
    assert launch["accelerate_launch"]["world_size"] == launch["torchrun"]["world_size"] == 1
    assert launch["max_loss_difference"] == 0.0  # one process on the CPU: the same run twice
    report = (tmp_path / "gpu_check.md").read_text()
    assert "| KM / LM time (forward + backward), as the step runs the KM |" in report and report in capsys.readouterr().out
