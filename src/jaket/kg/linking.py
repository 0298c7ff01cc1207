"""Gazetteer entity linking: find the KG's entity names and aliases in plain texts.

The paper takes mentions ``m_i = (e_i, s_i, o_i)`` with disjoint spans as given (section
"Definition"; its Wikipedia corpus was linked with SLING, and footnote 3 assumes a custom domain
"comes with NER and entity linking tools"). This module is that tool for any KG directory: it turns
plain texts into the corpus format (``{"text", "mentions": [{"start", "end", "entity"}]}``) with
a dictionary of surface forms, so no separate linker is needed.

**Surface forms.** Every entity name and alias is a surface form of its entity. Texts and forms are
split the same way into tokens: a run of letters and digits, one other non-space character
(``"C++"`` is ``C + +``), or one CJK ideograph / kana (scripts written without spaces); the
underscore separates tokens like a space. A form is indexed by its normalised tokens (lower-cased
unless ``case_sensitive``) joined by one space, together with each of its proper prefixes, in a
single ``dict``; the entities of a form are a CSR table. Not indexed (counted in
:class:`GazetteerStats`): forms shorter than ``min_length`` characters -- listed there and in a
warning, and linked after all when named in ``short_forms`` (``"Go,C,JS"``) or with a lower
``min_length`` -- and forms made only of stop words (``"the"``, ``"it"``, ``"who"``...).

**Matching.** Each text is scanned once: from every token the dictionary is walked along the
following tokens while the joined key is a known prefix, so the cost is the number of tokens times
the length of the matched prefixes, whatever the size of the gazetteer. Matches start and end on
token boundaries (``"cat"`` is not found inside ``"category"``). With ``inflections`` (the default)
the last token of a form may also appear inflected (:func:`base_forms`): a regular plural or third
person, a past tense or participle in ``-ed`` / ``-ing``, or an irregular form of WordNet's exception
lists (``"apple trees"`` links ``apple tree``, ``"wolves"`` links ``wolf``, ``"sat"`` links ``sit``).
Where the text is itself a form, only the irregular bases stand beside it (``"found"``: the form
``found`` and the past of ``find``; ``"glasses"`` is not taken for ``glass``); the exact form's
entities come first in the ambiguity rule below. Where an entity's id gives its part of speech
(WordNet's ``lemma.pos.NN``), a base names only entities of the parts of speech it is an inflection
in: ``"watched"`` finds the verbs ``watch.v.*``, not the noun ``watch.n.01``.

**Letter case.** Texts and forms are compared ignoring case, except that a form keeps its capitals
when it is written with capitals and is short (at most :data:`CASED_MAX_LETTERS` letters:
``"Sat"``, ``"Bill"``, ``"Go"``) or all capitals (an acronym: ``"NASA"``, ``"C"``): such a form
only matches a text with capitals where it has them (``"Sat"`` and ``"SAT"`` name Saturday,
``"sat"`` does not; ``"Saturday"``, ``"Paris"`` match in any case). ``ignore_case`` matches every
form in any case; ``case_sensitive`` matches every form exactly.

**Overlaps.** Overlapping matches are resolved like spaCy's ``filter_spans``: **longest first**
(most tokens, then most characters, then leftmost), each taken only if it overlaps no span already
taken, so the result has the disjoint spans the paper assumes.

**Ambiguity.** When a form names several entities (``"bank"``), the one chosen maximises, in order:

1. the overlap of the context (the content words within ``context_window`` tokens on either side
   of the mention, stop words left out, plurals folded) with the words of the entity's description
   (a bag-of-words score, computed only for candidates and cached);
2. whether the span's text is the entity's form itself rather than an inflection of it;
3. whether the form is the entity's name rather than one of its aliases;
4. the entity's degree in the KG (the better connected, usually the more general, sense);
5. the lower entity index (so the result is deterministic).

Forms naming more than ``max_ambiguity`` entities are not linked at all; their spans still block
shorter matches inside them and are counted (``too_ambiguous``).
"""

from __future__ import annotations

import logging
import re
from array import array
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

import numpy as np

