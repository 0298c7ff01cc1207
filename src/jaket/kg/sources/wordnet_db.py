"""WordNet 3.0's database files, parsed (:mod:`jaket.kg.sources.wordnet` builds the KG from them).

The part of speech files (``data.noun`` ... with their pointers), the lexicographer file names
(``lexnames``: the categories), the sense order (``index.sense``: WordNet's most frequent sense
first), the exception lists (``*.exc``: irregular forms) and the glosses (definition and quoted
usage examples) become one :class:`WordNetData`; the sense keys of ``index.sense`` map to synsets
(:func:`sense_key_index`); the pointers become the KG's triples in the
orientation :data:`RELATIONS` defines. The format and the mapping are specified in
:mod:`jaket.kg.sources.wordnet`'s docstring.
"""

from __future__ import annotations

import gc
import logging
import re
import time
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import cached_property, lru_cache
from pathlib import Path

import numpy as np

from jaket.kg.sources.wordnet_forms import find_mention, lemma_forms
from jaket.paths import wordnet_dir

logger = logging.getLogger(__name__)

#: the data / index / exception file suffix of each part of speech (the letter used in pointers)
POS_FILES = {"n": "noun", "v": "verb", "a": "adj", "r": "adv"}

#: (relation id, readable name, one-sentence description); the order is the relation index order
RELATIONS: list[tuple[str, str, str]] = [
    ("hypernym", "hypernym",
     "The head is a kind of the tail: the tail is the more general concept the head specialises."),
    ("instance_hypernym", "instance hypernym",
     "The head is a particular individual, place or thing that is an instance of the tail, a general class."),
    ("member_holonym", "member holonym",
     "The head is one of the members that make up the tail, a group such as a genus, a team or an organisation."),
    ("substance_holonym", "substance holonym",
     "The head is a substance or material the tail is made of or contains."),
    ("part_holonym", "part holonym",
     "The head is a component part of the tail, the whole it belongs to."),
    ("attribute", "attribute",
     "The head noun names a property and the tail adjective expresses one of its values."),
    ("also_see", "also see",
     "The two words are closely related in meaning and each is worth consulting when reading the other."),
    ("verb_group", "verb group",
     "The two verb senses are so similar in meaning that lexicographers grouped them together."),
    ("similar_to", "similar to",
     "The head is a satellite adjective whose meaning is close to the tail, the head adjective of its cluster."),
    ("entailment", "entailment",
     "Doing the head action necessarily involves doing the tail action as well."),
    ("cause", "cause",
     "The head action brings about the tail action or state."),
    ("domain_topic", "domain topic",
     "The head is used within the subject field or topic named by the tail."),
    ("domain_region", "domain region",
     "The head belongs to or is used in the geographical or cultural region named by the tail."),
    ("domain_usage", "domain usage",
     "The head is marked by the tail as a particular kind of usage, such as slang or an idiom."),
    ("derivationally_related_form", "derivationally related form",
     "A word of the head and a word of the tail share a root, one being morphologically derived from the other."),
    ("antonym", "antonym",
     "A word of the head means the opposite of a word of the tail."),
    ("pertainym", "pertainym",
     "The head adjective pertains to the tail noun, meaning relating to or characteristic of it."),
    ("participle", "participle",
     "The head adjective is the participle form of the tail verb."),
    ("derived_from_adjective", "derived from adjective",
     "The head adverb is formed from the tail adjective."),
]
RELATION_INDEX = {r[0]: i for i, r in enumerate(RELATIONS)}

_FORWARD, _REVERSE, _SYMMETRIC = 0, 1, 2
#: pointer symbol -> (relation id, orientation); "=" and "&" are oriented per pointer, "\\" per POS
_POINTERS: dict[str, tuple[str, int]] = {
    "@": ("hypernym", _FORWARD), "~": ("hypernym", _REVERSE),
    "@i": ("instance_hypernym", _FORWARD), "~i": ("instance_hypernym", _REVERSE),
    "#m": ("member_holonym", _FORWARD), "%m": ("member_holonym", _REVERSE),
    "#s": ("substance_holonym", _FORWARD), "%s": ("substance_holonym", _REVERSE),
    "#p": ("part_holonym", _FORWARD), "%p": ("part_holonym", _REVERSE),
    ";c": ("domain_topic", _FORWARD), "-c": ("domain_topic", _REVERSE),
    ";r": ("domain_region", _FORWARD), "-r": ("domain_region", _REVERSE),
    ";u": ("domain_usage", _FORWARD), "-u": ("domain_usage", _REVERSE),
    "^": ("also_see", _SYMMETRIC), "$": ("verb_group", _SYMMETRIC),
    "+": ("derivationally_related_form", _SYMMETRIC), "!": ("antonym", _SYMMETRIC),
    "*": ("entailment", _FORWARD), ">": ("cause", _FORWARD), "<": ("participle", _FORWARD),
}

