"""The KGQA task's data: MetaQA (Zhang et al., 2018, vanilla version), its knowledge base and its questions.

**The KB** as a :class:`~jaket.kg.graph.KnowledgeGraph` (:func:`read_kb`, :func:`kb_to_kg`); without
MetaQA, templated questions over a WordNet-like KG (:func:`wordnet_questions`).
``kb.txt``: one triple a line, ``head|relation|tail``. Entity names are the ids (MetaQA has no
other ids). Relation descriptions are written by hand (:data:`RELATION_DESCRIPTIONS`), as the
paper does. MetaQA's entities have no descriptions of their own: the paper uses one sampled
question per entity (:func:`load_metaqa_task` reads the questions and passes those descriptions
to :func:`kb_to_kg`).

**The questions.** Question files (``{k}-hop/qa_{split}.txt``, also ``{k}hop/``): ``question with [topic entity]<TAB>
answer1|answer2``, one question a line; the topic is written in brackets and must name an entity
of the KB (exactly, or ignoring case).

**Protocol** (:func:`load_metaqa_task`): the questions of ``train_split`` are divided, by
``split_seed``, into a training part and a model-selection part (``selection_fraction``); with an
``eval_split`` its questions are the test questions (only evaluated), without one a share
``test_fraction`` of ``train_split`` is held out as the test part (the default here, where only the
``dev`` questions are available: 60/10/30 of dev). The split is the same for every training seed.
As in the paper an entity's description is one sampled question naming it as topic -- sampled from
the **training part only**, so no selection or test question is ever read by the model's memory --
or the entity's name when no training question names it.

Problems are reported as ``path:line: message``; questions whose topic or every answer is not in
the KB are counted in ``skipped`` (never silently dropped) when reading a dataset, and are an error
when reading questions to answer (:func:`read_questions` with ``strict=True``). A gold answer that is
not in the KB cannot be scored: it is kept in :attr:`QAExample.missing_answers`, counted with
examples in the task's ``info["missing_answers"]`` (metrics.json's ``data``) and named in a warning.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from jaket.jsonio import quote
from jaket.kg.errors import Problem
from jaket.kg.graph import KnowledgeGraph
from jaket.kg.io import load_kg
from jaket.kg.readers import read_lines, read_triples
from jaket.kg.sources.registry import build_source
from jaket.tasks.kgqa.job import KGQAData
from jaket.tasks.settings import builtin_wordnet_notice
from jaket.tasks.kgqa.job import TASK

#: how each MetaQA relation is said when entity descriptions are made from the KG (``descriptions="kg"``;
#: :mod:`jaket.kg.verbalize`): (sentence template, inverse template), written by hand as the relation
#: descriptions below; they hold no answer, only the relation's wording
RELATION_TEMPLATES = {
    "directed_by": ("{head} was directed by {tail}", "{tail} directed {head}"),
    "written_by": ("{head} was written by {tail}", "{tail} wrote {head}"),
    "starred_actors": ("{head} starred {tail}", "{tail} acted in {head}"),
    "release_year": ("{head} was released in {tail}", "{tail} saw the release of {head}"),
    "in_language": ("{head} is in {tail}", "{tail} is the language of {head}"),
    "has_tags": ("{head} is tagged {tail}", "{tail} is a tag of {head}"),
    "has_genre": ("{head} is a {tail} film", "{tail} is the genre of {head}"),
    "has_imdb_votes": ("{head} has {tail} IMDb votes", "{tail} is the IMDb vote count of {head}"),
    "has_imdb_rating": ("{head} is rated {tail} on IMDb", "{tail} is the IMDb rating of {head}"),
}
#: hand-written relation descriptions for the nine MetaQA relations (the paper writes its own)
RELATION_DESCRIPTIONS = {
    "directed_by": "the film was directed by this person",
    "written_by": "the film was written by this screenwriter or author",
    "starred_actors": "this actor starred in the film",
    "release_year": "the year in which the film was released",
    "in_language": "the language spoken in the film",
    "has_tags": "a tag or keyword describing the film",
    "has_genre": "the genre of the film",
    "has_imdb_votes": "how popular the film is by its number of votes on IMDb",
    "has_imdb_rating": "the rating of the film on IMDb",
}


class MetaQAFormatError(ValueError):
    """A MetaQA file does not follow the format."""


@dataclass
class MetaQAKB:
    entity_names: list[str]
    relation_names: list[str]
    triples: np.ndarray  # (T, 3) int32
    index: dict[str, int] = field(default_factory=dict)


def read_kb(path: str | Path) -> MetaQAKB:
    """Read ``kb.txt`` (``head|relation|tail``)."""
    path = Path(path)
    names: list[str] = []
    index: dict[str, int] = {}
    relations: list[str] = []
    relation_index: dict[str, int] = {}
    rows: list[tuple[int, int, int]] = []

    def entity(name: str) -> int:
        if name not in index:
            index[name] = len(names)
            names.append(name)
        return index[name]

    problems: list[Problem] = []
    for _, head, relation, tail in read_triples(path, problems, separator="|"):
        if relation not in relation_index:
            relation_index[relation] = len(relations)
            relations.append(relation)
        rows.append((entity(head), relation_index[relation], entity(tail)))
    if problems:  # the first line that is not UTF-8 or not head|relation|tail
        raise MetaQAFormatError(str(problems[0]))
    if not rows:
        raise MetaQAFormatError(f"{path}: no triples")
    return MetaQAKB(names, relations, np.asarray(rows, dtype=np.int32), index)


def kb_to_kg(kb: MetaQAKB, descriptions: Sequence[str] | None = None) -> KnowledgeGraph:
    """The KB as a KnowledgeGraph: entity id = name = the KB's string; ``descriptions`` default
    to the names; relation descriptions from :data:`RELATION_DESCRIPTIONS`."""
    names = list(kb.entity_names)
    if descriptions is not None and len(descriptions) != len(names):
        raise ValueError(f"{len(descriptions)} descriptions for {len(names)} MetaQA entities")
    return KnowledgeGraph(
        entity_ids=names, entity_names=list(names),
        entity_descriptions=list(descriptions) if descriptions is not None else list(names),
        entity_aliases=[[] for _ in names], entity_category=np.full(len(names), -1),
        category_names=[], relation_ids=list(kb.relation_names),
        relation_names=[r.replace("_", " ") for r in kb.relation_names],
        relation_descriptions=[RELATION_DESCRIPTIONS.get(r, r.replace("_", " ")) for r in kb.relation_names],
        triples=kb.triples)


#: the fine-tuning KG's folder inside a fine-tuned KGQA folder (the default KG of ``jaket predict kgqa``)
KG_DIR = "kg"


def read_prediction_inputs(finetuned_dir, questions_path, kg_path=None, hops: int | None = None, top_k: int = 5,
                           settings: dict | None = None) -> tuple[KnowledgeGraph, Path, list[QAExample], int]:
    """``jaket predict kgqa``'s inputs, read and checked before the model is loaded: the KG folder
    (default: the fine-tuned folder's ``kg/``), the hop count (default: the largest the folder's
    ``settings`` were fine-tuned on) and the questions; a gold answer not in the KG is warned of."""
    kg_dir = Path(kg_path) if kg_path is not None else Path(finetuned_dir or ".") / KG_DIR
    hops = hops if hops is not None else max((settings or {}).get("hops") or [1])
    if hops < 1 or top_k < 1:
        raise ValueError(f"--hops and --top-k must be at least 1, got {hops} and {top_k}")
    kg = load_kg(kg_dir)
    missing: list[tuple[str, int, str]] = []
    questions, _ = read_questions(questions_path, entity_lookup(kg.entity_names, kg.entity_ids), hops, strict=True,
                                  missing=missing)
    if not questions:
        raise ValueError(f"{questions_path}: no question")
    if missing:
        report = missing_answer_report(missing)
        logger.warning("%d gold answer(s) of %d question(s) are not entities of %s (listed as gold_not_in_kg), "
                       "e.g. %s", report["answers"], report["questions"], kg_dir, "; ".join(report["examples"]))
    return kg, kg_dir, questions, hops

__all__ = ["RELATION_TEMPLATES", "MetaQAFormatError", "MetaQAKB", "read_kb", "kb_to_kg", "QAExample", "MetaQAData",
           "read_questions", "load_metaqa",
           "load_metaqa_task", "entity_descriptions_from_questions", "entity_lookup", "missing_answer_report",
           "load_data", "read_inputs"]

_TOPIC = re.compile(r"\[([^\]]+)\]")

logger = logging.getLogger(__name__)

#: missing gold answers listed as examples (all are counted)
MAX_EXAMPLES = 5


@dataclass
class QAExample:
    """A question with its topic entity marked by a character span (end exclusive)."""

    text: str
    topic: int
    topic_start: int
    topic_end: int
    answers: list[int]
    hops: int = 1
    #: the line of the file it was read from (0: not read from a file)
    line: int = 0
    #: gold answers the file names that are not entities of the KG (they cannot be scored)
    missing_answers: list[str] = field(default_factory=list)


def entity_lookup(names: Sequence[str], ids: Sequence[str] | None = None) -> dict[str, int]:
    """Name (and id) -> entity index: exact strings first, then their lower-case forms."""
    lookup: dict[str, int] = {}
    for table in ([ids] if ids is not None else []) + [names]:
        for i, name in enumerate(table):
            lookup.setdefault(str(name).lower(), i)
    for table in ([ids] if ids is not None else []) + [names]:
        for i, name in enumerate(table):
            lookup[str(name)] = i
    return lookup


def read_questions(path: str | Path, lookup: Mapping[str, int], hops: int = 1, *,
                   strict: bool = False, missing: list[tuple[str, int, str]] | None = None
                   ) -> tuple[list[QAExample], int]:
    """Read one question file; returns ``(examples, skipped)``.

    ``lookup``: entity name -> index (:func:`entity_lookup`). Not ``strict`` (a dataset): a
    question whose topic is not in the KG, or none of whose answers is, counts in ``skipped``.
    ``strict`` (questions to answer): the answers are optional (no tab) and an unknown topic is an
    error naming the line. A gold answer not in the KG is kept in the example's
    ``missing_answers`` and, when ``missing`` is given, appended to it as ``(path, line, answer)``
    (for skipped questions too)."""
    path = Path(path)
    out: list[QAExample] = []
    skipped = 0
    for line_no, line in _lines(path):
        if "\t" not in line and not strict:
            raise MetaQAFormatError(f"{path}:{line_no}: expected question<TAB>answers")
        question, _, answer_field = line.partition("\t")
        match = _TOPIC.search(question)
        if match is None:
            raise MetaQAFormatError(f"{path}:{line_no}: no [topic entity] in the question")
        topic_name = match.group(1).strip()
        text = question[: match.start()] + topic_name + question[match.end():]
        topic = lookup.get(topic_name, lookup.get(topic_name.lower()))
        named = [a for a in answer_field.split("|") if a.strip()]
        found = [lookup.get(a, lookup.get(a.lower())) for a in named]
        absent = [a for a, index in zip(named, found) if index is None]
        if missing is not None:
            missing.extend((str(path), line_no, a) for a in absent)
        answers = sorted({int(a) for a in found if a is not None})
        if strict and topic is None:
            raise MetaQAFormatError(f"{path}:{line_no}: topic entity {quote(topic_name)} is not in the KG")
        if topic is None or (not answers and not strict):
            skipped += 1
            continue
        out.append(QAExample(text, int(topic), match.start(), match.start() + len(topic_name), answers, hops,
                             line_no, absent))
    return out, skipped


def _lines(path: Path) -> list[tuple[int, str]]:
    """The non-blank lines of a question file (:func:`jaket.kg.readers.read_lines`); the first
    line that is not UTF-8, or a file that cannot be read, is a :class:`MetaQAFormatError`."""
    problems: list[Problem] = []
    try:
        lines = read_lines(path, problems)
    except OSError as error:
        raise MetaQAFormatError(f"{path}: cannot read ({error.strerror or error})") from None
    if problems:
        raise MetaQAFormatError(str(problems[0]))
    return lines


def question_file(root: Path, split: str, hops: int) -> Path:
    """``root/{hops}-hop/qa_{split}.txt`` (or ``{hops}hop/``); a clear error when neither exists."""
    for folder in (f"{hops}-hop", f"{hops}hop"):
        path = root / folder / f"qa_{split}.txt"
        if path.exists():
            return path
    available = sorted({p.name[3:-4] for p in root.glob(f"{hops}*hop/qa_*.txt")})
    raise MetaQAFormatError(f"{root}: no {hops}-hop/qa_{split}.txt (splits present for {hops}-hop: "
                            f"{', '.join(available) or 'none'})")


def load_metaqa(root: str | Path, hops: tuple[int, ...] = (1, 2), split: str = "train", *,
                missing: list[tuple[str, int, str]] | None = None) -> tuple[MetaQAKB, list[QAExample], int]:
    """Read ``root/kb.txt`` and the ``split`` questions of each hop count: ``(kb, questions, skipped)``;
    ``missing`` collects the gold answers not in the KB (:func:`read_questions`)."""
    root = Path(root)
    kb_path = root / "kb.txt"
    if not kb_path.exists():
        raise MetaQAFormatError(f"{kb_path}: not found (expected the MetaQA kb.txt)")
    kb = read_kb(kb_path)
    questions, skipped = _read_split(root, split, hops, entity_lookup(kb.entity_names), missing)
    return kb, questions, skipped


def _read_split(root: Path, split: str, hops: Sequence[int], lookup,
                missing: list[tuple[str, int, str]] | None = None) -> tuple[list[QAExample], int]:
    questions: list[QAExample] = []
    skipped = 0
    for k in hops:
        found, s = read_questions(question_file(root, split, k), lookup, hops=k, missing=missing)
        questions += found
        skipped += s
    return questions, skipped


def entity_descriptions_from_questions(num_entities: int, names: Sequence[str],
                                       questions: Sequence[QAExample], seed: int = 0) -> list[str]:
    """The paper's MetaQA descriptions: one randomly sampled question mentioning the entity
    (as its topic), or the entity's name when none does."""
    rng = np.random.default_rng(seed)
    by_entity: dict[int, list[str]] = {}
    for q in questions:
        by_entity.setdefault(q.topic, []).append(q.text)
    out = []
    for i in range(num_entities):
        texts = by_entity.get(i)
        out.append(texts[int(rng.integers(len(texts)))] if texts else str(names[i]))
    return out