from jaket.kg.corpus import Mention, MentionCorpus
from jaket.kg.graph import KnowledgeGraph
from jaket.kg.inflection import base_forms, inflection_bases, singular_forms
from jaket.kg.io import save_corpus
from jaket.kg.sources.wordnet_forms import id_part_of_speech
from jaket.kg.text_input import Target, TextFile, read_texts

#: a token: a run of letters/digits, one CJK ideograph or kana, or one other non-space character
#: (the underscore, neither, separates tokens like whitespace)
_TOKEN = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]"
                    r"|[^\W_\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]+"
                    r"|[^\w\s]")

log = logging.getLogger(__name__)

#: short forms listed in :class:`GazetteerStats` (all are counted) and named in the warning
MAX_LISTED_SHORT = 1000
MAX_NAMED_SHORT = 10

#: English function words: a surface form made only of these is not linked, and they carry no
#: weight in the context score
STOP_WORDS = frozenset("""
a about above after again against all am an and any are as at be because been before being below
between both but by can could did do does doing down during each few for from further had has have
having he her here hers herself him himself his how i if in into is it its itself just me more most
my myself no nor not now of off on once only or other our ours ourselves out over own same she
should so some such than that the their theirs them themselves then there these they this those
through to too under until up very was we were what when where which while who whom why will with
would you your yours yourself yourselves also may might must shall upon yet via per etc one s t
""".split())

#: forms written with capitals and at most this many letters keep their capitals (module docstring)
CASED_MAX_LETTERS = 4

def tokenize(text: str) -> list[tuple[int, int, str]]:
    """``(start, end, token)`` of every token of ``text`` (character offsets, end exclusive)."""
    return [(m.start(), m.end(), m.group()) for m in _TOKEN.finditer(text)]


def keeps_capitals(form: str) -> bool:
    """Whether a surface form keeps its capitals in matching (module docstring, "Letter case"):
    it has a capital letter and is all capitals or has at most :data:`CASED_MAX_LETTERS` letters."""
    letters = [c for c in form if c.isalpha()]
    if not any(c.isupper() for c in letters):
        return False
    return all(c.isupper() for c in letters) or len(letters) <= CASED_MAX_LETTERS


def _capitals_match(pattern: str, text: str) -> bool:
    """Whether ``text`` has a capital wherever ``pattern`` has one (compared letter by letter over
    their common length: the tokens of both are joined by single spaces)."""
    return all(t.isupper() for p, t in zip(pattern, text) if p.isupper())


@lru_cache(maxsize=1 << 18)
def _content_word(token: str) -> str | None:
    """The word a token counts as in a bag-of-words context, or ``None`` (stop word, punctuation,
    a short ASCII token); plurals are folded to their first candidate singular."""
    word = token.lower()
    if word in STOP_WORDS or not word.isalnum() or (len(word) < 3 and word.isascii()):
        return None
    plural = singular_forms(word)
    return plural[0] if plural else word


@dataclass
class GazetteerStats:
    """What went into the gazetteer, and what was left out and why."""

    entities: int = 0
    entities_with_forms: int = 0
    surface_forms: int = 0  # distinct normalised forms indexed
    ambiguous_forms: int = 0  # forms naming more than one entity
    skipped_short: int = 0  # names / aliases shorter than min_length
    skipped_stop_words: int = 0  # names / aliases made only of stop words (or no token at all)
    #: which ones were too short: ``{"entity": id, "form": name or alias}``, the first
    #: :data:`MAX_LISTED_SHORT` (``skipped_short`` counts them all)
    skipped_short_forms: list[dict] = field(default_factory=list)
    #: forms linked although shorter than min_length, because ``short_forms`` named them
    short_forms_linked: int = 0


@dataclass
class LinkStats:
    """Counts over the texts linked so far (``link`` / ``link_texts`` add to it)."""

    texts: int = 0
    mentions: int = 0
    linked_texts: int = 0
    unlinked_texts: int = 0
    ambiguous_resolved: int = 0  # mentions whose form names several entities
    resolved_by_context: int = 0  # ... of which the context overlap decided
    too_ambiguous: int = 0  # matches left unlinked: more than max_ambiguity candidates
    inflected: int = 0  # mentions linked through an inflected form (base_forms)

    def add_text(self, mentions: int) -> None:
        """Count one linked text holding ``mentions`` mentions."""
        self.texts += 1
        self.mentions += mentions
        if mentions:
            self.linked_texts += 1
        else:
            self.unlinked_texts += 1


