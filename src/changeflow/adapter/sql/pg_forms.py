"""PostgreSQL forms read as calls and expressions the planner already has: the ordered-set
aggregates (``percentile_cont``, ``percentile_disc``, ``mode() WITHIN GROUP (ORDER BY x)``)
and ``bit_and``/``bit_or``/``bit_xor`` as functions of ``array_agg`` (kept per group in a view
as ``array_agg`` is), ``count(DISTINCT (a, b))`` as a count of distinct records, ``U&'…'``
strings as literals, ``(s1, e1) OVERLAPS (s2, e2)`` (or ``overlaps(s1, e1, s2, e2)``) as
``overlaps_of(s1, e1, s2, e2)``,
``make_interval`` (named fields or not) and ``make_time`` as calls of all their fields; the
set-returning ``regexp_split_to_table`` and ``jsonb_path_query`` as unnests of their array
forms and ``regexp_matches`` as its nth match of a ``generate_series`` (in FROM, each as a
subquery, LATERAL when it names columns); ``(a, b) IN (SELECT x, y …)`` as the EXISTS tests
that give PostgreSQL's three values (NOT IN too; a correlated plain SELECT takes the tests
in its own WHERE, a UNION is an OR of its sides'), ``IN (VALUES …)`` likewise and
``IN ((1, 2), …)`` as row equalities."""

from __future__ import annotations

import re

from sqlglot import exp

from changeflow.adapter.sql.json_records import RECORD_FUNCTIONS, json_record
from changeflow.errors import PlanError

_ORDERED_SETS = {exp.PercentileCont: "percentile_cont", exp.PercentileDisc: "percentile_disc"}
_BITS = {exp.BitwiseAndAgg: "bit_and", exp.BitwiseOrAgg: "bit_or", exp.BitwiseXorAgg: "bit_xor"}


_FORMS: tuple[type[exp.Expression], ...] = (
    exp.WithinGroup,
    *_BITS,
    exp.Count,
    exp.UnicodeString,
    exp.Overlaps,
    exp.MakeInterval,
    exp.TimeFromParts,
    exp.Anonymous,
    exp.In,
)


def rewrite(tree: exp.Expression) -> exp.Expression:
    """``tree`` with the forms above replaced (in place; the root is returned). One walk finds
    which forms the tree has (none, for most statements); only their rewrites walk again (no
    rewrite makes a form a later one reads)."""
    found = {type(n) for n in tree.walk() if isinstance(n, _FORMS)}
    if not found:
        return tree

    def has(*kinds: type[exp.Expression]) -> bool:
        return any(issubclass(f, kinds) for f in found)

    if has(exp.WithinGroup):
        for node in list(tree.find_all(exp.WithinGroup)):
            _within_group(node)
    if has(*_BITS):
        for node in list(tree.find_all(*_BITS)):
            _of_values(node, node.this, None, f"{_BITS[type(node)]}_of", [])
    if has(exp.Count):
        for node in list(tree.find_all(exp.Count)):
            _distinct_record(node)
    if has(exp.UnicodeString):
        for node in list(tree.find_all(exp.UnicodeString)):
            node.replace(exp.Literal.string(unicode_text(node.name, node.args.get("escape"))))
    if has(exp.Overlaps):
        for node in list(tree.find_all(exp.Overlaps)):
            pairs = (node.this, node.expression)
            if all(isinstance(p, exp.Tuple) and len(p.expressions) == 2 for p in pairs):
                args = [e.copy() for p in pairs for e in p.expressions]
                _call(node, "overlaps_of", args, "overlaps")
    if has(exp.MakeInterval):
        for node in list(tree.find_all(exp.MakeInterval)):
            fields = [node.args.get(f) for f in exp.MakeInterval.arg_types]
            values = [f.expression if isinstance(f, exp.Kwarg) else f for f in fields]
            zero = [exp.Literal.number(0) if v is None else v for v in values]
            _call(node, "make_interval", zero)
    if has(exp.TimeFromParts):
        for node in list(tree.find_all(exp.TimeFromParts)):
            given = [node.args.get(f) for f in exp.TimeFromParts.arg_types]
            _call(node, "make_time", [a for a in given if a is not None])
    if has(exp.Anonymous):
        for node in list(tree.find_all(exp.Anonymous)):
            if str(node.this).lower() in _SET_RETURNING:
                _set_returning(node)
            elif str(node.this).lower() in RECORD_FUNCTIONS:
                json_record(node)
            elif node.name.lower() == "overlaps" and len(node.expressions) == 4:  # overlaps(…)
                _call(node, "overlaps_of", [a.copy() for a in node.expressions], "overlaps")
    if has(exp.In):
        for node in list(tree.find_all(exp.In)):
            if isinstance(node.this, exp.Tuple):
                _row_in(node)
    return tree


