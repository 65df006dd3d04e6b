"""A session: statements run in order, with PostgreSQL's transaction rules, serializable.

- Outside ``BEGIN`` every statement is its own transaction.
- A transaction reads every query at the timestamp of its first read, which fixes its
  timeline: a later query of another timeline fails ("Transactions can only reference objects in
  the same timedomain").
- Its INSERTs, UPDATEs and DELETEs are buffered and commit together at one timestamp; its
  later statements see them (:mod:`~changeflow.adapter.txn_reads`).
- Reads and writes come in any order: a transaction that writes commits at a later timestamp
  than it read, and is refused with a serialization failure (40001), nothing written, if what
  it read changed between (rows another commit changed in a table it read, not merely a write
  to that table).
- After an error inside ``BEGIN`` every statement fails until ``ROLLBACK`` (25P02) or
  ``ROLLBACK TO SAVEPOINT`` (:mod:`~changeflow.adapter.savepoints`), as in PostgreSQL, and
  ``COMMIT`` then rolls back."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import Any, TypeVar

import pyarrow as pa

from changeflow.adapter import (
    comments,
    cursors,
    ddl,
    default_privileges,
    domains,
    enum_types,
    extensions,
    owned,
    owners,
    privilege_checks,
    privileges,
    roles,
    schemas,
    sequences,
    sql_functions,
    temp_tables,
    txn_ddl,
    with_writes,
)
from changeflow.adapter import sequence_holds as holds
from changeflow.adapter import settings as parameters
from changeflow.adapter.access import Access
from changeflow.adapter.advisory_locks import session_closed, statement_ended
from changeflow.adapter.alter import alter_table
from changeflow.adapter.budget import DEFAULT_BUDGET, within_budget
from changeflow.adapter.bulk import NeedsDefaults, table_frame
from changeflow.adapter.catalog import SEARCH_PATH, SESSION_SETTINGS, search_path
from changeflow.adapter.checks import enforce_checks
from changeflow.adapter.conflicts import Read, reads_unaffected, reads_unchanged
from changeflow.adapter.environment import EPOCH, Environment
from changeflow.adapter.fk_catalog import truncate_order
from changeflow.adapter.fk_deferred import Pending, check_deferred, set_constraints
from changeflow.adapter.fk_enforce import enforce_foreign_keys, frame_rows
from changeflow.adapter.group_commit import Reads
from changeflow.adapter.keyed import constrain, constrain_frame
from changeflow.adapter.maintenance import maintain
from changeflow.adapter.notices import notices
from changeflow.adapter.object_ids import shown_columns, shown_rows
from changeflow.adapter.plan_cache import plan_select
from changeflow.adapter.relations import Finishing
from changeflow.adapter.resolver import CatalogResolver
from changeflow.adapter.result import Result, text_result
from changeflow.adapter.rows import counted, finish
from changeflow.adapter.savepoints import ENDS, SAVEPOINT_KINDS, Mark, run_savepoint
from changeflow.adapter.sizes import shard_sizes
from changeflow.adapter.sql.query import plan_query, view_plan
from changeflow.adapter.sql.scalar import STATEMENT_TIME
from changeflow.adapter.sql.statements import DML_KINDS, WRITE_KINDS, Statement, parse, split
from changeflow.adapter.sql.time_scalars import STATEMENT_START
from changeflow.adapter.sql.types import DOMAINS
from changeflow.adapter.sql_functions import USER_FUNCTIONS
from changeflow.adapter.subscribe import Subscribe
from changeflow.adapter.system import answer, mentions_catalog
from changeflow.adapter.table_locks import lock_tables
from changeflow.adapter.timelines import check_single, check_transaction, timestamp_number
from changeflow.adapter.txn_reads import transaction_read
from changeflow.adapter.with_writes import run_with_writes
from changeflow.adapter.writes import returned_columns, write
from changeflow.adapter.written import Written
from changeflow.compute import plan as P
from changeflow.compute.pads import padded_rows
from changeflow.compute.types import USER_TYPES, Schema
from changeflow.errors import FrontierViolation, PlanError

T = TypeVar("T")
PINNED = frozenset({"select", *WRITE_KINDS})  # planned and run on one catalog version
DDL = {
    "create_table": temp_tables.create_table,
    "create_view": temp_tables.create_view,
    "create_index": ddl.create_index,
    "create_source": ddl.create_source,
    "create_sink": ddl.create_sink,
    "drop": ddl.drop,
    **sequences.DDL,
    "create_sequence": temp_tables.create_sequence,
    "rename": ddl.rename,
    "alter_table": alter_table,
    "create_schema": schemas.create_schema,
    "drop_schema": schemas.drop_schema,
    "show_items": ddl.show_items,
    "show_create": ddl.show_create,
    "show_columns": ddl.show_columns,
    "refresh": ddl.refresh,
    "maintain": maintain,
    "comment": comments.comment_on,
    "owner_to": owners.owner_to,
    "create_extension": extensions.create_extension,
    "drop_extension": extensions.drop_extension,
    "create_type": enum_types.create_type,
    "drop_type": enum_types.drop_type,
    "enum_alter": enum_types.alter_type,
    "create_domain": domains.create_domain,
    "drop_domain": domains.drop_domain,
    "domain_alter": domains.alter_domain,
    "create_function": sql_functions.create_function,
    "drop_function": sql_functions.drop_function,
    "create_role": roles.create_role,
    "role_alter": roles.alter_role,
    "drop_role": roles.drop_role,
    "grant": privileges.grant,
    "owned": owned.owned,
    "default_privileges": default_privileges.alter_default_privileges,
}


@dataclass
class Transaction:
    """An open transaction's state."""

    explicit: bool
    timeline: str | None = None
    read_ts: int | None = None  # the timestamp of its reads (its first read's)
    reads: set[str] = field(default_factory=set)  # the shards it read (checked at commit)
    read_rows: list[Read] = field(default_factory=list)  # what the commit checks is unchanged
    queried: set[int] = field(default_factory=set)  # the plans of read_rows its queries put
    writes: dict[str, list[pa.Table]] = field(default_factory=dict)  # checked update frames
    written: dict[str, Written] = field(default_factory=dict)  # the writes as later reads see them
    failed: bool = False
    started: datetime = field(default_factory=lambda: datetime.now(UTC))  # now()'s value
    created: list[tuple[str, str]] = field(default_factory=list)  # (kind, name) by its DDL
    dropped: list[Any] = field(default_factory=list)  # its DROPs (Hidden) and COMMENTs
    deferred: list[Pending] = field(default_factory=list)  # foreign keys checked at COMMIT
    constraint_modes: dict[str, bool] = field(default_factory=dict)  # by SET CONSTRAINTS
    undo: list[Callable[[], None]] = field(default_factory=list)  # its DDL's, on ROLLBACK
    savepoints: list[Mark] = field(default_factory=list)  # oldest first
    local_settings: dict[str, str | None] = field(default_factory=dict)  # before SET LOCAL


