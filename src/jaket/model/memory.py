"""The entity context embedding memory ``E^context`` (and ``R^context``), Eq. 7, 11, 12.

Encoding the description of every entity in a sampled neighbourhood at every step is what makes
joint pre-training slow; the paper caches the LM1 description embeddings instead:

- Eq. 7: ``E_j^(0) = (Z^{e_j}_s + Z^{e_j}_o) / 2``, LM1 over entity ``j``'s description, averaged at
  the first mention of the entity in it (``s = o = 1`` when there is none); relations likewise.
- Eq. 11: the whole memory is recomputed every ``T(i) = min(I_init * a^floor(i / r), I_max)`` steps
  (:func:`refresh_interval`), ``i`` counting the refreshes so far.
- Eq. 12: with momentum, ``E <- m E + (1 - m) E_new`` (m = 0.8); the first fill replaces.

Rows are stored in float32, float16 or bfloat16, in RAM or in a memory-mapped ``.npy`` file so a
Wikidata-size memory (3.7M x 768) need not sit in RAM. A refresh tokenises each description once
(cached), sorts rows by length so batches carry little padding, runs LM1 under ``no_grad`` and can
take a ``(rank, world_size)`` slice so that distributed ranks split the work. The sorting
(:func:`length_sorted_batches`) is shared with every other pass of the encoder over many texts.
"""

from __future__ import annotations

import json
import logging
import time
import weakref
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from jaket.atomic import atomic_path, write_text
from jaket.jsonio import JSONInputError, read_json
from jaket.kg.corpus import DescriptionTokens
from jaket.kg.graph import KnowledgeGraph
from jaket.model.device import memory_placement
from jaket.model.heads import span_mean
from jaket.model.language import SplitLanguageModel
from jaket.model.memory_cache import cached_rows

log = logging.getLogger(__name__)