def _row_in(node: exp.In) -> None:
    """``(a, b) IN (SELECT x, y …)``: TRUE if a row equals, else NULL if a row might (no
    pair differs, some is NULL), else FALSE."""
    listed = node.expressions
    if len(listed) == 1 and isinstance(listed[0], exp.Values):  # IN (VALUES …)
        node.set("query", exp.Subquery(this=listed[0]))
        node.set("expressions", [])
    elif listed and all(isinstance(e, exp.Tuple) for e in listed):  # IN ((1, 2), (3, 4))
        tests = [exp.EQ(this=node.this.copy(), expression=e.copy()) for e in listed]
        node.replace(exp.Paren(this=exp.or_(*tests)))
        return
    query = node.args.get("query")
    if query is None:
        return
    inner = query.this if isinstance(query, exp.Subquery) else query
    lhs = node.this.expressions
    selects = inner.selects if isinstance(inner, exp.Query) else []
    if isinstance(inner, exp.Values) and isinstance(inner.expressions[0], exp.Tuple):
        selects = inner.expressions[0].expressions
    if isinstance(inner, exp.Union) and _splittable(inner):  # IN (A UNION B): IN A OR IN B
        sides = [
            exp.In(this=node.this.copy(), query=exp.Subquery(this=side.copy()))
            for side in (inner.this, inner.expression)
        ]
        node.replace(exp.Paren(this=exp.Or(this=sides[0], expression=sides[1])))
        for side in sides:
            side.meta["branch"] = True  # its NULLs typed by the UNION's other side
            _row_in(side)
        return
    if not selects:
        return
    if _constant_row(inner, selects, len(lhs), node.meta.get("branch", False)):
        pairs = zip(lhs, selects, strict=True)  # IN (SELECT 3, t.b): a = 3 AND b = t.b
        tests = [exp.EQ(this=a.copy(), expression=e.unalias().copy()) for a, e in pairs]
        node.replace(exp.Paren(this=exp.And(this=exp.and_(*tests), expression=exp.true())))
        return
    starred = any(isinstance(s, exp.Star) or s.find(exp.Star) for s in selects)
    if not starred and len(selects) != len(lhs):
        many = "many" if len(selects) > len(lhs) else "few"
        raise PlanError(f"subquery has too {many} columns", sqlstate="42601")
    names = [f"_in{i}" for i in range(len(lhs))]
    alias = exp.TableAlias(this=exp.to_identifier("_in"), columns=names)
    alias.meta["exact"] = True  # the subquery's columns, one for each of the lhs
    distinct = inner.args.get("distinct") if isinstance(inner, exp.Select) else None
    if isinstance(distinct, exp.Distinct) and not distinct.args.get("on"):
        inner.set("distinct", None)  # a duplicate row changes no IN
    if not starred:
        _qualify_outer(node, inner, lhs)
    merged = not starred and _mergeable(inner, lhs)

    def exists(maybe: bool) -> exp.Expression:
        tests: list[exp.Expression] = []
        for i, value in enumerate(lhs):
            other = selects[i].unalias() if merged else exp.column(names[i], "_in")
            test: exp.Expression = exp.EQ(this=other.copy(), expression=value.copy())
            if maybe:
                test = exp.Coalesce(this=test, expressions=[exp.true()])
            tests.append(test)
        if merged:  # the subquery's own FROM and WHERE (it may name outer columns)
            query = inner.copy()
            query.set("expressions", [exp.Literal.number(1)])
            query.set("order", None)
            where = query.args.get("where")
            kept = [exp.Paren(this=where.this.copy())] if where is not None else []
            return exp.Exists(this=query.where(exp.and_(*kept, *tests), append=False))
        derived = exp.Subquery(this=inner.copy(), alias=alias.copy())
        return exp.Exists(this=exp.select("1").from_(derived).where(exp.and_(*tests)))

    test = _case(exists(False), exp.true(), _case(exists(True), exp.null(), exp.false()))
    node.replace(exp.Paren(this=exp.And(this=test, expression=exp.true())))  # named ?column?


