"""tasks.entity_homonym_negatives: the other senses of an entity's words as masked-entity negatives."""

import numpy as np
import pytest

from jaket.train.tasks import entity_candidates, homonym_index


@pytest.fixture
def kg(make_kg):
    """Three entities named "bank" (in two spellings), one of them also called "depository" as the
    sixth entity is, and two others linked to the first two."""
    return make_kg(["bank", "bank", "Bank", "river", "money", "depository"],
                   aliases=[[], ["depository"], [], [], [], []], triples=[(0, 0, 3), (1, 0, 4)])


def test_homonyms_share_a_name_or_alias(kg):
    indptr, homonyms = homonym_index(kg)
    rows = [homonyms[indptr[e]:indptr[e + 1]].tolist() for e in range(kg.num_entities)]
    assert rows == [[1, 2], [0, 2, 5], [0, 1], [], [], [1]]


def test_candidates_draw_homonyms_in_their_columns_only(kg):
    table = homonym_index(kg)
    candidates, valid = entity_candidates(kg, np.asarray([0, 3, 5]), hard=1, random=3,
                                          rng=np.random.default_rng(0), homonyms=table, homonym_count=6)
    assert candidates.shape == valid.shape == (3, 1 + 1 + 6 + 3)
    block, ok = candidates[:, 2:8], valid[:, 2:8]
    assert set(block[0]) <= {1, 2} and ok[0].all()
    assert not ok[1].any()  # "river" has no homonym: those columns are padding
    assert set(block[2]) == {1} and ok[2].all()
    without, _ = entity_candidates(kg, np.asarray([0]), hard=1, random=3, rng=np.random.default_rng(0))
    assert without.shape == (1, 5)
