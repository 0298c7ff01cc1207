"""``jaket finetune entity-classification`` and ``jaket evaluate entity-classification``.

Settings come from the defaults < ``--config FILE`` (YAML, keys of :class:`EntityClassificationJob`;
``configs/finetune-entity-classification.yaml`` lists them) < ``--set key=value`` < the dedicated
flags. ``--train``/``--dev``/``--test`` give the user's split files (:mod:`jaket.tasks.splits`);
without them the labelled entities are split 20/20/60 at random per seed. ``finetune`` saves the
model of its first run to ``OUT/model`` for ``jaket predict entity-classification``.
"""

from __future__ import annotations

import argparse
import logging
import sys
from dataclasses import dataclass, field
from pathlib import Path

from pydantic import ConfigDict

from jaket.kg.io import load_kg
from jaket.overrides import add_config_flags
from jaket.tasks.cli_common import finish, float_list, start_job
from jaket.tasks.settings import EntityClassificationConfig
from jaket.tasks.splits import read_splits

logger = logging.getLogger(__name__)

@dataclass(kw_only=True)
class EntityClassificationData:
    """Where KG' and its labels come from."""

    #: a KG directory; None = the held-out part of a WordNet subset (the embedded default)
    kg: Path | None = None
    #: user split files (entity ids, or ``id<TAB>label`` rows); train and dev go together
    train: Path | None = None
    dev: Path | None = None
    test: Path | None = None
    #: the embedded default: WordNet subset size, held-out share, and the seed of both
    max_entities: int = 3000
    heldout_fraction: float = 0.3
    data_seed: int = 0

    __pydantic_config__ = ConfigDict(extra="forbid")  # an unknown key is an error, not ignored


@dataclass(kw_only=True)
class EntityClassificationJob(EntityClassificationConfig):
    """A fine-tuning (or evaluation) run: the task config plus its data.

    ``variants`` / ``seeds`` left empty mean: ``finetune`` runs ``jaket`` with a pre-trained
    model (``pretrained``, the ``--model`` folder), else ``lm+g+m``, with seed 0; ``evaluate``
    runs every setting that applies over seeds 0-4."""

    data: EntityClassificationData = field(default_factory=EntityClassificationData)
    variants: tuple[str, ...] = ()
    seeds: tuple[int, ...] = ()

    __pydantic_config__ = ConfigDict(extra="forbid")

    def check(self) -> list[tuple[str, str]]:
        problems = super().check()
        data = self.data
        if not 0 < data.heldout_fraction < 1:
            problems.append(("data.heldout_fraction", f"must be in (0, 1), got {data.heldout_fraction}"))
        if data.max_entities < 2:
            problems.append(("data.max_entities", f"must be at least 2, got {data.max_entities}"))
        given = [name for name in ("train", "dev", "test") if getattr(data, name) is not None]
        if given and data.kg is None:
            problems.append((f"data.{given[0]}", "split files name entities of a KG: give data.kg (--kg DIR)"))
        if given and (data.train is None or data.dev is None):
            missing = "train" if data.train is None else "dev"
            problems.append((f"data.{missing}", f"user splits need a {missing} file (--{missing} FILE): "
                             "train fits the model, dev selects the epoch and stops early"))
        return problems


# ----------------------------------------------------------------------------- arguments


