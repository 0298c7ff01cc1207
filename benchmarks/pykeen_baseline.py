"""PyKEEN TransE and RotatE on a WN18RR-format split under a fixed CPU time budget.

The baseline for ``jaket finetune link-prediction``: the same training file, the same evaluation
file, the same filtered ranking (training + evaluation triples filtered, head and tail averaged),
and the same wall-clock budget on this machine (training stops after the first epoch that ends
past ``--seconds``; evaluation is not counted).

    .venv/bin/python -m benchmarks.pykeen_baseline --data ../shared/data/wn18rr --seconds 600
    .venv/bin/python -m benchmarks.pykeen_baseline --data DIR --eval DIR/valid.txt --max-train 5000 --seconds 60

Prints a Markdown table and writes ``--out`` (JSON).
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from pathlib import Path

import numpy as np


def _read(path: Path) -> np.ndarray:
    rows = []
    with path.open(encoding="utf-8") as handle:
        for line_no, line in enumerate(handle, 1):
            if not line.strip():
                continue
            parts = line.rstrip("\n").split("\t")
            if len(parts) != 3:
                raise SystemExit(f"{path}:{line_no}: expected head<TAB>relation<TAB>tail")
            rows.append(parts)
    return np.asarray(rows, dtype=str).reshape(-1, 3)


def _filtered_ranks(model, triples, all_true, batch_size: int = 32, slice_size: int = 4096) -> np.ndarray:
    """Filtered 1-based ranks of the true tail and head of each triple (the same definition as
    ``jaket.tasks.link_prediction.filtered_ranks``), in small batches so memory stays bounded."""
    import torch

    tails, heads = {}, {}
    for h, r, t in all_true.tolist():
        tails.setdefault((h, r), []).append(t)
        heads.setdefault((r, t), []).append(h)
    ranks = []
    model.eval()
    with torch.no_grad():
        for begin in range(0, len(triples), batch_size):
            batch = triples[begin:begin + batch_size]
            for side in ("tail", "head"):
                if side == "tail":
                    scores = model.score_t(batch[:, :2], slice_size=slice_size)
                    target = batch[:, 2]
                    known = [tails[(h, r)] for h, r in batch[:, :2].tolist()]
                else:
                    scores = model.score_h(batch[:, 1:], slice_size=slice_size)
                    target = batch[:, 0]
                    known = [heads[(r, t)] for r, t in batch[:, 1:].tolist()]
                rows = torch.arange(len(batch))
                true = scores[rows, target].clone()
                fr = torch.tensor([i for i, k in enumerate(known) for _ in k], dtype=torch.long)
                fc = torch.tensor([c for k in known for c in k], dtype=torch.long)
                scores[fr, fc] = -torch.inf
                ranks.append((1 + (scores > true[:, None]).sum(-1)).numpy())
    return np.concatenate(ranks).astype(np.float64)


def run(data: Path, eval_file: Path, seconds: float, models: list[str], dim: int, max_train: int | None,
        max_eval: int | None, seed: int) -> dict:
    import torch
    from pykeen.models import RotatE, TransE
    from pykeen.training import SLCWATrainingLoop
    from pykeen.triples import TriplesFactory

    torch.manual_seed(seed)
    rng = np.random.default_rng(seed)
    train = _read(data / "train.txt")
    if max_train and len(train) > max_train:
        train = train[rng.permutation(len(train))[:max_train]]
    evaluation = _read(eval_file)
    known = set(train[:, 0]) | set(train[:, 2])
    relations = set(train[:, 1])
    inside = np.asarray([h in known and t in known and r in relations for h, r, t in evaluation], dtype=bool)
    skipped = int((~inside).sum())
    evaluation = evaluation[inside]
    if max_eval:
        evaluation = evaluation[:max_eval]
    factory = TriplesFactory.from_labeled_triples(train)
    eval_factory = TriplesFactory.from_labeled_triples(
        evaluation, entity_to_id=factory.entity_to_id, relation_to_id=factory.relation_to_id)
    classes = {"transe": TransE, "rotate": RotatE}
    out = {"train_triples": int(len(train)), "eval_triples": int(len(evaluation)),
           "eval_skipped_unknown_entity": skipped, "budget_seconds": seconds, "models": {}}
    for name in models:
        model = classes[name](triples_factory=factory, embedding_dim=dim, random_seed=seed)
        optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
        loop = SLCWATrainingLoop(model=model, triples_factory=factory, optimizer=optimizer,
                                 negative_sampler_kwargs={"num_negs_per_pos": 32})
        started, epochs, losses = time.perf_counter(), 0, []
        while time.perf_counter() - started < seconds:
            epochs += 1
            losses += loop.train(triples_factory=factory, num_epochs=epochs, batch_size=512,
                                 continue_training=epochs > 1, use_tqdm=False) or []
        train_seconds = time.perf_counter() - started
        ranks = _filtered_ranks(model, eval_factory.mapped_triples,
                                torch.cat([factory.mapped_triples, eval_factory.mapped_triples]))
        out["models"][name] = {
            "epochs": epochs, "train_seconds": train_seconds,
            "mrr": float((1.0 / ranks).mean()),
            **{f"hits@{k}": float((ranks <= k).mean()) for k in (1, 3, 10)},
            "final_loss": float(losses[-1]) if losses else None}
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, required=True, help="WN18RR-format folder with train.txt")
    parser.add_argument("--eval", type=Path, help="evaluation file (default DATA/valid.txt)")
    parser.add_argument("--seconds", type=float, default=600.0, help="training budget per model")
    parser.add_argument("--models", default="transe,rotate")
    parser.add_argument("--dim", type=int, default=200)
    parser.add_argument("--max-train", type=int)
    parser.add_argument("--max-eval", type=int)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, default=Path("runs/pykeen-baseline.json"))
    args = parser.parse_args(argv)
    figures = run(args.data, args.eval or args.data / "valid.txt", args.seconds,
                  [m.strip() for m in args.models.split(",") if m.strip()], args.dim, args.max_train,
                  args.max_eval, args.seed)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=args.out.parent, suffix=".tmp")
    with os.fdopen(fd, "w") as handle:
        json.dump(figures, handle, indent=2)
    os.replace(tmp, args.out)
    print("| Model | epochs | train s | MRR | Hits@1 | Hits@3 | Hits@10 |")
    print("|---|---|---|---|---|---|---|")
    for name, m in figures["models"].items():
        print(f"| PyKEEN {name} | {m['epochs']} | {m['train_seconds']:.0f} | {m['mrr']:.3f} | "
              f"{m['hits@1']:.3f} | {m['hits@3']:.3f} | {m['hits@10']:.3f} |")
    print(f"(train {figures['train_triples']} triples, eval {figures['eval_triples']}, "
          f"{figures['eval_skipped_unknown_entity']} eval triples skipped: entity unseen in training)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
