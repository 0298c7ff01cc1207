"""The reference data: no WN18RR evaluation triple may stay in the pre-training KG."""

import numpy as np
import pytest

from jaket.kg.sources.wordnet import full_wordnet_kg, load_wordnet_data
from jaket.tasks.reference import SYMMETRIC, WN18RR_OF_WORDNET, evaluation_triples_mask
from jaket.tasks.report import paired_difference


def _offset_of(wordnet):
    inverse = {}
    for (offset, pos), index in wordnet.offset_index.items():
        inverse.setdefault(index, f"{offset:08d}")
    return inverse


def _write(folder, name, rows):
    (folder / name).write_text("".join(f"{h}\t{r}\t{t}\n" for h, r, t in rows), encoding="utf-8")


def test_only_wn18rr_training_triples_stay_between_wn18rr_entities(tmp_path):
    kg = full_wordnet_kg()
    wordnet = load_wordnet_data()
    offset = _offset_of(wordnet)
    rel = {r: i for i, r in enumerate(kg.relation_ids)}
    hyper = kg.triples[kg.triples[:, 1] == rel["hypernym"]][:40]
    drf = kg.triples[kg.triples[:, 1] == rel["derivationally_related_form"]][:4]
    antonym = kg.triples[kg.triples[:, 1] == rel["antonym"]][:1]
    name = {k: v[0] for k, v in WN18RR_OF_WORDNET.items()}
    train = [(offset[h], name["hypernym"], offset[t]) for h, _, t in hyper[:30]]
    valid = [(offset[h], name["hypernym"], offset[t]) for h, _, t in hyper[30:]]
    # a symmetric relation: both directions in train keeps it, one direction only drops it
    a, b = drf[0, 0], drf[0, 2]
    train += [(offset[a], name["derivationally_related_form"], offset[b]),
              (offset[b], name["derivationally_related_form"], offset[a])]
    c, d = drf[1, 0], drf[1, 2]
    train.append((offset[c], name["derivationally_related_form"], offset[d]))
    # the antonym pair's entities are WN18RR entities, but WN18RR has no antonym relation
    e, f = antonym[0, 0], antonym[0, 2]
    train += [(offset[e], name["hypernym"], offset[e]), (offset[f], name["hypernym"], offset[f])]
    _write(tmp_path, "train.txt", train)
    _write(tmp_path, "valid.txt", valid)
    mask, report = evaluation_triples_mask(kg, tmp_path)
    index = {tuple(t): i for i, t in enumerate(kg.triples.tolist())}
    for h, r, t in hyper[:30].tolist():
        assert not mask[index[(h, r, t)]]
    for h, r, t in hyper[30:].tolist():  # the valid triples are dropped
        assert mask[index[(h, r, t)]]
    assert not mask[index[tuple(drf[0].tolist())]]
    assert mask[index[tuple(drf[1].tolist())]]
    assert not mask[index[tuple(antonym[0].tolist())]]
    assert report["dropped_not_in_wn18rr_train"] == int(mask.sum()) >= 11
    # nothing outside the WN18RR entities is touched
    marked = np.zeros(kg.num_entities, dtype=bool)
    for h, _, t in train + valid:
        for pos in "nvar":
            if (int(h), pos) in wordnet.offset_index:
                marked[wordnet.offset_index[(int(h), pos)]] = True
            if (int(t), pos) in wordnet.offset_index:
                marked[wordnet.offset_index[(int(t), pos)]] = True
    assert (marked[kg.triples[mask, 0]] & marked[kg.triples[mask, 2]]).all()


def test_real_wn18rr_valid_triples_are_not_in_the_pretraining_kg(shared_data):
    kg = full_wordnet_kg()
    mask, _ = evaluation_triples_mask(kg, shared_data / "wn18rr")
    kept = kg.triples[~mask]
    wordnet = load_wordnet_data()
    # every kept WordNet triple written as WN18RR would write it (both directions when symmetric)
    present = set()
    for h, r, t in kept.tolist():
        if kg.relation_ids[r] in WN18RR_OF_WORDNET:
            name, backwards = WN18RR_OF_WORDNET[kg.relation_ids[r]]
            present.add((t, name, h) if backwards else (h, name, t))
            if name in SYMMETRIC:
                present.add((t, name, h))
    train = {tuple(line.split("\t")) for line in
             (shared_data / "wn18rr" / "train.txt").read_text().splitlines()}
    checked = 0
    for line in (shared_data / "wn18rr" / "valid.txt").read_text().splitlines():
        h, r, t = line.split("\t")
        if (h, r, t) in train:
            continue
        for ph in "nvar":
            for pt in "nvar":
                a, b = wordnet.offset_index.get((int(h), ph)), wordnet.offset_index.get((int(t), pt))
                if a is not None and b is not None:
                    assert (a, r, b) not in present, line
                    checked += 1
    assert checked >= 3000


def test_paired_difference_interval():
    d = paired_difference([0.5, 0.6, 0.7], [0.4, 0.5, 0.5])
    assert d["values"] == pytest.approx([0.1, 0.1, 0.2])
    assert d["mean"] == pytest.approx(0.4 / 3)
    # t(0.975, 2) = 4.303; std of (0.1, 0.1, 0.2) = 0.0577
    assert d["ci_high"] - d["mean"] == pytest.approx(4.303 * 0.057735 / 3 ** 0.5, rel=1e-3)
    assert np.isnan(paired_difference([0.5], [0.4])["ci_low"])
