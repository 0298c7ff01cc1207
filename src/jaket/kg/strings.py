"""Lazily decoded string tables: the entity and relation strings of a loaded KG.

The compiled cache (:mod:`jaket.kg.cache`) stores every string table as one UTF-8 byte blob plus
``len + 1`` int64 offsets; :class:`StringTable` and :class:`AliasTable` read them without decoding
all strings up front, so a million-entity graph loads in about a second.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import numpy as np


class _Table(Sequence):
    """Indexing shared by the tables: an int (negative from the end) gives :meth:`_item`, a slice a list."""

    __slots__ = ()

    def _item(self, index: int):
        raise NotImplementedError

    def __getitem__(self, index):
        if isinstance(index, slice):
            return [self._item(i) for i in range(*index.indices(len(self)))]
        index = int(index)
        if index < 0:
            index += len(self)
        if not 0 <= index < len(self):
            raise IndexError(f"{type(self).__name__} index out of range")
        return self._item(index)


class StringTable(_Table):
    """A read-only list of strings stored as one UTF-8 byte blob and ``len + 1`` int64 offsets.

    It decodes a string only when asked, so a million-entity table loads in milliseconds. It
    behaves like a list: indexing (a slice gives a list), ``len``, iteration, ``==`` with a list.
    """

    __slots__ = ("blob", "offsets")

    def __init__(self, blob: np.ndarray, offsets: np.ndarray):
        self.blob = np.asarray(blob, dtype=np.uint8)
        self.offsets = np.asarray(offsets, dtype=np.int64)

    @classmethod
    def from_strings(cls, strings: Sequence[str]) -> "StringTable":
        encoded = [s.encode("utf-8") for s in strings]
        offsets = np.zeros(len(encoded) + 1, dtype=np.int64)
        np.cumsum(np.fromiter((len(b) for b in encoded), dtype=np.int64, count=len(encoded)),
                  out=offsets[1:])
        return cls(np.frombuffer(b"".join(encoded), dtype=np.uint8), offsets)

    def __len__(self) -> int:
        return len(self.offsets) - 1

    def _item(self, index: int) -> str:
        return self.blob[self.offsets[index]:self.offsets[index + 1]].tobytes().decode("utf-8")

    def __iter__(self) -> Iterator[str]:
        chunk = 1 << 14
        for begin in range(0, len(self), chunk):
            offsets = self.offsets[begin:begin + chunk + 1]
            base = int(offsets[0])
            data = self.blob[base:int(offsets[-1])].tobytes()
            bounds = (offsets - base).tolist()
            for a, b in zip(bounds, bounds[1:]):
                yield data[a:b].decode("utf-8")

    def __eq__(self, other: object) -> bool:
        if isinstance(other, StringTable):
            return np.array_equal(self.offsets, other.offsets) and np.array_equal(self.blob, other.blob)
        if isinstance(other, (list, tuple)):
            return len(self) == len(other) and all(a == b for a, b in zip(self, other))
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]

    def __add__(self, other) -> list[str]:
        return list(self) + list(other)

    def __radd__(self, other) -> list[str]:
        return list(other) + list(self)

    def __repr__(self) -> str:
        return f"StringTable({len(self)} strings)"


class AliasTable(_Table):
    """``entity_aliases`` backed by a :class:`StringTable` of all aliases and an (N+1,) pointer."""

    __slots__ = ("strings", "pointer")

    def __init__(self, strings: StringTable, pointer: np.ndarray):
        self.strings = strings
        self.pointer = np.asarray(pointer, dtype=np.int64)

    @classmethod
    def from_lists(cls, aliases: Sequence[Sequence[str]]) -> "AliasTable":
        pointer = np.zeros(len(aliases) + 1, dtype=np.int64)
        np.cumsum(np.fromiter((len(a) for a in aliases), dtype=np.int64, count=len(aliases)),
                  out=pointer[1:])
        return cls(StringTable.from_strings([s for a in aliases for s in a]), pointer)

    def __len__(self) -> int:
        return len(self.pointer) - 1

    def _item(self, index: int) -> list[str]:
        return self.strings[int(self.pointer[index]):int(self.pointer[index + 1])]

    def __eq__(self, other: object) -> bool:
        if isinstance(other, (list, tuple, AliasTable)):
            return len(self) == len(other) and all(list(a) == list(b) for a, b in zip(self, other))
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"AliasTable({len(self)} entities)"


__all__ = ["AliasTable", "StringTable"]
