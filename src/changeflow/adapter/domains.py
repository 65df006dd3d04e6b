"""Domains: ``CREATE DOMAIN name [AS] type [DEFAULT e] [[CONSTRAINT c] NOT NULL | NULL |
CHECK (…)]…``, ``ALTER DOMAIN`` and ``DROP DOMAIN``, as PostgreSQL's.

A domain is a catalog item of kind ``type`` whose options hold its base type (as SQL), its
DEFAULT, NOT NULL and named CHECK constraints (their SQL reads the value as ``VALUE``). A column
of one keeps the domain's name as its type, which the catalogs show, and is stored, planned and
sent as its base type (PostgreSQL's RowDescription names the base type too). A write checks
each value it puts in such a column against the domain's constraints as they are when the
write is planned (23514, 23502 for a NULL where the domain is NOT NULL), as does a cast to
the domain; an INSERT that leaves such a column out takes the domain's DEFAULT where the
column has none."""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, replace
from functools import cached_property
from typing import Any

from sqlglot import exp

from changeflow.adapter.catalog import CatalogState, Item, split_name
from changeflow.adapter.checks import Check, _choose, column_renamed, planned
from changeflow.adapter.deparse import stored_sql
from changeflow.adapter.result import Result
from changeflow.adapter.sql.dialect import PostgresCalls, parse_sql
from changeflow.adapter.sql.statements import Statement, name
from changeflow.compute import expr as X
from changeflow.compute.expr import with_columns
from changeflow.compute.types import Column, SqlType
from changeflow.errors import EvalError, PlanError

VALUE = "value"  # the column a domain's constraints read (SQL's VALUE)


@dataclass(frozen=True)
class Domain:
    """A domain of the catalog: its catalog name, base type (SQL), DEFAULT (SQL), NOT NULL
    and CHECK constraints (over the column ``value``)."""

    name: str
    base: str
    default: str | None
    not_null: bool
    checks: tuple[Check, ...]

    @staticmethod
    def of(item: Item | None) -> Domain | None:
        """The domain ``item`` is, None if it is none."""
        found = item.options.get("domain") if item is not None and item.kind == "type" else None
        if found is None:
            return None
        checks = tuple(Check.from_json(c) for c in found["checks"])
        return Domain(item.name, found["base"], found["default"], found["not_null"], checks)  # type: ignore[union-attr]

    def to_json(self) -> dict[str, Any]:
        checks = [c.to_json() for c in self.checks]
        return {"base": self.base, "default": self.default, "not_null": self.not_null} | {
            "checks": checks
        }

    @property
    def base_type(self) -> exp.DataType:
        """The base type as sqlglot's node."""
        return exp.DataType.build(self.base, dialect=PostgresCalls, udt=True)

    @cached_property
    def sql_type(self) -> SqlType:
        from changeflow.adapter.sql.types import column_type

        return column_type(self.base_type)[0]

    @property
    def shown(self) -> str:
        return split_name(self.name)[1]

    def checked(self, value: X.Expr) -> X.Expr:
        """``value`` (of the base type) as a value of the domain: 23514 where a CHECK finds
        it FALSE, 23502 for NULL where the domain is NOT NULL (a cast to it)."""
        whens = []
        if self.not_null:
            message = f"domain {self.shown} does not allow null values"
            whens.append((X.IsNull(value), X.Raise(message, "23502")))
        for check in self.checks:
            found = planned(check, (Column(VALUE, value.type),), self.shown)
            message = f'value for domain {self.shown} violates check constraint "{check.name}"'
            whens.append((X.Not(with_columns(found, [value])), X.Raise(message, "23514")))
        return X.Case(tuple(whens), value) if whens else value

    def column_checks(self, column: str) -> list[Check]:
        """Its constraints as checks of a column ``column`` of a table (NOT NULL as one named
        ``""``), each naming the domain for its error."""
        out = [
            Check(c.name, stored_sql(column_renamed(c.tree, VALUE, column)), self.shown)
            for c in self.checks
        ]
        if self.not_null:
            tree = column_renamed(
                parse_sql(f"SELECT {VALUE} IS NOT NULL").expressions[0], VALUE, column
            )
            out.insert(0, Check("", stored_sql(tree), self.shown))
        return out


def domain_named(state: CatalogState, type_name: str) -> Domain | None:
    """The domain a statement names ``type_name`` (by the search path), None if none is."""
    return Domain.of(state.find(type_name))


_LAST: list[Any] = [None, {}]  # the catalog version last asked and its domains by name


