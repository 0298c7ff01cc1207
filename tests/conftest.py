"""Shared fixtures: tiny random encoders saved as local Hugging Face folders, ../shared/data, a KG
written by hand, and a fake accelerator."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest
import torch

from jaket.kg.graph import KnowledgeGraph

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")  # see jaket.paths.thread_environment
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
os.environ["JAKET_CACHE"] = "off"  # the memory cache is tested where it is switched on (tests/model)
if Path("/sys/class/net/lo").exists():
    # gloo (the CPU process groups of tests/train) binds the interface the host name resolves to
    # unless told; in a sandbox that name may resolve to an address no peer can reach, and the
    # rendezvous then waits for its 30-minute timeout (a CI run was cut there): the loopback
    # interface always works for processes on one machine
    os.environ.setdefault("GLOO_SOCKET_IFNAME", "lo")

#: where the ``gpu``-marked tests run: ``JAKET_TEST_DEVICE=cuda`` (benchmarks/gpu_check.py on a GPU
#: machine) runs them there for real; by default they run on the CPU through the strict fake device
TEST_DEVICE = os.environ.get("JAKET_TEST_DEVICE", "cpu")

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
def tiny_mpnet_dir(tmp_path_factory) -> Path:
    """A 4-layer, 32-wide random MPNet (relative position bias in every layer) with the bundled
    MiniLM's WordPiece tokenizer."""
    import torch
    from transformers import AutoTokenizer, MPNetConfig, MPNetForMaskedLM

    from jaket.paths import default_model_path

    out = tmp_path_factory.mktemp("tiny-mpnet")
    tokenizer = AutoTokenizer.from_pretrained(default_model_path())
    torch.manual_seed(0)
    config = MPNetConfig(vocab_size=tokenizer.vocab_size, pad_token_id=tokenizer.pad_token_id, **_TINY)
    MPNetForMaskedLM(config).save_pretrained(out)
    tokenizer.save_pretrained(out)
    return out


@pytest.fixture(scope="session")
def toy_jaket(tiny_bert_dir):
    """``toy_jaket(**config) -> (model, kg)``: a seeded JaketModel over the toy KG (its categories and
    relations) with the tiny BERT, the model most model tests start from (``config``: JaketConfig
    fields, e.g. ``fanouts=(3, 3)``; two KM heads unless given)."""
    from jaket.kg.toy import toy_kg
    from jaket.model.jaket import JaketConfig, JaketModel

    def build(**config):
        kg, _ = toy_kg()
        torch.manual_seed(0)
        return JaketModel(JaketConfig(encoder=str(tiny_bert_dir), num_categories=kg.num_categories,
                                      num_relations=kg.num_relations, **{"km_heads": 2, **config})), kg

    return build


@pytest.fixture(scope="session")
def shared_data() -> Path:
    """The public benchmark data beside the repo; tests using it skip when it is absent."""
    if not SHARED_DATA.is_dir():
        pytest.skip("../shared/data is not present")
    return SHARED_DATA


@pytest.fixture(scope="session")
def make_kg():
    """``make_kg(names, descriptions=None, *, ids=None, aliases=None, triples=(), relations=("r",))``:
    a small KnowledgeGraph written by hand. Entity ``i`` is ``ids[i]`` (default ``e{i}``), named
    ``names[i]``, described by ``descriptions[i]`` (default: its name), with ``aliases[i]`` (default:
    none) and no category; each relation's id, name and description is its entry of ``relations``;
    ``triples`` are ``(head, relation, tail)`` indices."""

    def make(names, descriptions=None, *, ids=None, aliases=None, triples=(), relations=("r",)) -> KnowledgeGraph:
        n = len(names)
        return KnowledgeGraph(
            entity_ids=list(ids) if ids is not None else [f"e{i}" for i in range(n)], entity_names=list(names),
            entity_descriptions=list(descriptions) if descriptions is not None else list(names),
            entity_aliases=[list(a) for a in aliases] if aliases is not None else [[] for _ in range(n)],
            entity_category=np.full(n, -1), category_names=[], relation_ids=list(relations),
            relation_names=list(relations), relation_descriptions=list(relations), triples=np.asarray(triples))

    return make


