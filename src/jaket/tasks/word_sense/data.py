"""The data of the word-sense-disambiguation task: targets in their sentences, and their senses.

A :class:`WsdInstance` is a target word: its id, the text it is in, its ``[start, end)`` character
span, its lemma and part of speech (``n``, ``v``, ``a``, ``r``) and its gold senses (synset ids of
the sense KG, any of them right; empty when unknown). Two formats (:func:`load_wsd`):

* the **unified framework** of Raganato, Camacho-Collados and Navigli (EACL 2017): ``*.data.xml``
  (:mod:`jaket.kg.wsd_xml`; each ``<instance>`` a target, its sentence's tokens joined by spaces
  the text) with ``*.gold.key.txt`` beside it or given: lines ``instance-id sense-key [sense-key
  ...]`` of WordNet 3.0 sense keys (``refer%2:32:01::``), mapped to synsets through ``index.sense``
  (:func:`jaket.kg.sources.wordnet.sense_key_index`);
* **JSONL**, one target a line: ``{"id": "t1", "text": "He sat on the bank .", "start": 14, "end":
  18, "lemma": "bank", "pos": "n", "gold": ["bank.n.01"]}`` (``pos`` one of n, v, a, r or NOUN, VERB,
  ADJ, ADV; ``gold`` optional, each entry a WordNet sense key when it holds ``%``, else an entity id
  of the sense KG; a key file may give the gold instead).

Every problem is one ``path:line: message`` (:class:`jaket.kg.errors.KGFormatError`): malformed XML,
a key line naming an instance the data does not have, an unknown sense key, a bad JSONL field; data
with no target (an empty file, white space only, an XML file without ``<instance>``) is refused. A
target whose lemma has no candidate sense is not an error: the task counts it.

:func:`write_key_file` writes answers in the framework's key format (``instance-id sense-key``),
which its official scorer reads.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from functools import lru_cache
from pathlib import Path

from jaket.atomic import write_text
from jaket.jsonio import quote
from jaket.kg.errors import FirstLines, KGFormatError, Problem
from jaket.kg.readers import json_objects, read_text_file, refuse_empty
from jaket.kg.wsd_xml import XmlSentence, read_wsd_xml
from jaket.kg.sources.wordnet_forms import POS_CODES

#: the framework's parts of speech -> WordNet's
FRAMEWORK_POS = {"NOUN": "n", "VERB": "v", "ADJ": "a", "ADV": "r"}


@dataclass(frozen=True)
class WsdInstance:
    """A target ``[start, end)`` of ``text`` (module docstring); ``pos`` is n, v, a or r."""

    id: str
    text: str
    start: int
    end: int
    lemma: str
    pos: str
    gold: tuple[str, ...] = ()
    #: the line of the data file that holds it (0: not read from a file)
    line: int = 0

    @property
    def framework_pos(self) -> str:
        """The framework's name of the part of speech (NOUN, VERB, ADJ, ADV)."""
        return next(k for k, v in FRAMEWORK_POS.items() if v == self.pos)


def past_limit_line(instance: WsdInstance, more: int, limit: int, path=None) -> str:
    """Why a target cannot be read (:class:`jaket.senses.scorers.TargetPastLimit`), as the
    data names it: the file, the instance id and its word past the first ``limit`` tokens of its
    sentence, how many ``more`` targets lie past it, and the setting that raises the limit."""
    others = f"; {more} more target(s) lie past it too" if more else ""
    return (f"{path or 'the data'}: instance {instance.id} ({quote(instance.text[instance.start:instance.end])}) "
            f"lies past the first {limit} tokens of its sentence, all the encoder reads{others}; raise --max-length "
            f"(the setting max_length, now {limit})")


def key_path_of(data_path: Path) -> Path:
    """The framework's key file beside a data file: ``x.data.xml`` -> ``x.gold.key.txt``."""
    name = data_path.name
    stem = name[:-len(".data.xml")] if name.endswith(".data.xml") else data_path.stem
    return data_path.with_name(f"{stem}.gold.key.txt")


def load_framework(data_path: str | Path) -> list[WsdInstance]:
    """The targets of a framework ``*.data.xml`` (no gold: :func:`read_key_file` adds it)."""
    return framework_instances(read_wsd_xml(data_path))


def framework_instances(sentences: list[XmlSentence]) -> list[WsdInstance]:
    """The targets (``<instance>`` s) of the framework's sentences, in their order."""
    out = []
    for sentence in sentences:
        text = sentence.text
        for token, (start, end) in zip(sentence.tokens, sentence.spans()):
            if token.instance is not None:
                out.append(WsdInstance(token.instance, text, start, end, token.lemma.replace("_", " "),
                                       FRAMEWORK_POS[token.pos], line=token.line))
    return out


