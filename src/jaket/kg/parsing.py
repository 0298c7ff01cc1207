"""Parsing and validating the directory format (the files are described in :mod:`jaket.kg.io`).

Every problem is collected as a :class:`jaket.kg.errors.Problem` (``path:line: message``) rather
than stopping at the first: :func:`parse_dir` returns them with the graph, :func:`validate_kg_dir`
lists them in file then line order. Well-formed files take a fast path (the triples in C-speed
passes); the line-by-line checks run only to find and name what is wrong.
"""

from __future__ import annotations

from itertools import repeat
from pathlib import Path

import numpy as np

from jaket.jsonio import quote
from jaket.kg.corpus import Mention, MentionCorpus
from jaket.kg.errors import Problem, not_a_file
from jaket.kg.graph import KnowledgeGraph
from jaket.kg.readers import (index_triples, json_object, read_field_lines, read_lines, read_triples,
                              wide_encoding_problem)
from jaket.kg.sources.formats import KINDS, sniff

ENTITIES = "entities.jsonl"
RELATIONS = "relations.jsonl"
TRIPLES = "triples.tsv"
CORPUS = "corpus.jsonl"
#: the files every KG directory has (the compiled cache is keyed by them)
SOURCES = (ENTITIES, RELATIONS, TRIPLES)
#: the evaluation splits a KG directory may hold (``NAME.txt``, read by ``build_source("dir")``)
SPLIT_NAMES = ("valid", "test")
FORBIDDEN_IN_IDS = ("\t", "\n", "\r", "\0")


def string_field(record: dict, key: str, path: Path, number: int, problems: list[Problem],
                  *, required: bool = True, is_id: bool = False) -> str | None:
    if key not in record:
        if required:
            problems.append(Problem(str(path), number, f"missing field {key!r}"))
        return None
    value = record[key]
    if not isinstance(value, str):
        problems.append(Problem(str(path), number,
                                f"field {key!r} must be a string, found {type(value).__name__}"))
        return None
    if is_id:
        if not value:
            problems.append(Problem(str(path), number, f"field {key!r} is empty"))
            return None
        if any(c in value for c in FORBIDDEN_IN_IDS):
            problems.append(Problem(str(path), number,
                                    f"id {quote(value)} contains a tab, a line break or a NUL (not allowed in ids)"))
            return None
    return value


# the three KG files and the corpus ------------------------------------------------------------
_NO_ALIASES: list[str] = []


def span_object(item, where: str, path: Path, number: int, problems: list[Problem]) -> tuple[int, int] | None:
    """The integer ``start`` and ``end`` of one span object of a JSONL record (a corpus mention, a
    target), or None with the problem named ``path:line`` (``where``: which span of the record)."""
    if not isinstance(item, dict):
        problems.append(Problem(str(path), number, f"{where}: expected an object"))
        return None
    start, end = item.get("start"), item.get("end")
    if not all(isinstance(v, int) and not isinstance(v, bool) for v in (start, end)):
        problems.append(Problem(str(path), number, f"{where}: 'start' and 'end' must be integers"))
        return None
    return start, end


def _records(path: Path, problems: list[Problem]) -> list[tuple[int, str, dict | None]]:
    """``(line number, line, JSON object or None)`` of every non-blank line of a JSONL file;
    malformed lines become problems. Each line is parsed on its own: parsing the whole file as
    one JSON array is about twice as fast, but a line holding two objects and an object split
    over two lines can then cancel out and shift every later record onto the wrong line."""
    return [(number, line, json_object(path, number, line, problems)) for number, line in read_lines(path, problems)]