class OnDevice(torch.Tensor):
    """A CPU tensor that stands for one on an accelerator: every tensor computed from it is one
    too, ``.cpu()`` gives a plain tensor back, and ``.numpy()`` raises as it does on a GPU
    ("can't convert cuda:0 device type tensor to numpy"). Placing a model's parameters on this
    fake device runs the code path of a GPU run on the CPU and catches each ``.numpy()`` of a
    tensor the model computed without ``.cpu()`` first.

    With ``strict`` (the :func:`strict_fake_device` fixture) it also refuses what CUDA refuses
    when a tensor was not moved: an operation that meets a device tensor and a CPU tensor of one
    or more dimensions that was never placed anywhere (:func:`_result_kind`)."""

    strict = False

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        if func is torch.Tensor.numpy:
            raise TypeError("can't convert a tensor on the model's device to numpy: call .cpu() first")
        kwargs = kwargs or {}
        with torch._C.DisableTorchFunctionSubclass():
            target = _result_kind(func, args, kwargs) if OnDevice.strict else cls
            out = func(*args, **kwargs)
            if func is torch.Tensor.cpu or target is torch.Tensor:
                return _plain(out)
        if func in torch.overrides.get_default_nowrap_functions():
            return out
        return torch._tensor._convert(out, target)

    def __deepcopy__(self, memo):  # copy.deepcopy of a module keeps it on the fake device
        if id(self) not in memo:
            copy = self.detach().clone()
            memo[id(self)] = _fake_parameter(copy, self.requires_grad) \
                if getattr(self, "_is_param", False) else copy.requires_grad_(self.requires_grad)
        return memo[id(self)]


def _plain(out):
    """``out`` with each tensor in it a plain CPU tensor (``.cpu()`` of a CPU tensor is itself)."""
    if isinstance(out, (tuple, list)):
        return type(out)(_plain(x) for x in out)
    return out.as_subclass(torch.Tensor) if isinstance(out, OnDevice) else out


class Placed(OnDevice):
    """Strict mode: a tensor the code placed explicitly (``.to(device)``, ``device=``) on a device
    that may be the run's or the CPU (both are ``cpu`` here): it goes with either."""


#: operations that may meet tensors of two devices on CUDA too (copies between devices)
_CROSS_DEVICE = {torch.Tensor.to, torch.Tensor.cpu, torch.Tensor.copy_, torch.Tensor.__setitem__}
#: a device tensor may be indexed with CPU indices (not the reverse)
_INDEXING = {torch.Tensor.__getitem__, torch.Tensor.index_put_, torch.Tensor.index_put, torch.index_put}


def _on_model_device(t) -> bool:
    return isinstance(t, OnDevice) and not isinstance(t, Placed)


def _result_kind(func, args, kwargs) -> type:
    """Strict mode: CUDA's rule (the tensors of one operation share a device, except 0-dim CPU
    tensors read as scalars, copies between devices and CPU indices into a device tensor), then
    where the result is: on the device (:class:`OnDevice`) when a device tensor took part, else
    with the placed tensors (:class:`Placed`) unless a CPU tensor took part (plain)."""
    flat, _ = torch.utils._pytree.tree_flatten((args, kwargs))
    tensors = [t for t in flat if isinstance(t, torch.Tensor)]
    device = [t for t in tensors if _on_model_device(t)]
    host = [t for t in tensors if not isinstance(t, OnDevice) and t.dim() > 0]
    allowed = func in _CROSS_DEVICE or getattr(func, "__name__", "").startswith("_foreach") or (
        func in _INDEXING and bool(args) and _on_model_device(args[0]))
    if device and host and not allowed:
        raise RuntimeError(f"Expected all tensors to be on the same device: {getattr(func, '__name__', func)} "
                           f"meets a tensor on the model's device and a CPU tensor of shape {tuple(host[0].shape)}")
    if device:
        return OnDevice
    return torch.Tensor if host else Placed


def _grad_on_device(param) -> None:
    """A gradient lives where its parameter does (autograd accumulates a plain tensor here)."""
    if param.grad is not None and not isinstance(param.grad, OnDevice):
        param.grad = param.grad.as_subclass(OnDevice)


def _fake_parameter(tensor: torch.Tensor, requires_grad: bool) -> torch.nn.Parameter:
    param = torch.nn.Parameter(tensor.detach().as_subclass(OnDevice), requires_grad=requires_grad)
    if requires_grad:
        param.register_post_accumulate_grad_hook(_grad_on_device)
    return param


def place_on_fake_device(*modules):
    """Turn every parameter and buffer of ``modules`` into an :class:`OnDevice` tensor (in place;
    a parameter shared by two modules stays shared)."""
    placed: dict[int, torch.nn.Parameter] = {}
    for module in modules:
        for part in module.modules():
            for name, param in list(part._parameters.items()):
                if param is not None:
                    if id(param) not in placed:
                        placed[id(param)] = _fake_parameter(param, param.requires_grad)
                    part._parameters[name] = placed[id(param)]
            for name, buffer in list(part._buffers.items()):
                if buffer is not None and not _on_model_device(buffer):
                    part._buffers[name] = buffer.as_subclass(OnDevice)
    return modules[0] if len(modules) == 1 else modules


@pytest.fixture
def fake_device():
    """``fake_device(*modules)``: see :func:`place_on_fake_device` (``fake_device.Tensor`` is the
    fake device's tensor type)."""
    place_on_fake_device.Tensor = OnDevice
    return place_on_fake_device


