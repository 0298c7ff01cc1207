"""Bounded JSON (jaket.jsonio): deep nesting, lone surrogates and oversized values are one clean
line naming the file and line in every reader (KG files, texts, FewRel files, model and task
folders), never a RecursionError or a tokenizer's TypeError; long values are cut in messages."""

import json

import pytest

from jaket import jsonio
from jaket.cli import main
from jaket.jsonio import JSONInputError, decode, quote

DEEP = "[" * 5000 + "]" * 5000  # past the interpreter's recursion limit
NESTED = '{"a": ' * 150 + "1" + "}" * 150  # decodes, but deeper than MAX_DEPTH
SURROGATE = '{"text": "a lone \\ud800 here"}'


def test_decode_refuses_what_no_reader_can_use(monkeypatch):
    assert decode('{"a": [1, "b", {"c": null}]}') == {"a": [1, "b", {"c": None}]}
    for text in (DEEP, NESTED):
        with pytest.raises(JSONInputError, match=f"nested deeper than {jsonio.MAX_DEPTH} levels"):
            decode(text)
    with pytest.raises(JSONInputError, match=r"lone surrogate \\ud800 in 'a lone \\ud800 here'"):
        decode(SURROGATE)
    with pytest.raises(JSONInputError, match=r"invalid JSON: Expecting value \(column 7\)") as error:
        decode('{"a": }')
    assert error.value.line == 1
    with pytest.raises(JSONInputError, match="invalid JSON: an integer of more than 4,300 digits"):
        decode('{"start": ' + "9" * 5000 + "}")  # plain json raises a bare ValueError (int() limit)
    with pytest.raises(JSONInputError, match="the key 'a' appears twice"):  # not mistaken for that limit
        decode('{"a": 1, "a": 2}')
    monkeypatch.setattr(jsonio, "MAX_STRING", 100)
    with pytest.raises(JSONInputError, match=r"a string of 1,000 characters, more than the 100 allowed \(it starts 'xxx"):
        decode(json.dumps({"id": "x" * 1000}))
    monkeypatch.setattr(jsonio, "MAX_CHARS", 50)
    with pytest.raises(JSONInputError, match="more than the 50 a JSON text may have"):
        decode(json.dumps({"id": "y" * 60}))


def test_quote_cuts_a_long_value():
    assert quote("Q42") == "'Q42'"
    cut = quote("z" * 10**6)
    assert len(cut) < 120 and cut.endswith("... (1,000,000 characters)")


@pytest.fixture
def kg_dir(tmp_path):
    from jaket.kg.io import save_kg
    from jaket.kg.toy import toy_kg

    kg, corpus = toy_kg()
    save_kg(kg, tmp_path / "kg", corpus=corpus)
    return tmp_path / "kg"


def _err(capsys):
    captured = capsys.readouterr()
    said = captured.out + captured.err
    assert "Traceback" not in said and "RecursionError" not in said
    return said


@pytest.mark.parametrize("line,expected", [(DEEP, "nested deeper than"), (SURROGATE, "lone surrogate")])
def test_a_kg_file_with_such_a_line_is_named_by_validate_and_stats(kg_dir, capsys, line, expected):
    with open(kg_dir / "entities.jsonl", "a", encoding="utf-8") as handle:
        handle.write(line + "\n")
    number = len((kg_dir / "entities.jsonl").read_text().splitlines())
    for command in (["kg", "validate", str(kg_dir)], ["kg", "stats", str(kg_dir)]):
        assert main(command) == 1
        assert f"entities.jsonl:{number}: " in (err := _err(capsys)) and expected in err


def test_texts_fewrel_model_and_task_files(kg_dir, tiny_bert_dir, tmp_path, capsys):
    from jaket.model.config import ModelFolderError
    from jaket.model.jaket import JaketModel
    from jaket.tasks.relation_classification.data import FewRelFormatError, load_fewrel
    from jaket.tasks.finetuned import FinetunedFormatError, read_task_config

    texts = tmp_path / "texts.jsonl"
    texts.write_text('{"text": "fine"}\n' + SURROGATE + "\n" + '{"text": ' + DEEP + "}\n", encoding="utf-8")
    assert main(["link", "--kg", str(kg_dir), "--texts", str(texts), "--out", str(tmp_path / "linked.jsonl")]) == 1
    err = _err(capsys)
    assert f"{texts}:2: invalid Unicode: a lone surrogate" in err and f"{texts}:3: invalid JSON: nested" in err
    fewrel = tmp_path / "fewrel.json"
    fewrel.write_text('{"P1": [{"tokens": ["a", "\\udfff"], "h": ["a", "Q1", [[0]]], "t": ["b", "Q2", [[1]]]}]}')
    with pytest.raises(FewRelFormatError, match=f"{fewrel}:1: invalid Unicode: a lone surrogate \\\\udfff"):
        load_fewrel(fewrel)
    folder = tmp_path / "model"
    folder.mkdir()
    (folder / "config.json").write_text(NESTED)
    with pytest.raises(ModelFolderError, match=f"{folder / 'config.json'}:1: invalid JSON: nested deeper"):
        JaketModel.from_pretrained(folder)
    (folder / "task.json").write_text(DEEP)
    with pytest.raises(FinetunedFormatError, match="task.json:1: invalid JSON: nested deeper"):
        read_task_config(folder)