def add_arguments(parser: argparse.ArgumentParser, evaluate: bool) -> None:
    """The entity-classification flags (beside the common ones of :mod:`jaket.tasks.cli`)."""
    defaults = EntityClassificationJob()
    data = defaults.data
    add_config_flags(parser, "YAML config (see configs/finetune-entity-classification.yaml)",
                     "--set epochs=50 --set data.kg=my_kg/")
    parser.add_argument("--kg", type=Path, metavar="DIR",
                        help="KG' folder (default: the held-out part of the WordNet subset)")
    parser.add_argument("--train", type=Path, metavar="FILE",
                        help="training entities, one id a line, or 'id<TAB>label' lines (docs/data.md); "
                             "with --dev (default: a random 20/20/60 split of the labelled entities per seed)")
    parser.add_argument("--dev", type=Path, metavar="FILE",
                        help="dev entities (select the best epoch, early stopping); same format as --train")
    parser.add_argument("--test", type=Path, metavar="FILE", help="test entities (optional); same format")
    parser.add_argument("--max-entities", type=int, metavar="N",
                        help=f"WordNet subset size of the embedded default (default {data.max_entities})")
    parser.add_argument("--heldout-fraction", type=float, metavar="F",
                        help=f"share of the WordNet subset held out as KG' (default {data.heldout_fraction})")
    parser.add_argument("--data-seed", type=int, metavar="N",
                        help=f"seed of the WordNet subset and its held-out part (default {data.data_seed})")
    parser.add_argument("--train-fractions", type=float_list, metavar="LIST",
                        help="comma list of shares of the training split to train on (default "
                             f"{','.join(f'{f:g}' for f in defaults.train_fractions)})")
    parser.add_argument("--epochs", type=int, metavar="N", help=f"training epochs (default {defaults.epochs})")
    parser.add_argument("--patience", type=int, metavar="N",
                        help="stop after N epochs without a better dev accuracy (default: no early stopping)")
    parser.add_argument("--head-lr", type=float, metavar="LR", help=f"head learning rate (default {defaults.head_lr:g})")
    parser.add_argument("--km-lr", type=float, metavar="LR",
                        help=f"knowledge-module learning rate (default {defaults.km_lr:g})")
    parser.add_argument("--dropout", type=float, metavar="P", help=f"head dropout (default {defaults.dropout:g})")
    parser.add_argument("--description-max-length", type=int, metavar="N",
                        help=f"tokens of each description read by LM1 (default {defaults.description_max_length})")
    parser.add_argument("--no-relation-memory", dest="relation_memory", action="store_const", const=False,
                        help="R = 0 in the KM (ablation; default: R from relation descriptions, as the paper)")
    parser.add_argument("--head-init", choices=("fresh", "category"),
                        help="the jaket setting's classifier: 'fresh' (the paper) or 'category' = start from the "
                             f"pre-trained category head for the categories it knows (default {defaults.head_init})")
    parser.set_defaults(seeds=None, relation_memory=None, func=run, evaluate=evaluate)


def add_predict_arguments(parser: argparse.ArgumentParser) -> None:
    """``jaket predict entity-classification`` arguments (beside ``--model`` and ``--out``)."""
    parser.add_argument("--kg", type=Path, required=True, metavar="DIR",
                        help="the KG whose entities are labelled (the fine-tuning KG or another one)")
    parser.add_argument("--entities", type=Path, metavar="FILE",
                        help="entity ids to label, one a line (split-file format; default: every entity "
                             "that had no label in fine-tuning)")
    parser.add_argument("--all", action="store_true", help="label every entity of the KG")
    parser.add_argument("--top-k", type=int, default=1, metavar="K",
                        help="also list the K most probable labels per entity (default 1: only the best)")


def predict_rows(model, args: argparse.Namespace) -> list[dict]:
    """``jaket predict entity-classification``: the flags as the library's typed arguments."""
    # --help: the model code (torch) is imported when it runs
    from jaket.tasks.entity_classifier import predict_rows as rows

    return rows(model, args.kg, args.entities, args.all, args.top_k)


#: flag destination -> config key (flags given on the command line win over the file and --set)
_FLAG_KEYS = {"kg": "data.kg", "train": "data.train", "dev": "data.dev", "test": "data.test",
              "max_entities": "data.max_entities", "heldout_fraction": "data.heldout_fraction",
              "data_seed": "data.data_seed", "train_fractions": "train_fractions", "epochs": "epochs",
              "patience": "patience", "head_lr": "head_lr", "km_lr": "km_lr", "dropout": "dropout",
              "relation_memory": "relation_memory", "model": "pretrained", "encoder": "encoder",
              "km_layers": "km_layers", "km_heads": "km_heads",
              "description_max_length": "description_max_length", "head_init": "head_init"}


# ----------------------------------------------------------------------------- running


def run(args: argparse.Namespace) -> int:
    """``jaket finetune|evaluate entity-classification``."""
    started = start_job(args, EntityClassificationJob, _FLAG_KEYS, "entity-classification")
    if started is None:  # --print-config
        return 0
    job, device, out = started
    kg, splits = load_data(job.data)
    from jaket.tasks import entity_classification as ec  # the task, loaded when it runs

    save_dir = None if args.evaluate else out / "model"
    results = ec.run_entity_classification(kg, job, out, splits=splits, save_dir=save_dir,
                                           device=device, log_with=args.log_with)
    for warning in results.get("warnings", []):
        print(f"warning: {warning}", file=sys.stderr)
    paired = ec.paired_table(results)
    return finish(args.json, results, ec.results_table(results) + ("\n\n" + paired if paired else ""), out,
                  "entity-classification", "--kg KG")


def load_data(data: EntityClassificationData):
    """``(KG', user splits or None)`` named by the job's data section."""
    if data.kg is None:
        from jaket.tasks import entity_classification as ec  # the task, loaded when it runs

        _, _, kg, info = ec.wordnet_protocol(data.max_entities, data.heldout_fraction, data.data_seed)
        logger.info("WordNet protocol: %s", info)
        return kg, None
    kg = load_kg(data.kg)
    if data.train is None:
        return kg, None
    return kg, read_splits(kg, data.train, data.dev, data.test)