_ADJ_MARKER = re.compile(r"\((?:a|p|ip)\)$")
_QUOTED = re.compile(r'"([^"]*)"')
_EXAMPLE_START = re.compile(r'(?:^|[;:]\s*)"')


class WordNetError(ValueError):
    """The WordNet files are unreadable, or a requested synset does not exist."""


# --------------------------------------------------------------------------- the parsed database


@dataclass(frozen=True)
class WordNetData:
    """Everything read from one WordNet folder (cached per folder; treat as read-only)."""

    directory: Path
    ids: list[str]
    names: list[str]
    descriptions: list[str]
    aliases: list[list[str]]
    lemmas: list[tuple[str, ...]]  # raw lemma strings (underscores), markers removed
    synset_type: list[str]  # n, v, a, s, r
    category: np.ndarray  # (N,) int32 index into category_names
    category_names: list[str]  # sorted lexicographer file names
    offset_index: dict[tuple[int, str], int]  # (offset, data-file pos n/v/a/r) -> entity index
    triples: np.ndarray  # (T, 3) int32, unique, sorted
    raw_examples: list[tuple[int, str]]  # (entity, usage example) in synset order
    exceptions: dict[str, dict[str, list[str]]]  # pos -> base form -> irregular forms
    stats: dict = field(default_factory=dict)

    @property
    def num_entities(self) -> int:
        return len(self.ids)

    @cached_property
    def examples(self) -> list[tuple[int, str, int, int]]:
        """``(entity, text, start, end)`` of every usage example, the span being the mention of
        its synset (:func:`find_mention`); ``start = end = -1`` when no lemma form occurs."""
        began = time.perf_counter()
        out: list[tuple[int, str, int, int]] = []
        form_cache: dict[tuple[str, str], set[str]] = {}
        current, ordered = -1, []
        for entity, text in self.raw_examples:
            if entity != current:
                current = entity
                kind = self.synset_type[entity]
                table = self.exceptions["a" if kind == "s" else kind]
                forms: set[str] = set()
                for lemma in self.lemmas[entity]:
                    if (lemma, kind) not in form_cache:
                        form_cache[(lemma, kind)] = lemma_forms(lemma, kind, table)
                    forms |= form_cache[(lemma, kind)]
                ordered = sorted(forms)  # a fixed order keeps the tie-breaking deterministic
            span = find_mention(text, ordered)
            out.append((entity, text, span[0], span[1]) if span else (entity, text, -1, -1))
        logger.debug("located the mentions of %d WordNet examples in %.1f s", len(out),
                     time.perf_counter() - began)
        return out


def _lines(path: Path) -> Iterable[str]:
    try:
        with path.open(encoding="utf-8", newline="") as handle:
            for line in handle:
                yield line.rstrip("\r\n")
    except FileNotFoundError:
        raise WordNetError(f"{path}: missing WordNet database file") from None
    except UnicodeDecodeError as error:
        raise WordNetError(f"{path}: not UTF-8 text ({error.reason})") from None


def _read_lexnames(directory: Path) -> dict[int, str]:
    names: dict[int, str] = {}
    path = directory / "lexnames"
    for number, line in enumerate(_lines(path), 1):
        fields = line.split()
        if not fields:
            continue
        if len(fields) < 2 or not fields[0].isdigit():
            raise WordNetError(f"{path}:{number}: expected 'number name pos', got {line!r}")
        names[int(fields[0])] = fields[1]
    return names


