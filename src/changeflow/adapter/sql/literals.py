"""PostgreSQL's string literals other than standard ones: escape strings (``E'…'``) and
dollar-quoted strings, written as the standard strings of their values."""

from __future__ import annotations

import re

from changeflow.errors import PlanError

_LEXEMES = re.compile(
    r"--[^\n]*|/\*.*?\*/|\"(?:[^\"]|\"\")*\"|\$((?:[A-Za-z_]\w*)?)\$.*?\$\1\$"
    r"|(?<![\w$])[Ee]'((?:[^'\\]|\\.|'')*)'|'(?:[^']|'')*'",
    re.S,
)


def plain_strings(text: str) -> str:
    """``text`` with each escape string (``E'…'``) and dollar-quoted string written as the
    standard string of its value (escapes decoded by PostgreSQL's rules:
    :func:`escape_string`); comments, quoted names and standard strings are left as they
    are."""
    if "'" not in text and "$" not in text:
        return text

    def standard(m: re.Match[str]) -> str:
        whole, body = m.group(0), m.group(2)
        if whole[0] == "$":  # a dollar-quoted string: its text as it is
            tag = len(m.group(1)) + 2
            return "'" + whole[tag:-tag].replace("'", "''") + "'"
        if body is None:
            return whole
        return "'" + escape_string(body).replace("'", "''") + "'"

    return _LEXEMES.sub(standard, text)


_ESCAPE = re.compile(
    r"\\(?:([0-7]{1,3})|x([0-9A-Fa-f]{1,2})|u([0-9A-Fa-f]{4})|U([0-9A-Fa-f]{8})|(.))|''", re.S
)
_LETTERS = {"b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t"}


def escape_string(body: str) -> str:
    """The value of an escape string's body (between ``E'`` and ``'``), by PostgreSQL's rules:
    ``\\b \\f \\n \\r \\t``, octal and hex bytes, ``\\u``/``\\U`` code points, ``\\`` before any
    other character is that character, ``''`` is a quote; the bytes must be UTF-8 (22021)."""
    out = bytearray()
    pos = 0
    for m in _ESCAPE.finditer(body):
        out += body[pos : m.start()].encode()
        pos = m.end()
        octal, hexa, short, long, other = m.groups()
        if octal or hexa:
            out.append(int(octal, 8) & 0xFF if octal else int(hexa, 16))
        elif short or long:
            out += _code_point(int(short or long, 16)).encode()
        elif other is not None:
            out += _LETTERS.get(other, other).encode()
        else:
            out += b"'"
    out += body[pos:].encode()
    try:
        if 0 in out:
            raise UnicodeDecodeError("utf-8", bytes(out), out.index(0), out.index(0) + 1, "nul")
        return out.decode()
    except UnicodeDecodeError as e:
        bad = bytes(out[e.start : e.end]).hex()
        raise PlanError(
            f'invalid byte sequence for encoding "UTF8": 0x{bad}', sqlstate="22021"
        ) from None


def _code_point(value: int) -> str:
    if value == 0 or 0xD800 <= value <= 0xDFFF or value > 0x10FFFF:
        raise PlanError("invalid Unicode escape value", sqlstate="22P05")
    return chr(value)
