"""ANALYZE, VACUUM and CHECKPOINT, accepted as PostgreSQL accepts them (scripts, migrations
and restores run them): their options and the relations and columns they name are checked as
PostgreSQL checks them, and there is nothing else to do. Statistics are not kept here (a plan
does not depend on them), storage is compacted in the background, and every commit is durable
when it is acknowledged, so a checkpoint has nothing left to write. VACUUM cannot run inside a
transaction block (25001, as there); ANALYZE and CHECKPOINT can."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from changeflow.adapter.result import Result
from changeflow.adapter.sql.statements import Statement, commas, name
from changeflow.errors import PlanError

if TYPE_CHECKING:
    from changeflow.adapter.environment import Environment

# the options each statement takes, in parentheses (PostgreSQL 15's)
_OPTIONS = {
    "VACUUM": {"full", "freeze", "verbose", "analyze", "analyse", "disable_page_skipping"}
    | {"skip_locked", "index_cleanup", "process_toast", "truncate", "parallel"},
    "ANALYZE": {"verbose", "skip_locked"},
}
# the bare keywords that may come before the relations, in this order
_WORDS = {"VACUUM": ("FULL", "FREEZE", "VERBOSE", "ANALYZE", "ANALYSE"), "ANALYZE": ("VERBOSE",)}
_RELATION = re.compile(r"\s*(?P<name>[^\s(]+)\s*(?:\((?P<columns>[^)]*)\))?\s*", re.DOTALL)


def maintain(env: Environment, stmt: Statement) -> Result:
    """ANALYZE, VACUUM or CHECKPOINT (``stmt.args``: its ``verb`` and the ``rest``)."""
    verb = stmt.args["verb"].upper().replace("ANALYSE", "ANALYZE")
    rest = (stmt.args.get("rest") or "").strip().rstrip(";").strip()
    if verb == "CHECKPOINT":
        if rest:
            raise PlanError(f'syntax error at or near "{rest.split()[0]}"', sqlstate="42601")
        return Result("CHECKPOINT")
    if rest.startswith("("):
        options, _, rest = rest[1:].partition(")")
        for option in commas(options):
            word = option.split()[0].lower() if option.split() else ""
            if word not in _OPTIONS[verb]:
                raise PlanError(f'unrecognized {verb} option "{word}"', sqlstate="42601")
    else:
        words = _WORDS[verb]
        while rest.split() and rest.split()[0].upper() in words:
            rest = rest[len(rest.split()[0]) :].strip()
    state, skipped = env.catalog.load(), []
    for part in commas(rest) if rest.strip() else []:
        found = _RELATION.fullmatch(part)
        if found is None:
            raise PlanError(f'syntax error at or near "{part.strip()}"', sqlstate="42601")
        relation = name(found["name"])
        item = state.get(relation)
        known = {c[0] for c in item.columns}
        for column in commas(found["columns"]) if (found["columns"] or "").strip() else []:
            if name(column.strip()) not in known:
                raise PlanError(
                    f'column "{name(column.strip())}" of relation "{item.name}" does not exist',
                    sqlstate="42703",
                )
        if item.kind not in ("table", "materialized view"):  # (a view has no rows of its own)
            what = f"cannot {verb.lower()} non-tables or special system tables"
            skipped.append(("01000", f'skipping "{item.name}" --- {what}', ""))
    return Result(verb, notices=skipped)
