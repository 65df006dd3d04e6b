"""Who may make the server read and write its own files, as PostgreSQL has it.

A source reads files on the server and a file sink (``sqlite:``, ``files:``, ``kv:``,
``jsonl:``) writes them. PostgreSQL lets only superusers and the members of
``pg_read_server_files`` / ``pg_write_server_files`` touch server files; a client session here
carries an :class:`Access` with its user's roles and the folders the operator allows
(``--allow-path``, default: the home). The embedded API has no Access: the process owner may
do anything. A refusal is a ``42501`` error.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from changeflow.errors import PlanError

SUPERUSER = "superuser"
READ_FILES = "pg_read_server_files"
WRITE_FILES = "pg_write_server_files"
ROLES = (SUPERUSER, READ_FILES, WRITE_FILES)
#: sink schemes whose target is a path on the server
FILE_SCHEMES = ("sqlite", "files", "kv", "jsonl")


def check_role(role: str, where: str) -> str:
    if role not in ROLES:
        raise PlanError(f"{where}: unknown role {role!r}; the roles are {', '.join(ROLES)}")
    return role


def _resolved(path: str | Path) -> Path:
    return Path(os.path.expanduser(str(path))).resolve()


@dataclass(frozen=True)
class Access:
    """A client's user, its roles, and the folders server files may be in."""

    user: str
    roles: frozenset[str]
    roots: tuple[Path, ...]

    @classmethod
    def of(cls, user: str, roles: Iterable[str], roots: Iterable[str | Path]) -> Access:
        return cls(user, frozenset(roles), tuple(_resolved(r) for r in roots))

    @property
    def superuser(self) -> bool:
        return SUPERUSER in self.roles

    def check_source(self, name: str, path: str) -> None:
        """May this user make the server read ``path`` for source ``name``?"""
        self._role(READ_FILES, f'create source "{name}"', "read")
        self._inside(path, f'source "{name}"')

    def check_sink(self, name: str, target: str) -> None:
        """May this user make the server write ``target`` for sink ``name``?"""
        scheme, sep, rest = target.partition(":")
        if not sep or scheme not in FILE_SCHEMES:
            return  # a database over the network, not a server file (or an unknown scheme)
        self._role(WRITE_FILES, f'create sink "{name}"', "write")
        self._inside(rest, f'sink "{name}"')

    def _role(self, role: str, action: str, verb: str) -> None:
        if self.superuser or role in self.roles:
            return
        raise PlanError(
            f"permission denied to {action}: only a superuser or a member of {role} may "
            f"{verb} server files (user {self.user!r})",
            sqlstate="42501",
        )

    def _inside(self, path: str, what: str) -> None:
        if not path:
            raise PlanError(f"{what}: the location is empty", sqlstate="42501")
        resolved = _resolved(path)
        if any(resolved == root or root in resolved.parents for root in self.roots):
            return
        allowed = ", ".join(str(r) for r in self.roots) or "none"
        raise PlanError(
            f"permission denied for {what}: {path!r} is outside the folders this server "
            f"allows (--allow-path: {allowed})",
            sqlstate="42501",
        )
