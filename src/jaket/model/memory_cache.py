"""A disk cache of description embeddings: the memory of a KG is computed once per encoder.

Filling ``E^context`` / ``R^context`` (Eq. 7) reads every description of the KG through LM1: about
five minutes for WN18RR's 40,943 entities on one CPU core, paid again by every fine-tuning run
that starts from the same encoder. :func:`cached_rows` keys the rows by everything they depend on
and keeps them in ``$JAKET_CACHE/memory/`` (default ``~/.cache/jaket``; ``JAKET_CACHE=off``
switches the cache off):

* the weights the rows are computed with (a SHA-256 over the parameters of LM1 -- the embeddings
  and the first ``k`` layers -- or of the whole encoder for the full-encoder features), the
  tokenizer's vocabulary size and class, and the number of LM1 layers;
* the KG's ids (:meth:`jaket.kg.graph.KnowledgeGraph.fingerprint`) and the texts the rows are read
  from (:func:`texts_digest`: every entity's and relation's name and description). The fingerprint
  alone leaves the texts out, and until the thirty-second session the key did too: a KG whose
  descriptions changed under the same ids (KG-50%'s made from its own half, a user's edited
  descriptions) read the rows of the first one cached;
* the description length, the row kind (``lm1`` or ``full``) and this module's format version.

Rows are stored as safetensors (no pickle) with a JSON description beside them, written
atomically, so an interrupted run leaves either a whole entry or none; a damaged entry is
reported and recomputed. The cache is written as soon as the rows exist, so a fine-tuning run
stopped afterwards has still paid the description pass for the next one.

Beside the memory, :class:`TextVectorCache` keeps the sentence vectors of texts (the senses' texts
of word-sense disambiguation and of ``jaket link --model --scorer text+kg``) in
``$JAKET_CACHE/text-vectors/``, keyed by the whole encoder's weights, the precision of the pass and
each text's SHA-256, so a later run on other texts reads the ones it shares.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
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


def texts_digest(kg: KnowledgeGraph) -> str:
    """BLAKE2b of the texts a memory's rows are read from: every entity's name and description and
    every relation's name and description, in index order (Eq. 7 reads the description and finds
    the name in it). :meth:`KnowledgeGraph.fingerprint` leaves them out on purpose, so two graphs
    with the same ids and other descriptions (KG-50%'s made from its own half) share a fingerprint
    but never a cache entry."""
    digest = hashlib.blake2b(digest_size=16)
    for table in (kg.entity_names, kg.entity_descriptions, kg.relation_names, kg.relation_descriptions):
        for text in table:
            encoded = str(text).encode("utf-8")
            digest.update(len(encoded).to_bytes(8, "little"))
            digest.update(encoded)
        digest.update(b"\x00")
    return digest.hexdigest()


def memory_key(language: SplitLanguageModel, kg: KnowledgeGraph, max_length: int, kind: str = "lm1",
               precision: str = "fp32") -> str:
    """The cache key of ``kg``'s rows read by ``language`` (module docstring) in ``precision`` (the
    pass's: ``fp32``, or ``bf16`` under autocast, whose rows differ in their last bits)."""
    # the full encoder's forward: not the MLM head, initialised anew at each load of a checkpoint without one
    parameters = language.lm1_parameters() if kind == "lm1" else language.encoder_parameters()
    tokenizer = language.tokenizer
    parts = {"version": FORMAT_VERSION, "kind": kind, "weights": weights_digest(parameters),
             "lm1_layers": int(language.lm1_layers), "tokenizer": type(tokenizer).__name__,
             "vocab": int(len(tokenizer)), "kg": kg.fingerprint(), "texts": texts_digest(kg),
             "max_length": int(max_length)}
    if precision != "fp32":  # (an fp32 key is the one written before precision was a part of it)
        parts["precision"] = precision
    return hashlib.sha256(json.dumps(parts, sort_keys=True).encode()).hexdigest()[:32]


def cached_rows(language: SplitLanguageModel, kg: KnowledgeGraph, max_length: int,
                compute: Callable[[], tuple[torch.Tensor, torch.Tensor]], kind: str = "lm1",
                precision: str = "fp32") -> tuple[torch.Tensor, torch.Tensor]:
    """``(entity_rows, relation_rows)`` of ``kg``: from the cache when an entry for the same key
    exists, else ``compute()``, stored for the next run."""
    root = cache_root()
    if root is None:
        return compute()
    key = memory_key(language, kg, max_length, kind, precision)
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
        write_text(meta_path, json.dumps({"kind": kind, "precision": precision, "entities": kg.num_entities,
                                          "relations": kg.num_relations,
                                          "max_length": int(max_length), "kg_fingerprint": kg.fingerprint(),
                                          "seconds": round(time.perf_counter() - began, 1)}, indent=2) + "\n")
    except OSError as error:
        log.warning("%s: the memory cache could not be written (%s); the next run recomputes the rows",
                    folder, error)
    return entities, relations


# ----------------------------------------------------------------------------- sentence vectors of texts

#: the text-vector cache's format (its entries of another version are never read)
TEXT_FORMAT_VERSION = 1
#: a folder of more shards than this is merged into one when it is read
MAX_SHARDS = 8


def text_digest(text: str) -> bytes:
    """SHA-256 of a text's UTF-8 bytes (a lone surrogate kept as written): what a cached vector is found by."""
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).digest()


