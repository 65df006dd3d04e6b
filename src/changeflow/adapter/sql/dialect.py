"""The SQL dialect changeflow reads: sqlglot's PostgreSQL with PostgreSQL's own reading of the
calls and typed literals sqlglot reads otherwise, and parsing with PostgreSQL's syntax errors."""

from __future__ import annotations

import functools
import re
from typing import Any

import sqlglot
from sqlglot import exp
from sqlglot.dialects.postgres import Postgres
from sqlglot.errors import ParseError, TokenError
from sqlglot.tokens import TokenType

from changeflow.adapter.sql import pg_forms
from changeflow.adapter.sql.typed_literals import TypedLiterals
from changeflow.errors import PlanError

_PLAIN_CALLS = (
    "ACOS",
    "ACOSH",
    "ARRAY_APPEND",
    "ARRAY_CAT",
    "ARRAY_PREPEND",
    "ARRAY_REMOVE",
    "ASIN",
    "ASINH",
    "ATAN",
    "ATAN2",
    "ATANH",
    "BIT_LENGTH",
    "CBRT",
    "CHR",
    "DATE_BIN",
    "COS",
    "COSH",
    "COT",
    "DECODE",
    "DEGREES",
    "ENCODE",
    "FACTORIAL",
    "FORMAT",
    "GET_BIT",
    "JSON_OBJECT",
    "JSON_STRIP_NULLS",
    "JSONB_CONTAINS",
    "JSONB_EXISTS",
    "JSON_EXTRACT_PATH",  # (not ``->``: PostgreSQL's call takes a path of any length)
    "JSON_EXTRACT_PATH_TEXT",
    "JUSTIFY_INTERVAL",
    "LOG",
    "MAKE_TIMESTAMP",
    "RADIANS",
    "REGEXP_COUNT",
    "REGEXP_INSTR",
    "REGEXP_SUBSTR",
    "SHA256",
    "SHA384",
    "SHA512",
    "SIN",
    "SINH",
    "TAN",
    "TANH",
    "TO_DATE",
    "TO_TIMESTAMP",
    "WIDTH_BUCKET",
)


# calls that are PostgreSQL's grammar, not functions: with no arguments, a syntax error
_GRAMMAR = frozenset({"coalesce", "greatest", "least", "nullif"})


def _strpos(args: list[exp.Expression]) -> exp.Expression:
    """``strpos(s, b)``, a function of text only (``position(b IN s)`` takes bytea too)."""
    return exp.Anonymous(this="strpos", expressions=args)


def _two_args(name: str) -> Any:
    """A statistics aggregate of two arguments (corr, covar_pop, regr_slope…): called with
    another number, no such function (the planner says so, naming the argument types)."""
    node = Postgres.Parser.FUNCTIONS[name]
    return lambda args: (
        node(args) if len(args) == 2 else exp.Anonymous(this=name.lower(), expressions=args)
    )


_TWO_ARGS = ("CORR", "COVAR_POP", "COVAR_SAMP", "REGR_SLOPE", "REGR_INTERCEPT", "REGR_R2")
_TWO_ARGS += tuple(f"REGR_{s}" for s in ("SXX", "SYY", "SXY", "AVGX", "AVGY", "COUNT"))


def _mod(args: list[exp.Expression]) -> exp.Expression:
    if len(args) != 2:  # no such function: the planner says so, naming the argument types
        return exp.Anonymous(this="mod", expressions=args)
    return exp.Mod(this=args[0], expression=args[1])


def _age(args: list[exp.Expression]) -> exp.Expression:
    """``age(x)`` is ``age(current_date, x)``; of a NULL or quoted literal, PostgreSQL's two
    one-argument ages (timestamp, timestamptz) are ambiguous (42725)."""
    if len(args) != 1:
        return exp.Anonymous(this="age", expressions=args)
    if isinstance(args[0], exp.Null) or (isinstance(args[0], exp.Literal) and args[0].is_string):
        raise PlanError("function age(unknown) is not unique", sqlstate="42725")
    return exp.Anonymous(this="age", expressions=[exp.CurrentDate(), *args])


