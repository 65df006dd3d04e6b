"""The statements the server answers itself, around the session's: COPY … TO STDOUT, DISCARD,
and the few catalog questions that clients ask on connect (cursors: the runner, with
:mod:`changeflow.adapter.cursors`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from changeflow.adapter.sql.statements import QNAME, commas, name, unquote
from changeflow.errors import PlanError

_FLAGS = re.IGNORECASE | re.DOTALL
COPY = re.compile(
    rf"COPY\s+(?:\((?P<query>.+)\)|(?P<table>{QNAME})\s*(?:\((?P<columns>[^)]*)\))?)\s+"
    r"(?P<direction>TO|FROM)\s+(?P<where>STDOUT|STDIN|'(?:[^']|'')*')\s*(?P<options>.*)",
    _FLAGS,
)
DISCARD = re.compile(r"DISCARD\s+(?:ALL|PLANS|SEQUENCES|TEMP|TEMPORARY)", _FLAGS)
FUNCTION = re.compile(
    r"SELECT\s+(?:pg_catalog\s*\.\s*)?(?P<fn>version|current_database|current_schema|"
    r"current_user|session_user|current_role|user)\s*(?:\(\s*\))?\s*"
    r"(?:AS\s+(?P<alias>\w+|\"[^\"]+\"))?",
    _FLAGS,
)
PG_CURSORS = re.compile(
    r"SELECT\s+1\s+FROM\s+(?:pg_catalog\s*\.\s*)?pg_cursors\s+WHERE\s+name\s*=\s*"
    r"'(?P<name>(?:[^']|'')*)'",
    _FLAGS,
)
CATALOG = re.compile(r"\b(pg_catalog|information_schema|pg_class|pg_namespace|pg_type)\b", re.I)


@dataclass(frozen=True)
class Copy:
    """A COPY statement: what it reads and how rows are written."""

    query: str
    direction: str  # "to" or "from"
    table: str | None = None
    columns: list[str] | None = None
    format: str = "text"
    header: bool = False
    delimiter: str = "\t"
    null: str = "\\N"


def strip(text: str) -> str:
    return text.strip().rstrip(";").strip()


def cursor_name(text: str) -> str:
    return name(text)


def timeout_seconds(text: str) -> float:
    """A FETCH timeout (``'1s'``, ``'500ms'``, ``'2 minutes'``, a bare number of seconds)."""
    m = re.fullmatch(
        r"\s*(\d+(?:\.\d+)?)\s*(ms|milliseconds?|s|secs?|seconds?|m|mins?|minutes?|h|hours?)?\s*",
        text,
        re.I,
    )
    if not m:
        raise PlanError(f"invalid FETCH timeout {text!r}: use e.g. 1s or 500ms", sqlstate="22023")
    value, unit = float(m[1]), (m[2] or "s").lower()
    scale = 0.001 if unit.startswith("ms") or unit.startswith("milli") else 1.0
    if unit.startswith("m") and not (unit.startswith("ms") or unit.startswith("milli")):
        scale = 60.0
    if unit.startswith("h"):
        scale = 3600.0
    return value * scale


def copy_statement(m: re.Match[str]) -> Copy:
    """A parsed COPY statement; its options in either the modern or the legacy form."""
    if m["where"].startswith("'"):
        raise PlanError(
            "COPY to or from a file on the server is not supported: use STDOUT or STDIN "
            "(psql's \\copy does)",
            sqlstate="0A000",
        )
    direction = m["direction"].lower()
    if direction == "to" and m["where"].upper() != "STDOUT":
        raise PlanError("COPY … TO takes STDOUT", sqlstate="42601")
    if direction == "from" and m["where"].upper() != "STDIN":
        raise PlanError("COPY … FROM takes STDIN", sqlstate="42601")
    columns = [name(c) for c in m["columns"].split(",")] if m["columns"] else None
    table = name(m["table"]) if m["table"] else None
    if m["query"] is not None:
        if direction == "from":
            raise PlanError("COPY (query) FROM is not possible", sqlstate="42601")
        query = m["query"].strip()
    else:
        assert table is not None
        cols = ", ".join(f'"{c}"' for c in columns) if columns else "*"
        query = f'SELECT {cols} FROM "{table}"'
    opts = _copy_options(m["options"] or "")
    fmt = opts.pop("format", "text").lower()
    if fmt not in ("text", "csv", "binary"):
        raise PlanError(f"COPY format {fmt!r} not recognized", sqlstate="22023")
    header = opts.pop("header", "false").lower() in ("true", "on", "1", "")
    default_delimiter = "," if fmt == "csv" else "\t"
    delimiter = opts.pop("delimiter", default_delimiter)
    null = opts.pop("null", "" if fmt == "csv" else "\\N")
    if len(delimiter) != 1:
        raise PlanError("COPY delimiter must be a single one-byte character", sqlstate="0A000")
    if opts:
        raise PlanError(
            f"COPY option {next(iter(opts)).upper()} is not supported", sqlstate="0A000"
        )
    return Copy(query, direction, table, columns, fmt, header, delimiter, null)


def _copy_options(text: str) -> dict[str, str]:
    text = strip(text)
    text = re.sub(r"^WITH\b", "", text, flags=re.I).strip()
    out: dict[str, str] = {}
    if text.startswith("("):
        if not text.endswith(")"):
            raise PlanError(f"syntax error in COPY options {text!r}", sqlstate="42601")
        for part in commas(text[1:-1]):
            key, _, value = part.strip().partition(" ")
            if key:
                out[key.lower()] = unquote(value) if value.strip() else ""
        return out
    words = re.findall(r"E?'(?:[^']|'')*'|\S+", text)
    i = 0
    while i < len(words):
        word = words[i].upper()
        if word in ("BINARY", "CSV", "TEXT"):
            out["format"] = word.lower()
        elif word == "HEADER":
            out["header"] = "true"
        elif word in ("DELIMITER", "NULL"):
            i += 1
            if i < len(words) and words[i].upper() == "AS":
                i += 1
            if i >= len(words):
                raise PlanError(f"COPY option {word} needs a value", sqlstate="42601")
            out[word.lower()] = unquote(words[i])
        else:
            raise PlanError(f"COPY option {words[i]!r} is not supported", sqlstate="0A000")
        i += 1
    return out