def domains_of(state: CatalogState) -> dict[str, Domain]:
    """The catalog's domains by catalog name (as a column of one names its type), kept for
    the last version asked: every statement's planning asks for its tables."""
    last, found = _LAST
    if last is not state:
        found = {i.name: d for i in state.items.values() if (d := Domain.of(i)) is not None}
        _LAST[:] = [state, found]
    return found  # type: ignore[no-any-return]


def domain_checks(state: CatalogState, item: Item) -> tuple[Check, ...]:
    """The checks the domains of ``item``'s columns put on its rows."""
    domains = domains_of(state)
    out: list[Check] = []
    for column, type_name, _ in item.columns if domains else ():
        if (domain := domains.get(type_name)) is not None:
            out += domain.column_checks(column)
    return tuple(out)


def domain_defaults(state: CatalogState, item: Item, given: tuple[str | None, ...]) -> tuple:
    """``item``'s column defaults (``given``), its domains' where a column has none."""
    domains = domains_of(state)
    if not domains:
        return given
    out = []
    for (_, type_name, _), default in zip(item.columns, given, strict=True):
        domain = domains.get(type_name) if default is None else None
        out.append(domain.default if domain is not None else default)
    return tuple(out)


def domain_default(state: CatalogState, type_name: str | None) -> str | None:
    """The DEFAULT (SQL) of the domain ``type_name``, None if it has none or is no domain."""
    domain = domains_of(state).get(type_name or "")
    return None if domain is None else domain.default


def values_pass(state: CatalogState, type_name: str, values: Iterable[Any]) -> None:
    """The domain's error (23514, 23502) for the first of ``values`` the domain ``type_name``
    refuses (a column changed to it, or added with its DEFAULT); nothing for another type."""
    domain = domains_of(state).get(type_name)
    if domain is not None:
        checked = domain.checked(X.Col(0, domain.sql_type))
        for value in values:
            checked.eval((value,))


def domain_violation(check: Check) -> EvalError:
    """PostgreSQL's error for a value the domain's ``check`` refuses."""
    if not check.name:
        message = f"domain {check.domain} does not allow null values"
        return EvalError(message, sqlstate="23502")
    return EvalError(
        f'value for domain {check.domain} violates check constraint "{check.name}"',
        sqlstate="23514",
        constraint=check.name,
    )


# -- the statements ----------------------------------------------------------------------------


def create_domain(env: Any, stmt: Statement) -> Result:
    """``CREATE DOMAIN name [AS] type [COLLATE c] [DEFAULT e] [constraints]``."""
    g = stmt.args
    state = env.catalog.load()
    domain_name = state.creation_name(name(g["name"]))
    if state.by_name(domain_name) is not None:
        raise PlanError(f'type "{split_name(domain_name)[1]}" already exists', sqlstate="42710")
    try:
        (column,) = parse_sql(f"CREATE TABLE x ({VALUE} {g['rest']})").this.expressions
    except Exception:
        raise PlanError(
            f"syntax error in CREATE DOMAIN {g['name']} {g['rest'].strip()}: it takes a type, "
            "then DEFAULT, NOT NULL, NULL and [CONSTRAINT name] CHECK (…)",
            sqlstate="42601",
        ) from None
    base = column.args.get("kind")
    if not isinstance(base, exp.DataType) or not isinstance(column, exp.ColumnDef):
        raise PlanError(f"CREATE DOMAIN {g['name']} needs a type", sqlstate="42601")
    if base.this == exp.DataType.Type.USERDEFINED and _named_domain(state, base):
        raise PlanError("a domain over a domain is not supported", sqlstate="0A000")
    domain = Domain(domain_name, base.sql(dialect=PostgresCalls), None, False, ())
    kind = domain.sql_type  # 42704 for an unknown type
    for constraint in column.args.get("constraints") or []:
        domain = _constrained(domain, constraint, kind)

    def add(state: CatalogState) -> tuple[CatalogState, None]:
        item_id, state = state.allocate()
        options = {"domain": domain.to_json()}
        return state.with_item(
            Item(item_id, domain_name, "type", stmt.text, (), options=options)
        ), None

    env.catalog.change(add)
    return Result("CREATE DOMAIN")


def _named_domain(state: CatalogState, dt: exp.DataType) -> bool:
    from changeflow.adapter.sql.types import type_name_of

    type_name = type_name_of(dt)
    return type_name is not None and domain_named(state, type_name) is not None