def _transaction_timestamp(args: list[exp.Expression]) -> exp.Expression:
    """``transaction_timestamp()`` is ``now()``: the start of the transaction."""
    if args:  # no such function: the planner says so, naming the argument types
        return exp.Anonymous(this="transaction_timestamp", expressions=args)
    return exp.CurrentTimestamp()


class StatementTimestamp(exp.Expression, exp.Func):
    """``statement_timestamp()``: the start of the current statement."""

    arg_types: dict[str, bool] = {}  # noqa: RUF012 (sqlglot's own class attribute)


class ClockTimestamp(exp.Expression, exp.Func):
    """``clock_timestamp()``: the time at each evaluation."""

    arg_types: dict[str, bool] = {}  # noqa: RUF012 (sqlglot's own class attribute)


def _clock(name: str, node: type[exp.Func]) -> Any:
    """``name()`` as ``node`` (with arguments, no such function: the planner says so)."""
    return lambda args: exp.Anonymous(this=name, expressions=args) if args else node()


def _uuid_v4(args: list[exp.Expression]) -> exp.Expression:
    """``uuid_generate_v4()`` is ``gen_random_uuid()`` (arguments: the planner's 42883)."""
    return exp.Uuid() if not args else exp.Anonymous(this="uuid_generate_v4", expressions=args)


def _plain_call(name: str) -> Any:
    return lambda args: exp.Anonymous(this=name.lower(), expressions=args)


# Type names PostgreSQL also takes as a one-argument function, a cast: float8(x) is x::float8.
# (Not numeric or varchar: keywords, so numeric(x) is a syntax error there.) Its column is
# named by the call (``called``), where x::float8 is named by x.
_TYPE_CALLS = ("INT2", "INT4", "INT8", "FLOAT4", "FLOAT8", "TEXT", "BOOL", "BPCHAR")
_TYPE_CALLS += ("TIMESTAMPTZ", "JSONB", "UUID", "BYTEA")


def _type_call(name: str) -> Any:
    def build(args: list[exp.Expression]) -> exp.Expression:
        if len(args) != 1:
            return exp.Anonymous(this=name.lower(), expressions=args)
        cast = exp.Cast(this=args[0], to=exp.DataType.build(name.lower(), dialect="postgres"))
        cast.meta["called"] = name.lower()
        return cast

    return build


def _jsonb_agg(args: list[exp.Expression]) -> exp.Expression:
    values = exp.ArrayAgg(this=args[0] if args else None)
    values.meta["jsonb"] = True  # a table's row aggregated as its jsonb object
    return exp.Anonymous(this="to_jsonb", expressions=[values])


def _json_agg(args: list[exp.Expression]) -> exp.Expression:
    """``json_agg(x …)``: the array_agg of x written as json_agg writes it, ``json_agg_of``;
    its second argument says whether x is a table's row (the planner finds out)."""
    values = exp.ArrayAgg(this=args[0] if args else None)
    values.meta["json"] = True  # a table's row aggregated as its json object
    call = exp.Anonymous(this="json_agg_of", expressions=[values, exp.false()])
    call.meta["name"] = "json_agg"  # the column's name
    return call


def _object_agg(args: list[exp.Expression]) -> exp.Expression:
    if len(args) != 2:  # no such function: the planner says so, naming the argument types
        return exp.Anonymous(this="jsonb_object_agg", expressions=args)
    pair = exp.Anonymous(this="jsonb_build_array", expressions=args)
    return exp.Anonymous(this="jsonb_object_of_pairs", expressions=[exp.ArrayAgg(this=pair)])


AT_SIGN = TokenType.EXCLAMATION  # PostgreSQL's prefix ``@`` (sqlglot reads it as a parameter)


