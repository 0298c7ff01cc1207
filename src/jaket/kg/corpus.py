"""Texts with entity mentions, and their tokenisation into the paper's token spans.

Paper, section "Definition": a text ``x`` has mentions ``m_i = (e_i, s_i, o_i)`` where
``[x_{s_i}, ..., x_{o_i}]`` (inclusive token indices, counted with the special tokens) is linked to
entity ``e_i``; spans are disjoint. Here mentions are stored as character spans (end exclusive)
and mapped to token spans with a fast tokenizer's offset mapping, so any Transformers fast
tokenizer (WordPiece, byte-level BPE, ...) works.

Entity description texts (Eq. 7) use :func:`encode_descriptions`: the first occurrence of the
entity's name gives ``(s, o)``; without one, ``s = o = 1`` as the paper says.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import torch

if TYPE_CHECKING:
    from transformers import PreTrainedTokenizerBase


@dataclass(frozen=True)
class Mention:
    """A character span ``[start, end)`` of a text linked to entity index ``entity``."""

    start: int
    end: int
    entity: int


class MentionError(ValueError):
    """A mention that cannot be right: outside its text, empty, or overlapping another one."""


@dataclass
class EncodedCorpus:
    """Tokenised texts: ``input_ids[i]`` (int32, with special tokens) and ``mentions[i]``, a
    ``(k, 3)`` int64 array of ``(s, o, entity)`` with inclusive token indices.

    ``dropped_mentions`` counts mentions cut off by truncation; ``unaligned_mentions`` counts
    mentions that cover no token at all (only whitespace or characters the tokenizer discards).
    """

    input_ids: list[np.ndarray]
    mentions: list[np.ndarray]
    dropped_mentions: int = 0
    unaligned_mentions: int = 0

    def __len__(self) -> int:
        return len(self.input_ids)

    @property
    def num_mentions(self) -> int:
        return int(sum(len(m) for m in self.mentions))


@dataclass
class TextBatch:
    """What the language module consumes (see docs/design.md, "Contracts")."""

    input_ids: torch.Tensor  # (B, L)
    attention_mask: torch.Tensor  # (B, L)
    mention_batch: torch.Tensor  # (M,) sequence index
    mention_start: torch.Tensor  # (M,) inclusive token span
    mention_end: torch.Tensor  # (M,)
    mention_entity: torch.Tensor  # (M,) global entity index

    def _map(self, move) -> "TextBatch":
        return TextBatch(*(move(getattr(self, name)) for name in (
            "input_ids", "attention_mask", "mention_batch", "mention_start", "mention_end",
            "mention_entity")))

    def to(self, device, non_blocking: bool = False) -> "TextBatch":
        return self._map(lambda t: t.to(device, non_blocking=non_blocking))

    def pin_memory(self) -> "TextBatch":
        """A copy in pinned host memory (what a DataLoader with ``pin_memory=True`` calls)."""
        return self._map(torch.Tensor.pin_memory)


def check_mentions(text: str, mentions: Sequence[Mention], where: str = "text") -> None:
    """Raise :class:`MentionError` if a span is outside ``text``, empty, or overlaps another."""
    ordered = sorted(mentions, key=lambda m: (m.start, m.end))
    previous: Mention | None = None
    for m in ordered:
        if not (0 <= m.start < m.end <= len(text)):
            raise MentionError(f"{where}: mention span [{m.start}, {m.end}) is outside the text "
                               f"(length {len(text)}) or empty")
        if previous is not None and m.start < previous.end:
            raise MentionError(f"{where}: mentions overlap: [{previous.start}, {previous.end}) "
                               f"and [{m.start}, {m.end}) (the paper assumes disjoint spans)")
        previous = m


def _require_fast(tokenizer: PreTrainedTokenizerBase) -> None:
    if not getattr(tokenizer, "is_fast", False):
        raise TypeError("a fast (Rust) tokenizer is needed for character offsets; load it with "
                        "AutoTokenizer.from_pretrained(path) (use_fast is the default)")


def _token_spans(offsets: np.ndarray, special: np.ndarray, starts: np.ndarray,
                 ends: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Inclusive token indices of character spans: first token ending after ``start``, last token
    starting before ``end`` (content tokens only; ``s > o`` when no token overlaps)."""
    content = np.flatnonzero(~special)
    token_starts = offsets[content, 0]
    token_ends = offsets[content, 1]
    first = np.searchsorted(token_ends, starts, side="right")
    last = np.searchsorted(token_starts, ends, side="left") - 1
    s = np.where(first < len(content), content[np.minimum(first, len(content) - 1)], 1 << 30) \
        if len(content) else np.full(len(starts), 1 << 30)
    o = np.where(last >= 0, content[np.maximum(last, 0)], -1) if len(content) \
        else np.full(len(starts), -1)
    return s.astype(np.int64), o.astype(np.int64)


