"""A disk cache of description embeddings: the memory of a KG is computed once per encoder.

Filling ``E^context`` / ``R^context`` (Eq. 7) reads every description of the KG through LM1: about
five minutes for WN18RR's 40,943 entities on one CPU core, paid again by every fine-tuning run
that starts from the same encoder. :func:`cached_rows` keys the rows by everything they depend on
and keeps them in ``$JAKET_CACHE/memory/`` (default ``~/.cache/jaket``; ``JAKET_CACHE=off``
switches the cache off):

* the weights the rows are computed with (a SHA-256 over the parameters of LM1 -- the embeddings
  and the first ``k`` layers -- or of the whole encoder for the full-encoder features), the
  tokenizer's vocabulary size and class, and the number of LM1 layers;
* the KG's content (:meth:`jaket.kg.graph.KnowledgeGraph.fingerprint`: ids, names, descriptions,
  triples);
* the description length, the row kind (``lm1`` or ``full``) and this module's format version.

Rows are stored as safetensors (no pickle) with a JSON description beside them, written
atomically, so an interrupted run leaves either a whole entry or none; a damaged entry is
reported and recomputed. The cache is written as soon as the rows exist, so a fine-tuning run
stopped afterwards has still paid the description pass for the next one.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import time
from collections.abc import Callable
from pathlib import Path

import torch

from jaket.atomic import atomic_path, write_text
from jaket.kg.graph import KnowledgeGraph
from jaket.model.language import SplitLanguageModel

log = logging.getLogger(__name__)

CACHE_ENV = "JAKET_CACHE"
FORMAT_VERSION = 1
_OFF = {"0", "off", "none", "no", "false"}


def cache_root() -> Path | None:
    """The cache folder, or None when ``JAKET_CACHE`` switches it off."""
    value = os.environ.get(CACHE_ENV)
    if value is not None and value.strip().lower() in _OFF | {""}:
        return None
    return Path(value) if value else Path.home() / ".cache" / "jaket"


def weights_digest(parameters) -> str:
    """SHA-256 of the given parameters' values (in order, as float32 bytes)."""
    digest = hashlib.sha256()
    for parameter in parameters:
        tensor = parameter.detach().to("cpu", torch.float32).contiguous()
        digest.update(str(tuple(tensor.shape)).encode())
        digest.update(tensor.numpy().tobytes())
    return digest.hexdigest()


def memory_key(language: SplitLanguageModel, kg: KnowledgeGraph, max_length: int, kind: str = "lm1") -> str:
    """The cache key of ``kg``'s rows read by ``language`` (module docstring)."""
    parameters = language.lm1_parameters() if kind == "lm1" else language.parameters()
    tokenizer = language.tokenizer
    parts = {"version": FORMAT_VERSION, "kind": kind, "weights": weights_digest(parameters),
             "lm1_layers": int(language.lm1_layers), "tokenizer": type(tokenizer).__name__,
             "vocab": int(len(tokenizer)), "kg": kg.fingerprint(), "max_length": int(max_length)}
    return hashlib.sha256(json.dumps(parts, sort_keys=True).encode()).hexdigest()[:32]


def cached_rows(language: SplitLanguageModel, kg: KnowledgeGraph, max_length: int,
                compute: Callable[[], tuple[torch.Tensor, torch.Tensor]], kind: str = "lm1"
                ) -> tuple[torch.Tensor, torch.Tensor]:
    """``(entity_rows, relation_rows)`` of ``kg``: from the cache when an entry for the same key
    exists, else ``compute()``, stored for the next run."""
    root = cache_root()
    if root is None:
        return compute()
    key = memory_key(language, kg, max_length, kind)
    folder = root / "memory"
    rows_path, meta_path = folder / f"{key}.safetensors", folder / f"{key}.json"
    if rows_path.is_file():
        from safetensors.torch import load_file

        try:
            tensors = load_file(str(rows_path))
            entities, relations = tensors["entities"], tensors["relations"]
            if entities.shape[0] != kg.num_entities or relations.shape[0] != kg.num_relations:
                raise ValueError(f"{entities.shape[0]} / {relations.shape[0]} rows for a KG of "
                                 f"{kg.num_entities} / {kg.num_relations}")
            log.info("description rows of %d entities read from the memory cache %s", kg.num_entities, rows_path)
            return entities, relations
        except Exception as error:  # a damaged entry is recomputed, never trusted
            log.warning("%s: unreadable memory cache entry (%s); recomputing it", rows_path, error)
    began = time.perf_counter()
    entities, relations = compute()
    try:
        from safetensors.torch import save_file

        folder.mkdir(parents=True, exist_ok=True)
        with atomic_path(rows_path) as tmp:
            save_file({"entities": entities.detach().cpu().contiguous(),
                       "relations": relations.detach().cpu().contiguous()}, str(tmp))
        write_text(meta_path, json.dumps({"kind": kind, "entities": kg.num_entities, "relations": kg.num_relations,
                                          "max_length": int(max_length), "kg_fingerprint": kg.fingerprint(),
                                          "seconds": round(time.perf_counter() - began, 1)}, indent=2) + "\n")
    except OSError as error:
        log.warning("%s: the memory cache could not be written (%s); the next run recomputes the rows",
                    folder, error)
    return entities, relations
