"""The directory format: round trips, validation messages, the compiled cache, the CLI."""

from __future__ import annotations

import json
import os
import tempfile
import time
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from jaket.cli import main as jaket_main
from jaket.kg.corpus import Mention, MentionCorpus
from jaket.kg.io import (CACHE_DIR, AliasTable, KGFormatError, StringTable, load_corpus, load_kg, save_kg,
                         validate_kg_dir)

from .conftest import knowledge_graphs


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(knowledge_graphs(unicode_strings=True), st.data())
def test_round_trip_save_load(kg, data):
    texts = data.draw(st.lists(st.text(max_size=20), max_size=4))
    mentions = []
    for text in texts:
        spans, cursor = [], 0
        while cursor < len(text) and data.draw(st.booleans()):
            start = data.draw(st.integers(cursor, len(text) - 1))
            end = data.draw(st.integers(start + 1, len(text)))
            spans.append(Mention(start, end, data.draw(st.integers(0, kg.num_entities - 1))))
            cursor = end
        mentions.append(spans)
    corpus = MentionCorpus(texts, mentions)
    with tempfile.TemporaryDirectory() as directory:
        save_kg(kg, directory, corpus)
        assert not [p for p in validate_kg_dir(directory) if p.is_error]
        first = load_kg(directory)  # parses the files and compiles the cache
        assert (Path(directory) / CACHE_DIR / "manifest.json").is_file()
        second = load_kg(directory)  # from the cache, as lists
        assert type(second.entity_ids) is list and type(second.entity_aliases) is list
        third = load_kg(directory, lazy_strings=True)  # from the cache, decoded on access
        assert isinstance(third.entity_ids, StringTable)
        assert isinstance(third.entity_aliases, AliasTable)
        for loaded in (first, second, third):
            assert loaded == kg
            assert loaded.entity_category.dtype == np.int32 and loaded.triples.dtype == np.int32
            assert np.array_equal(loaded.adjacency.indptr, kg.adjacency.indptr)
            assert np.array_equal(loaded.adjacency.triple_id, kg.adjacency.triple_id)
        assert load_corpus(directory, second) == corpus


def test_an_id_that_begins_with_u_feff_round_trips_as_the_first_triple(tmp_path):
    """The first line of triples.tsv starting with U+FEFF (an entity id that begins with it) is
    read back as that id, not as a byte order mark before an empty one (found by the test above)."""
    from jaket.kg.graph import KnowledgeGraph

    ids = ["a", "\ufeff", "\ufeffb"]
    kg = KnowledgeGraph(entity_ids=ids, entity_names=ids, entity_descriptions=["", "", ""],
                        entity_aliases=[[], [], []], entity_category=np.full(3, -1, dtype=np.int32),
                        category_names=[], relation_ids=["r"], relation_names=["r"], relation_descriptions=[""],
                        triples=np.array([[1, 0, 0], [0, 0, 2]], dtype=np.int32))
    save_kg(kg, tmp_path)
    assert not [p for p in validate_kg_dir(tmp_path) if p.is_error]
    loaded = load_kg(tmp_path)
    assert loaded == kg and "\ufeff" in loaded.entity_ids


def _write(directory: Path, name: str, lines: list[str | bytes]) -> None:
    with open(directory / name, "wb") as handle:
        for line in lines:
            handle.write(line if isinstance(line, bytes) else line.encode("utf-8"))
            handle.write(b"\n")


def _entity(entity_id: str, description: str = "a thing", **extra) -> str:
    return json.dumps({"id": entity_id, "name": entity_id, "description": description,
                       "category": extra.get("category"), "aliases": []})


@pytest.fixture
def broken_dir(tmp_path: Path) -> Path:
    """A KG with a dangling id in triples.tsv (line 3) and a broken line in entities.jsonl (line 2)."""
    _write(tmp_path, "entities.jsonl", [_entity("dog"), '{"id": "cat", "name": "cat"', _entity("sun")])
    _write(tmp_path, "relations.jsonl", [json.dumps({"id": "near", "name": "near", "description": "x"})])
    _write(tmp_path, "triples.tsv", ["dog\tnear\tsun", "sun\tnear\tdog", "dog\tnear\tunicorn"])
    return tmp_path