def _read_sense_order(directory: Path) -> dict[str, dict[str, list[int]]]:
    """pos -> lemma -> synset offsets in sense-number order (``index.<pos>``)."""
    out: dict[str, dict[str, list[int]]] = {}
    for pos, suffix in POS_FILES.items():
        path = directory / f"index.{suffix}"
        table: dict[str, list[int]] = {}
        for number, line in enumerate(_lines(path), 1):
            if not line or line.startswith(" "):
                continue  # the licence header
            fields = line.split()
            try:
                count = int(fields[2])
                table[fields[0]] = [int(x) for x in fields[len(fields) - count:]]
            except (IndexError, ValueError):
                raise WordNetError(f"{path}:{number}: malformed index line {line[:60]!r}") from None
        out[pos] = table
    return out


def _read_exceptions(directory: Path) -> dict[str, dict[str, list[str]]]:
    """pos -> base form -> irregular inflected forms (from ``<pos>.exc``; lower case, spaces)."""
    out: dict[str, dict[str, list[str]]] = {}
    for pos, suffix in POS_FILES.items():
        table: dict[str, list[str]] = {}
        path = directory / f"{suffix}.exc"
        if path.is_file():
            for line in _lines(path):
                fields = line.split()
                if len(fields) < 2:
                    continue
                inflected = fields[0].replace("_", " ").lower()
                for base in fields[1:]:
                    table.setdefault(base.replace("_", " ").lower(), []).append(inflected)
        out[pos] = table
    return out


def _split_gloss(gloss: str) -> tuple[str, list[str]]:
    """``(definition, examples)``: the examples are the double-quoted strings; the definition is
    the text before the first quote that opens an example (after ``;`` or ``:``)."""
    examples = [e.strip() for e in _QUOTED.findall(gloss)]
    match = _EXAMPLE_START.search(gloss)
    definition = gloss[:match.start()] if match else gloss
    definition = definition.strip().rstrip(";:,").strip()
    return definition, [e for e in examples if e]


@dataclass
class _RawSynset:
    offset: int
    pos: str  # data-file pos
    synset_type: str
    lexfile: int
    lemmas: list[str]
    definition: str
    examples: list[str]


@dataclass
class _Pointers:
    """Every pointer of the data files as columns (converted to arrays in one go)."""

    source: list[int] = field(default_factory=list)  # global synset index
    symbol: list[str] = field(default_factory=list)
    target_offset: list[str] = field(default_factory=list)
    target_pos: list[str] = field(default_factory=list)
    source_target: list[str] = field(default_factory=list)  # "0000" = between synsets


def _parse_data_file(path: Path, pos: str, synsets: list[_RawSynset], pointers: _Pointers) -> None:
    """Append the synsets of one ``data.<pos>`` file to ``synsets`` and its pointers to ``pointers``."""
    symbol_add, offset_add = pointers.symbol.append, pointers.target_offset.append
    pos_add, st_add, source_add = pointers.target_pos.append, pointers.source_target.append, \
        pointers.source.append
    for number, line in enumerate(_lines(path), 1):
        if not line or line.startswith(" "):
            continue  # the licence header lines start with two spaces
        head, bar, gloss = line.partition(" | ")
        fields = head.split()
        index = len(synsets)
        try:
            offset, lexfile, synset_type = int(fields[0]), int(fields[1]), fields[2]
            word_count = int(fields[3], 16)
            lemmas = fields[4:4 + 2 * word_count:2]
            if pos == "a":
                lemmas = [_ADJ_MARKER.sub("", w) for w in lemmas]
            i = 4 + 2 * word_count
            pointer_count = int(fields[i])
            if len(lemmas) != word_count or len(fields) < i + 1 + 4 * pointer_count:
                raise IndexError
            for k in range(i + 1, i + 1 + 4 * pointer_count, 4):
                symbol_add(fields[k])
                offset_add(fields[k + 1])
                pos_add(fields[k + 2])
                st_add(fields[k + 3])
                source_add(index)
        except (IndexError, ValueError):
            raise WordNetError(f"{path}:{number}: malformed synset line {line[:60]!r}") from None
        if not lemmas or synset_type not in ("n", "v", "a", "s", "r"):
            raise WordNetError(f"{path}:{number}: malformed synset line {line[:60]!r}")
        definition, examples = _split_gloss(gloss.strip()) if bar else ("", [])
        synsets.append(_RawSynset(offset, pos, synset_type, lexfile, lemmas, definition, examples))