def _constrained(domain: Domain, constraint: exp.Expression, kind: SqlType) -> Domain:
    """``domain`` with one more of CREATE DOMAIN's constraints."""
    found = constraint.args.get("kind")
    if isinstance(found, exp.NotNullColumnConstraint):
        return replace(domain, not_null=not found.args.get("allow_null"))
    if isinstance(found, exp.DefaultColumnConstraint):
        default = stored_sql(found.this)
        _default_fits(domain, kind, default)
        return replace(domain, default=default)
    if isinstance(found, exp.CollateColumnConstraint):
        return domain
    if isinstance(found, exp.CheckColumnConstraint):
        given = constraint.this.name if isinstance(constraint.this, exp.Identifier) else None
        return _with_check(domain, given, stored_sql(found.this), kind)
    raise PlanError(
        f"CREATE DOMAIN takes DEFAULT, NOT NULL, NULL and CHECK constraints, not "
        f"{constraint.sql()}",
        sqlstate="42601",
    )


def _with_check(domain: Domain, given: str | None, sql: str, kind: SqlType) -> Domain:
    """``domain`` with the CHECK ``sql`` named ``given`` (or as PostgreSQL names it:
    ``domain_check``, then ``domain_check1``…); 42804 and the like for a bad one."""
    taken = {c.name for c in domain.checks}
    planned(Check(given or "", sql), (Column(VALUE, kind),), domain.shown)
    if given is not None and given in taken:
        message = f'constraint "{given}" for domain {domain.shown} already exists'
        raise PlanError(message, sqlstate="42710")
    check = Check(given or _choose(domain.shown, None, taken), sql)
    return replace(domain, checks=(*domain.checks, check))


def _default_fits(domain: Domain, kind: SqlType, default: str) -> None:
    from changeflow.adapter.sql.dml import default_plan

    default_plan(Column(VALUE, kind), default)


def drop_domain(env: Any, stmt: Statement, keep: list[Item] | None = None) -> Result:
    """``DROP DOMAIN [IF EXISTS] name, … [CASCADE | RESTRICT]`` (42809 for a type that is
    not a domain), as DROP TYPE drops it."""
    from changeflow.adapter.enum_types import drop_type

    state = env.catalog.load()
    for type_name in re.split(r"\s*,\s*", stmt.args["names"].strip()):
        item = state.find(name(type_name))
        if item is not None and item.kind == "type" and Domain.of(item) is None:
            raise PlanError(f'"{name(type_name)}" is not a domain', sqlstate="42809")
    result = drop_type(env, stmt, keep)
    return Result("DROP DOMAIN", notices=result.notices)


_ALTER = re.compile(
    r"(?P<set>SET|DROP)\s+DEFAULT(?:\s+(?P<default>.+))?"
    r"|(?P<nn>SET|DROP)\s+NOT\s+NULL"
    r"|ADD\s+(?P<check>(?:CONSTRAINT\s+\S+\s+)?CHECK\s*\(.+\))(?P<not_valid>\s+NOT\s+VALID)?"
    r"|DROP\s+CONSTRAINT\s+(?P<ie>IF\s+EXISTS\s+)?(?P<dropped>\S+)(?:\s+(?:CASCADE|RESTRICT))?"
    r"|RENAME\s+CONSTRAINT\s+(?P<old>\S+)\s+TO\s+(?P<new>\S+)"
    r"|RENAME\s+TO\s+(?P<renamed>\S+)"
    r"|OWNER\s+TO\s+(?P<owner>\S+)",
    re.I | re.S,
)


