"""Atomic, verified, pickle-free training checkpoints.

A checkpoint is a folder ``OUT/checkpoints/step-XXXXXXX/`` holding

- ``model.safetensors`` (parameters and buffers), ``optimizer.safetensors`` (AdamW moments,
  flattened ``state.<param>.<key>``), ``memory.safetensors`` (the entity / relation memory),
  ``rng.safetensors`` (torch CPU generator state);
- ``state.json``: step, refresh counter, data position, scheduler state, optimizer
  hyper-parameters, python / numpy RNG states, the config, and the KG it was made for (sizes and a
  hash of the entity and relation ids);
- ``manifest.json``, written last: the size and SHA-256 of every other file and the run's id.

Everything is written into a temporary folder, flushed to disk and renamed into place, so a
checkpoint that has its name is complete; ``latest`` names the newest (a convenience for people:
resuming scans the folders themselves). Loading verifies the manifest first; a damaged checkpoint
is skipped for the newest intact one (:func:`restore_newest`), and a checkpoint made for another KG
or another model shape is refused before anything is loaded (:func:`check_compatible`).
Pruning deletes only checkpoints of the same run (the manifest's ``run_id``).
"""

from __future__ import annotations

import hashlib
import json
import logging
import random
import re
import shutil
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import torch
from pydantic import BaseModel, ConfigDict, ValidationError
from safetensors import safe_open
from safetensors.torch import load_file, save_file

from jaket.atomic import atomic_directory, write_json, write_text
from jaket.fields import Bool, NonNegativeFloat, NonNegativeInt, describe_errors
from jaket.kg.graph import KnowledgeGraph

log = logging.getLogger(__name__)

CHECKPOINTS = "checkpoints"
LATEST = "latest"
MANIFEST = "manifest.json"
STATE = "state.json"
FORMAT = 2
#: the files of a checkpoint besides the manifest
FILES = ("model.safetensors", "optimizer.safetensors", "memory.safetensors", "rng.safetensors", STATE)
_STEP_DIR = re.compile(r"^step-(\d+)$")
_TEMPORARY = ".step"


class CheckpointError(ValueError):
    """A checkpoint cannot be used; the message names its folder and why."""


class CorruptCheckpointError(CheckpointError):
    """A checkpoint is incomplete or damaged (an older one may still be intact)."""


class IncompatibleCheckpointError(CheckpointError):
    """A checkpoint was made for another KG or another model shape."""


class NoCheckpointError(CheckpointError):
    """There is nothing to resume from."""


# ------------------------------------------------------------------------ RNG and optimizer state
def rng_state() -> tuple[dict, dict]:
    """(json-able states of python and numpy's global RNG, tensors of torch's)."""
    version, internal, gauss = random.getstate()
    np_state = np.random.get_state()
    state = {"python": [version, list(internal), gauss],
             "numpy": [np_state[0], np_state[1].tolist(), *map(_py, np_state[2:])]}
    return state, {"torch_cpu": torch.get_rng_state()}


def _py(value):
    return value.item() if hasattr(value, "item") else value


def set_rng_state(state: dict, tensors: dict) -> None:
    version, internal, gauss = state["python"]
    random.setstate((version, tuple(internal), gauss))
    name, keys, pos, has_gauss, cached = state["numpy"]
    np.random.set_state((name, np.asarray(keys, dtype=np.uint32), pos, has_gauss, cached))
    torch.set_rng_state(tensors["torch_cpu"])


def generator_state(generator: np.random.Generator) -> dict:
    """A numpy Generator's bit-generator state as JSON (PCG64 ints are arbitrary-precision)."""
    return json.loads(json.dumps(generator.bit_generator.state))


def optimizer_tensors(optimizer: torch.optim.Optimizer) -> tuple[dict, dict]:
    """The optimizer's state as safetensors-ready tensors (``state.<param>.<key>``: AdamW's moments)
    and JSON (its parameter groups and scalar state); :func:`optimizer_from_tensors` inverts it."""
    sd = optimizer.state_dict()
    tensors, scalars = {}, {}
    for pid, state in sd["state"].items():
        for key, value in state.items():
            if torch.is_tensor(value):
                tensors[f"state.{pid}.{key}"] = value.contiguous()
            else:
                scalars[f"{pid}.{key}"] = value
    groups = [{k: v for k, v in g.items() if k != "params"} | {"params": list(g["params"])}
              for g in sd["param_groups"]]
    return tensors, {"param_groups": groups, "scalars": scalars}


