"""Passwords out of anything shown: URLs and libpq settings, in text and in log lines."""

from __future__ import annotations

import logging
import sys

import pytest

from changeflow.errors import InvalidInput
from changeflow.redact import RedactingFormatter, redact


@pytest.mark.parametrize(
    "text, shown",
    [
        ("postgresql://me:s3cr3t@db:5432/x", "postgresql://me:***@db:5432/x"),
        ("INTO 'postgres://me:a%40b@h/x' KEY (k)", "INTO 'postgres://me:***@h/x' KEY (k)"),
        ("host=db password=s3cr3t user=me", "host=db password=*** user=me"),
        ("password = 's3 cr3t' dbname=x", "password = *** dbname=x"),
        ("postgresql://me@db/x and a@b.c", "postgresql://me@db/x and a@b.c"),
        ("sqlite:/tmp/out.sqlite", "sqlite:/tmp/out.sqlite"),
    ],
)
def test_redact(text: str, shown: str) -> None:
    assert redact(text) == shown


def test_errors_and_log_lines_never_hold_a_password() -> None:
    error = InvalidInput("cannot connect to postgresql://me:s3cr3t@db/x: refused")
    assert "s3cr3t" not in str(error) and "me:***@db" in str(error)
    try:
        raise RuntimeError("postgresql://me:s3cr3t@db/x")
    except RuntimeError:
        record = logging.LogRecord(
            "t",
            logging.ERROR,
            __file__,
            1,
            "statement %r failed",
            ("url 'postgresql://me:s3cr3t@db'",),
            True,
        )
        record.exc_info = sys.exc_info()
    line = RedactingFormatter("%(message)s").format(record)
    assert "s3cr3t" not in line and "Traceback" in line
