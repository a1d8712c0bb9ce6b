"""Kubernetes resource quantities, read the way k8s.io/apimachinery's ParseQuantity reads them.

Every count the API server hands us (pod requests and limits, node capacity and allocatable,
DRA capacities and counters) is a quantity: `"2k"`, `"1e0"`, `"1Ki"`, `"1000m"` and `"2000"`
are all valid, and a real API server stores a node advertising 1,000 slots as `"1k"`. The
parser follows apimachinery v0.35 step by step (parseQuantityString, the suffix table, the
round-up to nano units, BinarySI's int64 cap, the canonical form and the original text kept
where Go keeps it), so `canonical()` is what the API server stores and `count()` is
`Quantity.Value()`, the integer the scheduler counts with (rounded up).

Bounded, unlike Go: a text over 64 characters or an exponent beyond +/-64 is refused with
`QuantityError` rather than computed with thousand-digit numbers (Go would accept them).
Errors are coded (`quantity.*`, see app.domain.coded): the English catalog words them as
apimachinery does ("quantities must match the regular expression").
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from typing import Any, Literal

from app.domain.coded import Coded, Param

Format = Literal["DecimalSI", "BinarySI", "DecimalExponent"]

MAX_TEXT_CHARS = 64
MAX_EXPONENT = 64
INT64_MAX = 2**63 - 1
_DECIMAL_SUFFIXES = {
    "n": -9,
    "u": -6,
    "m": -3,
    "": 0,
    "k": 3,
    "M": 6,
    "G": 9,
    "T": 12,
    "P": 15,
    "E": 18,
}
_DECIMAL_BY_EXPONENT = {exponent: suffix for suffix, exponent in _DECIMAL_SUFFIXES.items()}
_BINARY_SUFFIXES = {"Ki": 10, "Mi": 20, "Gi": 30, "Ti": 40, "Pi": 50, "Ei": 60}
_BINARY_BY_POWER = {exponent // 10: suffix for suffix, exponent in _BINARY_SUFFIXES.items()}
_SUFFIX_CHARS = frozenset("eEinumkKMGTP")
_DIGITS = frozenset("0123456789")
_NANO = 10**9


class QuantityError(ValueError):
    """A value that is not a Kubernetes quantity (or one too large to count with)."""

    code = "not-a-quantity"  # the reason an object set aside for it shows

    def __init__(self, value: object, reason: str, *, field: str = "", **params: Param) -> None:
        self.reason = Coded(f"quantity.{reason}", **params)
        self.message = Coded(
            "quantity.invalid-at" if field else "quantity.invalid",
            field=field,
            value=repr(value),
            reason=self.reason,
        )
        super().__init__(self.message)
        self.value = value
        self.field = field


@dataclass(frozen=True, slots=True)
class Quantity:
    """An exact quantity, its format and the text Go keeps as its string form (if any)."""

    amount: Fraction
    format: Format
    kept_text: str | None = None

    def count(self) -> int:
        """Quantity.Value(): the amount rounded up (away from zero) to an integer."""
        if self.amount < 0:
            return self.amount.numerator // self.amount.denominator
        return -((-self.amount.numerator) // self.amount.denominator)

    @property
    def is_integer(self) -> bool:
        return self.amount.denominator == 1

    def canonical(self) -> str:
        """Quantity.String(): what the API server stores for this value."""
        if self.kept_text is not None:
            return self.kept_text
        if self.amount == 0:
            return "0"
        form = self.format
        if form == "BinarySI" and (-1024 < self.amount < 1024 or not self.is_integer):
            form = "DecimalSI"
        if form == "BinarySI":
            return _base1024_text(self.amount.numerator)
        number, exponent = _base10_parts(self.amount)
        if form == "DecimalExponent":
            return number if exponent == 0 else f"{number}e{exponent}"
        return number + _DECIMAL_BY_EXPONENT.get(exponent, "")


def parse_quantity(value: object, *, field: str = "") -> Quantity:
    """A quantity from what a manifest holds: a string, or a JSON number."""
    text = _text_of(value, field)
    if len(text) > MAX_TEXT_CHARS:
        raise QuantityError(value, "too-long", field=field, limit=MAX_TEXT_CHARS)
    if not text:
        raise QuantityError(value, "format", field=field)
    if text == "0":
        return Quantity(Fraction(0), "DecimalSI", "0")
    negative, mantissa, num, denom, suffix = _split(text, value, field)
    base, exponent, form = _interpret(suffix, value, field)
    kept = _kept_text(text, num, denom, base=base, exponent=exponent, form=form)
    digits = num + denom
    amount = Fraction(int(digits), 10 ** len(denom)) if mantissa else Fraction(0)
    amount *= Fraction(base) ** exponent
    if negative:
        amount = -amount
    if amount != 0:
        amount = _round_up_to_nano(amount)
    if form == "BinarySI" and abs(amount) > INT64_MAX:
        amount = Fraction(INT64_MAX if amount > 0 else -INT64_MAX)
    if form == "BinarySI" and 0 < amount < 1:
        form = "DecimalSI"
    return Quantity(amount, form, kept)


def quantity_count(value: object, *, field: str = "") -> int:
    """The integer a scheduler counts for this quantity (Value(), never below 0).

    Raises QuantityError for text that is no quantity and for counts beyond int64.
    """
    count = parse_quantity(value, field=field).count()
    if count > INT64_MAX:
        raise QuantityError(value, "beyond-int64", field=field)
    return max(count, 0)


def canonical_quantity(value: object, *, field: str = "") -> str:
    """The string the API server stores for this quantity."""
    return parse_quantity(value, field=field).canonical()


def _text_of(value: object, field: str) -> str:
    if isinstance(value, bool) or value is None:
        raise QuantityError(value, "type", field=field)
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if value != value or value in (float("inf"), float("-inf")):
            raise QuantityError(value, "not-finite", field=field)
        return repr(value)  # the JSON text Python writes for it
    if isinstance(value, str):
        return value.strip()
    raise QuantityError(value, "type", field=field)


def _split(text: str, value: object, field: str) -> tuple[bool, bool, str, str, str]:
    """parseQuantityString: sign, whether digits follow, integer digits, fraction, suffix."""
    pos, end = 0, len(text)
    negative = text[0] == "-"
    if text[0] in "+-":
        pos = 1
    while pos < end and text[pos] == "0":
        pos += 1
    if pos >= end:
        return negative, False, "0", "", ""
    start = pos
    while pos < end and text[pos] in _DIGITS:
        pos += 1
    num = text[start:pos] or "0"
    denom = ""
    if pos < end and text[pos] == ".":
        pos += 1
        start = pos
        while pos < end and text[pos] in _DIGITS:
            pos += 1
        denom = text[start:pos]
    suffix_start = pos
    while pos < end and text[pos] in _SUFFIX_CHARS:
        pos += 1
    if pos < end and text[pos] in "+-":
        pos += 1
    while pos < end and text[pos] in _DIGITS:
        pos += 1
    if pos < end:
        raise QuantityError(value, "format", field=field)
    return negative, True, num, denom, text[suffix_start:]


def _interpret(suffix: str, value: object, field: str) -> tuple[int, int, Format]:
    if suffix in _DECIMAL_SUFFIXES:
        return 10, _DECIMAL_SUFFIXES[suffix], "DecimalSI"
    if suffix in _BINARY_SUFFIXES:
        return 2, _BINARY_SUFFIXES[suffix], "BinarySI"
    if len(suffix) > 1 and suffix[0] in "eE":
        rest = suffix[1:]
        body = rest[1:] if rest[0] in "+-" else rest
        if body and body.isdigit() and body.isascii():
            exponent = int(rest)
            if abs(exponent) > MAX_EXPONENT:
                raise QuantityError(value, "exponent", field=field, limit=MAX_EXPONENT)
            return 10, exponent, "DecimalExponent"
    raise QuantityError(value, "suffix", field=field)


def _kept_text(
    text: str, num: str, denom: str, *, base: int, exponent: int, form: Format
) -> str | None:
    """The input text Go keeps as the string form (its fast path; only for canonical-ish input)."""
    if form == "BinarySI":
        if denom or len(num) + exponent * 3 // 10 + 1 > 15:
            return None
        value = int(num)
        return text if value & 7 and (value << exponent) <= INT64_MAX else None
    if len(num) + len(denom) > 18:
        return None
    scale = exponent - len(denom)
    shifted = num + denom
    if scale < -9 or scale % 3 or shifted.endswith("000") or shifted[0] == "0":
        return None
    return text


def _round_up_to_nano(amount: Fraction) -> Fraction:
    scaled = amount * _NANO
    magnitude = -((-abs(scaled.numerator)) // scaled.denominator)
    return Fraction(magnitude if amount > 0 else -magnitude, _NANO)


def _base10_parts(amount: Fraction) -> tuple[str, int]:
    """Digits and a power of ten that is a multiple of 3 (AsCanonicalBytes)."""
    digits, exponent = amount.numerator * (_NANO // amount.denominator), -9
    if digits == 0:
        return "0", 0
    while digits % 10 == 0:
        digits //= 10
        exponent += 1
    while exponent % 3:
        digits *= 10
        exponent -= 1
    return str(digits), exponent


def _base1024_text(value: int) -> str:
    power = 0
    while value % 1024 == 0 and value != 0:
        value //= 1024
        power += 1
    return f"{value}{_BINARY_BY_POWER.get(power, '')}"


def as_count(value: Any, *, field: str = "") -> int:
    """quantity_count() for callers that hold a manifest value of unknown type."""
    return quantity_count(value, field=field)
