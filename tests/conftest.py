"""Shared fixtures: tiny random encoders saved as local Hugging Face folders, and ../shared/data."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import torch

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")  # see jaket.paths.thread_environment
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")

REPO = Path(__file__).resolve().parents[1]
SHARED_DATA = REPO.parent / "shared" / "data"

_TINY = dict(hidden_size=32, num_hidden_layers=4, num_attention_heads=4, intermediate_size=64,
             max_position_embeddings=160)

_BPE_TRAINING_TEXT = [
    "the dog barked at the cat", "a member of the genus Canis", "an animal that barks",
    "the sun is the star at the center of the solar system", "Paris is the capital of France",
    "WordNet groups words into sets of synonyms", "entity relation triple graph knowledge",
] * 20


@pytest.fixture(scope="session")
def tiny_bert_dir(tmp_path_factory) -> Path:
    """A 4-layer, 32-wide random BERT with the bundled MiniLM's WordPiece tokenizer."""
    import torch
    from transformers import AutoTokenizer, BertConfig, BertForMaskedLM

    from jaket.paths import default_model_path

    out = tmp_path_factory.mktemp("tiny-bert")
    tokenizer = AutoTokenizer.from_pretrained(default_model_path())
    torch.manual_seed(0)
    config = BertConfig(vocab_size=tokenizer.vocab_size, **_TINY)
    BertForMaskedLM(config).save_pretrained(out)
    tokenizer.save_pretrained(out)
    return out


@pytest.fixture(scope="session")
def tiny_roberta_dir(tmp_path_factory) -> Path:
    """A 4-layer, 32-wide random RoBERTa with a small byte-level BPE tokenizer trained here."""
    import torch
    from tokenizers import ByteLevelBPETokenizer
    from transformers import RobertaConfig, RobertaForMaskedLM, RobertaTokenizerFast

    out = tmp_path_factory.mktemp("tiny-roberta")
    bpe = ByteLevelBPETokenizer()
    bpe.train_from_iterator(_BPE_TRAINING_TEXT, vocab_size=400, min_frequency=1,
                            special_tokens=["<s>", "<pad>", "</s>", "<unk>", "<mask>"])
    # (transformers 5 ignores vocab_file/merges_file here: pass the trained tokenizer itself)
    tokenizer = RobertaTokenizerFast(tokenizer_object=bpe._tokenizer, bos_token="<s>", eos_token="</s>",
                                     sep_token="</s>", cls_token="<s>", unk_token="<unk>",
                                     pad_token="<pad>", mask_token="<mask>")
    torch.manual_seed(0)
    config = RobertaConfig(vocab_size=len(tokenizer), pad_token_id=tokenizer.pad_token_id,
                           bos_token_id=tokenizer.bos_token_id, eos_token_id=tokenizer.eos_token_id,
                           **{**_TINY, "max_position_embeddings": 162})
    RobertaForMaskedLM(config).save_pretrained(out)
    tokenizer.save_pretrained(out)
    return out


@pytest.fixture(scope="session")
def shared_data() -> Path:
    """The public benchmark data beside the repo; tests using it skip when it is absent."""
    if not SHARED_DATA.is_dir():
        pytest.skip("../shared/data is not present")
    return SHARED_DATA


class OnDevice(torch.Tensor):
    """A CPU tensor that stands for one on an accelerator: every tensor computed from it is one
    too, ``.cpu()`` gives a plain tensor back, and ``.numpy()`` raises as it does on a GPU
    ("can't convert cuda:0 device type tensor to numpy"). Placing a model's parameters on this
    fake device runs the code path of a GPU run on the CPU and catches each ``.numpy()`` of a
    tensor the model computed without ``.cpu()`` first."""

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        if func is torch.Tensor.numpy:
            raise TypeError("can't convert a tensor on the model's device to numpy: call .cpu() first")
        with torch._C.DisableTorchFunctionSubclass():
            out = func(*args, **(kwargs or {}))
            if func is torch.Tensor.cpu:
                return out.as_subclass(torch.Tensor)
        if func in torch.overrides.get_default_nowrap_functions():
            return out
        return torch._tensor._convert(out, cls)

    def __deepcopy__(self, memo):  # copy.deepcopy of a module keeps it on the fake device
        if id(self) not in memo:
            copy = self.detach().clone()
            memo[id(self)] = torch.nn.Parameter(copy, self.requires_grad) \
                if getattr(self, "_is_param", False) else copy.requires_grad_(self.requires_grad)
        return memo[id(self)]


def place_on_fake_device(*modules):
    """Turn every parameter of ``modules`` into an :class:`OnDevice` tensor (in place)."""
    for module in modules:
        for part in module.modules():
            for name, param in list(part._parameters.items()):
                if param is not None:
                    part._parameters[name] = torch.nn.Parameter(param.detach().as_subclass(OnDevice),
                                                                 requires_grad=param.requires_grad)
    return modules[0] if len(modules) == 1 else modules


@pytest.fixture
def fake_device():
    """``fake_device(*modules)``: see :func:`place_on_fake_device` (``fake_device.Tensor`` is the
    fake device's tensor type)."""
    place_on_fake_device.Tensor = OnDevice
    return place_on_fake_device
