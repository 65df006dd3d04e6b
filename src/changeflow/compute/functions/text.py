"""Text functions (PostgreSQL's): each defined once, on Python values and on Spark."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import pyarrow.compute as pc

from changeflow.compute import expr as X
from changeflow.compute.functions.base import (
    Builder,
    F,
    Function,
    _args,
    _sig,
    _simple,
    bytea_too,
    bytes_in_process,
    fail,
    in_process,
    unsupported,
)
from changeflow.compute.functions.encodings import length_in
from changeflow.compute.functions.regex_flags import regex
from changeflow.compute.scalars import output_text
from changeflow.compute.types import (
    BOOL,
    BYTEA,
    INT4,
    NULLTYPE,
    TEXT,
)
from changeflow.errors import EvalError, PlanError

if TYPE_CHECKING:
    from pyspark.sql import Column

    from changeflow.compute.functions import Func
    from changeflow.compute.spark_expr import ExprCompiler


def _substr(s: str, start: int, count: int | None = None) -> str:
    if count is not None and count < 0:
        raise EvalError("negative substring length not allowed", sqlstate="22011")
    end = None if count is None else start + count
    lo = max(start, 1)
    if end is not None and end <= lo:
        return s[:0]  # (of a bytea too)
    return s[lo - 1 : None if end is None else end - 1]


_REPLACE = ((TEXT, TEXT, TEXT), (TEXT, TEXT, TEXT, TEXT), (TEXT, TEXT, TEXT, "int"))
_REPLACE += ((TEXT, TEXT, TEXT, "int", "int"), (TEXT, TEXT, TEXT, "int", "int", TEXT))
_SUBSTR = ((TEXT, "int"), (TEXT, "int", "int"), (BYTEA, "int"), (BYTEA, "int", "int"))
_TRIMMED = bytea_too(_sig((TEXT,), (TEXT, TEXT), (BYTEA, BYTEA), result=TEXT))


def _trim(side: str) -> Callable[..., str]:
    def trim(s: str, chars: str = " ") -> str:
        if side == "both":
            return s.strip(chars)
        return s.lstrip(chars) if side == "left" else s.rstrip(chars)

    return trim


def _left(s: str, n: int) -> str:
    return s[:n] if n >= 0 else s[: max(len(s) + n, 0)]


def _char_n(s: str, n: int) -> str:
    """A cast to char(n) (the planner's form): cut to n, held without trailing blanks
    (:mod:`changeflow.compute.pads` shows it padded to n)."""
    return s[:n].rstrip(" ")


def _right(s: str, n: int) -> str:
    return s[-n:] if n > 0 else ("" if n == 0 else s[min(-n, len(s)) :])


def _split_part(s: str, delimiter: str, n: int) -> str:
    if n == 0:
        raise EvalError("field position must not be zero", sqlstate="22023")
    parts = s.split(delimiter) if delimiter else [s]
    if s == "":
        parts = []
    index = n - 1 if n > 0 else len(parts) + n
    return parts[index] if 0 <= index < len(parts) else ""


# PostgreSQL's largest value (MaxAllocSize, 1 GB), and its UTF-8 bytes a character at most.
_MAX_BYTES, _CHAR_BYTES = 0x3FFFFFFF, 4


def _too_large(n_bytes: int) -> None:
    if n_bytes > _MAX_BYTES:
        raise EvalError("requested length too large", sqlstate="54000")


def _repeat(s: str, n: int) -> str:
    _too_large(len(s.encode()) * max(n, 0))
    return s * max(n, 0)


def _pad(left: bool) -> Callable[..., str]:
    def pad(s: str, n: int, fill: str = " ") -> str:
        if n <= 0:
            return ""
        _too_large(n * _CHAR_BYTES)  # as PostgreSQL checks it, before padding
        if len(s) >= n or not fill:
            return s[:n]
        filler = (fill * (n // len(fill) + 1))[: n - len(s)]
        return filler + s if left else s + filler

    return pad


def _one(ch: str, upper: bool) -> str:
    """A character's other case where that is one character (PostgreSQL maps character by
    character: ``ß`` stays, where Python's ``upper`` makes ``SS``; ``İ`` lowers to ``i``)."""
    cased = ch.upper() if upper else ch.lower()
    if len(cased) == 1:
        return cased
    return ch if upper else cased[0]  # (``İ`` lowers to ``i`` and a combining dot)


def _upper(s: str) -> str:
    return s.upper() if s.isascii() else "".join(_one(ch, True) for ch in s)


def _lower(s: str) -> str:
    return s.lower() if s.isascii() else "".join(_one(ch, False) for ch in s)


def _initcap(s: str) -> str:
    out, word = [], False
    for ch in s:
        out.append(_one(ch, not word))
        word = ch.isalnum()
    return "".join(out)


def _md5(s: str | bytes) -> str:
    return hashlib.md5(s if isinstance(s, bytes) else s.encode("utf-8")).hexdigest()


def _regexp_replace(s: str, pattern: str, replacement: str, *rest: Any) -> str:
    """PostgreSQL's regexp_replace: the first match (every one with flag ``g``, or the
    ``n``-th, 0 for every one, searching from ``start``) replaced; ``\\n`` in the replacement
    is the n-th group, ``\\&`` the match. ``rest``: flags, or start [, n [, flags]]."""
    import re

    flags = rest[-1] if rest and isinstance(rest[-1], str) else ""
    numbers = [r for r in rest if not isinstance(r, str)]
    start, nth = (numbers + [1, None])[:2] if numbers else (1, None)
    for name, value, least in (("start", start, 1), ("n", nth, 0)):
        if value is not None and value < least:
            message = f'invalid value for parameter "{name}": {value}'
            raise EvalError(message, sqlstate="22023")
    if "g" in flags and nth is None:
        nth = 0
    try:
        compiled = re.compile(regex(pattern, flags.replace("g", "")))
    except re.error as e:
        raise EvalError(f"invalid regular expression: {e}", sqlstate="2201B") from None
    matches = 0

    def expand(m: re.Match[str]) -> str:
        out, i = [], 0
        while i < len(replacement):
            ch, nxt = replacement[i], replacement[i + 1 : i + 2]
            if ch == "\\" and nxt.isdigit():
                n = int(nxt)
                out.append((m.group(n) or "") if n <= compiled.groups else "")
            elif ch == "\\" and nxt in ("&", "\\"):
                out.append(m.group(0) if nxt == "&" else "\\")
            else:
                out.append(ch)
                i += 1
                continue
            i += 2
        return "".join(out)

    def chosen(m: re.Match[str]) -> str:
        nonlocal matches
        matches += 1
        return expand(m) if nth in (0, matches) or (nth is None and matches == 1) else m[0]

    head, tail = s[: start - 1], s[start - 1 :]
    return head + compiled.sub(chosen, tail, count=0 if nth != 1 and nth is not None else 1)


def _concat(*args: Any) -> str:
    return "".join(output_text(v, t) for v, t in args if v is not None)


def _concat_ws(sep: tuple[Any, Any], *args: Any) -> str | None:
    """The arguments but NULLs as text between ``sep``; NULL for a NULL separator."""
    return None if sep[0] is None else sep[0].join(_concat(a) for a in args if a[0] is not None)


def _concat_rule(args: tuple[Any, ...]) -> Any:
    if not args:  # concat() has at least one argument
        raise PlanError("no match", sqlstate="42883")
    return TEXT


def _concat_ws_rule(args: tuple[Any, ...]) -> Any:
    if len(args) < 2 or args[0] not in (TEXT, NULLTYPE):
        raise PlanError("no match", sqlstate="42883")
    return TEXT


# -- on Spark --------------------------------------------------------------------------------


def _spark_substr(cc: ExprCompiler, e: Func) -> Column:
    s, start = cc.compile(e.args[0]), cc.compile(e.args[1]).cast("bigint")
    lo = F.greatest(start, F.lit(1).cast("bigint"))
    past = (F.length(s) + 1).cast("bigint")
    if len(e.args) == 2:
        return F.substr(s, F.least(lo, past).cast("int"))
    count = cc.compile(e.args[2]).cast("bigint")
    length = start + count - lo
    taken = F.substr(s, F.least(lo, past).cast("int"), F.least(length, past).cast("int"))
    return (
        F.when(count < 0, fail("negative substring length not allowed", "22011"))
        .when(length <= 0, F.substr(s, F.lit(1), F.lit(0)))  # '' (NULL for a NULL string)
        .otherwise(taken)
    )


def _spark_trim(fn: str) -> Builder:
    def build(cc: ExprCompiler, e: Func) -> Column:
        args = _args(cc, e)
        return getattr(F, fn)(args[0], args[1] if len(args) > 1 else F.lit(" "))

    return build


def _spark_replace(cc: ExprCompiler, e: Func) -> Column:
    s, search, by = _args(cc, e)
    literal = F.regexp_replace(by, r"([\\$])", r"\\$1")
    return F.when(search == "", F.regexp_replace(s, F.lit(""), literal)).otherwise(
        F.replace(s, search, by)
    )


def _spark_left(cc: ExprCompiler, e: Func) -> Column:
    s, n = cc.compile(e.args[0]), cc.compile(e.args[1]).cast("bigint")
    keep = F.when(n >= 0, n).otherwise(F.greatest(F.length(s) + n, F.lit(0)))
    return F.substr(s, F.lit(1), F.least(keep, F.length(s).cast("bigint")).cast("int"))


def _spark_char_n(cc: ExprCompiler, e: Func) -> Column:
    s, n = cc.compile(e.args[0]), cc.compile(e.args[1]).cast("int")
    return F.rtrim(F.substr(s, F.lit(1), n), F.lit(" "))


def _spark_right(cc: ExprCompiler, e: Func) -> Column:
    s, n = cc.compile(e.args[0]), cc.compile(e.args[1]).cast("bigint")
    size = F.length(s).cast("bigint")
    start = F.when(n > 0, F.greatest(size - n + 1, F.lit(1))).otherwise(F.least(1 - n, size + 1))
    nothing = F.substr(s, F.lit(1), F.lit(0))  # '' (NULL for a NULL string)
    return F.when(n == 0, nothing).otherwise(F.substr(s, start.cast("int")))


def _spark_text(cc: ExprCompiler, a: X.Expr, e: Func) -> Column:
    """``a`` as its type's output (a boolean ``t`` or ``f``)."""
    if a.type == BOOL:
        return F.when(cc.compile(a), F.lit("t")).when(~cc.compile(a), F.lit("f"))
    return cc.cast(cc.compile(a), a.type, TEXT, e)


def _spark_concat(cc: ExprCompiler, e: Func) -> Column:
    parts = [_spark_text(cc, a, e) for a in e.args if a.type != NULLTYPE]
    return F.concat_ws("", *parts) if parts else F.lit("")


def _spark_concat_ws(cc: ExprCompiler, e: Func) -> Column:
    sep = cc.compile(e.args[0]).cast("string")
    parts = [_spark_text(cc, a, e) for a in e.args[1:] if a.type != NULLTYPE]
    return F.call_function("concat_ws", sep, *parts)


def _ascii(kernel: Callable[[Any], Any]) -> Callable[[Any], Any]:
    """An Arrow kernel for ASCII text only (Python's case mapping of the rest differs)."""

    def run(a: Any) -> Any:
        from changeflow.compute.columnar import NoKernel, full_or_scalar_all

        if not full_or_scalar_all(pc.string_is_ascii(a)):
            raise NoKernel("case mapping beyond ASCII")
        return kernel(a)

    return run


def _spark_split_part(cc: ExprCompiler, e: Func) -> Column:
    s, delimiter, n = _args(cc, e)
    zero = s.isNotNull() & delimiter.isNotNull() & (n == 0)
    part = F.call_function("split_part", s, delimiter, n.cast("int"))
    return F.when(zero, fail("field position must not be zero", "22023")).otherwise(part)


def _spark_pad(side: str) -> Builder:
    def build(cc: ExprCompiler, e: Func) -> Column:
        args = _args(cc, e)
        fill = args[2] if len(args) > 2 else F.lit(" ")
        return F.call_function(side, args[0], args[1].cast("int"), fill)

    return build


def _spark_initcap(cc: ExprCompiler, e: Func) -> Column:
    """Upper case after a character that is not a letter or digit, lower case after one."""
    s = cc.compile(e.args[0])
    chars = F.split(s, "(?!^)")  # one element a character ('' for '')
    word = "[\\p{L}\\p{N}]"
    cased = F.transform(
        chars,
        lambda ch, i: F.when(
            (i > 0) & F.element_at(chars, i).rlike(word), _spark_one(F.lower, ch)
        ).otherwise(_spark_one(F.upper, ch)),
    )
    return F.array_join(cased, "")


def _spark_one(case: Callable[[Column], Column], ch: Column) -> Column:
    """``_one`` in Spark: a character's other case where that is one character."""
    other = ch if case is F.upper else F.substring(case(ch), 1, 1)
    return F.when(F.length(case(ch)) == 1, case(ch)).otherwise(other)


def _spark_case(case: Callable[[Column], Column]) -> Callable[[ExprCompiler, Func], Column]:
    """``upper``/``lower`` character by character (as ``_upper``/``_lower``)."""

    def build(cc: ExprCompiler, e: Func) -> Column:
        s = cc.compile(e.args[0])
        whole = case(s)
        chars = F.split(s, "(?!^)")
        if_each = F.array_join(F.transform(chars, lambda ch: _spark_one(case, ch)), "")
        return F.when(F.length(whole) == F.length(s), whole).otherwise(if_each)

    return build


def _spark_md5(cc: ExprCompiler, e: Func) -> Column:
    return F.md5(cc.compile(e.args[0]).cast("binary"))


def _constant(e: Func, i: int, what: str) -> str:
    arg = e.args[i]
    if not isinstance(arg, X.Lit) or not isinstance(arg.value, str):
        raise unsupported(e, f"the {what} must be a constant")
    return arg.value


_NUMBERED = "regexp_replace from a start or of the n-th match is computed in the process"


def _numbered(e: Func) -> bool:
    return len(e.args) > 3 and e.args[3].type != TEXT


def _spark_regexp_replace(cc: ExprCompiler, e: Func) -> Column:
    """The first match (every one with ``g``) replaced, the pattern and the replacement
    constants: a first match is found as the shortest prefix followed by one."""
    if _numbered(e):
        raise unsupported(e, _NUMBERED)
    pattern, replacement = _constant(e, 1, "pattern"), _constant(e, 2, "replacement")
    flags = _constant(e, 3, "flags") if len(e.args) > 3 else ""
    s = cc.compile(e.args[0])
    unknown = set(flags) - set("gic")
    if unknown:
        bad = f'invalid regular expression option: "{sorted(unknown)[0]}"'
        return F.when(s.isNotNull(), fail(bad, "22023")).cast("string")
    try:
        groups = re.compile(pattern).groups
    except re.error as error:
        bad = f"invalid regular expression: {error}"
        return F.when(s.isNotNull(), fail(bad, "2201B")).cast("string")
    every = "g" in flags
    shift = 0 if every else 2  # groups before the pattern's own: the prefix, the match
    out, i = [], 0
    while i < len(replacement):
        ch, nxt = replacement[i], replacement[i + 1 : i + 2]
        if ch == "\\" and nxt.isdigit():
            n = int(nxt)
            out.append(f"${n + shift}" if 0 < n <= groups else "$0" if n == 0 and every else "")
            if n == 0 and not every:
                out[-1] = "$2"
            i += 2
        elif ch == "\\" and nxt == "&":
            out.append("$0" if every else "$2")
            i += 2
        elif ch == "\\" and nxt == "\\":
            out.append("\\\\")
            i += 2
        else:
            out.append("\\" + ch if ch in "$\\" else ch)
            i += 1
    options = "(?si)" if "i" in flags and "c" not in flags else "(?s)"
    if every:
        return F.regexp_replace(s, F.lit(options + pattern), F.lit("".join(out)))
    first = options + "\\A(.*?)(" + pattern + ")"
    return F.regexp_replace(s, F.lit(first), F.lit("$1" + "".join(out)))


_spark_regexp_replace.why = lambda e: _NUMBERED if _numbered(e) else None  # type: ignore[attr-defined]


def _record_text(*fields: tuple[Any, Any]) -> str:
    """A row as PostgreSQL's record output writes it, ``(1,x,,"a b")``: each field as its
    type's output (NULL empty; one that is empty or holds a quote, backslash, parenthesis,
    comma or space quoted, its quotes and backslashes doubled)."""
    out = []
    for v, kind in fields:
        f = None if v is None else output_text(v, kind)
        if f is None:
            out.append("")
        elif f == "" or any(c in f for c in '"\\(),') or any(c.isspace() for c in f):
            out.append('"' + f.replace("\\", "\\\\").replace('"', '""') + '"')
        else:
            out.append(f)
    return "(" + ",".join(out) + ")"


_record_rows_only = in_process("a whole row as a value is computed in the process")


def _spark_length(cc: ExprCompiler, e: Func) -> Column:
    if len(e.args) == 2:
        return _ENCODED_LENGTH(cc, e)
    return F.length(cc.compile(e.args[0]))


_ENCODED_LENGTH = in_process("length in an encoding is computed in the process only")


FUNCTIONS = [
    Function(
        "lower",
        _sig((TEXT,), result=TEXT),
        _lower,
        spark=_spark_case(F.lower),
        arrow=_ascii(pc.ascii_lower),
    ),
    Function(
        "upper",
        _sig((TEXT,), result=TEXT),
        _upper,
        spark=_spark_case(F.upper),
        arrow=_ascii(pc.ascii_upper),
    ),
    Function(
        "length",
        _sig((TEXT,), (BYTEA,), (BYTEA, TEXT), result=INT4),
        lambda s, encoding=None: len(s) if encoding is None else length_in(s, encoding),
        spark=_spark_length,
        arrow=pc.utf8_length,
    ),
    Function(
        "char_length",
        _sig((TEXT,), result=INT4),
        len,
        spark=_simple("length"),
        arrow=pc.utf8_length,
    ),
    Function(
        "substr",
        bytea_too(_sig(*_SUBSTR, result=TEXT)),
        _substr,
        spark=bytes_in_process(_spark_substr),
    ),
    Function(
        "substring",
        bytea_too(_sig(*_SUBSTR, result=TEXT)),
        _substr,
        spark=bytes_in_process(_spark_substr),
    ),
    Function("btrim", _TRIMMED, _trim("both"), spark=bytes_in_process(_spark_trim("btrim"))),
    Function("trim", _TRIMMED, _trim("both"), spark=bytes_in_process(_spark_trim("btrim"))),
    Function("ltrim", _TRIMMED, _trim("left"), spark=bytes_in_process(_spark_trim("ltrim"))),
    Function(
        "rtrim",
        _TRIMMED,
        _trim("right"),
        spark=bytes_in_process(_spark_trim("rtrim")),
    ),
    Function(
        "replace",
        _sig((TEXT, TEXT, TEXT), result=TEXT),
        lambda s, a, b: s.replace(a, b),
        spark=_spark_replace,
    ),
    Function(
        "strpos",
        _sig((TEXT, TEXT), result=INT4),
        lambda s, sub: s.find(sub) + 1,
        spark=_simple(lambda s, sub: F.call_function("instr", s, sub)),
    ),
    Function(
        "position",
        _sig((TEXT, TEXT), (BYTEA, BYTEA), result=INT4),
        lambda sub, s: s.find(sub) + 1,
        spark=bytes_in_process(_simple(lambda sub, s: F.call_function("instr", s, sub))),
    ),
    Function("left", _sig((TEXT, "int"), result=TEXT), _left, spark=_spark_left),
    Function("char_n", _sig((TEXT, "int"), result=TEXT), _char_n, spark=_spark_char_n),
    Function("varchar_n", _sig((TEXT, "int"), result=TEXT), _left, spark=_spark_left),
    # ``x::varchar`` and ``x::bpchar`` without a length: the text, of that type
    Function(
        "typed_text",
        _sig((TEXT, TEXT), result=TEXT),
        lambda s, _kind: s,
        spark=lambda cc, e: cc.compile(e.args[0]),
    ),
    Function("right", _sig((TEXT, "int"), result=TEXT), _right, spark=_spark_right),
    Function(
        "starts_with", _sig((TEXT, TEXT), result=BOOL), str.startswith, spark=_simple("startswith")
    ),
    Function(
        "reverse",
        _sig((TEXT,), result=TEXT),
        lambda s: s[::-1],
        spark=_simple("reverse"),
        arrow=pc.utf8_reverse,
    ),
    Function(
        "repeat",
        _sig((TEXT, "int"), result=TEXT),
        _repeat,
        spark=_simple(lambda s, n: F.call_function("repeat", s, n.cast("int"))),
    ),
    Function(
        "split_part", _sig((TEXT, TEXT, "int"), result=TEXT), _split_part, spark=_spark_split_part
    ),
    Function(
        "lpad",
        _sig((TEXT, "int"), (TEXT, "int", TEXT), result=TEXT),
        _pad(True),
        spark=_spark_pad("lpad"),
    ),
    Function(
        "rpad",
        _sig((TEXT, "int"), (TEXT, "int", TEXT), result=TEXT),
        _pad(False),
        spark=_spark_pad("rpad"),
    ),
    Function("initcap", _sig((TEXT,), result=TEXT), _initcap, spark=_spark_initcap),
    Function("md5", _sig((TEXT,), (BYTEA,), result=TEXT), _md5, spark=_spark_md5),
    Function(
        "regexp_replace",
        _sig(*_REPLACE, result=TEXT),
        _regexp_replace,
        spark=_spark_regexp_replace,
    ),
    Function("concat", _concat_rule, _concat, strict=False, spark=_spark_concat),
    Function("record_text", lambda args: TEXT, _record_text, strict=False, spark=_record_rows_only),
    Function("concat_ws", _concat_ws_rule, _concat_ws, strict=False, spark=_spark_concat_ws),
    Function(
        "textcat",
        _sig((TEXT, TEXT), result=TEXT),
        lambda a, b: a + b,
        spark=_simple("concat"),
        arrow=lambda a, b: pc.binary_join_element_wise(a, b, ""),
    ),
]
