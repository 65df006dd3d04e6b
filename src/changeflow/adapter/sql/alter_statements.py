"""The forms of ``ALTER TABLE`` statements recognised by their words (one action each; a
statement of several is :func:`~changeflow.adapter.sql.statements.parse`'s): the name of
each is ``alter_`` and its action."""

from changeflow.adapter.sql.names import NAME, QNAME

_TABLE = rf"ALTER\s+TABLE\s+(?P<ie>IF\s+EXISTS\s+)?(?:ONLY\s+)?(?P<name>{QNAME})\s+"

ALTER_PATTERNS = [
    (
        "alter_add",
        _TABLE + r"ADD\s+(?:COLUMN\s+)?(?P<cie>IF\s+NOT\s+EXISTS\s+)?(?P<column>.+)",
    ),
    (
        "alter_drop_constraint",
        _TABLE + rf"DROP\s+CONSTRAINT\s+(?P<cie>IF\s+EXISTS\s+)?(?P<column>{NAME})\s*"
        r"(?P<mode>CASCADE|RESTRICT)?",
    ),
    (
        "alter_drop",
        _TABLE + rf"DROP\s+(?:COLUMN\s+)?(?P<cie>IF\s+EXISTS\s+)?(?P<column>{NAME})\s*"
        r"(?P<mode>CASCADE|RESTRICT)?",
    ),
    (
        "alter_rename_constraint",
        _TABLE + rf"RENAME\s+CONSTRAINT\s+(?P<column>{NAME})\s+TO\s+(?P<new>{NAME})",
    ),
    (
        "alter_rename",
        _TABLE + rf"RENAME\s+(?:COLUMN\s+)?(?P<column>{NAME})\s+TO\s+(?P<new>{NAME})",
    ),
    (
        "alter_column",
        _TABLE + rf"ALTER\s+(?:COLUMN\s+)?(?P<column>{NAME})\s+"
        r"(?P<change>(?:SET|DROP)\s+NOT\s+NULL|DROP\s+DEFAULT|SET\s+DEFAULT\s+(?P<default>.+))",
    ),
    (
        "alter_type",
        _TABLE + rf"ALTER\s+(?:COLUMN\s+)?(?P<column>{NAME})\s+(?:SET\s+DATA\s+)?TYPE\s+"
        r"(?P<type>.+?)(?:\s+USING\s+(?P<using>.+))?",
    ),
    (
        "alter_validate_constraint",
        _TABLE + rf"VALIDATE\s+CONSTRAINT\s+(?P<column>{NAME})",
    ),
]
