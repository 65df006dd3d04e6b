"""The shapes of the system relations changeflow answers (``pg_catalog`` tables and
``information_schema`` views, as SQLite column lists), their type OIDs and which are empty."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from changeflow.adapter.catalog import CatalogState

PUBLIC, PG_CATALOG, INFO_SCHEMA = 2200, 11, 13000
OWNER = 10
RELATION_BASE = 16384
# SQL type name -> (OID, typlen, pg_type name)
TYPES = {
    "boolean": (16, 1, "bool"),
    "smallint": (21, 2, "int2"),
    "integer": (23, 4, "int4"),
    "bigint": (20, 8, "int8"),
    "numeric": (1700, -1, "numeric"),
    "double precision": (701, 8, "float8"),
    "real": (700, 4, "float4"),
    "text": (25, -1, "text"),
    "character varying": (1043, -1, "varchar"),
    "character": (1042, -1, "bpchar"),
    "date": (1082, 4, "date"),
    "timestamp": (1114, 8, "timestamp"),
    "timestamp without time zone": (1114, 8, "timestamp"),
    "timestamp with time zone": (1184, 8, "timestamptz"),
    "oid": (26, 4, "oid"),
    "regproc": (24, 4, "regproc"),
    "regprocedure": (2202, 4, "regprocedure"),
    "regclass": (2205, 4, "regclass"),
    "regtype": (2206, 4, "regtype"),
    "regnamespace": (4089, 4, "regnamespace"),
    "name": (19, 64, "name"),
    "char": (18, 1, "char"),
    "uuid": (2950, 16, "uuid"),
    "bytea": (17, -1, "bytea"),
    "interval": (1186, 16, "interval"),
    "time without time zone": (1083, 8, "time"),
    "jsonb": (3802, -1, "jsonb"),
    "json": (114, -1, "json"),
    "boolean[]": (1000, -1, "_bool"),
    "smallint[]": (1005, -1, "_int2"),
    "integer[]": (1007, -1, "_int4"),
    "bigint[]": (1016, -1, "_int8"),
    "numeric[]": (1231, -1, "_numeric"),
    "real[]": (1021, -1, "_float4"),
    "double precision[]": (1022, -1, "_float8"),
    "text[]": (1009, -1, "_text"),
    "date[]": (1182, -1, "_date"),
    "timestamp[]": (1115, -1, "_timestamp"),
    "timestamp with time zone[]": (1185, -1, "_timestamptz"),
    "jsonb[]": (3807, -1, "_jsonb"),
    "json[]": (199, -1, "_json"),
    "uuid[]": (2951, -1, "_uuid"),
    "oid[]": (1028, -1, "_oid"),
    "unknown": (705, -2, "unknown"),
    "void": (2278, 4, "void"),
}
FORMAT = {oid: name for name, (oid, _, _) in TYPES.items()} | {
    1114: "timestamp without time zone",
    1115: "timestamp without time zone[]",
}
KINDS = {
    "table": "r",
    "source": "r",
    "view": "v",
    "materialized view": "m",
    "index": "i",
    "sequence": "S",
}

# name -> columns ("name type"; the types are system_types.DECLARED's: INTEGER (bigint), OID,
# INT2, INT4, NAME, CHAR ("char"), TEXT, BOOL, REAL)
TABLES: dict[str, str] = {
    "pg_namespace": "oid OID, nspname NAME, nspowner OID, nspacl TEXT",
    "pg_class": "oid OID, relname NAME, relnamespace OID, reltype OID, "
    "reloftype INTEGER, relowner INTEGER, relam INTEGER, relfilenode INTEGER, "
    "reltablespace INTEGER, relpages INTEGER, reltuples REAL, relallvisible INTEGER, "
    "reltoastrelid INTEGER, relhasindex BOOL, relisshared BOOL, relpersistence TEXT, "
    "relkind TEXT, relnatts INTEGER, relchecks INTEGER, relhasrules BOOL, relhastriggers BOOL, "
    "relhassubclass BOOL, relrowsecurity BOOL, relforcerowsecurity BOOL, relispopulated BOOL, "
    "relreplident TEXT, relispartition BOOL, relrewrite INTEGER, relfrozenxid INTEGER, "
    "relminmxid INTEGER, relacl TEXT, reloptions TEXT, relpartbound TEXT",
    "pg_attribute": "attrelid OID, attname NAME, atttypid OID, attstattarget INTEGER, "
    "attlen INTEGER, attnum INT2, attndims INTEGER, attcacheoff INTEGER, atttypmod INTEGER, "
    "attbyval BOOL, attalign TEXT, attstorage TEXT, attcompression TEXT, attnotnull BOOL, "
    "atthasdef BOOL, atthasmissing BOOL, attidentity TEXT, attgenerated TEXT, "
    "attisdropped BOOL, attislocal BOOL, attinhcount INTEGER, attcollation INTEGER, "
    "attacl TEXT, attoptions TEXT, attfdwoptions TEXT, attmissingval TEXT",
    "pg_type": "oid OID, typname NAME, typnamespace OID, typowner OID, "
    "typlen INT2, typbyval BOOL, typtype CHAR, typcategory CHAR, typispreferred BOOL, "
    "typisdefined BOOL, typdelim CHAR, typrelid OID, typelem OID, typarray OID, "
    "typinput TEXT, typoutput TEXT, typreceive TEXT, typsend TEXT, typmodin TEXT, "
    "typmodout TEXT, typanalyze TEXT, typalign CHAR, typstorage CHAR, typnotnull BOOL, "
    "typbasetype OID, typtypmod INT4, typndims INT4, typcollation OID, "
    "typdefaultbin TEXT, typdefault TEXT, typacl TEXT",
    "pg_range": "rngtypid OID, rngsubtype OID, rngmultitypid OID, rngcollation OID, "
    "rngsubopc OID, rngcanonical TEXT, rngsubdiff TEXT",
    "pg_index": "indexrelid INTEGER, indrelid INTEGER, indnatts INTEGER, indnkeyatts INTEGER, "
    "indisunique BOOL, indnullsnotdistinct BOOL, indisprimary BOOL, indisexclusion BOOL, "
    "indimmediate BOOL, indisclustered BOOL, indisvalid BOOL, indcheckxmin BOOL, "
    "indisready BOOL, indislive BOOL, indisreplident BOOL, indkey TEXT, indcollation TEXT, "
    "indclass TEXT, indoption TEXT, indexprs TEXT, indpred TEXT",
    "pg_constraint": "oid INTEGER, conname TEXT, connamespace INTEGER, contype TEXT, "
    "condeferrable BOOL, condeferred BOOL, convalidated BOOL, conrelid INTEGER, "
    "contypid INTEGER, conindid INTEGER, conparentid INTEGER, confrelid INTEGER, "
    "confupdtype TEXT, confdeltype TEXT, confmatchtype TEXT, conislocal BOOL, "
    "coninhcount INTEGER, connoinherit BOOL, conkey TEXT, confkey TEXT, conbin TEXT",
    "pg_stat_activity": "datid OID, datname NAME, pid INT4, leader_pid INT4, usesysid OID, "
    "usename NAME, application_name TEXT, client_addr TEXT, client_hostname TEXT, "
    "client_port INT4, backend_start TEXT, xact_start TEXT, query_start TEXT, "
    "state_change TEXT, wait_event_type TEXT, wait_event TEXT, state TEXT, backend_xid TEXT, "
    "backend_xmin TEXT, query_id INTEGER, query TEXT, backend_type TEXT",
    "pg_database": "oid INTEGER, datname TEXT, datdba INTEGER, encoding INTEGER, "
    "datlocprovider TEXT, datistemplate BOOL, datallowconn BOOL, datconnlimit INTEGER, "
    "dattablespace INTEGER, datcollate TEXT, datctype TEXT, daticulocale TEXT, "
    "datcollversion TEXT, datacl TEXT",
    "pg_settings": "name TEXT, setting TEXT, unit TEXT, category TEXT, short_desc TEXT, "
    "extra_desc TEXT, context TEXT, vartype TEXT, source TEXT, min_val TEXT, max_val TEXT, "
    "enumvals TEXT, boot_val TEXT, reset_val TEXT, sourcefile TEXT, sourceline INTEGER, "
    "pending_restart BOOL",
    "pg_description": "objoid INTEGER, classoid INTEGER, objsubid INTEGER, description TEXT",
    "pg_shdescription": "objoid INTEGER, classoid INTEGER, description TEXT",
    "pg_proc": "oid INTEGER, proname TEXT, pronamespace INTEGER, proowner INTEGER, "
    "prolang INTEGER, prokind TEXT, proisstrict BOOL, proretset BOOL, provolatile TEXT, "
    "pronargs INTEGER, prorettype INTEGER, proargtypes TEXT, prosrc TEXT, proparallel TEXT, "
    "prosecdef BOOL, proacl TEXT",
    "pg_am": "oid INTEGER, amname TEXT, amhandler TEXT, amtype TEXT",
    "pg_language": "oid INTEGER, lanname TEXT, lanowner INTEGER",
    "pg_attrdef": "oid INTEGER, adrelid INTEGER, adnum INTEGER, adbin TEXT",
    "pg_collation": "oid INTEGER, collname TEXT, collnamespace INTEGER",
    "pg_roles": "rolname NAME, rolsuper BOOL, rolinherit BOOL, rolcreaterole BOOL, "
    "rolcreatedb BOOL, rolcanlogin BOOL, rolreplication BOOL, rolconnlimit INT4, rolpassword TEXT, "
    "rolvaliduntil TEXT, rolbypassrls BOOL, rolconfig TEXT, oid OID",
    "pg_auth_members": "roleid OID, member OID, grantor OID, admin_option BOOL",
    "pg_default_acl": "oid OID, defaclrole OID, defaclnamespace OID, defaclobjtype CHAR, "
    "defaclacl TEXT",
    "pg_user": "usename NAME, usesysid OID, usecreatedb BOOL, usesuper BOOL, userepl BOOL, "
    "usebypassrls BOOL, passwd TEXT, valuntil TEXT, useconfig TEXT",
    "pg_authid": "oid OID, rolname NAME, rolsuper BOOL, rolinherit BOOL, rolcreaterole BOOL, "
    "rolcreatedb BOOL, rolcanlogin BOOL, rolreplication BOOL, rolbypassrls BOOL, "
    "rolconnlimit INT4, rolpassword TEXT, rolvaliduntil TEXT",
    "pg_tablespace": "oid INTEGER, spcname TEXT",
    "pg_views": "schemaname TEXT, viewname TEXT, viewowner TEXT, definition TEXT",
    "pg_matviews": "schemaname TEXT, matviewname TEXT, matviewowner TEXT, definition TEXT",
    "pg_tables": "schemaname TEXT, tablename TEXT, tableowner TEXT, hasindexes BOOL",
    "pg_indexes": "schemaname TEXT, tablename TEXT, indexname TEXT, indexdef TEXT",
    "pg_policy": "oid INTEGER, polname TEXT, polrelid INTEGER, polcmd TEXT, "
    "polpermissive BOOL, polroles TEXT, polqual TEXT, polwithcheck TEXT",
    "pg_statistic_ext": "oid INTEGER, stxrelid INTEGER, stxname TEXT, stxnamespace INTEGER, "
    "stxowner INTEGER, stxstattarget INTEGER, stxkeys TEXT, stxkind TEXT, stxexprs TEXT",
    "pg_publication": "oid INTEGER, pubname TEXT, puballtables BOOL",
    "pg_publication_namespace": "oid INTEGER, pnpubid INTEGER, pnnspid INTEGER",
    "pg_publication_rel": "oid INTEGER, prpubid INTEGER, prrelid INTEGER, prqual TEXT, "
    "prattrs TEXT",
    "pg_inherits": "inhrelid INTEGER, inhparent INTEGER, inhseqno INTEGER, inhdetachpending BOOL",
    "pg_trigger": "oid INTEGER, tgrelid INTEGER, tgname TEXT, tgisinternal BOOL",
    "pg_rewrite": "oid INTEGER, rulename TEXT, ev_class INTEGER",
    "pg_foreign_table": "ftrelid INTEGER, ftserver INTEGER, ftoptions TEXT",
    "pg_sequence": "seqrelid INTEGER, seqtypid INTEGER, seqstart INTEGER, "
    "seqincrement INTEGER, seqmax INTEGER, seqmin INTEGER, seqcache INTEGER, seqcycle BOOL",
    "pg_depend": "classid OID, objid OID, objsubid INT4, refclassid OID, refobjid OID, "
    "refobjsubid INT4, deptype CHAR",
    "pg_enum": "oid OID, enumtypid OID, enumsortorder REAL, enumlabel NAME",
    "pg_extension": "oid INTEGER, extname TEXT, extversion TEXT",
    "pg_cursors": "name TEXT, statement TEXT",
    "pg_opclass": "oid INTEGER, opcname TEXT, opcmethod INTEGER, opcdefault BOOL",
    "pg_parameter_acl": "oid INTEGER, parname TEXT, paracl TEXT",
}
_GRANTS = (
    "grantor TEXT, grantee TEXT, table_catalog TEXT, table_schema TEXT, table_name TEXT, "
    "privilege_type TEXT, is_grantable TEXT, with_hierarchy TEXT"
)
INFO_TABLES: dict[str, str] = {
    "tables": "table_catalog TEXT, table_schema TEXT, table_name TEXT, table_type TEXT, "
    "is_insertable_into TEXT, is_typed TEXT",
    "columns": "table_catalog TEXT, table_schema TEXT, table_name TEXT, column_name TEXT, "
    "ordinal_position INTEGER, column_default TEXT, is_nullable TEXT, data_type TEXT, "
    "character_maximum_length INTEGER, numeric_precision INTEGER, numeric_scale INTEGER, "
    "datetime_precision INTEGER, domain_catalog TEXT, domain_schema TEXT, domain_name TEXT, "
    "udt_catalog TEXT, udt_schema TEXT, udt_name TEXT, "
    "is_identity TEXT, is_generated TEXT, generation_expression TEXT, is_updatable TEXT",
    "views": "table_catalog TEXT, table_schema TEXT, table_name TEXT, view_definition TEXT, "
    "check_option TEXT, is_updatable TEXT, is_insertable_into TEXT",
    "schemata": "catalog_name TEXT, schema_name TEXT, schema_owner TEXT",
    "sequences": "sequence_catalog TEXT, sequence_schema TEXT, sequence_name TEXT, "
    "data_type TEXT, numeric_precision INTEGER, numeric_precision_radix INTEGER, "
    "numeric_scale INTEGER, start_value TEXT, minimum_value TEXT, maximum_value TEXT, "
    "increment TEXT, cycle_option TEXT",
    "table_constraints": "constraint_catalog TEXT, constraint_schema TEXT, "
    "constraint_name TEXT, table_catalog TEXT, table_schema TEXT, table_name TEXT, "
    "constraint_type TEXT, is_deferrable TEXT, initially_deferred TEXT, enforced TEXT, "
    "nulls_distinct TEXT",
    "check_constraints": "constraint_catalog TEXT, constraint_schema TEXT, "
    "constraint_name TEXT, check_clause TEXT",
    "referential_constraints": "constraint_catalog TEXT, constraint_schema TEXT, "
    "constraint_name TEXT, unique_constraint_catalog TEXT, unique_constraint_schema TEXT, "
    "unique_constraint_name TEXT, match_option TEXT, update_rule TEXT, delete_rule TEXT",
    "key_column_usage": "constraint_catalog TEXT, constraint_schema TEXT, constraint_name TEXT, "
    "table_catalog TEXT, table_schema TEXT, table_name TEXT, column_name TEXT, "
    "ordinal_position INTEGER, position_in_unique_constraint INTEGER",
    "table_privileges": _GRANTS,
    "role_table_grants": _GRANTS,
    "enabled_roles": "role_name TEXT",
    "applicable_roles": "grantee TEXT, role_name TEXT, is_grantable TEXT",
    "constraint_column_usage": "table_catalog TEXT, table_schema TEXT, table_name TEXT, "
    "column_name TEXT, constraint_catalog TEXT, constraint_schema TEXT, constraint_name TEXT",
}
EMPTY = {
    "pg_range",
    "pg_policy",
    "pg_statistic_ext",
    "pg_publication",
    "pg_publication_namespace",
    "pg_publication_rel",
    "pg_inherits",
    "pg_trigger",
    "pg_rewrite",
    "pg_foreign_table",
    "pg_opclass",
    "pg_parameter_acl",
}
SYSTEM_OIDS = {name: 5000 + i for i, name in enumerate(TABLES)} | {
    "pg_class": 1259,
    "pg_constraint": 2606,
    "pg_type": 1247,
    "pg_proc": 1255,
}
BOOLS = {
    c.split()[0]
    for cols in (*TABLES.values(), *INFO_TABLES.values())
    for c in cols.split(", ")
    if c.endswith(" BOOL")
} | {"relhasoids"}

# The catalog functions that only catalog queries answer (the planner has no such function).
CATALOG_CALLS = frozenset(
    {
        "pg_get_viewdef",
        "pg_get_indexdef",
        "pg_get_constraintdef",
        "pg_get_expr",
        "pg_get_userbyid",
        "pg_table_is_visible",
        "pg_type_is_visible",
        "format_type",
        "obj_description",
        "col_description",
        "shobj_description",
        "to_regclass",
        "to_regtype",
        "has_table_privilege",
        "has_schema_privilege",
        "has_database_privilege",
        "has_sequence_privilege",
        "has_function_privilege",
        "has_any_column_privilege",
        "has_column_privilege",
        "pg_has_role",
        "pg_encoding_to_char",
        "pg_table_size",
        "pg_relation_size",
        "pg_total_relation_size",
        "pg_indexes_size",
        "pg_database_size",
        "pg_size_pretty",
    }
)
BOOL_CALLS = {"has_table_privilege", "has_schema_privilege", "pg_table_is_visible"}
BOOL_CALLS |= {"has_database_privilege", "pg_type_is_visible", "has_sequence_privilege"}
BOOL_CALLS |= {"has_function_privilege", "has_any_column_privilege", "pg_has_role"}
BOOL_CALLS |= {"has_column_privilege"}


def type_oid(name: Any) -> int | None:
    """The OID of the type called ``name`` (PostgreSQL's or its internal name), else None."""
    text = str(name).lower().split(".")[-1].strip('"')
    for sql_name, (oid, _, internal) in TYPES.items():
        if text in (sql_name, internal):
            return oid
    return None


def namespace_oid(state: CatalogState, schema: str) -> int:
    """The pg_namespace oid of ``schema``: PostgreSQL's for public, else from its number."""
    if schema == "public":
        return PUBLIC
    if schema.startswith("pg_temp_") and schema[8:].isdigit():  # a session's temporary one
        return RELATION_BASE + int(schema[8:])
    return RELATION_BASE + state.schemas.get(schema, 0)  # numbered as items are: no clash
