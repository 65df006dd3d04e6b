"""CPU seconds of processes, from ``/proc``: what a run cost on a machine whose wall time
depends on the load others put on it."""

from __future__ import annotations

import os

_TICK = os.sysconf("SC_CLK_TCK")


def _stat(pid: int) -> list[str]:
    with open(f"/proc/{pid}/stat") as f:
        return f.read().rsplit(")", 1)[1].split()  # the fields after the command's name


def tree_cpu(root: int) -> float:
    """User and system seconds of ``root`` and every process under it, those that ended and
    were waited for included (they count in their parent's children times)."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                children.setdefault(int(_stat(int(entry))[1]), []).append(int(entry))
            except OSError:
                continue
    total, todo = 0.0, [root]
    while todo:
        pid = todo.pop()
        try:
            fields = _stat(pid)
        except OSError:
            continue  # it ended meanwhile: its parent counts it once it is waited for
        total += sum(int(x) for x in fields[11:15]) / _TICK  # utime stime cutime cstime
        todo.extend(children.get(pid, []))
    return total


def server_of(conn: object) -> int:
    """The PostgreSQL server (its postmaster) behind a psycopg connection: the parent of the
    connection's backend."""
    pid = conn.execute("SELECT pg_backend_pid()").fetchone()[0]  # type: ignore[attr-defined]
    return int(_stat(pid)[1])
