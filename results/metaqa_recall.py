"""Did pre-training on MetaQA's KB put the facts KG-50% drops into the model? (issue 66's diagnosis)::

    python -m results.metaqa_recall ../shared/data/metaqa --model runs/metaqa-kb/pretrain/model \\
        [--seed 0] [--facts 1000] [--out FILE.json]

KG-50% fine-tuning reads descriptions made from the 50% KG (``--set descriptions=kg``), so a fact it
dropped can reach an answer only through the weights pre-training left. This probe asks the
pre-trained model for such facts directly, with the masked-entity head of pre-training task 4:
each probe text is one triple said by its relation's template with the tail's name replaced by the
tokenizer's mask token ("Kismet was directed by [MASK]."), the head's query at the mask scored
against the memory ``E^context`` that the KG-50% setting of ``seed`` gives (LM1's reading of every
entity's 50%-KG description, Eq. 7), no KG embedding fused (as pre-training's held-out evaluation).
A prediction counts when it is any tail of ``(head, relation)`` in the whole KB (the filtered
setting: a film has several actors). Three groups of ``--facts`` triples each, drawn by ``--seed``:

* **dropped**: triples KG-50% removed and whose ``(head, relation)`` has no kept triple, so neither
  the head's nor any tail's description says the answer: only memorised knowledge can find it;
* **kept**: triples KG-50% keeps (their facts are in the descriptions the memory reads);
* the **relation prior** on the dropped group: the most frequent tail of the relation in the kept
  triples, the answer a model that knows the relation but not the film would give.

Reads no question of any split (the KB and the model only).
"""

from __future__ import annotations

import argparse
import json
from collections import Counter, defaultdict
from pathlib import Path

import numpy as np
import torch

from jaket.kg.corpus import Mention, MentionCorpus, collate_texts
from jaket.kg.sampling import sample_neighbors
from jaket.kg.verbalize import Phrasing
from jaket.model.jaket import JaketModel
from jaket.tasks.kgqa import kb_to_kg, read_kb
from jaket.tasks.kgqa import KGQAConfig
from jaket.tasks.kgqa import QuestionAnsweringRuns, relation_phrasing


def probe_texts(kg, triples: np.ndarray, phrasings: list[Phrasing], mask) -> MentionCorpus:
    """One text per triple, the tail's name replaced by ``mask`` (a string, or a function of the tail's
    index giving one) and linked to the tail."""
    names = [str(n) for n in kg.entity_names]
    texts, mentions = [], []
    for h, r, t in triples.tolist():
        template = phrasings[r].template
        before, _, after = template.partition("{tail}")
        head_at = before.find("{head}")
        before = before.replace("{head}", names[h])
        after = after.replace("{head}", names[h])
        fill = mask(t) if callable(mask) else mask
        text = before + fill + after
        if not text.rstrip().endswith("."):
            text = text.rstrip() + "."
        spans = [Mention(len(before), len(before) + len(fill), t)]
        if head_at >= 0:
            spans.insert(0, Mention(head_at, head_at + len(names[h]), h))
        texts.append(text)
        mentions.append(spans)
    return MentionCorpus(texts, mentions)


@torch.no_grad()
def rank_tails(model: JaketModel, kg, corpus: MentionCorpus, batch_size: int = 64) -> np.ndarray:
    """The top-10 entities the masked-entity head gives at each text's masked tail, ``(texts, 10)``,
    against the memory attached for ``kg``."""
    model.eval()
    memory = model.memory.entity_rows(torch.arange(kg.num_entities)).float()
    encoded = corpus.encode(model.language.tokenizer, max_length=48)
    empty = sample_neighbors(kg, np.zeros(1, dtype=np.int64), (), np.random.default_rng(0))
    pad_id = model.language.tokenizer.pad_token_id
    out_rows = []
    for start in range(0, len(corpus), batch_size):
        batch = collate_texts(encoded, range(start, min(start + batch_size, len(corpus))), pad_id)
        m = len(batch.mention_entity)
        out = model(batch, empty, torch.full((m,), -1, dtype=torch.long), torch.zeros(m, dtype=torch.bool))
        q = model.entity_head.query(out.hidden.float(), batch.mention_batch, batch.mention_start, batch.mention_end)
        ranked = (q.float() @ memory.T).topk(10, dim=1).indices
        tail_rows = _tail_rows(batch)
        out_rows.append(ranked[tail_rows].numpy())
    return np.concatenate(out_rows)


