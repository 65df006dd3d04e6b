"""A sequence's options as PostgreSQL has them (START, INCREMENT, MINVALUE, MAXVALUE, CYCLE,
CACHE), read from CREATE SEQUENCE and ALTER SEQUENCE, checked as PostgreSQL checks them
(22023), kept in the sequence's catalog item and shown in pg_sequence; and the values a
block of ``count`` hands out after the last one reserved (:func:`block`)."""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, replace
from typing import Any

from sqlglot import exp

from changeflow.errors import EvalError, PlanError

BOUNDS = {"smallint": (-(2**15), 2**15 - 1), "integer": (-(2**31), 2**31 - 1)}
BIGINT = (-(2**63), 2**63 - 1)
TYPE_OIDS = {"smallint": 21, "integer": 23, "bigint": 20}


@dataclass(frozen=True)
class SequenceOptions:
    """A sequence's options (its values' type among them)."""

    start: int = 1
    increment: int = 1
    min: int = 1
    max: int = BIGINT[1]
    cycle: bool = False
    cache: int = 1
    type: str = "bigint"

    @staticmethod
    def of(options: dict[str, Any]) -> SequenceOptions:
        """The options an item keeps (PostgreSQL's defaults where it keeps none)."""
        kept = options.get("sequence") or {}
        return SequenceOptions(**kept)

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @property
    def first(self) -> int:
        """The value before the first one handed out (what a restart leaves as the last)."""
        return self.start - self.increment

    def check(self, value: int, what: str, name: str) -> None:
        """22003 if ``value`` is outside the sequence's bounds."""
        if not self.min <= value <= self.max:
            raise PlanError(
                f'{what}: value {value} is out of bounds for sequence "{name}" '
                f"({self.min}..{self.max})",
                sqlstate="22003",
            )


_TYPES = {
    exp.DataType.Type.SMALLINT: "smallint",
    exp.DataType.Type.INT: "integer",
    exp.DataType.Type.BIGINT: "bigint",
}


def value_type(node: exp.Expression | None, old: str) -> str:
    """The values' type ``AS type`` names (``old`` without one); 22023 for any but the three
    integer types, as PostgreSQL refuses them."""
    if node is None:
        return old
    found = _TYPES.get(node.this) if isinstance(node, exp.DataType) else None
    if found is None:
        raise PlanError("sequence type must be smallint, integer, or bigint", sqlstate="22023")
    return found


def with_clauses(
    props: exp.SequenceProperties | None,
    text: str,
    old: SequenceOptions | None,
    as_type: exp.Expression | None = None,
) -> SequenceOptions:
    """The options of CREATE SEQUENCE's clauses (``old`` None) or of ALTER SEQUENCE's over
    ``old`` (``text`` the clauses' text: sqlglot drops a leading NO; ``as_type`` its AS type);
    22023 where PostgreSQL refuses them. A new type moves a bound that was the old type's
    limit to the new type's, as PostgreSQL's ALTER SEQUENCE … AS does."""
    args = props.args if props is not None else {}
    words = {
        ("NO " if no else "") + word.upper()
        for no, word in re.findall(r"\b(NO\s+)?(CYCLE|MINVALUE|MAXVALUE)\b", text, re.I)
    }
    base = old or SequenceOptions()
    kind = value_type(as_type, base.type)
    low, high = BOUNDS.get(kind, BIGINT)
    was_low, was_high = BOUNDS.get(base.type, BIGINT)
    moved = old is not None and kind != base.type

    def number(key: str) -> int | None:
        node = args.get(key)
        if node is None:
            return None
        negative = isinstance(node, exp.Neg)
        value = int((node.this if negative else node).name)
        return -value if negative else value

    increment = number("increment")
    if increment == 0:
        raise PlanError("INCREMENT must not be zero", sqlstate="22023")
    increment = increment if increment is not None else base.increment
    up = increment > 0
    given_min, given_max = number("minvalue"), number("maxvalue")
    keep_min = old is not None and not (moved and base.min == was_low)
    keep_max = old is not None and not (moved and base.max == was_high)
    new_min = given_min if given_min is not None else (base.min if keep_min else None)
    new_max = given_max if given_max is not None else (base.max if keep_max else None)
    if "NO MINVALUE" in words or new_min is None:
        new_min = 1 if up else low
    if "NO MAXVALUE" in words or new_max is None:
        new_max = high if up else -1
    for word, value in (("MAXVALUE", new_max), ("MINVALUE", new_min)):
        if not low <= value <= high:
            raise PlanError(
                f"{word} ({value}) is out of range for sequence data type {kind}",
                sqlstate="22023",
            )
    if new_min >= new_max:
        raise PlanError(
            f"MINVALUE ({new_min}) must be less than MAXVALUE ({new_max})", sqlstate="22023"
        )
    start = number("start")
    if start is None:
        start = base.start if old else (new_min if up else new_max)
    if start < new_min:
        raise PlanError(
            f"START value ({start}) cannot be less than MINVALUE ({new_min})", sqlstate="22023"
        )
    if start > new_max:
        raise PlanError(
            f"START value ({start}) cannot be greater than MAXVALUE ({new_max})",
            sqlstate="22023",
        )
    cache = number("cache")
    if cache is not None and cache < 1:
        raise PlanError(f"CACHE ({cache}) must be greater than zero", sqlstate="22023")
    cycle = "CYCLE" in words or (base.cycle and "NO CYCLE" not in words)
    return replace(
        base,
        start=start,
        increment=increment,
        min=new_min,
        max=new_max,
        cycle=cycle,
        cache=cache or base.cache,
        type=kind,
    )


def sequence_info(o: SequenceOptions) -> tuple[Any, ...]:
    """The options as ``information_schema.sequences`` shows them, from ``data_type`` on."""
    precision = {"smallint": 16, "integer": 32}.get(o.type, 64)
    numbers = (o.start, o.min, o.max, o.increment)
    return (o.type, precision, 2, 0, *map(str, numbers), "YES" if o.cycle else "NO")


def restart_value(options: SequenceOptions, value: int | None) -> int:
    """ALTER SEQUENCE … RESTART [WITH value]'s next value (the start by default), checked."""
    value = options.start if value is None else value
    if value < options.min:
        raise PlanError(
            f"RESTART value ({value}) cannot be less than MINVALUE ({options.min})",
            sqlstate="22023",
        )
    if value > options.max:
        raise PlanError(
            f"RESTART value ({value}) cannot be greater than MAXVALUE ({options.max})",
            sqlstate="22023",
        )
    return value


def block(options: SequenceOptions, last: int, count: int, name: str) -> list[int]:
    """The next ``count`` values (fewer where a bound without CYCLE ends them) after ``last``;
    2200H if there is not even one."""
    out: list[int] = []
    value = last
    for _ in range(count):
        value += options.increment
        if not options.min <= value <= options.max:
            if not options.cycle:
                break
            value = options.min if options.increment > 0 else options.max
        out.append(value)
    if not out:
        which, bound = (
            ("maximum", options.max) if options.increment > 0 else ("minimum", options.min)
        )
        raise EvalError(
            f'nextval: reached {which} value of sequence "{name}" ({bound})', sqlstate="2200H"
        )
    return out
