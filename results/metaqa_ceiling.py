"""The Hits@1 a KGQA run can reach at most, per KG setting and hop count: the share of the test
questions with at least one gold answer among its candidates (every entity within ``k`` hops of the
topic in the KG the setting gives, the first ``max_candidates``), as ``jaket evaluate kgqa`` builds
them (:class:`jaket.tasks.kgqa.run.QuestionAnsweringRuns`). No model: a question whose answers
KG-50% dropped out of reach is a miss for every model, whatever pre-training put in it::

    python -m results.metaqa_ceiling ../shared/data/metaqa [--seeds 0 1 2] [--out FILE.json]
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np

from jaket.tasks.kgqa import load_data
from jaket.tasks.kgqa import KGQAConfig, KGQAData
from jaket.tasks.kgqa import QuestionAnsweringRuns


def ceilings(metaqa: Path, seeds: list[int]) -> dict:
    """``{setting: {"1-hop": [per seed], "2-hop": [...], "all": [...]}}`` in percent."""
    config = KGQAConfig()
    kg, questions, splits, _ = load_data(KGQAData(metaqa=str(metaqa)))
    runs = QuestionAnsweringRuns(kg, questions, config, splits=splits)
    test = [questions[i] for i in splits[2]]
    found: dict = {}
    for setting in ("full", "50%"):
        for seed in seeds:
            graph = runs.graph(setting, seed)
            reach = {1: [], 2: []}
            for q in test:
                candidates = set(graph.candidates(q.topic, q.hops, config.max_candidates).tolist())
                reach[q.hops].append(any(a in candidates for a in q.answers))
            row = found.setdefault(setting, {"1-hop": [], "2-hop": [], "all": []})
            row["1-hop"].append(100 * float(np.mean(reach[1])))
            row["2-hop"].append(100 * float(np.mean(reach[2])))
            row["all"].append(100 * float(np.mean(reach[1] + reach[2])))
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("metaqa", type=Path)
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--out", type=Path)
    args = parser.parse_args(argv)
    found = ceilings(args.metaqa, args.seeds)
    for setting, row in found.items():
        print(f"KG-{setting.capitalize() if setting == 'full' else setting}: " + ", ".join(
            f"{hop} {np.mean(values):.1f} (seeds {', '.join(f'{v:.1f}' for v in values)})" for hop, values in row.items()))
    if args.out:
        args.out.write_text(json.dumps(found, indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
