"""Every reader of a task's input files, fuzzed (issue #27): FewRel files and query sentences (the
relation-classification support and query sets), MetaQA's kb.txt and question files, WiC's
``.data.txt`` / ``.gold.txt`` and the JSONL pairs, link-prediction queries and evaluation triples,
entity split and entity list files (``--train`` / ``--dev`` / ``--test`` / ``--entities``) and the
texts of ``jaket link`` / ``jaket embed``.

Hypothesis writes a valid file, then breaks it: a line replaced by invalid UTF-8, a lone surrogate
(escaped in JSON or as raw bytes), a NUL, a 1 MB identifier, deep nesting, a value of the wrong
type, a field too many or too few; or random bytes, or an empty file. The only outcomes allowed are
the parsed input, or the reader's own error type whose every line is ``path:line: message`` (or
``path: message``) with any quoted value cut short: never a traceback, never a megabyte message.
"""

from __future__ import annotations

import json
import os
import re
import tempfile
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from jaket.kg.errors import KGFormatError
from jaket.kg.graph import KnowledgeGraph
from jaket.kg.linking import read_texts
from jaket.kg.readers import read_split
from jaket.tasks.kgqa.data import MetaQAFormatError, read_kb
from jaket.tasks.relation_classification.data import FewRelFormatError, load_fewrel, read_query_lines
from jaket.tasks.link_prediction.finetuned import QueryFormatError, read_queries
from jaket.tasks.kgqa.data import entity_lookup, read_questions
from jaket.tasks.splits import read_entity_list, read_splits
from jaket.tasks.word_in_context.data import load_pairs_jsonl, load_wic

pytestmark = pytest.mark.filterwarnings("ignore")

#: a message line is at most this much longer than its file's path: a quoted value is cut to 80
#: characters (each escaped to at most 10 by ``repr``), never the whole 1 MB identifier
LONGEST_MESSAGE = 1200
HUGE = "q" * 1_000_000
SURROGATE = "\ud800"


def fuzz(examples: int):
    scale = int(os.environ.get("JAKET_FUZZ_SCALE", "1"))
    return settings(max_examples=examples * scale, deadline=None, database=None, derandomize=True,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                           HealthCheck.function_scoped_fixture])


# ------------------------------------------------------------------------------- the KG the files name
ENTITIES = ["Q1", "Q2", "city one", "Zürich"]
RELATIONS = ["P1", "P2"]


@pytest.fixture(scope="module")
def kg() -> KnowledgeGraph:
    return KnowledgeGraph(entity_ids=ENTITIES, entity_names=["one", "two", "city", "Zürich"],
                          entity_descriptions=["d"] * 4, entity_aliases=[[] for _ in ENTITIES],
                          entity_category=np.array([0, 1, 0, -1]), category_names=["a", "b"],
                          relation_ids=RELATIONS, relation_names=RELATIONS, relation_descriptions=["r", "s"],
                          triples=np.array([[0, 0, 1], [1, 1, 2]]))


# ------------------------------------------------------------------------------- breaking a file
#: what a field may become: the wrong type, empty, white space, NUL, a lone surrogate, 1 MB, deep
ODD = [None, True, 3, -1, 2.5, 10**30, 10**4000, [], {}, ["x"], "", " ", "a\0b", SURROGATE, HUGE, [[[[[[]]]]]],
       "?", "T"]
#: whole lines: invalid UTF-8, a lone surrogate as raw bytes and escaped, NUL, deep nesting, JSON
#: of the wrong shape, a 1 MB line
LINES = [b"\xff\xfe", b"\xed\xa0\x80", b"a\xc3", b"x\x00y", b'{"text": "\\ud800"}', b'"\\udfff"',
         b"[" * 3000 + b"]" * 3000, b"null", b"[]", b"{}", b"{", b"\xef\xbb\xbf", HUGE.encode(),
         b"\t".join([HUGE.encode()] * 3), ("[" + HUGE + "]").encode()]


def _mutate(draw, value):
    """``value`` (JSON) with one part, chosen at random along a path from the root, replaced."""
    if isinstance(value, dict) and value and draw(st.integers(0, 3)):
        key = draw(st.sampled_from(sorted(value)))
        if draw(st.integers(0, 5)) == 0:
            return {**{k: v for k, v in value.items() if k != key}, draw(st.sampled_from(["", HUGE, "x"])): value[key]}
        return {**value, key: _mutate(draw, value[key])}
    if isinstance(value, list) and value and draw(st.integers(0, 3)):
        at = draw(st.integers(0, len(value) - 1))
        return value[:at] + [_mutate(draw, value[at])] + value[at + 1:]
    return draw(st.sampled_from(ODD))