class MentionCorpus:
    """Texts and, for each, its mentions (character spans, end exclusive, entity index)."""

    def __init__(self, texts: list[str], mentions: list[list[Mention]]):
        if len(texts) != len(mentions):
            raise ValueError(f"{len(texts)} texts but {len(mentions)} mention lists")
        self.texts = list(texts)
        self.mentions = [list(m) for m in mentions]
        for i, (text, ms) in enumerate(zip(self.texts, self.mentions)):
            check_mentions(text, ms, where=f"text {i}")

    def __len__(self) -> int:
        return len(self.texts)

    @property
    def num_mentions(self) -> int:
        return sum(len(m) for m in self.mentions)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, MentionCorpus):
            return NotImplemented
        return self.texts == other.texts and [sorted(m, key=lambda x: x.start) for m in self.mentions] \
            == [sorted(m, key=lambda x: x.start) for m in other.mentions]

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"MentionCorpus(texts={len(self)}, mentions={self.num_mentions})"

    def subset(self, indices) -> "MentionCorpus":
        indices = [int(i) for i in indices]
        return MentionCorpus([self.texts[i] for i in indices], [self.mentions[i] for i in indices])

    def split(self, fraction: float, seed: int = 0) -> tuple["MentionCorpus", "MentionCorpus"]:
        """A random split: the first part holds ``round(fraction * len)`` texts, the second the rest."""
        if not 0.0 <= fraction <= 1.0:
            raise ValueError(f"fraction must be in [0, 1], got {fraction}")
        order = np.random.default_rng(seed).permutation(len(self))
        cut = int(round(fraction * len(self)))
        return self.subset(np.sort(order[:cut])), self.subset(np.sort(order[cut:]))

    def encode(self, tokenizer: PreTrainedTokenizerBase, max_length: int = 128,
               batch_size: int = 1024) -> EncodedCorpus:
        """Tokenise every text (with special tokens, truncated to ``max_length``) and map each
        mention to its inclusive token span ``(s, o)``.

        A mention not entirely inside the kept tokens is dropped and counted in
        ``dropped_mentions``; one covering no token is counted in ``unaligned_mentions``.
        """
        _require_fast(tokenizer)
        budget = max_length - tokenizer.num_special_tokens_to_add(pair=False)
        if budget <= 0:
            raise ValueError(f"max_length={max_length} leaves no room beside the special tokens")
        all_ids: list[np.ndarray] = []
        all_mentions: list[np.ndarray] = []
        dropped = unaligned = 0
        for begin in range(0, len(self.texts), batch_size):
            texts = self.texts[begin:begin + batch_size]
            encoded = tokenizer(texts, truncation=True, max_length=max_length,
                                return_offsets_mapping=True, return_special_tokens_mask=True,
                                return_attention_mask=False, return_token_type_ids=False)
            # a text is truncated when it filled the budget and tokens remain after the last kept one
            last_ends, candidates = {}, []
            for j, special in enumerate(encoded["special_tokens_mask"]):
                content = len(special) - sum(special)
                if content == budget:
                    offsets = encoded["offset_mapping"][j]
                    last_end = max(e for (s, e), sp in zip(offsets, special) if not sp)
                    last_ends[j] = last_end
                    candidates.append(j)
            truncated: dict[int, int] = {}
            if candidates:
                # one token tells: cut at 1, so a long rest is not read as a sequence too long for the model
                rest = tokenizer([texts[j][last_ends[j]:] for j in candidates], truncation=True, max_length=1,
                                 add_special_tokens=False, return_attention_mask=False,
                                 return_token_type_ids=False)["input_ids"]
                truncated = {j: last_ends[j] for j, ids in zip(candidates, rest) if len(ids)}
            for j, text in enumerate(texts):
                ids = np.asarray(encoded["input_ids"][j], dtype=np.int32)
                ms = self.mentions[begin + j]
                all_ids.append(ids)
                if not ms:
                    all_mentions.append(np.zeros((0, 3), dtype=np.int64))
                    continue
                starts = np.fromiter((m.start for m in ms), dtype=np.int64, count=len(ms))
                ends = np.fromiter((m.end for m in ms), dtype=np.int64, count=len(ms))
                entities = np.fromiter((m.entity for m in ms), dtype=np.int64, count=len(ms))
                offsets = np.asarray(encoded["offset_mapping"][j], dtype=np.int64).reshape(-1, 2)
                special = np.asarray(encoded["special_tokens_mask"][j], dtype=bool)
                s, o = _token_spans(offsets, special, starts, ends)
                keep = np.ones(len(ms), dtype=bool)
                if j in truncated:
                    cut = ends > truncated[j]
                    dropped += int(cut.sum())
                    keep &= ~cut
                empty = keep & (s > o)
                unaligned += int(empty.sum())
                keep &= ~empty
                rows = np.stack([s[keep], o[keep], entities[keep]], axis=1)
                all_mentions.append(rows[np.argsort(rows[:, 0], kind="stable")])
        return EncodedCorpus(all_ids, all_mentions, dropped, unaligned)


