"""Names in a query: identifiers folded as PostgreSQL folds them, and the columns a FROM clause
makes visible (:class:`Scope`), resolved with PostgreSQL's errors."""

from __future__ import annotations

from dataclasses import dataclass, field

from sqlglot import exp

from changeflow.errors import PlanError


def ident(node: exp.Expression | str | None) -> str:
    """An identifier's name: lower case unless it was quoted."""
    if node is None:
        return ""
    if isinstance(node, str):
        return node.lower()
    if isinstance(node, exp.Identifier):
        return node.this if node.quoted else node.this.lower()
    return ident(node.this) if isinstance(node.this, exp.Identifier) else node.name.lower()


def table_name(node: exp.Table) -> str:
    """A table reference as the catalog names it: ``t``, or ``s.t`` in a schema other than
    public (a database prefix is dropped)."""
    name, schema = ident(node.this), ident(node.args.get("db"))
    return qualify(schema, name)


def qualify(schema: str | None, name: str) -> str:
    """``name`` in ``schema`` as the catalog names it; a dot inside a name is refused (the
    catalog separates the schema with one)."""
    if "." in name or (schema and "." in schema):
        shown = f"{schema}.{name}" if schema else name
        raise PlanError(f'a name with a dot is not supported: "{shown}"', sqlstate="0A000")
    if schema == "public" and _temp_schema():  # kept: a temporary table may shadow it
        return f"public.{name}"
    return f"{schema}.{name}" if schema and schema != "public" else name


def _temp_schema() -> bool:
    """Has the session planning a statement made its temporary schema?"""
    from changeflow.adapter.catalog import TEMP

    mine = TEMP.get()
    return mine is not None and bool(mine.name)


def unsupported(what: str, node: exp.Expression | None = None) -> PlanError:
    """A PlanError (0A000) for SQL this planner does not support, quoting the fragment."""
    from changeflow.adapter.sql.dialect import sql_text  # (which reads this module)

    shown = f": {sql_text(node)}" if node is not None else ""
    return PlanError(f"{what} is not supported{shown}", sqlstate="0A000")


def correlated() -> PlanError:
    return PlanError("correlated subqueries of this form are not supported", sqlstate="0A000")


@dataclass(frozen=True)
class Field:
    """A column a query can name: ``table.name`` at plan position ``index``; ``star``: shown by
    an unqualified ``*``; ``bare``: reachable without its table name (USING hides the sides'
    copies of a merged column behind the merged one)."""

    table: str | None
    name: str
    index: int
    star: bool = True
    bare: bool = True


@dataclass
class Scope:
    """The columns visible at one level of a query; ``outer`` is the enclosing query's scope
    (a reference into it is a correlation)."""

    fields: list[Field] = field(default_factory=list)
    outer: Scope | None = None
    bound: list[Field] = field(default_factory=list)

    @property
    def tables(self) -> set[str]:
        return {f.table for f in self.fields + self.bound if f.table is not None}

    def find(self, name: str, table: str | None) -> list[Field]:
        """The fields ``table.name`` (or a bare ``name``) names here, without looking out;
        ``bound`` fields (outer columns joined in to decorrelate) after the query's own."""
        return _named(self.fields, name, table) or _named(self.bound, name, table)

    def resolve(self, column: exp.Column) -> Field:
        """The field a column reference names, or PostgreSQL's error for it."""
        name, table = ident(column.this), ident(column.args.get("table")) or None
        shown = f"{table}.{name}" if table else name
        found = self.find(name, table)
        if len(found) > 1:
            raise PlanError(f'column reference "{shown}" is ambiguous', sqlstate="42702")
        if found:
            return found[0]
        if self.outer is not None and self.outer.knows(name, table):
            raise correlated()
        if table is not None and table not in self.tables:
            raise PlanError(
                f'missing FROM-clause entry for table "{table}"', sqlstate="42P01", column=shown
            )
        searched = ", ".join(sorted(self.tables))
        where = f" (searched: {searched})" if searched else ""
        raise PlanError(f'column "{shown}" does not exist{where}', sqlstate="42703")

    def knows(self, name: str, table: str | None) -> bool:
        """Does this scope or an enclosing one have a field ``table.name``?"""
        if self.find(name, table):
            return True
        return self.outer is not None and self.outer.knows(name, table)

    def star(self, table: str | None) -> list[Field]:
        """The fields ``*`` (or ``table.*``) expands to, in order."""
        if table is None:
            return [f for f in self.fields if f.star]
        found = [f for f in self.fields if f.table == table]
        if not found and table not in self.tables:
            raise PlanError(f'missing FROM-clause entry for table "{table}"', sqlstate="42P01")
        return found

    def shifted(self, offset: int) -> Scope:
        """The same fields, ``offset`` positions further right (the right side of a join)."""
        fields = [Field(f.table, f.name, f.index + offset, f.star, f.bare) for f in self.fields]
        return Scope(fields, self.outer)


def _named(fields: list[Field], name: str, table: str | None) -> list[Field]:
    if table is None:
        return [f for f in fields if f.bare and f.name == name]
    return [f for f in fields if f.table == table and f.name == name]
