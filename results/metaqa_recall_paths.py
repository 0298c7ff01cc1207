"""Where does pre-training's masked entity prediction find its answer? (issue 66's diagnosis)::

    python -m results.metaqa_recall_paths KB_DIR --model M [--facts 600] [--out FILE.json]

The knowledge probe (:mod:`results.metaqa_recall`) asks the masked-entity head for a triple's tail
with no KG embedding fused and ranks every entity. Pre-training scores the same head differently:
the text's other mentions are fused with their KG embedding (Eq. 8-9; the head's sampled
neighbourhood may hold the answer) and the truth competes with a few sampled candidates only. This
reads the same facts (KB_DIR/kb.txt; the memory reads KG-50%'s descriptions, seed 0, or with ``--memory
full`` the whole KB's, as in pre-training) each of those ways, top-1 over all facts and over the person-valued relations (``directed_by``, ``written_by``,
``starred_actors``), kept facts and dropped ones:

* ``masked``: the probe (one mask token, nothing fused);
* ``name_visible``: the tail's name left in the text (the paper's task: linking a name it reads);
* ``fused_whole`` / ``fused_50`` / ``fused_whole_less_fact``: the head mention fused with its KG
  embedding, its neighbourhood sampled from the whole KB, from the 50% KG, from the whole KB with the
  probed triple hidden;
* ``above_128_random``: the truth scored above 128 random entities (pre-training's draw), nothing fused.

Reads no question of any split.
"""

from __future__ import annotations

import argparse
import json
from collections import defaultdict
from pathlib import Path

import numpy as np
import torch

from jaket.flags import positive_int
from jaket.kg.corpus import collate_texts
from jaket.kg.sampling import sample_neighbors
from jaket.kg.verbalize import Phrasing
from jaket.model.jaket import JaketModel
from jaket.tasks.kgqa import KGQAConfig, QuestionAnsweringRuns, kb_to_kg, read_kb, relation_phrasing
from results.metaqa_recall import _tail_rows, probe_texts

PERSONS = ("directed_by", "written_by", "starred_actors")


def _scores(model, described, corpus, fanouts, exclude=None, fuse=False) -> np.ndarray:
    """``(texts, entities)``: the head's scores at each text's last mention (the tail), the other
    mentions fused with their KG embedding when ``fuse`` (neighbourhoods sampled from ``described``
    with ``exclude(rows)`` hidden), every memory row a candidate."""
    tokenizer = model.language.tokenizer
    encoded = corpus.encode(tokenizer, max_length=48)
    memory = model.memory.entity_rows(torch.arange(described.num_entities)).float()
    rows_out = []
    for start in range(0, len(corpus), 64):
        rows = range(start, min(start + 64, len(corpus)))
        batch = collate_texts(encoded, rows, tokenizer.pad_token_id)
        m = len(batch.mention_entity)
        tail = torch.zeros(m, dtype=torch.bool)
        tail[_tail_rows(batch)] = True
        node = torch.full((m,), -1, dtype=torch.long)
        if fuse:
            hidden = exclude(np.asarray(rows)) if exclude else np.zeros(0, np.int64)
            sub = sample_neighbors(described, batch.mention_entity[~tail].numpy(), fanouts,
                                   np.random.default_rng(start), exclude_triples=hidden if len(hidden) else None)
            node[~tail] = sub.seed_local
        else:
            sub = sample_neighbors(described, np.zeros(1, dtype=np.int64), (), np.random.default_rng(0))
        out = model(batch, sub, node, ~tail & (node >= 0))
        q = model.entity_head.query(out.hidden.float(), batch.mention_batch, batch.mention_start, batch.mention_end)
        rows_out.append((q.float() @ memory.T)[tail].numpy())
    return np.concatenate(rows_out)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("kb", type=Path, help="a folder with kb.txt (MetaQA's, or results.metaqa_kb --films OUT)")
    parser.add_argument("--model", type=Path, required=True)
    parser.add_argument("--facts", type=positive_int, default=600)
    parser.add_argument("--memory", choices=("50%", "full"), default="50%",
                        help="the descriptions the memory reads: KG-50%%'s (seed 0, the probe's) or the whole KB's")
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args(argv)
    torch.set_grad_enabled(False)
    kg = kb_to_kg(read_kb(args.kb / "kb.txt"))
    runs = QuestionAnsweringRuns(kg, [], KGQAConfig(descriptions="kg"), splits=([], [], []))
    keep = runs.graph("50%", 0).keep
    described = runs.described(args.memory, 0)
    model = JaketModel.from_pretrained(args.model, load_memory=False, device="cpu")
    model.eval()
    model.attach_memory(model.memory_for(described, progress=False), described)
    fanouts = tuple(model.config.fanouts)
    mask = model.language.tokenizer.mask_token
    triples = np.asarray(kg.triples)
    tails, kept_pairs = defaultdict(set), set()
    for (h, r, t), k in zip(triples.tolist(), keep.tolist()):
        tails[(h, r)].add(t)
        if k:
            kept_pairs.add((h, r))
    pools = {"dropped": np.array([i for i, ((h, r, _), k) in enumerate(zip(triples.tolist(), keep.tolist()))
                                  if not k and (h, r) not in kept_pairs]),
             "kept": np.flatnonzero(keep)}
    phrasings = [Phrasing(*relation_phrasing(str(r), str(n))) for r, n in zip(kg.relation_ids, kg.relation_names)]
    persons = {r for r, rid in enumerate(kg.relation_ids) if str(rid) in PERSONS}
    names = [str(n) for n in kg.entity_names]
    dropped_triples = np.flatnonzero(~keep)
    rng = np.random.default_rng(0)
    report = {"model": str(args.model), "kb": str(args.kb), "memory": args.memory, "candidates": kg.num_entities}
    for group, pool in pools.items():
        index = np.sort(rng.choice(pool, size=min(args.facts, len(pool)), replace=False))
        chosen = triples[index]
        truth = [tails[(h, r)] for h, r, _ in chosen.tolist()]
        person = np.array([r in persons for _, r, _ in chosen.tolist()])
        masked = probe_texts(kg, chosen, phrasings, mask)
        visible = probe_texts(kg, chosen, phrasings, lambda t: names[t])
        ways = {"masked": _scores(model, described, masked, fanouts),
                "name_visible": _scores(model, described, visible, fanouts),
                "fused_whole": _scores(model, described, masked, fanouts, fuse=True),
                "fused_50": _scores(model, described, masked, fanouts, lambda rows: dropped_triples, fuse=True),
                "fused_whole_less_fact": _scores(model, described, masked, fanouts, lambda rows: index[rows], fuse=True)}
        result = {}
        for way, scores in ways.items():
            hit = np.array([scores[i].argmax() in truth[i] for i in range(len(chosen))])
            result[way] = {"top1": round(100 * float(hit.mean()), 1), "persons_top1": round(100 * float(hit[person].mean()), 1)}
        above = []
        for i, (h, r, t) in enumerate(chosen.tolist()):
            others = [e for e in rng.choice(kg.num_entities, size=min(178, kg.num_entities), replace=False)
                      if e not in truth[i]][:128]
            above.append(ways["masked"][i, t] > ways["masked"][i, others].max())
        above = np.array(above)
        result["above_128_random"] = {"top1": round(100 * float(above.mean()), 1),
                                      "persons_top1": round(100 * float(above[person].mean()), 1)}
        report[group] = {"facts": int(len(chosen)), "persons": int(person.sum()), **result}
        print(group, json.dumps(result), flush=True)
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(report, indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
