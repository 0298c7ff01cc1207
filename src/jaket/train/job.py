"""The pre-training job: the typed config one run trains, built and checked in one place.

``jaket pretrain`` (:mod:`jaket.train.cli`) and :func:`jaket.pretrain` both call
:func:`pretraining_config`, so the same bad job gives the same message from the command line and from
Python (tested): the command only turns its flags into the arguments below. Settings are layered as
everywhere (:mod:`jaket.overrides`): the embedded default < the YAML file ``config`` < ``overrides``
(``--set key=value`` strings) < ``settings`` (``{"a.b": value}``, ``a__b`` or nested dicts) < the
dedicated arguments (``kg``, ``corpus``, ``encoder``, ``init``, ``precision``).
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from jaket.errors import InputError, UsageError
from jaket.kg.parsing import file_not_a_kg_folder
from jaket.model.device import choose_precision, resolve_device
from jaket.overrides import dotted_settings
from jaket.train.config import PretrainConfig, load_config

log = logging.getLogger(__name__)


def _is_jaket_folder(path: Path) -> bool:
    return (path / "config.json").is_file() and (path / "jaket.safetensors").is_file()


def pretraining_config(out: str | Path, *, config: str | Path | None = None, overrides: Sequence[str] = (),
                       settings: Mapping[str, Any] | None = None, kg: str | Path | None = None,
                       corpus: str | Path | None = None, encoder: str | Path | None = None,
                       init: str | Path | None = None, resume: bool | str = False, overwrite: bool = False,
                       precision: str | None = None, device: str | None = None,
                       check_inputs: bool = True) -> PretrainConfig:
    """The :class:`~jaket.train.config.PretrainConfig` of a run into ``out``, every check of the job made.

    ``config``: a YAML file; without it a resumed run (``resume``) continues with the settings it
    wrote (``out/config.yaml``), not with the embedded default. ``kg``: a KG folder
    (``data.source: dir``); ``corpus``: a mention corpus instead of the KG's own; ``encoder``: a base
    Hugging Face encoder (a jaket model folder is refused: that is ``init``, continuing pre-training
    from it); ``precision``: ``auto`` / ``fp32`` / ``bf16`` on ``device``. ``check_inputs=False``
    leaves the KG and corpus paths unchecked (``--print-config``).

    Raises ``TypeError`` for a path argument that is no path, :class:`~jaket.errors.UsageError` for
    contradicting or misplaced arguments and a bad setting (exit status 2 on the command line),
    :class:`~jaket.errors.InputError` for a KG or corpus that is not there (exit status 1).
    """
    paths = {"out": out, "config": config, "kg": kg, "corpus": corpus, "encoder": encoder, "init": init}
    for name, value in paths.items():
        if value is not None and not isinstance(value, (str, os.PathLike)):
            raise TypeError(f"{name}={value!r}: give a path")
    where = resolve_device(device)  # a device this machine lacks is refused first, even for --print-config
    if resume and overwrite:
        raise UsageError("resume and overwrite contradict each other: continue the run or replace it")
    if encoder is not None and _is_jaket_folder(Path(encoder)):
        raise UsageError(f"encoder {encoder}: a jaket model folder; to continue pre-training from it give it as "
                         f"init (--init {encoder}); encoder takes a base Hugging Face encoder")
    path = config
    run_config = Path(out) / "config.yaml"
    if path is None and resume and run_config.is_file():
        path = run_config
        log.info("resume: the settings of %s (give a config to use others)", run_config)
    values = dotted_settings(settings or {})
    given = {"data.path": kg, "data.corpus": corpus, "model.encoder": encoder, "init": init}
    for key, value in given.items():
        if value is None:
            continue
        if key in values:
            raise UsageError(f"{key}: given twice, as an argument and as the setting {key}; give it once")
        values[key] = str(value)
    if kg is not None:
        values.setdefault("data.source", "dir")
    if precision is not None:
        chosen = choose_precision(precision, where)
        values.update({"bf16": True} if chosen == "bf16" else {"bf16": False, "mixed_precision": "no"})
    resolved = load_config(path, list(overrides), values)  # a ConfigError is a usage error
    if check_inputs:
        _check_inputs(kg, corpus)
    return resolved


def _check_inputs(kg, corpus) -> None:
    """The KG folder and the corpus file are there (a data error, exit status 1)."""
    if kg is not None and not Path(kg).is_dir():
        if Path(kg).is_file():  # an ontology or a KG file where its folder is expected
            raise InputError(f"kg {kg}: {file_not_a_kg_folder(Path(kg))}")
        raise InputError(f"kg {kg}: no such directory")
    if corpus is not None and not Path(corpus).is_file():
        raise InputError(f"corpus {corpus}: no such file (a mention corpus: "
                         f"`jaket link --kg DIR --texts FILE --out {corpus}`)")


__all__ = ["pretraining_config"]
