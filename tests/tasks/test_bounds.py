"""The ranges of every task job's settings, said as one table (jaket.tasks.settings.Bound)."""

from __future__ import annotations

import math
from dataclasses import dataclass

import pytest

import dataclasses

from jaket.tasks.registry import TASKS
from jaket.tasks.settings import (AT_LEAST_ONE, FRACTION, NOT_NEGATIVE, POSITIVE, PROBABILITY, VARIANTS, Bound,
                                  DataSection, VariantConfig, VariantError, bound_problems, split_problems,
                                  variant_problems)


@pytest.mark.parametrize("bound,inside,outside,words", [
    (AT_LEAST_ONE, [1, 7], [0, -3], "must be at least 1"),
    (POSITIVE, [1e-9, 2.0], [0.0, -1.0], "must be positive"),
    (NOT_NEGATIVE, [0, 5], [-1], "must be 0 or more"),
    (FRACTION, [0.01, 0.99], [0.0, 1.0, 1.5], "must be in (0, 1)"),
    (PROBABILITY, [0.0, 0.5], [1.0, -0.1], "must be in [0, 1)"),
    (Bound(0, 0.5), [0.0, 0.49], [0.5], "must be in [0, 0.5)"),
    (Bound(2, text="a training episode needs at least 2 relations"), [2], [1],
     "a training episode needs at least 2 relations"),
])
def test_a_value_outside_its_bound_is_one_line_with_the_value(bound, inside, outside, words):
    assert all(bound.problem(value) is None for value in inside)
    for value in outside:
        assert bound.problem(value) == f"{words}, got {value}"


def test_unset_is_no_problem_and_nan_or_infinity_is_outside_every_bound():
    assert AT_LEAST_ONE.problem(None) is None
    for bound in (POSITIVE, NOT_NEGATIVE, FRACTION, Bound(0, text="must be finite and not negative")):
        assert bound.problem(math.nan) is not None
    assert Bound(0, text="must be finite and not negative").problem(math.inf) == \
        "must be finite and not negative, got inf"


def test_bound_problems_reads_the_fields_and_names_them_after_the_prefix():
    @dataclass
    class Data:
        share: float = 1.5
        entities: int = 1
        patience: int | None = None

    problems = bound_problems(Data(), {"share": FRACTION, "entities": Bound(2), "patience": AT_LEAST_ONE}, "data.")
    assert problems == [("data.share", "must be in (0, 1), got 1.5"), ("data.entities", "must be at least 2, got 1")]
    assert bound_problems(Data(share=0.5, entities=3), {"share": FRACTION, "entities": Bound(2)}) == []


def test_a_split_is_three_non_negative_fractions_summing_to_one():
    assert split_problems((0.2, 0.2, 0.6), "train, dev, test") == []
    for split in [(0.5, 0.5), (0.5, 0.6, -0.1), (0.3, 0.3, 0.3)]:
        assert split_problems(split, "train, dev, test") == [
            ("split", f"three non-negative fractions summing to 1 (train, dev, test), got {list(split)}")]


@pytest.mark.parametrize("name", sorted(TASKS))
def test_every_data_section_says_its_own_ranges_and_refuses_an_unknown_key(name):
    """Each task job's ``data`` is a DataSection: its ``bounds`` name its own fields, a value outside one is
    a ``data.KEY`` problem of the job's check, and an unknown key is refused by the type check."""
    from pydantic import TypeAdapter, ValidationError

    job_type = TASKS[name].job
    data_type = {f.name: f for f in dataclasses.fields(job_type)}["data"].default_factory
    assert issubclass(data_type, DataSection)
    fields = {f.name for f in dataclasses.fields(data_type)}
    assert set(data_type.bounds) <= fields, f"{data_type.__name__}.bounds names a key it does not have"
    with pytest.raises(ValidationError, match="unexpected|extra"):
        TypeAdapter(data_type).validate_python({"no_such_key": 1})
    for key, bound in data_type.bounds.items():
        bad = bound.low - 1 if not bound.low_open else bound.low
        data = dataclasses.replace(data_type(), **{key: bad})
        job = dataclasses.replace(job_type(), data=data)
        assert (f"data.{key}", bound.problem(bad)) in job.check()


def test_a_variant_outside_the_five_or_outside_the_task_is_one_line_naming_them():
    assert variant_problems(("lm", "jaket")) == []
    assert variant_problems(("bert",)) == [("variants", f"unknown variant 'bert'; choose from {', '.join(VARIANTS)}")]
    assert variant_problems(("gnn", "lm"), ("lm",), "reads no text; this task runs lm") == [
        ("variants", "variant 'gnn' reads no text; this task runs lm")]
    with pytest.raises(VariantError) as raised:  # a setting built in Python says the same line
        VariantConfig(variant="bert")
    assert str(raised.value) == f"unknown variant 'bert'; choose from {', '.join(VARIANTS)}"
