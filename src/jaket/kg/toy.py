"""A small deterministic KG and corpus for every part's tests.

40 entities in 4 categories (animal, plant, place, food), 5 relations, descriptions that mention
each entity's name, and 71 sentences generated from the triples with both entities marked.
"""

from __future__ import annotations

import numpy as np

from jaket.kg.corpus import Mention, MentionCorpus
from jaket.kg.graph import KnowledgeGraph

_RELATIONS = [
    ("is_a", "is a", "The head is a kind of the tail."),
    ("eats", "eats", "The head feeds on the tail."),
    ("lives_in", "lives in", "The head lives in the tail, its habitat."),
    ("grows_in", "grows in", "The head grows in the tail."),
    ("made_from", "made from", "The head is made from the tail."),
]

#: (id, name, category, short gloss, aliases)
_ENTITIES = [
    ("animal", "animal", "animal", "a living organism that moves and feeds", ["beast"]),
    ("mammal", "mammal", "animal", "a warm-blooded animal that nurses its young", []),
    ("bird", "bird", "animal", "a feathered animal that lays eggs", ["fowl"]),
    ("fish", "fish", "animal", "a cold-blooded animal that lives in water", []),
    ("dog", "dog", "animal", "a domesticated mammal that barks", ["hound"]),
    ("cat", "cat", "animal", "a small domesticated mammal that purrs", ["kitty"]),
    ("wolf", "wolf", "animal", "a wild mammal that hunts in packs", []),
    ("lion", "lion", "animal", "a large wild cat of the savanna", []),
    ("cow", "cow", "animal", "a farm mammal kept for milk", ["cattle"]),
    ("sheep", "sheep", "animal", "a farm mammal kept for wool", []),
    ("horse", "horse", "animal", "a large mammal ridden by people", []),
    ("eagle", "eagle", "animal", "a large bird of prey", []),
    ("sparrow", "sparrow", "animal", "a small brown bird", []),
    ("salmon", "salmon", "animal", "a fish that swims up rivers", []),
    ("shark", "shark", "animal", "a large predatory fish", []),
    ("plant", "plant", "plant", "a living organism that grows from the ground", []),
    ("tree", "tree", "plant", "a tall plant with a trunk", []),
    ("grass", "grass", "plant", "a low green plant of fields", []),
    ("oak", "oak", "plant", "a tree that bears acorns", []),
    ("pine", "pine", "plant", "an evergreen tree with needles", []),
    ("wheat", "wheat", "plant", "a cereal grass grown for grain", []),
    ("apple tree", "apple tree", "plant", "a fruit tree", []),
    ("seaweed", "seaweed", "plant", "a plant-like alga of the sea", ["kelp"]),
    ("place", "place", "place", "a region of the world", []),
    ("forest", "forest", "place", "a place covered with trees", ["woods"]),
    ("savanna", "savanna", "place", "a grassy place with few trees", []),
    ("farm", "farm", "place", "a place where crops and animals are raised", []),
    ("ocean", "ocean", "place", "a large body of salt water", ["sea"]),
    ("river", "river", "place", "a stream of fresh water", []),
    ("house", "house", "place", "a building where people live", ["home"]),
    ("field", "field", "place", "an open place with grass or crops", []),
    ("mountain", "mountain", "place", "a high place of rock", []),
    ("food", "food", "food", "anything eaten to live", []),
    ("meat", "meat", "food", "food made from animal flesh", []),
    ("milk", "milk", "food", "a white food drink made by mammals", []),
    ("bread", "bread", "food", "a baked food made from flour", []),
    ("flour", "flour", "food", "a food powder ground from grain", []),
    ("apple", "apple", "food", "a round fruit eaten as food", []),
    ("seed", "seed", "food", "a small food that plants grow from", []),
    ("wool", "wool", "food", "a fibre from sheep, listed with the goods", []),
]

_TRIPLES = [
    ("mammal", "is_a", "animal"), ("bird", "is_a", "animal"), ("fish", "is_a", "animal"),
    ("dog", "is_a", "mammal"), ("cat", "is_a", "mammal"), ("wolf", "is_a", "mammal"),
    ("lion", "is_a", "mammal"), ("cow", "is_a", "mammal"), ("sheep", "is_a", "mammal"),
    ("horse", "is_a", "mammal"), ("eagle", "is_a", "bird"), ("sparrow", "is_a", "bird"),
    ("salmon", "is_a", "fish"), ("shark", "is_a", "fish"), ("tree", "is_a", "plant"),
    ("grass", "is_a", "plant"), ("oak", "is_a", "tree"), ("pine", "is_a", "tree"),
    ("wheat", "is_a", "grass"), ("apple tree", "is_a", "tree"), ("seaweed", "is_a", "plant"),
    ("forest", "is_a", "place"), ("savanna", "is_a", "place"), ("farm", "is_a", "place"),
    ("ocean", "is_a", "place"), ("river", "is_a", "place"), ("house", "is_a", "place"),
    ("field", "is_a", "place"), ("mountain", "is_a", "place"), ("meat", "is_a", "food"),
    ("milk", "is_a", "food"), ("bread", "is_a", "food"), ("flour", "is_a", "food"),
    ("apple", "is_a", "food"), ("seed", "is_a", "food"),
    ("dog", "eats", "meat"), ("cat", "eats", "meat"), ("cat", "eats", "milk"),
    ("wolf", "eats", "sheep"), ("lion", "eats", "cow"), ("cow", "eats", "grass"),
    ("sheep", "eats", "grass"), ("horse", "eats", "grass"), ("eagle", "eats", "salmon"),
    ("sparrow", "eats", "seed"), ("shark", "eats", "salmon"), ("salmon", "eats", "seaweed"),
    ("dog", "lives_in", "house"), ("cat", "lives_in", "house"), ("wolf", "lives_in", "forest"),
    ("lion", "lives_in", "savanna"), ("cow", "lives_in", "farm"), ("sheep", "lives_in", "farm"),
    ("horse", "lives_in", "farm"), ("eagle", "lives_in", "mountain"),
    ("sparrow", "lives_in", "field"), ("salmon", "lives_in", "river"),
    ("shark", "lives_in", "ocean"), ("oak", "grows_in", "forest"), ("pine", "grows_in", "mountain"),
    ("grass", "grows_in", "savanna"), ("wheat", "grows_in", "field"),
    ("apple tree", "grows_in", "farm"), ("seaweed", "grows_in", "ocean"),
    ("milk", "made_from", "cow"), ("meat", "made_from", "cow"), ("bread", "made_from", "flour"),
    ("flour", "made_from", "wheat"), ("apple", "made_from", "apple tree"),
    ("wool", "made_from", "sheep"), ("seed", "made_from", "plant"),
]

