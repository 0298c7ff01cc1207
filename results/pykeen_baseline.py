"""PyKEEN TransE and RotatE on exactly the split a ``jaket`` link-prediction run used, under the
same CPU-time budget.

The baseline for ``jaket finetune/evaluate link-prediction``. That command writes the triples it
trained and evaluated on to ``OUT/split/train.txt`` and ``OUT/split/<name>.txt`` (WN18RR format)
and records its training CPU seconds per model in ``OUT/metrics.json``
(``runs[...][i]["train_cpu_seconds"]``). This script then uses

* the same training triples (``--train``) and evaluation triples (``--eval``);
* the same candidate entities: every entity of the dataset (``--entities``, default
  ``DATA/entities.dict`` or the union of all the files given), so both rank each answer against
  the same ~41k WN18RR entities. Entities absent from the training triples keep PyKEEN's random
  initial embedding: PyKEEN cannot embed them (the ``seen`` row, triples whose two entities occur
  in training, is the like-for-like comparison; ``all`` is reported too);
* the same filter: training + evaluation + ``--filter`` files (pass the full ``valid.txt``
  as jaket filters with every evaluation file it read);
* the same budget in **process CPU seconds** (``time.process_time``: robust on a shared machine);
  training stops after the first epoch that ends past ``--seconds``; evaluation is not counted.

Everything is local: the triples come from the given files, nothing is downloaded.

    .venv/bin/python -m results.pykeen_baseline --train runs/lp/split/train.txt \\
        --eval runs/lp/split/valid.txt --filter ../shared/data/wn18rr/valid.txt \\
        --entities ../shared/data/wn18rr/entities.dict --seconds 120 --out runs/lp/pykeen.json

Prints a Markdown table and writes ``--out`` (JSON, atomically).
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np


def _lines(path: Path):
    """(line number, line) of a text file; a missing or unreadable file is one error line."""
    try:
        with path.open(encoding="utf-8") as handle:
            yield from enumerate(handle, 1)
    except OSError as error:
        raise SystemExit(f"error: {path}: {error.strerror or error}") from None
    except UnicodeDecodeError as error:
        raise SystemExit(f"error: {path}: not UTF-8 text ({error.reason})") from None


def _read(path: Path) -> np.ndarray:
    rows = []
    for line_no, line in _lines(path):
        if not line.strip():
            continue
        parts = [p.strip() for p in line.rstrip("\n").split("\t")]
        if len(parts) != 3:
            raise SystemExit(f"{path}:{line_no}: expected head<TAB>relation<TAB>tail")
        rows.append(parts)
    return np.asarray(rows, dtype=str).reshape(-1, 3)


def _read_entities(path: Path) -> list[str]:
    """``entities.dict`` (``index<TAB>id``) or one id per line."""
    ids = []
    for line_no, line in _lines(path):
        if not line.strip():
            continue
        parts = line.rstrip("\n").split("\t")
        if len(parts) > 2:
            raise SystemExit(f"{path}:{line_no}: expected an id or index<TAB>id")
        ids.append(parts[-1].strip())
    return ids


def _metrics(ranks: np.ndarray) -> dict:
    if ranks.size == 0:
        return {"mrr": 0.0, "hits@1": 0.0, "hits@3": 0.0, "hits@10": 0.0, "count": 0}
    return {"mrr": float((1.0 / ranks).mean()),
            **{f"hits@{k}": float((ranks <= k).mean()) for k in (1, 3, 10)}, "count": int(ranks.size)}


def _to_ids(rows: np.ndarray, entity_to_id: dict, relation_to_id: dict):
    """Labelled triples as a (n, 3) id tensor **in the given order**. (PyKEEN's
    ``TriplesFactory.from_labeled_triples(...).mapped_triples`` sorts them, which once paired
    each rank with another triple's seen/unseen flag.)"""
    import torch

    return torch.tensor([[entity_to_id[h], relation_to_id[r], entity_to_id[t]] for h, r, t in rows],
                        dtype=torch.long).reshape(-1, 3)


def _filtered_ranks(model, triples, all_true, batch_size: int = 32, slice_size: int = 4096):
    """Filtered realistic ranks of the true tail and head of each triple (the definition of
    ``jaket.tasks.link_prediction.run.filtered_ranks``, whose :func:`realistic_ranks` it uses), in
    small batches so memory stays bounded (PyKEEN's ``score_t`` broadcasts batch x entities x dim)."""
    import torch

    from jaket.tasks.link_prediction import realistic_ranks

    tails, heads = {}, {}
    for h, r, t in all_true.tolist():
        tails.setdefault((h, r), []).append(t)
        heads.setdefault((r, t), []).append(h)
    tail_ranks, head_ranks = [], []
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
                fr = torch.tensor([i for i, k in enumerate(known) for _ in k], dtype=torch.long)
                fc = torch.tensor([c for k in known for c in k], dtype=torch.long)
                true = scores[torch.arange(len(batch)), target].clone()
                scores[fr, fc] = -torch.inf
                scores[torch.arange(len(batch)), target] = true
                (tail_ranks if side == "tail" else head_ranks).append(realistic_ranks(scores, target).numpy())
    return (np.concatenate(tail_ranks).astype(np.float64), np.concatenate(head_ranks).astype(np.float64))


def time_evaluation(data: Path, dim: int = 384, seed: int = 0, max_eval: int | None = None,
                    pykeen_batch_size: int = 32, jaket_batch_size: int = 256, embeddings=None) -> dict:
    """The filtered evaluation of ``DATA/valid.txt`` (head and tail prediction against every
    entity of ``DATA/entities.dict``, training + valid triples filtered) by PyKEEN's
    ``RankBasedEvaluator`` and by :func:`jaket.tasks.link_prediction.run.filtered_ranks`, on the **same**
    random TransE (L2) embeddings of width ``dim`` (jaket's: the MiniLM width), so both compute the
    same ranks: their realistic MRRs must agree. Times are process CPU seconds and wall seconds.
    ``embeddings``: ``(entities (N, dim), relations (P, dim))`` to evaluate instead of random ones."""
    import torch
    from pykeen.evaluation import RankBasedEvaluator
    from pykeen.models import TransE
    from pykeen.triples import TriplesFactory

    from jaket.tasks.link_prediction import LinkScorer
    from jaket.tasks.link_prediction import filtered_ranks
    from jaket.tasks.variants import Backbone

    entity_ids = _read_entities(data / "entities.dict")
    train, valid = _read(data / "train.txt"), _read(data / "valid.txt")
    if max_eval:
        valid = valid[:max_eval]
    entity_to_id = {e: i for i, e in enumerate(entity_ids)}
    relation_to_id = {r: i for i, r in enumerate(sorted(set(train[:, 1]) | set(valid[:, 1])))}
    factory = TriplesFactory.from_labeled_triples(train, entity_to_id=entity_to_id, relation_to_id=relation_to_id)
    valid_ids = _to_ids(valid, entity_to_id, relation_to_id)
    generator = torch.Generator().manual_seed(seed)
    entities = torch.randn(len(entity_ids), dim, generator=generator)
    relations = torch.randn(len(relation_to_id), dim, generator=generator)
    if embeddings is not None:
        entities, relations = (torch.as_tensor(x, dtype=torch.float32) for x in embeddings)
        dim = entities.shape[1]
    model = TransE(triples_factory=factory, embedding_dim=dim, scoring_fct_norm=2, random_seed=seed)
    with torch.no_grad():
        model.entity_representations[0]._embeddings.weight.copy_(entities)
        model.relation_representations[0]._embeddings.weight.copy_(relations)
    model.eval()
    out = {"data": str(data), "eval_triples": int(len(valid)), "candidate_entities": len(entity_ids),
           "filter_triples": int(len(train) + len(valid)), "dim": dim, "torch_threads": torch.get_num_threads()}
    wall, cpu = time.perf_counter(), time.process_time()
    evaluator = RankBasedEvaluator(filtered=True)
    result = evaluator.evaluate(model, valid_ids, batch_size=pykeen_batch_size, use_tqdm=False,
                                additional_filter_triples=[factory.mapped_triples])
    out["pykeen"] = {"cpu_seconds": time.process_time() - cpu, "wall_seconds": time.perf_counter() - wall,
                     "batch_size": pykeen_batch_size,
                     "mrr_realistic": float(result.get_metric("both.realistic.inverse_harmonic_mean_rank")),
                     "mrr_optimistic": float(result.get_metric("both.optimistic.inverse_harmonic_mean_rank"))}
    scorer = LinkScorer(Backbone("lm", dim, None, None, None), "transe", len(relation_to_id))
    all_true = torch.cat([factory.mapped_triples, valid_ids]).numpy()
    wall, cpu = time.perf_counter(), time.process_time()
    tails, heads = filtered_ranks(scorer, entities, relations, valid_ids.numpy(), all_true, jaket_batch_size)
    ranks = np.concatenate([tails, heads])
    out["jaket"] = {"cpu_seconds": time.process_time() - cpu, "wall_seconds": time.perf_counter() - wall,
                    "batch_size": jaket_batch_size, "mrr_realistic": float((1.0 / ranks).mean())}
    out["speedup_cpu"] = out["pykeen"]["cpu_seconds"] / max(out["jaket"]["cpu_seconds"], 1e-9)
    return out


def run(train_file: Path, eval_file: Path, seconds: float, models: list[str], dim: int,
        entities_file: Path | None = None, filter_files: tuple[Path, ...] = (), max_train: int | None = None,
        max_eval: int | None = None, seed: int = 0, lr: float = 1e-3, negatives: int = 32,
        save_embeddings: Path | None = None) -> dict:
    import torch
    from pykeen.models import RotatE, TransE
    from pykeen.training import SLCWATrainingLoop
    from pykeen.triples import TriplesFactory

    torch.manual_seed(seed)
    rng = np.random.default_rng(seed)
    train = _read(train_file)
    if max_train and len(train) > max_train:
        train = train[rng.permutation(len(train))[:max_train]]
    evaluation = _read(eval_file)
    if max_eval:
        evaluation = evaluation[:max_eval]
    extra = [_read(f) for f in filter_files]
    entity_ids = set(train[:, 0]) | set(train[:, 2]) | set(evaluation[:, 0]) | set(evaluation[:, 2])
    if entities_file is not None:
        entity_ids |= set(_read_entities(entities_file))
    for rows in extra:
        entity_ids |= set(rows[:, 0]) | set(rows[:, 2])
    relation_ids = set(train[:, 1]) | set(evaluation[:, 1]) | {r for rows in extra for r in rows[:, 1]}
    entity_to_id = {e: i for i, e in enumerate(sorted(entity_ids))}
    relation_to_id = {r: i for i, r in enumerate(sorted(relation_ids))}
    factory = TriplesFactory.from_labeled_triples(train, entity_to_id=entity_to_id, relation_to_id=relation_to_id)
    eval_ids = _to_ids(evaluation, entity_to_id, relation_to_id)  # file order: ranks pair with `seen`
    all_true = torch.cat([factory.mapped_triples, eval_ids]
                         + [_to_ids(rows, entity_to_id, relation_to_id) for rows in extra])
    trained = set(train[:, 0]) | set(train[:, 2])
    seen = np.asarray([h in trained and t in trained for h, _, t in evaluation], dtype=bool)
    classes = {"transe": TransE, "rotate": RotatE}
    out = {"train_file": str(train_file), "eval_file": str(eval_file), "train_triples": int(len(train)),
           "eval_triples": int(len(evaluation)), "eval_seen_triples": int(seen.sum()),
           "candidate_entities": len(entity_to_id), "budget_cpu_seconds": seconds, "dim": dim,
           "lr": lr, "negatives_per_positive": negatives, "torch_threads": torch.get_num_threads(),
           "models": {}}
    for name in models:
        if name not in classes:
            raise SystemExit(f"error: unknown model {name!r}; choose from {', '.join(classes)}")
        model = classes[name](triples_factory=factory, embedding_dim=dim, random_seed=seed)
        optimizer = torch.optim.Adam(model.parameters(), lr=lr)
        loop = SLCWATrainingLoop(model=model, triples_factory=factory, optimizer=optimizer,
                                 negative_sampler_kwargs={"num_negs_per_pos": negatives})
        wall, cpu, epochs, losses = time.perf_counter(), time.process_time(), 0, []
        while time.process_time() - cpu < seconds:
            epochs += 1
            losses += loop.train(triples_factory=factory, num_epochs=epochs, batch_size=512,
                                 continue_training=epochs > 1, use_tqdm=False) or []
        train_cpu, train_wall = time.process_time() - cpu, time.perf_counter() - wall
        tails, heads = _filtered_ranks(model, eval_ids, all_true)
        with torch.no_grad():  # diagnostic: entities PyKEEN never saw in a positive triple can diverge
            rows = model.entity_representations[0](indices=None)
            finite = torch.isfinite(torch.view_as_real(rows) if rows.is_complex() else rows)
            finite = finite.reshape(len(rows), -1).all(dim=1)
        untrained = torch.tensor([e not in trained for e in sorted(entity_ids)])
        if save_embeddings is not None:  # numeric arrays only: np.load reads them without pickle
            relations = model.relation_representations[0](indices=None).detach()
            real = lambda x: (torch.view_as_real(x) if x.is_complex() else x).numpy()  # noqa: E731
            path = save_embeddings.with_name(f"{save_embeddings.stem}-{name}.npz")
            path.parent.mkdir(parents=True, exist_ok=True)
            np.savez(path, entities=real(rows.detach()), relations=real(relations),
                     entity_labels=np.asarray(sorted(entity_ids)), relation_labels=np.asarray(sorted(relation_ids)),
                     untrained=untrained.numpy())
        ranks = np.concatenate([tails, heads])
        both = np.concatenate([seen, seen])
        out["models"][name] = {
            "epochs": epochs, "train_cpu_seconds": train_cpu, "train_wall_seconds": train_wall,
            "all": _metrics(ranks), "seen": _metrics(ranks[both]),
            "unseen": _metrics(ranks[~both]),
            "ranks": {"tail": tails.tolist(), "head": heads.tolist()},  # per evaluation triple, in file order
            "final_loss": float(losses[-1]) if losses else None,
            "non_finite_entities": {"trained": int((~finite & ~untrained).sum()),
                                    "untrained": int((~finite & untrained).sum()),
                                    "untrained_total": int(untrained.sum())}}
    return out


def _write_json(path: Path, figures: dict) -> None:
    from jaket.atomic import write_json

    path.parent.mkdir(parents=True, exist_ok=True)
    write_json(path, figures)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, help="WN18RR-format folder (defaults for --train/--eval/--entities)")
    parser.add_argument("--train", type=Path, help="training triples (default DATA/train.txt)")
    parser.add_argument("--eval", type=Path, help="evaluation triples (default DATA/valid.txt)")
    parser.add_argument("--entities", type=Path, help="all candidate entities (default DATA/entities.dict if present)")
    parser.add_argument("--filter", type=Path, action="append", default=[],
                        help="more known-true triples to filter (repeatable)")
    parser.add_argument("--seconds", type=float, default=600.0, help="training budget per model, CPU seconds")
    parser.add_argument("--models", default="transe,rotate")
    parser.add_argument("--dim", type=int, default=200)
    parser.add_argument("--lr", type=float, default=1e-3)
    parser.add_argument("--negatives", type=int, default=32)
    parser.add_argument("--max-train", type=int)
    parser.add_argument("--max-eval", type=int)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, default=Path("runs/pykeen-baseline.json"))
    parser.add_argument("--save-embeddings", type=Path,
                        help="also write each trained model's embeddings to FILE-<model>.npz (numpy, no pickle)")
    parser.add_argument("--time-evaluation", action="store_true",
                        help="only time the filtered evaluation of DATA/valid.txt, PyKEEN's evaluator "
                             "against jaket's, on the same random TransE embeddings (needs --data)")
    args = parser.parse_args(argv)
    if args.time_evaluation:
        if args.data is None:
            parser.error("--time-evaluation needs --data DIR (train.txt, valid.txt, entities.dict)")
        figures = time_evaluation(args.data, seed=args.seed, max_eval=args.max_eval)
        _write_json(args.out, figures)
        print(f"filtered evaluation of {figures['eval_triples']} triples x 2 against "
              f"{figures['candidate_entities']} entities, {figures['torch_threads']} thread(s): PyKEEN "
              f"{figures['pykeen']['cpu_seconds']:.1f} CPU s (MRR {figures['pykeen']['mrr_realistic']:.6f}), "
              f"jaket {figures['jaket']['cpu_seconds']:.1f} CPU s (MRR {figures['jaket']['mrr_realistic']:.6f}); "
              f"results: {args.out}")
        return 0
    if args.train is None and args.data is None:
        parser.error("give --train FILE (and --eval FILE) or --data DIR")
    train = args.train or args.data / "train.txt"
    evaluation = args.eval or (args.data / "valid.txt" if args.data else None)
    if evaluation is None:
        parser.error("give --eval FILE")
    entities = args.entities
    if entities is None and args.data is not None and (args.data / "entities.dict").is_file():
        entities = args.data / "entities.dict"
    figures = run(train, evaluation, args.seconds, [m.strip() for m in args.models.split(",") if m.strip()],
                  args.dim, entities, tuple(args.filter), args.max_train, args.max_eval, args.seed,
                  args.lr, args.negatives, args.save_embeddings)
    _write_json(args.out, figures)
    print("| Model | triples | epochs | train CPU s | MRR | Hits@1 | Hits@3 | Hits@10 |")
    print("|---|---|---|---|---|---|---|---|")
    for name, m in figures["models"].items():
        for part in ("seen", "unseen", "all"):
            x = m[part]
            print(f"| PyKEEN {name} | {part} ({x['count'] // 2}) | {m['epochs']} | {m['train_cpu_seconds']:.0f} | "
                  f"{x['mrr']:.3f} | {x['hits@1']:.3f} | {x['hits@3']:.3f} | {x['hits@10']:.3f} |")
    print(f"(train {figures['train_triples']} triples; eval {figures['eval_triples']}, of which "
          f"{figures['eval_seen_triples']} have both entities in training; ranked against "
          f"{figures['candidate_entities']} entities; results: {args.out})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