@dataclass
class MetaQAData:
    """A MetaQA folder read under the protocol of the module docstring."""

    kg: KnowledgeGraph
    questions: list[QAExample]
    #: indices into ``questions``: training, model selection, test
    train: np.ndarray
    selection: np.ndarray
    test: np.ndarray
    info: dict = field(default_factory=dict)


def load_metaqa_task(root: str | Path, train_split: str = "dev", eval_split: str | None = None,
                     hops: Sequence[int] = (1, 2), selection_fraction: float = 0.1,
                     test_fraction: float = 0.3, split_seed: int = 0) -> MetaQAData:
    """The KG (descriptions from the training part's questions) and the three question parts."""
    root = Path(root)
    if not 0 < selection_fraction < 1:
        raise ValueError(f"--selection-fraction must be in (0, 1), got {selection_fraction}")
    if eval_split is None and not (0 < test_fraction < 1 and selection_fraction + test_fraction < 1):
        raise ValueError(f"--test-fraction must be in (0, 1 - selection fraction), got {test_fraction}")
    if eval_split is not None and eval_split == train_split:
        raise ValueError(f"--test {eval_split} is also --train: evaluate a split the model "
                         "is not trained or selected on, or leave --test out to hold out part of it")
    missing: dict[str, list[tuple[str, int, str]]] = {train_split: []}
    kb, train_questions, skipped = load_metaqa(root, tuple(hops), train_split, missing=missing[train_split])
    if not train_questions:
        raise MetaQAFormatError(f"{root}: no answerable {train_split} question (all {skipped} skipped)")
    n = len(train_questions)
    order = np.random.default_rng(split_seed).permutation(n)
    n_selection = max(1, int(round(selection_fraction * n)))
    n_test = 0 if eval_split is not None else max(1, int(round(test_fraction * n)))
    if n_selection + n_test >= n:
        raise ValueError(f"{n} {train_split} questions are too few to hold out {n_selection} for selection "
                         f"and {n_test} for test")
    selection = np.sort(order[:n_selection])
    test = np.sort(order[n_selection:n_selection + n_test])
    train = np.sort(order[n_selection + n_test:])
    questions = list(train_questions)
    info = {"root": str(root), "train_split": train_split, "eval_split": eval_split, "hops": list(hops),
            "split_seed": split_seed, "skipped": {train_split: skipped}}
    if eval_split is not None:
        missing[eval_split] = []
        evaluated, skipped_eval = _read_split(root, eval_split, hops, entity_lookup(kb.entity_names),
                                              missing[eval_split])
        info["skipped"][eval_split] = skipped_eval
        test = np.arange(len(questions), len(questions) + len(evaluated))
        questions += evaluated
    descriptions = entity_descriptions_from_questions(len(kb.entity_names), kb.entity_names,
                                                      [questions[i] for i in train], seed=split_seed)
    info.update(train=len(train), selection=len(selection), test=len(test))
    info["missing_answers"] = {split: missing_answer_report(found) for split, found in missing.items()}
    for split, report in info["missing_answers"].items():
        if report["answers"]:
            logger.warning("%s: %d gold answer(s) of %d %s question(s) are not entities of kb.txt and cannot "
                           "be scored (a question left with no answer is skipped), e.g. %s", root,
                           report["answers"], report["questions"], split, "; ".join(report["examples"]))
    return MetaQAData(kb_to_kg(kb, descriptions), questions, train, selection, test, info)


