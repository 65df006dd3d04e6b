"""Drivers by URL scheme: ``postgresql://…``, ``sqlite:PATH``, ``files:PATH``, ``kv:PATH``,
``jsonl:PATH``. ``python -m changeflow.materialize.drivers URL`` serves one on stdin/stdout."""

from __future__ import annotations

from importlib import import_module

from changeflow.errors import InvalidInput
from changeflow.materialize.driver import Driver

#: scheme -> (module, class); each module is imported only when its driver is used
DRIVERS = {
    "postgresql": ("changeflow.materialize.drivers.postgres", "PostgresDriver"),
    "postgres": ("changeflow.materialize.drivers.postgres", "PostgresDriver"),
    "sqlite": ("changeflow.materialize.drivers.sqlite", "SqliteDriver"),
    "files": ("changeflow.materialize.drivers.files", "FilesDriver"),
    "kv": ("changeflow.materialize.drivers.kv", "KvDriver"),
    "jsonl": ("changeflow.materialize.drivers.jsonl", "JsonlDriver"),
}


def open_driver(url: str) -> Driver:
    """The driver for ``url``: the scheme picks it, the rest is its endpoint."""
    scheme = url.split(":", 1)[0]
    if scheme not in DRIVERS or ":" not in url:
        raise InvalidInput(
            f"materialization target {url!r} is not one of postgresql://…, sqlite:PATH, "
            "files:PATH, kv:PATH, jsonl:PATH"
        )
    module, name = DRIVERS[scheme]
    return getattr(import_module(module), name)(url)
