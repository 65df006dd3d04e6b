"""Volatile expressions: a new value at every evaluation (``gen_random_uuid()``, ``random()``,
a sequence's ``nextval``). They are for ad hoc queries and writes; a view refuses them, as
Materialize refuses its non-deterministic functions, since maintaining one would change rows
that no input changed."""

from __future__ import annotations

import random
import time
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from changeflow.compute.expr import Expr, _typed
from changeflow.compute.types import FLOAT8, TIMESTAMPTZ, UUID, VOID
from changeflow.errors import EvalError


@dataclass(frozen=True)
class Volatile(Expr):
    """An expression with a new value at every evaluation (each row its own)."""


@dataclass(frozen=True)
class RandomUuid(Volatile):
    """``gen_random_uuid()``: a version 4 UUID, a new one per row."""

    def __post_init__(self) -> None:
        _typed(self, UUID, False)

    def eval(self, row: tuple[Any, ...], now: int | None = None) -> Any:
        return uuid.uuid4()

    def __str__(self) -> str:
        return "gen_random_uuid()"


@dataclass(frozen=True)
class RandomDouble(Volatile):
    """``random()``: a double precision in [0, 1), a new one per row."""

    def __post_init__(self) -> None:
        _typed(self, FLOAT8, False)

    def eval(self, row: tuple[Any, ...], now: int | None = None) -> Any:
        return random.random()

    def __str__(self) -> str:
        return "random()"


@dataclass(frozen=True)
class ClockTimestamp(Volatile):
    """``clock_timestamp()``: the time at each evaluation."""

    def __post_init__(self) -> None:
        _typed(self, TIMESTAMPTZ, False)

    def eval(self, row: tuple[Any, ...], now: int | None = None) -> Any:
        return datetime.now(UTC)

    def __str__(self) -> str:
        return "clock_timestamp()"


def volatile(e: Expr) -> bool:
    """Does ``e`` contain a volatile expression (so each copy of a row gets its own value)?"""
    return isinstance(e, Volatile) or any(volatile(c) for c in e.children())


def copies(row: tuple[Any, ...], count: int) -> list[tuple[tuple[Any, ...], int]]:
    """A row of multiplicity ``count`` as that many rows of one (``-1`` each if negative), for
    a volatile expression to give each its own value."""
    one = 1 if count > 0 else -1
    return [(row, one)] * abs(count)


@dataclass(frozen=True)
class Sleep(Volatile):
    """``pg_sleep(seconds)``: waits, then gives void; a cancel of the statement ends the wait
    (57014)."""

    seconds: Expr

    def __post_init__(self) -> None:
        _typed(self, VOID, self.seconds.nullable)

    def children(self) -> tuple[Expr, ...]:
        return (self.seconds,)

    def eval(self, row: tuple[Any, ...], now: int | None = None) -> Any:
        from changeflow.adapter.advisory_locks import CANCEL

        seconds = self.seconds.eval(row, now)
        if seconds is None:
            return None
        cancel, end = CANCEL.get(), time.monotonic() + max(float(seconds), 0.0)
        while (left := end - time.monotonic()) > 0:
            if cancel is not None and cancel.wait(min(left, 0.05)):
                raise EvalError("canceling statement due to user request", sqlstate="57014")
            if cancel is None:
                time.sleep(min(left, 0.05))
        return ""

    def __str__(self) -> str:
        return f"pg_sleep({self.seconds})"