def load_data(data: KGQAData) -> tuple[KnowledgeGraph, list[QAExample], tuple | None, dict | None]:
    """``(KG, questions, (train, selection, test) indices or None, data info or None)`` named by the
    job's data section: the MetaQA folder under the module's protocol (:func:`load_metaqa_task`;
    the questions it skipped named in a warning), else templated questions over a WordNet subset
    (:func:`wordnet_questions`; each seed then divides them by the config's ``split``)."""
    if data.metaqa is None:
        builtin_wordnet_notice(logger, TASK, f"templated questions over a {data.max_entities}-synset subset",
                               "--data DIR (a MetaQA folder)")
        kg = build_source("wordnet", max_entities=data.max_entities, seed=0).kg
        return kg, wordnet_questions(kg, seed=0, max_questions=data.max_questions), None, None
    task = load_metaqa_task(data.metaqa, data.train_split, data.eval_split, data.hops, data.selection_fraction,
                            data.test_fraction, data.split_seed)
    for split, skipped in task.info["skipped"].items():
        if skipped:
            logger.warning("%s: %d %s questions skipped (topic or every answer not in kb.txt)", data.metaqa,
                           skipped, split)
    return task.kg, task.questions, (task.train, task.selection, task.test), task.info


def read_inputs(job) -> tuple[KnowledgeGraph, list[QAExample], tuple | None, dict | None]:
    """What the spec reads before any model code loads (:func:`jaket.tasks.spec.read_then_run`): the
    job's data section (:func:`load_data`)."""
    return load_data(job.data)