class PostgresCalls(Postgres):
    """sqlglot's PostgreSQL dialect, except that a known function called with more arguments
    than sqlglot's node takes (``upper('a', 'b')``), or with none where it needs some
    (``concat()``), parses as a plain call, so the planner refuses it as PostgreSQL does
    (42883, naming the argument types), not as a syntax error; ``position`` takes
    ``a IN b`` alone (``position(a, b)`` is a syntax error, as in PostgreSQL);
    an interval literal keeps its text, ``date_part`` stays itself (a double, where
    ``extract`` is a numeric), ``jsonb_agg(x …)`` is ``to_jsonb(array_agg(x …))``,
    ``jsonb_object_agg(k, v)`` an object of ``array_agg(jsonb_build_array(k, v))``, and
    ``to_char``, ``to_date`` and ``to_timestamp`` keep their templates as written (sqlglot
    would rewrite them as strftime's); ``age(x)`` is ``age(current_date, x)``; ``oid`` is a
    type, so ``$1::oid[]`` parses (sqlglot reads an unknown type then ``[]`` as a subscript);
    a type's name called with one argument (``float8(x)``, ``int4(x)``) is a cast; ``@ x`` is
    ``abs(x)``; a subscript is kept as written (sqlglot would store ``a[i]`` as ``a[i - 1]``,
    folding constants, for dialects counting from 0, so that ``a[2::bigint]`` read the first
    element)."""

    INDEX_OFFSET = 0

    class Tokenizer(Postgres.Tokenizer):
        KEYWORDS = {**Postgres.Tokenizer.KEYWORDS, "OID": TokenType.UINT}  # noqa: RUF012
        SINGLE_TOKENS = {**Postgres.Tokenizer.SINGLE_TOKENS, "@": AT_SIGN}  # noqa: RUF012

    class Generator(Postgres.Generator):
        TYPE_MAPPING = {**Postgres.Generator.TYPE_MAPPING, exp.DataType.Type.UINT: "OID"}  # noqa: RUF012

        def sql(self, expression: Any, key: str | None = None, comment: bool = True) -> str:
            """An expression written after unary ``+`` signs keeps them (sqlglot drops them)."""
            text = super().sql(expression, key, comment)
            plus = expression.meta.get("plus", 0) if isinstance(expression, exp.Expr) else 0
            return "+(" * plus + text + ")" * plus

        def null_sql(self, expression: exp.Null) -> str:
            return "UNKNOWN" if expression.meta.get("unknown") else super().null_sql(expression)

        def anonymous_sql(self, expression: exp.Anonymous) -> str:
            """A call the parse made of a PostgreSQL form shows as written (in messages)."""
            written = expression.meta.get("written")
            return str(written) if written else super().anonymous_sql(expression)

    class Parser(TypedLiterals):
        FUNCTIONS = {  # noqa: RUF012 (sqlglot's own class attribute)
            **Postgres.Parser.FUNCTIONS,
            "TO_CHAR": lambda args: exp.Anonymous(this="to_char", expressions=args),
            **{name: _plain_call(name) for name in _PLAIN_CALLS},
            "AGE": _age,
            "TRANSACTION_TIMESTAMP": _transaction_timestamp,
            "STATEMENT_TIMESTAMP": _clock("statement_timestamp", StatementTimestamp),
            "CLOCK_TIMESTAMP": _clock("clock_timestamp", ClockTimestamp),
            "JSONB_OBJECT_AGG": _object_agg,
            "STRPOS": _strpos,
            "ROW": lambda args: exp.Tuple(expressions=args),  # ROW(a, b) is (a, b)
            "UUID_GENERATE_V4": _uuid_v4,
            "MOD": _mod,
            **{name: _two_args(name) for name in _TWO_ARGS},
            "JSONB_AGG": _jsonb_agg,
            "JSON_AGG": _json_agg,
            **{name: _type_call(name) for name in _TYPE_CALLS},
        }
        PRIMARY_PARSERS = {  # noqa: RUF012 (a dollar-quoted string is a string constant)
            **TypedLiterals.PRIMARY_PARSERS,
            TokenType.HEREDOC_STRING: lambda self, token: exp.Literal.string(token.text),
        }
        KEY_CONSTRAINT_OPTIONS = {  # noqa: RUF012 (sqlglot's own class attribute)
            **Postgres.Parser.KEY_CONSTRAINT_OPTIONS,
            "NOT": ("ENFORCED", "DEFERRABLE"),  # NOT DEFERRABLE: the default, said
        }
        LAMBDAS = {  # noqa: RUF012 (PostgreSQL has no lambdas: f(j -> 'k') is jsonb's ->)
            k: v for k, v in Postgres.Parser.LAMBDAS.items() if k != TokenType.ARROW
        }
        FUNC_TOKENS = {*Postgres.Parser.FUNC_TOKENS, TokenType.OVERLAPS}  # noqa: RUF012 (overlaps(a, b, c, d))
        FUNCTION_PARSERS = {  # noqa: RUF012 (sqlglot's own class attribute)
            k: v
            for k, v in Postgres.Parser.FUNCTION_PARSERS.items()
            if k not in ("DATE_PART", "JSON_AGG", *_PLAIN_CALLS)
        } | {"POSITION": lambda self: self._parse_position_in()}

        UNARY_PARSERS = {  # noqa: RUF012 (a unary + is kept, for the deparsed text)
            **Postgres.Parser.UNARY_PARSERS,
            TokenType.PLUS: lambda self: self._parse_plus(),
            AT_SIGN: lambda self: self._parse_absolute(),
        }

        def _parse_absolute(self) -> Any:
            """``@ x``: the absolute value of what follows up to an operator that binds less
            than arithmetic (``@ a - b`` is ``abs(a - b)``), as PostgreSQL's prefix ``@``."""
            operand = self._parse_bitwise()
            if operand is None:
                self.raise_error("Expected an expression after @")
            return self.expression(exp.Abs(this=operand))

        def _parse_cube_or_rollup(self, with_prefix: bool = False) -> Any:
            """ROLLUP (…) and CUBE (…) of any expressions (``ROLLUP (a > 1)``), as PostgreSQL."""
            if self._match(TokenType.CUBE):
                kind: Any = exp.Cube
            elif self._match(TokenType.ROLLUP):
                kind = exp.Rollup
            else:
                return None
            items = [] if with_prefix else self._parse_wrapped_csv(self._parse_disjunction)
            return self.expression(kind(expressions=items))

        def _parse_grouping_set(self) -> Any:
            return (
                self._parse_grouping_sets()
                or self._parse_cube_or_rollup()
                or self._parse_disjunction()
            )

        def _parse_plus(self) -> Any:
            """``+ x``: ``x``, marked (``meta["plus"]``) so the deparsed text shows the +."""
            operand = self._parse_unary()
            if operand is not None:
                operand.meta["plus"] = operand.meta.get("plus", 0) + 1
            return operand

        def _parse_null(self) -> Any:
            """``IS [NOT] UNKNOWN`` is IS NULL of a boolean, marked to show as written."""
            if self._match(TokenType.UNKNOWN):
                node = exp.Null()
                node.meta["unknown"] = True
                return node
            return super()._parse_null()

        def _parse_substring(self) -> exp.Expression:
            """``substring(s SIMILAR p ESCAPE e)``: the part of ``s`` that ``p``'s ``e"``
            marks, as ``substring(s FROM similar_to_escape(p, e))`` (PostgreSQL's reading)."""
            index = self._index
            this = self._parse_bitwise()
            if self._curr is not None and self._curr.text.upper() == "SIMILAR":
                self._advance()
                pattern = self._parse_bitwise()
                args = [pattern]
                if self._match_text_seq("ESCAPE"):
                    args.append(self._parse_bitwise())
                regex = exp.Anonymous(this="similar_to_escape", expressions=args)
                return self.expression(exp.Substring(this=this, start=regex))
            self._retreat(index)
            return super()._parse_substring()

        def _parse_ordered(self, parse_method: Any = None) -> Any:
            """``x USING <`` is ``x ASC`` and ``x USING >`` is ``x DESC``: the sort operators
            of a type's default ordering, as PostgreSQL reads them."""

            def sort_key() -> Any:
                this = parse_method() if parse_method else self._parse_disjunction()
                after = self._next
                if (
                    self._match(TokenType.USING, advance=False)
                    and after is not None
                    and after.token_type in (TokenType.LT, TokenType.GT)
                ):
                    self._advance()  # the operator, read as the direction it names
                    less = after.token_type == TokenType.LT
                    after.token_type = TokenType.ASC if less else TokenType.DESC
                return this

            return super()._parse_ordered(sort_key)

        def _parse_position_in(self) -> exp.Expression:
            """``position(a IN b)``, PostgreSQL's only form of the call."""
            needle = self._parse_bitwise()
            if not self._match(TokenType.IN):
                self.raise_error("Expected IN")
            return self.expression(exp.StrPosition(this=self._parse_bitwise(), substr=needle))

        def validate_expression(self, expression: Any, args: list | None = None) -> Any:
            if (
                args is not None
                and isinstance(expression, exp.Func)
                and not isinstance(expression, exp.Anonymous)
                and self._misses_arguments(expression, args)
            ):
                written = self._calls[-1] if self._calls else expression.sql_name().lower()
                return exp.Anonymous(this=written, expressions=args)
            return super().validate_expression(expression, args)

        def _misses_arguments(self, expression: exp.Func, args: list) -> bool:
            """Too many arguments for sqlglot's node, or none where it needs some."""
            errors = expression.error_messages(args)
            if any("number of provided arguments" in m for m in errors):
                return True
            none = not args and expression.sql_name().lower() not in _GRAMMAR
            return none and any(m.startswith("Required keyword") for m in errors)

        def _parse_function_call(self, *args: Any, **kwargs: Any) -> Any:
            """A call keeps the name it was written with (``meta["name"]``): PostgreSQL names
            a column by it (``strpos``, ``ceiling``) where sqlglot's node is shared."""
            written = self._curr.text.lower() if self._curr is not None else None
            start = self._index
            if not hasattr(self, "_calls"):
                self._calls: list[str | None] = []
            self._calls.append(written)  # the names of the calls being read, innermost last
            try:
                found = super()._parse_function_call(*args, **kwargs)
            finally:
                self._calls.pop()
            inner = found.this if isinstance(found, exp.Window) else found
            if written and isinstance(inner, exp.Expression) and "name" not in inner.meta:
                inner.meta["name"] = written
                inner.meta["arity"] = _arguments(self._tokens, start)
            return found

        def _parse_trim(self) -> Any:
            """``trim(a, b, c…)`` of more arguments than PostgreSQL's btrim takes is a call
            of btrim, which the planner refuses (42883) as PostgreSQL does."""
            index = self._index
            args = self._parse_csv(self._parse_assignment)
            if (
                len(args) > 2
                and self._curr is not None
                and self._curr.token_type == TokenType.R_PAREN
            ):
                return exp.Anonymous(this="btrim", expressions=args)
            self._retreat(index)
            return super()._parse_trim()

        def _parse_interval(
            self, require_interval: bool = True, parse_function_unit: bool = True
        ) -> Any:
            """``INTERVAL 'text' [unit]`` alone: a ``+`` after it is an addition (sqlglot
            reads ``INTERVAL '1 day' + 1`` as a sum of intervals)."""
            index = self._index
            if self._match(TokenType.INTERVAL) and self._match(TokenType.STRING, advance=False):
                return self._parse_interval_span(self._parse_primary(), parse_function_unit)
            self._retreat(index)
            return super()._parse_interval(require_interval, parse_function_unit)

        def _parse_interval_span(self, this: Any, parse_function_unit: bool = True) -> Any:
            """``INTERVAL 'text' [unit]`` keeps its whole text (sqlglot's own reading keeps
            only the first number and unit of ``'1 day 02:03:04'``)."""
            if this is None or not this.is_string:
                return super()._parse_interval_span(this, parse_function_unit)
            curr = self._curr
            unit = None
            if curr is not None and curr.text.upper() in self.dialect.VALID_INTERVAL_UNITS:
                unit = self._parse_var(any_token=True, upper=True)
            return self.expression(exp.Interval(this=this, unit=unit))