def test_a_key_given_twice_is_refused_not_silently_overwritten(kg_dir, capsys):
    with pytest.raises(JSONInputError, match="the key 'name' appears twice in one object"):
        decode('{"id": "a", "name": "first", "name": "second"}')
    with open(kg_dir / "entities.jsonl", "a", encoding="utf-8") as handle:
        handle.write('{"id": "dup", "name": "x", "description": "y", "description": "z"}\n')
    assert main(["kg", "validate", str(kg_dir)]) == 1
    assert "the key 'description' appears twice in one object" in _err(capsys)


def test_validate_names_what_loads_but_means_little(kg_dir, capsys):
    """Issue #27: a NUL in an id is an error; an empty name, no triple, and a corpus without any
    mention are warnings (the KG loads: `kg validate` agrees with the loader)."""
    from jaket.kg.io import load_kg

    lines = (kg_dir / "entities.jsonl").read_text().splitlines()
    first = json.loads(lines[0])
    (kg_dir / "entities.jsonl").write_text("\n".join(
        [json.dumps({**first, "name": ""})] + lines[1:]) + "\n")
    (kg_dir / "triples.tsv").write_text("")
    rows = [json.loads(line) for line in (kg_dir / "corpus.jsonl").read_text().splitlines()]
    (kg_dir / "corpus.jsonl").write_text("".join(json.dumps({"text": r["text"], "mentions": []}) + "\n" for r in rows))
    assert main(["kg", "validate", str(kg_dir)]) == 0
    said = _err(capsys)
    assert f"entities.jsonl:1: warning: entity {first['id']!r} has an empty name" in said
    assert "triples.tsv: warning: no triple" in said and "corpus.jsonl: warning: no mention in any text" in said
    assert load_kg(kg_dir).entity_names[0] == ""
    (kg_dir / "entities.jsonl").write_text("\n".join([json.dumps({**first, "id": "a\u0000b"})] + lines[1:]) + "\n")
    assert main(["kg", "validate", str(kg_dir)]) == 1
    assert "contains a tab, a line break or a NUL" in _err(capsys)


def test_a_huge_identifier_is_cut_in_the_message(kg_dir, capsys):
    """Issue #27: a 1 MB id in triples.tsv is quoted as its first 80 characters and its length."""
    first = (kg_dir / "triples.tsv").read_text().splitlines()[0].split("\t")
    with open(kg_dir / "triples.tsv", "a", encoding="utf-8") as handle:
        handle.write(f"{first[0]}\t{first[1]}\t{'x' * 1_000_000}\n")
    assert main(["kg", "validate", str(kg_dir)]) == 1
    line = next(l for l in _err(capsys).splitlines() if "unknown tail" in l or "unknown" in l)
    assert len(line) < 400 and "(1,000,000 characters)" in line


def test_a_utf8_byte_order_mark_is_read_as_the_jsonl_and_yaml_readers_read_it(tmp_path):
    """Notepad and PowerShell start a UTF-8 file with a byte order mark: a whole JSON document
    starting with one reads as the same document, and a byte that is not UTF-8 after it is still
    named by its place in the file."""
    document = {"P1": [{"tokens": ["a", "é"]}], "n": 1}
    path = tmp_path / "bom.json"
    path.write_bytes(b"\xef\xbb\xbf" + json.dumps(document, ensure_ascii=False).encode("utf-8"))
    assert jsonio.read_json(path) == document
    path.write_bytes(b"\xef\xbb\xbf{\n\"a\": \"\xff\"}")
    with pytest.raises(JSONInputError, match=r"^not UTF-8 \(byte 11\)$") as caught:
        jsonio.read_json(path)
    assert caught.value.line == 2
    path.write_bytes(b"\xef\xbb\xbf\xef\xbb\xbf{}")  # a second mark is not part of any JSON document
    with pytest.raises(JSONInputError, match="invalid JSON"):
        jsonio.read_json(path)
