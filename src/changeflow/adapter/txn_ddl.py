"""DDL inside BEGIN … COMMIT, as far as the write log allows: CREATE (TABLE, VIEW,
MATERIALIZED VIEW, INDEX, SCHEMA, SEQUENCE, TYPE) is applied at once, so the transaction's own
statements can use what it created, and dropped again on ROLLBACK (or when the transaction
fails); ALTER SEQUENCE is applied at once too and put back on ROLLBACK (its options, and the
value its next one follows, as PostgreSQL's); ALTER TABLE is applied at once and put back
on ROLLBACK (:func:`_alter`), and ALTER TYPE likewise; DROP takes its items out of the
catalog at once (so the transaction may create others of their names: DROP then CREATE, as
migrations and pandas' ``if_exists="replace"`` run them) but releases their data at COMMIT,
and ROLLBACK puts them back (:class:`Hidden`); COMMENT ON is checked at once and applied at
COMMIT. What a transaction creates, alters or drops is visible to other sessions before its
COMMIT; an altered sequence or table is held until the transaction ends: other sessions'
nextval, or writes, wait, as PostgreSQL's (``sequence_holds``). Other DDL refuses to run
inside a transaction block (25001), as before."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from changeflow.adapter import ddl, enum_types
from changeflow.adapter import sequence_holds as holds
from changeflow.adapter.catalog import CatalogState, Item, gone
from changeflow.adapter.comments import commented
from changeflow.adapter.domains import drop_domain
from changeflow.adapter.owned import access_restored
from changeflow.adapter.result import Result
from changeflow.adapter.sequences import sequence_undo
from changeflow.adapter.sql.role_statements import ROLE_KINDS
from changeflow.adapter.sql.statements import Statement, parse
from changeflow.adapter.sql.statements import name as catalog_name
from changeflow.adapter.sql_functions import drop_function
from changeflow.errors import PlanError

CREATES = (
    "create_table",
    "create_view",
    "create_index",
    "create_schema",
    "create_sequence",
    "create_type",
    "create_domain",
    "create_function",
)
DROP_WORDS = {
    "table": "TABLE",
    "view": "VIEW",
    "materialized view": "MATERIALIZED VIEW",
    "index": "INDEX",
    "schema": "SCHEMA",
    "sequence": "SEQUENCE",
    "type": "TYPE",
    "function": "FUNCTION",
}
DROPPERS = {
    "drop": ddl.drop,
    "drop_type": enum_types.drop_type,
    "drop_domain": drop_domain,
    "drop_function": drop_function,
}


EXTENSIONS = ("create_extension", "drop_extension")


def in_transaction(session: Any, stmt: Statement, run: Callable[[Statement], Result]) -> Result:
    """``stmt`` (DDL) inside the session's explicit transaction; ``run`` applies DDL now."""
    txn = session.txn
    if stmt.kind in CREATES:
        state = session.env.catalog.load()
        before = {(i.kind, i.name) for i in state.items.values()} | {
            ("schema", s) for s in state.schemas
        }
        old = state.by_name(stmt.args.get("name") or "") if stmt.args.get("replace") else None
        result = run(stmt)
        after = session.env.catalog.load()
        made = {(i.kind, i.name) for i in after.items.values()} | {
            ("schema", s) for s in after.schemas
        }
        txn.created.extend(sorted(made - before))
        if old is not None:  # CREATE OR REPLACE VIEW: ROLLBACK puts its definition back
            txn.undo.append(lambda: session.env.catalog.change(lambda s: (s.with_item(old), None)))
        return result
    if stmt.kind == "comment":  # checked now, applied at COMMIT with the DROPs, in order
        commented(session.env.catalog.load(), stmt)
        txn.dropped.append(stmt)
        return Result("COMMENT")
    if stmt.kind in DROPPERS:
        hidden = Hidden(session.env, [])
        result = DROPPERS[stmt.kind](session.env, stmt, keep=hidden.items)
        own = [i for i in hidden.items if (i.kind, i.name) in txn.created]
        if own:  # what the transaction made itself goes now (ROLLBACK would not keep it)
            Hidden(session.env, own).release()
            hidden.items = [i for i in hidden.items if i not in own]
        txn.dropped.append(hidden)
        return result
    if stmt.kind == "alter_sequence":  # applied at once, put back on ROLLBACK
        undo = sequence_undo(session.env, stmt.args["name"])
        result = run(stmt)
        if undo is not None:
            txn.undo.append(undo)
        return result
    if stmt.kind == "alter_table":
        return _alter(session, stmt, run)
    if stmt.kind in (*ROLE_KINDS, "owner_to"):  # applied at once, put back on ROLLBACK
        before = session.env.catalog.load()
        result = run(stmt)
        txn.undo.append(
            lambda: session.env.catalog.change(lambda s: (access_restored(s, before), None))
        )
        return result
    if stmt.kind in ("enum_alter", "domain_alter"):  # applied at once, put back on ROLLBACK
        state = session.env.catalog.load()
        old = state.find(catalog_name(stmt.args["name"]))
        result = run(stmt)
        if old is not None:  # the type, and the columns of it (a RENAME TO names them anew)
            olds = [
                old,
                *(i for i in state.items.values() if any(k == old.name for _, k, _ in i.columns)),
            ]
            txn.undo.append(
                lambda: session.env.catalog.change(lambda s: (_restored(s, olds), None))
            )
        return result
    if stmt.kind in ("refresh", *EXTENSIONS) or (  # changes nothing
        stmt.kind == "maintain" and stmt.args["verb"].upper() != "VACUUM"
    ):
        return run(stmt)
    raise PlanError(
        f"{stmt.text.split()[0].upper()} cannot run inside a transaction block", sqlstate="25001"
    )