@dataclass(eq=False)
class CandidateSpan:
    """A gazetteer match kept once overlaps are resolved: the character span ``[start, end)`` of a
    surface form and every entity the form names (``candidates``, entity indices in increasing
    order; ``is_name[i]``: the form is that entity's name, not only one of its aliases).
    ``inflected``: some candidates are named by an inflection of the span's last word
    (:func:`base_forms`), and ``exact[i]`` (None: all) says whether the span's text is candidate
    ``i``'s form itself; ``first`` / ``last``: the span's token positions in :func:`tokenize`'s
    tokens of the text."""

    start: int
    end: int
    candidates: np.ndarray
    is_name: np.ndarray
    inflected: bool
    first: int
    last: int
    exact: np.ndarray | None = None


@dataclass
class _Match:
    tokens: int
    chars: int
    first: int  # token positions, inclusive
    last: int
    pairs: list[int]  # rows of the (group, entity) table: the exact form's first, then inflections'
    exact: int  # how many of ``pairs`` come from the exact form


@dataclass(frozen=True)
class LinkRules:
    """How an :class:`EntityLinker` matches (the module docstring's rules): forms shorter than
    ``min_length`` characters are not indexed; ``case_sensitive`` / ``ignore_case``: every form matched
    exactly / in any case (neither: short or all-capital forms keep their capitals, "Letter case");
    ``max_ambiguity``: a form naming more entities is left unlinked (None: no limit);
    ``inflections``: a form's last word may be inflected (:func:`base_forms`); ``context_window``:
    tokens on each side of a mention that disambiguate it. A contradiction is a ``ValueError``."""

    min_length: int = 3
    case_sensitive: bool = False
    ignore_case: bool = False
    max_ambiguity: int | None = None
    inflections: bool = True
    context_window: int = 50

    def __post_init__(self) -> None:
        if self.max_ambiguity is not None and self.max_ambiguity < 1:
            raise ValueError(f"max_ambiguity must be at least 1, got {self.max_ambiguity}")
        if self.case_sensitive and self.ignore_case:
            raise ValueError("case_sensitive and ignore_case exclude each other")


