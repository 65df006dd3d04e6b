"""Domains (``CREATE DOMAIN``) in the system catalogs, as PostgreSQL 15 shows them: a pg_type
row of each (typtype ``d``, its base type's length, category, output functions and storage,
``typbasetype``, ``typtypmod``, ``typnotnull``, ``typdefault``) and a pg_constraint row of each
CHECK (``contypid``), whose text pg_get_constraintdef shows with ``VALUE``."""

from __future__ import annotations

from typing import Any

from changeflow.adapter.catalog import CatalogState, split_name
from changeflow.adapter.deparse import default_shown, domain_check_shown
from changeflow.adapter.domains import Domain, domains_of
from changeflow.adapter.sql.types import text_length
from changeflow.adapter.system_indexes import relation_oid
from changeflow.adapter.system_tables import OWNER, TYPES, namespace_oid
from changeflow.compute.types import NUMERIC


def base_of(domain: Domain) -> tuple[int, int, str, int]:
    """The base type's OID, typlen, pg_type name and the domain's typmod (varchar(n) and
    char(n) as PostgreSQL types them, though they hold text here)."""
    node, kind = domain.base_type, domain.sql_type
    length = text_length(node)
    if length is not None:
        name = "character varying" if length > 0 else "character"
        return (*TYPES[name], abs(length) + 4)
    if node.this == node.Type.VARCHAR:
        return (*TYPES["character varying"], -1)
    typmod = -1
    if kind is NUMERIC and node.expressions:
        precision, *scale = (int(p.this.this) for p in node.expressions)
        typmod = ((precision << 16) | (scale[0] if scale else 0)) + 4
    return (*TYPES.get(kind.name, TYPES["text"]), typmod)


def domain_info(
    state: CatalogState, type_name: str, database: str
) -> tuple[int, str, int, tuple[str, str, str]] | None:
    """A column type's base type (OID, pg_type name, typmod) and (domain_catalog,
    domain_schema, domain_name) as information_schema.columns shows a domain's column; None
    if ``type_name`` (a catalog name) is no domain."""
    domain = domains_of(state).get(type_name)
    if domain is None:
        return None
    oid, _, udt, typmod = base_of(domain)
    return oid, udt, typmod, (database, *split_name(domain.name))


def check_oid(domain_oid: int, k: int) -> int:
    """The pg_constraint OID of a domain's ``k``-th CHECK."""
    return domain_oid * 1000 + 850 + k


def domain_rows(state: CatalogState) -> dict[str, list[tuple[Any, ...]]]:
    """The pg_type row of each domain and the pg_constraint rows of its checks."""
    from changeflow.adapter.system_rows import type_rows

    bases = {row[0]: row for row in type_rows()}
    types, constraints = [], []
    for item in state.items.values():
        domain = Domain.of(item)
        if domain is None:
            continue
        oid, namespace = relation_oid(item), namespace_oid(state, split_name(item.name)[0])
        base, _, _, typmod = base_of(domain)
        b = bases[base]
        default = None if domain.default is None else default_shown(domain.default, base)
        types.append(
            (oid, domain.shown, namespace, OWNER, b[4], b[5], "d", b[7], False, True, ",")
            + (0, 0, 0, "domain_in", b[15], "domain_recv", b[17], None, None, None)
            + (b[21], b[22], domain.not_null, base, typmod, 0, 0, None, default, None)
        )
        for k, check in enumerate(domain.checks):
            constraints.append(
                (check_oid(oid, k), check.name, namespace, "c", False, False, True, 0, oid, 0)
                + (0, 0, " ", " ", " ", True, 0, False, None, None, None)
            )
    return {"pg_type": types, "pg_constraint": constraints}


def domain_defs(state: CatalogState) -> dict[int, tuple[str, str]]:
    """pg_get_constraintdef of each domain CHECK by OID: (plain, pretty)."""
    out: dict[int, tuple[str, str]] = {}
    for item in state.items.values():
        domain = Domain.of(item)
        if domain is None:
            continue
        for k, check in enumerate(domain.checks):
            out[check_oid(relation_oid(item), k)] = domain_check_shown(
                check.sql, base_of(domain)[0]
            )
    return out
