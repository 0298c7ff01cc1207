"""`jaket kg validate` agrees with loading (issue #27): hypothesis builds KG folders, well-formed and
broken (bad JSON lines, unknown, duplicate or empty ids, NUL and tabs in ids, lone surrogates,
invalid UTF-8, deep nesting, wrong types, huge integers, missing files, a folder where a file
should be, corpora and evaluation splits), and checks that

- ``validate_kg_dir`` reports no error exactly when the folder loads the way pre-training and the
  tasks load it (``build_source("dir")``: the KG, its ``corpus.jsonl`` and ``valid.txt`` /
  ``test.txt`` when present) and holds an entity (issue #40: a KG of none loads, but trains
  nothing), and the loader's errors are among the validator's;
- every problem is one line ``path:line: message`` (or ``path: message`` for a whole file), with
  any value quoted short;
- nothing is dropped silently: a folder that loads has every entity, relation, triple and text
  the files hold, and its compiled cache gives the same graph back.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from jaket.kg.errors import KGFormatError, Problem
from jaket.kg.io import load_kg, validate_kg_dir
from jaket.kg.sources.registry import build_source

pytestmark = pytest.mark.filterwarnings("ignore")

#: the longest a message may be: a quoted value is cut to 80 characters (whose ``repr`` may
#: escape each to at most 10), never the whole 1 MB value
LONGEST_MESSAGE = 1200

SURROGATE = "\ud800"  # written escaped by json.dumps, or raw as the bytes UTF-8 cannot hold


def fuzz(examples: int):
    scale = int(os.environ.get("JAKET_FUZZ_SCALE", "1"))
    return settings(max_examples=examples * scale, deadline=None, database=None, derandomize=True,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                           HealthCheck.filter_too_much])


# -------------------------------------------------------------------------------- strategies
# A well-formed folder is drawn first, then none to three defects are made in it, so that about
# half the folders load and half do not; blank lines, CRLF, a byte order mark, a missing last line
# end, empty names and descriptions, and split triples naming unknown ids must all still load.
ENTITY_POOL = ["Q1", "Q2", "Q3", "a b", " ", "Zürich"]
RELATION_POOL = ["P1", "P2", "p 3"]
WORDS = ["the", "cat", "Zürich", "met", "a", "b", "dog", "x"]
JSONL = ("entities.jsonl", "relations.jsonl", "corpus.jsonl")
TRIPLE_FILES = ("triples.tsv", "valid.txt")
FILES = JSONL + TRIPLE_FILES

#: values a field may be given by a defect (each wrong somewhere, not necessarily everywhere)
ODD_VALUES = [None, 3, 2.5, True, [], {}, ["Q1"], {"id": "Q1"}, 10**30, 10**4000, "", " ", "t\tab", "n\0ul", "l\nf",
              "cr\r", SURROGATE + "x", [[[[[]]]]], "Q9"]
#: whole lines that are not a usable record (and some that are: a tab line in a JSONL file is blank)
BROKEN_LINES = {"jsonl": ["{", "[1, 2]", "null", '"text"', '{"id": "Q1",}', "[" * 150 + "]" * 150,
                          '{"a": ' * 120 + "1" + "}" * 120, '{"id": "Q1", "id": "Q2", "name": "n", "description": "d"}',
                          '{"id": ' + "9" * 5000 + "}", "\ufeff{}", "NaN", "not json at all", "\t"],
                "triples": ["Q1\tP1", "Q1\tP1\tQ2\tQ3", "\t\t", "\t", " \t \t ", "Q1 P1 Q2", "Q9\tP1\tQ1",
                            "Q1\tP9\tQ1", "\tP1\tQ1", "Q1\tP1\t" + "x" * 10**6, "\ufeffQ1\tP1\tQ1"]}
BAD_BYTES = [b"\xff\xfe{}", b'{"id": "\xc3"}', b"\x80", b"Q1\tP1\t\xff", b"\xed\xa0\x80"]


@st.composite
def _well_formed(draw) -> dict:
    """File name -> list of lines (a JSON value, a text line or raw bytes)."""
    entities = draw(st.lists(st.sampled_from(ENTITY_POOL), unique=True, max_size=len(ENTITY_POOL)))
    relations = draw(st.lists(st.sampled_from(RELATION_POOL), unique=True, max_size=len(RELATION_POOL)))
    name = st.sampled_from(["", "cat", "Zürich", "a b"]) | st.text(max_size=6)
    optional = {"category": st.sampled_from([None, "city", "human"]), "aliases": st.lists(name, max_size=2)}
    folder: dict = {
        "entities.jsonl": [draw(st.fixed_dictionaries({"id": st.just(e), "name": name, "description": name},
                                                      optional=optional)) for e in entities],
        "relations.jsonl": [{"id": r, "name": draw(name), "description": draw(name)} for r in relations]}
    def triple_lines(pool_e, pool_r):
        if not pool_e or not pool_r:
            return []
        return ["\t".join((draw(st.sampled_from(pool_e)), draw(st.sampled_from(pool_r)), draw(st.sampled_from(pool_e))))
                for _ in range(draw(st.integers(0, 5)))]
    folder["triples.tsv"] = triple_lines(entities, relations)
    if draw(st.booleans()):
        # (a split's ids are stripped of spaces: the entity " " cannot be named there)
        folder["valid.txt"] = triple_lines([e for e in entities if e.strip() == e] + ["Q9"], relations + ["P9"])
    if draw(st.booleans()):
        folder["corpus.jsonl"] = [_text(draw, entities) for _ in range(draw(st.integers(0, 3)))]
    return folder


def _text(draw, entities: list[str]) -> dict:
    words = draw(st.lists(st.sampled_from(WORDS), min_size=1, max_size=5))
    mentions, at = [], 0
    for word in words:
        if entities and draw(st.integers(0, 2)) == 0:
            mentions.append({"start": at, "end": at + len(word), "entity": draw(st.sampled_from(entities))})
        at += len(word) + 1
    return {"text": " ".join(words), "mentions": mentions}


@st.composite
def _defect(draw, folder: dict) -> None:
    """Break ``folder`` in one way (or, for the benign kinds, change it in a way that must load)."""
    name = draw(st.sampled_from(FILES))
    lines = folder.get(name)
    kind = draw(st.sampled_from(["field", "drop", "line", "bytes", "duplicate", "mention", "blank",
                                 "absent", "folder"]))
    if kind in ("absent", "folder"):
        folder[name] = kind
        return
    if not isinstance(lines, list):
        return
    at = draw(st.integers(0, len(lines)))
    records = [i for i, line in enumerate(lines) if isinstance(line, dict)]
    if kind == "line":
        lines.insert(at, draw(st.sampled_from(BROKEN_LINES["jsonl" if name in JSONL else "triples"])))
    elif kind == "bytes":
        lines.insert(at, draw(st.sampled_from(BAD_BYTES)))
    elif kind == "blank":
        lines.insert(at, draw(st.sampled_from([b"", b"  "])))
    elif kind == "duplicate" and lines:
        lines.insert(at, lines[draw(st.integers(0, len(lines) - 1))])
    elif kind in ("field", "drop") and records:
        record = dict(lines[(i := draw(st.sampled_from(records)))])
        key = draw(st.sampled_from(sorted(record) + ["category", "aliases", "extra"]))
        if kind == "drop":
            record.pop(key, None)
        else:
            record[key] = draw(st.sampled_from(ODD_VALUES) | st.text(max_size=4))
        lines[i] = record
    elif kind == "mention" and name == "corpus.jsonl" and records:
        record = dict(lines[(i := draw(st.sampled_from(records)))])
        mention = {"start": draw(st.integers(-2, 12) | st.sampled_from(ODD_VALUES)),
                   "end": draw(st.integers(-2, 12) | st.sampled_from(ODD_VALUES)),
                   "entity": draw(st.sampled_from(ENTITY_POOL + ["Q9", 7]))}
        record["mentions"] = list(record["mentions"]) + [draw(st.sampled_from([mention, "m", None, [1]]))]
        lines[i] = record


@st.composite
def kg_folders(draw) -> dict:
    """File name -> ``(bytes, number of record lines)`` or ``"absent"`` / ``"folder"``."""
    folder = draw(_well_formed())
    for _ in range(draw(st.sampled_from([1, 2, 0, 3]))):
        draw(_defect(folder))
    return {name: _file(name, folder.get(name, "absent"), ascii=draw(st.booleans()),
                        end=draw(st.sampled_from([b"\n", b"\r\n"])), last_end=draw(st.booleans()),
                        bom=draw(st.integers(0, 5)) == 0) for name in FILES}


def _file(name: str, lines, ascii: bool = True, end: bytes = b"\n", last_end: bool = True, bom: bool = False):
    """``(content, number of record lines)`` of a file of ``lines`` (JSON values, text lines or raw
    bytes), or ``lines`` itself when it is ``"absent"`` / ``"folder"``."""
    if isinstance(lines, str):
        return lines
    rendered = [line if isinstance(line, bytes) else
                (line if isinstance(line, str) else json.dumps(line, ensure_ascii=ascii))
                .encode("utf-8", "surrogatepass") for line in lines]
    data = b"".join(line + end for line in rendered)
    if rendered and not last_end:
        data = data[:-len(end)]
    # a blank line is white space only; in a tab-separated file, a line holding a tab is not blank
    records = sum(bool(line.strip()) or (name in TRIPLE_FILES and b"\t" in line) for line in rendered)
    return (b"\xef\xbb\xbf" if bom else b"") + data, records


def _folder(**files) -> dict:
    """A spec written by hand (``valid_txt`` for ``valid.txt``): regressions pinned as examples."""
    base = {"entities.jsonl": [{"id": "Q1", "name": "one", "description": "the first"}],
            "relations.jsonl": [{"id": "P1", "name": "is", "description": "a relation"}],
            "triples.tsv": ["Q1\tP1\tQ1"]}
    base.update({name.replace("_", "."): lines for name, lines in files.items()})
    return {name: _file(name, base.get(name, "absent")) for name in FILES}


def _write(root: Path, spec: dict) -> None:
    root.mkdir()
    for name, value in spec.items():
        if value == "folder":
            (root / name).mkdir()
        elif value != "absent":
            (root / name).write_bytes(value[0])


# -------------------------------------------------------------------------------- the property
def _one_clean_line(problem: Problem, folder: Path) -> None:
    said = str(problem)
    assert "\n" not in said and "\r" not in said, said
    assert problem.path.startswith(str(folder)), said
    prefix = f"{problem.path}:{problem.line}: " if problem.line is not None else f"{problem.path}: "
    assert said.startswith(prefix) and problem.message.strip(), said
    assert problem.line is None or problem.line >= 1, said
    assert len(problem.message) <= LONGEST_MESSAGE, said[:300]


def _records_of(spec: dict, name: str) -> int:
    value = spec[name]
    return value[1] if isinstance(value, tuple) else 0


@fuzz(250)
@given(spec=kg_folders())
@example(spec=_folder(triples_tsv=["Q1\tP1\tQ1", "\t\t"]))  # was skipped as a blank line
@example(spec=_folder(valid_txt=["Q1\tP1"]))  # a split's bad line: validate did not read the splits
@example(spec=_folder(corpus_jsonl="folder"))  # a folder in the corpus's place was ignored
@example(spec=_folder(entities_jsonl=['{"id": "Q1", "name": ' + "9" * 5000 + "}"]))  # int() limit: ValueError
@example(spec=_folder(valid_txt=["Q1\tP9\tQ1", "Q9\tP1\tQ1"]))  # unknown ids: a warning, loads
@example(spec=_folder(corpus_jsonl=[{"text": "one", "mentions": [{"start": 0, "end": 10**4000, "entity": "Q1"}]}]))
def test_validate_says_valid_exactly_when_the_folder_loads(spec):
    with tempfile.TemporaryDirectory(prefix="jaket-validate-") as holder:
        folder = Path(holder) / "kg"
        _write(folder, spec)
        problems = validate_kg_dir(folder)
        for problem in problems:
            _one_clean_line(problem, folder)
        errors = {str(p) for p in problems if p.is_error}
        try:
            bundle = build_source("dir", path=folder)
        except KGFormatError as error:
            assert errors, f"kg validate found no error, but loading failed: {error}"
            for problem in error.problems:
                _one_clean_line(problem, folder)
            refused = {str(p) for p in error.problems if p.is_error}
            assert refused and refused <= errors, (refused - errors, errors)
            return
        kg = bundle.kg
        # a KG without an entity loads but has nothing to train on: validate's one error (issue #40)
        nothing = {f"{folder / 'entities.jsonl'}: no entity: nothing to train on, embed or classify (pre-training "
                   "and the tasks refuse it)"} if kg.num_entities == 0 else set()
        assert errors == nothing, f"kg validate found errors, but the folder loads: {sorted(errors)}"
        # nothing dropped silently
        assert kg.num_entities == _records_of(spec, "entities.jsonl")
        assert kg.num_relations == _records_of(spec, "relations.jsonl")
        assert kg.num_triples == _records_of(spec, "triples.tsv")
        if spec["corpus.jsonl"] != "absent":
            assert bundle.corpus is not None and len(bundle.corpus) == _records_of(spec, "corpus.jsonl")
        if isinstance(spec["valid.txt"], tuple):
            skipped = bundle.report.get("split_triples_skipped", {}).get("valid", 0)
            assert len(bundle.splits["valid"]) + skipped == _records_of(spec, "valid.txt")
        # the compiled cache gives the same graph back
        cached = load_kg(folder)
        for name in ("entity_ids", "entity_names", "entity_descriptions", "relation_ids", "category_names"):
            assert list(getattr(cached, name)) == list(getattr(kg, name)), name
        assert [list(a) for a in cached.entity_aliases] == [list(a) for a in kg.entity_aliases]
        assert np.array_equal(cached.triples, kg.triples)
        assert np.array_equal(cached.entity_category, kg.entity_category)
        shutil.rmtree(folder / ".jaket-cache", ignore_errors=True)
