"""MetaQA's movie KB as a pre-training KG with text made from its own triples (issue 66, item 3)::

    python -m results.metaqa_kb ../shared/data/metaqa --out runs/metaqa-kb/kg

Writes a KG folder (entity id = name = the KB's string, as the KGQA task's KG) whose every entity is
described from its triples (:func:`jaket.kg.verbalize.describe_entities`, MetaQA's hand-written
relation templates :data:`jaket.tasks.kgqa.data.RELATION_TEMPLATES`) and ``corpus.jsonl``, every
triple said once (:func:`jaket.kg.verbalize.corpus_from_kg`), then ``metaqa-kb.json`` with the
counts. **What pre-training sees**: the whole KB (as the paper's Wikidata holds the movies), and
nothing of the questions: no question, topic or answer string enters the descriptions or the corpus
except as the KB's own entity names. At fine-tuning, KG-50%'s descriptions are made again from the
50% KG (``jaket evaluate kgqa --set descriptions=kg``), never from the whole KB.

``--films N`` keeps the triples of N films drawn by ``--seed`` (every triple of each) and writes them
as ``OUT/kb.txt`` too, so that ``python -m results.metaqa_recall OUT`` probes the small KB: the check of
whether many passes over a KB store its facts (tasks.md, MetaQA item 9).
"""

from __future__ import annotations

import argparse
import json
import random
from dataclasses import replace
from pathlib import Path

from jaket.flags import positive_int
from jaket.kg.io import save_kg
from jaket.kg.verbalize import corpus_from_kg, describe_entities
from jaket.tasks.kgqa import kb_to_kg, read_kb
from jaket.tasks.kgqa import relation_phrasing
from jaket.kg.verbalize import Phrasing


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("metaqa", type=Path, help="the MetaQA folder (kb.txt)")
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--max-words", type=int, default=40)
    parser.add_argument("--facts-per-text", type=int, default=3)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--both-sides", action="store_true", help="each triple said from its tail too")
    parser.add_argument("--films", type=positive_int, default=None, help="keep the triples of this many films (drawn by --seed)")
    args = parser.parse_args(argv)
    kb_path = args.metaqa / "kb.txt"
    if args.films is not None:
        kb_path = _films_subset(kb_path, args.films, args.seed, args.out / "kb.txt")
    kg = kb_to_kg(read_kb(kb_path))
    phrasings = [Phrasing(*relation_phrasing(str(r), str(n))) for r, n in zip(kg.relation_ids, kg.relation_names)]
    described, report = describe_entities(replace(kg, entity_descriptions=list(kg.entity_names)), phrasings,
                                          max_words=args.max_words)
    corpus, corpus_report = corpus_from_kg(described, phrasings, facts_per_text=args.facts_per_text, seed=args.seed,
                                           both_sides=args.both_sides)
    save_kg(described, args.out, corpus=corpus)
    info = {"source": str(args.metaqa / "kb.txt"), "films": args.films, "entities": described.num_entities,
            "relations": described.num_relations, "triples": described.num_triples, "descriptions": report,
            "corpus": corpus_report, "questions_read": 0}
    (args.out / "metaqa-kb.json").write_text(json.dumps(info, indent=1) + "\n", encoding="utf-8")
    print(json.dumps(info, indent=1))
    return 0


def _films_subset(kb_path: Path, films: int, seed: int, out: Path) -> Path:
    """``out``: the lines of ``kb_path`` whose head is one of ``films`` heads drawn by ``seed``."""
    lines = kb_path.read_text(encoding="utf-8").splitlines()
    heads = sorted({line.split("|", 1)[0] for line in lines if line})
    chosen = set(random.Random(seed).sample(heads, min(films, len(heads))))
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text("".join(line + "\n" for line in lines if line and line.split("|", 1)[0] in chosen), encoding="utf-8")
    return out


if __name__ == "__main__":
    raise SystemExit(main())