def collate_texts(encoded: EncodedCorpus, indices, pad_id: int) -> TextBatch:
    """Pad the chosen texts to the longest one and flatten their mentions into a :class:`TextBatch`."""
    indices = [int(i) for i in indices]
    length = max((len(encoded.input_ids[i]) for i in indices), default=0)
    input_ids = np.full((len(indices), length), pad_id, dtype=np.int64)
    mask = np.zeros((len(indices), length), dtype=np.int64)
    batch, rows = [], []
    for b, i in enumerate(indices):
        ids = encoded.input_ids[i]
        input_ids[b, :len(ids)] = ids
        mask[b, :len(ids)] = 1
        m = encoded.mentions[i]
        rows.append(m)
        batch.append(np.full(len(m), b, dtype=np.int64))
    mentions = np.concatenate(rows) if rows else np.zeros((0, 3), dtype=np.int64)
    mention_batch = np.concatenate(batch) if batch else np.zeros(0, dtype=np.int64)
    return TextBatch(
        input_ids=torch.from_numpy(input_ids),
        attention_mask=torch.from_numpy(mask),
        mention_batch=torch.from_numpy(mention_batch),
        mention_start=torch.from_numpy(np.ascontiguousarray(mentions[:, 0])),
        mention_end=torch.from_numpy(np.ascontiguousarray(mentions[:, 1])),
        mention_entity=torch.from_numpy(np.ascontiguousarray(mentions[:, 2])),
    )


