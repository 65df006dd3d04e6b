"""Character functions (PostgreSQL's): ``ascii``, ``chr``, ``octet_length``, ``bit_length``,
``translate``, ``to_hex``, ``quote_ident``/``quote_literal``/``quote_nullable`` and ``format``,
each defined once, on Python values and on Spark."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from changeflow.compute.functions.base import (
    F,
    Function,
    _args,
    _sig,
    _simple,
    fail,
    in_process,
)
from changeflow.compute.functions.keywords import QUOTED
from changeflow.compute.functions.overloads import Overloads
from changeflow.compute.functions.text import _constant
from changeflow.compute.scalars import output_text
from changeflow.compute.types import BYTEA, INT4, INT8, NULLTYPE, TEXT, SqlType
from changeflow.errors import EvalError, PlanError

if TYPE_CHECKING:
    from pyspark.sql import Column

    from changeflow.compute.functions import Func
    from changeflow.compute.spark_expr import ExprCompiler


def _ascii(s: str) -> int:
    return ord(s[0]) if s else 0


def _chr(n: int) -> str:
    """The character of code point ``n`` (UTF-8): not NUL, not a surrogate, not negative."""
    if n < 0:
        raise EvalError("character number must be positive", sqlstate="22023")
    if n == 0:
        raise EvalError("null character not permitted", sqlstate="54000")
    if n > 0x10FFFF:
        raise EvalError(f"requested character too large for encoding: {n}", sqlstate="54000")
    if 0xD800 <= n <= 0xDFFF:
        raise EvalError(f"requested character not valid for encoding: {n}", sqlstate="54000")
    return chr(n)


def _spark_chr(cc: ExprCompiler, e: Func) -> Column:
    (n,) = _args(cc, e)
    return (
        F.when(n < 0, fail("character number must be positive", "22023"))
        .when(n == 0, fail("null character not permitted", "54000"))
        .when(n > 0x10FFFF, fail("requested character too large for encoding", "54000"))
        .when(
            (n >= 0xD800) & (n <= 0xDFFF),
            fail("requested character not valid for encoding", "54000"),
        )
        .otherwise(F.format_string("%c", n.cast("int")))
    )


def _translate(s: str, source: str, target: str) -> str:
    """Each character of ``source`` in ``s`` replaced by the one at its place in ``target``,
    or removed where ``target`` is shorter (the first place of a repeated one counts)."""
    table: dict[int, int | None] = {}
    for i, ch in enumerate(source):
        table.setdefault(ord(ch), ord(target[i]) if i < len(target) else None)
    return s.translate(table)


def _to_hex(arg: tuple[int | None, SqlType]) -> str | None:
    """A number in hexadecimal; a negative one as its two's complement of 64 bits (a bigint)
    or 32 (a smaller integer). Given its type, so not strict: NULL for NULL."""
    n, kind = arg
    if n is None:
        return None
    return format(n % 2 ** (64 if kind == INT8 else 32), "x")


def _spark_translate(cc: ExprCompiler, e: Func) -> Column:
    source, target = _constant(e, 1, "characters to replace"), _constant(e, 2, "replacements")
    return F.translate(cc.compile(e.args[0]), source, target)


def _spark_to_hex(cc: ExprCompiler, e: Func) -> Column:
    (n,) = _args(cc, e)
    if e.args[0].type != INT8:
        n = F.when(n < 0, n.cast("bigint") + 2**32).otherwise(n.cast("bigint"))
    return F.lower(F.hex(n))


# PostgreSQL's to_hex(integer) and to_hex(bigint): a smallint or a NULL fits both (42725)
_HEX = Overloads("to_hex", (((INT4,), TEXT), ((INT8,), TEXT)))


def quote_ident(s: str) -> str:
    """``s`` as an identifier: as it is if it needs no quotes (lower-case letters, digits,
    ``_``, not starting with a digit, and not a keyword PostgreSQL reserves in any way), else
    in double quotes, inner ones doubled."""
    plain = s != "" and (s[0].islower() or s[0] == "_") and all(
        c.islower() or c.isdigit() or c == "_" for c in s
    ) and s.isascii() and s not in QUOTED  # fmt: skip
    return s if plain else '"' + s.replace('"', '""') + '"'


def _quote_literal(s: str) -> str:
    """``s`` as a string literal: quotes doubled; with a backslash, an escape string."""
    quoted = "'" + s.replace("'", "''").replace("\\", "\\\\") + "'"
    return "E" + quoted if "\\" in s else quoted


def _quote_nullable(arg: tuple[str | None, SqlType]) -> str:
    return "NULL" if arg[0] is None else _quote_literal(arg[0])


def _spark_quote_ident(cc: ExprCompiler, e: Func) -> Column:
    (s,) = _args(cc, e)
    plain = s.rlike("^[a-z_][a-z0-9_]*$") & ~s.isin(*sorted(QUOTED))
    return F.when(plain, s).otherwise(
        F.concat(F.lit('"'), F.replace(s, F.lit('"'), F.lit('""')), F.lit('"'))
    )


def _spark_literal(s: Column) -> Column:
    doubled = F.replace(F.replace(s, F.lit("'"), F.lit("''")), F.lit("\\"), F.lit("\\\\"))
    quoted = F.concat(F.lit("'"), doubled, F.lit("'"))
    return F.when(F.instr(s, "\\") > 0, F.concat(F.lit("E"), quoted)).otherwise(quoted)


def _spark_quote_literal(cc: ExprCompiler, e: Func) -> Column:
    (s,) = _args(cc, e)
    return _spark_literal(s)


def _spark_quote_nullable(cc: ExprCompiler, e: Func) -> Column:
    (s,) = _args(cc, e)
    return F.when(s.isNull(), F.lit("NULL")).otherwise(_spark_literal(s.cast("string")))


_SPEC = re.compile(r"%(?:(\d+)\$)?(-*)(?:(\d+)|(\*)(?:(\d+)\$)?)?(.?)", re.S)


def _position(n: str) -> int:
    if int(n) == 0:
        raise EvalError(
            "format specifies argument 0, but arguments are numbered from 1", sqlstate="22023"
        )
    return int(n) - 1


def _width(v: Any, kind: SqlType) -> int:
    """A width taken from an argument, as an integer (NULL: no padding)."""
    if v is None:
        return 0
    text = output_text(v, kind).strip()
    if not re.fullmatch(r"[+-]?\d+", text):
        raise EvalError(f'invalid input syntax for type integer: "{text}"', sqlstate="22P02")
    if not -(2**31) <= int(text) < 2**31:
        raise EvalError(f'value "{text}" is out of range for type integer', sqlstate="22003")
    return int(text)


def _format(*args: tuple[Any, SqlType]) -> str | None:
    """PostgreSQL's ``format(fmt, …)``: ``%s`` a value as text (NULL as nothing), ``%I`` as
    an identifier, ``%L`` as a literal (NULL as ``NULL``), ``%%`` a percent; ``n$`` picks the
    argument; a width (digits, or ``*``/``*n$`` taking it from an argument, negative meaning
    left) pads, on the right after ``-``."""
    fmt, values = args[0][0], args[1:]
    if fmt is None:
        return None
    at = 0

    def arg(i: int) -> tuple[Any, SqlType]:
        nonlocal at
        if i >= len(values):
            raise EvalError("too few arguments for format()", sqlstate="22023")
        at = i + 1
        return values[i]

    def one(m: re.Match[str]) -> str:
        n, left, digits, star, star_n, kind = m.groups()
        if kind == "%" and not (n or left or digits or star_n or star):
            return "%"
        if kind not in ("s", "I", "L"):
            what = f'unrecognized format() type specifier "{kind}"'
            what = what if kind else "unterminated format() type specifier"
            raise EvalError(what, sqlstate="22023")
        width = int(digits or 0)
        if star_n or star:
            width = _width(*arg(_position(star_n) if star_n else at))
        v, kind_of = arg(_position(n) if n else at)
        if kind == "I" and v is None:
            raise EvalError(
                "null values cannot be formatted as an SQL identifier", sqlstate="22004"
            )
        if v is None:
            text = "" if kind == "s" else "NULL"
        else:
            text = output_text(v, kind_of)
            text = {"I": quote_ident, "L": _quote_literal}.get(kind, str)(text)
        if abs(width) >= 0x3FFFFFFF:  # past PostgreSQL's 1 GB string, as it answers
            raise EvalError("out of memory", sqlstate="54000", detail="width too large")
        return text.ljust(abs(width)) if left or width < 0 else text.rjust(width)

    return _SPEC.sub(one, fmt)


def _format_rule(args: tuple[SqlType, ...]) -> SqlType:
    if not args or args[0] not in (TEXT, NULLTYPE):
        raise PlanError("no match", sqlstate="42883")
    return TEXT


FUNCTIONS = [
    Function("ascii", _sig((TEXT,), result=INT4), _ascii, spark=_simple("ascii")),
    Function("chr", _sig(("int",), result=TEXT), _chr, spark=_spark_chr),
    Function(
        "octet_length",
        _sig((TEXT,), (BYTEA,), result=INT4),
        lambda s: len(s if isinstance(s, bytes) else s.encode()),
        spark=_simple("octet_length"),
    ),
    Function(
        "translate", _sig((TEXT, TEXT, TEXT), result=TEXT), _translate, spark=_spark_translate
    ),
    Function("to_hex", _HEX, _to_hex, strict=False, spark=_spark_to_hex),
    Function(
        "bit_length",
        _sig((TEXT,), (BYTEA,), result=INT4),
        lambda s: 8 * len(s if isinstance(s, bytes) else s.encode()),
        spark=lambda cc, e: F.octet_length(cc.compile(e.args[0])) * 8,
    ),
    Function("quote_ident", _sig((TEXT,), result=TEXT), quote_ident, spark=_spark_quote_ident),
    Function(
        "quote_literal", _sig((TEXT,), result=TEXT), _quote_literal, spark=_spark_quote_literal
    ),
    Function(
        "quote_nullable",
        _sig((TEXT,), result=TEXT),
        _quote_nullable,
        strict=False,
        spark=_spark_quote_nullable,
    ),
    Function(
        "format",
        _format_rule,
        _format,
        strict=False,
        spark=in_process("format() runs in the process"),
    ),
]
