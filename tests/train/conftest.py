"""Fixtures of the training tests."""

import pytest


@pytest.fixture(scope="session")
def tokenizer():
    from transformers import AutoTokenizer

    from jaket.paths import default_model_path
    return AutoTokenizer.from_pretrained(default_model_path())