class EntityLinker:
    """A gazetteer of a KG's entity names and aliases that links mentions in texts.

    Build it with :meth:`from_kg`; :meth:`link` returns the mentions of one text,
    :meth:`link_texts` a :class:`MentionCorpus`. See the module docstring for the rules.
    """

    def __init__(self, kg: KnowledgeGraph, forms: dict[str, int], group_pointer: np.ndarray,
                 group_entities: np.ndarray, group_is_name: np.ndarray, *, rules: LinkRules,
                 gazetteer_stats: GazetteerStats, capitals: dict[int, str] | None = None):
        self.kg = kg
        self._forms = forms  # normalised key -> group id (>= 0), or -1 for a proper prefix only
        self._pointer = group_pointer  # (G + 1,) int64
        self._entities = group_entities  # entity index of each (group, entity) pair
        self._is_name = group_is_name  # the form is that entity's name (not only an alias)
        #: pair -> the form's tokens with their capitals, for the pairs whose form keeps them
        self._capitals = capitals or {}
        groups = np.searchsorted(group_pointer, np.fromiter(self._capitals, np.int64, len(self._capitals)),
                                 side="right") - 1
        self._cased_groups = frozenset(groups.tolist())
        #: each entity's part of speech when its id is in WordNet's naming (``bank.n.01``), else "":
        #: an inflection's base names only entities of the parts of speech it inflects
        self._pos = [id_part_of_speech(str(e)) or "" for e in kg.entity_ids] if rules.inflections else []
        #: the matching rules the gazetteer was built with (:class:`LinkRules`)
        self.rules = rules
        self.gazetteer_stats = gazetteer_stats
        self._degree = np.asarray(kg.degree(), dtype=np.int64)
        self._description_words = lru_cache(maxsize=1 << 17)(self._words_of_description)

    # building ----------------------------------------------------------------------------------
    @classmethod
    def from_kg(cls, kg: KnowledgeGraph, *, min_length: int = 3, case_sensitive: bool = False,
                max_ambiguity: int | None = None, inflections: bool = True,
                stop_words: Iterable[str] | None = None, context_window: int = 50,
                short_forms: Iterable[str] = (), ignore_case: bool = False) -> "EntityLinker":
        """Index every entity name and alias of ``kg`` (see the module docstring).

        ``min_length``: forms with fewer characters are not linked (they are listed in
        :attr:`gazetteer_stats` and a warning names them), except those in ``short_forms``
        (names or aliases such as ``"Go"``, ``"C"``, ``"JS"``; compared ignoring case unless
        ``case_sensitive``), which are linked whatever their length; ``stop_words`` replaces
        :data:`STOP_WORDS` (forms made only of them are not linked); ``max_ambiguity``: forms
        naming more entities are not linked (``None``: no limit); ``context_window``: tokens on
        each side of a mention that disambiguate it; ``ignore_case`` / ``case_sensitive``: every
        form matched in any case / exactly (default: short or all-capital forms keep their capitals,
        the module docstring's "Letter case").
        """
        rules = LinkRules(min_length=min_length, case_sensitive=case_sensitive, ignore_case=ignore_case,
                          max_ambiguity=max_ambiguity, inflections=inflections, context_window=context_window)
        stop = frozenset(w.lower() for w in stop_words) if stop_words is not None else STOP_WORDS
        fold = (lambda text: text.strip()) if case_sensitive else (lambda text: text.strip().lower())
        wanted_short = {fold(f) for f in short_forms if f.strip()}
        stats = GazetteerStats(entities=kg.num_entities)
        forms: dict[str, int] = {}
        pair_group, pair_entity, pair_name, pair_cased = array("q"), array("q"), array("b"), array("q")
        cased_forms: list[str] = []  # the forms that keep their capitals, tokens joined by a space
        has_form = np.zeros(kg.num_entities, dtype=bool)
        finditer = _TOKEN.finditer
        for entity, surface, is_name in _surface_forms(kg):
            if len(surface.strip()) < min_length:
                if fold(surface) in wanted_short:
                    stats.short_forms_linked += 1
                else:
                    stats.skipped_short += 1
                    if len(stats.skipped_short_forms) < MAX_LISTED_SHORT:
                        stats.skipped_short_forms.append({"entity": str(kg.entity_ids[entity]), "form": surface})
                    continue
            tokens = [m.group() for m in finditer(surface)]
            cased = -1
            if not case_sensitive:
                if not ignore_case and keeps_capitals(surface):
                    cased = len(cased_forms)
                    cased_forms.append(" ".join(tokens))
                tokens = [t.lower() for t in tokens]
            if not tokens or all((t.lower() in stop) or not t.isalnum() for t in tokens):
                if cased >= 0:
                    cased_forms.pop()
                stats.skipped_stop_words += 1
                continue
            key = tokens[0]
            for token in tokens[1:]:
                forms.setdefault(key, -1)
                key = f"{key} {token}"
            group = forms.get(key, -1)
            if group < 0:
                group = stats.surface_forms
                forms[key] = group
                stats.surface_forms += 1
            pair_group.append(group)
            pair_entity.append(entity)
            pair_name.append(is_name)
            pair_cased.append(cased)
            has_form[entity] = True
        pointer, entities, names, capitals = _pair_table(pair_group, pair_entity, pair_name, pair_cased,
                                                         cased_forms, stats)
        stats.entities_with_forms = int(has_form.sum())
        if stats.skipped_short:
            _warn_short_forms(stats, min_length)
        return cls(kg, forms, pointer, entities, names, rules=rules, gazetteer_stats=stats, capitals=capitals)

    def candidates(self, surface: str) -> list[int]:
        """The entity indices a surface form names exactly (empty when it is not in the gazetteer;
        a form that keeps its capitals names its entity only where ``surface`` has them)."""
        tokens = [m.group() for m in _TOKEN.finditer(surface)]
        group = self._forms.get(" ".join(tokens if self.rules.case_sensitive else
                                         [t.lower() for t in tokens]), -1)
        if group < 0:
            return []
        return self._entities[list(self._pairs(group, " ".join(tokens)))].tolist()

    # matching ----------------------------------------------------------------------------------
    def _pairs(self, group: int, written: str) -> range | list[int]:
        """The rows of the (group, entity) table that the text ``written`` (the span's tokens as
        written, joined by one space) can name: all of the group's, less those whose form keeps
        capitals ``written`` lacks."""
        rows = range(int(self._pointer[group]), int(self._pointer[group + 1]))
        if group not in self._cased_groups:
            return rows
        capitals = self._capitals
        return [r for r in rows if r not in capitals or _capitals_match(capitals[r], written)]

    def _matches(self, tokens: list[str], written: list[str], starts: list[int], ends: list[int]) -> list[_Match]:
        """Every gazetteer match: from each token, each length whose joined key is a full form
        and, with ``inflections``, whose last token is an inflection of a full form's last token
        (:func:`base_forms`: every guess where no form is the text itself, the irregular ones
        beside it). ``written``: the tokens as the text writes them (for the letter-case rule)."""
        get = self._forms.get
        inflect = self.rules.inflections
        cased_groups = self._cased_groups
        found: list[_Match] = []
        n = len(tokens)
        for i in range(n):
            key = tokens[i]
            j = i
            while True:
                group = get(key)
                exact: range | list[int] = range(0)
                span_text = ""  # the span as written, joined once and only for a form that keeps capitals
                if group is not None and group >= 0:
                    if group in cased_groups:
                        span_text = " ".join(written[i:j + 1])
                        exact = self._pairs(group, span_text)
                    else:
                        exact = range(int(self._pointer[group]), int(self._pointer[group + 1]))
                bases = inflection_bases(tokens[j], regular=not exact) if inflect else ()
                if bases:
                    pairs = list(exact)
                    seen = {int(self._entities[r]) for r in pairs}
                    prefix = key[:len(key) - len(tokens[j])]
                    for base, pos in bases:
                        other = get(prefix + base)
                        if other is None or other < 0:
                            continue
                        if other in cased_groups and not span_text:
                            span_text = " ".join(written[i:j + 1])
                        for r in self._pairs(other, span_text):
                            entity = int(self._entities[r])
                            if entity not in seen and self._pos[entity] in pos:  # "" (no pos) is in any
                                seen.add(entity)
                                pairs.append(r)
                    if pairs:
                        found.append(_Match(j - i + 1, ends[j] - starts[i], i, j, pairs, len(exact)))
                elif exact:
                    found.append(_Match(j - i + 1, ends[j] - starts[i], i, j, exact, len(exact)))
                if group is None or j + 1 >= n:  # only a known prefix can grow into a form
                    break
                j += 1
                key = f"{key} {tokens[j]}"
        return found

    def _context(self, content: list[str | None], first: int, last: int) -> set[str]:
        """Content words within ``context_window`` tokens of the mention (tokens first..last)."""
        words = set(content[max(0, first - self.rules.context_window):first])
        words.update(content[last + 1:last + 1 + self.rules.context_window])
        words.discard(None)
        return words  # type: ignore[return-value]

    def _words_of_description(self, entity: int) -> frozenset[str]:
        words = set(map(_content_word, _TOKEN.findall(self.kg.entity_descriptions[entity])))
        words.discard(None)
        return frozenset(words)  # type: ignore[arg-type]

    def context_of(self, text: str, start: int, end: int) -> set[str]:
        """The context of rule 1 of the module docstring for the span ``[start, end)`` of ``text``
        (character offsets): the content words within ``context_window`` tokens of its tokens."""
        spans = tokenize(text)
        inside = [i for i, (s, e, _) in enumerate(spans) if s < end and e > start]
        if not inside:
            raise ValueError(f"the span [{start}, {end}) holds no token of {text[:60]!r}")
        return self._context([_content_word(t) for _, _, t in spans], inside[0], inside[-1])

    def choice_keys(self, candidates: Iterable[int], is_name: Iterable[bool], context: set[str],
                    exact: Iterable[bool] | None = None) -> list[tuple[int, bool, bool, int, int]]:
        """The ambiguity rule of the module docstring as one key per candidate, the largest chosen:
        ``(context overlap with the description, the text is its form (not an inflection; default:
        all are), the form is its name, degree, -index)``."""
        candidates = [int(e) for e in candidates]
        exact = [True] * len(candidates) if exact is None else [bool(x) for x in exact]
        overlaps = [len(context & self._description_words(e)) if context else 0 for e in candidates]
        return [(overlap, same, bool(name), int(self._degree[e]), -e)
                for overlap, same, name, e in zip(overlaps, exact, is_name, candidates)]

    def _choose(self, span: CandidateSpan, content: list[str | None], stats: LinkStats) -> int:
        """The ambiguity rule of the module docstring (context overlap, exact form, name, degree,
        index): the position of the chosen candidate in ``span.candidates``."""
        keys = self.choice_keys(span.candidates.tolist(), span.is_name.tolist(),
                                self._context(content, span.first, span.last),
                                None if span.exact is None else span.exact.tolist())
        overlaps = [k[0] for k in keys]
        best = max(range(len(keys)), key=keys.__getitem__)
        stats.ambiguous_resolved += 1
        if overlaps[best] > 0 and sorted(overlaps)[-2] < overlaps[best]:
            stats.resolved_by_context += 1
        return best

    def candidate_spans(self, text: str, stats: LinkStats | None = None) -> list[CandidateSpan]:
        """The matches of ``text`` that are linked, each with every entity its form names: the
        longest-first, disjoint spans of the module docstring, sorted by start. A form naming more
        than ``max_ambiguity`` entities is left out (its span still blocks shorter matches inside
        it) and counted in ``stats.too_ambiguous``; choosing among the candidates is the caller's
        (:meth:`link`: the context-overlap rule)."""
        return self._candidate_spans(tokenize(text), stats if stats is not None else LinkStats())

    def _candidate_spans(self, spans: list[tuple[int, int, str]], stats: LinkStats) -> list[CandidateSpan]:
        starts = [s for s, _, _ in spans]
        ends = [e for _, e, _ in spans]
        written = [t for _, _, t in spans]
        tokens = written if self.rules.case_sensitive else [t.lower() for t in written]
        matches = self._matches(tokens, written, starts, ends)
        matches.sort(key=lambda m: (-m.tokens, -m.chars, m.first))
        taken = bytearray(len(tokens))
        kept: list[CandidateSpan] = []
        for match in matches:
            if any(taken[match.first:match.last + 1]):
                continue
            taken[match.first:match.last + 1] = b"\x01" * (match.last - match.first + 1)
            if self.rules.max_ambiguity is not None and len(match.pairs) > self.rules.max_ambiguity:
                stats.too_ambiguous += 1
                continue
            rows = np.asarray(match.pairs, dtype=np.int64)
            entities = self._entities[rows]
            order = np.argsort(entities, kind="stable")  # candidates in increasing entity order
            exact = (np.arange(len(rows)) < match.exact)[order]
            kept.append(CandidateSpan(starts[match.first], ends[match.last], entities[order],
                                      self._is_name[rows][order], not exact.all(), match.first, match.last,
                                      exact))
        kept.sort(key=lambda span: span.start)
        return kept

    def link(self, text: str, stats: LinkStats | None = None) -> list[Mention]:
        """The mentions of ``text``: disjoint character spans (end exclusive), sorted by start."""
        if stats is None:
            stats = LinkStats()
        spans = tokenize(text)
        mentions: list[Mention] = []
        content: list[str | None] | None = None  # the bag-of-words view, made on first need
        for span in self._candidate_spans(spans, stats):
            chosen = 0
            if len(span.candidates) > 1:
                if content is None:
                    content = [_content_word(t) for _, _, t in spans]
                chosen = self._choose(span, content, stats)
            stats.inflected += span.exact is not None and not span.exact[chosen]
            mentions.append(Mention(span.start, span.end, int(span.candidates[chosen])))
        stats.add_text(len(mentions))
        return mentions

    def link_texts(self, texts: Iterable[str], stats: LinkStats | None = None,
                   progress: bool = False) -> MentionCorpus:
        """Link every text; ``stats`` (when given) accumulates the counts."""
        if stats is None:
            stats = LinkStats()
        texts = list(texts)
        iterator: Iterable[str] = texts
        if progress:
            from tqdm import tqdm

            iterator = tqdm(texts, desc="linking", unit="text", disable=None)
        mentions = [self.link(text, stats) for text in iterator]
        return MentionCorpus(texts, mentions)


