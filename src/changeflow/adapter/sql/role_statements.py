"""The statements of roles and privileges (read by :mod:`changeflow.adapter.roles`,
:mod:`~changeflow.adapter.privileges` and their kin): CREATE, ALTER and DROP ROLE (USER,
GROUP), GRANT and REVOKE, ALTER DEFAULT PRIVILEGES, REASSIGN OWNED and DROP OWNED, and the
session's SET ROLE and SET SESSION AUTHORIZATION (tried before the other SET forms)."""

from changeflow.adapter.sql.names import NAME

_NAMES = rf"{NAME}(?:\s*,\s*{NAME})*"
ROLE_PATTERNS = [
    (
        "create_role",
        rf"CREATE\s+(?P<what>ROLE|USER|GROUP)\s+(?P<name>{NAME})(?:\s+(?:WITH\s+)?(?P<rest>.*))?",
    ),
    ("role_alter", rf"ALTER\s+(?P<what>ROLE|USER|GROUP)\s+(?P<name>{NAME})\s+(?P<rest>.+)"),
    ("drop_role", rf"DROP\s+(?:ROLE|USER|GROUP)\s+(?P<ie>IF\s+EXISTS\s+)?(?P<names>{_NAMES})"),
    ("grant", r"(?P<verb>GRANT|REVOKE)\s+(?P<rest>.+)"),
    ("default_privileges", r"ALTER\s+DEFAULT\s+PRIVILEGES\s+(?P<rest>.+)"),
    (
        "owned",
        rf"(?P<verb>REASSIGN|DROP)\s+OWNED\s+BY\s+(?P<names>{_NAMES})"
        rf"(?:\s+TO\s+(?P<to>{NAME}))?(?:\s+(?P<mode>CASCADE|RESTRICT))?",
    ),
    (
        "set_role",
        r"(?:SET\s+(?:SESSION\s+|(?P<local>LOCAL)\s+)?(?P<var>ROLE|SESSION\s+AUTHORIZATION)"
        r"\s+(?P<value>.+)|RESET\s+(?P<reset>ROLE|SESSION\s+AUTHORIZATION))",
    ),
]
ROLE_KINDS = ("create_role", "role_alter", "drop_role", "grant", "owned", "default_privileges")