def test_validate_names_both_files_and_lines(broken_dir: Path, capsys):
    problems = validate_kg_dir(broken_dir)
    shown = [str(p) for p in problems]
    assert any(s.startswith(f"{broken_dir / 'entities.jsonl'}:2: invalid JSON") for s in shown)
    assert any(s.startswith(f"{broken_dir / 'triples.tsv'}:3: unknown tail entity id 'unicorn'")
               for s in shown)
    assert len([p for p in problems if p.is_error]) == 2
    with pytest.raises(KGFormatError) as caught:
        load_kg(broken_dir)
    message = str(caught.value)
    assert "entities.jsonl:2:" in message and "triples.tsv:3:" in message
    assert not (broken_dir / CACHE_DIR).exists()
    assert jaket_main(["kg", "validate", str(broken_dir)]) == 1
    out = capsys.readouterr().out
    assert "entities.jsonl:2: invalid JSON" in out and "triples.tsv:3: unknown tail entity id" in out
    assert jaket_main(["kg", "stats", str(broken_dir)]) == 1


def test_two_objects_on_a_line_and_a_split_object_are_both_reported(tmp_path: Path):
    """Read as one JSON array these three lines parse to three objects; read line by line,
    line 1 holds two objects and lines 2-3 one object split in two, and every later entity
    keeps its own line number."""
    _write(tmp_path, "entities.jsonl", [
        _entity("dog") + ", " + _entity("cat"),  # 1 two objects
        '{"id": "sun", "name": "sun", "description": "star", "aliases": [["x"',  # 2 split ...
        '"y"]]}',  # 3 ... over two lines
        _entity("moon"),  # 4
        _entity("moon"),  # 5 duplicate of line 4
    ])
    _write(tmp_path, "relations.jsonl", [json.dumps({"id": "near", "name": "near", "description": "x"})])
    _write(tmp_path, "triples.tsv", ["moon\tnear\tmoon"])
    shown = [str(p) for p in validate_kg_dir(tmp_path) if p.is_error]
    where = f"{tmp_path / 'entities.jsonl'}"
    assert any(s.startswith(f"{where}:1: invalid JSON") for s in shown)
    assert any(s.startswith(f"{where}:2: invalid JSON") for s in shown)
    assert any(s.startswith(f"{where}:3: ") for s in shown)
    assert any(s.startswith(f"{where}:5: duplicate entity id 'moon' (first defined at line 4)") for s in shown)


