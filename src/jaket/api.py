"""The public API's functions that are no method of one class: :func:`pretrain` (``jaket pretrain``) and
:func:`encode_texts` with folders for the model and the KG. Loaded by ``jaket.pretrain`` /
``jaket.encode_texts`` on first use (a command-layer module, as :mod:`jaket.pipelines`)."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from jaket.kg.graph import KnowledgeGraph
from jaket.kg.io import load_kg
from jaket.model.jaket import JaketModel, TextEncoding
from jaket.train.job import pretraining_config
from jaket.train.pretrain import pretrain as run_pretraining


def encode_texts(model: JaketModel | str | Path, texts, kg: KnowledgeGraph | str | Path,
                 **options: Any) -> TextEncoding:
    """Plain texts in, ``Z^LM`` and mention embeddings out: :meth:`jaket.model.jaket.JaketModel.encode_texts`
    with the model and the KG given as objects or as folders (a pre-trained model folder,
    ``save_pretrained``'s; a KG folder, :func:`jaket.kg.io.load_kg`'s). The texts are linked to the
    KG's entities, the knowledge module runs over its memory (Eq. 1-5), its output is fused at the
    mentions (Eq. 8-9) and LM2 finishes (Eq. 10). ``options``: the method's keywords
    (``max_length``, ``batch_size``, ``memory``, ``linker``, ``generator``)."""
    _check_folder("kg", kg, KnowledgeGraph)
    _check_folder("model", model, JaketModel)
    if not isinstance(kg, KnowledgeGraph):
        kg = load_kg(kg)
    if not isinstance(model, JaketModel):
        model = JaketModel.from_pretrained(model)
    return model.encode_texts(texts, kg, **options)


def _check_folder(name: str, value, kind: type) -> None:
    """``value`` is a ``kind`` or a folder's path (a ``TypeError`` naming the argument otherwise)."""
    if not isinstance(value, (kind, str, os.PathLike)):
        raise TypeError(f"{name}={value!r}: give a {kind.__name__} or the path of its folder")


def pretrain(out: str | Path, *, kg: str | Path | None = None, corpus: str | Path | None = None,
             encoder: str | Path | None = None, config: str | Path | None = None, resume: bool | str = False,
             overwrite: bool = False, device: str | None = None, progress: bool = True, init: str | Path | None = None,
             precision: str | None = None, overrides: Sequence[str] = (), **settings: Any) -> dict:
    """Joint pre-training (``jaket pretrain``) from Python: the four tasks of the paper over ``kg``
    and its linked texts, the trained model written to ``out/model``
    (:meth:`jaket.JaketModel.from_pretrained` opens it); returns the run's summary (steps, losses,
    the held-out evaluation). ``jaket pretrain`` is a thin layer over this function: the same job
    gives the same run and the same errors (:func:`jaket.train.job.pretraining_config`).

    ``kg``: a KG folder (default: the embedded WordNet); its ``corpus.jsonl`` is the text corpus
    unless ``corpus`` names another (a file ``jaket link`` wrote); ``encoder``: the base Hugging Face
    encoder (default: the bundled MiniLM); ``init``: a jaket model folder to continue pre-training
    from; ``config``: a YAML file of the run (``jaket pretrain --print-config`` shows every key);
    ``overrides``: ``key=value`` strings as ``--set`` takes them (values read as YAML);
    ``settings``: any key of it, nested keys with ``__`` or as dicts (``steps=600``,
    ``memory__every=2``, ``model={"fanouts": [10, 10]}``); ``precision``: ``auto``, ``fp32`` or
    ``bf16`` (``--precision``). The defaults are docs/pretraining.md's table.
    ``resume``: ``True`` (continue from the newest checkpoint, an error when there is none) or
    ``"auto"``; ``overwrite``: replace an earlier run in ``out``."""
    job = pretraining_config(out, config=config, overrides=overrides, settings=settings, kg=kg, corpus=corpus,
                             encoder=encoder, init=init, resume=resume, overwrite=overwrite, precision=precision,
                             device=device)
    return run_pretraining(job, out, resume=resume, progress=progress, overwrite=overwrite, device=device)
