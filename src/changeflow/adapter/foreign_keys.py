"""FOREIGN KEY constraints of tables: read from CREATE TABLE (a column's ``REFERENCES p
[(x)]``, a table's ``FOREIGN KEY (a, b) REFERENCES p (x, y)``) and ALTER TABLE ADD, named as
PostgreSQL names them (``c_a_b_fkey``), kept in the referencing table's item by column
numbers (attnums, which renames keep) and the referenced table's id. The referenced columns
must be the referenced table's PRIMARY KEY or a UNIQUE constraint of it (42830; 42704
without columns and a primary key), of types
the referencing ones compare with (42804). Enforcement: :mod:`~changeflow.adapter.fk_enforce`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sqlglot import exp

from changeflow.adapter.attnums import attnums
from changeflow.adapter.catalog import CatalogState, Item, split_name
from changeflow.errors import PlanError

ACTIONS = {"NO ACTION": "a", "RESTRICT": "r", "CASCADE": "c", "SET NULL": "n", "SET DEFAULT": "d"}
SHOWN = {v: k for k, v in ACTIONS.items()}
_GROUPS = (
    {"smallint", "integer", "bigint", "numeric", "real", "double precision"},
    {"text", "varchar", "character varying", "bpchar", "character", "char"},
)


@dataclass(frozen=True)
class ForeignKey:
    """A FOREIGN KEY constraint: its name, its columns' numbers, the referenced table (its
    item id) and that table's columns' numbers, ON UPDATE and ON DELETE (pg_constraint's
    letters: a no action, r restrict, c cascade, n set null, d set default) and MATCH (s
    simple, f full), DEFERRABLE and INITIALLY DEFERRED."""

    name: str
    columns: tuple[int, ...]
    parent: str
    refs: tuple[int, ...]
    on_update: str = "a"
    on_delete: str = "a"
    match: str = "s"
    deferrable: bool = False
    deferred: bool = False

    def to_json(self) -> list:
        return [self.name, list(self.columns), self.parent, list(self.refs)] + [
            self.on_update,
            self.on_delete,
            self.match,
            self.deferrable,
            self.deferred,
        ]

    @staticmethod
    def from_json(v: list) -> ForeignKey:
        deferral = (bool(v[7]), bool(v[8])) if len(v) > 7 else (False, False)
        return ForeignKey(v[0], tuple(v[1]), v[2], tuple(v[3]), v[4], v[5], v[6], *deferral)


def foreign_keys_of(item: Any) -> list[ForeignKey]:
    """The FOREIGN KEY constraints of a catalog item (a table)."""
    return [ForeignKey.from_json(f) for f in item.options.get("foreign_keys") or []]


def referencing(state: CatalogState, item_id: str) -> list[tuple[Item, ForeignKey]]:
    """The tables' foreign keys that reference ``item_id`` (its own included)."""
    return [
        (i, fk)
        for i in sorted(state.items.values(), key=lambda i: i.name)
        if i.kind == "table"
        for fk in foreign_keys_of(i)
        if fk.parent == item_id
    ]


def positions(item: Item, nums: tuple[int, ...]) -> tuple[int, ...]:
    """The positions (from 0) of the item's columns numbered ``nums``."""
    mine = attnums(item)
    return tuple(mine.index(n) for n in nums)


def column_names(item: Item, nums: tuple[int, ...]) -> list[str]:
    return [item.columns[i][0] for i in positions(item, nums)]


@dataclass(frozen=True)
class _Parsed:
    given: str | None
    columns: list[str]
    parent: str
    refs: list[str] | None
    options: list[str]


def _parse(defs: list[exp.Expression]) -> list[_Parsed]:
    found: list[_Parsed] = []
    for d in defs:
        given, parts = None, [d]
        if isinstance(d, exp.Constraint):
            given, parts = _ident(d.this), list(d.expressions)
        for part in parts:
            if isinstance(part, exp.ColumnDef):
                for c in part.args.get("constraints") or []:
                    kind = c.args.get("kind")
                    if isinstance(kind, exp.Reference):
                        named = _ident(c.this) if isinstance(c.this, exp.Identifier) else None
                        found.append(_reference(named, [_ident(part.this)], kind))
            elif isinstance(part, exp.ForeignKey):
                columns = [_ident(e) for e in part.expressions]
                found.append(_reference(given, columns, part.args["reference"]))
    return found


def _reference(given: str | None, columns: list[str], ref: exp.Reference) -> _Parsed:
    target = ref.this
    table = target.this if isinstance(target, exp.Schema) else target
    refs = [_ident(e) for e in target.expressions] if isinstance(target, exp.Schema) else None
    name = ".".join(_ident(p) for p in table.parts)
    options = [" ".join(str(o).upper().split()) for o in ref.args.get("options") or []]
    if "MATCH PARTIAL" in options:
        raise PlanError("MATCH PARTIAL not yet implemented", sqlstate="0A000")
    if "INITIALLY DEFERRED" in options and "NOT DEFERRABLE" in options:
        raise PlanError(
            "constraint declared INITIALLY DEFERRED must be DEFERRABLE", sqlstate="42601"
        )
    return _Parsed(given, columns, name, refs, options)


def _ident(node: exp.Expression) -> str:
    ident = node if isinstance(node, exp.Identifier) else node.this
    return ident.this if ident.quoted else ident.this.lower()


def _action(options: list[str], on: str) -> str:
    for o in options:
        if o.startswith(f"ON {on} "):
            return ACTIONS.get(" ".join(o.split()[2:]), "a")
    return "a"