def _admit(kind: str, item_id: str | None, description: str | None, first_line: dict[str, int],
           problems_before: int, path: Path, number: int, problems: list[Problem]) -> bool:
    """Whether the entity / relation record on line ``number`` is kept: its id is new and its line
    added no problem past ``problems_before``. A kept or broken record's id is remembered in
    ``first_line`` (so a triple naming an id defined on a broken line is not reported a second
    time as dangling); an empty description is a warning."""
    if item_id is not None and item_id in first_line:
        problems.append(Problem(str(path), number, f"duplicate {kind} id {quote(item_id)} "
                                                    f"(first defined at line {first_line[item_id]})"))
        return False
    if item_id is not None:
        first_line[item_id] = number
    if len(problems) > problems_before:
        return False
    if description is not None and not description.strip():
        problems.append(Problem(str(path), number, f"{kind} {quote(item_id)} has {_empty(description)} description",
                                "warning"))
    return True


def _empty(text: str) -> str:
    """How a text without a word is named in a warning: "an empty" or "a blank" (white space)."""
    return "an empty" if text == "" else "a blank (only white space)"


def _parse_entities(path: Path, problems: list[Problem]):
    ids, names, descriptions, categories, aliases = [], [], [], [], []
    first_line: dict[str, int] = {}
    for number, line, record in _records(path, problems):
        if record is None:
            continue
        entity_id, name, description = record.get("id"), record.get("name"), record.get("description")
        category, alias_list = record.get("category"), record.get("aliases", _NO_ALIASES)
        if (type(entity_id) is str and type(name) is str and name.strip() and type(description) is str
                and description.strip() and (category is None or (type(category) is str and category))
                and (alias_list is _NO_ALIASES or (type(alias_list) is list
                                                   and all(type(a) is str and a.strip() for a in alias_list)))) \
                and entity_id and "\t" not in entity_id and "\n" not in entity_id \
                and "\r" not in entity_id and "\0" not in entity_id and entity_id not in first_line:
            first_line[entity_id] = number  # fast path: a well-formed new entity
            ids.append(entity_id)
            names.append(name)
            descriptions.append(description)
            categories.append(category)
            aliases.append(list(alias_list))
            continue
        before = len(problems)
        entity_id = string_field(record, "id", path, number, problems, is_id=True)
        name = string_field(record, "name", path, number, problems)
        description = string_field(record, "description", path, number, problems)
        category = record.get("category")
        if category is not None and (not isinstance(category, str) or not category):
            problems.append(Problem(str(path), number,
                                    "field 'category' must be a non-empty string or null"))
        alias_list = record.get("aliases", [])
        if not isinstance(alias_list, list) or not all(isinstance(a, str) for a in alias_list):
            problems.append(Problem(str(path), number, "field 'aliases' must be a list of strings"))
        if not _admit("entity", entity_id, description, first_line, before, path, number, problems):
            continue
        if name is not None and not name.strip():
            problems.append(Problem(str(path), number, f"entity {quote(entity_id)} has {_empty(name)} name (no text "
                                                        "to link it by; its description still embeds it)", "warning"))
        blank = sum(not a.strip() for a in alias_list)
        if blank:
            problems.append(Problem(str(path), number, f"entity {quote(entity_id)} has {blank} blank alias(es) "
                                                        "(only white space: nothing to link)", "warning"))
        ids.append(entity_id)
        names.append(name)
        descriptions.append(description)
        categories.append(category)
        aliases.append(list(alias_list))
    return ids, names, descriptions, categories, aliases, first_line


def _parse_relations(path: Path, problems: list[Problem]):
    ids, names, descriptions = [], [], []
    first_line: dict[str, int] = {}
    for number, line, record in _records(path, problems):
        if record is None:
            continue
        before = len(problems)
        relation_id = string_field(record, "id", path, number, problems, is_id=True)
        name = string_field(record, "name", path, number, problems)
        description = string_field(record, "description", path, number, problems)
        if not _admit("relation", relation_id, description, first_line, before, path, number, problems):
            continue
        ids.append(relation_id)
        names.append(name)
        descriptions.append(description)
    return ids, names, descriptions, first_line


