"""bytea as text and back (PostgreSQL's ``encode``/``decode``: hex, base64, escape;
``convert_from``/``convert_to``), its bytes and bits (``get_byte``, ``set_byte``, ``get_bit``,
``set_bit``), digests, in the process as every function of bytea, and ``pg_typeof``: each
defined once."""

from __future__ import annotations

import base64
import binascii
import hashlib
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from changeflow.compute.functions.base import F, Function, _sig, in_process
from changeflow.compute.functions.encodings import convert_from, convert_to
from changeflow.compute.functions.overloads import BIT, Overloads
from changeflow.compute.scalars import bytea_from_text, like_regex
from changeflow.compute.types import BOOL, BYTEA, INT4, INT8, TEXT, SqlType
from changeflow.errors import EvalError, PlanError

if TYPE_CHECKING:
    from pyspark.sql import Column

    from changeflow.compute.functions import Func
    from changeflow.compute.spark_expr import ExprCompiler

_FORMATS = ("hex", "base64", "escape")
_BYTEA_IN_PROCESS = in_process("functions of bytea are computed in the process")


def _format(name: str) -> str:
    kind = name.lower()
    if kind not in _FORMATS:
        raise EvalError(f'unrecognized encoding: "{name}"', sqlstate="22023")
    return kind


def _encode(data: bytes, name: str) -> str:
    kind = _format(name)
    if kind == "hex":
        return data.hex()
    if kind == "base64":  # lines of 76 characters, as PostgreSQL writes them
        text = base64.b64encode(data).decode()
        return "\n".join(text[i : i + 76] for i in range(0, len(text), 76))
    return "".join(_escaped(b) for b in data)


def _escaped(b: int) -> str:
    """A byte as the escape format writes it: zero and high bytes in octal, ``\\`` doubled."""
    if b == 0x5C:
        return "\\\\"
    return f"\\{b:03o}" if b == 0 or b >= 0x80 else chr(b)


def _decode(text: str, name: str) -> bytes:
    kind = _format(name)
    if kind == "base64":
        try:
            return base64.b64decode("".join(text.split()), validate=True)
        except (ValueError, binascii.Error):
            raise EvalError("invalid base64 data", sqlstate="22023") from None
    if kind == "escape" and text.startswith("\\x"):  # no hex form here: \x is no escape
        raise EvalError("invalid input syntax for type bytea", sqlstate="22P02")
    return bytea_from_text("\\x" + text if kind == "hex" else text)


def _checked(data: bytes, n: int, count: int) -> int:
    """``n``, an index of one of ``count`` bytes or bits of ``data``; 2202E outside them."""
    if not 0 <= n < count:
        raise EvalError(f"index {n} out of valid range, 0..{count - 1}", sqlstate="2202E")
    return n


def _get_byte(data: bytes, n: int) -> int:
    return data[_checked(data, n, len(data))]


def _set_byte(data: bytes, n: int, value: int) -> bytes:
    out = bytearray(data)
    out[_checked(data, n, len(data))] = value & 0xFF  # its low byte, as PostgreSQL stores it
    return bytes(out)


def _get_bit(data: bytes, n: int) -> int:
    _checked(data, n, 8 * len(data))
    return (data[n // 8] >> (n % 8)) & 1


def _set_bit(data: bytes, n: int, bit: int) -> bytes:
    _checked(data, n, 8 * len(data))
    if bit not in (0, 1):
        raise EvalError("new bit must be 0 or 1", sqlstate="22023")
    out = bytearray(data)
    out[n // 8] = out[n // 8] & ~(1 << (n % 8)) | (bit << (n % 8))
    return bytes(out)


# PostgreSQL's signatures (the bit string ones make a call of unknowns ambiguous)
_GET_BIT = (((BYTEA, INT8), INT4), ((BIT, INT4), INT4))
_SET_BIT = (((BYTEA, INT8, INT4), BYTEA), ((BIT, INT4, INT4), BIT))


def _typeof_rule(args: tuple[SqlType, ...]) -> SqlType:
    if len(args) != 1:
        raise PlanError("no match", sqlstate="42883")
    return TEXT


def _typeof(arg: tuple[Any, SqlType]) -> str:
    """The argument's type, as PostgreSQL names it."""
    return _type_name(arg[1])


def _type_name(kind: SqlType) -> str:
    """``kind``'s name as PostgreSQL shows it (``timestamp without time zone``)."""
    if kind.name in ("timestamp", "timestamp[]"):
        return kind.name.replace("timestamp", "timestamp without time zone")
    return kind.name


def _spark_typeof(cc: ExprCompiler, e: Func) -> Column:
    return F.lit(_type_name(e.args[0].type))


def _bytea_like(value: bytes, pattern: bytes) -> bool:
    """``bytea LIKE bytea``: LIKE's ``%``, ``_`` and ``\\`` over bytes (each byte one
    character, as PostgreSQL's bytealike reads them)."""
    return like_regex(pattern.decode("latin-1")).fullmatch(value.decode("latin-1")) is not None


def _digest(name: str) -> Callable[[bytes], bytes]:
    """PostgreSQL's ``sha224``… of a bytea: the digest's bytes."""
    return lambda data: hashlib.new(name, data).digest()


FUNCTIONS = [
    Function("encode", _sig((BYTEA, TEXT), result=TEXT), _encode, spark=_BYTEA_IN_PROCESS),
    Function("decode", _sig((TEXT, TEXT), result=BYTEA), _decode, spark=_BYTEA_IN_PROCESS),
    Function(
        "byteacat", _sig((BYTEA, BYTEA), result=BYTEA), lambda a, b: a + b, spark=_BYTEA_IN_PROCESS
    ),
    Function("get_byte", _sig((BYTEA, "int"), result=INT4), _get_byte, spark=_BYTEA_IN_PROCESS),
    Function("bytealike", _sig((BYTEA, BYTEA), result=BOOL), _bytea_like, spark=_BYTEA_IN_PROCESS),
    Function(
        "set_byte", _sig((BYTEA, "int", "int"), result=BYTEA), _set_byte, spark=_BYTEA_IN_PROCESS
    ),
    Function("get_bit", Overloads("get_bit", _GET_BIT), _get_bit, spark=_BYTEA_IN_PROCESS),
    Function("set_bit", Overloads("set_bit", _SET_BIT), _set_bit, spark=_BYTEA_IN_PROCESS),
    Function(
        "convert_from", _sig((BYTEA, TEXT), result=TEXT), convert_from, spark=_BYTEA_IN_PROCESS
    ),
    Function("convert_to", _sig((TEXT, TEXT), result=BYTEA), convert_to, spark=_BYTEA_IN_PROCESS),
    Function("pg_typeof", _typeof_rule, _typeof, strict=False, spark=_spark_typeof),
    *(
        Function(
            f"sha{n}", _sig((BYTEA,), result=BYTEA), _digest(f"sha{n}"), spark=_BYTEA_IN_PROCESS
        )
        for n in (224, 256, 384, 512)
    ),
]