def optimizer_from_tensors(tensors: dict, meta: dict) -> dict:
    """The optimizer ``state_dict`` of :func:`optimizer_tensors`' two parts."""
    state: dict = {}
    for name, value in tensors.items():
        _, pid, key = name.split(".", 2)
        state.setdefault(int(pid), {})[key] = value
    for name, value in meta["scalars"].items():
        pid, key = name.split(".", 1)
        state.setdefault(int(pid), {})[key] = value
    return {"state": state, "param_groups": meta["param_groups"]}


# ------------------------------------------------------------------------ what a checkpoint is for
def kg_signature(kg: KnowledgeGraph) -> dict:
    """Sizes of ``kg`` and a SHA-256 of its entity and relation ids (in order): what a checkpoint's
    rows and heads are indexed by."""
    digest = hashlib.sha256()
    for values in (kg.entity_ids, kg.relation_ids):
        blob = getattr(values, "blob", None)
        if blob is not None and getattr(values, "offsets", None) is not None:  # a StringTable
            digest.update(np.asarray(values.offsets, dtype=np.int64).tobytes())
            digest.update(np.asarray(blob).tobytes())
        else:
            for value in values:
                digest.update(value.encode("utf-8"))
                digest.update(b"\0")
        digest.update(b"\1")
    return {"entities": int(kg.num_entities), "relations": int(kg.num_relations),
            "categories": int(kg.num_categories), "triples": int(kg.num_triples),
            "ids_sha256": digest.hexdigest()}


def corpus_signature(train, heldout) -> dict:
    """Sizes of the tokenised pre-training texts (``train`` / ``heldout``:
    :class:`~jaket.kg.corpus.EncodedCorpus` or None) and a SHA-256 of every text's token ids and
    mentions, in order: what a checkpoint's data position (``texts_consumed``) counts in. Two
    configs giving the same texts (``data.source`` ``dir`` or ``toy`` for the same KG) agree."""
    digest = hashlib.sha256()
    sizes = {}
    for name, corpus in (("train", train), ("heldout", heldout)):
        texts = corpus.input_ids if corpus is not None else []
        mentions = corpus.mentions if corpus is not None else []
        for ids, spans in zip(texts, mentions):
            digest.update(np.ascontiguousarray(ids, dtype=np.int32).tobytes())
            digest.update(b"\0")
            digest.update(np.ascontiguousarray(spans, dtype=np.int64).tobytes())
            digest.update(b"\1")
        digest.update(b"\2")
        sizes[f"{name}_texts"] = len(texts)
        sizes[f"{name}_mentions"] = int(sum(len(m) for m in mentions))
    return {**sizes, "sha256": digest.hexdigest()}


def _sha256(path: Path) -> str:
    with open(path, "rb") as handle:
        return hashlib.file_digest(handle, "sha256").hexdigest()