def missing_answer_report(missing: Sequence[tuple[str, int, str]]) -> dict:
    """``{"answers", "questions", "examples"}``: how many gold answers are not in the KG, in how
    many questions, and the first :data:`MAX_EXAMPLES` as ``path:line: 'answer'``."""
    return {"answers": len(missing), "questions": len({(path, line) for path, line, _ in missing}),
            "examples": [f"{path}:{line}: {quote(answer)}" for path, line, answer in missing[:MAX_EXAMPLES]]}


#: relation kinds used for WordNet questions: kind -> (forward template, inverse template)
_TEMPLATES = {
    "hypernym": ("what is {x} a kind of?", "name a kind of {x}."),
    "part": ("what is the {rel} of {x}?", "what has {x} as its {rel}?"),
    "member": ("what is the {rel} of {x}?", "what has {x} as its {rel}?"),
    "other": ("what is the {rel} of {x}?", "what has {x} as its {rel}?"),
}


# ----------------------------------------------------------------------------- WordNet questions


def _relation_kind(relation_id: str, relation_name: str) -> str | None:
    text = f"{relation_id} {relation_name}".lower()
    if ("hypernym" in text and "instance" not in text) or text.split()[-2:] == ["is", "a"]:
        return "hypernym"
    if "part" in text and ("holonym" in text or "meronym" in text):
        return "part"
    if "member" in text and ("holonym" in text or "meronym" in text):
        return "member"
    return None