def alter_domain(env: Any, stmt: Statement) -> Result:
    """``ALTER DOMAIN name`` SET/DROP DEFAULT, SET/DROP NOT NULL, ADD [CONSTRAINT c]
    CHECK (…) [NOT VALID], DROP CONSTRAINT [IF EXISTS] c, RENAME CONSTRAINT c TO d and OWNER TO.
    A constraint added (or NOT NULL set) is checked against the values of every column of the
    domain first (23514, 23502), unless NOT VALID."""
    state = env.catalog.load()
    domain_name, rest = name(stmt.args["name"]), stmt.args["rest"].strip()
    item = state.find(domain_name)
    domain = Domain.of(item)
    if item is None or domain is None:
        raise PlanError(f'type "{domain_name}" does not exist', sqlstate="42704")
    m = _ALTER.fullmatch(rest)
    if m is None:
        raise PlanError(
            f"ALTER DOMAIN {domain_name} {rest} is not supported: SET/DROP DEFAULT, SET/DROP "
            "NOT NULL, ADD CONSTRAINT, DROP CONSTRAINT, RENAME [CONSTRAINT] and OWNER TO are",
            sqlstate="0A000",
        )
    kind, notices = domain.sql_type, []
    if m["set"]:
        default = None
        if m["set"].upper() == "SET":
            default = stored_sql(parse_sql(f"SELECT {m['default']}").expressions[0])
            _default_fits(domain, kind, default)
        domain = replace(domain, default=default)
    elif m["nn"]:
        domain = replace(domain, not_null=m["nn"].upper() == "SET")
        if domain.not_null:
            _values_pass(env, state, domain)
    elif m["check"]:
        (column,) = parse_sql(f"CREATE TABLE x ({VALUE} integer {m['check']})").this.expressions
        (constraint,) = column.args["constraints"]
        added = _constrained(domain, constraint, kind)
        if not m["not_valid"]:
            _values_pass(env, state, replace(domain, not_null=False, checks=added.checks[-1:]))
        domain = added
    elif m["dropped"]:
        dropped = _unquoted(m["dropped"])
        if dropped not in {c.name for c in domain.checks}:
            if not m["ie"]:
                message = f'constraint "{dropped}" of domain "{domain.shown}" does not exist'
                raise PlanError(message, sqlstate="42704")
            notices.append(
                (
                    "00000",
                    f'constraint "{dropped}" of domain "{domain.shown}" does not exist, skipping',
                    "",
                )
            )
        domain = replace(domain, checks=tuple(c for c in domain.checks if c.name != dropped))
    elif m["old"]:
        old, new = _unquoted(m["old"]), _unquoted(m["new"])
        names = [c.name for c in domain.checks]
        if old not in names:
            message = f'constraint "{old}" for domain {domain.shown} does not exist'
            raise PlanError(message, sqlstate="42704")
        if new in names:
            message = f'constraint "{new}" for domain {domain.shown} already exists'
            raise PlanError(message, sqlstate="42710")
        checks = tuple(Check(new, c.sql) if c.name == old else c for c in domain.checks)
        domain = replace(domain, checks=checks)
    elif m["renamed"]:
        _rename(env, state, item, m["renamed"])
        return Result("ALTER DOMAIN")
    elif m["owner"]:
        from changeflow.adapter.owners import give
        from changeflow.adapter.roles import resolve

        give(env, item, resolve(state, m["owner"]))
        return Result("ALTER DOMAIN")
    options = {**item.options, "domain": domain.to_json()}
    env.catalog.change(lambda s: (s.with_item(replace(s.items[item.id], options=options)), None))
    return Result("ALTER DOMAIN", notices=notices)


def _rename(env: Any, state: CatalogState, item: Item, to: str) -> None:
    """RENAME TO: the domain in its schema, and the columns of it naming it anew."""
    schema = split_name(item.name)[0]
    new_name = name(to if schema == "public" else f"{schema}.{to}")
    if state.by_name(new_name) is not None:
        raise PlanError(f'type "{split_name(new_name)[1]}" already exists', sqlstate="42710")

    def renamed(state: CatalogState) -> tuple[CatalogState, None]:
        state = state.with_item(replace(state.items[item.id], name=new_name))
        for other in list(state.items.values()):
            if any(kind == item.name for _, kind, _ in other.columns):
                columns = tuple(
                    (c, new_name if k == item.name else k, n) for c, k, n in other.columns
                )
                state = state.with_item(replace(other, columns=columns))
        return state, None

    env.catalog.change(renamed)


def _unquoted(text: str) -> str:
    return text[1:-1].replace('""', '"') if text.startswith('"') else text.lower()


def _values_pass(env: Any, state: CatalogState, domain: Domain) -> None:
    """23514 (23502) if a value of a column of ``domain`` fails its constraints."""
    from changeflow.adapter.resolver import schema_of
    from changeflow.adapter.txn_reads import table_rows

    for item in state.items.values():
        for column, type_name, _ in item.columns:
            if type_name != domain.name or item.kind != "table":
                continue
            schema = schema_of(item)
            checks = [(c, planned(c, schema, item.name)) for c in domain.column_checks(column)]
            for row, count in table_rows(env, item).items():
                failed = next((c for c, e in checks if count > 0 and e.eval(row) is False), None)
                if failed is None:
                    continue
                where = f'column "{column}" of table "{split_name(item.name)[1]}"'
                if not failed.name:
                    raise EvalError(f"{where} contains null values", sqlstate="23502")
                raise EvalError(
                    f"{where} contains values that violate the new constraint", sqlstate="23514"
                )
