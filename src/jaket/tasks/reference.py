"""The reference experiment's data: all of WordNet 3.0 split so that no evaluation item can leak.

``jaket prepare wordnet-reference --out runs/reference/data [--wn18rr DIR]`` writes

* ``kg-unseen/``: the unseen KG' of entity classification, ``heldout_entities`` synsets in
  breadth-first regions (:func:`jaket.tasks.heldout.choose_heldout`) and the
  triples among them;
* ``kg-pretrain/``: every other synset, with the usage examples that mention none of KG'
  (:func:`jaket.tasks.heldout.split_pretraining`), **minus every triple between
  two WN18RR entities that is not a WN18RR training triple** (:func:`evaluation_triples_mask`),
  so that no link-prediction evaluation triple, of any split (including test splits we do not
  have), is an edge or a relation-prediction target in pre-training;
* ``report.json``: counts of everything kept and dropped.

The rule for WN18RR is stated on relations, not only on entity pairs: a WordNet triple between
two WN18RR entities is kept only when WN18RR's training file holds the same pair with the same
relation (WN18RR names relations from the other end for four of them, e.g. ``_has_part`` is
WordNet's ``part_holonym`` read backwards: :data:`WN18RR_OF_WORDNET`), in the same direction
(WN18RR holds a few pairs in both directions, e.g. ``02423762 _hypernym 02422663`` in train and
its reverse in valid); for the four symmetric
relations (:data:`SYMMETRIC`), which WordNet stores once and WN18RR in both directions, both
directions must be training triples, since the missing one may be an evaluation triple. Triples of WordNet relations that WN18RR does not have (antonym,
entailment, ...) cannot be WN18RR evaluation triples and are kept. A WN18RR offset that names
several synsets marks all of them as WN18RR entities (conservative).
"""

from __future__ import annotations

import argparse
import logging
import time
from pathlib import Path

import numpy as np

from jaket.atomic import atomic_directory
from jaket.flags import deprecated_alias, positive_int
from jaket.jsonio import quote
from jaket.kg.errors import KGFormatError, Problem
from jaket.kg.graph import KnowledgeGraph
from jaket.kg.io import save_kg
from jaket.kg.readers import read_field_lines, read_triples
from jaket.kg.sources.registry import build_source
from jaket.kg.sources.wordnet import load_wordnet_data
from jaket.output import check_output_folder, print_json
from jaket.tasks.heldout import choose_heldout, label_leakage, split_pretraining
from jaket.tasks.report import write_json_atomic

logger = logging.getLogger(__name__)

#: WordNet relation id (``jaket.kg.sources.wordnet.RELATIONS``) -> (the WN18RR relation it is,
#: whether WN18RR writes it from the other end: WordNet ``(a, part_holonym, b)`` = WN18RR
#: ``(b, _has_part, a)``)
WN18RR_OF_WORDNET = {
    "hypernym": ("_hypernym", False),
    "instance_hypernym": ("_instance_hypernym", False),
    "member_holonym": ("_member_meronym", True),
    "part_holonym": ("_has_part", True),
    "domain_topic": ("_synset_domain_topic_of", False),
    "domain_region": ("_member_of_domain_region", True),
    "domain_usage": ("_member_of_domain_usage", True),
    "derivationally_related_form": ("_derivationally_related_form", False),
    "also_see": ("_also_see", False),
    "verb_group": ("_verb_group", False),
    "similar_to": ("_similar_to", False),
}

#: WN18RR relations that hold in both directions (WN18RR lists each such pair twice)
SYMMETRIC = {"_derivationally_related_form", "_also_see", "_verb_group", "_similar_to"}

_POS_ORDER = ("n", "v", "a", "r")


def wn18rr_synsets(wordnet, offsets: list[str]) -> list[list[int]]:
    """Every WordNet entity index an 8-digit WN18RR offset can name (one per part of speech)."""
    out = []
    for entity in offsets:
        if not entity.isdigit():
            out.append([])
            continue
        offset = int(entity)
        out.append([wordnet.offset_index[(offset, pos)] for pos in _POS_ORDER
                    if (offset, pos) in wordnet.offset_index])
    return out