# --------------------------------------------------------------------------- inflection / mentions


# --------------------------------------------------------------------------- building the database


def load_wordnet_data(directory: str | Path | None = None) -> WordNetData:
    """Parse a WordNet 3.0 folder (default: :func:`jaket.paths.wordnet_dir`) into entities,
    triples and located examples. Cached per folder for the life of the process (the result is
    shared: treat it as read-only)."""
    folder = Path(directory) if directory is not None else wordnet_dir()
    enabled = gc.isenabled()
    gc.disable()  # ~1M small objects: the cyclic collector would rescan them over and over
    try:
        return _load_wordnet_data(str(folder.resolve()))
    finally:
        if enabled:
            gc.enable()


@lru_cache(maxsize=2)
def _load_wordnet_data(directory: str) -> WordNetData:
    folder = Path(directory)
    began = time.perf_counter()
    lexnames = _read_lexnames(folder)
    sense_order = _read_sense_order(folder)
    exceptions = _read_exceptions(folder)
    raw: list[_RawSynset] = []
    columns = _Pointers()
    for pos, suffix in POS_FILES.items():
        _parse_data_file(folder / f"data.{suffix}", pos, raw, columns)
    offset_index = {(s.offset, s.pos): i for i, s in enumerate(raw)}
    if len(offset_index) != len(raw):
        raise WordNetError(f"{folder}: the same synset offset appears twice in one data file")

    # ids, names, descriptions, categories -------------------------------------------------------
    ids: list[str] = []
    seen: dict[str, int] = {}
    unknown_lexfiles: set[int] = set()
    for i, s in enumerate(raw):
        lemma = s.lemmas[0].lower()
        offsets = sense_order[s.pos].get(lemma, [])
        try:
            sense = offsets.index(s.offset) + 1
        except ValueError:
            raise WordNetError(f"{folder / ('index.' + POS_FILES[s.pos])}: lemma {lemma!r} does not "
                               f"list synset {s.offset:08d} of data.{POS_FILES[s.pos]}") from None
        synset_id = f"{lemma}.{s.synset_type}.{sense:02d}"
        if synset_id in seen:
            raise WordNetError(f"{folder}: two synsets named {synset_id!r} ({raw[seen[synset_id]].offset:08d} "
                               f"and {s.offset:08d})")
        seen[synset_id] = i
        ids.append(synset_id)
        if s.lexfile not in lexnames:
            unknown_lexfiles.add(s.lexfile)
    if unknown_lexfiles:
        raise WordNetError(f"{folder / 'lexnames'}: no name for lexicographer file(s) {sorted(unknown_lexfiles)}")
    category_names = sorted({lexnames[s.lexfile] for s in raw})
    category_of = {name: c for c, name in enumerate(category_names)}
    category = np.fromiter((category_of[lexnames[s.lexfile]] for s in raw), dtype=np.int32, count=len(raw))
    names, descriptions, aliases, lemmas = [], [], [], []
    for s in raw:
        readable = [w.replace("_", " ") for w in s.lemmas]
        names.append(readable[0])
        aliases.append(readable[1:])
        lemmas.append(tuple(s.lemmas))
        definition = s.definition or "a WordNet synset without a definition"
        descriptions.append(f"{', '.join(readable)}: {definition}")

    triples, pointer_stats = _pointer_triples(raw, columns, folder)
    raw_examples = [(i, text) for i, s in enumerate(raw) for text in s.examples]
    stats = {**pointer_stats, "parse_seconds": round(time.perf_counter() - began, 2)}
    logger.info("WordNet %s: %d synsets, %d triples, %d examples read in %.1f s", folder, len(raw),
                len(triples), len(raw_examples), stats["parse_seconds"])
    return WordNetData(directory=folder, ids=ids, names=names, descriptions=descriptions, aliases=aliases,
                       lemmas=lemmas, synset_type=[s.synset_type for s in raw], category=category,
                       category_names=category_names, offset_index=offset_index, triples=triples,
                       raw_examples=raw_examples, exceptions=exceptions, stats=stats)


_POS_CODE = {"n": 0, "v": 1, "a": 2, "s": 2, "r": 3}