# ------------------------------------------------------------------------ saving
def save_checkpoint(out_dir: str | Path, step: int, model: torch.nn.Module,
                    optimizer: torch.optim.Optimizer, scheduler, memory_tensors: dict[str, torch.Tensor],
                    state: dict, keep: int | None = None, run_id: str | None = None,
                    scaler=None) -> Path:
    """Write ``out_dir/checkpoints/step-<step>`` atomically (manifest last), point ``latest`` at it
    and keep only the ``keep`` newest checkpoints of run ``run_id`` (all when None). ``scaler``:
    fp16's gradient scaler (its scale and growth tracker go into state.json, so a resumed fp16 run
    scales its losses as the uninterrupted one)."""
    root = Path(out_dir) / CHECKPOINTS
    root.mkdir(parents=True, exist_ok=True)
    final = root / f"step-{step:07d}"
    if final.exists() and _run_of(final) != run_id:
        _set_aside(final, "it is not this run's (or is damaged)")
    with atomic_directory(final, prefix=_TEMPORARY, durable=True) as tmp:
        model_tensors = {k: v.detach().contiguous().clone() for k, v in model.state_dict().items()}
        save_file(model_tensors, tmp / "model.safetensors")
        opt_tensors, opt_meta = optimizer_tensors(optimizer)
        save_file(opt_tensors, tmp / "optimizer.safetensors")
        save_file({k: v.detach().contiguous() for k, v in memory_tensors.items()},
                  tmp / "memory.safetensors")
        py_rng, torch_rng = rng_state()
        save_file(torch_rng, tmp / "rng.safetensors")
        meta = dict(state, step=step, optimizer=opt_meta, scheduler=scheduler.state_dict(),
                    rng=py_rng, grad_scaler=_scaler_state(scaler))
        meta["scheduler"].pop("lr_lambdas", None)
        (tmp / STATE).write_text(json.dumps(meta), encoding="utf-8")
        files = {name: {"size": (tmp / name).stat().st_size, "sha256": _sha256(tmp / name)}
                 for name in FILES}
        write_json(tmp / MANIFEST, {"format": FORMAT, "step": step, "run_id": run_id, "files": files})
    write_text(root / LATEST, final.name + "\n")
    _prune(root, keep, final, run_id)
    return final


def _scaler_state(scaler) -> dict | None:
    """fp16's GradScaler state as JSON values (None without an enabled scaler)."""
    if scaler is None or not scaler.is_enabled():
        return None
    return {k: v.item() if isinstance(v, torch.Tensor) else v for k, v in scaler.state_dict().items()}


def _run_of(path: Path) -> str | None:
    try:
        manifest = json.loads((path / MANIFEST).read_text(encoding="utf-8"))
        return manifest.get("run_id") if isinstance(manifest, dict) else None
    except (OSError, ValueError):
        return None


def _set_aside(path: Path, why: str) -> Path:
    """Rename ``path`` to ``replaced-<name>[-n]`` (kept for the user to inspect, never deleted)."""
    n = 0
    while (aside := path.with_name(f"replaced-{path.name}" + (f"-{n}" if n else ""))).exists():
        n += 1
    path.rename(aside)
    log.warning("%s: %s; moved to %s before writing this step's checkpoint", path, why, aside.name)
    return aside


def _prune(root: Path, keep: int | None, newest: Path, run_id: str | None) -> None:
    """Remove all but the ``keep`` newest checkpoints of ``run_id`` (never ``newest``) and the
    temporary folders of writes that were killed (the caller holds the output folder's lock)."""
    for pattern in (f"{_TEMPORARY}.tmp-*", f"{_TEMPORARY}.old-*", ".tmp-*"):
        for stale in root.glob(pattern):
            shutil.rmtree(stale, ignore_errors=True)
    if keep is None or run_id is None:
        return
    ours = [p for p in checkpoint_dirs(root.parent) if _run_of(p) == run_id]  # newest first
    for old in ours[keep:]:
        if old != newest:
            shutil.rmtree(old, ignore_errors=True)


# ------------------------------------------------------------------------ finding and verifying
def checkpoint_dirs(out_dir: str | Path) -> list[Path]:
    """The ``step-*`` folders of ``out_dir/checkpoints``, newest step first."""
    root = Path(out_dir) / CHECKPOINTS
    if not root.is_dir():
        return []
    found = [(int(m.group(1)), p) for p in root.iterdir() if (m := _STEP_DIR.match(p.name))]
    return [p for _, p in sorted(found, reverse=True)]


def _latest_problem(out_dir: Path) -> str | None:
    """Why ``latest`` is no guide (``None`` when it names an existing checkpoint or is absent)."""
    pointer = out_dir / CHECKPOINTS / LATEST
    if not pointer.exists():
        return None
    try:
        name = pointer.read_text(encoding="utf-8").strip()
    except (OSError, UnicodeDecodeError) as error:
        return f"{pointer} is unreadable ({error})"
    if not name:
        return f"{pointer} is empty"
    if not (pointer.parent / name).is_dir():
        return f"{pointer} names {name!r}, which does not exist"
    return None


