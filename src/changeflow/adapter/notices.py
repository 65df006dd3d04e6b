"""The NOTICEs PostgreSQL sends where ``IF EXISTS`` or ``IF NOT EXISTS`` skips a statement's
work: ``table "t" does not exist, skipping`` (00000), ``relation "t" already exists, skipping``
(42P07), and what a DROP … CASCADE drops besides (``drop cascades to view v``), found on the
catalog version the statement runs on, before it runs."""

from __future__ import annotations

from sqlglot import exp

from changeflow.adapter.catalog import PUBLIC, SYSTEM_SCHEMAS, CatalogState, Item, split_name
from changeflow.adapter.sql.scope import table_name
from changeflow.adapter.sql.statements import Statement
from changeflow.adapter.sql.statements import name as catalog_name

Notice = tuple[str, str, str]  # (SQLSTATE, message, detail)

_KINDS = {"drop_sequence": "sequence", "drop_schema": "schema"}


def notices(state: CatalogState, stmt: Statement) -> list[Notice]:
    """What PostgreSQL notes when ``stmt`` skips a name: each missing name of a DROP … IF
    EXISTS or ALTER TABLE IF EXISTS, each present one of a CREATE … IF NOT EXISTS, each column
    ADD COLUMN IF NOT EXISTS finds or DROP COLUMN IF EXISTS misses."""
    kind, args = stmt.kind, stmt.args
    if kind in ("drop", "drop_sequence", "drop_schema"):
        what = _KINDS.get(kind) or args["kind"]
        names = args["names"] if args.get("ie") else []
        skipped = [n for name in names if (n := _missing(state, what, name)) is not None]
        if not args.get("cascade"):
            return skipped
        return skipped + _cascade(state, args["names"], schemas=kind == "drop_schema")
    if kind == "truncate" and args.get("cascade"):
        from changeflow.adapter.fk_catalog import truncate_cascades

        found = [split_name(n)[1] for n in truncate_cascades(state, args["names"])]
        return [("00000", f'truncate cascades to table "{n}"', "") for n in found]
    if kind == "create_schema" and args.get("ine"):
        name = args["name"]
        if name in state.schemas or name in (PUBLIC, *SYSTEM_SCHEMAS):
            return [("42P06", f'schema "{name}" already exists, skipping', "")]
        return []
    created = _created(stmt)
    if created is not None and state.find(created) is not None:
        return [("42P07", f'relation "{split_name(created)[1]}" already exists, skipping', "")]
    if kind == "alter_table":
        return _alter(state, stmt)
    return []


def _cascade(state: CatalogState, names: list[str], schemas: bool = False) -> list[Notice]:
    """``drop cascades to …``: the items a DROP … CASCADE of ``names`` (of schemas, with
    ``schemas``) drops besides them, in PostgreSQL's order: each named object's dependents
    newest first, depth first, each after its own dependents, the whole list read backwards.
    Indexes and owned sequences go with their items unreported, as PostgreSQL's."""
    if schemas:
        roots = [n for n in names if n in state.schemas]
    else:
        roots = [i.id for n in names if (i := state.find(n)) is not None]
    seen, order = set(roots), []

    def dependents(node: str) -> list[Item]:
        if schemas and node in state.schemas:
            found = [i for i in state.in_schema(node) if not _goes_with(i)]
        else:
            found = state.dependents(node)
        return sorted(found, key=lambda i: int(i.id.lstrip("u") or 0), reverse=True)

    def visit(node: str) -> None:
        for d in dependents(node):
            if d.id not in seen:
                seen.add(d.id)
                visit(d.id)
                order.append(d)

    for root in roots:
        visit(root)
    listed = [] if schemas else _foreign_keys(state, roots, seen)
    listed += [f"drop cascades to {d.kind} {d.name}" for d in reversed(order) if not _goes_with(d)]
    return _as_notices(listed)


def _as_notices(listed: list[str]) -> list[Notice]:
    """``drop cascades to …`` lines as PostgreSQL sends them: one a notice, or two and more
    counted in one whose detail lists them."""
    if len(listed) < 2:
        return [("00000", line, "") for line in listed]
    return [("00000", f"drop cascades to {len(listed)} other objects", "\n".join(listed))]


