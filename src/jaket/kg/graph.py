"""The knowledge graph: entity and relation tables, int32 triples, CSR adjacency in both directions.

The paper's KG (section "Definition") is a set of triples ``(h, r, t)`` over entities that each carry
a description text (and here a category, used by the entity category prediction task). Entities and
relations are addressed by a dense **index**; string ids map to it through :meth:`entity_index`,
:meth:`entity_indices` (ids or indices, mixed) and :meth:`relation_index`.

**Direction.** Every triple ``(h, r, t)`` gives two edges of :class:`CSRAdjacency`: ``h``'s neighbour
``t`` with edge type ``r`` (forward) and ``t``'s neighbour ``h`` with edge type ``r + P`` (inverse),
so edge types range over ``[0, 2P)`` and ``type >= P`` means "seen from the tail". The knowledge
module composes ``R[type % P]`` with a direction embedding ``D[type // P]`` (see docs/design.md).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from jaket.jsonio import quote


def name_key(name: str) -> str:
    """How names and aliases are compared as words: lower case, runs of spaces and underscores as
    one space (``Bank``, ``bank``, ``savings_bank`` / ``savings bank``)."""
    return re.sub(r"[\s_]+", " ", name.strip().lower())


def readable(identifier: str) -> str:
    """An id made readable as a name: ``cell_or_molecular_dysfunction`` -> ``cell or molecular
    dysfunction``; ``person12`` -> ``person 12``; ``intergovorgs3`` -> ``intergovorgs 3`` (the
    name and description of an entity of a graph without text, e.g. PyKEEN's)."""
    text = identifier.replace("_", " ").replace("-", " ")
    text = re.sub(r"(?<=[a-z])(?=[A-Z])", " ", text)
    text = re.sub(r"(?<=[A-Za-z])(?=\d)|(?<=\d)(?=[A-Za-z])", " ", text)
    return re.sub(r"\s+", " ", text).strip() or identifier


def both_directions(triples: np.ndarray, num_relations: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The direction convention, defined here once: ``(node, neighbour, edge_type)`` of the ``2T``
    edges of (T, 3) ``triples``, first every triple's forward edge (``h`` updated from ``t`` with
    type ``r``), then every inverse one (``t`` updated from ``h`` with type ``r + P``), each in
    triple order; arrays of the dtype of ``triples``."""
    heads, relations, tails = triples[:, 0], triples[:, 1], triples[:, 2]
    node = np.concatenate([heads, tails])
    neighbour = np.concatenate([tails, heads])
    edge_type = np.concatenate([relations, relations + relations.dtype.type(num_relations)])
    return node, neighbour, edge_type


@dataclass(frozen=True)
class CSRAdjacency:
    """Both directions of every triple as one compressed sparse row table.

    The edges of entity ``v`` are the positions ``indptr[v]:indptr[v + 1]``; at position ``i``,
    ``neighbors[i]`` is the entity at the other end, ``edge_type[i]`` the relation (``+ P`` for an
    inverse edge) and ``triple_id[i]`` the row of ``KnowledgeGraph.triples`` it comes from. Within a
    row, forward edges come first, then inverse ones, each in triple order, so the table is a pure
    function of the triples.
    """

    indptr: np.ndarray  # (N + 1,) int64
    neighbors: np.ndarray  # (2T,) int32
    edge_type: np.ndarray  # (2T,) int32
    triple_id: np.ndarray  # (2T,) int32

    @classmethod
    def from_triples(cls, triples: np.ndarray, num_entities: int, num_relations: int) -> "CSRAdjacency":
        triples = np.asarray(triples, dtype=np.int32).reshape(-1, 3)
        t = len(triples)
        source, other, edge_type = both_directions(triples, num_relations)
        triple_id = np.concatenate([np.arange(t, dtype=np.int32)] * 2)
        order = np.argsort(source, kind="stable")
        counts = np.bincount(source, minlength=num_entities).astype(np.int64)
        indptr = np.zeros(num_entities + 1, dtype=np.int64)
        np.cumsum(counts, out=indptr[1:])
        return cls(indptr=indptr, neighbors=other[order].astype(np.int32, copy=False),
                   edge_type=edge_type[order], triple_id=triple_id[order])

    @property
    def num_nodes(self) -> int:
        return len(self.indptr) - 1

    @property
    def num_edges(self) -> int:
        return len(self.neighbors)

    def degree(self) -> np.ndarray:
        """Number of edges of every entity (as head + as tail; a self-loop counts twice)."""
        return np.diff(self.indptr)

    def edge_positions_of_triples(self, num_relations: int) -> np.ndarray:
        """``(T, 2)`` int64: the CSR positions of every triple's forward and inverse edge."""
        cached = self.__dict__.get("_positions")
        if cached is None:
            positions = np.arange(self.num_edges, dtype=np.int64)
            cached = np.empty((self.num_edges // 2, 2), dtype=np.int64)
            inverse = self.edge_type >= num_relations
            cached[self.triple_id, inverse.astype(np.int64)] = positions
            object.__setattr__(self, "_positions", cached)
        return cached


def factory_labels(factory, attribute: str, count) -> list[str]:
    """A PyKEEN factory's labels by id (``entity_to_id`` / ``relation_to_id``; its ids as strings
    when it has no labels)."""
    mapping, count = getattr(factory, attribute, None), int(count)
    if mapping is None:
        return [str(i) for i in range(count)]
    ordered: list = [None] * count
    for label, index in mapping.items():
        ordered[int(index)] = str(label)
    if any(label is None for label in ordered):
        raise ValueError("the factory's label-to-id mapping leaves ids without a label")
    return ordered


@dataclass(eq=False)
class KnowledgeGraph:
    """Entities, relations and triples of one KG (see docs/design.md, "Contracts").

    String tables may be plain lists or any list-like sequence (loaded KGs use a lazily decoded
    :class:`jaket.kg.io.StringTable`, so a 1M-entity graph loads in about a second).
    """

    entity_ids: Sequence[str]
    entity_names: Sequence[str]
    entity_descriptions: Sequence[str]
    entity_aliases: Sequence[Sequence[str]]
    entity_category: np.ndarray  # (N,) int32, -1 = none
    category_names: list[str]  # sorted
    relation_ids: Sequence[str]
    relation_names: Sequence[str]
    relation_descriptions: Sequence[str]
    triples: np.ndarray  # (T, 3) int32 (head, relation, tail)
    _adjacency: CSRAdjacency | None = field(default=None, repr=False)
    _entity_lookup: dict[str, int] | None = field(default=None, repr=False)
    _relation_lookup: dict[str, int] | None = field(default=None, repr=False)
    _fingerprint: str | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        self._check_tables_given()
        self.entity_category = np.asarray(self.entity_category, dtype=np.int32).reshape(-1)
        self.triples = np.asarray(self.triples, dtype=np.int32).reshape(-1, 3)
        self.category_names = list(self.category_names)
        n, p = len(self.entity_ids), len(self.relation_ids)
        for name in ("entity_names", "entity_descriptions", "entity_aliases"):
            if len(getattr(self, name)) != n:
                raise ValueError(f"{name} has {len(getattr(self, name))} rows, entity_ids has {n}")
        if len(self.entity_category) != n:
            raise ValueError(f"entity_category has {len(self.entity_category)} rows, entity_ids has {n}")
        for name in ("relation_names", "relation_descriptions"):
            if len(getattr(self, name)) != p:
                raise ValueError(f"{name} has {len(getattr(self, name))} rows, relation_ids has {p}")
        if list(self.category_names) != sorted(self.category_names):
            raise ValueError("category_names must be sorted (indices stay stable across loads)")
        if len(self.entity_category) and (self.entity_category.min() < -1
                                          or self.entity_category.max() >= len(self.category_names)):
            raise ValueError("entity_category holds an index outside [-1, num_categories)")
        if len(self.triples):
            ents = self.triples[:, [0, 2]]
            if ents.min() < 0 or ents.max() >= n:
                raise ValueError("triples reference an entity index outside [0, num_entities)")
            rels = self.triples[:, 1]
            if rels.min() < 0 or rels.max() >= p:
                raise ValueError("triples reference a relation index outside [0, num_relations)")

    def _check_tables_given(self) -> None:
        """What the length checks cannot see, for tables given as plain lists (a loaded KG's lazy
        tables were validated when it was read): one string where a list of strings belongs (its
        characters were read as the rows: ``entity_aliases=["hound", ...]`` linked ``h``, ``o``...),
        an id given twice (its lookup silently gave the last), and triples that are not (T, 3)
        integer indices (a (T, 2) array was reshaped into other triples, 0.7 cast to 0)."""
        for name in ("entity_ids", "entity_names", "entity_descriptions", "entity_aliases", "relation_ids",
                     "relation_names", "relation_descriptions"):
            if isinstance(getattr(self, name), (str, bytes)):
                raise TypeError(f"{name}: give a list with one entry per row, not one string")
        if isinstance(self.entity_aliases, (list, tuple)):
            row = next((i for i, aliases in enumerate(self.entity_aliases) if isinstance(aliases, (str, bytes))), None)
            if row is not None:
                raise TypeError(f"entity_aliases[{row}]: give a list of aliases ([{quote(self.entity_aliases[row])}]), "
                                "not one string (its characters would be the aliases)")
        for name, lookup_name, what in (("entity_ids", "_entity_lookup", "entity"),
                                        ("relation_ids", "_relation_lookup", "relation")):
            ids = getattr(self, name)
            if getattr(self, lookup_name) is not None or not isinstance(ids, (list, tuple)):
                continue
            lookup = {key: i for i, key in enumerate(ids)}  # the id lookup, built once: the check's by-product
            if len(lookup) != len(ids):
                repeated = next(key for i, key in enumerate(ids) if lookup[key] != i)
                raise ValueError(f"{name}: {what} id {quote(repeated)} is given twice")
            setattr(self, lookup_name, lookup)
        triples = np.asarray(self.triples)
        if triples.size and not (triples.ndim == 2 and triples.shape[1] == 3 or triples.ndim == 1
                                 and triples.size % 3 == 0):
            raise ValueError(f"triples: expected (T, 3) rows of (head, relation, tail) indices, got shape "
                             f"{triples.shape}")
        flat = triples.reshape(-1)
        if flat.dtype.kind == "f" and not np.array_equal(flat, np.round(flat)):
            raise ValueError(f"triples: the indices must be integers, got {flat[flat != np.round(flat)][0]}")

    # sizes -------------------------------------------------------------------------------
    @property
    def num_entities(self) -> int:
        return len(self.entity_ids)

    @property
    def num_relations(self) -> int:
        return len(self.relation_ids)

    @property
    def num_categories(self) -> int:
        return len(self.category_names)

    @property
    def num_triples(self) -> int:
        return len(self.triples)

    # id <-> index ------------------------------------------------------------------------
    def entity_index(self, entity_id: str) -> int:
        """Dense index of an entity id (``KeyError`` naming the id when unknown)."""
        return self._index("entity", self._entity_lookup, entity_id)

    def _index(self, what: str, lookup: dict[str, int] | None, item_id: str) -> int:
        """``item_id``'s row in ``{what}_ids``, through its id lookup (built on the first call)."""
        if lookup is None:
            lookup = {key: i for i, key in enumerate(getattr(self, f"{what}_ids"))}
            setattr(self, f"_{what}_lookup", lookup)
        try:
            return lookup[item_id]
        except KeyError:
            raise KeyError(f"unknown {what} id {quote(item_id)}") from None

    def entity_indices(self, entities) -> np.ndarray:
        """Dense int64 indices of ``entities``: entity ids (strings, e.g. ``["py", "rust"]``),
        indices (ints, a numpy int array, a tensor, a ``range``) or a mix; one id alone is one
        entity. An unknown id or an index out of range is a ``ValueError`` naming it."""
        if isinstance(entities, str):
            entities = [entities]
        if hasattr(entities, "detach"):  # a torch tensor
            entities = entities.detach().cpu().numpy()
        if isinstance(entities, np.ndarray) and entities.dtype.kind in "iu":
            indices = entities.astype(np.int64).reshape(-1)
        else:
            indices = np.fromiter((self._one_entity_index(e) for e in entities), dtype=np.int64)
        bad = (indices < 0) | (indices >= self.num_entities)
        if bad.any():
            raise ValueError(f"entity index {int(indices[bad][0])} is out of range: the KG has "
                             f"{self.num_entities} entities (indices 0..{self.num_entities - 1})")
        return indices

    def _one_entity_index(self, entity) -> int:
        if isinstance(entity, str):
            try:
                return self.entity_index(entity)
            except KeyError:
                raise ValueError(f"unknown entity id {quote(entity)}: not an id of this KG's "
                                 f"{self.num_entities} entities") from None
        if isinstance(entity, (bool, np.bool_)) or not isinstance(entity, (int, np.integer)):
            raise ValueError(f"entity {quote(entity)}: give an entity id (a string) or an index (an int)")
        return int(entity)

    def relation_index(self, relation_id: str) -> int:
        """Dense index of a relation id (``KeyError`` naming the id when unknown)."""
        return self._index("relation", self._relation_lookup, relation_id)

    # identity ----------------------------------------------------------------------------
    def fingerprint(self) -> str:
        """``"N:P:hash"``: the entity and relation counts and a BLAKE2b hash of the entity and
        relation ids in index order (computed once, then cached).

        Two graphs with the same fingerprint index the same entities and relations the same way,
        so an entity context memory computed for one (rows in entity index order) fits the other;
        reordering, adding or removing an entity changes it. Triples, names and descriptions do
        not enter it (a graph with some triples dropped keeps its fingerprint).
        """
        if self._fingerprint is None:
            digest = hashlib.blake2b(digest_size=12)
            for table in (self.entity_ids, self.relation_ids):
                blob, offsets = getattr(table, "blob", None), getattr(table, "offsets", None)
                # the UTF-8 byte length of every id, then all ids' bytes (the same for a list and
                # for a StringTable, whose storage is exactly that)
                if blob is not None and offsets is not None:
                    lengths = np.diff(np.asarray(offsets, dtype=np.int64))
                    data = np.asarray(blob)[int(offsets[0]):int(offsets[-1])].tobytes()
                else:
                    encoded = [value.encode("utf-8") for value in table]
                    lengths = np.fromiter(map(len, encoded), dtype=np.int64, count=len(encoded))
                    data = b"".join(encoded)
                digest.update(lengths.astype("<i8").tobytes())
                digest.update(data)
                digest.update(b"\x00")
            self._fingerprint = f"{self.num_entities}:{self.num_relations}:{digest.hexdigest()}"
        return self._fingerprint

    # adjacency ---------------------------------------------------------------------------
    @property
    def adjacency(self) -> CSRAdjacency:
        """Both directions of every triple as CSR (built on first use, then cached)."""
        if self._adjacency is None:
            adjacency = CSRAdjacency.from_triples(self.triples, self.num_entities, self.num_relations)
            self.attach_adjacency(adjacency)
        return self._adjacency  # type: ignore[return-value]

    def attach_adjacency(self, adjacency: CSRAdjacency) -> None:
        """Use a precomputed adjacency (the compiled cache stores one)."""
        if adjacency.num_nodes != self.num_entities or adjacency.num_edges != 2 * self.num_triples:
            raise ValueError("adjacency does not match this graph's entities and triples")
        self._adjacency = adjacency

    def degree(self) -> np.ndarray:
        """(N,) int64: number of triples each entity takes part in (as head or tail)."""
        return self.adjacency.degree()

    def edge_index(self, triple_mask=None) -> tuple[np.ndarray, np.ndarray]:
        """Every edge as PyG wants it: ``(edge_index (2, 2T) int64, edge_type (2T,) int64)``, row 0
        the source (the neighbour whose message is sent), row 1 the target (the entity updated).

        The edges are those of :attr:`adjacency` (:func:`both_directions`: triple ``(h, r, t)``
        gives ``t -> h`` with type ``r`` and ``h -> t`` with type ``r + P``), ordered by triple, all
        forward edges first, rather than by entity. ``triple_mask`` (bool, (T,)) keeps only the
        triples where it is True (e.g. a task's training triples); ``torch.from_numpy`` of the
        result is the ``edge_index`` / ``edge_type`` of :class:`jaket.model.knowledge.KnowledgeModule`.
        """
        triples = self.triples.astype(np.int64)
        if triple_mask is not None:
            mask = np.asarray(triple_mask, dtype=bool).reshape(-1)
            if len(mask) != self.num_triples:
                raise ValueError(f"triple_mask has {len(mask)} entries, the graph has {self.num_triples} triples")
            triples = triples[mask]
        node, neighbour, edge_type = both_directions(triples, self.num_relations)
        return np.stack([neighbour, node]), edge_type

    # derived graphs ----------------------------------------------------------------------
    def induced_subgraph(self, entity_indices) -> tuple["KnowledgeGraph", np.ndarray]:
        """The graph on the given entities, keeping only triples among them (the paper's unseen KG').

        Relations and categories are all kept, so their indices stay the same. ``entity_indices``:
        indices or ids, read by :meth:`entity_indices` (an unknown id or an index out of range is a
        ``ValueError`` naming it). Returns the new graph and ``old_index_of_new`` (sorted unique old
        entity indices).
        """
        old = np.unique(self.entity_indices(entity_indices))
        new_of_old = np.full(self.num_entities, -1, dtype=np.int64)
        new_of_old[old] = np.arange(len(old))
        h, t = new_of_old[self.triples[:, 0]], new_of_old[self.triples[:, 2]]
        keep = (h >= 0) & (t >= 0)
        triples = np.stack([h[keep], self.triples[keep, 1], t[keep]], axis=1).astype(np.int32)
        pick = old.tolist()
        graph = KnowledgeGraph(
            entity_ids=[self.entity_ids[i] for i in pick],
            entity_names=[self.entity_names[i] for i in pick],
            entity_descriptions=[self.entity_descriptions[i] for i in pick],
            entity_aliases=[list(self.entity_aliases[i]) for i in pick],
            entity_category=self.entity_category[old],
            category_names=list(self.category_names),
            relation_ids=list(self.relation_ids),
            relation_names=list(self.relation_names),
            relation_descriptions=list(self.relation_descriptions),
            triples=triples,
        )
        return graph, old

    def repeated_triples(self) -> np.ndarray:
        """(T,) bool: the triples that repeat an earlier one (the same head, relation and tail); a
        file may give a fact twice, pre-training counts it once (``drop_triples`` of this mask)."""
        triples = np.asarray(self.triples, dtype=np.int64).reshape(-1, 3)
        if self.num_entities ** 2 * max(self.num_relations, 1) < 2 ** 62:  # one integer per triple
            keys = (triples[:, 0] * self.num_relations + triples[:, 1]) * self.num_entities + triples[:, 2]
            first = np.unique(keys, return_index=True)[1]
        else:
            first = np.unique(triples, axis=0, return_index=True)[1]
        repeated = np.ones(len(triples), dtype=bool)
        repeated[first] = False  # the first of each (return_index: a stable sort's first)
        return repeated

    def drop_triples(self, mask) -> "KnowledgeGraph":
        """The same entities and relations without the triples where ``mask`` (bool, (T,)) is True;
        a mask of other values (``[0, 3]``: triple numbers, read as True / False) is a ``TypeError``."""
        given = np.asarray(mask)
        if given.size and given.dtype != bool:
            raise TypeError(f"mask: give one bool per triple (True: drop it), got {given.dtype} values; for "
                            "triple numbers: mask = np.zeros(kg.num_triples, bool); mask[numbers] = True")
        mask = given.astype(bool).reshape(-1)
        if len(mask) != self.num_triples:
            raise ValueError(f"mask has {len(mask)} entries, the graph has {self.num_triples} triples")
        return KnowledgeGraph(
            entity_ids=self.entity_ids, entity_names=self.entity_names,
            entity_descriptions=self.entity_descriptions, entity_aliases=self.entity_aliases,
            entity_category=self.entity_category.copy(), category_names=list(self.category_names),
            relation_ids=self.relation_ids, relation_names=self.relation_names,
            relation_descriptions=self.relation_descriptions,
            triples=self.triples[~mask].copy(),
            _entity_lookup=self._entity_lookup, _relation_lookup=self._relation_lookup,
            _fingerprint=self._fingerprint,
        )

    # PyKEEN -------------------------------------------------------------------------------
    def _texts(self) -> dict:
        """The graph's text and labels, beside its triples: what PyKEEN and PyG do not model."""
        return {"entity_names": list(self.entity_names), "entity_descriptions": list(self.entity_descriptions),
                "entity_aliases": [list(a) for a in self.entity_aliases],
                "entity_category": self.entity_category.tolist(), "category_names": list(self.category_names),
                "relation_names": list(self.relation_names),
                "relation_descriptions": list(self.relation_descriptions)}

    def to_triples_factory(self, create_inverse_triples: bool = False):
        """This graph's triples as a PyKEEN ``TriplesFactory`` (labels = the entity and relation
        ids, PyKEEN ids = this graph's indices), e.g. to train a PyKEEN model on a JAKET KG. Names,
        descriptions, aliases and categories travel in the factory's ``metadata["jaket"]``, so
        :meth:`from_triples_factory` gives this graph back unchanged."""
        import torch
        from pykeen.triples import TriplesFactory

        return TriplesFactory(
            mapped_triples=torch.from_numpy(self.triples.astype(np.int64)),
            entity_to_id={entity: i for i, entity in enumerate(self.entity_ids)},
            relation_to_id={relation: i for i, relation in enumerate(self.relation_ids)},
            create_inverse_triples=create_inverse_triples, metadata={"jaket": self._texts()},
            num_entities=self.num_entities, num_relations=self.num_relations)

    @classmethod
    def from_triples_factory(cls, factory, descriptions=None, categories=None,
                             relation_descriptions=None) -> "KnowledgeGraph":
        """A KG of a PyKEEN ``TriplesFactory``: entity / relation ids = its labels (its ids as
        strings for a factory without labels), indices = its ids, triples = its mapped triples.

        PyKEEN's graphs carry no text: ``descriptions`` / ``relation_descriptions`` (mappings from
        label to text) supply it; otherwise the label made readable is both name and description
        (``cell_or_molecular_dysfunction`` -> ``cell or molecular dysfunction``, as the PyKEEN
        dataset importer does). ``categories``: an optional mapping from entity label to category.
        A factory made by :meth:`to_triples_factory` carries its graph's texts (``metadata["jaket"]``):
        the graph comes back unchanged.
        """
        texts = (getattr(factory, "metadata", None) or {}).get("jaket")
        if texts is not None and descriptions is categories is relation_descriptions is None:
            return cls._with_texts(factory_labels(factory, "entity_to_id", factory.num_entities),
                                   factory_labels(factory, "relation_to_id", factory.num_relations),
                                   factory.mapped_triples.cpu().numpy(), texts)
        entity_ids = factory_labels(factory, "entity_to_id", factory.num_entities)
        relation_ids = factory_labels(factory, "relation_to_id", factory.num_relations)
        names = [readable(e) for e in entity_ids]
        relation_names = [readable(r) for r in relation_ids]
        texts = dict(descriptions or {})
        entity_descriptions = [texts.get(e) or n for e, n in zip(entity_ids, names)]
        relation_texts = dict(relation_descriptions or {})
        category_of = dict(categories or {})
        category_names = sorted({str(c) for c in category_of.values() if c is not None})
        index = {c: i for i, c in enumerate(category_names)}
        entity_category = np.array([index[str(category_of[e])] if category_of.get(e) is not None else -1
                                    for e in entity_ids], dtype=np.int32)
        return cls(entity_ids=entity_ids, entity_names=names, entity_descriptions=entity_descriptions,
                   entity_aliases=[[] for _ in entity_ids], entity_category=entity_category,
                   category_names=category_names, relation_ids=relation_ids, relation_names=relation_names,
                   relation_descriptions=[relation_texts.get(r) or n for r, n in zip(relation_ids, relation_names)],
                   triples=factory.mapped_triples.cpu().numpy().astype(np.int32))

    @classmethod
    def _with_texts(cls, entity_ids, relation_ids, triples, texts: dict) -> "KnowledgeGraph":
        return cls(entity_ids=list(entity_ids), entity_names=list(texts["entity_names"]),
                   entity_descriptions=list(texts["entity_descriptions"]),
                   entity_aliases=[list(a) for a in texts["entity_aliases"]],
                   entity_category=np.asarray(texts["entity_category"], dtype=np.int32),
                   category_names=list(texts["category_names"]), relation_ids=list(relation_ids),
                   relation_names=list(texts["relation_names"]),
                   relation_descriptions=list(texts["relation_descriptions"]),
                   triples=np.asarray(triples).astype(np.int32).reshape(-1, 3))

    # PyG ----------------------------------------------------------------------------------
    def to_pyg(self):
        """A ``torch_geometric.data.Data`` of this graph: ``edge_index`` / ``edge_type`` of
        :meth:`edge_index` (both directions, type ``r + P`` for the reverse of ``r``), ``y`` the
        entity categories (-1 = none), ``num_nodes``, ``kg_triples`` (T, 3) and, as attributes,
        the ids, names, descriptions, aliases and category / relation names
        (:meth:`from_pyg` gives the graph back unchanged)."""
        import torch
        from torch_geometric.data import Data

        edge_index, edge_type = self.edge_index()
        data = Data(edge_index=torch.from_numpy(edge_index), edge_type=torch.from_numpy(edge_type),
                    y=torch.from_numpy(self.entity_category.astype(np.int64)), num_nodes=self.num_entities,
                    kg_triples=torch.from_numpy(self.triples.astype(np.int64)))
        data.entity_ids, data.relation_ids = list(self.entity_ids), list(self.relation_ids)
        data.num_relations = self.num_relations
        for key, value in self._texts().items():
            if key != "entity_category":
                data[key] = value
        return data

    @classmethod
    def from_pyg(cls, data, relation_names=None) -> "KnowledgeGraph":
        """A KG of a PyG ``Data``: one made by :meth:`to_pyg` comes back unchanged; any other
        reads each edge ``source -> target`` of type ``edge_type`` (0 without one) as the triple
        ``(source, type, target)``, ``y`` (integers, -1 = none) as categories ``"0"``, ``"1"``, ...,
        and names the entities and relations by their indices (``relation_names``: a list by
        relation index)."""
        n = int(data.num_nodes)
        if "kg_triples" in data and "entity_names" in data:
            texts = {key: data[key] for key in ("entity_names", "entity_descriptions", "entity_aliases",
                                                "category_names", "relation_names", "relation_descriptions")}
            texts["entity_category"] = data.y.cpu().numpy()
            return cls._with_texts(data.entity_ids, data.relation_ids, data.kg_triples.cpu().numpy(), texts)
        edge_index = data.edge_index.cpu().numpy().astype(np.int64)
        edge_type = data.edge_type.cpu().numpy().astype(np.int64) if "edge_type" in data \
            else np.zeros(edge_index.shape[1], dtype=np.int64)
        p = int(edge_type.max()) + 1 if len(edge_type) else 1
        names = list(relation_names) if relation_names is not None else [str(r) for r in range(p)]
        if len(names) < p:
            raise ValueError(f"relation_names has {len(names)} names, edge_type goes up to {p - 1}")
        y = data.y.cpu().numpy().astype(np.int64).reshape(-1) if "y" in data and data.y is not None \
            else np.full(n, -1)
        if len(y) != n or y.dtype.kind not in "iu":
            raise ValueError(f"y must hold one integer category per node ({n}), found {len(y)}")
        categories = sorted({int(c) for c in y if c >= 0})
        position = {c: i for i, c in enumerate(sorted(categories, key=str))}
        ids = [str(i) for i in range(n)]
        return cls(entity_ids=ids, entity_names=ids, entity_descriptions=ids, entity_aliases=[[] for _ in ids],
                   entity_category=np.array([position[int(c)] if c >= 0 else -1 for c in y], dtype=np.int32),
                   category_names=sorted(str(c) for c in categories), relation_ids=[str(r) for r in range(len(names))],
                   relation_names=[str(r) for r in names], relation_descriptions=[str(r) for r in names],
                   triples=np.stack([edge_index[0], edge_type, edge_index[1]], axis=1))

    # comparison --------------------------------------------------------------------------
    def __eq__(self, other: object) -> bool:
        if not isinstance(other, KnowledgeGraph):
            return NotImplemented
        for name in ("entity_ids", "entity_names", "entity_descriptions", "category_names",
                     "relation_ids", "relation_names", "relation_descriptions"):
            if list(getattr(self, name)) != list(getattr(other, name)):
                return False
        if [list(a) for a in self.entity_aliases] != [list(a) for a in other.entity_aliases]:
            return False
        return (np.array_equal(self.entity_category, other.entity_category)
                and np.array_equal(self.triples, other.triples))

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return (f"KnowledgeGraph(entities={self.num_entities}, relations={self.num_relations}, "
                f"triples={self.num_triples}, categories={self.num_categories})")
