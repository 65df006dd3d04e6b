"""Deferred FOREIGN KEY checks: a ``DEFERRABLE INITIALLY DEFERRED`` constraint (or one that
``SET CONSTRAINTS … DEFERRED`` defers) is checked when its transaction commits, not at the end
of each statement, as PostgreSQL does.

A write records what it would have checked (the rows it added to a referencing table, or the
rows it changed in a referenced one where the action is NO ACTION); COMMIT, and ``SET
CONSTRAINTS … IMMEDIATE``, check them against the tables as the transaction leaves them: a
referencing row checked is one still there, a key taken away one still gone and still
referenced. A failed check at COMMIT rolls the transaction back (23503). Referential actions
(CASCADE, SET NULL, SET DEFAULT) and RESTRICT are never deferred.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from changeflow.adapter.foreign_keys import ForeignKey, foreign_keys_of
from changeflow.adapter.result import Result
from changeflow.errors import PlanError

if TYPE_CHECKING:
    from changeflow.adapter.session import Session, Transaction

Row = tuple[Any, ...]
ALL = "*"  # SET CONSTRAINTS ALL's entry in a transaction's modes


@dataclass
class Pending:
    """Checks a write left for later: ``added`` rows of the referencing table ``child``
    (side ``child``), or the ``added`` and ``removed`` rows of its referenced table (side
    ``parent``), for its foreign key ``name``."""

    side: str
    child: str
    name: str
    added: list[Row]
    removed: list[Row]


def deferring(txn: Transaction, fk: ForeignKey) -> bool:
    """Whether ``fk`` is checked at COMMIT in ``txn`` (its declaration, or SET CONSTRAINTS)."""
    if not fk.deferrable:
        return False
    modes = txn.constraint_modes
    return modes.get(fk.name, modes.get(ALL, fk.deferred))


def check_deferred(session: Session, txn: Transaction, only: set[str] | None = None) -> None:
    """Run the checks ``txn`` deferred (those of the constraints named ``only``, or all),
    each constraint's rows at once."""
    from changeflow.adapter.fk_enforce import check_child, check_parent

    state = session.env.catalog.load()
    merged: dict[tuple[str, str, str], Pending] = {}
    kept = []
    for p in txn.deferred:
        if only is not None and p.name not in only:
            kept.append(p)
            continue
        m = merged.setdefault((p.side, p.child, p.name), Pending(p.side, p.child, p.name, [], []))
        m.added += p.added
        m.removed += p.removed
    txn.deferred = kept
    for p in merged.values():
        child = state.items.get(p.child)
        fk = next((f for f in foreign_keys_of(child) if f.name == p.name), None) if child else None
        if child is None or fk is None:  # dropped since: nothing to check
            continue
        if p.side == "child":
            check_child(session, txn, state, child, fk, p.added, present=True)
        elif (parent := state.items.get(fk.parent)) is not None:
            check_parent(session, txn, state, parent, child, fk, p.added, p.removed)


def set_constraints(session: Session, args: dict[str, Any]) -> Result:
    """``SET CONSTRAINTS {ALL | name, …} {DEFERRED | IMMEDIATE}``."""
    txn = session.txn
    if txn is None or not txn.explicit:
        warning = ("25P01", "SET CONSTRAINTS can only be used in transaction blocks", "")
        return Result("SET CONSTRAINTS", notices=[warning])
    deferred = args["mode"].upper() == "DEFERRED"
    names = None if args["names"] is None else set(args["names"])
    if names is None:
        txn.constraint_modes = {ALL: deferred}
    else:
        for name in names:
            _deferrable(session, name)
            txn.constraint_modes[name] = deferred
    if not deferred:
        check_deferred(session, txn, names)
    return Result("SET CONSTRAINTS")


def _deferrable(session: Session, name: str) -> None:
    """42704 if no constraint is named ``name``, 42809 if the one that is cannot be deferred."""
    for item in session.env.catalog.load().items.values():
        if item.kind != "table":
            continue
        if any(f.name == name and f.deferrable for f in foreign_keys_of(item)):
            return
        named = [f.name for f in foreign_keys_of(item)]
        named += [u[0] for u in item.options.get("unique") or []]
        named += [c[0] for c in item.options.get("checks") or []]
        if name in named:
            raise PlanError(f'constraint "{name}" is not deferrable', sqlstate="42809")
    raise PlanError(f'constraint "{name}" does not exist', sqlstate="42704")