def table_foreign_keys(
    state: CatalogState,
    table: str,
    defs: list[exp.Expression],
    me: Item,
    taken: set[str] | None = None,
) -> list[ForeignKey]:
    """The FOREIGN KEY constraints of CREATE TABLE's (or ALTER TABLE ADD's) definitions for
    the table ``me`` (its columns and keys as they will be: a key may reference its own
    table); ``taken``: names the table's constraints have already."""
    taken = set(taken or ())
    out: list[ForeignKey] = []
    relname = split_name(table)[1]
    names = [c[0] for c in me.columns]
    for p in _parse(defs):
        parent = me if state.find(p.parent) is None and p.parent in (relname, table) else None
        parent = parent or state.find(p.parent)
        if parent is None or parent.kind != "table":
            raise PlanError(f'relation "{p.parent}" does not exist', sqlstate="42P01")
        for c in p.columns:
            if c not in names:
                raise PlanError(
                    f'column "{c}" referenced in foreign key constraint does not exist',
                    sqlstate="42703",
                )
        refs = _referenced(parent, p.refs)
        if len(refs) != len(p.columns):
            raise PlanError(
                "number of referencing and referenced columns for foreign key disagree",
                sqlstate="42830",
            )
        name = p.given or _choose(relname, p.columns, taken)
        if p.given and name in taken:
            raise PlanError(
                f'constraint "{name}" for relation "{relname}" already exists', sqlstate="42710"
            )
        parent_names = [c[0] for c in parent.columns]
        for c, r in zip(p.columns, refs, strict=True):
            mine, theirs = me.columns[names.index(c)][1], parent.columns[parent_names.index(r)][1]
            if not _comparable(mine, theirs):
                raise PlanError(
                    f'foreign key constraint "{name}" cannot be implemented',
                    sqlstate="42804",
                    detail=f'Key columns "{c}" and "{r}" are of incompatible types: '
                    f"{mine} and {theirs}.",
                )
        taken.add(name)
        mine_nums = attnums(me)
        their_nums = attnums(parent)
        out.append(
            ForeignKey(
                name,
                tuple(mine_nums[names.index(c)] for c in p.columns),
                parent.id,
                tuple(their_nums[parent_names.index(r)] for r in refs),
                _action(p.options, "UPDATE"),
                _action(p.options, "DELETE"),
                "f" if "MATCH FULL" in p.options else "s",
                "DEFERRABLE" in p.options or "INITIALLY DEFERRED" in p.options,
                "INITIALLY DEFERRED" in p.options,
            )
        )
    return out


def _referenced(parent: Item, refs: list[str] | None) -> list[str]:
    """The referenced columns: those given, which must be a key of ``parent``, or its
    primary key's (42830 if it has none)."""
    keys = [(bool(u[2]), [parent.columns[i][0] for i in u[1]]) for u in _keys(parent)]
    relname = split_name(parent.name)[1]
    if refs is None:
        primary = next((cols for p, cols in keys if p), None)
        if primary is None:
            raise PlanError(
                f'there is no primary key for referenced table "{relname}"', sqlstate="42704"
            )
        return primary
    names = [c[0] for c in parent.columns]
    for r in refs:
        if r not in names:
            raise PlanError(
                f'column "{r}" referenced in foreign key constraint does not exist',
                sqlstate="42703",
            )
    if not any(sorted(cols) == sorted(refs) and len(set(refs)) == len(refs) for _, cols in keys):
        raise PlanError(
            f'there is no unique constraint matching given keys for referenced table "{relname}"',
            sqlstate="42830",
        )
    return refs


def _keys(parent: Item) -> list[list]:
    return list(parent.options.get("unique") or [])


def _comparable(a: str, b: str) -> bool:
    a, b = a.split("(")[0].strip(), b.split("(")[0].strip()
    return a == b or any(a in g and b in g for g in _GROUPS)


def _choose(table: str, columns: list[str], taken: set[str]) -> str:
    """PostgreSQL's ChooseConstraintName for a foreign key: ``table_a_b_fkey``, with 1, 2…
    appended while the name is taken."""
    base = f"{table.split('.')[-1]}_{'_'.join(columns)}_fkey"
    name, n = base, 0
    while name in taken:
        n += 1
        name = f"{base}{n}"
    return name


def definition(items: dict[str, Item], item: Item, fk: ForeignKey) -> str:
    """pg_get_constraintdef of ``fk``: ``FOREIGN KEY (a) REFERENCES p(x) ON DELETE CASCADE``."""
    from changeflow.compute.functions.chars import quote_ident

    parent = items.get(fk.parent)
    if parent is None:
        return ""
    mine = ", ".join(quote_ident(n) for n in column_names(item, fk.columns))
    theirs = ", ".join(quote_ident(n) for n in column_names(parent, fk.refs))
    schema, rel = split_name(parent.name)
    target = quote_ident(rel) if schema == "public" else f"{schema}.{quote_ident(rel)}"
    text = f"FOREIGN KEY ({mine}) REFERENCES {target}({theirs})"
    if fk.match == "f":
        text += " MATCH FULL"
    if fk.on_update != "a":
        text += f" ON UPDATE {SHOWN[fk.on_update]}"
    if fk.on_delete != "a":
        text += f" ON DELETE {SHOWN[fk.on_delete]}"
    if fk.deferrable:
        text += " DEFERRABLE"
    if fk.deferred:
        text += " INITIALLY DEFERRED"
    return text