def _pair_table(pair_group: array, pair_entity: array, pair_name: array, pair_cased: array, cased_forms: list[str],
                stats: GazetteerStats) -> tuple[np.ndarray, np.ndarray, np.ndarray, dict[int, str]]:
    """The (group, entity) table of :meth:`EntityLinker.from_kg` from its form occurrences, one row
    per pair sorted by group then entity: ``(group pointer, entities, is_name, capitals)``. A pair
    counts as a name when any occurrence is the name, and keeps its capitals (``capitals``: row ->
    the form as written) only when every occurrence does. Counts the ambiguous forms in ``stats``."""
    groups = np.frombuffer(pair_group, dtype=np.int64) if len(pair_group) else np.zeros(0, np.int64)
    entities = np.frombuffer(pair_entity, dtype=np.int64) if len(pair_entity) else np.zeros(0, np.int64)
    names = np.frombuffer(pair_name, dtype=np.int8).astype(bool) if len(pair_name) else np.zeros(0, bool)
    cased = np.frombuffer(pair_cased, dtype=np.int64) if len(pair_cased) else np.zeros(0, np.int64)
    order = np.lexsort((~names, entities, groups))
    groups, entities, names, cased = groups[order], entities[order], names[order], cased[order]
    first = np.ones(len(groups), dtype=bool)
    first[1:] = (groups[1:] != groups[:-1]) | (entities[1:] != entities[:-1])
    any_case = np.zeros(int(first.sum()), dtype=bool)
    np.logical_or.at(any_case, np.cumsum(first) - 1, cased < 0)
    groups, entities, names, cased = groups[first], entities[first], names[first], cased[first]
    capitals = {int(row): cased_forms[int(cased[row])] for row in np.flatnonzero(~any_case)}
    counts = np.bincount(groups, minlength=stats.surface_forms)
    pointer = np.zeros(stats.surface_forms + 1, dtype=np.int64)
    np.cumsum(counts, out=pointer[1:])
    stats.ambiguous_forms = int((counts > 1).sum())
    return pointer, entities.copy(), names.copy(), capitals