def test_every_kind_of_problem_is_reported(tmp_path: Path):
    _write(tmp_path, "entities.jsonl", [
        _entity("dog"),
        _entity("dog"),  # 2 duplicate
        json.dumps({"id": "cat", "description": "x"}),  # 3 missing name
        b'{"id": "caf\xe9", "name": "x", "description": "y"}',  # 4 invalid UTF-8
        "[1, 2]",  # 5 not an object
        _entity("sun", description=""),  # 6 empty description: warning
        "",  # blank lines are fine
        _entity("moon", category=""),  # 8 empty category
    ])
    _write(tmp_path, "relations.jsonl", [
        json.dumps({"id": "near", "name": "near", "description": "close to"}),
        json.dumps({"id": "near", "name": "near", "description": "again"}),  # 2 duplicate
        json.dumps({"id": "a\tb", "name": "x", "description": "y"}),  # 3 tab in id
    ])
    _write(tmp_path, "triples.tsv", ["dog\tnear\tsun", "dog\tnear", "dog\tfar\tsun", "cat\tnear\tdog"])
    _write(tmp_path, "corpus.jsonl", [
        json.dumps({"text": "dog and sun", "mentions": [{"start": 0, "end": 3, "entity": "dog"}]}),
        json.dumps({"text": "dog", "mentions": [{"start": 0, "end": 9, "entity": "dog"}]}),
        json.dumps({"text": "hot dog", "mentions": [{"start": 0, "end": 7, "entity": "dog"},
                                                    {"start": 4, "end": 7, "entity": "sun"}]}),
        json.dumps({"text": "a yeti", "mentions": [{"start": 2, "end": 6, "entity": "yeti"}]}),
        "{broken",
    ])
    shown = [str(p) for p in validate_kg_dir(tmp_path)]
    e, r, t, c = (str(tmp_path / n) for n in ("entities.jsonl", "relations.jsonl", "triples.tsv",
                                               "corpus.jsonl"))
    expected = [
        f"{e}:2: duplicate entity id 'dog' (first defined at line 1)",
        f"{e}:3: missing field 'name'",
        f"{e}:4: invalid UTF-8",
        f"{e}:5: expected a JSON object",
        f"{e}:6: warning: entity 'sun' has an empty description",
        f"{e}:8: field 'category' must be a non-empty string or null",
        f"{r}:2: duplicate relation id 'near'",
        f"{r}:3: id 'a\\tb' contains a tab",
        f"{t}:2: expected 3 tab-separated columns",
        f"{t}:3: unknown relation id 'far'",
        f"{c}:2: mention 0: span [0, 9) is outside the text",
        f"{c}:3: mentions overlap: [0, 7) and [4, 7)",
        f"{c}:4: mention 0: unknown entity id 'yeti'",
        f"{c}:5: invalid JSON",
    ]
    for prefix in expected:
        assert any(s.startswith(prefix) for s in shown), (prefix, shown)
    # cat is defined on a broken line: its triple is not reported a second time as dangling
    assert not any(s.startswith(f"{t}:4:") for s in shown)
    assert len(shown) == len(expected)


def test_warnings_alone_do_not_fail(tmp_path: Path, capsys):
    _write(tmp_path, "entities.jsonl", [_entity("dog", description=""), _entity("cat")])
    _write(tmp_path, "relations.jsonl", [json.dumps({"id": "r", "name": "r", "description": ""})])
    _write(tmp_path, "triples.tsv", ["dog\tr\tcat"])
    problems = validate_kg_dir(tmp_path)
    assert len(problems) == 2 and not any(p.is_error for p in problems)
    assert jaket_main(["kg", "validate", str(tmp_path)]) == 0
    assert "warning: entity 'dog' has an empty description" in capsys.readouterr().out
    assert load_kg(tmp_path).num_triples == 1


def test_names_descriptions_aliases_and_spans_of_white_space_are_warned_about(tmp_path: Path):
    """The audit's case: "   " passed where "" was warned about (the fast path tested truthiness)."""
    _write(tmp_path, "entities.jsonl", [
        json.dumps({"id": "ghost", "name": "   ", "description": " \t ", "aliases": [" ", "spook", ""]}),
        _entity("dog")])
    _write(tmp_path, "relations.jsonl", [json.dumps({"id": "r", "name": "r", "description": "  "})])
    _write(tmp_path, "triples.tsv", ["dog\tr\tghost"])
    _write(tmp_path, "corpus.jsonl", [json.dumps({"text": "The dog   barks.",
                                                  "mentions": [{"start": 7, "end": 9, "entity": "ghost"},
                                                               {"start": 4, "end": 7, "entity": "dog"}]})])
    e, r, c = (str(tmp_path / n) for n in ("entities.jsonl", "relations.jsonl", "corpus.jsonl"))
    assert [str(p) for p in validate_kg_dir(tmp_path)] == [
        f"{e}:1: warning: entity 'ghost' has a blank (only white space) description",
        f"{e}:1: warning: entity 'ghost' has a blank (only white space) name (no text to link it by; its "
        f"description still embeds it)",
        f"{e}:1: warning: entity 'ghost' has 2 blank alias(es) (only white space: nothing to link)",
        f"{r}:1: warning: relation 'r' has a blank (only white space) description",
        f"{c}:1: warning: mention 0: span [7, 9) holds only white space (no token to read it by: counted as "
        f"unaligned when the corpus is tokenised)"]
    assert load_kg(tmp_path).num_entities == 2  # warnings: the KG still loads


