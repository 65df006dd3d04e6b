"""The extended query protocol for a client: Parse, Bind, Describe (without running the
statement), Execute with a row limit, Close."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from changeflow.adapter.ddl import quote_name
from changeflow.adapter.sql.statements import WRITE_KINDS, Statement, parse, split
from changeflow.adapter.system_types import system_columns
from changeflow.compute.types import Schema
from changeflow.errors import PlanError
from changeflow.server import commands as C
from changeflow.server import pgwire as W
from changeflow.server.batch import (
    MAX_ROWS,
    Batch,
    Shape,
    Target,
    bound_row,
    format_code,
    insert_rows,
    target,
)
from changeflow.server.params import placeholders, substitute
from changeflow.server.pipeline import WRITES, Pipeline, is_write
from changeflow.server.prepare import UNREAD, Prepared, infer_oids
from changeflow.server.runner import Outcome
from changeflow.server.values import TYPE_NAMES, from_binary, from_text
from changeflow.server.values import sql_literal as param_literal

if TYPE_CHECKING:
    from changeflow.adapter.catalog import CatalogState
    from changeflow.adapter.session import Session


@dataclass
class Portal:
    """A bound statement of the extended protocol."""

    text: str
    formats: list[int]
    described: bool = False
    columns: Schema | None = None
    outcome: Outcome | None = None
    sent: int = 0
    row: tuple[Target, list[Any]] | None = None  # a prepared INSERT's row, collected
    keyed: bool = False  # ... into a keyed table: inserted at its Execute
    stmt: Statement | None = None  # the query as described: run as is, with the plan kept


class Extended(Pipeline):
    """The extended-protocol part of a client connection (statements run through
    :class:`~changeflow.server.runner.Runner`; the writes up to Sync are one transaction,
    :mod:`~changeflow.server.pipeline`)."""

    session: Session | None
    wire: W.Wire
    prepared: dict[str, Prepared]
    portals: dict[str, Portal]
    cursors: dict[str, Any]
    busy: bool
    batch: Batch | None

    # -- extended query ----------------------------------------------------------------------

    def parse(self, r: W.Reader) -> None:
        name, text = r.cstr(), r.cstr()
        oids = [r.int32() for _ in range(r.int16())]
        statements = split(text)
        if len(statements) > 1:
            raise PlanError(
                "cannot insert multiple commands into a prepared statement", sqlstate="42601"
            )
        if name and name in self.prepared:
            raise PlanError(f'prepared statement "{name}" already exists', sqlstate="42P05")
        needed = placeholders(text)
        oids += [0] * (needed - len(oids))
        self.prepared[name] = Prepared(statements[0] if statements else "", oids)
        self.wire.send(b"1")

    def bind(self, r: W.Reader) -> None:
        portal, name = r.cstr(), r.cstr()
        format_codes = [r.int16() for _ in range(r.int16())]
        raw: list[bytes | None] = []
        for _ in range(r.int16()):
            n = r.int32()
            raw.append(None if n < 0 else r.bytes(n))
        result_formats = [r.int16() for _ in range(r.int16())]
        prepared = self.prepared.get(name)
        if prepared is None:
            raise PlanError(f'prepared statement "{name}" does not exist', sqlstate="26000")
        if len(raw) != len(prepared.oids):
            raise W.ProtocolError(
                f"bind message supplies {len(raw)} parameters, but prepared statement "
                f'"{name}" requires {len(prepared.oids)}'
            )
        literals = []
        for i, (value, oid) in enumerate(zip(raw, prepared.oids, strict=True), 1):
            if value is None:
                type_name = TYPE_NAMES.get(oid)
                literals.append(f"NULL::{type_name}" if type_name else "NULL")
            elif format_code(format_codes, i - 1) == 1:
                literals.append(param_literal(from_binary(value, oid, i)))
            else:
                try:
                    decoded = value.decode("utf-8")
                except UnicodeDecodeError:
                    raise PlanError(f"invalid UTF-8 in parameter ${i}", sqlstate="22021") from None
                literals.append(param_literal(from_text(decoded, oid, i)))
        text = substitute(prepared.text, literals) if literals else prepared.text
        row = self._row(prepared, raw, format_codes)
        keyed = isinstance(prepared.columns, Shape) and prepared.columns.keyed
        self.portals[portal] = Portal(text, result_formats, row=row, keyed=keyed)
        self.wire.send(b"2")

    def _row(
        self, prepared: Prepared, raw: list[bytes | None], formats: list[int]
    ) -> tuple[Target, list[Any]] | None:
        """A plain prepared INSERT's row, to collect instead of running its text
        (:mod:`~changeflow.server.batch`); None for any other statement."""
        if prepared.found is UNREAD:
            prepared.found = target(prepared.text)
        found, session = prepared.found, self.session
        if found is None or session is None or (session.txn is not None and session.txn.failed):
            return None
        state = session.env.catalog.load()
        if prepared.catalog is not state:  # looked up once per catalog version
            prepared.columns, prepared.catalog = self._shape(found, state), state
        if not prepared.columns:
            return None
        row = bound_row(found, prepared.columns, prepared.oids, raw, formats)
        return None if row is None else (found, row)

    def _shape(self, found: Target, state: CatalogState) -> Shape | bool:
        """The target table's :class:`~changeflow.server.batch.Shape` on catalog version
        ``state``; False if it is none."""
        assert self.session is not None
        env = self.session.env
        try:
            relation = env.plans.relation(state, found.table)
        except PlanError:
            return False  # the statement path gives the error
        item = state.by_name(relation.name)
        if relation.kind != "table" or item is None or any(relation.generated):
            return False  # (generated columns are computed by the statement path)
        stored = env.storage.state(item.id).schema
        lengths = item.options.get("lengths") or [None] * len(relation.plan.schema)
        plain = frozenset(
            c.name
            for c, n in zip(relation.plan.schema, lengths, strict=True)
            if n is None and stored.field(c.name).type == c.type.arrow
        )
        defaults = frozenset(
            c.name for c, d in zip(relation.plan.schema, relation.defaults, strict=False) if d
        )
        keyed = bool(relation.unique or relation.checks or relation.referencing)
        return Shape(relation.plan.schema, defaults, plain, keyed=keyed)

    def flush_batch(self) -> None:
        """Insert the rows collected from prepared INSERTs (before anything else runs)."""
        batch, self.batch = self.batch, None
        if batch is not None and batch.rows:
            assert self.session is not None
            batch.insert(self.session)

    def describe(self, r: W.Reader) -> None:
        what, name = r.byte(), r.cstr()
        if what == b"S":
            prepared = self.prepared.get(name)
            if prepared is None:
                raise PlanError(f'prepared statement "{name}" does not exist', sqlstate="26000")
            columns = self._describe_statement(prepared)
            formats: list[int] = []
        elif what == b"P":
            portal = self._portal(name)
            if not portal.described:  # a plain INSERT's row (collected) returns no rows
                rows = portal.row is None
                portal.columns = self._describe_text(portal.text, portal) if rows else None
                portal.described = True
            columns, formats = portal.columns, portal.formats
        else:
            raise W.ProtocolError(f"invalid Describe target {what!r}")
        if columns is None:
            self.wire.send(b"n")
        else:
            self._row_description(columns, formats)

    def _describe_statement(self, prepared: Prepared) -> Schema | None:
        """Send a prepared statement's ParameterDescription; the columns it returns. A query
        or DML statement's are kept with it for the catalog version, search path and
        parameter types they were found on (a driver that describes each statement before
        its Binds, as asyncpg does, describes it again at no cost)."""
        assert self.session is not None
        key = (self.session.env.catalog.load(), self.session.settings["search_path"])
        kept = prepared.described
        if kept is not None and kept[0] is key[0] and kept[1:3] == (key[1], prepared.oids):
            self.wire.send(*W.parameter_description(prepared.oids))
            return kept[3]  # type: ignore[no-any-return]
        prepared.oids = infer_oids(prepared.text, prepared.oids, self._columns_of)
        self.wire.send(*W.parameter_description(prepared.oids))
        nulls = [f"NULL::{TYPE_NAMES[o]}" if o in TYPE_NAMES else "NULL" for o in prepared.oids]
        text = substitute(prepared.text, nulls)
        columns = self._describe_text(text, None)
        stripped = C.strip(text)
        plain = stripped and self._special(stripped, describe=True) is None
        if plain and parse(stripped).kind in {"select", *WRITE_KINDS}:
            prepared.described = (*key, list(prepared.oids), columns)
        return columns

    def _columns_of(self, relation: str) -> Schema | None:
        """A relation's columns (to type the parameters compared with or written to them)."""
        assert self.session is not None
        system = system_columns(relation)  # (pg_catalog comes first on the search path)
        if system is not None:
            return system
        return self.session.describe(parse(f"SELECT * FROM {quote_name(relation)}"))

    def _describe_text(self, text: str, portal: Portal | None) -> Schema | None:
        """The columns a statement will return, found without running it."""
        assert self.session is not None
        text = C.strip(text)
        if not text:
            return None
        special = self._special(text, describe=True)
        if special is not None:
            return special.columns
        stmt = parse(text)
        if stmt.kind == "subscribe":
            if portal is None:
                return self.session.describe(stmt)
            portal.outcome = self.run(text)
            self.busy = False
            return portal.outcome.columns
        columns = self.session.describe(stmt, keep=portal is not None)
        if portal is not None and (stmt.kind in ("select", "explain") or columns is None):
            portal.stmt = stmt  # its plan kept by the session, or its tree left as parsed
        return columns

    def _portal(self, name: str) -> Portal:
        portal = self.portals.get(name)
        if portal is None:
            cursor = self.cursors.get(name)
            if cursor is not None:  # a DECLAREd cursor is a portal too
                return Portal("", [], described=True, columns=cursor.columns)
            raise PlanError(f'portal "{name}" does not exist', sqlstate="34000")
        return portal

    def execute(self, r: W.Reader) -> None:
        name, limit = r.cstr(), r.int32()
        portal = self.portals.get(name)
        if portal is None:
            raise PlanError(f'portal "{name}" does not exist', sqlstate="34000")
        if not portal.text.strip():
            self.wire.send(b"I")
            return
        if portal.row is not None and portal.outcome is None:
            self.begin_writes()
            found, row = portal.row
            if portal.keyed:  # its keys checked now, as PostgreSQL does
                self.flush_batch()
                assert self.session is not None
                insert_rows(self.session, found, [row], [portal.text])
                self.wire.send(*W.command_complete("INSERT 0 1"))
                return
            batch = self.batch
            if batch is None or batch.target != found or len(batch.rows[0]) != len(row):
                self.flush_batch()
                batch = self.batch = Batch(found)
            batch.rows.append(row)
            batch.texts.append(portal.text)
            if len(batch.rows) >= MAX_ROWS:
                self.flush_batch()
            self.wire.send(*W.command_complete("INSERT 0 1"))
            return
        self.flush_batch()
        if portal.outcome is None:
            write = portal.stmt.kind in WRITES if portal.stmt else is_write(portal.text)
            if write:
                self.begin_writes()
            else:  # a read or another statement runs on its own
                self.end_writes()
        try:
            if portal.outcome is None:
                portal.outcome = self.run(portal.text, portal.stmt)
            self._send_outcome(portal.outcome, portal.formats, max(limit, 0))
        except Exception:
            if portal.outcome is not None:
                portal.outcome = Outcome(portal.outcome.tag)
            raise
        finally:
            self.busy = False

    def close(self, r: W.Reader) -> None:
        what, name = r.byte(), r.cstr()
        if what == b"S":
            self.prepared.pop(name, None)
        elif what == b"P":
            self.portals.pop(name, None)
            self.cursors.pop(name, None)
        else:
            raise W.ProtocolError(f"invalid Close target {what!r}")
        self.wire.send(b"3")

    def function_call(self, r: W.Reader) -> None:
        raise PlanError("the function call protocol is not supported", sqlstate="0A000")
