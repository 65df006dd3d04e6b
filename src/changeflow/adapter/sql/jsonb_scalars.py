"""jsonb operators in SQL (``->``, ``->>``, ``#>``, ``#>>``, ``?``, ``@>``, ``<@``), mixed into
:class:`~changeflow.adapter.sql.scalar.Scalars`: each is PostgreSQL's function of the same
meaning (``jsonb_object_field``…), chosen by the right operand's type."""

from __future__ import annotations

from typing import TYPE_CHECKING

from sqlglot import exp

from changeflow.compute import expr as X
from changeflow.compute.arrays import ArrayOf
from changeflow.compute.functions import Func
from changeflow.compute.types import INT2, INT4, JSON, JSONB, NULLTYPE, TEXT, array_of
from changeflow.errors import PlanError

if TYPE_CHECKING:
    from changeflow.adapter.sql.scalar import Scalars


# Functions whose first argument is jsonb, so a quoted literal there is read as jsonb.
JSONB_FIRST = frozenset(
    (
        "jsonb_typeof",
        "jsonb_array_length",
        "jsonb_object_field",
        "jsonb_object_field_text",
        "jsonb_array_element",
        "jsonb_array_element_text",
        "jsonb_extract_path",
        "jsonb_extract_path_text",
        "jsonb_exists",
        "jsonb_contains",
        "jsonb_contained",
        "jsonb_pretty",
        "jsonb_insert",
        "jsonb_path_exists",
        "jsonb_path_match",
        "jsonb_path_query_array",
        "jsonb_path_query_first",
        "jsonb_path_values",
    )
)
# Functions whose steps after the first argument are a VARIADIC text[] (a path).
VARIADIC_PATH = frozenset(
    ("jsonb_extract_path", "jsonb_extract_path_text", "json_extract_path", "json_extract_path_text")
)
# The json functions of the same kind (their literal is read as json, kept as written).
JSON_FIRST = frozenset(name.replace("jsonb", "json") for name in JSONB_FIRST)


def variadic_path(name: str, args: list[exp.Expression]) -> list[exp.Expression]:
    """A call's arguments, the steps of a VARIADIC path (``json_extract_path(j, 'a', 'b')``)
    made one text[]."""
    if name.lower() not in VARIADIC_PATH or len(args) < 2:
        return args
    return [args[0], exp.Array(expressions=[exp.cast(a, "text") for a in args[1:]])]


def _path_operand(node: exp.Expression) -> exp.Expression:
    """The right operand of ``->``: sqlglot turns a literal into a JSON path of one step."""
    if isinstance(node, exp.JSONPath) and len(node.expressions) == 2:
        step = node.expressions[1]
        if isinstance(step, exp.JSONPathKey):
            return exp.Literal.string(str(step.this))
        if isinstance(step, exp.JSONPathSubscript):
            return exp.Literal.number(int(step.this))
    return node


