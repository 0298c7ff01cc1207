"""PATO as an unseen KG' for entity classification (the paper's Table 3 question on a real ontology,
issue 65 item 5): the KG of ``pato.obo`` with each quality's category its ancestor three levels below
``quality`` (PATO:0000001: shape, structure, position, color, size, ...), kept where the category
holds at least ``--min-size`` entities (the others stay in the graph, unlabelled)::

    python -m results.pato_kg ../shared/data/ontologies/pato/pato.obo --out runs/pato/kg-unseen

Writes the KG folder and ``pato-categories.json`` (the categories, their sizes, and the leakage
check: how many descriptions spell a category name, and their own). Leak rule: the reference model
was pre-trained on WordNet 3.0 alone (its synsets, pointers and usage examples); PATO's ids, triples
and definitions are in none of them, so PATO shares no entity, triple or text with pre-training.
"""

from __future__ import annotations

import argparse
import json
from collections import Counter
from dataclasses import replace
from pathlib import Path

import numpy as np

from jaket.kg.io import save_kg
from jaket.kg.sources.ontologies import load_obo
from jaket.tasks.heldout import label_leakage

QUALITY = "PATO:0000001"


def build(source: Path, depth: int = 3, min_size: int = 20):
    """The KG and its category report."""
    kg, report = load_obo(source, category_depth=depth, category_root=QUALITY)
    labels = np.asarray(kg.entity_category)
    sizes = Counter(int(c) for c in labels if c >= 0)
    kept = sorted(c for c, n in sizes.items() if n >= min_size)
    names = [kg.category_names[c] for c in kept]
    index = {c: k for k, c in enumerate(kept)}
    relabelled = np.array([index.get(int(c), -1) for c in labels], dtype=np.int32)
    kg = replace(kg, entity_category=relabelled, category_names=names)
    leak = label_leakage(kg)
    info = {"source": str(source), "category_root": QUALITY, "category_depth": depth, "min_size": min_size,
            "categories": {names[k]: int((relabelled == k).sum()) for k in range(len(names))},
            "labelled_entities": int((relabelled >= 0).sum()), "entities": int(kg.num_entities),
            "triples": int(kg.num_triples), "leakage": leak, "import_account": report["account"]}
    return kg, info


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("source", type=Path)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--depth", type=int, default=3)
    parser.add_argument("--min-size", type=int, default=20)
    args = parser.parse_args(argv)
    kg, info = build(args.source, args.depth, args.min_size)
    save_kg(kg, args.out)
    (args.out / "pato-categories.json").write_text(json.dumps(info, indent=1, ensure_ascii=False) + "\n",
                                                    encoding="utf-8")
    print(json.dumps({k: v for k, v in info.items() if k != "import_account"}, indent=1, ensure_ascii=False))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
