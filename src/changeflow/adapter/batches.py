"""Several statements of one Query message: one implicit transaction, or one at a time."""

from __future__ import annotations

from typing import Any

from changeflow.adapter.sql.statements import WRITE_KINDS, parse
from changeflow.errors import ChangeflowError


def one_transaction(session: Any, texts: list[str]) -> bool:
    """Do the statements of one Query message run as one implicit transaction? As in
    PostgreSQL, several writes outside a transaction block commit together or not at all
    (a batch with reads, DDL or transaction control runs statement by statement)."""
    if len(texts) < 2 or session.txn is not None:
        return False
    try:
        return all(parse(t).kind in WRITE_KINDS for t in texts)
    except ChangeflowError:
        return False
