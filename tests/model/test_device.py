"""A device everywhere: ``--device`` on every command, models placed by ``from_pretrained``, and
no tensor on the model's device read with ``.numpy()`` (the fake accelerator of conftest.py: its
tensors refuse ``.numpy()`` as CUDA tensors do, so these runs fail wherever a GPU run would)."""


import numpy as np
import pytest
import torch

from jaket.cli import main
from jaket.kg.toy import toy_kg
from jaket.model.device import resolve_device
from jaket.model.jaket import JaketModel


@pytest.fixture(scope="module")
def model_folder(toy_jaket, tmp_path_factory):
    model, kg = toy_jaket(km_layers=1, fanouts=(3, 3))
    model.attach_memory(model.memory_for(kg, progress=False), kg)
    return model.save_pretrained(tmp_path_factory.mktemp("m") / "model")


def test_the_fake_device_refuses_numpy_as_a_gpu_does(fake_device):
    layer = fake_device(torch.nn.Linear(3, 2))
    out = layer(torch.ones(1, 3)).argmax(1)
    assert isinstance(out, fake_device.Tensor)
    with pytest.raises(TypeError, match="call .cpu"):
        out.numpy()
    assert out.cpu().numpy().shape == (1,)


def test_resolve_device_names_the_flag():
    assert resolve_device("cpu") == torch.device("cpu")
    assert resolve_device(None).type == ("cuda" if torch.cuda.is_available() else "cpu")
    with pytest.raises(ValueError, match="--device banana"):
        resolve_device("banana")
    if not torch.cuda.is_available():
        with pytest.raises(ValueError, match="--device cuda: no CUDA GPU"):
            resolve_device("cuda")


def test_from_pretrained_places_the_model_in_eval_mode(model_folder):
    model = JaketModel.from_pretrained(model_folder, device="cpu")
    assert not model.training and not any(m.training for m in model.modules())
    assert model.device == torch.device("cpu") and model.memory.device == torch.device("cpu")
    half = JaketModel.from_pretrained(model_folder, dtype=torch.bfloat16)
    assert {p.dtype for p in half.parameters()} == {torch.bfloat16}
    kg, _ = toy_kg()
    rows = half.encode_entities(kg, np.arange(4))
    assert rows.dtype == torch.bfloat16 and rows.shape == (4, half.hidden_size)
    assert not rows.requires_grad  # encode_entities runs under no_grad


def test_memory_for_and_encode_entities_run_without_gradients(model_folder):
    model = JaketModel.from_pretrained(model_folder, load_memory=False)
    kg, _ = toy_kg()
    memory = model.memory_for(kg, progress=False)
    assert not memory.entities.requires_grad
    assert not model.encode_entities(kg, np.arange(3), memory=memory).requires_grad


def test_inference_on_the_fake_device_reads_back_with_cpu(model_folder, fake_device):
    model = fake_device(JaketModel.from_pretrained(model_folder))
    kg, _ = toy_kg()
    rows = model.encode_entities(kg, np.arange(kg.num_entities))
    assert isinstance(rows, fake_device.Tensor) and rows.cpu().numpy().shape[0] == kg.num_entities
    encoding = model.encode_texts(["Paris is the capital of France."], kg)
    assert encoding.tokens[0].cpu().numpy().ndim == 2


@pytest.mark.parametrize("command", [
    ["pretrain", "--print-config"],
    ["embed", "--model", "M", "--kg", "K", "--out", "O"],
    ["finetune", "entity-classification", "--print-config"],
    ["evaluate", "entity-classification", "--print-config"],
    ["finetune", "link-prediction"],
    ["evaluate", "kgqa"],
    ["finetune", "relation-classification"],
    ["evaluate", "link-prediction", "--train-encoder"],
    ["predict", "entity-classification", "--finetuned", "M", "--kg", "K"],
    ["predict", "link-prediction", "--finetuned", "M", "--kg", "K", "--queries", "Q"],
    ["predict", "kgqa", "--finetuned", "M", "--questions", "Q"],
    ["predict", "relation-classification", "--finetuned", "M", "--support", "S", "--queries", "Q"],
    ["demo", "--quick"],
])
def test_every_command_takes_a_device_and_refuses_one_it_lacks(command, capsys):
    from jaket.cli import build_parser

    assert build_parser().parse_args(command + ["--device", "cpu"]).device == "cpu"
    assert build_parser().parse_args(command).device is None  # resolved to cuda if visible, else cpu
    if not torch.cuda.is_available():  # checked before any work is done
        assert main(command + ["--device", "cuda:7"]) == 2
        assert "--device cuda:7" in capsys.readouterr().err


def test_a_memory_too_large_for_the_device_stays_on_the_host(tmp_path, monkeypatch):
    """The rows that do not fit stay in host memory (here the memory-mapped file) and the rows a
    step asks for are copied to the model's device."""
    from jaket.model import device as device_module
    from jaket.model import memory as memory_module
    from jaket.model.memory import EntityContextMemory

    memory = EntityContextMemory(50, 3, 8, path=tmp_path / "memory.npy")
    with torch.no_grad():
        memory.entities.copy_(torch.arange(400, dtype=torch.float32).reshape(50, 8))
    monkeypatch.setattr(memory_module, "memory_placement", lambda nbytes, device: "host")  # where memory looks it up
    assert memory.place("cpu") == "host"
    assert isinstance(memory.entities, torch.Tensor) and memory.entities.device.type == "cpu"
    rows = memory.entity_rows(torch.tensor([4, 2]), device="meta")  # a device the rows are not on
    assert rows.device.type == "meta" and rows.shape == (2, 8) and rows.dtype == torch.float32
    assert torch.equal(memory.entity_rows([4, 2]), torch.arange(400.).reshape(50, 8)[[4, 2]])
    monkeypatch.undo()
    assert device_module.memory_placement(10**12, torch.device("cpu")) == "device"


