"""jaket.kg.readers: one line reader (BOM, CRLF, bad UTF-8 named by line) and one triple-file reader."""

from __future__ import annotations

import numpy as np
import pytest

from jaket.kg.errors import KGFormatError, Problem
from jaket.kg.readers import index_triples, read_lines, read_split, read_triples
from jaket.kg.toy import toy_kg


def test_lines_drop_the_bom_and_line_ends_and_name_bad_bytes(tmp_path):
    path = tmp_path / "f.txt"
    path.write_bytes(b"\xef\xbb\xbffirst\r\n\r\n  \nbad \xff here\nlast")
    problems: list[Problem] = []
    assert read_lines(path, problems) == [(1, "first"), (5, "last")]
    assert [str(p) for p in problems] == [f"{path}:4: invalid UTF-8 (byte 4 of the line)"]
    problems.clear()
    assert read_lines(path, problems, keep_blank=True) == [(1, "first"), (2, ""), (3, "  "), (5, "last")]
    path.write_bytes(b"a\n\n")  # a final line end opens no line; a blank line before it is one
    assert read_lines(path, [], keep_blank=True) == [(1, "a"), (2, "")]
    path.write_bytes(b"")
    assert read_lines(path, [], keep_blank=True) == []


def test_triples_are_read_with_every_bad_line_named(tmp_path):
    path = tmp_path / "train.txt"
    path.write_bytes(b"\xef\xbb\xbfa\tr\tb\r\n\n a \t r2\tc \nonly\ttwo\nx\t\ty\n\xfe\tr\tb\n")
    problems: list[Problem] = []
    rows = read_triples(path, problems)
    assert rows == [(1, "a", "r", "b"), (3, "a", "r2", "c")]
    assert [str(p) for p in problems] == [
        f"{path}:4: expected head<TAB>relation<TAB>tail, got 'only\\ttwo'",
        f"{path}:5: expected head<TAB>relation<TAB>tail, got 'x\\t\\ty'",
        f"{path}:6: invalid UTF-8 (byte 0 of the line)"]
    with pytest.raises(KGFormatError) as caught:  # without a list: raised, every line listed
        read_triples(path)
    assert len(caught.value.problems) == 3 and f"{path}:4:" in str(caught.value)
    with pytest.raises(KGFormatError, match="missing file"):
        read_triples(tmp_path / "absent.txt")
    kb = tmp_path / "kb.txt"
    kb.write_text("Film|directed_by|Someone\nbroken line\n", encoding="utf-8")
    problems.clear()
    assert read_triples(kb, problems, separator="|") == [(1, "Film", "directed_by", "Someone")]
    assert [p.message for p in problems] == ["expected head|relation|tail, got 'broken line'"]


def test_a_split_is_resolved_against_the_kg_and_unknown_ids_are_counted(tmp_path, caplog):
    kg, _ = toy_kg()
    chosen = kg.triples[[0, 3, 5]]
    lines = ["\t".join((kg.entity_ids[h], kg.relation_ids[r], kg.entity_ids[t])) for h, r, t in chosen]
    path = tmp_path / "valid.txt"
    path.write_text("\n".join(lines[:2] + ["nobody\tknows\tthis", lines[2]]) + "\n", encoding="utf-8")
    triples, skipped = read_split(path, kg)
    assert triples.dtype == np.int64 and np.array_equal(triples, chosen) and skipped == 1
    assert "1 triples name an entity or relation not in the KG" in caplog.text
    empty, none = index_triples([], kg)
    assert empty.shape == (0, 3) and none == 0
    path.write_text("a\tb\n", encoding="utf-8")
    with pytest.raises(KGFormatError, match=r"valid.txt:1: expected head<TAB>relation<TAB>tail"):
        read_split(path, kg)


def test_a_key_given_again_is_one_problem_naming_its_first_line_and_the_reader_keeps_the_first():
    from jaket.kg.errors import FirstLines, Problem

    seen, problems = FirstLines(), []
    assert [seen.repeated(key, line, "f.txt", f"id {key}", problems) for key, line in
            [("a", 1), ("b", 2), ("a", 4), ("a", 7)]] == [False, False, True, True]
    assert problems == [Problem("f.txt", 4, "id a given twice (first at line 1)"),
                        Problem("f.txt", 7, "id a given twice (first at line 1)")]
    assert seen == {"a": 1, "b": 2}
