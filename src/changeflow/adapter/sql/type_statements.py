"""The statements of user-defined types: ``CREATE TYPE``, ``DROP TYPE`` and ``ALTER TYPE``
(their arguments, read by :mod:`changeflow.adapter.enum_types`), of domains (read by
:mod:`changeflow.adapter.domains`) and of SQL functions (:mod:`.sql_functions`)."""

from changeflow.adapter.sql.names import QNAME

TYPE_PATTERNS = [
    (
        "create_type",
        rf"CREATE\s+TYPE\s+(?P<name>{QNAME})\s*(?:AS\s+(?P<enum>ENUM)\s*\((?P<labels>.*)\)|"
        r"(?P<rest>.*))",
    ),
    (
        "drop_type",
        rf"DROP\s+TYPE\s+(?P<ie>IF\s+EXISTS\s+)?(?P<names>{QNAME}(?:\s*,\s*{QNAME})*)\s*"
        r"(?P<mode>CASCADE|RESTRICT)?",
    ),
    ("enum_alter", rf"ALTER\s+TYPE\s+(?P<name>{QNAME})\s+(?P<rest>.+)"),
    ("create_domain", rf"CREATE\s+DOMAIN\s+(?P<name>{QNAME})\s+(?:AS\s+)?(?P<rest>.+)"),
    (
        "drop_domain",
        rf"DROP\s+DOMAIN\s+(?P<ie>IF\s+EXISTS\s+)?(?P<names>{QNAME}(?:\s*,\s*{QNAME})*)\s*"
        r"(?P<mode>CASCADE|RESTRICT)?",
    ),
    ("domain_alter", rf"ALTER\s+DOMAIN\s+(?P<name>{QNAME})\s+(?P<rest>.+)"),
    (
        "create_function",
        rf"CREATE\s+(?P<replace>OR\s+REPLACE\s+)?FUNCTION\s+(?P<name>{QNAME})\s*(?P<rest>\(.*)",
    ),
    (
        "drop_function",
        r"DROP\s+FUNCTION\s+(?P<ie>IF\s+EXISTS\s+)?(?P<names>.+?)\s*(?P<mode>CASCADE|RESTRICT)?",
    ),
]
