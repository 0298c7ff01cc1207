"""Fixtures of the downstream-task tests: a small categorised KG built here (so these tests do not
depend on any other part's toy data) and tiny MetaQA / FewRel files."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

# The parts every task is built on. Plain imports: a missing or broken part is an error of this
# test package, never a skip.
import jaket.kg.sources.wordnet  # noqa: F401,E402
import jaket.model.fusion  # noqa: F401,E402
import jaket.model.jaket  # noqa: F401,E402
import jaket.model.knowledge  # noqa: F401,E402
import jaket.model.language  # noqa: F401,E402
import jaket.model.memory  # noqa: F401,E402
import jaket.train.pretrain  # noqa: F401,E402

_CATEGORIES = {
    "noun.animal": ["dog", "cat", "wolf", "fox", "horse", "cow", "sheep", "goat", "lion", "tiger",
                    "bear", "mouse"],
    "noun.plant": ["oak", "pine", "rose", "tulip", "fern", "moss", "maple", "birch", "ivy", "daisy",
                   "cactus", "bamboo"],
    "noun.artifact": ["hammer", "chair", "table", "knife", "spoon", "car", "wheel", "door", "lamp",
                      "bottle", "rope", "clock"],
}
_GLOSS = {
    "noun.animal": "a living creature that breathes, moves and eats other living things",
    "noun.plant": "a living thing that grows in soil and makes food from sunlight",
    "noun.artifact": "a man-made object built by people as a tool or device",
}
_RELATIONS = [("hypernym", "hypernym", "the head is a kind of the tail"),
              ("part_holonym", "part holonym", "the head is a part of the tail"),
              ("member_meronym", "member meronym", "the tail is a member of the head")]


@pytest.fixture(scope="session")
def small_kg():
    """36 entities in 3 categories (12 each), 3 relations, a tree of hypernyms inside each
    category plus part / member edges: enough structure for every task at tiny scale."""
    from jaket.kg.graph import KnowledgeGraph

    names, descriptions, category = [], [], []
    cats = sorted(_CATEGORIES)
    for c, cat in enumerate(cats):
        for word in _CATEGORIES[cat]:
            names.append(word)
            descriptions.append(f"{word}: {_GLOSS[cat]}")
            category.append(c)
    triples = []
    for c in range(len(cats)):
        base = 12 * c
        for i in range(1, 12):
            triples.append((base + i, 0, base + (i - 1) // 2))  # hypernym tree
        for i in range(0, 12, 3):
            triples.append((base + i + 1, 1, base + i))  # part of
            triples.append((base + i, 2, base + i + 2))  # member
    return KnowledgeGraph(
        entity_ids=[f"e{i}" for i in range(len(names))], entity_names=names,
        entity_descriptions=descriptions, entity_aliases=[[] for _ in names],
        entity_category=np.asarray(category), category_names=cats,
        relation_ids=[r[0] for r in _RELATIONS], relation_names=[r[1] for r in _RELATIONS],
        relation_descriptions=[r[2] for r in _RELATIONS], triples=np.asarray(triples))


@pytest.fixture()
def metaqa_dir(tmp_path: Path) -> Path:
    (tmp_path / "1-hop").mkdir()
    (tmp_path / "2-hop").mkdir()
    (tmp_path / "kb.txt").write_text(
        "Kismet|directed_by|William Dieterle\nKismet|written_by|Edward Knoblock\n"
        "Kismet|release_year|1944\nThe Story of Louis Pasteur|directed_by|William Dieterle\n"
        "The Story of Louis Pasteur|release_year|1936\n")
    (tmp_path / "1-hop" / "qa_train.txt").write_text(
        "who directed [Kismet]\tWilliam Dieterle\n"
        "which films did [William Dieterle] direct\tKismet|The Story of Louis Pasteur\n"
        "when was [Unknown Film] released\t1999\n")
    (tmp_path / "2-hop" / "qa_train.txt").write_text(
        "when were the films directed by the director of [Kismet] released\t1944|1936\n")
    return tmp_path


@pytest.fixture()
def fewrel_file(tmp_path: Path) -> Path:
    """6 relations x 8 instances in FewRel's JSON format."""
    rng = np.random.default_rng(0)
    data = {}
    words = ["alpha", "beta", "gamma", "delta", "river", "city", "team", "singer"]
    for r in range(6):
        items = []
        for k in range(8):
            tokens = [words[(r + k + j) % len(words)] for j in range(6)] + [f"rel{r}", "."]
            h, t = int(rng.integers(0, 2)), int(rng.integers(3, 5))
            items.append({"tokens": tokens, "h": [tokens[h], f"Q{h}", [[h]]], "t": [tokens[t], f"Q{t}", [[t]]]})
        data[f"P{r}"] = items
    path = tmp_path / "fewrel.json"
    path.write_text(json.dumps(data))
    (tmp_path / "pid2name.json").write_text(json.dumps({"P0": ["zero", "the zeroth relation"]}))
    return path


