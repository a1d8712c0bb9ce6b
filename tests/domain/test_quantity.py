"""Kubernetes quantities: literal cases (agreeing with apimachinery v1.35.4, see the
differential tier) and Hypothesis invariants over generated quantities."""

from __future__ import annotations

import math
from fractions import Fraction

import pytest
from hypothesis import given
from hypothesis import strategies as st

from app.domain.quantity import (
    MAX_TEXT_CHARS,
    QuantityError,
    canonical_quantity,
    parse_quantity,
    quantity_count,
)
from tests.upstream import refused_saying


@pytest.mark.parametrize(
    ("text", "count", "stored"),
    [
        ("2000", 2000, "2k"),
        ("2k", 2000, "2k"),
        ("1k", 1000, "1k"),
        ("1e0", 1, "1e0"),
        ("1e3", 1000, "1e3"),
        ("1e1", 10, "10"),
        ("1Ki", 1024, "1Ki"),
        ("1000m", 1, "1"),
        ("500m", 1, "500m"),
        ("1.5", 2, "1500m"),
        ("0.1n", 1, "1n"),
        ("1536", 1536, "1536"),
        ("1.5Ki", 1536, "1536"),
        ("0.5Ki", 512, "512"),
        ("8Ki", 8192, "8Ki"),
        ("100Mi", 104857600, "100Mi"),
        ("80Gi", 85899345920, "80Gi"),
        (" 4 ", 4, "4"),
        (4, 4, "4"),
        (2.0, 2, "2"),
        ("0", 0, "0"),
    ],
)
def test_quantity_reads_and_stores_like_the_api_server(
    text: object, count: int, stored: str
) -> None:
    assert quantity_count(text) == count
    assert canonical_quantity(text) == stored


@pytest.mark.parametrize(
    "text", ["", "x", "1x", "1 k", "1kk", "1e", "1.2.3", "--1", "1Ki2", True, None, [1]]
)
def test_quantity_refuses_what_is_no_quantity(text: object) -> None:
    with pytest.raises(QuantityError):
        parse_quantity(text, field="status.allocatable.nvidia.com/gpu")


def test_quantity_error_names_field_and_value() -> None:
    with refused_saying(QuantityError, r"^spec.x: 'abc' is not a valid quantity"):
        quantity_count("abc", field="spec.x")


def test_quantity_refuses_absurd_sizes_quickly() -> None:
    with refused_saying(QuantityError, "longer than"):
        parse_quantity("9" * 5000)
    with refused_saying(QuantityError, "exponent"):
        parse_quantity("1e5000")
    with refused_saying(QuantityError, "int64"):
        quantity_count("1e30")


def test_quantity_negative_counts_as_zero_and_rounds_away_from_zero() -> None:
    assert parse_quantity("-1500m").count() == -2
    assert quantity_count("-3") == 0


_SUFFIX = st.sampled_from(["", "n", "u", "m", "k", "M", "G", "Ki", "Mi", "Gi", "e3", "e-2", "E2"])
_TEXT = st.builds(
    lambda sign, whole, frac, suffix: f"{sign}{whole}{frac}{suffix}",
    st.sampled_from(["", "+", "-"]),
    st.integers(0, 10**9).map(str),
    st.one_of(st.just(""), st.integers(0, 999).map(lambda n: f".{n}")),
    _SUFFIX,
)


@given(_TEXT)
def test_quantity_canonical_form_reads_back_the_same(text: str) -> None:
    quantity = parse_quantity(text)
    again = parse_quantity(quantity.canonical())
    assert again.amount == quantity.amount
    assert again.canonical() == quantity.canonical()
    assert len(quantity.canonical()) <= MAX_TEXT_CHARS


@given(_TEXT)
def test_quantity_count_is_the_amount_rounded_away_from_zero(text: str) -> None:
    quantity = parse_quantity(text)
    whole = math.ceil(quantity.amount) if quantity.amount >= 0 else math.floor(quantity.amount)
    assert quantity.count() == whole
    assert quantity.amount * 10**9 == int(quantity.amount * 10**9)  # nano precision


@given(st.integers(0, 10**12))
def test_quantity_every_spelling_of_an_integer_counts_the_same(n: int) -> None:
    spellings = [str(n), f"{n}000m", f"{n}e0", f"{n * 1000}e-3", f"{n}.000", f"0{n}"]
    if n % 1000 == 0:
        spellings.append(f"{n // 1000}k")
    if n % 1024 == 0:
        spellings.append(f"{n // 1024}Ki")
    for text in spellings:
        assert quantity_count(text) == n, text
        assert parse_quantity(text).amount == Fraction(n)