_OPEN = (TokenType.L_PAREN, TokenType.L_BRACKET, TokenType.L_BRACE)
_CLOSE = (TokenType.R_PAREN, TokenType.R_BRACKET, TokenType.R_BRACE)


def _arguments(tokens: list[Any], start: int) -> int:
    """How many arguments the call whose name is ``tokens[start]`` was written with (its
    commas outside brackets; sqlglot's node may keep or drop some, see ``arity.all_read``)."""
    if start + 1 >= len(tokens) or tokens[start + 1].token_type != TokenType.L_PAREN:
        return 0
    depth, commas, empty = 0, 0, True
    for token in tokens[start + 2 :]:
        kind = token.token_type
        if kind in _CLOSE:
            if depth == 0:
                break
            depth -= 1
        elif kind in _OPEN:
            depth += 1
        elif kind == TokenType.COMMA and depth == 0:
            commas += 1
        empty = False
    return 0 if empty else commas + 1


def parse_sql(text: str) -> exp.Expression:
    """``text`` parsed by sqlglot's PostgreSQL dialect; a syntax error is a PlanError 42601
    worded as PostgreSQL's (``syntax error at or near "x"``, ``at end of input``). The trees
    of recent texts are kept (a statement is described, then run: one parse); each caller
    gets a copy of its own, which planning may change."""
    return shared_tree(text).copy()


