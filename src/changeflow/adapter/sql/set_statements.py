"""The SET family of statements: their forms (in the order they are tried) and the statement
each is read as. SET TIME ZONE, SET NAMES and SET SCHEMA set the parameter they name; RESET x
is SET x TO DEFAULT; SET TRANSACTION and SET SESSION CHARACTERISTICS AS TRANSACTION carry their
modes. SET ROLE and SET SESSION AUTHORIZATION are :mod:`.role_statements`'."""

from __future__ import annotations

from typing import Any

SET_PATTERNS = [
    ("set_time_zone", r"SET\s+(?:SESSION\s+|(?P<local>LOCAL)\s+)?TIME\s+ZONE\s+(?P<value>.+)"),
    (
        "set_transaction",
        r"SET\s+(?P<session>SESSION\s+CHARACTERISTICS\s+AS\s+)?TRANSACTION\s+(?P<modes>.+)",
    ),
    ("set_names", r"SET\s+(?P<var>NAMES|SCHEMA)\s+(?P<value>.+)"),
    ("set", r"SET\s+(?:SESSION\s+|(?P<local>LOCAL)\s+)?(?P<var>[\w.]+)\s*(?:=|TO)\s*(?P<value>.+)"),
    ("reset_all", r"RESET\s+ALL"),
    ("reset", r"RESET\s+(?P<var>[\w.]+)"),
]
SET_KINDS = frozenset(kind for kind, _ in SET_PATTERNS)


def set_statement(kind: str, g: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """The statement kind and arguments a SET-family form matched as ``kind`` (its groups
    ``g``) is run as."""
    if kind == "set_time_zone":
        return "set", {"var": "timezone", "value": g["value"], "local": g["local"]}
    if kind == "set_names":  # SET NAMES is client_encoding's, SET SCHEMA search_path's
        var = "client_encoding" if g["var"].upper() == "NAMES" else "search_path"
        return "set", {"var": var, "value": g["value"]}
    if kind == "set_transaction":
        return kind, {"modes": g["modes"], "session": bool(g["session"])}
    if kind == "reset":  # RESET x is SET x TO DEFAULT
        return "set", {"var": g["var"], "value": "DEFAULT"}
    return kind, g