def end(
    txn: Any,
    committed: bool,
    run: Callable[[Statement], Result],
    check: Callable[[], None] = lambda: None,
) -> None:
    """At the end of a transaction: its DROPs applied (COMMIT, once ``check`` of its deferred
    constraints passed; its holds go once its writes are committed: the session's
    ``_guarded``), or what it created dropped and what it altered put back."""
    if committed:
        try:
            check()
        except BaseException:
            end(txn, False, run)
            raise
        for entry in txn.dropped:
            entry.release() if isinstance(entry, Hidden) else run(entry)
        return
    try:
        undo_since(txn, 0, 0, 0, run)
    finally:
        holds.release_all(txn)


@dataclass
class Hidden:
    """The items a transaction's DROP set aside in the catalog (``CatalogState.hidden``),
    their data kept: released at its COMMIT, put back by its ROLLBACK (and hosted again), or
    by the first environment opened on the home after this process is gone."""

    env: Any
    items: list[Item]

    def release(self) -> None:
        ids = [i.id for i in self.items]
        self.env.catalog.change(lambda s: (s.unhiding(ids, back=False), None))
        ddl.release(self.env, self.items)

    def restore(self) -> None:
        ids = [i.id for i in self.items]
        self.env.catalog.change(lambda s: (s.unhiding(ids, back=True), None))
        self.env.resume_hosting(ids)


def sweep_hidden(env: Any) -> None:
    """Put back the items set aside by transactions of processes of this host that are gone
    (they never committed); one whose name was taken meanwhile stays aside, its data kept."""

    def put_back(state: CatalogState) -> tuple[CatalogState, None]:
        for item in state.hidden.values():
            if gone(item.options["hidden_by"]) and state.by_name(item.name) is None:
                state = state.unhiding([item.id], back=True)
        return state, None

    if any(gone(i.options["hidden_by"]) for i in env.catalog.load().hidden.values()):
        env.catalog.change(put_back)


def _restored(state: CatalogState, items: list[Item]) -> CatalogState:
    """``state`` with ``items`` as they were (renamed ones renamed back first)."""
    state = state.without([i.id for i in items if i.id in state.items])
    for item in items:
        state = state.with_item(item)
    return state


def undo_since(
    txn: Any, undone: int, created: int, dropped: int, run: Callable[[Statement], Result]
) -> None:
    """Put back what the transaction's DDL did since it had ``undone`` undo steps, ``created``
    items and ``dropped`` DROPs (a ROLLBACK: none; a ROLLBACK TO SAVEPOINT: the savepoint's):
    what it altered put back, what it created dropped, then what it dropped put back."""
    for undo in reversed(txn.undo[undone:]):
        undo()
    for kind, name in reversed(txn.created[created:]):
        word = DROP_WORDS.get(kind)
        if word is not None:
            shown = ".".join(ddl.quote_ident(part) for part in name.split("."))
            run(parse(f"DROP {word} IF EXISTS {shown} CASCADE"))
    for entry in reversed(txn.dropped[dropped:]):
        if isinstance(entry, Hidden):
            entry.restore()
    del txn.undo[undone:], txn.created[created:], txn.dropped[dropped:]