class Session:
    """One client's statements against an :class:`Environment` (see the module docstring)."""

    def __init__(
        self,
        env: Environment,
        timeout: float = 30.0,
        access: Access | None = None,
        memory_budget: int | None = DEFAULT_BUDGET,
    ) -> None:
        self.env, self.timeout = env, timeout
        self.access = access  # None: the process owner, who may touch any file
        self.memory_budget = memory_budget  # bytes a query may grow the process by (53200)
        self.txn: Transaction | None = None
        self.committing: Transaction | None = None  # ended, to commit once the lock is let go
        self.described: tuple[Any, Any, Any] | None = None  # (tree, catalog, query) kept
        self.settings = parameters.defaults()
        self.temp = temp_tables.new_schema()  # its temporary tables' schema
        self.cursors: dict[str, cursors.QueryCursor] = {}  # DECLAREd, by name

    @property
    def in_transaction(self) -> bool:
        return self.txn is not None and self.txn.explicit

    def execute(self, script: str) -> list[Result]:
        """Run every statement of ``script`` in order; the results of those that ran."""
        return [self.run(parse(text)) for text in split(script)]

    def run(self, stmt: Statement) -> Result:
        """Run one statement (see the module docstring for transactions)."""
        self._statement_time()
        self._in_context()
        if self.txn is not None and self.txn.failed and stmt.kind not in ENDS:
            raise _aborted()
        parameters.check_writable(self, stmt.kind, stmt.text)
        if stmt.kind == "cursor":
            return cursors.cursor_statement(self, stmt)
        if stmt.kind in DDL:  # catalog changes are serialised; reads and writes are not
            return self._guarded(lambda: _locked(self.env.lock, lambda: self._run(stmt)))
        if stmt.kind in PINNED:  # one catalog version
            return self._guarded(lambda: self._pinned(stmt))
        return self._guarded(lambda: self._run(stmt))  # COMMIT may apply DROPs

    def _pinned(self, stmt: Statement) -> Result:
        """``stmt`` run against one catalog version; again on a new one after waiting for
        another session's transaction that holds its table (its ALTER TABLE)."""
        while True:
            try:
                return self.env.catalog.pinned(lambda: self._run(stmt))
            except holds.Held as held:
                if self.txn is not None and not self.txn.explicit:
                    self.txn = None  # it runs again on a snapshot taken after the wait
                held.wait()

    def _in_context(self) -> None:
        """The session's search path and settings, for the statement about to be planned."""
        SEARCH_PATH.set(search_path(self.settings["search_path"]))
        SESSION_SETTINGS.set(self.settings)
        USER_TYPES.set(lambda name: enum_types.user_type(self.env.catalog.load(), name))
        DOMAINS.set(lambda name: domains.domain_named(self.env.catalog.load(), name))
        USER_FUNCTIONS.set(lambda n: sql_functions.function_named(self.env.catalog.load(), n))
        sequences.enter(self)
        temp_tables.enter(self.temp)

    def _statement_time(self) -> None:
        """now()'s value for the statement: the explicit transaction's start, or this moment."""
        explicit = self.txn is not None and self.txn.explicit
        start = datetime.now(UTC)
        STATEMENT_START.set(start)
        STATEMENT_TIME.set(self.txn.started if explicit else start)  # type: ignore[union-attr]

    def _guarded(self, fn: Callable[[], T]) -> T:
        """``fn()``, then the commit of the transaction it ended; on an error the transaction
        is rolled back (implicit) or marked failed (explicit)."""
        try:
            result, txn = fn(), self.committing
            if txn is not None:  # sessions commit as a group
                self.committing = None
                try:
                    self._commit(txn)
                finally:  # what it held (ALTER TABLE, LOCK TABLE) is let go once committed
                    holds.release_all(txn)
            temp_tables.after_transaction(self, txn)  # ON COMMIT DELETE ROWS, DROP
            return statement_ended(self, result)
        except NeedsDefaults:  # before anything was written: the statement path follows
            if self.txn is not None and not self.txn.explicit:
                self.txn = None
            raise
        except BaseException:
            self.committing = None
            self.fail()
            statement_ended(self, None)
            raise

    def fail(self) -> None:
        """A statement failed (however early: its parse too): an explicit transaction is then
        failed, an implicit one gone, as PostgreSQL aborts a transaction on any error."""
        if self.txn is not None and self.txn.explicit:
            self.txn.failed = True
        else:
            self.txn = None

    def close(self) -> None:
        """End the session: an open transaction rolled back (as a disconnect aborts it), its
        temporary tables and views dropped, its advisory locks let go."""
        if self.txn is not None and self.txn.explicit:
            self.run(parse("ROLLBACK"))
        temp_tables.end(self)
        session_closed(self)

    def insert_columns(
        self, table: str, names: list[str] | None, data: list[pa.Array], text: bool
    ) -> int | None:
        """Insert the rows of ``data``'s columns (named ``names``, default every column) into
        ``table`` as one INSERT would, without SQL text (COPY FROM); ``text``: the values are
        text to read as the columns' types. The row count; None if a column left out has a
        DEFAULT (the caller inserts by statements then)."""
        if self.txn is not None and self.txn.failed:
            raise _aborted()
        self._in_context()
        parameters.check_writable(self, "insert", "INSERT")
        try:
            return self._guarded(lambda: self._insert_columns(table, names, data, text))
        except NeedsDefaults:
            return None

    def _insert_columns(
        self, table: str, names: list[str] | None, data: list[pa.Array], text: bool
    ) -> int:
        txn = self._transaction()
        found = self.env.catalog.load().find(table)
        if found is not None:  # another session's transaction altering it: its end
            holds.wait(self.env.catalog, found.id, found.name, "table")
        state = self.env.catalog.load()
        relation = self.env.plans.relation(state, table)
        if relation.kind != "table":
            raise PlanError(f'cannot insert into {relation.kind} "{table}"', sqlstate="42809")
        item = state.by_name(relation.name)
        assert item is not None and item.shard is not None
        privilege_checks.require(state, item, "a")
        shape = self.env.storage.state(item.id).schema
        if any(relation.generated):  # computed by the statement path
            raise NeedsDefaults(relation.name)
        frame = table_frame(
            relation.plan.schema,
            shape,
            relation.defaults,
            item.options.get("lengths"),
            relation.name,
            names,
            data,
            text,
        )
        if relation.unique and frame.num_rows and not constrain_frame(self, txn, relation, frame):
            constrain(self, txn, relation, None, list(counted(frame).items()), ())  # as INSERT
        enforce_checks(relation, frame)
        if frame.num_rows:
            txn.writes.setdefault(item.id, []).append(frame)
            enforce_foreign_keys(self, txn, state, item, frame_rows(item, frame))
        self._end(txn)
        return frame.num_rows

    def describe(self, stmt: Statement, keep: bool = False) -> Schema | None:
        """The columns ``stmt`` returns, found without running it; None if it returns no rows
        (SHOW statements, which only read, are run to find theirs). ``keep``: it runs next
        (a portal described, then executed): a query's plan is kept for that run, which plans
        it again only if the catalog changed meanwhile."""
        self._in_context()
        if stmt.kind == "explain_view":
            return text_result("EXPLAIN", ["Optimized Plan"], []).columns
        if stmt.kind in ("select", "explain"):
            state = self.env.catalog.load()
            self._statement_time()
            query = plan_select(self.env.plans, stmt, state, self._run_now)
            self.described = (stmt, state, query) if keep else None
            if stmt.kind == "explain":
                return text_result("EXPLAIN", ["Optimized Plan"], []).columns
            return _visible(query)
        if stmt.kind == "subscribe":
            sub = self.subscribe(stmt)
            return sub.columns
        if stmt.kind.startswith("show"):
            return self._run(stmt).columns
        if stmt.kind in DML_KINDS:
            return returned_columns(self, stmt)
        if stmt.kind == "with_writes":
            return with_writes.columns(self, stmt)
        return None

    def _run(self, stmt: Statement) -> Result:
        kind = stmt.kind
        if kind == "begin":
            if self.in_transaction:
                return Result("BEGIN")  # PostgreSQL warns and carries on
            self.txn = Transaction(explicit=True)
            parameters.begin_modes(self, stmt.text)
            return Result("BEGIN")
        if kind in ("commit", "rollback"):
            txn, self.txn = self.txn, None
            if txn is not None:
                committed = kind == "commit" and not txn.failed
                run = lambda s: _locked(self.env.lock, lambda: self._run(s))  # noqa: E731
                txn_ddl.end(txn, committed, run, lambda: check_deferred(self, txn))
            if kind == "commit" and txn is not None and not txn.failed:
                self.committing = txn
                parameters.end_local(self.settings, txn)
            return Result("COMMIT" if kind == "commit" and not (txn and txn.failed) else "ROLLBACK")
        if kind == "set":
            value = None if stmt.args["value"].strip().upper() == "DEFAULT" else stmt.args["value"]
            return parameters.set_parameter(self, stmt.args["var"], value, stmt.args.get("local"))
        if kind == "set_role":
            return roles.set_role(self, stmt.args)
        if kind == "set_transaction":
            return parameters.transaction_modes(self, stmt.args["modes"], stmt.args["session"])
        if kind == "reset_all":
            return parameters.reset_all(self)
        if kind == "set_constraints":
            return set_constraints(self, stmt.args)
        if kind == "lock":
            return lock_tables(self, stmt)
        if kind in SAVEPOINT_KINDS:
            return run_savepoint(self, stmt)
        if kind == "show_isolation":  # PostgreSQL's name for strict serializable (and more)
            return text_result("SHOW", ["transaction_isolation"], [("serializable",)])
        if kind == "show_all":
            return parameters.show_all(self.settings)
        if kind == "show_var":
            return parameters.show(self.settings, stmt.args["var"])
        if kind == "explain_view":
            return ddl.explain_item(self.env, stmt)
        if kind in DDL:
            privilege_checks.check_ddl(self.env.catalog.load(), stmt)
            heard = notices(self.env.catalog.load(), stmt)
            done = self._ddl(stmt)  # with what the statement itself noted
            return replace(done, notices=[*heard, *done.notices])
        if kind == "select" and mentions_catalog(stmt.text):  # pg_catalog, information_schema
            state, sizes = self.env.catalog.load(), shard_sizes(self.env)
            got = answer(stmt.text, state, "changeflow", "materialize", self.settings, sizes)
            columns = got.columns
            return Result(f"SELECT {len(got.rows)}", columns, got.rows)
        if kind in ("select", "explain", "subscribe"):
            return self._query(stmt)
        if kind == "truncate":  # a DELETE of every row of each table, in one transaction
            implicit = self.txn is None
            txn = self._transaction()
            txn.explicit = True  # held open across the DELETEs
            state = self.env.catalog.load()
            try:
                order = truncate_order(state, stmt.args["names"], stmt.args["cascade"])
                with privilege_checks.truncating(state, order):
                    for name in order:
                        self._write(
                            parse(
                                "DELETE FROM " + ".".join(map(ddl.quote_ident, name.split(".", 1)))
                            )
                        )
            finally:
                txn.explicit = not implicit
            self._end(txn)
            return Result("TRUNCATE TABLE", notices=notices(self.env.catalog.load(), stmt))
        if kind in DML_KINDS:
            return self._write(stmt)
        if kind == "with_writes":
            return run_with_writes(self, stmt)
        raise PlanError(f"{stmt.text!r} is not supported", sqlstate="0A000")

    def _ddl(self, stmt: Statement) -> Result:
        if self.in_transaction:
            return txn_ddl.in_transaction(self, stmt, lambda s: DDL[s.kind](self.env, s))
        if self.access is not None and stmt.kind == "create_source":
            self.access.check_source(stmt.args["name"], stmt.args["path"])
        if self.access is not None and stmt.kind == "create_sink":
            self.access.check_sink(stmt.args["name"], stmt.args["target"])
        return DDL[stmt.kind](self.env, stmt)

    # -- queries -----------------------------------------------------------------------------

    def _query(self, stmt: Statement) -> Result:
        if stmt.kind == "subscribe":
            raise PlanError(
                "SUBSCRIBE streams rows: use connection.subscribe(), or a cursor's fetch "
                "methods (changeflow.connect), or `changeflow sql`",
                sqlstate="0A000",
            )
        state, described, self.described = self.env.catalog.load(), self.described, None
        kept = described is not None and described[0] is stmt and described[1] is state
        query = described[2] if kept else plan_select(self.env.plans, stmt, state, self._run_now)
        if stmt.kind == "explain":
            lines = query.plan.explain().splitlines()
            return text_result("EXPLAIN", ["Optimized Plan"], [(line,) for line in lines])
        txn = self._transaction()
        timeline = self._timeline(query.timelines, txn)
        ts = self._read_ts(stmt, query.plan, timeline, txn)
        if txn.explicit and stmt.args.get("as_of") is None:  # it may write after, or before
            counted = transaction_read(
                self.env, state, txn, query.plan, ts, query.finishing, self._evaluate
            )
        else:
            counted = self._evaluate(query.plan, ts, query.finishing)
        rows = shown_rows(finish(counted, query.finishing), query.shown, state, "changeflow")
        self._end(txn)
        columns = _visible(query)
        return Result(f"SELECT {len(rows)}", columns, padded_rows(rows, columns))

    def _timeline(self, timelines: frozenset[str], txn: Transaction) -> str:
        check_single(timelines, "the query")
        timeline = next(iter(timelines), txn.timeline or EPOCH)
        if txn.timeline is not None and txn.timeline != timeline:
            check_transaction(txn.timeline, timeline)
        txn.timeline = timeline
        return timeline

    def _read_ts(self, stmt: Statement, plan: P.Plan, timeline: str, txn: Transaction) -> int:
        as_of = stmt.args.get("as_of")
        if as_of is not None:
            return self._as_of(as_of, plan, timeline)
        if txn.read_ts is None:
            txn.read_ts = self.env.read_ts(timeline, plan.collections())
        return txn.read_ts

    def _as_of(self, text: str, plan: P.Plan, timeline: str) -> int:
        ts = timestamp_number(text, "AS OF")
        latest = self.env.read_ts(timeline, plan.collections())
        if ts > latest or ts < 0:
            raise PlanError(
                f"AS OF {ts} is outside the readable times: the latest complete timestamp is "
                f"{latest}",
                sqlstate="22003",
            )
        return ts

    def _run_now(self, plan: P.Plan) -> dict[tuple[Any, ...], int]:
        """``plan``'s rows at the transaction's read time (or the latest, before it has one);
        in a transaction block, of tables, with its own writes and checked at its commit."""
        txn, state, shards = self.txn, self.env.catalog.load(), plan.collections()
        timelines = {i.timeline for i in state.items.values() if i.shard in shards}
        if txn is not None and txn.explicit and timelines == {EPOCH}:
            self._timeline(frozenset(timelines), txn)
            if txn.read_ts is None:
                txn.read_ts = self.env.read_ts(EPOCH, shards)
            return transaction_read(self.env, state, txn, plan, txn.read_ts, None, self._evaluate)
        ts = None if txn is None else txn.read_ts
        timeline = EPOCH if txn is None or txn.timeline is None else txn.timeline
        return self._evaluate(
            plan, self.env.read_ts(timeline, plan.collections()) if ts is None else ts
        )

    def _evaluate(
        self, plan: P.Plan, ts: int, shown: Finishing | None = None
    ) -> dict[tuple[Any, ...], int]:
        try:
            return within_budget(
                self.memory_budget, lambda: self.env.evaluate(plan, ts, self.timeout, shown=shown)
            )
        except FrontierViolation as e:
            raise PlanError(
                f"cannot read at timestamp {ts}: it has been compacted away ({e})",
                sqlstate="22003",
            ) from None

    def _transaction(self) -> Transaction:
        if self.txn is None:
            self.txn = Transaction(explicit=False)
        return self.txn

    def _end(self, txn: Transaction) -> None:
        """Commit an implicit transaction at the end of its one statement."""
        if not txn.explicit:
            self.txn = None
            self.committing = txn

    def subscribe(self, stmt: Statement) -> Subscribe:
        """Open the subscription of a SUBSCRIBE statement."""
        g = stmt.args
        unknown = sorted(g["with"].keys() - {"progress", "snapshot"})
        if unknown:
            raise PlanError(f"unknown SUBSCRIBE option {unknown[0].upper()}", sqlstate="42601")
        resolver = CatalogResolver(self.env.catalog.load())
        if g.get("item"):
            relation = resolver.relation(g["item"])
            plan, timelines = relation.plan, frozenset({relation.timeline})
            read = {relation.name}
        else:
            query = plan_query(stmt.ast, resolver, temporal_and_only=True)
            plan, timelines, read = view_plan(query), query.timelines, set(query.items)
        privilege_checks.require_reads(resolver.state, read)  # SELECT on what it follows
        txn = self._transaction()
        timeline = self._timeline(timelines, txn)
        as_of = self._read_ts(stmt, plan, timeline, txn)
        self._end(txn)
        up_to = timestamp_number(g["up_to"], "UP TO") if g.get("up_to") else None
        progress = g["with"].get("progress", "false").lower() in ("true", "on", "1")
        return Subscribe(self.env, plan, timeline, as_of, up_to, progress)

    # -- writes ------------------------------------------------------------------------------

    def _write(self, stmt: Statement) -> Result:
        return write(self, stmt)

    def _commit(self, txn: Transaction) -> None:
        check_deferred(self, txn)
        frames = {s: pa.concat_tables(f) for s, f in txn.writes.items() if f}
        if not frames:
            return
        reads = None
        if txn.reads and txn.read_ts is not None:
            env, read_ts, read_rows = self.env, txn.read_ts, txn.read_rows
            reads = Reads(
                read_ts,
                frozenset(txn.reads),
                lambda upper, moved: reads_unchanged(env, read_rows, read_ts, upper, moved),
                lambda written: reads_unaffected(read_rows, written),
            )
        self.env.committer.commit(frames, reads)


def _aborted() -> PlanError:
    return PlanError(
        "current transaction is aborted, commands ignored until end of transaction block",
        sqlstate="25P02",
    )


def _locked(lock: Any, fn: Callable[[], T]) -> T:
    with lock:
        return fn()


def _visible(query: Any) -> tuple:
    width = query.finishing.width
    schema = query.plan.schema if width is None else query.plan.schema[:width]
    return shown_columns(schema, query.shown)