def evaluation_triples_mask(kg: KnowledgeGraph, wn18rr_dir: str | Path) -> tuple[np.ndarray, dict]:
    """``(mask, report)``: True for every triple of the full-WordNet ``kg`` that joins two WN18RR
    entities and is not one of WN18RR's training triples (see the module docstring)."""
    folder = Path(wn18rr_dir)
    problems: list[Problem] = []
    train = read_triples(folder / "train.txt", problems)
    if problems:
        raise KGFormatError(problems)
    wordnet = load_wordnet_data()
    if kg.num_entities != wordnet.num_entities:
        raise ValueError("evaluation_triples_mask needs the full WordNet KG (build_wordnet() without a subset)")
    offsets = sorted({e for _, h, _, t in train for e in (h, t)})
    dict_path = folder / "entities.dict"
    if dict_path.is_file():  # every WN18RR entity, also those only in valid/test: index<TAB>offset
        for number, line in read_field_lines(dict_path, problems):
            parts = line.split("\t")
            if len(parts) != 2 or not parts[1].strip():
                problems.append(Problem(str(dict_path), number, f"expected index<TAB>entity, got {quote(line)}"))
                continue
            offsets.append(parts[1].strip())
    for split in ("valid.txt", "test.txt"):
        if (folder / split).is_file():
            offsets.extend(e for _, h, _, t in read_triples(folder / split, problems) for e in (h, t))
    if problems:
        raise KGFormatError(problems)
    offsets = sorted(set(offsets))
    synsets = dict(zip(offsets, wn18rr_synsets(wordnet, offsets)))
    is_wn18rr = np.zeros(kg.num_entities, dtype=bool)
    for options in synsets.values():
        is_wn18rr[options] = True
    directed: set[tuple[int, int, str]] = set()
    for _, h, r, t in train:
        for a in synsets.get(h, []):
            for b in synsets.get(t, []):
                directed.add((a, b, r))
    # a symmetric relation's pair counts as training data only when BOTH directions are training
    # triples (WN18RR lists both; the missing one may be an evaluation triple); the others must
    # match in direction too (WN18RR holds a few pairs in both directions, one in valid)
    allowed = {(a, b, r) for a, b, r in directed if r not in SYMMETRIC or (b, a, r) in directed}
    h, rel, t = kg.triples[:, 0], kg.triples[:, 1], kg.triples[:, 2]
    between = is_wn18rr[h] & is_wn18rr[t]
    mask = np.zeros(kg.num_triples, dtype=bool)
    kept_between = 0
    for i in np.flatnonzero(between):
        mapped = WN18RR_OF_WORDNET.get(kg.relation_ids[int(rel[i])])
        if mapped is None:  # not a WN18RR relation: never an evaluation triple
            kept_between += 1
            continue
        name, backwards = mapped
        a, b = (int(t[i]), int(h[i])) if backwards else (int(h[i]), int(t[i]))
        if (a, b, name) in allowed or (name in SYMMETRIC and (b, a, name) in allowed):
            kept_between += 1
        else:
            mask[i] = True
    report = {"wn18rr_folder": str(folder), "wn18rr_entities": len(offsets),
              "wn18rr_entities_resolved": int(sum(bool(v) for v in synsets.values())),
              "wordnet_entities_marked": int(is_wn18rr.sum()),
              "triples_between_wn18rr_entities": int(between.sum()),
              "kept_as_training_or_other_relation": kept_between,
              "dropped_not_in_wn18rr_train": int(mask.sum())}
    return mask, report


def wordnet_reference(out: str | Path, heldout_entities: int = 10_000, regions: int = 20, seed: int = 0,
                      wn18rr: str | Path | None = None) -> dict:
    """Build and write the reference data (module docstring); returns the report. ``ValueError``
    for ``heldout_entities`` or ``regions`` below 1 (before WordNet is read) or more held-out
    entities than WordNet has."""
    if heldout_entities < 1 or regions < 1:
        raise ValueError(f"heldout_entities and regions must be at least 1, got {heldout_entities} and {regions}")
    began = time.perf_counter()
    out = Path(out)
    bundle = build_source("wordnet", max_entities=None, seed=seed)
    kg, corpus, wordnet_report = bundle.kg, bundle.corpus, bundle.report
    report: dict = {"wordnet": {k: wordnet_report[k] for k in ("entities", "relations", "triples",
                                                               "categories", "texts", "mentions")}}
    if wn18rr is not None:
        mask, report["wn18rr"] = evaluation_triples_mask(kg, wn18rr)
        kg = kg.drop_triples(mask)
    else:
        report["wn18rr"] = None
        logger.warning("no --wn18rr folder: WN18RR evaluation triples are NOT removed from pre-training")
    if heldout_entities > kg.num_entities:
        raise ValueError(f"--heldout-entities {heldout_entities}: more than the {kg.num_entities} entities of WordNet")
    heldout = choose_heldout(kg, heldout_entities / kg.num_entities, seed, regions=regions)
    kg_pre, corpus_pre, kg_prime, info = split_pretraining(kg, corpus, heldout)
    report["split"] = info
    report["unseen_categories"] = int(len(np.unique(kg_prime.entity_category[kg_prime.entity_category >= 0])))
    report["leakage"] = label_leakage(kg_prime)
    report["seconds"] = round(time.perf_counter() - began, 1)
    with atomic_directory(out) as folder:  # replaces an earlier --out as a whole (--overwrite)
        save_kg(kg_pre, folder / "kg-pretrain", corpus=corpus_pre)
        save_kg(kg_prime, folder / "kg-unseen")
        write_json_atomic(folder / "report.json", report)
    return report


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "prepare", help="build the data of a reference experiment (see docs/results.md)",
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    kinds = parser.add_subparsers(dest="kind", metavar="KIND", required=True)
    ref = kinds.add_parser("wordnet-reference", help="full WordNet minus KG' and WN18RR evaluation triples")
    ref.add_argument("--out", type=Path, default=Path("runs/reference/data"), help="output folder (default %(default)s)")
    ref.add_argument("--heldout-entities", type=positive_int, default=10_000,
                     help="synsets of the unseen KG' of entity classification (default %(default)s)")
    ref.add_argument("--regions", type=positive_int, default=20,
                     help="breadth-first regions of KG' (default %(default)s)")
    ref.add_argument("--data-seed", type=int, default=0, metavar="N",
                     help="seed of the held-out regions (default %(default)s)")
    deprecated_alias(ref, "--seed", "--data-seed")
    ref.add_argument("--wn18rr", type=Path,
                     help="a WN18RR folder whose non-training triples are kept out of pre-training")
    ref.add_argument("--overwrite", action="store_true", help="replace a non-empty --out (refused otherwise)")
    ref.set_defaults(func=_main)


def _main(args) -> int:
    check_output_folder(args.out, args.overwrite)  # before WordNet is read (minutes)
    report = wordnet_reference(args.out, args.heldout_entities, args.regions, args.data_seed, args.wn18rr)
    print_json(report)
    return 0