def _alter(session: Any, stmt: Statement, run: Callable[[Statement], Result]) -> Result:
    """ALTER TABLE in the session's transaction, applied at once: on a table the transaction
    created (ROLLBACK drops it), or on another, which the transaction then holds (other
    sessions' writes to it wait for its end) and ROLLBACK puts back: its catalog items and its
    shard's layout (the columns a rewrite wrote under new stored names are read no more, so
    its retractions and additions cancel). A new constraint is checked against the table with
    the transaction's writes, which a change of columns carries to the new ones
    (:mod:`.txn_columns`). Refused (25001): a change of columns those writes cannot follow,
    and of a table that views or sinks read."""
    from changeflow.adapter.alter import readers_of
    from changeflow.adapter.alter_many import changes_columns
    from changeflow.adapter.txn_columns import carried, carry, rewrites_rows
    from changeflow.adapter.txn_reads import running_in

    env, txn, g = session.env, session.txn, stmt.args
    state = env.catalog.load()
    item = state.find(g["name"])
    written = item is not None and changes_columns(g) and bool(txn.writes.get(item.id))
    if written and not carried(g):
        raise PlanError(
            f'this change of the columns of table "{item.name}" cannot follow the '
            "transaction's writes to it: COMMIT them first",
            sqlstate="25001",
        )
    if item is not None and txn.read_ts is not None and rewrites_rows(g):
        raise PlanError(
            f'ALTER TABLE rewriting the rows of table "{item.name}" cannot follow reads in a '
            "transaction block (they were read before it): COMMIT first",
            sqlstate="25001",
        )
    if item is None or item.kind != "table" or (item.kind, item.name) in txn.created:
        with running_in(txn):
            result = run(stmt)
        if written:
            carry(env, txn, item.id, item.name, g)
        return result
    readers = readers_of(state, item)[1]
    if changes_columns(g) and readers:
        raise PlanError(
            f'ALTER TABLE of the columns of table "{item.name}" cannot run inside a '
            f'transaction block while {readers[0].kind} "{readers[0].name}" reads it',
            sqlstate="25001",
        )
    holds.hold(env.catalog, item.id)
    layout = env.storage.state(item.id).schema
    with running_in(txn):
        result = run(stmt)
    txn.undo.append(put_back(env, item.id, state, env.catalog.load(), layout))
    if written:
        carry(env, txn, item.id, item.name, g)
    return result


def put_back(
    env: Any, table_id: str, before: CatalogState, after: CatalogState, layout: Any
) -> Callable[[], None]:
    """What puts table ``table_id`` back as it was ``before`` an ALTER TABLE: its shard's
    ``layout``, and the items the change made ``after`` (the table's indexes rebuilt)."""
    from changeflow.adapter.alter import _plan_readers, _restarting

    made = {d.id for d in after.closure(table_id)}  # a serial column's sequence, say
    restore = _catalog_undo(env, before, after, made)

    def undo() -> None:
        state = env.catalog.load()
        item = state.items.get(table_id)
        if item is None:
            return
        if env.storage.state(table_id).schema == layout:  # the catalog's change alone
            restore()
            return
        with _restarting(env, item, _plan_readers(state, table_id)):  # on the old columns
            env.storage.evolve(table_id, layout)
            restore()

    return undo


def _catalog_undo(
    env: Any, before: CatalogState, after: CatalogState, made: set[str]
) -> Callable[[], None]:
    """What puts back the items a change made ``after`` as they were ``before`` (each that
    no one changed since); of the items new ``after``, only those in ``made`` go."""
    changed = [
        i
        for i in after.items.keys() | before.items.keys()
        if after.items.get(i) != before.items.get(i) and (i in before.items or i in made)
    ]

    def undo() -> None:
        def change(state: CatalogState) -> tuple[CatalogState, None]:
            for i in changed:
                if state.items.get(i) != after.items.get(i):
                    continue
                state = state.without([i])
                if i in before.items:
                    state = state.with_item(before.items[i])
            return state, None

        env.catalog.change(change)

    return undo