def verify_checkpoint(path: str | Path) -> dict:
    """The manifest of ``path`` after checking every file's size and SHA-256 against it; raises
    :class:`CorruptCheckpointError` naming the first file that differs."""
    path = Path(path)
    if not path.is_dir():
        raise CorruptCheckpointError(f"{path}: not a checkpoint folder")
    try:
        manifest = json.loads((path / MANIFEST).read_text(encoding="utf-8"))
    except FileNotFoundError:
        return _legacy_manifest(path)
    except (OSError, ValueError) as error:
        raise CorruptCheckpointError(f"{path / MANIFEST}: unreadable ({error})") from None
    files = manifest.get("files") if isinstance(manifest, dict) else None
    if not isinstance(files, dict) or not isinstance(manifest.get("step"), int) \
            or manifest.get("format") != FORMAT:
        raise CorruptCheckpointError(f"{path / MANIFEST}: not a format-{FORMAT} checkpoint manifest")
    for name in FILES:
        entry = files.get(name)
        if not isinstance(entry, dict) or not isinstance(entry.get("size"), int) \
                or not isinstance(entry.get("sha256"), str):
            raise CorruptCheckpointError(f"{path / MANIFEST}: no size and sha256 for {name}")
        file = path / name
        try:
            size = file.stat().st_size
        except OSError:
            raise CorruptCheckpointError(f"{file}: missing") from None
        if size != entry["size"]:
            raise CorruptCheckpointError(f"{file}: {size} bytes, the manifest says {entry['size']} "
                                         f"(truncated or replaced)")
        if _sha256(file) != entry["sha256"]:
            raise CorruptCheckpointError(f"{file}: content differs from the manifest's SHA-256 "
                                         f"(damaged)")
    return manifest


def _legacy_manifest(path: Path) -> dict:
    """A checkpoint written before manifests existed (recognised by a ``state.json`` without the
    ``kg`` record that this version writes; the old writer also replaced each ``step-*`` folder as
    a whole, atomically, so such a folder is complete): accepted when every file is present,
    with a warning; its files are then checked by reading them (safetensors verifies sizes).
    It has no run id, so a resumed run never prunes it."""
    missing = [name for name in FILES if not (path / name).is_file()]
    if missing:
        raise CorruptCheckpointError(f"{path}: no {MANIFEST} and missing {', '.join(missing)} (an "
                                     "incomplete checkpoint)")
    try:
        state = json.loads((path / STATE).read_text(encoding="utf-8"))
        step = state["step"]
    except (OSError, ValueError, KeyError, TypeError) as error:
        raise CorruptCheckpointError(f"{path / STATE}: unreadable ({error})") from None
    if "kg" in state:  # written by this version, which always writes the manifest last
        raise CorruptCheckpointError(f"{path}: no {MANIFEST} (an incomplete or damaged checkpoint)")
    if not isinstance(step, int):
        raise CorruptCheckpointError(f"{path / 'state.json'}: step is not an integer")
    log.warning("%s: written before checkpoints carried a manifest; its files are checked by "
                "loading them", path)
    return {"format": FORMAT, "step": step, "run_id": None, "files": {}, "legacy": True}


class _State(BaseModel):
    """The fields of ``state.json`` the trainer reads (others are kept as they are)."""

    model_config = ConfigDict(extra="allow")
    step: NonNegativeInt
    refresh_count: NonNegativeInt = 0
    memory_filled: Bool = True
    refresh_seconds: NonNegativeFloat = 0.0
    train_seconds: NonNegativeFloat = 0.0
    evaluation_start: dict | None = None
    config: dict = {}
    kg: dict | None = None
    corpus: dict | None = None  # corpus_signature (checkpoints since 2026-11-29)
    optimizer: dict
    scheduler: dict
    rng: dict
    #: fp16's GradScaler (scale, growth factors, growth tracker); None for other precisions
    grad_scaler: dict | None = None