def _first_occurrences(texts: Sequence[str], names: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
    """The character span ``[start, end)`` of the first case-insensitive occurrence of ``names[i]`` in
    ``texts[i]``; ``(-1, -1)`` where there is none or the name is empty.

    ASCII text and name (nearly every description) are searched with ``str.find`` on lower-cased
    copies, which is what ``re.IGNORECASE`` matches there; anything else goes through ``re``, whose
    case folding lower-casing does not reproduce (e.g. the Kelvin sign matches ``k``)."""
    n = len(texts)
    starts, ends = np.full(n, -1, dtype=np.int64), np.full(n, -1, dtype=np.int64)
    for i, (text, name) in enumerate(zip(texts, names)):
        if not name:
            continue
        if text.isascii() and name.isascii():
            at = text.lower().find(name.lower())
            if at >= 0:
                starts[i], ends[i] = at, at + len(name)
            continue
        found = re.search(re.escape(name), text, flags=re.IGNORECASE)
        if found is not None:
            starts[i], ends[i] = found.start(), found.end()
    return starts, ends


def _description_spans(offsets: np.ndarray, special: np.ndarray, starts: np.ndarray,
                       ends: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The inclusive token span ``(s, o)`` of each row's character span, over the whole batch at once
    (:func:`_token_spans`, row by row, gives the same): ``s`` is the first content token ending after
    the span's start, ``o`` the last one starting before its end. A row keeps ``(1, 1)`` (Eq. 7's
    default) when it has no span, when no token overlaps it, or when its end was truncated away
    (the token at ``o`` must reach the span's end)."""
    n, length = special.shape
    content = ~special
    token_starts, token_ends = offsets[..., 0], offsets[..., 1]
    after = content & (token_ends > starts[:, None])
    first = np.where(after.any(1), after.argmax(1), length)
    before = content & (token_starts < ends[:, None])
    last = np.where(before.any(1), length - 1 - before[:, ::-1].argmax(1), -1)
    reaches = token_ends[np.arange(n), np.clip(last, 0, max(length - 1, 0))] >= ends if length else \
        np.zeros(n, dtype=bool)
    ok = (starts >= 0) & (last >= 0) & (first <= last) & reaches
    return np.where(ok, first, 1).astype(np.int64), np.where(ok, last, 1).astype(np.int64)


@dataclass
class EncodedDescriptions:
    """Descriptions tokenised for Eq. 7 (:func:`tokenize_descriptions`): ``input_ids`` and
    ``attention_mask`` (n, L) int64, padded to the longest with the pad id (0 without one), the
    mention span ``start``, ``end`` (n,) and ``cut`` (n,) bool: the text had tokens beyond
    ``max_length`` (the window cut it)."""

    input_ids: np.ndarray
    attention_mask: np.ndarray
    start: np.ndarray
    end: np.ndarray
    cut: np.ndarray


def _window_encodings(texts: list[str], tokenizer: PreTrainedTokenizerBase, max_length: int):
    """The fast tokenizer's Rust encodings of ``texts`` with the specials, cut at ``max_length``:
    the backend configured by the tokenizer's own ``set_truncation_and_padding`` as
    ``tokenizer(texts, truncation=True, max_length=max_length)`` configures it (the same ids,
    offsets and special-token masks: tested), without converting every encoding to Python lists
    and back (with the span search and the arrays, WordNet's 107,659 descriptions in 5.4 s
    against 9.5 s), and keeping what the cut dropped (``encoding.overflowing``). The backend is
    left configured as the tokenizer's own call leaves it (the next call sets what it needs)."""
    from transformers.tokenization_utils_base import PaddingStrategy, TruncationStrategy

    tokenizer.set_truncation_and_padding(padding_strategy=PaddingStrategy.DO_NOT_PAD,
                                         truncation_strategy=TruncationStrategy.LONGEST_FIRST,
                                         max_length=max_length, stride=0, pad_to_multiple_of=None,
                                         padding_side=None)
    backend = tokenizer.backend_tokenizer
    split = bool(getattr(tokenizer, "split_special_tokens", False))
    if getattr(backend, "encode_special_tokens", split) != split:
        backend.encode_special_tokens = split
    return backend.encode_batch(texts, add_special_tokens=True)


def _padded(rows: list[list], lengths: np.ndarray, fill, dtype, shape: tuple = ()) -> np.ndarray:
    """``rows`` (ragged lists) as one array padded on the right with ``fill`` to the longest."""
    width = int(lengths.max()) if len(lengths) else 0
    out = np.full((len(rows), width, *shape), fill, dtype=dtype)
    flat = np.fromiter(itertools.chain.from_iterable(rows), dtype=dtype if not shape else (dtype, shape),
                       count=int(lengths.sum()))
    out[np.arange(width)[None, :] < lengths[:, None]] = flat
    return out


def tokenize_descriptions(texts: Sequence[str], names: Sequence[str], tokenizer: PreTrainedTokenizerBase,
                          max_length: int = 64) -> EncodedDescriptions:
    """Tokenise entity (or relation) description texts, cut at ``max_length`` tokens (the specials
    included) and padded on the right to the longest with the pad id (0 for a tokenizer without
    one), and locate the described item's mention.

    ``(start, end)`` is the inclusive token span of the first case-insensitive occurrence of
    ``names[i]`` in ``texts[i]``, or ``(1, 1)`` (the first token after [CLS]) when the name does not
    occur or was truncated away (paper, section "Definition"; Eq. 7 averages the two positions).
    ``cut`` says which texts the window cut (the description-window check reads it:
    :mod:`jaket.kg.windows`).
    """
    _require_fast(tokenizer)
    texts, names = [str(t) for t in texts], list(names)
    if len(texts) != len(names):
        raise ValueError(f"{len(texts)} texts but {len(names)} names")
    if not texts:
        empty = np.zeros((0, 0), dtype=np.int64)
        return EncodedDescriptions(empty, empty.copy(), np.zeros(0, np.int64), np.zeros(0, np.int64),
                                   np.zeros(0, bool))
    encodings = _window_encodings(texts, tokenizer, max_length)
    ids = [e.ids for e in encodings]
    lengths = np.fromiter(map(len, ids), dtype=np.int64, count=len(ids))
    pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else 0
    input_ids = _padded(ids, lengths, pad, np.int64)
    attention = (np.arange(input_ids.shape[1])[None, :] < lengths[:, None]).astype(np.int64)
    offsets = _padded([e.offsets for e in encodings], lengths, 0, np.int64, (2,))
    special = _padded([e.special_tokens_mask for e in encodings], lengths, 1, np.int64).astype(bool)
    cut = np.fromiter((bool(e.overflowing) for e in encodings), dtype=bool, count=len(texts))
    found_start, found_end = _first_occurrences(texts, names)
    start, end = _description_spans(offsets, special, found_start, found_end)
    # a text of only special tokens has no position 1 beyond [SEP]; clamp into the sequence
    length = input_ids.shape[1]
    return EncodedDescriptions(input_ids, attention, np.minimum(start, length - 1), np.minimum(end, length - 1),
                               cut)


def encode_descriptions(texts: Sequence[str], names: Sequence[str], tokenizer: PreTrainedTokenizerBase,
                        max_length: int = 64) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor,
                                                       torch.Tensor]:
    """:func:`tokenize_descriptions` as tensors: ``(input_ids (n, L), attention_mask (n, L), start
    (n,), end (n,))``, ``(start, end)`` the inclusive token span of the description's first mention
    of its name (``(1, 1)`` without one: Eq. 7)."""
    encoded = tokenize_descriptions(texts, names, tokenizer, max_length)
    return tuple(torch.from_numpy(a) for a in (encoded.input_ids, encoded.attention_mask, encoded.start,
                                               encoded.end))


class DescriptionTokens:
    """The descriptions of one KG side, tokenised when first needed: ``ids (n, L) int32`` (padded
    with the pad id), ``lengths (n,)``, the mention span ``start``, ``end`` (n,) of Eq. 7 and
    ``cut`` (n,): the description is longer than the window.

    A row is tokenised the first time :meth:`batch`, :meth:`lengths_of` or :meth:`ensure` asks for
    it, and once (a distributed refresh asks only for its rank's share of the rows, every
    ``world_size``-th). Pre-training's description-window check asks for every row at the run's
    start, in every rank, and reads the memory's own table
    (:func:`jaket.kg.windows.description_windows`): a run tokenises each description once. A row's
    tokens do not depend on which rows it was tokenised with (each is padded to ``L`` apart)."""

    def __init__(self, texts, names, tokenizer, max_length: int, chunk: int = 4096):
        n = len(texts)
        if len(names) != n:
            raise ValueError(f"{n} descriptions but {len(names)} names")
        self.texts, self.names, self.tokenizer, self.chunk = list(texts), list(names), tokenizer, chunk
        self.max_length = max_length
        pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else 0
        self.ids = np.full((n, max_length), pad, dtype=np.int32)
        self.lengths = np.zeros(n, dtype=np.int64)
        self.start = np.ones(n, dtype=np.int64)
        self.end = np.ones(n, dtype=np.int64)
        self.cut = np.zeros(n, dtype=bool)
        #: which rows are tokenised
        self.done = np.zeros(n, dtype=bool)

    def __len__(self) -> int:
        return len(self.texts)

    def ensure(self, rows=None) -> None:
        """Tokenise the given rows (all when None) that are not yet, ``chunk`` at a time."""
        rows = np.arange(len(self)) if rows is None else np.asarray(rows, dtype=np.int64).reshape(-1)
        todo = np.unique(rows[~self.done[rows]])
        for begin in range(0, len(todo), self.chunk):
            part = todo[begin:begin + self.chunk]
            encoded = tokenize_descriptions([self.texts[i] for i in part], [self.names[i] for i in part],
                                            self.tokenizer, max_length=self.max_length)
            width = encoded.input_ids.shape[1]
            self.ids[part, :width] = encoded.input_ids
            self.lengths[part] = encoded.attention_mask.sum(1)
            self.start[part] = encoded.start
            self.end[part] = encoded.end
            self.cut[part] = encoded.cut
            self.done[part] = True

    def lengths_of(self, rows: np.ndarray) -> np.ndarray:
        """The token counts of ``rows`` (tokenised first where they are not yet)."""
        self.ensure(rows)
        return self.lengths[rows]

    def batch(self, rows: np.ndarray) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
        """``(input_ids, attention_mask, start, end)`` of the given rows, padded to their longest."""
        rows = np.asarray(rows, dtype=np.int64)
        width = int(self.lengths_of(rows).max()) if len(rows) else 1
        ids = torch.from_numpy(self.ids[rows, :width].astype(np.int64))
        mask = torch.from_numpy((np.arange(width)[None, :] < self.lengths[rows][:, None]).astype(np.int64))
        return ids, mask, torch.from_numpy(self.start[rows]), torch.from_numpy(self.end[rows])
