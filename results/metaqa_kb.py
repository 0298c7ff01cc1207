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
"""

from __future__ import annotations

import argparse
import json
from dataclasses import replace
from pathlib import Path

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
    args = parser.parse_args(argv)
    kg = kb_to_kg(read_kb(args.metaqa / "kb.txt"))
    phrasings = [Phrasing(*relation_phrasing(str(r), str(n))) for r, n in zip(kg.relation_ids, kg.relation_names)]
    described, report = describe_entities(replace(kg, entity_descriptions=list(kg.entity_names)), phrasings,
                                          max_words=args.max_words)
    corpus, corpus_report = corpus_from_kg(described, phrasings, facts_per_text=args.facts_per_text, seed=args.seed)
    save_kg(described, args.out, corpus=corpus)
    info = {"source": str(args.metaqa / "kb.txt"), "entities": described.num_entities,
            "relations": described.num_relations, "triples": described.num_triples, "descriptions": report,
            "corpus": corpus_report, "questions_read": 0}
    (args.out / "metaqa-kb.json").write_text(json.dumps(info, indent=1) + "\n", encoding="utf-8")
    print(json.dumps(info, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
