"""User split files: which entities train, select (dev) and test a fine-tuned model.

A split file lists one entity a line, in one of two forms; every line of every split file of a run
uses the same one::

    Q42                an entity id: its label is the entity's category in the KG
    Q42<TAB>writer     an entity id and its label (the KG's categories are then not used)

Blank lines and lines starting with ``#`` are skipped. Every problem is reported as
``path:line: message`` (:class:`jaket.kg.io.KGFormatError`): an unknown entity id, an id listed
twice (in one file or in two files of the run), more than two tab-separated fields, a line whose
form differs from the first line's, an id-only line for an entity without a category in the KG.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from jaket.jsonio import quote
from jaket.kg.graph import KnowledgeGraph
from jaket.kg.errors import FirstLines
from jaket.kg.io import KGFormatError, Problem
from jaket.kg.readers import read_lines

SPLIT_NAMES = ("train", "dev", "test")


@dataclass
class EntityRow:
    line: int
    entity: int
    label: str | None


@dataclass
class EntitySplits:
    """Entity indices of each split (in file order) and where each came from.

    ``label_names`` / ``labels`` are set when the files carry labels: ``labels[i]`` is the index
    into ``label_names`` of entity ``i``'s label, -1 for an entity in no file."""

    train: np.ndarray
    dev: np.ndarray
    test: np.ndarray
    files: dict[str, str] = field(default_factory=dict)
    label_names: list[str] | None = None
    labels: np.ndarray | None = None

    @property
    def labelled_by_files(self) -> bool:
        return self.label_names is not None

    def relabel(self, kg: KnowledgeGraph) -> KnowledgeGraph:
        """``kg`` with the files' labels as its categories (only when the files carry labels)."""
        if self.label_names is None:
            return kg
        return dataclasses.replace(kg, entity_category=self.labels, category_names=list(self.label_names))


def read_entity_file(path, kg: KnowledgeGraph, problems: list[Problem]) -> list[EntityRow]:
    """The rows of one split (or entity list) file; problems are appended, bad lines left out."""
    path = Path(path)
    try:
        lines = read_lines(path, problems)  # blank lines left out, a line that is not UTF-8 named
    except OSError as error:
        problems.append(Problem(str(path), None, f"cannot read: {error.strerror or error}"))
        return []
    rows: list[EntityRow] = []
    seen = FirstLines()
    labelled: bool | None = None
    for number, line in lines:
        if line.lstrip().startswith("#"):
            continue
        fields = line.split("\t")
        if len(fields) > 2:
            problems.append(Problem(str(path), number, f"expected 'id' or 'id<TAB>label', found {len(fields)} "
                                                       "tab-separated fields"))
            continue
        entity_id = fields[0].strip()
        label = fields[1].strip() if len(fields) == 2 else None
        if label == "":
            problems.append(Problem(str(path), number, "empty label after the tab"))
            continue
        if labelled is None:
            labelled = label is not None
        elif labelled != (label is not None):
            problems.append(Problem(str(path), number, "this line has " + ("a label" if label is not None else
                                                                              "no label") +
                                    " but the file's first line " + ("has one" if labelled else "has none") +
                                    ": use one form ('id' or 'id<TAB>label') in every line"))
            continue
        try:
            index = kg.entity_index(entity_id)
        except KeyError:
            problems.append(Problem(str(path), number, f"unknown entity id {quote(entity_id)} (not in the KG)"))
            continue
        if seen.repeated(index, number, path, f"entity {quote(entity_id)}", problems):
            continue
        rows.append(EntityRow(number, index, label))
    return rows


def read_entity_list(path, kg: KnowledgeGraph) -> np.ndarray:
    """Entity indices of a file of entity ids (split-file format; labels are ignored)."""
    problems: list[Problem] = []
    rows = read_entity_file(path, kg, problems)
    if problems:
        raise KGFormatError(problems)
    return np.asarray([r.entity for r in rows], dtype=np.int64)


def read_splits(kg: KnowledgeGraph, train, dev, test=None) -> EntitySplits:
    """The user's splits of ``kg`` (module docstring). ``train`` and ``dev`` are required (dev
    selects the epoch and stops training early); without ``test`` nothing is tested."""
    paths = {"train": train, "dev": dev, "test": test}
    for name in ("train", "dev"):
        if paths[name] is None:
            raise ValueError(f"user splits need a {name} file (--{name} FILE); dev selects the best epoch "
                             "and stops training early")
    problems: list[Problem] = []
    rows = {name: read_entity_file(path, kg, problems) if path is not None else []
            for name, path in paths.items()}
    where: dict[int, tuple[str, int]] = {}
    form: tuple[str, int, bool] | None = None
    for name, split_rows in rows.items():
        for row in split_rows:
            if row.entity in where:
                other, line = where[row.entity]
                problems.append(Problem(str(paths[name]), row.line,
                                        f"entity {quote(kg.entity_ids[row.entity])} is also in the {other} split "
                                        f"({paths[other]}:{line}); splits must be disjoint"))
                continue
            where[row.entity] = (name, row.line)
            has_label = row.label is not None
            if form is None:
                form = (str(paths[name]), row.line, has_label)
            elif form[2] != has_label:
                problems.append(Problem(str(paths[name]), row.line,
                                        f"{'labelled' if has_label else 'unlabelled'} row, but {form[0]}:{form[1]} "
                                        f"is {'labelled' if form[2] else 'unlabelled'}: every split file of a "
                                        "run uses the same form"))
            elif not has_label and kg.entity_category[row.entity] < 0:
                problems.append(Problem(str(paths[name]), row.line,
                                        f"entity {quote(kg.entity_ids[row.entity])} has no category in the KG; give "
                                        "its label as 'id<TAB>label'"))
    for name in ("train", "dev"):
        if not rows[name] and not any(p.path == str(paths[name]) for p in problems):
            problems.append(Problem(str(paths[name]), None, f"the {name} split lists no entity"))
    if problems:
        raise KGFormatError(problems)
    splits = EntitySplits(*(np.asarray([r.entity for r in rows[n]], dtype=np.int64) for n in SPLIT_NAMES),
                          files={n: str(p) for n, p in paths.items() if p is not None})
    if form is not None and form[2]:
        names = sorted({r.label for split_rows in rows.values() for r in split_rows})
        index = {name: i for i, name in enumerate(names)}
        labels = np.full(kg.num_entities, -1, dtype=np.int32)
        for split_rows in rows.values():
            for r in split_rows:
                labels[r.entity] = index[r.label]
        splits.label_names, splits.labels = names, labels
    return splits