class _ExplicitPlacement(torch.overrides.TorchFunctionMode):
    """A CPU tensor placed explicitly (``.to(device)``, a factory's ``device=``) becomes
    :class:`Placed`; ``.to(other)`` goes where ``other`` is; ``.cpu()`` leaves it plain."""

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        out = func(*args, **kwargs)
        if type(out) is not torch.Tensor or func is torch.Tensor.cpu:
            return out
        if func is torch.Tensor.to:
            other = next((a for a in args[1:] if isinstance(a, torch.Tensor)), None)
            if other is not None:
                return out.as_subclass(type(other)) if isinstance(other, OnDevice) else out
            if kwargs.get("device") is not None or any(isinstance(a, (str, torch.device)) for a in args[1:]):
                return out.as_subclass(Placed)
            return out
        return out.as_subclass(Placed) if kwargs.get("device") is not None else out


@pytest.fixture
def run_device() -> str:
    """The ``device=`` / ``--device`` of a ``gpu``-marked test: :data:`TEST_DEVICE`."""
    return TEST_DEVICE


class _OnTestDevice(type):
    """``isinstance(t, RealDevice.Tensor)``: ``t`` lives on :data:`TEST_DEVICE` (a real GPU run)."""

    def __instancecheck__(cls, tensor):
        return isinstance(tensor, torch.Tensor) and tensor.device.type == torch.device(TEST_DEVICE).type


class _RealDevice:
    class Tensor(metaclass=_OnTestDevice):
        pass


@pytest.fixture
def strict_fake_device(fake_device, monkeypatch):
    """The fake device of :class:`OnDevice` in its strict form, for a run with ``device="cpu"``:
    whatever the code places explicitly (``tensor.to(device)``, ``torch.arange(..., device=)``,
    ``module.to(device)``) is on the fake device, whatever it does not stays on the CPU, and an
    operation that meets both fails as on a GPU. Returns :func:`place_on_fake_device`.

    With ``JAKET_TEST_DEVICE`` set (a real GPU) nothing is faked: the test runs on that device and
    ``strict_fake_device.Tensor`` matches the tensors placed there."""
    if TEST_DEVICE != "cpu":
        yield _RealDevice
        return
    module_to = torch.nn.Module.to

    def to(module, *args, **kwargs):
        out = module_to(module, *args, **kwargs)
        if torch._C._nn._parse_to(*args, **kwargs)[0] is not None:
            place_on_fake_device(module)
        return out

    monkeypatch.setattr(torch.nn.Module, "to", to)
    monkeypatch.setattr(OnDevice, "strict", True)
    with _ExplicitPlacement():
        yield fake_device


@pytest.fixture
def recording_tracker():
    """An Accelerate tracker (a ``GeneralTracker``, as TensorBoard's, W&B's or MLflow's) that
    keeps what it is given: ``rows`` (``{"step", **values}`` per log call), ``config``,
    ``finished``, and ``curves()`` (``{key: [(step, value), ...]}``)."""
    from accelerate.tracking import GeneralTracker

    class Recording(GeneralTracker):
        name = "recording"
        requires_logging_directory = False
        main_process_only = False

        def __init__(self):
            super().__init__()
            self.rows, self.config, self.finished = [], None, False

        @property
        def tracker(self):
            return self

        def store_init_configuration(self, values):
            self.config = values

        def log(self, values, step=None, **kwargs):
            self.rows.append({"step": step, **values})

        def finish(self):
            self.finished = True

        def curves(self) -> dict:
            out: dict = {}
            for row in self.rows:
                for key, value in row.items():
                    if key != "step":
                        out.setdefault(key, []).append((row["step"], value))
            return out

    return Recording()


@pytest.fixture
def make_trainer(tiny_bert_dir):
    """``make_trainer(out_dir, *overrides)``: a Pretrainer of the tiny config (toy KG, tiny BERT)."""
    from jaket.train.config import load_config
    from jaket.train.build import build_model, load_kg_and_corpus, prepare_data
    from jaket.train.pretrain import Pretrainer

    def make(out, *overrides, dist_info=None):
        config = load_config(Path(__file__).resolve().parents[1] / "configs" / "pretrain-tiny.yaml", list(overrides),
                             {"model.encoder": str(tiny_bert_dir)})
        torch.manual_seed(config.seed)
        np.random.seed(config.seed)
        kg, corpus, report = load_kg_and_corpus(config)
        model = build_model(config, kg)
        data = prepare_data(kg, corpus, model.language.tokenizer, config, report)
        kwargs = {} if dist_info is None else {"dist_info": dist_info}
        return Pretrainer(config, model, data, out, **kwargs)

    return make