def _triples_fast_path(path: Path, entity_index: dict[str, int],
                       relation_index: dict[str, int]) -> np.ndarray | None:
    """The triples of a well-formed file in C-speed passes (``None`` at the first irregularity:
    the line-by-line parser then finds and reports it). Works in blocks to bound memory."""
    data = path.read_bytes()
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return None
    del data
    if "\r" in text or "\ufeff" in text:
        return None
    lines = text.split("\n")
    del text
    if lines and lines[-1] == "":
        lines.pop()
    blocks = []
    tab = repeat("\t")
    for begin in range(0, len(lines), 1 << 20):
        block = lines[begin:begin + (1 << 20)]
        if any(c != 2 for c in map(str.count, block, tab)):
            return None  # wrong column count or a blank line
        fields = "\t".join(block).split("\t")
        missing = repeat(-1)
        heads = np.array(list(map(entity_index.get, fields[0::3], missing)), dtype=np.int64)
        relations = np.array(list(map(relation_index.get, fields[1::3], missing)), dtype=np.int64)
        tails = np.array(list(map(entity_index.get, fields[2::3], missing)), dtype=np.int64)
        if len(block) and min(heads.min(), relations.min(), tails.min()) < 0:
            return None
        blocks.append(np.stack([heads, relations, tails], axis=1).astype(np.int32))
    return np.concatenate(blocks) if blocks else np.zeros((0, 3), dtype=np.int32)


def _parse_triples(path: Path, entity_index: dict[str, int], relation_index: dict[str, int],
                   known_entities: dict[str, int], known_relations: dict[str, int],
                   problems: list[Problem]) -> np.ndarray:
    """(T, 3) int32 triples. Ids in ``known_*`` but not in ``*_index`` were defined on a broken
    line: the triple is skipped without a second complaint."""
    fast = _triples_fast_path(path, entity_index, relation_index)
    if fast is not None:
        return fast
    rows = []
    for number, line in read_field_lines(path, problems):
        parts = line.split("\t")
        if len(parts) != 3:
            problems.append(Problem(str(path), number,
                                    f"expected 3 tab-separated columns (head, relation, tail), "
                                    f"found {len(parts)}"))
            continue
        head, relation, tail = parts
        ok = True
        for value, table, known, role in ((head, entity_index, known_entities, "head entity"),
                                          (relation, relation_index, known_relations, "relation"),
                                          (tail, entity_index, known_entities, "tail entity")):
            if value not in table:
                ok = False
                if value not in known:
                    source = RELATIONS if role == "relation" else ENTITIES
                    problems.append(Problem(str(path), number,
                                            f"unknown {role} id {quote(value)} (not in {source})"))
        if ok:
            rows.append((entity_index[head], relation_index[relation], entity_index[tail]))
    return np.asarray(rows, dtype=np.int32).reshape(-1, 3)


def parse_corpus(path: Path, entity_index, known_entities: dict[str, int] | None,
                  problems: list[Problem]) -> MentionCorpus:
    """``entity_index`` maps an entity id to its index (dict or callable raising KeyError)."""
    lookup = entity_index.__getitem__ if isinstance(entity_index, dict) else entity_index
    texts, mentions = [], []
    for number, line, record in _records(path, problems):
        if record is None:
            continue
        before = len(problems)
        text = string_field(record, "text", path, number, problems)
        raw = record.get("mentions", [])
        if not isinstance(raw, list):
            problems.append(Problem(str(path), number, "field 'mentions' must be a list"))
            continue
        spans: list[Mention] = []
        for k, m in enumerate(raw):
            where = f"mention {k}"
            span = span_object(m, where, path, number, problems)
            if span is None:
                continue
            (start, end), entity = span, m.get("entity")
            if not isinstance(entity, str):
                problems.append(Problem(str(path), number, f"{where}: 'entity' must be an entity id string"))
                continue
            if text is not None and not (0 <= start < end <= len(text)):
                problems.append(Problem(str(path), number,
                                        f"{where}: span [{quote(start)}, {quote(end)}) is outside the text "
                                        f"(length {len(text)}) or empty"))
                continue
            if text is not None and not text[start:end].strip():
                problems.append(Problem(str(path), number, f"{where}: span [{start}, {end}) holds only white space "
                                                            "(no token to read it by: counted as unaligned when "
                                                            "the corpus is tokenised)", "warning"))
            try:
                index = lookup(entity)
            except KeyError:
                if known_entities is None or entity not in known_entities:
                    problems.append(Problem(str(path), number,
                                            f"{where}: unknown entity id {quote(entity)}"))
                else:
                    problems.append(Problem(str(path), number,
                                            f"{where}: entity {quote(entity)} is defined on a broken line"))
                continue
            spans.append(Mention(start, end, int(index)))
        ordered = sorted(spans, key=lambda s: (s.start, s.end))
        for a, b in zip(ordered, ordered[1:]):
            if b.start < a.end:
                problems.append(Problem(str(path), number,
                                        f"mentions overlap: [{a.start}, {a.end}) and [{b.start}, {b.end})"))
        if any(p.is_error for p in problems[before:]) or text is None:
            continue
        texts.append(text)
        mentions.append(spans)
    return MentionCorpus(texts, mentions)


