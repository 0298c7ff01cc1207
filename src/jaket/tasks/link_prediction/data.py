"""Link prediction's data: a KG and its training and evaluation triples (:func:`load_data`: a
WN18RR-format folder, a KG folder with evaluation files, or a WordNet subset split 90/10), and a
trial-sized part of one (:func:`sample_entities`); a job's, read and checked before any model code
loads (:func:`read_inputs`)."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from jaket.jsonio import quote
from jaket.kg.errors import Problem
from jaket.kg.graph import KnowledgeGraph
from jaket.kg.io import load_kg
from jaket.kg.readers import read_field_lines, read_split
from jaket.kg.sources.registry import build_source
from jaket.tasks.settings import builtin_wordnet_notice
from jaket.tasks.link_prediction.job import TASK, LinkPredictionConfig, LinkPredictionJob

logger = logging.getLogger(__name__)


def load_data(data: Path | None, kg_dir: Path | None, eval_files: Sequence[Path] = (), *, max_entities: int = 2000,
              max_train: int | None = None, sample_count: int | None = None) -> tuple:
    """``(kg, train triples, {name: evaluation triples})``: ``data`` (a WN18RR-format folder: the KG =
    its training triples, its valid/test splits; ``sample_count``: a trial-sized part of it,
    :func:`sample_entities`), else ``kg_dir`` (its triples train), else a WordNet subset of
    ``max_entities`` split 90/10; ``eval_files`` add evaluation splits, ``max_train`` caps the
    training triples (a seeded sample)."""
    rng = np.random.default_rng(0)
    evaluation: dict[str, np.ndarray] = {}
    if data is not None:  # the source registry's WN18RR: the KG = the training triples, valid/test splits
        bundle = build_source("wn18rr", folder=data)
        kg, evaluation = bundle.kg, dict(bundle.splits)
        train = np.asarray(kg.triples, dtype=np.int64).reshape(-1, 3)
        for name, skipped in bundle.report.get("split_triples_skipped", {}).items():
            if skipped:
                logger.warning("%s: %d triples name an entity or relation not in the KG and are skipped",
                               data / f"{name}.txt", skipped)
        if sample_count:
            kg, train, evaluation = sample_entities(kg, train, evaluation, sample_count, rng)
    elif kg_dir is not None:
        kg = load_kg(kg_dir)
        train = np.asarray(kg.triples, dtype=np.int64)
    else:
        builtin_wordnet_notice(logger, TASK, f"a {max_entities}-synset subset, its triples split 90/10",
                               "--data DIR (WN18RR layout) or --kg DIR")
        kg = build_source("wordnet", max_entities=max_entities, seed=0).kg
        order = rng.permutation(kg.num_triples)
        cut = int(0.9 * len(order))
        triples = np.asarray(kg.triples, dtype=np.int64)
        train, evaluation["valid"] = triples[order[:cut]], triples[order[cut:]]
    for path in eval_files:
        evaluation[path.stem], _ = read_split(path, kg)
    if not evaluation:
        raise ValueError("nothing to evaluate: give --test FILE (WN18RR format)")
    if max_train and len(train) > max_train:
        train = train[rng.permutation(len(train))[: max_train]]
    return kg, train, evaluation


def read_inputs(job: LinkPredictionJob) -> tuple:
    """``(kg, train triples, {name: evaluation triples})`` of a resolved job, read before any model
    code loads: its settings checked first (whether ``train_encoder`` can train its settings -- not
    ``gnn`` nor ``lm+g`` -- is known only once the job is resolved: a ``ValueError`` naming the key,
    before any file is read), then its data section (:func:`load_data`)."""
    problems = LinkPredictionConfig.check(job)
    if problems:
        raise ValueError("; ".join(f"{key}: {message}" for key, message in problems))
    data = job.data
    return load_data(data.data, data.kg, data.eval, max_entities=data.max_entities, max_train=data.max_train,
                     sample_count=data.sample_entities)


def sample_entities(kg, train: np.ndarray, evaluation: dict[str, np.ndarray], count: int,
                    rng: np.random.Generator) -> tuple:
    """A trial-sized part of a link-prediction dataset: the entities of randomly drawn training
    triples until about ``count`` are reached, the graph induced on them, and every training and
    evaluation triple among them (renumbered). Evaluation triples are only kept, never added."""
    if count < 2:
        raise ValueError(f"--sample-entities {count}: needs at least 2 entities")
    chosen = np.zeros(kg.num_entities, dtype=bool)
    for row in train[rng.permutation(len(train))]:
        if chosen.sum() >= count:
            break
        chosen[row[0]] = chosen[row[2]] = True
    sub, old = kg.induced_subgraph(np.flatnonzero(chosen))
    new_of_old = np.full(kg.num_entities, -1, dtype=np.int64)
    new_of_old[old] = np.arange(len(old))

    def keep(triples: np.ndarray) -> np.ndarray:
        h, t = new_of_old[triples[:, 0]], new_of_old[triples[:, 2]]
        inside = (h >= 0) & (t >= 0)
        return np.stack([h[inside], triples[inside, 1], t[inside]], axis=1).astype(np.int64)

    evaluation = {name: keep(np.asarray(triples, dtype=np.int64)) for name, triples in evaluation.items()}
    logger.info("--sample-entities %d: %d entities, %d training triples, %s", count, sub.num_entities,
                len(keep(train)), ", ".join(f"{len(v)} {k}" for k, v in evaluation.items()))
    return sub, keep(np.asarray(train, dtype=np.int64)), evaluation


class QueryFormatError(ValueError):
    """A query line that cannot be read (the message names file:line)."""


@dataclass(frozen=True)
class Query:
    line: int
    head: int | None
    relation: int
    tail: int | None


def read_queries(path, kg: KnowledgeGraph) -> list[Query]:
    """The queries of ``path`` as indices of ``kg``; the first bad line raises :class:`QueryFormatError`."""
    path = Path(path)
    entity = {e: i for i, e in enumerate(kg.entity_ids)}
    relation = {r: i for i, r in enumerate(kg.relation_ids)}
    queries = []
    problems: list[Problem] = []
    try:
        lines = read_field_lines(path, problems)
    except OSError as error:
        raise QueryFormatError(f"{path}: cannot read ({error.strerror or error})") from None
    if problems:  # the first line that is not UTF-8
        raise QueryFormatError(str(problems[0]))
    for number, line in lines:
        if line.lstrip().startswith("#"):
            continue
        parts = [p.strip() for p in line.split("\t")]
        where = f"{path}:{number}"
        if len(parts) != 3:
            raise QueryFormatError(f"{where}: expected head<TAB>relation<TAB>? or ?<TAB>relation<TAB>tail, "
                                   f"found {len(parts)} field(s)")
        h, r, t = parts
        if (h == "?") == (t == "?"):
            raise QueryFormatError(f"{where}: exactly one of head and tail must be '?' (the entity to predict)")
        if r not in relation:
            raise QueryFormatError(f"{where}: unknown relation id {quote(r)}")
        for name in (h, t):
            if name != "?" and name not in entity:
                raise QueryFormatError(f"{where}: unknown entity id {quote(name)}")
        queries.append(Query(number, None if h == "?" else entity[h], relation[r], None if t == "?" else entity[t]))
    return queries


def read_prediction_inputs(kg_path, queries) -> tuple[KnowledgeGraph, list[Query]]:
    """``jaket predict link-prediction``'s inputs, read and checked before the model is loaded: the
    KG folder and the queries file as its indices."""
    kg = load_kg(kg_path)
    return kg, read_queries(queries, kg)