def _text_line(draw, line: str, separator: str) -> str:
    """``line`` with one field (between ``separator``s) replaced, removed or doubled."""
    fields = line.split(separator)
    at = draw(st.integers(0, len(fields) - 1))
    kind = draw(st.sampled_from(["replace", "replace", "remove", "double"]))
    if kind == "remove":
        del fields[at]
    elif kind == "double":
        fields.insert(at, fields[at])
    else:
        fields[at] = draw(st.sampled_from([s for s in ODD if isinstance(s, str)] + ["[" + HUGE + "]", "[]"]))
    return separator.join(fields)


@st.composite
def broken(draw, valid: list, separator: str | None = None) -> bytes:
    """A file of the ``valid`` lines (JSON values, or text lines split by ``separator``), broken in
    one to three places, or random bytes, or nothing."""
    kind = draw(st.sampled_from(["lines"] * 8 + ["valid", "bytes", "empty"]))
    if kind == "bytes":
        return draw(st.binary(max_size=300))
    if kind == "empty":
        return draw(st.sampled_from([b"", b"\n\n", b"  \n"]))
    lines: list = list(valid)
    for _ in range(draw(st.integers(1, 3)) if kind == "lines" else 0):
        at = draw(st.integers(0, max(0, len(lines) - 1)))
        how = draw(st.sampled_from(["line", "value", "value", "delete", "duplicate"]))
        if how == "line" or not lines:
            lines.insert(at, draw(st.sampled_from(LINES)))
        elif how == "delete":
            del lines[at]
        elif how == "duplicate":
            lines.insert(at, lines[at])
        elif isinstance(lines[at], str) and separator is not None:
            lines[at] = _text_line(draw, lines[at], separator)
        elif not isinstance(lines[at], (str, bytes)):
            lines[at] = _mutate(draw, lines[at])
    out = [line if isinstance(line, bytes) else
           (line if isinstance(line, str) else json.dumps(line, ensure_ascii=draw(st.booleans())))
           .encode("utf-8", "surrogatepass") for line in lines]
    return draw(st.sampled_from([b"\n", b"\r\n"])).join(out) + draw(st.sampled_from([b"", b"\n"]))


def _read(reader, errors: type[Exception] | tuple, paths: tuple[Path, ...], *args, **kwargs):
    """``reader(*args, **kwargs)``, or None when it raised one of ``errors`` whose every line names
    one of ``paths`` first and is short. Any other exception fails the test (its message cut, so
    that a 1 MB value does not flood the report)."""
    try:
        return reader(*args, **kwargs)
    except errors as caught:
        error = caught
    except Exception as caught:  # noqa: BLE001 - the point: nothing else may escape
        raise AssertionError(f"{type(caught).__name__}: {str(caught)[:300]}") from None
    said = str(error)
    assert not isinstance(error, UnicodeError), f"{type(error).__name__}: {said[:300]}"
    assert said.strip(), repr(error)
    for line in said.splitlines():
        path = next((str(p) for p in paths if line.startswith(f"{p}:")), None)
        assert path is not None, f"a line naming no file: {line[:300]!r}"
        assert len(line) - len(path) <= LONGEST_MESSAGE, f"{len(line):,} characters: {line[:300]}"
    return None


def _scratch(**files: bytes) -> tuple[tempfile.TemporaryDirectory, dict[str, Path]]:
    holder = tempfile.TemporaryDirectory(prefix="jaket-inputs-")
    paths = {}
    for name, data in files.items():
        paths[name] = Path(holder.name) / name.replace("_", ".")
        paths[name].write_bytes(data)
    return holder, paths


# ------------------------------------------------------------------------------- FewRel
def _instance(tokens=("Alan", "met", "Bob", "in", "Paris"), h=0, t=2) -> dict:
    return {"tokens": list(tokens), "h": [tokens[h], "Q1", [[h]]], "t": [tokens[t], "Q2", [[t]]]}


FEWREL = {"P1": [_instance(), _instance(h=4, t=0)], "P2": [_instance(h=2, t=4)]}


@fuzz(120)
@given(data=st.data())
def test_fewrel_file_and_its_relation_names(data):
    """The support set of relation classification (and its training data): a FewRel JSON file and
    the pid2name.json beside it."""
    holder, paths = _scratch(support_json=data.draw(broken([FEWREL])),
                             pid2name_json=data.draw(broken([{"P1": ["one", "the first"], "P2": ["two"]}])))
    with holder:
        loaded = _read(load_fewrel, FewRelFormatError, tuple(paths.values()), paths["support_json"])
        if loaded is not None:
            assert loaded.instances and all(isinstance(t, str) for items in loaded.instances.values()
                                            for i in items for t in (*i.tokens, i.head_name, i.tail_id))
            assert all(isinstance(n, str) for n in (*loaded.relation_names.values(),
                                                    *loaded.relation_descriptions.values()))