def read_state(path: str | Path) -> dict:
    """``state.json`` of the checkpoint ``path``, its fields checked (:class:`CorruptCheckpointError`)."""
    path = Path(path)
    try:
        meta = json.loads((path / STATE).read_text(encoding="utf-8"))
    except (OSError, ValueError) as error:
        raise CorruptCheckpointError(f"{path / STATE}: unreadable ({error})") from None
    try:
        return _State.model_validate(meta).model_dump()
    except ValidationError as error:
        raise CorruptCheckpointError(f"{path / STATE}: not a checkpoint state ("
                                     + "; ".join(describe_errors(error.errors())) + ")") from None


def _header_shapes(file: Path) -> dict[str, list[int]]:
    """Tensor shapes from a safetensors header (nothing else is read)."""
    try:
        with safe_open(str(file), framework="pt") as handle:
            return {key: list(handle.get_slice(key).get_shape()) for key in handle.keys()}
    except Exception as error:  # safetensors raises its own SafetensorError for a bad header
        raise CorruptCheckpointError(f"{file}: unreadable safetensors header ({error})") from None


def check_compatible(path: str | Path, meta: dict, model: torch.nn.Module, kg: dict | None,
                     memory_shapes: dict[str, Sequence[int]], config_changes: Sequence[str] = (),
                     corpus: dict | None = None, data_changes: Sequence[str] = ()) -> None:
    """Refuse a checkpoint made for another KG (``kg``: :func:`kg_signature` of this run's), for
    other pre-training texts (``corpus``: :func:`corpus_signature`; ``data_changes``: the config's
    ``data.*`` differences, named in the message) or whose tensors do not fit the model and memory
    built from the config, before loading any."""
    path = Path(path)
    saved = meta.get("kg")
    advice = "resume with the KG and config it was made with, or start a new run with another --out"
    if kg is not None and isinstance(saved, dict):
        for key, noun in (("entities", "entities"), ("relations", "relations"),
                          ("categories", "categories")):
            if saved.get(key) != kg[key]:
                raise IncompatibleCheckpointError(
                    f"{path}: this checkpoint was made for a KG of {saved.get(key)} {noun}; the KG "
                    f"has {kg[key]} ({advice})")
        if saved.get("ids_sha256") != kg["ids_sha256"]:
            raise IncompatibleCheckpointError(
                f"{path}: this checkpoint was made for a KG with the same sizes but other entity or "
                f"relation ids ({advice})")
        if saved.get("triples") != kg["triples"]:
            log.warning("%s: made for a KG of %s triples; the KG has %s (the run continues, but it "
                        "no longer repeats an uninterrupted one)", path, saved.get("triples"),
                        kg["triples"])
    texts = meta.get("corpus")
    if corpus is not None and isinstance(texts, dict) and texts != corpus:
        labels = {"train_texts": "training texts", "heldout_texts": "held-out texts",
                  "train_mentions": "training mentions", "heldout_mentions": "held-out mentions"}
        sizes = ", ".join(f"{label}: {texts.get(k)} then, {corpus.get(k)} now" for k, label in labels.items()
                          if texts.get(k) != corpus.get(k)) or "the same sizes, other texts"
        changed = f"; the config differs in {', '.join(data_changes)}" if data_changes else ""
        raise IncompatibleCheckpointError(
            f"{path}: this checkpoint was made with other pre-training texts ({sizes}){changed}: resuming "
            f"would train on other texts than the run it continues ({advice})")
    expected = {k: list(v.shape) for k, v in model.state_dict().items()}
    problems = _shape_problems(_header_shapes(path / "model.safetensors"), expected)
    problems += _shape_problems(_header_shapes(path / "memory.safetensors"),
                                {k: list(v) for k, v in memory_shapes.items()}, "memory ")
    if problems:
        changed = f"; the config differs in {', '.join(config_changes)}" if config_changes else ""
        raise IncompatibleCheckpointError(
            f"{path}: its tensors do not fit the model built from the config ({'; '.join(problems[:3])}"
            f"{f'; {len(problems) - 3} more' if len(problems) > 3 else ''}){changed} ({advice})")