def test_missing_files(tmp_path: Path):
    _write(tmp_path, "entities.jsonl", [_entity("dog")])
    with pytest.raises(KGFormatError, match="relations.jsonl: missing file"):
        load_kg(tmp_path)
    assert {Path(p.path).name for p in validate_kg_dir(tmp_path)} == {"relations.jsonl", "triples.tsv"}


def test_cache_is_numpy_only_and_rebuilt_on_change(tmp_path: Path, toy):
    kg, corpus = toy
    save_kg(kg, tmp_path, corpus)
    load_kg(tmp_path)
    cache = tmp_path / CACHE_DIR
    files = sorted(p.name for p in cache.iterdir())
    assert "manifest.json" in files and all(f.endswith(".npy") for f in files if f != "manifest.json")
    for name in files:
        if name.endswith(".npy"):
            np.load(cache / name, allow_pickle=False)
    manifest = json.loads((cache / "manifest.json").read_text())
    assert set(manifest["sources"]) == {"entities.jsonl", "relations.jsonl", "triples.tsv"}
    assert load_kg(tmp_path).num_triples == kg.num_triples
    # same size, same mtime, new content written in place: still caught (size is what changes here)
    with open(tmp_path / "triples.tsv", "a", encoding="utf-8") as handle:
        handle.write("dog\teats\tcat\n")
    reloaded = load_kg(tmp_path)
    assert reloaded.num_triples == kg.num_triples + 1
    assert reloaded.triples[-1].tolist() == [kg.entity_index("dog"), kg.relation_index("eats"),
                                             kg.entity_index("cat")]
    # an edit keeping the size but moving the mtime is caught as well
    text = (tmp_path / "entities.jsonl").read_text(encoding="utf-8").replace("barks", "BARKS")
    with open(tmp_path / "entities.jsonl", "w", encoding="utf-8") as handle:
        handle.write(text)
    stat = (tmp_path / "entities.jsonl").stat()
    os.utime(tmp_path / "entities.jsonl", ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000))
    assert "BARKS" in load_kg(tmp_path).entity_descriptions[kg.entity_index("dog")]
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(f"{CACHE_DIR}.")]  # no leftovers
    # a damaged cache is rebuilt, not trusted
    (cache / "triples.npy").write_bytes(b"garbage")
    assert load_kg(tmp_path).num_triples == kg.num_triples + 1


def test_stats_json(tmp_path: Path, toy, capsys):
    kg, corpus = toy
    save_kg(kg, tmp_path, corpus)
    assert jaket_main(["kg", "stats", str(tmp_path), "--json"]) == 0
    stats = json.loads(capsys.readouterr().out)
    degree = kg.degree()
    assert stats["entities"] == 40 and stats["relations"] == 5 and stats["categories"] == 4
    assert stats["triples"] == kg.num_triples
    assert stats["corpus_texts"] == len(corpus) and stats["corpus_mentions"] == corpus.num_mentions
    assert stats["degree"] == {"min": int(degree.min()), "median": float(np.median(degree)),
                               "mean": float(degree.mean()), "max": int(degree.max())}
    assert jaket_main(["kg", "stats", str(tmp_path)]) == 0
    assert "corpus mentions" in capsys.readouterr().out


def test_save_rejects_ids_the_format_cannot_hold(tmp_path: Path, toy):
    kg, _ = toy
    bad = kg.drop_triples(np.zeros(kg.num_triples, dtype=bool))
    bad.entity_ids = list(kg.entity_ids)
    bad.entity_ids[0] = "has\ttab"
    with pytest.raises(ValueError, match="tab"):
        save_kg(bad, tmp_path)


def test_string_table_behaves_like_a_list():
    values = ["", "dog", "caf\u00e9", "\u2028line separator", "x" * 10]
    table = StringTable.from_strings(values)
    assert len(table) == 5 and list(table) == values and table == values
    assert table[-1] == values[-1] and table[1:3] == values[1:3]
    with pytest.raises(IndexError):
        table[5]