DTYPES = {"float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16}
_NUMPY_STORAGE = {"float32": np.float32, "float16": np.float16, "bfloat16": np.uint16}
MEMORY_FILE = "memory.safetensors"
MEMORY_META = "memory.json"


def refresh_interval(i: int, initial: int = 10, growth: int = 2, every: int = 3,
                     maximum: int = 500) -> int:
    """``T(i) = min(I_init * a^floor(i / r), I_max)`` (Eq. 11): steps between refresh ``i`` and ``i+1``."""
    if i < 0:
        raise ValueError("the refresh counter i starts at 0")
    return int(min(initial * growth ** (i // max(1, every)), maximum))


def refresh_steps(total: int, initial: int = 10, growth: int = 2, every: int = 3,
                  maximum: int = 500) -> list[int]:
    """The steps of a ``total``-step run before which the memory is refreshed: the gaps are
    :func:`refresh_interval` ``T(0), T(1), ...`` (Eq. 11). The initial fill happens before step 0
    and is not listed."""
    steps, step, i = [], 0, 0
    while True:
        step += refresh_interval(i, initial, growth, every, maximum)
        i += 1
        if step >= total:
            return steps
        steps.append(step)


def length_sorted_batches(lengths, batch_size: int) -> list[np.ndarray]:
    """Positions ``0 .. n-1`` of texts of token counts ``lengths``, sorted by length (stable) and cut
    into batches of ``batch_size``: a batch is padded to its longest text, so texts of like length
    together carry little padding (5% where the KG's order carries 61%: docs/performance.md).
    Every pass of the encoder over many texts batches them so (the memory refresh and the tasks'
    description features, Eq. 7: :func:`description_batches`; the sense texts,
    :func:`jaket.senses.texts.text_vectors`); the caller puts each batch's results back at its
    positions."""
    if batch_size < 1:
        raise ValueError(f"batch_size must be at least 1, got {batch_size}")
    order = np.argsort(np.asarray(lengths), kind="stable")
    return [order[begin:begin + batch_size] for begin in range(0, len(order), batch_size)]


def padding_groups(lengths, min_saving: float = 0.2) -> list[np.ndarray]:
    """Positions ``0 .. n-1`` of texts of token counts ``lengths`` in at most two groups of like
    length, each to be padded to its own longest: the split (by length) that pads the fewest
    tokens, kept when it pads at least ``min_saving`` fewer than one group would; else one group
    in the given order.

    For a batch whose rows are a random draw (the description rows of a pre-training step, Eq. 7
    with gradients): 64 WordNet descriptions padded to 32 tokens carry 36% padding, and two groups
    cut the sense run's step by a tenth (docs/performance.md, "The 110M sense run on a native-bf16
    CPU"). Measured there too: more groups make the matrix products too small to gain, and
    rounding the groups' sizes and widths to multiples of 8 (shapes that recur) gained less than
    the exact widths."""
    lengths = np.asarray(lengths, dtype=np.int64)
    n = len(lengths)
    if n < 2:
        return [np.arange(n)]
    order = np.argsort(lengths, kind="stable")
    ordered = lengths[order]
    one = n * int(ordered[-1])
    # splitting before position i: i rows padded to ordered[i - 1], the rest to the longest
    cost = np.arange(1, n) * ordered[:-1] + (n - np.arange(1, n)) * ordered[-1]
    split = int(np.argmin(cost)) + 1
    if cost[split - 1] > (1.0 - min_saving) * one:
        return [np.arange(n)]
    return [order[:split], order[split:]]


@torch.no_grad()
def description_batches(language: SplitLanguageModel, tokens: DescriptionTokens, rows: np.ndarray, batch_size: int,
                        *, full: bool = False, progress: bool = False, desc: str = "descriptions",
                        min_batches: int = 20):
    """Eq. 7 over ``rows`` of ``tokens``, in length-sorted batches (:func:`length_sorted_batches`):
    yields ``(the batch's rows, (Z_s + Z_o) / 2 of each as float32)``, LM1's reading (the memory
    refresh) or, with ``full``, the whole encoder's (LM1 + LM2: the ``lm`` setting's features); the
    caller puts each back at its rows. A bar when ``progress`` and there are ``min_batches`` batches."""
    from tqdm.auto import tqdm

    device = next(iter(language.parameters())).device
    batches = length_sorted_batches(tokens.lengths_of(rows), batch_size)
    for positions in tqdm(batches, desc=desc, unit="batch", leave=False,
                          disable=not progress or len(batches) < min_batches):
        chunk = rows[positions]
        ids, mask, start, end = (t.to(device) for t in tokens.batch(chunk))
        z = language.lm1(ids, mask)
        if full:
            z = language.lm2(z, mask)
        yield chunk, span_mean(z, torch.arange(len(chunk), device=device), start, end).float()  # Eq. 7


class StagingRing:
    """Reused host buffers that rows kept in host memory are gathered into before they go to a GPU.

    ``torch.index_select(table, 0, index, out=buffer)`` writes the rows straight into the buffer:
    one host copy, where ``table[index].pin_memory()`` makes two (the gather, then the pinned
    copy) and allocates both every step. On a GPU the buffers are pinned, so the copy to the device
    does not block, and a buffer is reused only after the copy that read it has finished (an event
    recorded per slot, :meth:`copied`); ``slots`` buffers let a step's gather overlap the previous
    step's copy. A buffer grows (by half again) when a step asks for more rows than it holds."""

    def __init__(self, slots: int = 2, pinned: bool = False):
        if slots < 1:
            raise ValueError(f"a staging ring needs at least one slot, not {slots}")
        self.pinned = pinned
        self.buffers: list[torch.Tensor | None] = [None] * slots
        self.events: list = [None] * slots
        self.slot = 0

    def gather(self, table: torch.Tensor, index: torch.Tensor) -> torch.Tensor:
        """``table[index]`` written into the next slot's buffer; a view of it, valid until the
        ring comes back to this slot (copy it to the device, then call :meth:`copied`)."""
        n, width = int(index.numel()), table.shape[1]
        buffer = self.buffers[self.slot]
        if buffer is None or buffer.shape[0] < n or buffer.shape[1] != width or buffer.dtype != table.dtype:
            rows = max(n, 0 if buffer is None else buffer.shape[0] * 3 // 2, 1)
            buffer = torch.empty((rows, width), dtype=table.dtype, pin_memory=self.pinned)
            self.buffers[self.slot], self.events[self.slot] = buffer, None
        elif self.events[self.slot] is not None:
            self.events[self.slot].synchronize()  # the copy that read this buffer last has ended
        return torch.index_select(table, 0, index, out=buffer[:n])

    def copied(self, event=None) -> None:
        """The rows of the last :meth:`gather` are on their way: ``event`` (recorded on the stream
        of the copy) says when the buffer is free again. The next gather uses the next slot."""
        self.events[self.slot] = event
        self.slot = (self.slot + 1) % len(self.buffers)


class EntityContextMemory:
    """``E^context`` (N, F) and ``R^context`` (P, F) with momentum refresh (Eq. 7, 11, 12).

    Args:
        num_entities, num_relations, dim: N, P, F.
        dtype: storage type, ``float32``, ``float16`` or ``bfloat16`` (rows are read as float32).
        path: a ``.npy`` file to memory-map the entity rows from (created when absent).
        momentum: m of Eq. 12.
    """

    def __init__(self, num_entities: int, num_relations: int, dim: int, dtype: str = "float32",
                 path: str | Path | None = None, momentum: float = 0.8):
        if dtype not in DTYPES:
            raise ValueError(f"memory dtype must be one of {sorted(DTYPES)}, not {dtype!r}")
        if not 0.0 <= momentum < 1.0:
            raise ValueError(f"momentum must lie in [0, 1), not {momentum}")
        self.num_entities, self.num_relations, self.dim = int(num_entities), int(num_relations), int(dim)
        self.dtype, self.momentum, self.path = dtype, float(momentum), path
        existed = path is not None and Path(path).exists()
        self.entities = self._storage((self.num_entities, self.dim), path)
        self.relations = torch.zeros(self.num_relations, self.dim, dtype=DTYPES[dtype])
        #: an existing memory file already holds E^context rows: they count as the first fill
        self.filled = existed
        if existed:
            log.info("%s: entity context memory rows read from the file (not recomputed)", path)
        self.refreshes = 0
        #: :meth:`KnowledgeGraph.fingerprint` of the KG whose rows these are (None = not known)
        self.kg_fingerprint: str | None = None
        self._tokens: dict[tuple, tuple[weakref.ref, DescriptionTokens, DescriptionTokens]] = {}
        #: where the model runs; the rows live there too unless they did not fit (:meth:`place`)
        self.device = torch.device("cpu")
        #: host-kept rows on their way to a GPU (:meth:`entity_rows`); made at the first such read
        self._staging: StagingRing | None = None

    def _storage(self, shape: tuple[int, int], path) -> torch.Tensor:
        if path is None:
            return torch.zeros(shape, dtype=DTYPES[self.dtype])
        path = Path(path)
        np_dtype = _NUMPY_STORAGE[self.dtype]
        if path.exists():
            array = np.load(path, mmap_mode="r+", allow_pickle=False)
            if array.shape != shape or array.dtype != np_dtype:
                raise ValueError(f"{path}: memory file holds {array.shape} {array.dtype}, "
                                 f"expected {shape} {np.dtype(np_dtype)}")
        else:
            path.parent.mkdir(parents=True, exist_ok=True)
            array = np.lib.format.open_memmap(path, mode="w+", dtype=np_dtype, shape=shape)
        tensor = torch.from_numpy(array)
        return tensor.view(torch.bfloat16) if self.dtype == "bfloat16" else tensor

    # ------------------------------------------------------------------ placement
    def place(self, device) -> str:
        """Serve rows to a model on ``device``: the rows move there when they fit
        (:func:`jaket.model.device.memory_placement`); otherwise they stay in host memory as they
        are (in RAM or a memory-mapped file; never a pinned copy of the whole table), and
        :meth:`entity_rows` gathers the rows a step asks for into pinned memory and copies them
        without blocking. Returns ``"device"`` or ``"host"``."""
        self.device = torch.device(device)
        where = memory_placement(self.nbytes, self.device)
        if where == "device":
            self.entities = self.entities.to(self.device)
            self.relations = self.relations.to(self.device)
        else:
            # the table is not pinned: pin_memory() would copy all N rows (twice the host memory,
            # in every rank); entity_rows pins only the rows a step gathers
            self.relations = self.relations.to(self.device)  # P rows: small
            log.info("entity context memory (%.1f GB) kept in %s; rows are copied to %s as a "
                     "step needs them", self.nbytes / 1e9,
                     "a memory-mapped file" if self.path is not None else "host memory", self.device)
        return where

    # ------------------------------------------------------------------ reading rows
    def entity_rows(self, index, device=None) -> torch.Tensor:
        """``E^context`` rows as float32 (the knowledge module's ``E^(0)``) on ``device``
        (default: where the rows live). Rows kept in host memory for a GPU are gathered straight
        into a reused pinned buffer (:class:`StagingRing`) and copied without blocking: the copy is
        ordered before the kernels that read it on the GPU's stream, and the buffer is not
        reused before the copy ends."""
        index = torch.as_tensor(index, dtype=torch.long)
        target = torch.device(device) if device is not None else self.entities.device
        if self.entities.device.type == "cpu" and target.type == "cuda":
            if self._staging is None:
                self._staging = StagingRing(pinned=True)
            rows = self._staging.gather(self.entities, index.cpu()).to(target, non_blocking=True)
            event = torch.cuda.Event()
            event.record()
            self._staging.copied(event)
            return rows.float()
        rows = self.entities[index.to(self.entities.device)]
        return rows.to(target).float()

    def relation_rows(self, index=None, device=None) -> torch.Tensor:
        """``R^context`` rows (all when ``index`` is None) as float32, on ``device`` if given."""
        rows = self.relations if index is None else \
            self.relations[torch.as_tensor(index, dtype=torch.long).to(self.relations.device)]
        return rows.to(device if device is not None else rows.device).float()

    @property
    def nbytes(self) -> int:
        return self.entities.element_size() * self.entities.numel() + \
            self.relations.element_size() * self.relations.numel()

    # ------------------------------------------------------------------ refresh (Eq. 7, 12)
    def description_tokens(self, language: SplitLanguageModel, kg: KnowledgeGraph,
                           max_length: int) -> tuple[DescriptionTokens, DescriptionTokens]:
        """The entity and relation descriptions of ``kg``, tokenised as rows are asked for
        (:class:`DescriptionTokens`; one object per KG, so a row is tokenised once)."""
        key = (id(kg), id(language.tokenizer), max_length)
        cached = self._tokens.get(key)
        if cached is not None and cached[0]() is kg:
            return cached[1], cached[2]
        entities = DescriptionTokens(list(kg.entity_descriptions), list(kg.entity_names),
                                     language.tokenizer, max_length)
        relations = DescriptionTokens(list(kg.relation_descriptions), list(kg.relation_names),
                                      language.tokenizer, max_length)
        self._tokens = {key: (weakref.ref(kg), entities, relations)}
        return entities, relations

    @torch.no_grad()
    def _encode_into(self, target: torch.Tensor, tokens: DescriptionTokens, rows: np.ndarray,
                     language, batch_size: int, momentum: float, progress: bool, desc: str) -> int:
        """Eq. 7 for ``rows`` (sorted by length into batches) and the Eq. 12 update of ``target``."""
        if not len(rows):
            return 0
        for chunk, new in description_batches(language, tokens, rows, batch_size, progress=progress, desc=desc):
            # a blocking copy: the momentum update below reads ``new`` on the host at once, and a
            # non-blocking device-to-host copy may not have landed by then (stale rows)
            new = new.to(target.device)
            index = torch.from_numpy(chunk).to(target.device)
            if momentum > 0:
                new = momentum * target[index].float() + (1 - momentum) * new  # Eq. 12
            target[index] = new.to(target.dtype)
        return len(rows)

    def refresh(self, language: SplitLanguageModel, kg: KnowledgeGraph, batch_size: int = 64, max_length: int = 64,
                rank: int = 0, world_size: int = 1, momentum: float | None = None, entity_subset=None,
                relations: bool = True, progress: bool = False) -> dict:
        """Recompute ``E^context`` (and ``R^context``) with the current LM1 and blend it in (Eq. 12).

        ``momentum=None`` uses ``self.momentum`` once the memory has been filled and 0 (replace)
        for the first fill. ``rank``/``world_size`` restrict the work to every ``world_size``-th
        row from ``rank`` (the caller all-gathers); ``entity_subset`` restricts it to given rows.
        """
        if kg.num_entities != self.num_entities or kg.num_relations != self.num_relations:
            raise ValueError(f"memory is sized for {self.num_entities} entities / {self.num_relations} "
                             f"relations, the KG has {kg.num_entities} / {kg.num_relations}")
        if momentum is None:
            momentum = self.momentum if self.filled else 0.0
        began = time.perf_counter()
        was_training = language.training
        language.eval()
        entity_tokens, relation_tokens = self.description_tokens(language, kg, max_length)
        rows = np.arange(self.num_entities) if entity_subset is None else \
            np.unique(np.asarray(entity_subset, dtype=np.int64))
        rows = rows[rank::world_size]
        encoded = self._encode_into(self.entities, entity_tokens, rows, language, batch_size,
                                    momentum, progress, "entity memory")
        encoded_relations = 0
        if relations and entity_subset is None:
            relation_rows = np.arange(self.num_relations)[rank::world_size]
            encoded_relations = self._encode_into(self.relations, relation_tokens, relation_rows,
                                                  language, batch_size, momentum, progress,
                                                  "relation memory")
        language.train(was_training)
        if entity_subset is None:
            self.filled = True
            self.refreshes += 1
        seconds = time.perf_counter() - began
        return {"entities": encoded, "relations": encoded_relations, "seconds": seconds,
                "descriptions_per_second": (encoded + encoded_relations) / seconds if seconds else 0.0,
                "momentum": momentum}

    @classmethod
    def from_kg(cls, language: SplitLanguageModel, kg: KnowledgeGraph, dtype: str = "float32", path=None,
                momentum: float = 0.8, batch_size: int = 64, max_length: int = 64, progress: bool = False) -> "EntityContextMemory":
        """A memory filled from ``kg``'s descriptions by ``language``'s LM1 (the unseen-KG step)."""
        memory = cls(kg.num_entities, kg.num_relations, int(language.hidden_size), dtype=dtype,
                     path=path, momentum=momentum)
        if path is not None:  # a memory-mapped file is its own cache
            memory.refresh(language, kg, batch_size=batch_size, max_length=max_length, momentum=0.0,
                           progress=progress)
        else:  # the rows of the same LM1, KG and length are read from the disk cache (memory_cache)
            def compute() -> tuple[torch.Tensor, torch.Tensor]:
                memory.refresh(language, kg, batch_size=batch_size, max_length=max_length, momentum=0.0,
                               progress=progress)
                return memory.entities.float(), memory.relations.float()

            entities, relations = cached_rows(language, kg, max_length, compute)
            if not memory.filled:
                memory.entities[:] = entities.to(memory.entities.dtype)
                memory.relations[:] = relations.to(memory.relations.dtype)
                memory.filled, memory.refreshes = True, 1
        memory.kg_fingerprint = kg.fingerprint()
        return memory

    # ------------------------------------------------------------------ files
    def save(self, directory: str | Path) -> None:
        """``memory.safetensors`` (entities, relations) and ``memory.json``, written atomically."""
        from safetensors.torch import save_file

        directory = Path(directory)
        with atomic_path(directory / MEMORY_FILE) as tmp:
            save_file({"entities": self.entities.cpu().contiguous(),
                       "relations": self.relations.cpu().contiguous()},
                      str(tmp))
        meta = {"num_entities": self.num_entities, "num_relations": self.num_relations, "dim": self.dim,
                "dtype": self.dtype, "momentum": self.momentum, "filled": self.filled,
                "refreshes": self.refreshes, "kg_fingerprint": self.kg_fingerprint}
        write_text(directory / MEMORY_META, json.dumps(meta, indent=2))

    @classmethod
    def load(cls, directory: str | Path, path=None) -> "EntityContextMemory":
        """Read a memory written by :meth:`save` (safetensors, no pickle)."""
        from safetensors.torch import load_file

        directory = Path(directory)
        meta_path = directory / MEMORY_META
        try:
            meta = read_json(meta_path)
        except (OSError, JSONInputError) as error:
            raise ValueError(f"{meta_path}: cannot read the memory description: {error}") from None
        memory = cls(meta["num_entities"], meta["num_relations"], meta["dim"], dtype=meta["dtype"],
                     path=path, momentum=meta["momentum"])
        tensors = load_file(str(directory / MEMORY_FILE))
        memory.entities[:] = tensors["entities"].to(memory.entities.dtype)
        memory.relations[:] = tensors["relations"].to(memory.relations.dtype)
        memory.filled = bool(meta.get("filled", True))
        memory.refreshes = int(meta.get("refreshes", 0))
        memory.kg_fingerprint = meta.get("kg_fingerprint")
        return memory


@torch.no_grad()
def description_features(language: SplitLanguageModel, texts: list[str], names: list[str], *, full: bool,
                         max_length: int = 64, batch_size: int = 64, desc: str = "descriptions") -> torch.Tensor:
    """``(Z_s + Z_o) / 2`` of each description at the first mention of its name (Eq. 7);
    ``full=True`` reads it through LM1 and LM2 (the ``lm`` setting), otherwise LM1 only. The
    descriptions are read as the memory refresh reads them (:func:`jaket.model.memory.description_batches`:
    tokenised once, in length-sorted batches), each row returned at its description's position."""
    language.eval()
    device = next(language.parameters()).device
    out = torch.zeros(len(texts), int(language.hidden_size), device=device)
    tokens = DescriptionTokens(texts, names, language.tokenizer, max_length)
    for rows, vectors in description_batches(language, tokens, np.arange(len(texts)), batch_size, full=full,
                                             progress=True, desc=desc, min_batches=2):
        out[torch.from_numpy(rows).to(device)] = vectors
    return out


@dataclass
class FrozenMemory:
    """E^context / R^context of one KG for one setting (never updated during fine-tuning)."""

    entities: torch.Tensor  # (N, F)
    relations: torch.Tensor  # (P, F)

    def to(self, device) -> "FrozenMemory":
        return FrozenMemory(self.entities.to(device), self.relations.to(device))
