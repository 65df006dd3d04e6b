"""``to_number(text, template)`` (PostgreSQL's) and ``div``: text read by a number template as
PostgreSQL reads it, leniently: digits are taken where the template has ``9`` or ``0`` (and
wherever a digit stands), ``.``/``D`` reads the decimal point, ``,``/``G`` skip a separator when
one is there, ``S``, ``MI``, ``PL``, ``SG`` and ``PR`` read a sign, ``L`` skips a currency
symbol, any other character of the template skips one of the text. The result has as many
decimals as were read, and no more whole digits than the template has places for (22003).
The C locale's symbols: ``.``, ``,``, ``-``, ``+``. Computed in the process."""

from __future__ import annotations

import re
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation, localcontext
from typing import TYPE_CHECKING

from changeflow.compute.functions.base import F, Function, _sig, fail
from changeflow.compute.functions.from_text import TEMPLATE_IN_PROCESS
from changeflow.compute.scalars import NUMERIC_NAN
from changeflow.compute.types import NUMERIC, NUMERIC_SCALE, TEXT
from changeflow.errors import EvalError

if TYPE_CHECKING:
    from pyspark.sql import Column

    from changeflow.compute.functions import Func
    from changeflow.compute.spark_expr import ExprCompiler

# The template's words (PostgreSQL's number keywords, upper or lower case), longest first.
_WORDS = re.compile(
    r"EEEE|eeee|FM|fm|MI|mi|PL|pl|PR|pr|RN|rn|SG|sg|SP|sp|TH|th|"
    r"[,.09BbCcDdEeGgLlSsVv]|.",
    re.S,
)


@dataclass
class _Template:
    """What a template says before reading: places before and after its decimal point and
    its sign and mode flags."""

    words: list[str]
    pre: int = 0
    post: int = 0
    decimal: bool = False
    fill: bool = False
    lsign: str | None = None  # "pre" or "post": where S reads a sign
    minus: bool = False
    plus: bool = False
    bracket: bool = False


def _syntax(message: str) -> EvalError:
    return EvalError(message, sqlstate="42601")


def _template(text: str) -> _Template:
    t = _Template([m.group(0) for m in _WORDS.finditer(text)])
    for word in t.words:
        w = word.upper()
        if w in ("9", "0"):
            if t.bracket:
                raise _syntax(f'"{w}" must be ahead of "PR"')
            if t.decimal:
                t.post += 1
            else:
                t.pre += 1
        elif w in (".", "D"):
            if t.decimal:
                raise _syntax("multiple decimal points")
            t.decimal = True
        elif w == "FM":
            t.fill = True
        elif w == "S":
            if t.lsign is not None:
                raise _syntax('cannot use "S" twice')
            if t.plus or t.minus or t.bracket:
                raise _syntax('cannot use "S" and "PL"/"MI"/"SG"/"PR" together')
            t.lsign = "post" if t.decimal else "pre"
        elif w in ("MI", "PL", "SG"):
            if t.lsign is not None:
                raise _syntax(f'cannot use "S" and "{w}" together')
            t.minus = t.minus or w in ("MI", "SG")
            t.plus = t.plus or w in ("PL", "SG")
        elif w == "PR":
            if t.lsign is not None or t.plus or t.minus:
                raise _syntax('cannot use "PR" and "S"/"PL"/"MI"/"SG" together')
            t.bracket = True
        elif w in ("EEEE", "RN"):
            raise EvalError(f'"{w}" not supported for input', sqlstate="0A000")
        elif w == "V":
            raise EvalError('"V" in to_number templates', sqlstate="0A000")
    return t