def _pointer_triples(raw: list[_RawSynset], columns: _Pointers, folder: Path) -> tuple[np.ndarray, dict]:
    """The pointers as unique ``(head, relation, tail)`` triples (module docstring), vectorised."""
    n = len(raw)
    synset_key = np.fromiter((s.offset * 4 + _POS_CODE[s.pos] for s in raw), dtype=np.int64, count=n)
    satellite = np.fromiter((s.synset_type == "s" for s in raw), dtype=bool, count=n)
    file_pos = np.fromiter((_POS_CODE[s.pos] for s in raw), dtype=np.int8, count=n)
    source = np.asarray(columns.source, dtype=np.int64)
    try:
        target_offset = np.asarray(columns.target_offset).astype(np.int64)
    except ValueError:
        raise WordNetError(f"{folder}: a pointer names a synset offset that is not a number") from None
    target_code = np.fromiter((_POS_CODE.get(p, -1) for p in columns.target_pos), dtype=np.int64,
                              count=len(source))
    lexical = np.asarray(columns.source_target) != "0000"
    order = np.argsort(synset_key, kind="stable")
    wanted = target_offset * 4 + target_code
    position = np.clip(np.searchsorted(synset_key[order], wanted), 0, max(n - 1, 0))
    found = (synset_key[order][position] == wanted) & (target_code >= 0) if n else np.zeros(len(wanted), bool)
    target = order[position]

    symbols, symbol_of = np.unique(np.asarray(columns.symbol), return_inverse=True)
    relation = np.full(len(source), -1, dtype=np.int64)
    orientation = np.full(len(source), _FORWARD, dtype=np.int64)
    unknown: Counter = Counter()
    for k, symbol in enumerate(symbols.tolist()):
        mask = symbol_of == k
        if symbol == "\\":
            from_adjective = file_pos[source[mask]] == _POS_CODE["a"]
            relation[mask] = np.where(from_adjective, RELATION_INDEX["pertainym"],
                                      RELATION_INDEX["derived_from_adjective"])
        elif symbol == "=":
            relation[mask] = RELATION_INDEX["attribute"]
            orientation[mask] = np.where(file_pos[source[mask]] == _POS_CODE["n"], _FORWARD, _REVERSE)
        elif symbol == "&":
            relation[mask] = RELATION_INDEX["similar_to"]
            orientation[mask] = np.where(satellite[source[mask]], _FORWARD,
                                         np.where(satellite[target[mask]], _REVERSE, _SYMMETRIC))
        elif symbol in _POINTERS:
            name, kind = _POINTERS[symbol]
            relation[mask] = RELATION_INDEX[name]
            orientation[mask] = kind
        else:
            unknown[symbol] = int(mask.sum())
    if unknown:
        logger.warning("%s: pointer symbols not mapped to a relation (skipped): %s", folder, dict(unknown))
    usable = found & (relation >= 0)
    h = np.where(orientation == _REVERSE, target, source)[usable]
    t = np.where(orientation == _REVERSE, source, target)[usable]
    symmetric = (orientation == _SYMMETRIC)[usable]
    h, t = np.where(symmetric, np.minimum(h, t), h), np.where(symmetric, np.maximum(h, t), t)
    r = relation[usable]
    loops = h == t
    stacked = np.stack([h[~loops], r[~loops], t[~loops]], axis=1)
    triples = np.unique(stacked, axis=0).astype(np.int32) if len(stacked) else np.zeros((0, 3), np.int32)
    counts = Counter(dict(zip(symbols.tolist(), np.bincount(symbol_of[found], minlength=len(symbols)).tolist())))
    stats = {
        "pointers": int(found.sum()),
        "pointers_by_symbol": {k: v for k, v in sorted(counts.items()) if v},
        "lemma_level_pointers_lifted": int((lexical & usable).sum()),
        "pointers_to_missing_synsets": int((~found).sum()),
        "pointers_unmapped": dict(unknown),
        "self_loops_dropped": int(loops.sum()),
        "duplicate_triples_merged": int(len(stacked) - len(triples)),
    }
    return triples, stats


@lru_cache(maxsize=2)
def _sense_order(directory: str) -> dict[tuple[str, str], list[str]]:
    data = load_wordnet_data(directory)
    out: dict[tuple[str, str], list[str]] = {}
    for pos, table in _read_sense_order(Path(directory)).items():
        for lemma, offsets in table.items():
            ids = [data.ids[data.offset_index[(o, pos)]] for o in offsets if (o, pos) in data.offset_index]
            out[(lemma.replace("_", " "), pos)] = ids
    return out