_SET_RETURNING = ("regexp_matches", "regexp_split_to_table", "jsonb_path_query", "string_to_table")
_WHOLE = {  # the array whose elements a set-returning function's rows are
    "regexp_split_to_table": "regexp_split_to_array",
    "jsonb_path_query": "jsonb_path_values",
    "string_to_table": "string_to_array",
}


def _set_returning(node: exp.Anonymous) -> None:
    """``regexp_matches``, ``regexp_split_to_table``, ``string_to_table`` (2 or 3 arguments)
    or ``jsonb_path_query`` (2 to 4; other calls stay, for the planner's 42883): in a select
    list as an unnest, in FROM as a subquery of one."""
    name, args = str(node.this).lower(), [a.copy() for a in node.expressions]
    if len(args) not in ((2, 3, 4) if name == "jsonb_path_query" else (2, 3)):
        return
    if name in _WHOLE:
        rows: exp.Expression = exp.Explode(this=exp.Anonymous(this=_WHOLE[name], expressions=args))
    else:
        flags = args[2] if len(args) == 3 else exp.Literal.string("")
        count = exp.Anonymous(
            this="regexp_match_count", expressions=[*(a.copy() for a in args[:2]), flags.copy()]
        )
        count.meta["written"] = _written(node)
        at = exp.ExplodingGenerateSeries(start=exp.Literal.number(1), end=count)
        rows = exp.Anonymous(this="regexp_nth_match", expressions=[*args[:2], at, flags])
        rows.meta["written"] = _written(node)
    rows.meta["name"] = name
    table = node.parent
    if not (isinstance(table, exp.Table | exp.Lateral) and table.this is node):
        node.replace(rows)
        return
    alias = table.args.get("alias")
    label = alias.this if alias is not None and alias.this is not None else exp.to_identifier(name)
    columns = alias.columns if alias is not None and alias.columns else [label]
    select = exp.Select(expressions=[exp.Alias(this=rows, alias=columns[0].copy())])
    alias = exp.TableAlias(this=label.copy(), columns=[c.copy() for c in columns])
    found: exp.Expression = exp.Subquery(this=select, alias=alias)
    if node.find(exp.Column) is not None:
        found = exp.Lateral(this=exp.Subquery(this=select), alias=alias)
    table.replace(found)


def _written(node: exp.Expression) -> str:
    """``node`` as PostgreSQL text, kept beside the call that replaces it."""
    from changeflow.adapter.sql.dialect import sql_text  # (which reads this module)

    return sql_text(node)


def _call(
    node: exp.Expression, name: str, args: list[exp.Expression], shown: str | None = None
) -> None:
    """Replace ``node`` by a call of ``name``, its column named ``shown`` (or ``name``)."""
    call = exp.Anonymous(this=name, expressions=args)
    call.meta["name"] = shown or name
    call.meta["written"] = _written(node)
    node.replace(call)


def _within_group(node: exp.WithinGroup) -> None:
    """``f(…) WITHIN GROUP (ORDER BY x)`` of one sort key as ``f_of(array_agg(…), …)``."""
    order = node.expression
    call = node.this
    if not isinstance(order, exp.Order) or len(order.expressions) != 1:
        return
    key = order.expressions[0]
    if isinstance(call, exp.Mode) and not call.this:
        _of_values(node, key.this, key, "mode_of", [])
    elif type(call) in _ORDERED_SETS and call.this is not None:
        name = _ORDERED_SETS[type(call)]
        _of_values(node, key.this, key, f"{name}_of", [call.this])


def _of_values(
    node: exp.Expression,
    value: exp.Expression,
    key: exp.Ordered | None,
    form: str,
    extra: list[exp.Expression],
) -> None:
    """Replace ``node`` (and a FILTER around it) by ``form(array_agg(value [ORDER BY key])
    FILTER (WHERE value IS NOT NULL [AND filter]), *extra)``, named as the aggregate."""
    name = form.removesuffix("_of")
    target: exp.Expression = node
    keep: exp.Expression = exp.Not(this=exp.Is(this=value.copy(), expression=exp.Null()))
    if isinstance(node.parent, exp.Filter) and node.parent.this is node:
        target = node.parent
        keep = exp.And(this=keep, expression=exp.Paren(this=target.expression.this.copy()))
    values = value.copy()
    if key is not None:
        values = exp.Order(this=value.copy(), expressions=[key.copy()])
    agg = exp.Filter(this=exp.ArrayAgg(this=values), expression=exp.Where(this=keep))
    call = exp.Anonymous(this=form, expressions=[agg, *(e.copy() for e in extra)])
    call.meta["name"] = name
    call.meta["written"] = _written(target)
    target.replace(call)