class _Reader:
    """The reading state: the text, where it is read, the sign and the digits read."""

    def __init__(self, text: str, template: _Template) -> None:
        self.text, self.t, self.pos = text, template, 0
        self.sign, self.digits = " ", ""
        self.pre = self.post = 0
        self.dec = False

    def at(self, offset: int = 0) -> str:
        i = self.pos + offset
        return self.text[i] if i < len(self.text) else ""

    def done(self) -> bool:
        return self.pos >= len(self.text)

    def number_part(self, word: str) -> None:
        """A ``9``, ``0``, ``.`` or ``D``: a sign before the first digit, a digit or the
        decimal point, a sign after the last digit."""
        if self.done():
            return
        if self.at() == " ":
            self.pos += 1
            if self.done():
                return
        if self.sign == " " and word in ("9", "0") and self.pre + self.post == 0:
            c = self.at()
            if c == "-" or (c == "<" and self.t.bracket and self.t.lsign != "pre"):
                self.sign, self.pos = "-", self.pos + 1
            elif c == "+":
                self.sign, self.pos = "+", self.pos + 1
            if self.done():
                return
        read = False
        if self.at().isdigit() and self.at().isascii():
            if self.dec and self.post == self.t.post:
                return
            self.digits += self.at()
            self.post, self.pre = (
                (self.post + 1, self.pre) if self.dec else (self.post, self.pre + 1)
            )
            read = True
        elif self.t.decimal and not self.dec and self.at() == ".":
            self.digits += "."
            self.dec = read = True
        if self.done() or self.sign != " " or self.pre + self.post == 0:
            return
        following = self.at(1)
        if self.t.lsign and read and following and not following.isdigit():
            if following in "-+":
                self.pos += 1
                self.sign = following
        elif not read and not self.t.lsign and (self.t.plus or self.t.minus) and self.at() in "-+":
            self.sign = self.at()

    def skip_symbols(self, n: int) -> None:
        """Skip up to ``n`` characters that are not digits, points, commas or signs."""
        while n > 0 and not self.done() and self.at() not in "0123456789.,+-":
            self.pos, n = self.pos + 1, n - 1

    def read(self) -> None:
        for word in self.t.words:
            if self.done():
                break
            w = word.upper()
            if w in ("9", "0", ".", "D"):
                self.number_part(w)
            elif w in (",", "G"):
                if self.t.fill or self.at() != ",":
                    continue
            elif w == "L":
                self.skip_symbols(1)
                continue
            elif w == "TH":  # an ordinal suffix, unless the template has a decimal point
                if not self.t.decimal:
                    self.skip_symbols(2)
                continue
            elif w in ("MI", "PL", "SG"):
                signs = {"MI": "-", "PL": "+", "SG": "-+"}[w]
                if self.at() in signs:
                    self.sign = self.at()
                else:
                    self.skip_symbols(1)
                    continue
            elif len(word) > 1 or w in "BCEPSV":  # a keyword that reads nothing
                continue
            self.pos += 1


def to_number(text: str, template: str) -> Decimal | None:
    """``to_number(text, template)``; NULL for an empty template, as PostgreSQL's."""
    if template == "":
        return None
    t = _template(template)
    r = _Reader(text, t)
    r.read()
    digits = r.digits[:-1] if r.digits.endswith(".") else r.digits
    shown = (r.sign + digits).strip()
    try:
        value = Decimal(shown)
    except InvalidOperation:
        value = NUMERIC_NAN
    if not shown or value.is_nan() or not re.fullmatch(r"[-+]?(\d+(\.\d*)?|\.\d+)", shown):
        raise EvalError(
            f'invalid input syntax for type numeric: "{r.sign + digits}"', sqlstate="22P02"
        )
    whole = value.adjusted() + 1 if value else 0
    if whole > t.pre:
        raise EvalError("numeric field overflow", sqlstate="22003")
    if not value:
        return Decimal(0).scaleb(-r.post)
    return value


def _div(a: Decimal | int, b: Decimal | int) -> Decimal:
    """``div(a, b)``: the quotient truncated toward zero (NaN if either is)."""
    a, b = Decimal(a), Decimal(b)
    if a.is_nan() or b.is_nan():
        return NUMERIC_NAN
    if b == 0:
        raise EvalError("division by zero", sqlstate="22012")
    with localcontext() as ctx:
        ctx.prec = max(a.adjusted() - b.adjusted(), 0) + 10
        quotient = abs(a) // abs(b)
    return -quotient if (a < 0) != (b < 0) and quotient else quotient


def _spark_div(cc: ExprCompiler, e: Func) -> Column:
    a, b = (cc.compile(x).cast(f"decimal(38,{NUMERIC_SCALE})") for x in e.args)
    whole = ((a - a % b) / b).cast("decimal(38,0)")
    return F.when(b == 0, fail("division by zero", "22012")).otherwise(whole)


FUNCTIONS = [
    Function(
        "to_number",
        _sig((TEXT, TEXT), result=NUMERIC),
        to_number,
        spark=TEMPLATE_IN_PROCESS,
    ),
    Function(
        "div",
        _sig(
            ("int", "int"), ("int", NUMERIC), (NUMERIC, "int"), (NUMERIC, NUMERIC), result=NUMERIC
        ),
        _div,
        spark=_spark_div,
    ),
]