@pytest.fixture(scope="session")
def tiny_jaket_dir(tiny_bert_dir, tmp_path_factory) -> Path:
    """A `JaketModel` folder (``save_pretrained``) on the tiny BERT, with a KM whose weights are
    recognisably not a fresh initialisation (every KM parameter is shifted by +0.5), so a test
    can tell that a task really fine-tunes from the saved knowledge module."""
    import torch

    from jaket.model.jaket import JaketConfig, JaketModel

    torch.manual_seed(0)
    model = JaketModel(JaketConfig(encoder=str(tiny_bert_dir), km_heads=4, fanouts=(3, 3),
                                   description_max_length=16, num_categories=3, num_relations=3))
    with torch.no_grad():
        for parameter in model.knowledge.parameters():
            parameter.add_(0.5)
    out = tmp_path_factory.mktemp("tiny-jaket") / "model"
    model.save_pretrained(out, save_memory=False)
    return out


@pytest.fixture()
def metaqa_splits_dir(tmp_path: Path) -> Path:
    """A MetaQA-format folder with a dev and a test split: 12 films, 4 directors, 6 years, 3 genres;
    1-hop questions (director, year, films of a director) and 2-hop ones (years of a director's films)."""
    root = tmp_path / "metaqa"
    (root / "1-hop").mkdir(parents=True)
    (root / "2-hop").mkdir()
    kb, director_of, year_of = [], {}, {}
    for i in range(12):
        film, director, year, genre = f"Film {i}", f"Director {i % 4}", str(1990 + i % 6), ["Drama", "Comedy", "Horror"][i % 3]
        director_of[film], year_of[film] = director, year
        kb += [f"{film}|directed_by|{director}", f"{film}|release_year|{year}", f"{film}|has_genre|{genre}"]
    (root / "kb.txt").write_text("\n".join(kb) + "\n")
    films_of = {d: sorted(f for f, x in director_of.items() if x == d) for d in set(director_of.values())}

    def one_hop(films):
        lines = [f"who directed [{f}]\t{director_of[f]}" for f in films]
        lines += [f"when was [{f}] released\t{year_of[f]}" for f in films]
        return lines

    dev = one_hop([f"Film {i}" for i in range(9)]) + [f"which films did [{d}] direct\t{'|'.join(fs)}"
                                                       for d, fs in sorted(films_of.items())]
    (root / "1-hop" / "qa_dev.txt").write_text("\n".join(dev) + "\n")
    (root / "1-hop" / "qa_test.txt").write_text("\n".join(one_hop([f"Film {i}" for i in range(9, 12)])) + "\n")
    two = [f"when were the films directed by [{d}] released\t{'|'.join(sorted({year_of[f] for f in fs}))}"
           for d, fs in sorted(films_of.items())]
    (root / "2-hop" / "qa_dev.txt").write_text("\n".join(two[:3]) + "\n")
    (root / "2-hop" / "qa_test.txt").write_text(two[3] + "\n")
    return root