_TEMPLATES = {
    "is_a": "The {h} is a kind of {t}.",
    "eats": "Every day the {h} eats {t} happily.",
    "lives_in": "A {h} usually lives in the {t}.",
    "grows_in": "You can see the {h} grow in the {t}.",
    "made_from": "People say {h} is made from {t}.",
}


def _sentence(template: str, head: tuple[str, int], tail: tuple[str, int]) -> tuple[str, list[Mention]]:
    before, rest = template.split("{h}")
    middle, after = rest.split("{t}")
    text = before + head[0] + middle + tail[0] + after
    h_start = len(before)
    t_start = h_start + len(head[0]) + len(middle)
    return text, [Mention(h_start, h_start + len(head[0]), head[1]),
                  Mention(t_start, t_start + len(tail[0]), tail[1])]


def toy_kg() -> tuple[KnowledgeGraph, MentionCorpus]:
    """The toy KG (40 entities, 4 categories, 5 relations, 71 triples) and its 71-sentence corpus.

    Each entity's description starts with its name ("dog: a domesticated mammal that barks"), so
    :func:`jaket.kg.corpus.encode_descriptions` finds the mention; the corpus has one sentence per
    triple mentioning both its head and its tail.
    """
    categories = sorted({c for _, _, c, _, _ in _ENTITIES})
    entity_index = {e[0]: i for i, e in enumerate(_ENTITIES)}
    relation_index = {r[0]: i for i, r in enumerate(_RELATIONS)}
    triples = np.array([(entity_index[h], relation_index[r], entity_index[t]) for h, r, t in _TRIPLES],
                       dtype=np.int32)
    kg = KnowledgeGraph(
        entity_ids=[e[0].replace(" ", "_") for e in _ENTITIES],
        entity_names=[e[1] for e in _ENTITIES],
        entity_descriptions=[f"{e[1]}: {e[3]}." for e in _ENTITIES],
        entity_aliases=[list(e[4]) for e in _ENTITIES],
        entity_category=np.array([categories.index(e[2]) for e in _ENTITIES], dtype=np.int32),
        category_names=categories,
        relation_ids=[r[0] for r in _RELATIONS],
        relation_names=[r[1] for r in _RELATIONS],
        relation_descriptions=[r[2] for r in _RELATIONS],
        triples=triples,
    )
    texts, mentions = [], []
    for h, r, t in _TRIPLES:
        text, ms = _sentence(_TEMPLATES[r], (_ENTITIES[entity_index[h]][1], entity_index[h]),
                             (_ENTITIES[entity_index[t]][1], entity_index[t]))
        texts.append(text)
        mentions.append(ms)
    return kg, MentionCorpus(texts, mentions)


def synthetic_kg(num_entities: int, num_triples: int, num_relations: int = 20,
                 num_categories: int = 10, exponent: float = 0.7, seed: int = 0) -> KnowledgeGraph:
    """A random KG with power-law degrees, for scale tests and benchmarks.

    Heads and tails are drawn with probability proportional to ``(rank + 1) ** -exponent`` over a
    random permutation of the entities (so hubs are spread over the index range); relations are
    uniform; no self-loops. Strings are short and derived from the index.
    """
    rng = np.random.default_rng(seed)
    weights = (np.arange(num_entities, dtype=np.float64) + 1.0) ** -exponent
    weights /= weights.sum()
    rank_to_entity = rng.permutation(num_entities)
    cumulative = np.cumsum(weights)
    cumulative[-1] = 1.0

    def draw(n: int) -> np.ndarray:
        return rank_to_entity[np.searchsorted(cumulative, rng.random(n), side="right")]

    heads = draw(num_triples)
    tails = draw(num_triples)
    loops = heads == tails
    tails[loops] = (tails[loops] + 1) % max(num_entities, 1)
    relations = rng.integers(0, num_relations, num_triples)
    triples = np.stack([heads, relations, tails], axis=1).astype(np.int32)
    categories = [f"category_{k:02d}" for k in range(num_categories)]
    entity_category = rng.integers(-1, num_categories, num_entities).astype(np.int32)
    return KnowledgeGraph(
        entity_ids=[f"E{i}" for i in range(num_entities)],
        entity_names=[f"entity {i}" for i in range(num_entities)],
        entity_descriptions=[f"entity {i} is a synthetic entity." for i in range(num_entities)],
        entity_aliases=[[] for _ in range(num_entities)],
        entity_category=entity_category,
        category_names=categories,
        relation_ids=[f"R{r}" for r in range(num_relations)],
        relation_names=[f"relation {r}" for r in range(num_relations)],
        relation_descriptions=[f"relation {r} links two synthetic entities." for r in range(num_relations)],
        triples=triples,
    )
