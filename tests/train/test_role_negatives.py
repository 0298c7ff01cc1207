"""tasks.entity_role_negatives: entities of the same kind (playing a relation role of the true one) as
masked-entity negatives, e.g. the other directors of a director."""

import numpy as np
import pytest

from jaket.train.tasks import entity_candidates, role_index


@pytest.fixture
def kg(make_kg):
    """Films 0-2, directors 3-4, actors 5-7, a year 8; directed_by (0) and starred (1): every film is
    directed, films 0 and 1 star actors, entity 9 plays no role."""
    return make_kg(["Kismet", "Casablanca", "Vertigo", "Dieterle", "Curtiz", "Dietrich", "Bogart", "Stewart",
                    "1944", "lonely"],
                   triples=[(0, 0, 3), (1, 0, 4), (2, 0, 4), (0, 1, 5), (1, 1, 6), (2, 2, 8), (1, 1, 5)],
                   relations=("directed_by", "starred", "released"))


def test_the_role_index_lists_each_entity_roles_and_each_role_pool(kg):
    role_indptr, roles, pool_indptr, pool = role_index(kg)
    roles_of = [roles[role_indptr[e]:role_indptr[e + 1]].tolist() for e in range(kg.num_entities)]
    pools = [pool[pool_indptr[q]:pool_indptr[q + 1]].tolist() for q in range(2 * kg.num_relations)]
    # role 2r: a head of relation r, 2r + 1: a tail of it
    assert roles_of == [[0, 2], [0, 2], [0, 4], [1], [1], [3], [3], [], [5], []]
    assert pools == [[0, 1, 2], [3, 4], [0, 1], [5, 6], [2], [8]]


def test_role_negatives_are_entities_of_the_same_role_in_their_columns_only(kg):
    index = role_index(kg)
    candidates, valid = entity_candidates(kg, np.asarray([3, 1, 9]), hard=1, random=2,
                                          rng=np.random.default_rng(0), roles=index, role_count=8)
    assert candidates.shape == valid.shape == (3, 1 + 1 + 8 + 2)
    block, ok = candidates[:, 2:10], valid[:, 2:10]
    assert set(block[0][ok[0]]) == {4}  # the other director; drawing Dieterle himself is invalid
    assert not ok[0][block[0] == 3].any()
    assert set(block[1][ok[1]]) <= {0, 2} and ok[1].any()  # other films (directed, or starring actors)
    assert not ok[2].any()  # an entity with no triple has no role: padding


def test_no_role_negatives_draws_nothing_and_changes_no_candidate(kg):
    entities = np.asarray([0, 3, 5])
    before, valid_before = entity_candidates(kg, entities, hard=2, random=4, rng=np.random.default_rng(7))
    after, valid_after = entity_candidates(kg, entities, hard=2, random=4, rng=np.random.default_rng(7),
                                           roles=role_index(kg), role_count=0)
    assert np.array_equal(before, after) and np.array_equal(valid_before, valid_after)
    with pytest.raises(ValueError, match="role index"):
        entity_candidates(kg, entities, hard=2, random=4, rng=np.random.default_rng(7), role_count=3)


def test_a_pretraining_batch_carries_the_role_negatives_of_each_removed_mention(make_trainer, tmp_path):
    trainer = make_trainer(tmp_path, "tasks.entity_role_negatives=4")
    kg = trainer.data.kg
    role_indptr, roles, pool_indptr, pool = role_index(kg)
    drawn = 0
    for position in range(6):
        batch = trainer.sample_batch(position)
        candidates, valid = batch.entity_candidates, batch.entity_valid
        assert candidates.shape[1] == 1 + 2 + 4 + 8  # truth, hard, role, random (tiny config)
        for row, ok in zip(np.asarray(candidates), np.asarray(valid)):
            mine = roles[role_indptr[row[0]]:role_indptr[row[0] + 1]]
            same_kind = set().union(*(pool[pool_indptr[q]:pool_indptr[q + 1]].tolist() for q in mine))
            assert set(row[3:7][ok[3:7]].tolist()) <= same_kind - {row[0]}
            drawn += int(ok[3:7].sum())
    assert drawn > 0