@lru_cache(maxsize=1)
def _sense_keys() -> dict[str, str]:
    from jaket.kg.sources.wordnet import sense_key_index  # inputs first: WordNet's index, read when a key is met

    return sense_key_index()


def synset_of_key(key: str) -> str | None:
    """The WordNet 3.0 synset id of a sense key (case ignored), None for an unknown key."""
    return _sense_keys().get(key.strip().lower())


@lru_cache(maxsize=1)
def _keys_of_synsets() -> dict[tuple[str, str], str]:
    """``(lemma with underscores, synset id) -> sense key`` (the reverse of :func:`synset_of_key`)."""
    return {(key.partition("%")[0], synset): key for key, synset in _sense_keys().items()}


def sense_key_of(synset_id: str, lemma: str) -> str | None:
    """The WordNet 3.0 sense key of ``lemma`` in the synset (what a key file names), None when the
    synset does not hold that lemma (a KG's own entity, or a candidate found through an alias)."""
    return _keys_of_synsets().get((lemma.strip().lower().replace(" ", "_"), synset_id))


#: a WordNet synset id as the sense KG names it (``bank.n.01``): lemma, part of speech, sense number
_SYNSET_ID = re.compile(r"^\S+\.[nvasr]\.\d{2,}$")


@lru_cache(maxsize=1)
def _wordnet_synsets() -> frozenset[str]:
    return frozenset(_sense_keys().values())


def _gold_synsets(entries: list[str], path: Path, number: int, problems: list[Problem]) -> tuple[str, ...] | None:
    """The synsets of gold entries, each once: a sense key (it holds ``%``) or a synset id
    (``bank.n.01``) must be WordNet 3.0's, else None with a problem naming the line (one rule,
    whichever way the sense is written); any other entry is a sense-KG entity id, checked against
    the sense KG when it is loaded."""
    synsets = [synset_of_key(g) if "%" in g else g.strip() for g in entries]
    unknown = [g for g, s in zip(entries, synsets) if s is None]
    unknown_ids = [g for g in synsets if g is not None and "%" not in g and _SYNSET_ID.match(g)
                   and g not in _wordnet_synsets()]
    if unknown:
        problems.append(Problem(str(path), number, f"unknown WordNet 3.0 sense key(s) "
                                                   f"{', '.join(quote(k) for k in unknown)}"))
    if unknown_ids:
        problems.append(Problem(str(path), number, f"unknown WordNet 3.0 synset id(s) "
                                                   f"{', '.join(quote(k) for k in unknown_ids)}"))
    if unknown or unknown_ids:
        return None
    return tuple(dict.fromkeys(synsets))  # type: ignore[arg-type]


def read_key_file(path: str | Path, instances: list[WsdInstance]) -> list[WsdInstance]:
    """``instances`` with the gold senses of a key file (module docstring); a line naming an unknown
    instance, an unknown sense key, or an instance given twice is a problem naming the line."""
    path = Path(path)
    known = {instance.id: i for i, instance in enumerate(instances)}
    gold: dict[int, tuple[str, ...]] = {}
    seen = FirstLines()
    problems: list[Problem] = []
    for number, line in read_text_file(path, "--gold"):
        fields = line.split()
        if not fields:
            continue
        if len(fields) < 2:
            problems.append(Problem(str(path), number, f"expected 'instance-id sense-key [sense-key ...]', got "
                                                       f"{quote(line.strip())}"))
            continue
        instance, keys = fields[0], fields[1:]
        if instance not in known:
            problems.append(Problem(str(path), number, f"instance {quote(instance)} is not in the data"))
            continue
        if seen.repeated(instance, number, path, f"instance {instance}", problems):
            continue
        if instances[known[instance]].gold:
            problems.append(Problem(str(path), number, f"instance {instance} already has its gold senses in the "
                                                       f"data file"))
            continue
        synsets = _gold_synsets(keys, path, number, problems)
        if synsets is not None:
            gold[known[instance]] = synsets
    if problems:
        raise KGFormatError(problems)
    return [replace(x, gold=gold[i]) if i in gold else x for i, x in enumerate(instances)]