# the whole directory --------------------------------------------------------------------------
def file_not_a_kg_folder(path: Path) -> str:
    """Why a file given where a KG folder is expected is not one: what the file looks like (OWL, RDF,
    OBO, JSON, a KG file) and the command that makes a KG folder of it (issue 69, item 2)."""
    kind = sniff(path)
    if kind is None:
        return "a file, not a KG directory (entities.jsonl, relations.jsonl, triples.tsv)"
    what, reader = KINDS[kind]
    if reader is not None:
        return (f"a file ({what}), not a KG directory: `jaket kg import {reader} {path} --out DIR` makes a KG "
                "folder of it")
    return f"a file ({what}), not a KG directory: give the folder that holds it"


def missing_files(directory: Path) -> list[Problem]:
    """A problem for a directory that is not one, or for each of :data:`SOURCES` it lacks, has as a
    folder or holds in UTF-16 / UTF-32 (then named once, not as every line that cannot be read)."""
    problems = []
    if not directory.is_dir():
        return [Problem(str(directory), None, file_not_a_kg_folder(directory) if directory.is_file()
                        else "not a directory")]
    for name in SOURCES:
        problem = not_a_file(directory / name) or wide_encoding_problem(directory / name)
        if problem is not None:
            problems.append(problem)
    return problems


def parse_dir(directory: Path, with_corpus: bool) -> tuple[KnowledgeGraph | None, MentionCorpus | None,
                                                            list[Problem]]:
    """``(kg, corpus, problems)`` of a KG directory; ``kg`` and ``corpus`` are ``None`` when a
    problem is an error. ``with_corpus``: parse ``corpus.jsonl`` too (when present)."""
    problems = missing_files(directory)
    if problems:
        return None, None, problems
    e_ids, e_names, e_desc, e_cats, e_aliases, e_known = _parse_entities(directory / ENTITIES, problems)
    r_ids, r_names, r_desc, r_known = _parse_relations(directory / RELATIONS, problems)
    entity_index = {e: i for i, e in enumerate(e_ids)}
    relation_index = {r: i for i, r in enumerate(r_ids)}
    triples = _parse_triples(directory / TRIPLES, entity_index, relation_index, e_known, r_known,
                             problems)
    corpus = None
    if with_corpus and (directory / CORPUS).is_file():
        corpus = parse_corpus(directory / CORPUS, entity_index, e_known, problems)
    if any(p.is_error for p in problems):
        return None, None, problems
    category_names = sorted({c for c in e_cats if c is not None})
    category_index = {c: i for i, c in enumerate(category_names)}
    kg = KnowledgeGraph(
        entity_ids=e_ids, entity_names=e_names, entity_descriptions=e_desc, entity_aliases=e_aliases,
        entity_category=np.fromiter((category_index[c] if c is not None else -1 for c in e_cats),
                                    dtype=np.int32, count=len(e_cats)),
        category_names=category_names, relation_ids=r_ids, relation_names=r_names,
        relation_descriptions=r_desc, triples=triples,
        _entity_lookup=entity_index, _relation_lookup=relation_index,
    )
    return kg, corpus, problems