def _distinct_record(node: exp.Count) -> None:
    """``count(DISTINCT (a, b))``: a record is never NULL, so each distinct one counts."""
    arg = node.this
    if not isinstance(arg, exp.Distinct) or len(arg.expressions) != 1:
        return
    row = arg.expressions[0]
    if isinstance(row, exp.Tuple):
        row.replace(exp.Anonymous(this="record_text", expressions=list(row.expressions)))


_NOT_MERGED = ("group", "having", "limit", "offset", "distinct", "qualify", "windows", "with")


def _constant_row(
    inner: exp.Expression, selects: list[exp.Expression], width: int, branch: bool
) -> bool:
    """Is ``inner`` one row of ``width`` values: a SELECT of no FROM and no clause (and, but
    in a UNION's side, no bare NULL: that is a text column, as PostgreSQL types it)."""
    if not isinstance(inner, exp.Select) or len(selects) != width:
        return False
    clauses = ("from_", "where", "joins", *_NOT_MERGED)
    if any(inner.args.get(k) for k in clauses) or inner.find(exp.AggFunc, exp.Window):
        return False
    if not branch and any(isinstance(s.unalias(), exp.Null) for s in selects):
        return False
    return not any(s.find(exp.Star, exp.Subquery) for s in selects)


def _splittable(union: exp.Union) -> bool:
    """A UNION [ALL] with no LIMIT, OFFSET or WITH of its own, each side a query."""
    if any(union.args.get(k) for k in ("limit", "offset", "with")):
        return False
    return all(isinstance(s, exp.Query) for s in (union.this, union.expression))


def _sources(select: exp.Select) -> list[exp.Expression]:
    from_ = select.args.get("from_")
    return [] if from_ is None else [from_.this, *(j.this for j in select.args.get("joins") or [])]


def _qualify_outer(node: exp.In, inner: exp.Expression, lhs: list[exp.Expression]) -> None:
    """In ``(a, b) IN (SELECT … WHERE x.id = t.id)`` (a correlated subquery) under a SELECT
    of one FROM item, qualify the lhs's bare columns by that item's name: then the test can
    join the subquery's own WHERE (:func:`_mergeable`)."""
    outer = node.find_ancestor(exp.Select)
    if not isinstance(inner, exp.Select) or outer is None or len(_sources(outer)) != 1:
        return
    inside = {s.alias_or_name.lower() for s in _sources(inner)}
    named = {c.table.lower() for c in inner.find_all(exp.Column) if c.table}
    bare = [c for e in lhs for c in e.find_all(exp.Column) if not c.table]
    source = _sources(outer)[0].alias_or_name
    if bare and named - inside and source.lower() not in inside:
        for column in bare:
            column.set("table", exp.to_identifier(source))


def _mergeable(inner: exp.Expression, lhs: list[exp.Expression]) -> bool:
    """Can ``(lhs) IN (inner)`` test the lhs in ``inner``'s own WHERE: a plain SELECT with a
    FROM and no aggregate, and each column of the lhs qualified by a name ``inner``'s FROM
    does not use (so the subquery keeps its own correlation)."""
    if not isinstance(inner, exp.Select) or inner.args.get("from_") is None:
        return False
    if any(inner.args.get(k) for k in _NOT_MERGED) or inner.find(exp.AggFunc, exp.Window):
        return False
    inside = {s.alias_or_name.lower() for s in _sources(inner)}
    columns = [c for e in lhs for c in e.find_all(exp.Column)]
    return all(c.table and c.table.lower() not in inside for c in columns)


def unicode_text(body: str, escape: exp.Expression | bool | None) -> str:
    """The text of ``U&'body'``: ``\\XXXX`` and ``\\+XXXXXX`` code points, ``\\\\`` a
    backslash (or the UESCAPE character's)."""
    given = escape.name if isinstance(escape, exp.Expression) else ""
    mark = re.escape(given or "\\")
    pattern = rf"{mark}(?:{mark}|\+([0-9A-Fa-f]{{6}})|([0-9A-Fa-f]{{4}}))"

    def one(m: re.Match[str]) -> str:
        code = m.group(1) or m.group(2)
        return m.group(0)[0] if code is None else chr(int(code, 16))

    return re.sub(pattern, one, body)


def _case(cond: exp.Expression, then: exp.Expression, other: exp.Expression) -> exp.Expression:
    return exp.Case(ifs=[exp.If(this=cond, true=then.copy())], default=other.copy())
