"""Credentials out of text: ``postgresql://user:secret@host`` becomes ``postgresql://user:***@host``
and a libpq ``password=secret`` becomes ``password=***``, wherever a URL may be shown (errors,
logs, SHOW CREATE SINK, the status page and /metrics)."""

from __future__ import annotations

import logging
import re

_URL = re.compile(r"(?P<head>\b[A-Za-z][A-Za-z0-9+.-]*://[^:/@\s'\"]*:)[^@\s'\"]*@")
_KEYWORD = re.compile(r"(?P<head>\bpassword\s*=\s*)(?:'(?:[^'\\]|\\.)*'|[^\s'&]+)", re.I)
HIDDEN = "***"


def redact(text: str) -> str:
    """``text`` with every password of a URL or a ``password=`` setting replaced by ***."""
    if "@" not in text and "password" not in text.lower():
        return text
    text = _URL.sub(lambda m: m["head"] + HIDDEN + "@", text)
    return _KEYWORD.sub(lambda m: m["head"] + HIDDEN, text)


class RedactingFormatter(logging.Formatter):
    """A log formatter whose output (message and traceback) never holds a password."""

    def format(self, record: logging.LogRecord) -> str:
        return redact(super().format(record))
