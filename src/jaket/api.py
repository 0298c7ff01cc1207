"""The public API's functions that are no method of one class: :func:`pretrain` (``jaket pretrain``) and
:func:`encode_texts` with folders for the model and the KG. Loaded by ``jaket.pretrain`` /
``jaket.encode_texts`` on first use (a command-layer module, as :mod:`jaket.pipeline`)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from jaket.kg.graph import KnowledgeGraph
from jaket.kg.io import load_kg
from jaket.model.jaket import JaketModel, TextEncoding
from jaket.pipeline import dotted_settings
from jaket.train.config import load_config
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
             encoder: str | Path | None = None, config: str | Path | None = None, resume: bool = False,
             overwrite: bool = False, device: str | None = None, progress: bool = True, **settings: Any) -> dict:
    """Joint pre-training (``jaket pretrain``) from Python: the four tasks of the paper over ``kg``
    and its linked texts, the trained model written to ``out/model``
    (:meth:`jaket.JaketModel.from_pretrained` opens it); returns the run's summary (steps, losses,
    the held-out evaluation).

    ``kg``: a KG folder (default: the embedded WordNet); its ``corpus.jsonl`` is the text corpus
    unless ``corpus`` names another (a file ``jaket link`` wrote); ``encoder``: the base Hugging Face
    encoder (default: the bundled MiniLM); ``config``: a YAML file of the run (``jaket pretrain
    --print-config`` shows every key); ``settings``: any key of it, nested keys with ``__`` or as
    dicts (``steps=600``, ``memory__every=2``, ``model={"fanouts": [10, 10]}``). The defaults are
    docs/pretraining.md's table. ``resume``/``overwrite`` as ``--resume``/``--overwrite``."""
    for name, value in (("out", out), ("kg", kg), ("corpus", corpus), ("encoder", encoder), ("config", config)):
        if value is not None and not isinstance(value, (str, os.PathLike)):
            raise TypeError(f"{name}={value!r}: give a path")
    values = dotted_settings(settings)
    for key, value in (("data.path", kg), ("data.corpus", corpus), ("model.encoder", encoder)):
        if value is not None:
            if key in values:
                raise ValueError(f"{key}: given twice, as a keyword and as the setting {key}; give it once")
            values[key] = str(value)
    if kg is not None:
        values.setdefault("data.source", "dir")
    return run_pretraining(load_config(config, [], values), out, resume=resume, progress=progress, overwrite=overwrite,
               device=device)
