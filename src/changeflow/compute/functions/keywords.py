"""PostgreSQL 15's keywords that an identifier cannot be bare (its ``kwlist.h``, as
``pg_get_keywords()`` lists it) by category: column-name (``C``), type-or-function-name
(``T``) and reserved (``R``). ``quote_ident`` quotes them all; unreserved keywords stay bare."""

from __future__ import annotations

_COLUMN_NAME = """
between bigint bit boolean char character coalesce dec decimal exists extract float greatest
grouping inout int integer interval least national nchar none normalize nullif numeric out
overlay position precision real row setof smallint substring time timestamp treat trim
values varchar xmlattributes xmlconcat xmlelement xmlexists xmlforest xmlnamespaces xmlparse
xmlpi xmlroot xmlserialize xmltable
"""

_TYPE_FUNC_NAME = """
authorization binary collation concurrently cross current_schema freeze full ilike inner is
isnull join left like natural notnull outer overlaps right similar tablesample verbose
"""

_RESERVED = """
all analyse analyze and any array as asc asymmetric both case cast check collate column
constraint create current_catalog current_date current_role current_time current_timestamp
current_user default deferrable desc distinct do else end except false fetch for foreign
from grant group having in initially intersect into lateral leading limit localtime
localtimestamp not null offset on only or order placing primary references returning select
session_user some symmetric table then to trailing true union unique user using variadic
when where window with
"""

COLUMN_NAME = frozenset(_COLUMN_NAME.split())
TYPE_FUNC_NAME = frozenset(_TYPE_FUNC_NAME.split())
RESERVED = frozenset(_RESERVED.split())

# Words an identifier must be quoted to be: every keyword but the unreserved.
QUOTED = COLUMN_NAME | TYPE_FUNC_NAME | RESERVED