# ------------------------------------------------------------------ the host-memory path on a GPU
def _cuda_as_meta(monkeypatch):
    """``.to("cuda")`` lands on the meta device (this machine may have no GPU); the rest as is."""
    real_to = torch.Tensor.to

    def to(tensor, *args, **kwargs):
        where = kwargs.get("device", args[0] if args else None)
        if isinstance(where, (str, torch.device)) and torch.device(where).type == "cuda":
            kwargs.pop("device", None)
            return real_to(tensor, "meta", *args[1:], **kwargs)
        return real_to(tensor, *args, **kwargs)

    monkeypatch.setattr(torch.Tensor, "to", to)


def test_a_host_memory_pins_the_rows_a_step_reads_not_a_copy_of_the_table(monkeypatch):
    """Issue #29: ``place`` pinned the whole entity table (a second copy of N rows in host memory,
    in every rank); only the rows gathered for a step are pinned now, straight into a reused
    pinned buffer (#39: one host copy, not two), and the table stays itself."""
    from jaket.model import memory as memory_module
    from jaket.model.memory import EntityContextMemory, StagingRing

    rings, events = [], []

    class Ring(StagingRing):  # this machine may have no pinned-memory allocator: record the request
        def __init__(self, slots=2, pinned=False):
            super().__init__(slots, pinned=False)
            rings.append(self)
            self.asked_pinned = pinned

    class Event:
        def record(self):
            events.append(self)

        def synchronize(self):
            pass

    monkeypatch.setattr(memory_module, "StagingRing", Ring)
    monkeypatch.setattr(torch.cuda, "Event", Event)
    monkeypatch.setattr(memory_module, "memory_placement", lambda nbytes, device: "host")
    _cuda_as_meta(monkeypatch)
    memory = EntityContextMemory(50, 3, 8)
    table = memory.entities.data_ptr()
    assert memory.place(torch.device("cuda")) == "host"
    assert memory.entities.data_ptr() == table and rings == []
    rows = memory.entity_rows(torch.tensor([4, 2, 9]), device="cuda")
    assert rows.shape == (3, 8) and rows.device.type == "meta"
    (ring,) = rings
    assert ring.asked_pinned and ring.buffers[0].shape == (3, 8) and ring.events[0] is events[0]
    assert torch.equal(ring.buffers[0], memory.entities[[4, 2, 9]])
    memory.entity_rows(torch.tensor([1]), device="cuda")
    assert len(rings) == 1 and len(events) == 2  # the same ring, its second slot


def test_a_refresh_into_host_memory_waits_for_its_device_to_host_copy(tiny_bert_dir, fake_device, monkeypatch):
    """Issue #29: the Eq. 12 update read the new rows on the host right after a non-blocking
    device-to-host copy, which on CUDA may not have landed yet (stale rows written). Here such a
    copy arrives as NaN, as unsynchronised memory would read; the momentum blend must be exact."""
    from jaket.kg.toy import toy_kg
    from jaket.model.language import SplitLanguageModel
    from jaket.model.memory import EntityContextMemory

    real_to = torch.Tensor.to

    def to(tensor, *args, **kwargs):
        out = real_to(tensor, *args, **kwargs)
        where = kwargs.get("device", args[0] if args else None)
        leaves_device = isinstance(tensor, fake_device.Tensor) and isinstance(where, (str, torch.device)) \
            and torch.device(where).type == "cpu"
        if kwargs.get("non_blocking") and leaves_device:
            return torch.full(out.shape, float("nan"), dtype=out.dtype)  # not landed yet
        return out

    kg, _ = toy_kg()
    lm = SplitLanguageModel.from_pretrained(tiny_bert_dir).eval()
    memory = EntityContextMemory.from_kg(lm, kg, max_length=16)
    fresh = memory.entities.clone()
    memory.entities.fill_(1.0)  # the old rows, in host memory (never placed)
    fake_device(lm)
    monkeypatch.setattr(torch.Tensor, "to", to)
    memory.refresh(lm, kg, max_length=16, momentum=0.8)
    assert torch.allclose(memory.entities, 0.8 + 0.2 * fresh, atol=1e-5)


def test_a_device_that_is_not_a_name_is_refused_before_loading(model_folder, monkeypatch):
    """``device=0`` (Torch's ordinal) was read as None, the default device; a device this machine
    lacks was refused only once the weights had been loaded. Both are refused first now."""
    import safetensors.torch

    with pytest.raises(TypeError, match="--device 0: give a device name"):
        resolve_device(0)
    monkeypatch.setattr(safetensors.torch, "load_file", lambda *a, **k: pytest.fail("the weights were loaded"))
    for device, error in ((0, TypeError), (1.0, TypeError), ("banana", ValueError)):
        with pytest.raises(error, match=f"^device {device}: "):
            JaketModel.from_pretrained(model_folder, device=device)
