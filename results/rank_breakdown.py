"""Split a link-prediction run's per-triple ranks by whether the triple's reverse is a training
triple (WN18RR's symmetric relations answer those from the training graph alone).

    python -m results.rank_breakdown runs/lp-train-encoder/pykeen-1500.json \
        --train runs/lp-train-encoder/lmgm-1500/split/train.txt \
        --eval runs/lp-train-encoder/lmgm-1500/split/valid.txt

Reads the ``ranks`` (``{"tail": [...], "head": [...]}``, evaluation-file order) of each model in a
``results/pykeen_baseline.py`` output and prints MRR / Hits@1 / Hits@10 per group.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np

from results.pykeen_baseline import _metrics, _read


def breakdown(ranks: dict, train, evaluation) -> dict:
    """MRR, Hits@1 and Hits@10 (head and tail ranks together) of the evaluation triples whose
    reverse ``(t, r, h)`` is a training triple, and of the others."""
    tails, heads = np.asarray(ranks["tail"], dtype=float), np.asarray(ranks["head"], dtype=float)
    if not len(tails) == len(heads) == len(evaluation):
        raise SystemExit(f"error: {len(tails)} ranks for {len(evaluation)} evaluation triples")
    known = {tuple(row) for row in train}
    reverse = np.asarray([(t, r, h) in known for h, r, t in evaluation], dtype=bool)
    out = {}
    for name, mask in (("reverse_in_train", reverse), ("other", ~reverse)):
        m = _metrics(np.concatenate([tails[mask], heads[mask]]))
        out[name] = {"triples": int(mask.sum()),
                     **({k: m[k] for k in ("mrr", "hits@1", "hits@10")} if mask.any() else {})}
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("results", type=Path, help="output JSON of results/pykeen_baseline.py")
    parser.add_argument("--train", type=Path, required=True)
    parser.add_argument("--eval", type=Path, required=True)
    args = parser.parse_args(argv)
    try:
        figures = json.loads(args.results.read_text(encoding="utf-8"))
    except OSError as error:
        raise SystemExit(f"error: {args.results}: {error.strerror}") from None
    except ValueError as error:
        raise SystemExit(f"{args.results}:{getattr(error, 'lineno', 1)}: not JSON ({error})") from None
    if not isinstance(figures, dict) or not isinstance(figures.get("models"), dict):
        raise SystemExit(f"{args.results}:1: expected the output of results/pykeen_baseline.py (no 'models')")
    train, evaluation = _read(args.train), _read(args.eval)
    for name, model in figures["models"].items():
        if "ranks" not in model:
            raise SystemExit(f"error: {args.results}: model {name!r} has no per-triple ranks "
                             "(written before the baseline saved them)")
        if len(model["ranks"]["tail"]) != len(evaluation):
            raise SystemExit(f"error: {args.results}: model {name!r} has {len(model['ranks']['tail'])} ranks, "
                             f"{args.eval} has {len(evaluation)} triples (not the run's evaluation file?)")
        for group, m in breakdown(model["ranks"], train, evaluation).items():
            scores = f"MRR {m['mrr']:.3f}, Hits@1 {m['hits@1']:.3f}, Hits@10 {m['hits@10']:.3f}" if "mrr" in m else "-"
            print(f"{name}\t{group}\t{m['triples']} triples\t{scores}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