def validate_kg_dir(directory) -> list[Problem]:
    """Every problem of a KG directory (errors and warnings), in file then line order: exactly what
    loading it refuses (the KG, ``corpus.jsonl`` and the ``valid.txt`` / ``test.txt`` splits, as
    ``build_source("dir")`` reads them) is an error, and a KG without an entity, which loads but
    has nothing to train on; the warnings name what loads but means little: no triple, triples
    given twice, an empty corpus or one without a mention, split triples naming an id the KG lacks
    (tests/test_fuzz_validate.py checks the agreement)."""
    directory = Path(directory)
    kg, corpus, problems = parse_dir(directory, with_corpus=True)
    if kg is not None:
        if kg.num_entities == 0:
            problems.append(Problem(str(directory / ENTITIES), None, "no entity: nothing to train on, embed or "
                                    "classify (pre-training and the tasks refuse it)"))
        if kg.num_triples == 0:
            problems.append(Problem(str(directory / TRIPLES), None, "no triple: the knowledge module has no "
                                    "edge and relation prediction no example", "warning"))
        repeated = repeated_triples_problem(kg, directory / TRIPLES)
        if repeated is not None:
            problems.append(repeated)
    _optional_files(directory, kg, problems)
    if corpus is not None and (len(corpus) == 0 or corpus.num_mentions == 0):
        problems.append(Problem(str(directory / CORPUS), None,
                                "no text" if len(corpus) == 0 else "no mention in any text: masked entity "
                                "prediction has no example (jaket link adds them)", "warning"))
    order = {name: i for i, name in enumerate((ENTITIES, RELATIONS, TRIPLES, CORPUS,
                                               *(f"{split}.txt" for split in SPLIT_NAMES)))}
    return sorted(problems, key=lambda p: (order.get(Path(p.path).name, 9), p.path, p.line or 0))


def repeated_triples_problem(kg: KnowledgeGraph, path: Path) -> Problem | None:
    """A warning saying how many triples of ``kg`` (read from ``path``) repeat an earlier one, with
    the first such triple; None when none does."""
    repeated = np.flatnonzero(kg.repeated_triples())
    if not len(repeated):
        return None
    head, relation, tail = kg.triples[repeated[0]]
    example = " ".join(quote(x) for x in (kg.entity_ids[head], kg.relation_ids[relation], kg.entity_ids[tail]))
    return Problem(str(path), None, f"{len(repeated)} triple(s) given again (the same head, relation and tail as an "
                                    f"earlier line, e.g. {example}); pre-training counts each once", "warning")


def _optional_files(directory: Path, kg: KnowledgeGraph | None, problems: list[Problem]) -> None:
    """What loading the directory (``build_source("dir")``) refuses in its optional files: a
    ``corpus.jsonl`` that is not a file, a split's malformed lines; and, as a warning, the split
    triples it skips (an entity or relation the KG lacks)."""
    corpus = directory / CORPUS
    if corpus.exists() and not corpus.is_file():
        problems.append(not_a_file(corpus))
    for split in SPLIT_NAMES:
        path = directory / f"{split}.txt"
        if not path.exists():
            continue
        rows = read_triples(path, problems)
        if kg is not None and rows:
            skipped = index_triples((row[1:] for row in rows), kg)[1]
            if skipped:
                problems.append(Problem(str(path), None, f"{skipped} of {len(rows)} triples name an entity or "
                                        "relation not in the KG (skipped when the split is read)", "warning"))


__all__ = ["CORPUS", "ENTITIES", "RELATIONS", "SOURCES", "SPLIT_NAMES", "TRIPLES", "json_object", "missing_files",
           "parse_corpus", "parse_dir", "repeated_triples_problem", "string_field", "validate_kg_dir"]