@fuzz(100)
@given(data=st.data())
def test_fewrel_query_sentences(data):
    holder, paths = _scratch(queries_jsonl=data.draw(broken([_instance(), {**_instance(h=4, t=0), "relation": "P1"}])))
    with holder:
        rows = _read(read_query_lines, FewRelFormatError, (paths["queries_jsonl"],), paths["queries_jsonl"])
        assert rows is None or all(line >= 1 and isinstance(query.relation, str) for line, query in rows)


# ------------------------------------------------------------------------------- MetaQA
@fuzz(100)
@given(data=st.data(), strict=st.booleans())
def test_metaqa_questions(data, strict):
    questions = ["who is [one]\tQ2|two", "what is [city] near\tZürich", "where is [Q2]\ttwo"]
    holder, paths = _scratch(qa_txt=data.draw(broken(questions, data.draw(st.sampled_from(["\t", "|", "["])))))
    with holder:
        read = _read(read_questions, MetaQAFormatError, (paths["qa_txt"],), paths["qa_txt"],
                     entity_lookup(["one", "two", "city", "Zürich"], ENTITIES), strict=strict, missing=[])
        assert read is None or (read[1] >= 0 and all(q.line >= 1 for q in read[0]))


@fuzz(60)
@given(data=st.data())
def test_metaqa_kb(data):
    holder, paths = _scratch(kb_txt=data.draw(broken(["Kismet|directed_by|W D", "Kismet|release_year|1944"], "|")))
    with holder:
        kb = _read(read_kb, MetaQAFormatError, (paths["kb_txt"],), paths["kb_txt"])
        assert kb is None or len(kb.triples) >= 1


# ------------------------------------------------------------------------------- WiC
@fuzz(100)
@given(data=st.data())
def test_wic_data_and_gold(data):
    pairs = ["bank\tN\t1-0\tthe bank of the river\tbank account", "run\tV\t0-1\trun fast\tthey run it"]
    holder, paths = _scratch(dev_data_txt=data.draw(broken(pairs, "\t")),
                             dev_gold_txt=data.draw(broken(["T", "F"], "\t")))
    with holder:
        pairs = _read(load_wic, KGFormatError, tuple(paths.values()), paths["dev_data_txt"])
        assert pairs is None or all(p.text1[p.start1:p.end1] and p.label is not None for p in pairs)


@fuzz(100)
@given(data=st.data())
def test_wic_jsonl_pairs(data):
    rows = [{"lemma": "bank", "pos": "n", "text1": "the bank", "start1": 4, "end1": 8, "text2": "bank it",
             "start2": 0, "end2": 4, "label": True},
            {"lemma": "run", "text1": "run", "start1": 0, "end1": 3, "text2": "a run", "start2": 2, "end2": 5}]
    holder, paths = _scratch(pairs_jsonl=data.draw(broken(rows)))
    with holder:
        pairs = _read(load_pairs_jsonl, KGFormatError, (paths["pairs_jsonl"],), paths["pairs_jsonl"])
        assert pairs is None or all(p.text1[p.start1:p.end1] and p.text2[p.start2:p.end2] for p in pairs)


# ------------------------------------------------------------------------------- link prediction
@fuzz(100)
@given(data=st.data())
def test_link_prediction_queries_and_evaluation_triples(kg, data):
    queries = ["Q1\tP1\t?", "?\tP2\tcity one", "# a comment", "Zürich\tP1\t?"]
    holder, paths = _scratch(queries_tsv=data.draw(broken(queries, "\t")),
                             eval_txt=data.draw(broken(["Q1\tP1\tQ2", "Q2\tP2\tcity one", "Q9\tP1\tQ1"], "\t")))
    with holder:
        queries = _read(read_queries, QueryFormatError, (paths["queries_tsv"],), paths["queries_tsv"], kg)
        assert queries is None or all(q.line >= 1 and (q.head is None) != (q.tail is None) for q in queries)
        split = _read(read_split, KGFormatError, (paths["eval_txt"],), paths["eval_txt"], kg)
        assert split is None or (split[1] >= 0 and split[0].shape[1] == 3)