def _shape_problems(saved: dict[str, list[int]], expected: dict[str, list[int]], what: str = ""
                    ) -> list[str]:
    problems = [f"{what}{k} is {saved[k]} in the checkpoint, {expected[k]} in the model"
                for k in expected if k in saved and saved[k] != expected[k]]
    problems += [f"{what}{k} missing from the checkpoint" for k in expected if k not in saved]
    problems += [f"{what}{k} unknown to the model" for k in saved if k not in expected]
    return problems


# ------------------------------------------------------------------------ loading
def load_checkpoint(path: str | Path, model: torch.nn.Module, optimizer: torch.optim.Optimizer,
                    scheduler, scaler=None) -> tuple[dict, dict[str, torch.Tensor]]:
    """Restore model, optimizer, scheduler, global RNGs and (``scaler``: an fp16 run's) gradient
    scaler; return (state.json, memory tensors). Every file is read before anything is changed,
    so a damaged file leaves the model as it was."""
    path = Path(path)
    meta = read_state(path)
    tensors = {}
    for name in ("model", "optimizer", "rng", "memory"):
        try:
            tensors[name] = load_file(path / f"{name}.safetensors")
        except Exception as error:  # SafetensorError, OSError
            raise CorruptCheckpointError(f"{path / name}.safetensors: unreadable ({error})") from None
    missing, unexpected = model.load_state_dict(tensors["model"], strict=False)
    if unexpected or missing:
        raise IncompatibleCheckpointError(f"{path}/model.safetensors: missing {missing}, "
                                          f"unexpected {unexpected}")
    try:  # the hash matched, so a failure here is a state written by another version (or by hand)
        optimizer.load_state_dict(optimizer_from_tensors(tensors["optimizer"], meta["optimizer"]))
        scheduler_state = dict(meta["scheduler"])
        scheduler_state["lr_lambdas"] = [None] * len(optimizer.param_groups)  # rebuilt, not stored
        scheduler.load_state_dict(scheduler_state)
        set_rng_state(meta["rng"], tensors["rng"])
        if scaler is not None and scaler.is_enabled():
            if meta.get("grad_scaler"):
                scaler.load_state_dict(meta["grad_scaler"])
            else:
                log.warning("%s holds no gradient scaler state (not an fp16 run, or written before "
                            "it was saved): the fp16 loss scale starts afresh", path)
    except (KeyError, TypeError, ValueError, AttributeError, IndexError, RuntimeError) as error:
        raise CorruptCheckpointError(f"{path}: optimizer, scheduler or RNG state unusable "
                                     f"({type(error).__name__}: {error})") from None
    return meta, tensors["memory"]


def restore_newest(out_dir: str | Path, restore) -> tuple[Path, dict] | None:
    """Call ``restore(path, manifest)`` on the newest intact checkpoint of ``out_dir`` and return
    ``(path, manifest)``; a checkpoint that fails verification or reading (``CorruptCheckpointError``)
    is skipped with a warning naming it and why, and the next older one is tried.

    Returns ``None`` when there is no checkpoint at all; raises :class:`CorruptCheckpointError`
    when there are some but none is intact, and lets :class:`IncompatibleCheckpointError` through
    (an older checkpoint of the same run would not fit either).
    """
    out_dir = Path(out_dir)
    candidates = checkpoint_dirs(out_dir)
    if not candidates:
        problem = _latest_problem(out_dir)
        if problem:
            log.warning("%s and there is no step-* folder", problem)
        return None
    problem = _latest_problem(out_dir)
    if problem:
        log.warning("%s: resuming from the newest intact checkpoint instead", problem)
    failures = []
    for path in candidates:
        try:
            manifest = verify_checkpoint(path)
            restore(path, manifest)
        except CorruptCheckpointError as error:
            failures.append(str(error))
            log.warning("%s: trying an older checkpoint", error)
            continue
        if failures:
            log.warning("resuming from %s, the newest intact checkpoint (%d newer one(s) damaged)",
                        path.name, len(failures))
        return path, manifest
    raise CorruptCheckpointError(f"{out_dir / CHECKPOINTS}: no intact checkpoint to resume from ("
                                 + "; ".join(failures) + ")")