def _jsonl_instance(row: dict, path: Path, number: int, problems: list[Problem]) -> WsdInstance | None:
    missing = [k for k in ("id", "text", "start", "end", "lemma", "pos") if k not in row]
    if missing:
        problems.append(Problem(str(path), number, f"missing field(s) {', '.join(missing)}"))
        return None
    text, start, end = row["text"], row["start"], row["end"]
    before = len(problems)
    if not isinstance(row["id"], str) or not row["id"].strip() or not isinstance(row["lemma"], str) \
            or not row["lemma"].strip() or not isinstance(text, str):
        problems.append(Problem(str(path), number, "id, lemma and text must be non-empty strings"))
    elif not all(isinstance(v, int) and not isinstance(v, bool) for v in (start, end)) \
            or not 0 <= start < end <= len(text):
        problems.append(Problem(str(path), number, f"span [{quote(start)}, {quote(end)}) is not a non-empty "
                                                   f"span of the text (length {len(text)})"))
    pos = POS_CODES.get(str(row["pos"]).strip().lower())
    if pos is None:
        problems.append(Problem(str(path), number, f"unknown part of speech {quote(row['pos'])} (one of n, v, "
                                                   f"a, r or NOUN, VERB, ADJ, ADV)"))
    gold = row.get("gold", [])
    if not isinstance(gold, list) or not all(isinstance(g, str) and g.strip() for g in gold):
        problems.append(Problem(str(path), number, "gold must be a list of sense keys or entity ids"))
        gold = []
    synsets = _gold_synsets(gold, path, number, problems)
    if len(problems) > before:
        return None
    return WsdInstance(row["id"].strip(), text, start, end, row["lemma"].strip(), pos, synsets or (), line=number)


#: a word that every tokenizer of the encoders jaket reads turns into at least one token
_WORD = re.compile(r"\S*\w\S*")


def refuse_past_window(instances: list[WsdInstance], max_length: int, path) -> None:
    """Refuse, naming ``path:line``, the targets that certainly lie past the first ``max_length``
    tokens of their text (more words before them than the window holds, its two special tokens
    apart), in the time the data takes to read and before any KG or model: a word yields at least
    one token, so no target is refused that the encoder could read. (A target closer to the edge,
    past it only in sub-word tokens, is found when the texts are tokenized.)"""
    problems = []
    for instance in instances:
        words = len(_WORD.findall(instance.text, 0, instance.start))
        if words >= max_length - 2:
            problems.append(Problem(str(path), instance.line or None, f"instance {instance.id} "
                                    f"({quote(instance.text[instance.start:instance.end])}) lies past the first "
                                    f"{max_length} tokens of its sentence ({words} words before it), all the encoder "
                                    f"reads; raise --max-length (the setting max_length, now {max_length})"))
    if problems:
        raise KGFormatError(problems)


def load_wsd_jsonl(path: str | Path) -> list[WsdInstance]:
    """Targets in our JSONL format (module docstring)."""
    path = Path(path)
    problems: list[Problem] = []
    out, lines = [], FirstLines()
    for number, row in json_objects(path, read_text_file(path, "--data"), problems):
        instance = _jsonl_instance(row, path, number, problems)
        if instance is None:
            continue
        if lines.repeated(instance.id, number, path, f"id {instance.id}", problems):
            continue
        out.append(instance)
    if problems:
        raise KGFormatError(problems)
    return out


def load_wsd(path: str | Path, gold: str | Path | None = None) -> list[WsdInstance]:
    """:func:`load_wsd_jsonl` for ``*.jsonl``, else :func:`load_framework`; gold senses from the key
    file ``gold`` (default for the XML: the ``*.gold.key.txt`` beside it, when it exists).

    Data with no target is refused, as every command refuses an empty input: an empty (or white
    space only) file or key file (:class:`jaket.errors.EmptyInputError`, naming ``--data`` /
    ``--gold``), and an XML file without an ``<instance>`` (:class:`KGFormatError` saying how many
    sentences it holds)."""
    path = Path(path)
    refuse_empty(path, "--data", "disambiguate")
    if path.suffix == ".jsonl":
        instances = load_wsd_jsonl(path)  # (past refuse_empty, every line is a target or a problem)
    else:
        sentences = read_wsd_xml(path)
        instances = framework_instances(sentences)
        if not instances:
            what = f"{len(sentences)} sentence{'s' if len(sentences) != 1 else ''}"
            raise KGFormatError([Problem(str(path), None, f"no <instance> in its {what}: no target to disambiguate "
                                                          "(the framework marks each target with <instance>)")])
        if gold is None and key_path_of(path).is_file():
            gold = key_path_of(path)
    if gold is None:
        return instances
    refuse_empty(Path(gold), "--gold", "score")
    return read_key_file(gold, instances)


def write_key_file(path: str | Path, instances: list[WsdInstance], answers: list[str | None]) -> Path:
    """The framework's key format: ``instance-id sense-key`` for each answered instance (the
    WordNet sense key of the instance's lemma in the chosen synset, or the entity id when there is
    none), atomically."""
    lines = []
    for instance, answer in zip(instances, answers):
        if answer is not None:
            lines.append(f"{instance.id} {sense_key_of(answer, instance.lemma) or answer}")
    return write_text(path, "".join(line + "\n" for line in lines))