def _tail_rows(batch) -> torch.Tensor:
    """The last mention of each text (the masked tail)."""
    b = batch.mention_batch
    last = torch.ones_like(b, dtype=torch.bool)
    last[:-1] = b[1:] != b[:-1]
    return last.nonzero().squeeze(1)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("metaqa", type=Path)
    parser.add_argument("--model", type=Path, required=True, help="a jaket model pre-trained on the KB")
    parser.add_argument("--seed", type=int, default=0, help="the KG-50% seed (and the draw of the facts)")
    parser.add_argument("--facts", type=int, default=1000)
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args(argv)
    torch.set_grad_enabled(False)
    kg = kb_to_kg(read_kb(args.metaqa / "kb.txt"))
    runs = QuestionAnsweringRuns(kg, [], KGQAConfig(descriptions="kg"), splits=([], [], []))
    keep = runs.graph("50%", args.seed).keep
    described = runs.described("50%", args.seed)
    model = JaketModel.from_pretrained(args.model, load_memory=False, device="cpu")
    model.attach_memory(model.memory_for(described, progress=False), described)
    triples = np.asarray(kg.triples)
    tails = defaultdict(set)
    kept_pairs = set()
    for (h, r, t), k in zip(triples.tolist(), keep.tolist()):
        tails[(h, r)].add(t)
        if k:
            kept_pairs.add((h, r))
    dropped = np.array([i for i, ((h, r, _), k) in enumerate(zip(triples.tolist(), keep.tolist()))
                        if not k and (h, r) not in kept_pairs])
    kept = np.flatnonzero(keep)
    rng = np.random.default_rng(args.seed)
    phrasings = [Phrasing(*relation_phrasing(str(r), str(n))) for r, n in zip(kg.relation_ids, kg.relation_names)]
    prior = {r: Counter(triples[keep & (triples[:, 1] == r), 2].tolist()).most_common(1)[0][0]
             for r in range(kg.num_relations) if (keep & (triples[:, 1] == r)).any()}
    mask = model.language.tokenizer.mask_token
    report = {"model": str(args.model), "seed": args.seed, "candidates": kg.num_entities}
    for name, pool in (("dropped", dropped), ("kept", kept)):
        chosen = triples[np.sort(rng.choice(pool, size=min(args.facts, len(pool)), replace=False))]
        ranked = rank_tails(model, described, probe_texts(kg, chosen, phrasings, mask))
        truth = [tails[(h, r)] for h, r, _ in chosen.tolist()]
        top1 = np.mean([ranked[i, 0] in truth[i] for i in range(len(chosen))])
        top10 = np.mean([bool(set(ranked[i].tolist()) & truth[i]) for i in range(len(chosen))])
        by_relation = {}
        for r in sorted(set(chosen[:, 1].tolist())):
            rows = np.flatnonzero(chosen[:, 1] == r)
            by_relation[str(kg.relation_ids[r])] = {
                "facts": int(len(rows)), "top1": round(100 * float(np.mean([ranked[i, 0] in truth[i] for i in rows])), 1),
                "prior": round(100 * float(np.mean([prior.get(r) in truth[i] for i in rows])), 1)}
        report[name] = {"facts": int(len(chosen)), "pool": int(len(pool)), "top1": round(100 * float(top1), 1),
                        "top10": round(100 * float(top10), 1),
                        "relation_prior_top1": round(100 * float(np.mean(
                            [prior.get(int(r)) in truth[i] for i, r in enumerate(chosen[:, 1].tolist())])), 1),
                        "by_relation": by_relation}
        print(name, report[name]["top1"], report[name]["top10"], "prior", report[name]["relation_prior_top1"],
              flush=True)
    text = json.dumps(report, indent=1)
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(text + "\n", encoding="utf-8")
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