def _warn_short_forms(stats: GazetteerStats, min_length: int) -> None:
    """The warning naming the names and aliases left out for being shorter than ``min_length``."""
    named = ", ".join(f"{s['form']!r} ({s['entity']})" for s in stats.skipped_short_forms[:MAX_NAMED_SHORT])
    more = f" and {stats.skipped_short - MAX_NAMED_SHORT} more" if stats.skipped_short > MAX_NAMED_SHORT else ""
    log.warning("%d name(s)/alias(es) shorter than %d characters are not linked: %s%s; to link "
                "them, lower the minimum (jaket link --min-length N) or name them "
                "(jaket link --short-forms %s)", stats.skipped_short, min_length, named, more,
                ",".join(s["form"].strip() for s in stats.skipped_short_forms[:3]))


def _surface_forms(kg: KnowledgeGraph) -> Iterator[tuple[int, str, bool]]:
    """``(entity index, surface form, is the name)`` of every name and alias."""
    for entity, name in enumerate(kg.entity_names):
        yield entity, name, True
    aliases = kg.entity_aliases
    strings = getattr(aliases, "strings", None)
    pointer = getattr(aliases, "pointer", None)
    if strings is not None and pointer is not None:  # jaket.kg.io.AliasTable: decode in bulk
        owners = np.repeat(np.arange(len(pointer) - 1), np.diff(pointer)).tolist()
        for entity, alias in zip(owners, strings):
            yield entity, alias, False
        return
    for entity, alias_list in enumerate(aliases):
        for alias in alias_list:
            yield entity, alias, False


def write_corpus(corpus: MentionCorpus, path, kg: KnowledgeGraph) -> Path:
    """Write ``corpus`` in the corpus format, atomically (see :func:`jaket.kg.io.save_corpus`)."""
    return save_corpus(corpus, path, kg)


# the inflections and the text reader live in their own modules; importable from here as before
__all__ = ["CandidateSpan", "EntityLinker", "GazetteerStats", "LinkStats", "STOP_WORDS", "Target", "TextFile",
           "base_forms", "inflection_bases", "keeps_capitals", "read_texts", "singular_forms", "tokenize",
           "write_corpus"]