def sql_text(node: exp.Expression) -> str:
    """``node`` written back as PostgreSQL text that :func:`parse_sql` reads as the same tree."""
    return node.sql(dialect=PostgresCalls)


@functools.lru_cache(maxsize=256)
def shared_tree(text: str) -> exp.Expression:
    """The parse cache's tree of ``text`` (not to be changed: :func:`parse_sql` copies it)."""
    try:
        parsed = sqlglot.parse(text, read=PostgresCalls)
    except ParseError as e:
        raise PlanError(_syntax_message(e), sqlstate="42601") from None
    except TokenError as e:
        raise PlanError(f"syntax error: {_first_line(e)}", sqlstate="42601") from None
    if len(parsed) != 1 or parsed[0] is None:
        raise PlanError(f"expected one statement, got {text!r}", sqlstate="42601")
    for dot in list(parsed[0].find_all(exp.Dot)):  # pg_catalog.f(x) is f(x)
        if dot.this.name.lower() == "pg_catalog" and isinstance(dot.expression, exp.Func):
            dot.replace(dot.expression)
    for f in list(parsed[0].find_all(exp.Filter)):  # FILTER goes to the array_agg inside a
        if isinstance(f.this, exp.AggFunc | exp.WithinGroup):  # call spelled as one (jsonb_agg)
            continue
        aggregates = list(f.this.find_all(exp.AggFunc))
        if len(aggregates) == 1 and isinstance(aggregates[0], exp.ArrayAgg):
            inner = aggregates[0]
            inner.replace(exp.Filter(this=inner.copy(), expression=f.expression))
            f.replace(f.this)
    for w in list(parsed[0].find_all(exp.Window)):  # and so does OVER (json_agg(x) OVER w)
        aggregates = [] if isinstance(w.this, exp.AggFunc) else list(w.this.find_all(exp.AggFunc))
        if len(aggregates) == 1 and isinstance(aggregates[0], exp.ArrayAgg):
            inner = aggregates[0]
            inner = inner.parent if isinstance(inner.parent, exp.Filter) else inner
            moved = w.copy()
            moved.set("this", inner.copy())
            inner.replace(moved)
            w.replace(w.this)
    return pg_forms.rewrite(parsed[0])


def _syntax_message(e: ParseError) -> str:
    if not e.errors:
        return f"syntax error: {_first_line(e)}"
    first = e.errors[0]
    near, after = str(first.get("highlight") or ""), str(first.get("end_context") or "")
    incomplete = re.match(r"Required keyword|Expecting|Expected", first.get("description", ""))
    if not near.strip() or (incomplete and not after.strip()):
        return "syntax error at end of input"
    return f'syntax error at or near "{near}"'


def _first_line(e: Exception) -> str:
    return re.sub(r"\x1b\[[0-9;]*m", "", str(e)).splitlines()[0]