def _foreign_keys(state: CatalogState, roots: list[str], gone: set[str]) -> list[str]:
    """``drop cascades to constraint c_p_fkey on table c``: the foreign keys of tables that
    stay which reference a table dropped."""
    from changeflow.adapter.fk_catalog import visible
    from changeflow.adapter.foreign_keys import referencing

    return [
        f"drop cascades to constraint {fk.name} on table {visible(state, c)}"
        for root in roots
        for c, fk in referencing(state, root)
        if c.id not in gone
    ]


def _column_keys(state: CatalogState, item: Item, column: str) -> list[str]:
    """``drop cascades to constraint …``: other tables' foreign keys of a column dropped."""
    from changeflow.adapter.attnums import attnums
    from changeflow.adapter.fk_catalog import visible
    from changeflow.adapter.foreign_keys import referencing

    names = [c[0] for c in item.columns]
    if column not in names:
        return []
    num = attnums(item)[names.index(column)]
    return [
        f"drop cascades to constraint {fk.name} on table {visible(state, c)}"
        for c, fk in referencing(state, item.id)
        if c.id != item.id and num in fk.refs
    ]


def _key_users(state: CatalogState, item: Item, name: str) -> list[str]:
    """``drop cascades to constraint …``: the foreign keys on a key constraint dropped."""
    from changeflow.adapter.attnums import attnums
    from changeflow.adapter.fk_catalog import visible
    from changeflow.adapter.foreign_keys import referencing

    key = next((u for u in item.options.get("unique") or [] if u[0] == name), None)
    if key is None:
        return []
    nums = sorted(attnums(item)[i] for i in key[1])
    return [
        f"drop cascades to constraint {fk.name} on table {visible(state, c)}"
        for c, fk in referencing(state, item.id)
        if sorted(fk.refs) == nums
    ]


def _goes_with(item: Item) -> bool:
    """Is ``item`` dropped with the item it belongs to, unreported (an index, an owned
    sequence)?"""
    return item.kind == "index" or (
        item.kind == "sequence" and item.options.get("owned_by") is not None
    )


def _missing(state: CatalogState, what: str, name: str) -> Notice | None:
    if what == "schema":
        if name in state.schemas or name in (PUBLIC, *SYSTEM_SCHEMAS):
            return None
        return ("00000", f'schema "{name}" does not exist, skipping', "")
    schema, bare = split_name(name)
    if "." in name and schema not in state.schemas and schema not in (PUBLIC, *SYSTEM_SCHEMAS):
        return ("00000", f'schema "{schema}" does not exist, skipping', "")
    item = state.find(name)
    if item is not None and item.kind == what:
        return None
    return ("00000", f'{what} "{bare}" does not exist, skipping', "")


def _created(stmt: Statement) -> str | None:
    """The name a CREATE … IF NOT EXISTS makes (None for any other statement)."""
    args = stmt.args
    if stmt.kind == "create_table" and args.get("query") is not None:  # CREATE TABLE … AS
        return args["name"] if args.get("ine") else None
    tree = stmt.ast
    if stmt.kind in ("create_index", "create_view") and args.get("ine") and args.get("name"):
        return catalog_name(str(args["name"]).strip())
    if stmt.kind in ("create_table", "create_sequence") and isinstance(tree, exp.Create):
        if not tree.args.get("exists"):
            return None
        target = tree.this.this if isinstance(tree.this, exp.Schema) else tree.this
        return table_name(target) if isinstance(target, exp.Table) else None
    return None


def _alter(state: CatalogState, stmt: Statement) -> list[Notice]:
    args = stmt.args
    item = state.find(args["name"])
    if item is None:
        if args.get("ie"):
            return [
                ("00000", f'relation "{split_name(args["name"])[1]}" does not exist, skipping', "")
            ]
        return []
    column = catalog_name(str(args["column"]).split()[0]) if args.get("column") else ""
    if args.get("action") == "drop" and args.get("cascade") and not args.get("cie"):
        return _as_notices(_column_keys(state, item, column))
    if args.get("action") == "drop_constraint" and args.get("cascade"):
        return _as_notices(_key_users(state, item, column))
    if not args.get("cie") or args.get("action") not in ("add", "drop"):
        return []
    present = any(c[0] == column for c in item.columns)
    table = split_name(item.name)[1]
    if args["action"] == "add" and present:
        return [("42701", f'column "{column}" of relation "{table}" already exists, skipping', "")]
    if args["action"] == "drop" and not present:
        return [("00000", f'column "{column}" of relation "{table}" does not exist, skipping', "")]
    return []
