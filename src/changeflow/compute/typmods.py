"""The type modifier (PostgreSQL's typmod) an expression's values have, and which of
PostgreSQL's text types they are (``bpchar`` for char(n), ``varchar``): a column reference
keeps its column's, a cast to char(n), varchar(n) or numeric(p,s) gives its own, NULLIF its
first argument's (a char(n)'s or a number's: its ``=`` takes a varchar as text, which has
none), CASE and COALESCE the one all their branches share, UNION the one all its inputs
share (PostgreSQL's exprTypmod); anything else has none. char(n)'s width is its typmod's n
(:attr:`~changeflow.compute.types.Column.pad`)."""

from __future__ import annotations

from typing import NamedTuple

from changeflow.compute import expr as X
from changeflow.compute.functions import Func
from changeflow.compute.types import TEXT, Column, Schema, char_width

# the planner's forms of a cast to a type with a modifier: the function, its text type
CAST_FORMS = {"char_n": "bpchar", "varchar_n": "varchar", "numeric_n": ""}


class Mod(NamedTuple):
    """A type modifier (-1 for none) and the text type it belongs to ('' for another)."""

    typmod: int = -1
    text_type: str = ""

    @staticmethod
    def of(column: Column) -> Mod:
        return Mod(column.typmod, column.text_type)

    @property
    def pad(self) -> int | None:
        """char(n)'s n, else None."""
        return char_width(self.typmod, self.text_type)


NONE = Mod()


def bpchar(n: int) -> Mod:
    """char(n)'s."""
    return Mod(n + 4, "bpchar")


def mod_of(e: X.Expr, schema: Schema) -> Mod:
    """The type modifier of ``e``'s values over rows of ``schema``."""
    if isinstance(e, X.Col):
        return Mod.of(schema[e.index])
    if isinstance(e, Func) and e.name in CAST_FORMS:
        return _cast_mod(e)
    if isinstance(e, Func) and e.name == "typed_text" and isinstance(e.args[1], X.Lit):
        return Mod(-1, str(e.args[1].value))
    if isinstance(e, X.NullIf):
        found = mod_of(e.a, schema)
        return found if found.text_type == "bpchar" or e.type is not TEXT else NONE
    if isinstance(e, X.Case | X.Coalesce):
        branches = [v for _, v in e.whens] + [e.otherwise] if isinstance(e, X.Case) else e.args
        return common_mod(branches, schema)
    return NONE


def common_mod(exprs: list[X.Expr | None] | tuple[X.Expr, ...], schema: Schema) -> Mod:
    """The modifier all of ``exprs`` share (CASE's, COALESCE's branches), else none. A NULL
    branch has none, but beside char(n) it leaves the width: PostgreSQL's char(n) values
    carry their blanks, held here without them."""
    found = {mod_of(x, schema) for x in exprs if not _null(x)}
    if len(found) != 1:
        return NONE
    mod = found.pop()
    return mod if mod.text_type == "bpchar" or not any(_null(x) for x in exprs) else NONE


def shared(mods: list[Mod]) -> Mod:
    """The modifier all of ``mods`` are (UNION's inputs' columns), else none."""
    found = set(mods)
    return found.pop() if len(found) == 1 else NONE


def unsized_bpchar(e: X.Expr, mod: Mod) -> X.Expr:
    """``e``, of modifier ``mod``, as bpchar without a length, whose values are held as
    PostgreSQL holds them, with their blanks (char(n)'s padded to n), for branches or inputs
    of different widths."""
    if mod == (-1, "bpchar"):
        return e
    if mod.pad is not None:
        e = Func("rpad", (e, X.lit(mod.pad)))
    return Func("typed_text", (e, X.lit("bpchar")))


def _cast_mod(e: Func) -> Mod:
    sizes = [a.value for a in e.args[1:] if isinstance(a, X.Lit) and isinstance(a.value, int)]
    if len(sizes) != len(e.args) - 1:
        return NONE
    if e.name == "numeric_n":
        scale, precision = sizes
        return Mod(((precision << 16) | scale) + 4)
    return Mod(sizes[0] + 4, CAST_FORMS[e.name])


def _null(e: X.Expr | None) -> bool:
    return e is None or (isinstance(e, X.Lit) and e.value is None)