class JsonbScalars:
    """The jsonb operators, as methods of the scalar planner."""

    def _parsejson(self: Scalars, node: exp.ParseJSON) -> X.Expr:
        """``json 'text'``: the literal read as json (22P02 for text that is none); ``json
        'text'::t`` (which sqlglot reads as json of the cast) the json cast to ``t``."""
        from changeflow.adapter.sql.scalar import coerce_text

        inner = node.this
        if isinstance(inner, exp.Cast) and isinstance(inner.this, exp.Literal):
            return self.expr(exp.Cast(this=exp.ParseJSON(this=inner.this), to=inner.to))
        if isinstance(inner, exp.Literal) and inner.is_string:
            return coerce_text(str(inner.this), JSON)
        return X.Cast(self.expr(inner), JSON)

    def _jsonb_side(self: Scalars, node: exp.Expression) -> X.Expr:
        from changeflow.adapter.sql.scalar import coerce_text, is_string_literal

        if is_string_literal(node):
            return coerce_text(str(node.this), JSONB)
        return self.expr(node)

    def _field(self: Scalars, node: exp.Expression, text: bool) -> X.Expr:
        from changeflow.adapter.sql.scalar import coerce_text, is_string_literal

        j = self._jsonb_side(node.this)
        right = _path_operand(node.expression)
        key = coerce_text(str(right.this), TEXT) if is_string_literal(right) else self.expr(right)
        name = "jsonb_array_element" if key.type.integer else "jsonb_object_field"
        if j.type == JSON:  # json's own functions, which answer with its text as written
            name = name.replace("jsonb", "json")
        return Func(name + ("_text" if text else ""), (j, key))

    def jsonb_subscript(self: Scalars, j: X.Expr, chain: list[list[exp.Expression]]) -> X.Expr:
        """``j['a'][0]…``: PostgreSQL's jsonb subscripts, each an integer or text, are the steps
        of ``jsonb_extract_path`` (an array's step that is no integer finds NULL)."""
        if j.type == JSON:
            raise PlanError(
                "cannot subscript type json because it does not support subscripting",
                sqlstate="42804",
            )
        return Func("jsonb_extract_path", (j, self.jsonb_steps(chain)))

    def jsonb_steps(self: Scalars, chain: list[list[exp.Expression]]) -> X.Expr:
        """jsonb subscripts as a path of text steps (integers written as text)."""
        from changeflow.adapter.sql.scalar import coerce_text, is_string_literal

        steps: list[X.Expr] = []
        for part in chain:
            if any(isinstance(p, exp.Slice) for p in part):
                raise PlanError("jsonb subscript does not support slices", sqlstate="42804")
            if is_string_literal(part[0]):
                steps.append(coerce_text(str(part[0].this), TEXT))
                continue
            step = self.expr(part[0])
            if step.type == NULLTYPE:
                step = X.Lit(None, TEXT)
            elif step.type in (INT2, INT4):
                step = X.Cast(step, TEXT)
            elif step.type != TEXT:
                raise PlanError(
                    f"subscript type {step.type} is not supported",
                    sqlstate="42804",
                    hint="jsonb subscript must be coercible to either integer or text.",
                )
            steps.append(step)
        return ArrayOf(tuple(steps))

    def _jsonextract(self: Scalars, node: exp.JSONExtract) -> X.Expr:
        return self._field(node, text=False)

    def _jsonextractscalar(self: Scalars, node: exp.JSONExtractScalar) -> X.Expr:
        return self._field(node, text=True)

    def _path(self: Scalars, node: exp.Expression, text: bool) -> X.Expr:
        from changeflow.adapter.sql.scalar import coerce_text, is_string_literal

        path = node.expression
        steps = (
            coerce_text(str(path.this), array_of(TEXT))
            if is_string_literal(path)
            else self.expr(path)
        )
        name = "jsonb_extract_path_text" if text else "jsonb_extract_path"
        j = self._jsonb_side(node.this)
        return Func(name.replace("jsonb", "json") if j.type == JSON else name, (j, steps))

    def _jsonbextract(self: Scalars, node: exp.JSONBExtract) -> X.Expr:
        return self._path(node, text=False)

    def _jsonbextractscalar(self: Scalars, node: exp.JSONBExtractScalar) -> X.Expr:
        return self._path(node, text=True)

    def _jsonbcontainstopkey(self: Scalars, node: exp.Expression) -> X.Expr:
        from changeflow.adapter.sql.scalar import coerce_text, is_string_literal

        key = node.expression
        k = coerce_text(str(key.this), TEXT) if is_string_literal(key) else self.expr(key)
        return Func("jsonb_exists", (self._jsonb_side(node.this), k))

    def _keys(self: Scalars, node: exp.Expression, name: str) -> X.Expr:
        from changeflow.adapter.sql.scalar import coerce_text, is_string_literal

        keys = node.expression
        k = (
            coerce_text(str(keys.this), array_of(TEXT))
            if is_string_literal(keys)
            else self.expr(keys)
        )
        return Func(name, (self._jsonb_side(node.this), k))

    def _jsonbpathexists(self: Scalars, node: exp.Expression) -> X.Expr:
        """``j @? path``: ``jsonb_path_exists`` with its errors silenced, as PostgreSQL's."""
        return self._silent_path("jsonb_path_exists", node.this, node.expression)

    def _matchagainst(self: Scalars, node: exp.Expression) -> X.Expr:
        """``j @@ path`` (sqlglot's reading: the path, then j): ``jsonb_path_match``, silent."""
        if len(node.expressions) != 1:
            raise PlanError("@@ takes one operand on each side", sqlstate="42601")
        return self._silent_path("jsonb_path_match", node.expressions[0], node.this)

    def _silent_path(self: Scalars, name: str, j: exp.Expression, path: exp.Expression) -> X.Expr:
        from changeflow.adapter.sql.scalar import coerce_text, is_string_literal

        p = coerce_text(str(path.this), TEXT) if is_string_literal(path) else self.expr(path)
        nothing = coerce_text("{}", JSONB)
        return Func(name, (self._jsonb_side(j), p, nothing, X.lit(True)))

    def _jsonbdeleteatpath(self: Scalars, node: exp.Expression) -> X.Expr:
        return self._keys(node, "jsonb_delete_path")

    def _jsonbcontainsanytopkeys(self: Scalars, node: exp.Expression) -> X.Expr:
        return self._keys(node, "jsonb_exists_any")

    def _jsonbcontainsalltopkeys(self: Scalars, node: exp.Expression) -> X.Expr:
        return self._keys(node, "jsonb_exists_all")

    def jsonb_operator(self: Scalars, node: exp.Expression) -> X.Expr | None:
        """``a || b`` or ``a - k`` where ``a`` (or, for ``||``, ``b``) is jsonb; else None."""
        from changeflow.adapter.sql.scalar import coerce_text, is_string_literal

        a = self.expr(node.this)
        if isinstance(node, exp.DPipe):
            b = self.expr(node.expression)
            if JSONB not in (a.type, b.type):
                return None
            return Func(
                "jsonb_concat", (self._jsonb_side(node.this), self._jsonb_side(node.expression))
            )
        if a.type != JSONB:
            return None
        k = node.expression
        key = coerce_text(str(k.this), TEXT) if is_string_literal(k) else self.expr(k)
        return Func("jsonb_delete", (a, key))

    def _arraycontainsall(self: Scalars, node: exp.Expression) -> X.Expr:
        if (found := self.array_containment(node, "arraycontains")) is not None:
            return found
        a, b = self._jsonb_side(node.this), self._jsonb_side(node.expression)
        return Func("jsonb_contains", (a, b))

    def _arraycontainedby(self: Scalars, node: exp.Expression) -> X.Expr:
        if (found := self.array_containment(node, "arraycontained")) is not None:
            return found
        a, b = self._jsonb_side(node.this), self._jsonb_side(node.expression)
        return Func("jsonb_contained", (a, b))
