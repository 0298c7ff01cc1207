"""--bf16 on a CPU without native bf16 warns once with the measured slowdown; a native one does not."""

import logging

import torch

from jaket.model import device as device_module


def _fresh(monkeypatch, ratio):
    device_module._warn_without_native_bf16.cache_clear()
    monkeypatch.setattr(device_module, "bf16_slowdown", lambda: ratio)


def test_emulated_bf16_warns_once(monkeypatch, caplog):
    _fresh(monkeypatch, 63.0)
    with caplog.at_level(logging.WARNING):
        for _ in range(3):
            with device_module.autocast("cpu", True):
                torch.ones(2) @ torch.ones(2)
    warnings = [r.getMessage() for r in caplog.records if "without native bf16" in r.getMessage()]
    assert len(warnings) == 1 and "63x the float32 time" in warnings[0]
    device_module._warn_without_native_bf16.cache_clear()


def test_native_bf16_and_fp32_stay_silent(monkeypatch, caplog):
    _fresh(monkeypatch, 1.1)
    with caplog.at_level(logging.WARNING):
        with device_module.autocast("cpu", True):
            pass
    _fresh(monkeypatch, 63.0)
    with caplog.at_level(logging.WARNING):
        with device_module.autocast("cpu", False):
            pass
    assert not [r for r in caplog.records if "native bf16" in r.getMessage()]
    device_module._warn_without_native_bf16.cache_clear()


def test_cpu_description_names_the_capability():
    described = device_module.cpu_description()
    assert described["capability"] == torch.backends.cpu.get_cpu_capability()
    assert described["cores"] >= 1 and isinstance(described["avx512_bf16"], bool)
    assert 0 < device_module.bf16_slowdown.__wrapped__(size=32, repeats=1) < 1e4