def test_load_corpus_reports_bad_lines(tmp_path: Path, toy):
    kg, corpus = toy
    save_kg(kg, tmp_path, corpus)
    with open(tmp_path / "corpus.jsonl", "a", encoding="utf-8") as handle:
        handle.write(json.dumps({"text": "a yeti", "mentions": [{"start": 2, "end": 6,
                                                                   "entity": "yeti"}]}) + "\n")
    with pytest.raises(KGFormatError) as caught:
        load_corpus(tmp_path, kg)
    assert str(caught.value) == (f"{tmp_path / 'corpus.jsonl'}:{len(corpus) + 1}: "
                                 f"mention 0: unknown entity id 'yeti'")
    single = tmp_path / "other.jsonl"
    single.write_text(json.dumps({"text": "dog", "mentions": [{"start": 0, "end": 3,
                                                               "entity": "dog"}]}) + "\n")
    assert load_corpus(single, kg).mentions == [[Mention(0, 3, kg.entity_index("dog"))]]


def test_byte_order_mark_with_a_bad_later_line(tmp_path: Path):
    """A UTF-8 BOM is skipped even when another line is undecodable (only that line is reported)."""
    _write(tmp_path, "entities.jsonl", [b"\xef\xbb\xbf" + _entity("dog").encode(),
                                        b'{"id": "caf\xe9", "name": "x", "description": "y"}'])
    _write(tmp_path, "relations.jsonl", [json.dumps({"id": "r", "name": "r", "description": "r"})])
    _write(tmp_path, "triples.tsv", ["dog\tr\tdog"])
    shown = [str(p) for p in validate_kg_dir(tmp_path)]
    assert shown == [f"{tmp_path / 'entities.jsonl'}:2: invalid UTF-8 (byte 11 of the line)"]


def test_fresh_cache_is_used_without_parsing_or_pickle(tmp_path: Path, toy, monkeypatch):
    import jaket.kg.io as kg_io

    kg, _ = toy
    save_kg(kg, tmp_path)
    load_kg(tmp_path)  # compiles the cache
    calls = []
    real_load = np.load

    def spy_load(*args, **kwargs):
        calls.append(kwargs.get("allow_pickle", "default"))
        return real_load(*args, **kwargs)

    def no_parsing(*args, **kwargs):
        raise AssertionError("the sources were parsed although the cache is fresh")

    monkeypatch.setattr(kg_io, "_parse_dir", no_parsing)
    monkeypatch.setattr(kg_io.np, "load", spy_load)
    assert load_kg(tmp_path) == kg
    assert calls and set(calls) == {False}
    # a changed source makes the loader parse again
    with open(tmp_path / "triples.tsv", "a", encoding="utf-8") as handle:
        handle.write("dog\teats\tcat\n")
    with pytest.raises(AssertionError, match="parsed"):
        load_kg(tmp_path)


def test_a_cache_of_another_format_is_rebuilt_not_read(tmp_path: Path, toy, monkeypatch):
    """A cache compiled by an older jaket (another CACHE_FORMAT) is parsed over and replaced."""
    import jaket.kg.io as kg_io

    kg, _ = toy
    save_kg(kg, tmp_path)
    load_kg(tmp_path)
    manifest_path = tmp_path / CACHE_DIR / "manifest.json"
    manifest = json.loads(manifest_path.read_text())
    assert manifest["format"] == kg_io.CACHE_FORMAT
    manifest["format"] = kg_io.CACHE_FORMAT - 1
    manifest_path.write_text(json.dumps(manifest))
    parsed = []
    real_parse = kg_io._parse_dir

    def counting_parse(*args, **kwargs):
        parsed.append(args[0])
        return real_parse(*args, **kwargs)

    monkeypatch.setattr(kg_io, "_parse_dir", counting_parse)
    assert load_kg(tmp_path) == kg and parsed == [tmp_path]
    assert json.loads(manifest_path.read_text())["format"] == kg_io.CACHE_FORMAT
    assert load_kg(tmp_path) == kg and parsed == [tmp_path]  # the rebuilt cache is read again


