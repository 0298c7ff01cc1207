"""Entity classification's data: KG' and its labels as the job names them (:func:`load_data`:
the user's KG and split files, or the held-out part of a WordNet subset), and the split of each
run (:func:`make_split`: the user's, its training part subsampled, or a random 20/20/60 split of
the labelled entities per seed)."""

from __future__ import annotations

import logging
from dataclasses import dataclass

import numpy as np

from jaket.kg.io import load_kg
from jaket.tasks.entity_classification.job import EntityClassificationConfig, EntityClassificationData
from jaket.tasks.heldout import wordnet_protocol
from jaket.tasks.splits import read_entity_list, read_splits
from jaket.tasks.settings import builtin_wordnet_notice
from jaket.tasks.entity_classification.job import TASK

logger = logging.getLogger(__name__)


@dataclass
class Split:
    train: np.ndarray
    dev: np.ndarray
    test: np.ndarray


def split_entities(labels: np.ndarray, seed: int, fractions=(0.2, 0.2, 0.6),
                   train_fraction: float = 1.0) -> Split:
    """The transductive 20/20/60 split of the labelled entities (``labels >= 0``); then keep
    ``train_fraction`` of the training part (at least one entity). Disjoint by construction."""
    if not (0 < train_fraction <= 1):
        raise ValueError(f"train_fraction must be in (0, 1], got {train_fraction}")
    if abs(sum(fractions) - 1.0) > 1e-6:
        raise ValueError(f"split fractions must sum to 1, got {fractions}")
    labelled = np.flatnonzero(np.asarray(labels) >= 0)
    rng = np.random.default_rng(seed)
    order = rng.permutation(labelled)
    n_train = int(round(fractions[0] * len(order)))
    n_dev = int(round(fractions[1] * len(order)))
    train, dev, test = order[:n_train], order[n_train:n_train + n_dev], order[n_train + n_dev:]
    if train_fraction < 1:
        keep = max(1, int(round(train_fraction * len(train))))
        train = train[:keep]  # order is already random; a prefix is a random subset
    return Split(np.sort(train), np.sort(dev), np.sort(test))


def subsample_train(split: Split, train_fraction: float, seed: int) -> Split:
    """``split`` with ``train_fraction`` of its training entities (a seeded random subset, at least
    one entity; dev and test unchanged)."""
    if not (0 < train_fraction <= 1):
        raise ValueError(f"train_fraction must be in (0, 1], got {train_fraction}")
    train = np.asarray(split.train, dtype=np.int64)
    if train_fraction < 1:
        keep = max(1, int(round(train_fraction * len(train))))
        train = np.random.default_rng([seed, 1]).permutation(train)[:keep]
    return Split(np.sort(train), np.sort(np.asarray(split.dev, dtype=np.int64)),
                 np.sort(np.asarray(split.test, dtype=np.int64)))


def make_split(labels: np.ndarray, seed: int, config: EntityClassificationConfig, train_fraction: float,
               fixed: Split | None = None) -> Split:
    """The split of one run: the user's ``fixed`` split (its training part subsampled), else the
    random 20/20/60 split of the labelled entities (:func:`split_entities`)."""
    if fixed is not None:
        return subsample_train(fixed, train_fraction, seed)
    return split_entities(labels, seed, config.split, train_fraction)


def identical_fractions(labels: np.ndarray, config: EntityClassificationConfig, fixed: Split | None = None) -> list[str]:
    """Warnings for requested training fractions that select the same training set (on a small
    KG, 20% and 5% of a handful of entities both round to the same count; the same count is the
    same set, a prefix of one random order), so their runs would be identical."""
    seed = config.seeds[0] if config.seeds else 0
    sizes: dict[int, list[float]] = {}
    total = 0
    for fraction in config.train_fractions:
        split = make_split(labels, seed, config, fraction, fixed)
        total = max(total, len(split.train))
        sizes.setdefault(len(split.train), []).append(fraction)
    return [f"training fractions {', '.join(f'{f:g}' for f in fractions)} all select the same {size} training "
            f"entit{'y' if size == 1 else 'ies'}: their runs are identical (too few labelled entities for "
            f"these fractions; use a larger KG or fewer fractions)"
            for size, fractions in sizes.items() if len(fractions) > 1]


def load_data(data: EntityClassificationData):
    """``(KG', user splits or None)`` named by the job's data section."""
    if data.kg is None:
        builtin_wordnet_notice(logger, TASK, f"the held-out part of a {data.max_entities}-synset "
                               "subset", "--kg DIR")
        _, _, kg, info = wordnet_protocol(data.max_entities, data.heldout_fraction, data.data_seed)
        logger.info("WordNet protocol: %s", info)
        return kg, None
    kg = load_kg(data.kg)
    if data.train is None:
        return kg, None
    return kg, read_splits(kg, data.train, data.dev, data.test)


def read_inputs(job) -> tuple:
    """What the spec reads before any model code loads (:func:`jaket.tasks.spec.read_then_run`): the
    job's data section (:func:`load_data`)."""
    return load_data(job.data)


def read_prediction_inputs(kg_path, entities=None, all_entities: bool = False):
    """``jaket predict entity-classification``'s inputs, read and checked before the model is
    loaded: the KG folder and the entities to label (``None``: the default, those without a label in
    fine-tuning, which only the model knows)."""
    kg = load_kg(kg_path)
    if entities is not None:
        return kg, read_entity_list(entities, kg)
    return kg, (np.arange(kg.num_entities) if all_entities else None)