def wordnet_questions(kg: KnowledgeGraph, seed: int = 0, max_questions: int = 2000, max_answers: int = 10,
                      two_hop_share: float = 0.5) -> list[QAExample]:
    """Templated 1-hop and 2-hop questions over the hypernym, part and member relations of ``kg``.

    1-hop: ``what is [X] a kind of?`` (answers: X's hypernyms), ``name a kind of [X].`` (its
    hyponyms), ``what is the part holonym of [X]?`` ... 2-hop: ``what is the R2 of the R1 of [X]?``
    (answers: entities reached by r1 then r2, X excluded). Questions with more than
    ``max_answers`` answers are not generated. The topic mention is the entity's name.
    """
    rng = np.random.default_rng(seed)
    kinds = {p: _relation_kind(kg.relation_ids[p], kg.relation_names[p]) for p in range(kg.num_relations)}
    chosen = [p for p, k in kinds.items() if k]
    if not chosen:  # not WordNet-like: ask about every relation with the generic template
        logger.info("no hypernym, part or member relation: generic questions over every relation")
        kinds = {p: "other" for p in range(kg.num_relations)}
        chosen = list(kinds)
    triples = np.asarray(kg.triples)
    forward: dict[tuple[int, int], set[int]] = {}
    backward: dict[tuple[int, int], set[int]] = {}
    for h, r, t in triples.tolist():
        if r in kinds and kinds[r]:
            forward.setdefault((h, r), set()).add(t)
            backward.setdefault((t, r), set()).add(h)
    names = list(kg.entity_names)

    def rel_text(p: int) -> str:
        if kinds[p] == "hypernym":
            return "broader kind"
        return str(kg.relation_names[p]).replace("_", " ").strip()

    def make(template: str, x: int, answers: set[int], hops: int) -> QAExample | None:
        answers = set(answers) - {x}
        if not answers or len(answers) > max_answers or not names[x]:
            return None
        marker = "\x00"
        text = template.replace("{x}", marker)
        start = text.index(marker)
        text = text.replace(marker, names[x])
        return QAExample(text, x, start, start + len(names[x]), sorted(answers), hops)

    one_hop: list[QAExample] = []
    for (x, r), answers in forward.items():
        kind = kinds[r]
        q = make(_TEMPLATES[kind][0].replace("{rel}", rel_text(r)), x, answers, 1)
        if q:
            one_hop.append(q)
    for (x, r), answers in backward.items():
        kind = kinds[r]
        q = make(_TEMPLATES[kind][1].replace("{rel}", rel_text(r)), x, answers, 1)
        if q:
            one_hop.append(q)
    two_hop: list[QAExample] = []
    for (x, r1), middle in forward.items():
        for r2 in chosen:
            answers: set[int] = set()
            for y in middle:
                answers |= forward.get((y, r2), set())
            if answers:
                template = f"what is the {rel_text(r2)} of the {rel_text(r1)} of {{x}}?"
                q = make(template, x, answers, 2)
                if q:
                    two_hop.append(q)
    n_two = min(len(two_hop), int(round(max_questions * two_hop_share)))
    n_one = min(len(one_hop), max_questions - n_two)
    picked = [one_hop[i] for i in rng.permutation(len(one_hop))[:n_one]]
    picked += [two_hop[i] for i in rng.permutation(len(two_hop))[:n_two]]
    return [picked[i] for i in rng.permutation(len(picked))]