# ------------------------------------------------------------------------------- entity files
@fuzz(100)
@given(data=st.data())
def test_entity_split_and_list_files(kg, data):
    form = data.draw(st.sampled_from([["Q1", "# comment"], ["Q1\tlabel", "city one\tother"]]))
    holder, paths = _scratch(train_txt=data.draw(broken(form, "\t")), dev_txt=data.draw(broken(["Q2"], "\t")),
                             entities_txt=data.draw(broken(["Q1", "Zürich"], "\t")))
    with holder:
        splits = _read(read_splits, KGFormatError, (paths["train_txt"], paths["dev_txt"]), kg,
                       paths["train_txt"], paths["dev_txt"])
        assert splits is None or (len(splits.train) and len(splits.dev))
        listed = _read(read_entity_list, KGFormatError, (paths["entities_txt"],), paths["entities_txt"], kg)
        assert listed is None or listed.ndim == 1


# ------------------------------------------------------------------------------- texts to link or embed
@fuzz(100)
@given(data=st.data(), jsonl=st.booleans())
def test_texts_for_link_and_embed(data, jsonl):
    valid = [{"text": "one met two"}, {"text": "Zürich", "id": 3}] if jsonl else ["one met two", "", "Zürich"]
    holder, paths = _scratch(**{"texts_jsonl" if jsonl else "texts_txt": data.draw(broken(valid))})
    path = next(iter(paths.values()))
    with holder:
        texts = _read(read_texts, KGFormatError, (path,), path)
        assert texts is None or all(isinstance(text, str) and "\0" not in text for text in texts.texts)


# ------------------------------------------------------------------------------- a 1 MB identifier
def _megabyte_cases(kg: KnowledgeGraph, folder: Path) -> dict:
    """Flag -> ``(file, read it)``: a file naming a 1 MB identifier where each message quotes one."""
    def write(name: str, text: str) -> Path:
        (folder / name).write_text(text, encoding="utf-8")
        return folder / name

    lookup = entity_lookup(kg.entity_names, kg.entity_ids)
    train, dev = write("train.txt", f"Q1\n{HUGE}\n"), write("dev.txt", "Q2\n")
    entities = write("entities.txt", f"{HUGE}\n")
    queries = write("queries.tsv", f"Q1\t{HUGE}\t?\n")
    questions = write("questions.txt", f"who is [{HUGE}]\n")
    support = write("support.json", json.dumps({HUGE: [{"tokens": ["a"], "h": ["a", "Q1", [[0]]], "t": 5}]}))
    pairs = write("train.data.txt", f"bank\t{HUGE}\t0-0\tbank\tbank\n")
    kb = write("kb.txt", f"{HUGE}\n")
    evaluation = write("valid.txt", f"Q1\tP1\t{HUGE}\tQ2\n")
    return {"--train (entity classification)": (train, lambda: read_splits(kg, train, dev)),
            "--entities": (entities, lambda: read_entity_list(entities, kg)),
            "--queries (link prediction)": (queries, lambda: read_queries(queries, kg)),
            "--questions": (questions, lambda: read_questions(questions, lookup, strict=True)),
            "--support": (support, lambda: load_fewrel(support)),
            "--train (word in context)": (pairs, lambda: load_wic(pairs)),
            "kb.txt (MetaQA)": (kb, lambda: read_kb(kb)),
            "--eval (link prediction)": (evaluation, lambda: read_split(evaluation, kg))}


@pytest.mark.parametrize("flag", ["--train (entity classification)", "--entities", "--queries (link prediction)",
                                  "--questions", "--support", "--train (word in context)", "kb.txt (MetaQA)",
                                  "--eval (link prediction)"])
def test_a_megabyte_identifier_is_cut_in_the_message(kg, tmp_path, flag):
    """Issue #27: the value a message quotes is its first 80 characters and its length, as in KG
    messages (jaket.jsonio.quote), never the whole identifier."""
    path, read = _megabyte_cases(kg, tmp_path)[flag]
    with pytest.raises((KGFormatError, QueryFormatError, MetaQAFormatError, FewRelFormatError)) as caught:
        read()
    [line] = [line for line in str(caught.value).splitlines() if re.search(r"\(1,000,0\d\d characters\)", line)]
    assert line.startswith(f"{path}:") and len(line) < len(str(path)) + 300 and "q" * 40 in line, line[:400]


def test_a_missing_gold_answer_is_quoted_short(tmp_path):
    """A 1 MB gold answer that is not in the KG is named in the warning, cut."""
    from jaket.tasks.kgqa.data import missing_answer_report

    path = tmp_path / "questions.txt"
    path.write_text(f"who is [one]\t{HUGE}\n", encoding="utf-8")
    missing: list = []
    read_questions(path, entity_lookup(["one"]), strict=True, missing=missing)
    [example] = missing_answer_report(missing)["examples"]
    assert example.startswith(f"{path}:1: 'qqq") and example.endswith("(1,000,000 characters)") and len(example) < 200