def pass_precision(device: torch.device) -> str:
    """The precision an encoder pass on ``device`` runs at now: the autocast dtype (``bfloat16``,
    ``float16``) where autocast is on, else ``float32``."""
    kind = device.type
    if torch.is_autocast_enabled(kind):
        return str(torch.get_autocast_dtype(kind)).removeprefix("torch.")
    return "float32"


class TextVectorCache:
    """Sentence vectors of texts read by one encoder, kept on disk: ``$JAKET_CACHE/text-vectors/KEY/``
    (``JAKET_CACHE=off``: :meth:`for_encoder` gives None, nothing is kept).

    ``KEY`` holds everything a text's vector depends on beside the text: the weights of the whole
    encoder (LM1 + LM2, :func:`weights_digest`; not the MLM head) and their dtype, the tokenizer's class and vocabulary
    size, the tokens read of a text (``max_length``), the device type and the precision of the pass
    (:func:`pass_precision`), and :data:`TEXT_FORMAT_VERSION`. Inside, a text is found by its
    SHA-256 (:func:`text_digest`): another text, or the same text under other weights, is never
    matched, so a stale vector cannot be read. The folder holds shards, ``NAME.safetensors``
    (``digests`` ``(n, 32)`` uint8, ``vectors`` ``(n, F)`` float32, the key in the header's metadata;
    no pickle) written atomically, each with ``NAME.json`` describing it for a reader; a shard that
    cannot be read, or whose key or width is not this cache's, is reported and never used. A run
    adds one shard of the texts it encoded; more than :data:`MAX_SHARDS` are merged when read.

    ``read`` / ``stored`` count the texts found here / kept here by this object."""

    def __init__(self, folder: Path, key: str, dim: int, precision: str = "float32"):
        self.folder, self.key, self.dim, self.precision = folder, key, int(dim), precision
        self.read = 0
        self.stored = 0
        self._index: dict[bytes, tuple[torch.Tensor, int]] | None = None

    @classmethod
    def for_encoder(cls, language: SplitLanguageModel, max_length: int,
                    precision: str | None = None) -> "TextVectorCache | None":
        """The cache of ``language``'s vectors of texts cut at ``max_length`` tokens, at ``precision``
        (default: the pass's now, :func:`pass_precision`); None where the cache is switched off."""
        root = cache_root()
        if root is None:
            return None
        parameters = list(language.encoder_parameters())  # not the MLM head: new at each load without one
        device = parameters[0].device
        tokenizer = language.tokenizer
        precision = precision or pass_precision(device)
        parts = {"version": TEXT_FORMAT_VERSION, "weights": weights_digest(parameters),
                 "dtype": str(parameters[0].dtype), "tokenizer": type(tokenizer).__name__,
                 "vocab": int(len(tokenizer)), "max_length": int(max_length), "device": device.type,
                 "precision": precision}
        key = hashlib.sha256(json.dumps(parts, sort_keys=True).encode()).hexdigest()[:32]
        return cls(root / "text-vectors" / key, key, int(language.hidden_size), precision)

    # ---------------------------------------------------------------- reading
    def _shards(self) -> list[Path]:
        return sorted(self.folder.glob("*.safetensors")) if self.folder.is_dir() else []

    def _read_shard(self, path: Path) -> tuple[torch.Tensor, torch.Tensor] | None:
        from safetensors import safe_open

        try:
            with safe_open(str(path), framework="pt") as handle:
                meta = handle.metadata() or {}
                if meta.get("key") != self.key:
                    raise ValueError(f"written for cache key {meta.get('key')!r}, not {self.key!r}")
                digests, vectors = handle.get_tensor("digests"), handle.get_tensor("vectors")
            if digests.dtype != torch.uint8 or digests.ndim != 2 or digests.shape[1] != 32:
                raise ValueError(f"digests of shape {tuple(digests.shape)} {digests.dtype}")
            if vectors.dtype != torch.float32 or tuple(vectors.shape) != (digests.shape[0], self.dim):
                raise ValueError(f"vectors of shape {tuple(vectors.shape)} {vectors.dtype} for "
                                 f"{digests.shape[0]} texts of width {self.dim}")
        except FileNotFoundError:  # merged away by another run since it was listed
            return None
        except Exception as error:  # a damaged or foreign shard is never trusted
            log.warning("%s: unreadable text-vector cache shard (%s); not used", path, error)
            return None
        return digests, vectors

    def _load(self) -> dict[bytes, tuple[torch.Tensor, int]]:
        if self._index is not None:
            return self._index
        index: dict[bytes, tuple[torch.Tensor, int]] = {}
        shards = self._shards()
        read = []
        for path in shards:
            found = self._read_shard(path)
            if found is None:
                continue
            digests, vectors = found
            read.append((path, digests, vectors))
            for row, digest in enumerate(digests.numpy()):
                index[digest.tobytes()] = (vectors, row)
        self._index = index
        if len(read) > MAX_SHARDS:
            self._merge(read)
        return index

    def _merge(self, read: list) -> None:
        """One shard of every row of ``read`` (each text once), then the merged shards removed."""
        digests = torch.cat([d for _, d, _ in read])
        vectors = torch.cat([v for _, _, v in read])
        keep = np.unique(digests.numpy(), axis=0, return_index=True)[1]
        keep = torch.from_numpy(np.sort(keep))
        if self._write(digests[keep], vectors[keep]) is None:
            return
        merged = self._shard_name(digests[keep])
        for path, _, _ in read:
            if path.stem != merged:
                for old in (path, path.with_suffix(".json")):
                    old.unlink(missing_ok=True)

    def lookup(self, texts: list[str]) -> dict[int, torch.Tensor]:
        """The cached vectors of ``texts`` found here: position in ``texts`` -> vector (float32)."""
        index = self._load()
        found = {}
        for i, text in enumerate(texts):
            hit = index.get(text_digest(text))
            if hit is not None:
                found[i] = hit[0][hit[1]]
        self.read += len(found)
        return found

    # ---------------------------------------------------------------- writing
    @staticmethod
    def _shard_name(digests: torch.Tensor) -> str:
        return hashlib.sha256(digests.numpy().tobytes()).hexdigest()[:32]

    def _write(self, digests: torch.Tensor, vectors: torch.Tensor) -> Path | None:
        from safetensors.torch import save_file

        name = self._shard_name(digests)
        path = self.folder / f"{name}.safetensors"
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
            with atomic_path(path) as tmp:
                save_file({"digests": digests.contiguous(), "vectors": vectors.contiguous()}, str(tmp),
                          metadata={"key": self.key, "format": str(TEXT_FORMAT_VERSION)})
            write_text(path.with_suffix(".json"), json.dumps(
                {"key": self.key, "texts": int(digests.shape[0]), "dim": self.dim,
                 "written": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}, indent=2) + "\n")
        except OSError as error:
            log.warning("%s: the text-vector cache could not be written (%s); the next run encodes these "
                        "texts again", self.folder, error)
            return None
        return path

    def store(self, texts: list[str], vectors: torch.Tensor) -> None:
        """Keep the vectors of ``texts`` (one shard; texts already kept are left out)."""
        index = self._load()
        vectors = vectors.detach().to("cpu", torch.float32)
        fresh: dict[bytes, int] = {}
        for i, text in enumerate(texts):
            digest = text_digest(text)
            if digest not in index:
                fresh.setdefault(digest, i)
        if not fresh:
            return
        rows = torch.tensor(list(fresh.values()), dtype=torch.long)
        digests = torch.from_numpy(np.frombuffer(b"".join(fresh), dtype=np.uint8).reshape(-1, 32).copy())
        kept = vectors[rows].contiguous()
        if self._write(digests, kept) is not None:
            for row, digest in enumerate(fresh):
                index[digest] = (kept, row)
            self.stored += len(fresh)
