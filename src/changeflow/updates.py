"""The shape updates have in every layer: the names of an update frame's columns and the
canonical JSON text of a datum.

An update frame holds the data columns, then ``TIME`` (int64) and ``DIFF`` (int64). User columns
may not start with ``_``.
"""

from __future__ import annotations

import json
from typing import Any

TIME, DIFF = "_time", "_diff"

_canonical = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode


def canonical_json(value: Any) -> str:
    """The one JSON text of ``value``: sorted keys, no spaces, UTF-8 as is (equal data, equal
    text, so text can be compared and hashed in place of the value)."""
    return _canonical(value)


def data_columns(names: list[str]) -> list[str]:
    """The data columns of an update frame's column names (those not starting with ``_``)."""
    return [n for n in names if not n.startswith("_")]