@pytest.mark.parametrize("built_long_after", [False, True])
def test_cache_notices_an_in_place_same_size_edit_that_keeps_the_mtime(tmp_path: Path, toy, capsys,
                                                                        built_long_after):
    """`stats` must not print the old KG while `validate` reads the new file: an edit in place
    (same inode), of the same size, with the mtime set back, is caught through the ctime, or,
    for a file changed just before its cache was built (same clock tick possible), its hash."""
    kg, corpus = toy
    save_kg(kg, tmp_path, corpus)
    load_kg(tmp_path)
    manifest_path = tmp_path / CACHE_DIR / "manifest.json"
    if built_long_after:  # as if the cache had been built long after the files were written:
        manifest = json.loads(manifest_path.read_text())  # only the stat fields are compared
        manifest["sources_read_ns"] += 3600 * 10**9
        manifest_path.write_text(json.dumps(manifest))
        time.sleep(0.05)  # ... so the edit below falls in a later tick of the file-system clock
    path = tmp_path / "entities.jsonl"
    before = path.stat()
    text = path.read_text(encoding="utf-8").replace("barks", "BARKS")
    with open(path, "r+", encoding="utf-8") as handle:  # in place: the same inode
        handle.write(text)
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    after = path.stat()
    assert (after.st_size, after.st_mtime_ns, after.st_ino) == (before.st_size, before.st_mtime_ns,
                                                                 before.st_ino)
    assert "BARKS" in load_kg(tmp_path).entity_descriptions[kg.entity_index("dog")]
    assert jaket_main(["kg", "stats", str(tmp_path), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["entities"] == 40
    # and a cache that was fresh stays trusted (no rebuild): its manifest is not rewritten
    stamp = manifest_path.stat().st_mtime_ns
    load_kg(tmp_path)
    assert manifest_path.stat().st_mtime_ns == stamp


def test_the_written_lines_are_json_dumps_and_tab_joins_to_the_byte(tmp_path, monkeypatch):
    """save_kg spells each entity line out and joins triples with Arrow (for speed, issue 65): the
    bytes are those of ``json.dumps(record, ensure_ascii=False)`` and of the pure-Python join."""
    import builtins
    import json

    import numpy as np

    from jaket.kg.graph import KnowledgeGraph
    from jaket.kg.io import save_kg

    ids = ["a", "b\u00e9", 'c"q', "d\\x"]
    kg = KnowledgeGraph(entity_ids=ids, entity_names=["A", "n\u00e9 x", "C", "D"],
                        entity_descriptions=["", "d\u2028", "x\x01", "\u00e9 \U0001f600"],
                        entity_aliases=[[], ["x", 'y"'], [], ["\u00e9"]], entity_category=np.array([0, -1, 1, 0], np.int32),
                        category_names=['k"2', "k1"], relation_ids=["r1", "r\u00e92"], relation_names=["R1", "R2"],
                        relation_descriptions=["", ""], triples=np.array([[0, 0, 1], [1, 1, 2], [3, 0, 0]], np.int32))
    save_kg(kg, tmp_path / "fast")
    lines = (tmp_path / "fast" / "entities.jsonl").read_text(encoding="utf-8").split("\n")
    assert lines[-1] == ""
    for i, line in enumerate(lines[:-1]):
        c = int(kg.entity_category[i])
        assert line == json.dumps({"id": ids[i], "name": kg.entity_names[i], "description": kg.entity_descriptions[i],
                                   "category": kg.category_names[c] if c >= 0 else None,
                                   "aliases": list(kg.entity_aliases[i])}, ensure_ascii=False)
    real_import = builtins.__import__

    def no_pyarrow(name, *args, **kwargs):
        if name.startswith("pyarrow"):
            raise ImportError(name)
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_pyarrow)
    save_kg(kg, tmp_path / "plain")
    assert (tmp_path / "fast" / "triples.tsv").read_bytes() == (tmp_path / "plain" / "triples.tsv").read_bytes() \
        == 'a\tr1\tb\u00e9\nb\u00e9\tr\u00e92\tc"q\nd\\x\tr1\ta\n'.encode("utf-8")