def sense_order(directory: str | Path | None = None) -> dict[tuple[str, str], list[str]]:
    """``(lemma, pos) -> synset ids`` in WordNet's sense order (``index.<pos>``: the first is the most
    frequent sense in WordNet's tagged corpora); lemmas in lower case with spaces, pos one of
    n, v, a, r (satellites under ``a``). Cached per folder."""
    folder = Path(directory) if directory is not None else wordnet_dir()
    return _sense_order(str(folder.resolve()))


def synset_offsets_index(directory: str | Path | None = None) -> dict[tuple[int, str], str]:
    """``(offset, pos) -> entity id`` for every synset, ``pos`` being the data file's letter
    (``n``, ``v``, ``a``, ``r``; satellites are in ``data.adj``, so under ``a``, and are also
    listed under ``s``). Used to resolve WN18RR's bare offsets."""
    data = load_wordnet_data(directory)
    out = {key: data.ids[i] for key, i in data.offset_index.items()}
    for (offset, pos), i in data.offset_index.items():
        if data.synset_type[i] == "s":
            out[(offset, "s")] = data.ids[i]
    return out



@lru_cache(maxsize=2)
def _irregular_bases(directory: str) -> dict[str, dict[str, str]]:
    bases: dict[str, dict[str, str]] = {}
    for pos, table in _read_exceptions(Path(directory)).items():
        for base, inflected_forms in table.items():
            for inflected in inflected_forms:
                found = bases.setdefault(inflected, {})
                if pos not in found.get(base, ""):
                    found[base] = found.get(base, "") + pos
    return bases


def irregular_bases(directory: str | Path | None = None) -> dict[str, dict[str, str]]:
    """Irregular inflected English word -> its base forms, each with the parts of speech (``n``,
    ``v``, ``a``, ``r``) it is their inflection in, from WordNet's exception lists (``noun.exc``,
    ``verb.exc``, ``adj.exc``, ``adv.exc``; lower case): ``"sat" -> {"sit": "v"}``,
    ``"geese" -> {"goose": "n"}``, ``"better" -> {"good": "a", "well": "ar"}``. Reads only the four
    small files, not the database. Cached per folder (shared: treat it as read-only)."""
    folder = Path(directory) if directory is not None else wordnet_dir()
    return _irregular_bases(str(folder.resolve()))

#: a sense key's ``ss_type`` digit -> the data file's letter (5, a satellite, lives in ``data.adj``)
_SENSE_KEY_POS = {"1": "n", "2": "v", "3": "a", "4": "r", "5": "a"}


@lru_cache(maxsize=2)
def _sense_keys(directory: str) -> dict[str, str]:
    data = load_wordnet_data(directory)
    path = Path(directory) / "index.sense"
    out: dict[str, str] = {}
    for number, line in enumerate(_lines(path), 1):
        fields = line.split()
        if not fields:
            continue
        key = fields[0].lower()
        _, _, lex_sense = key.partition("%")
        pos = _SENSE_KEY_POS.get(lex_sense[:1])
        if len(fields) < 2 or pos is None or not fields[1].isdigit() \
                or (int(fields[1]), pos) not in data.offset_index:
            raise WordNetError(f"{path}:{number}: expected 'lemma%ss_type:... offset ...' naming a synset, "
                               f"got {line[:60]!r}")
        out[key] = data.ids[data.offset_index[(int(fields[1]), pos)]]
    return out


def sense_key_index(directory: str | Path | None = None) -> dict[str, str]:
    """WordNet 3.0 sense key (``refer%2:32:01::``, lower case) -> synset id (``refer.v.02``), from
    ``index.sense``: a key's ``lemma%ss_type:lex_filenum:lex_id:head_word:head_id`` names one lemma
    of one synset, ``ss_type`` 1-5 its part of speech (n, v, a, r, satellite), the line its synset's
    offset. The keys of the sense-annotated corpora (SemCor, the unified WSD framework). Cached per
    folder."""
    folder = Path(directory) if directory is not None else wordnet_dir()
    return _sense_keys(str(folder.resolve()))
