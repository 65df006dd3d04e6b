"""Type OIDs and PostgreSQL's resolution rules that :mod:`~changeflow.adapter.deparse_nodes`
types expressions by: the types a call takes and gives, the casts an operator's operands
need, the common type of a CASE's or an IN list's values."""

from __future__ import annotations

INT2, INT4, INT8, NUMERIC, FLOAT4, FLOAT8 = 21, 23, 20, 1700, 700, 701
TEXT, VARCHAR, BPCHAR, NAME, BOOL, UNKNOWN, REGCLASS = 25, 1043, 1042, 19, 16, 705, 2205
DATE, TIMESTAMP, TIMESTAMPTZ, TIME, INTERVAL = 1082, 1114, 1184, 1083, 1186
JSON, JSONB, UUID, BYTEA = 114, 3802, 2950, 17
INTEGERS = (INT2, INT4, INT8)
FLOATS = (FLOAT4, FLOAT8)
NUMBERS = (*INTEGERS, NUMERIC, *FLOATS)
STRINGS = (TEXT, VARCHAR, BPCHAR, NAME)
COMPARE = ("=", "<>", "<", ">", "<=", ">=")


# a call's parameter types (None: each argument as it is) and result (an OID, or "arg":
# its first argument's type)
FUNCS: dict[str, tuple[tuple[int, ...] | None, int | str]] = {
    "upper": ((TEXT,), TEXT),
    "lower": ((TEXT,), TEXT),
    "initcap": ((TEXT,), TEXT),
    "length": ((TEXT,), INT4),
    "char_length": ((TEXT,), INT4),
    "character_length": ((TEXT,), INT4),
    "octet_length": ((TEXT,), INT4),
    "md5": ((TEXT,), TEXT),
    "reverse": ((TEXT,), TEXT),
    "btrim": ((TEXT, TEXT), TEXT),
    "ltrim": ((TEXT, TEXT), TEXT),
    "rtrim": ((TEXT, TEXT), TEXT),
    "left": ((TEXT, INT4), TEXT),
    "right": ((TEXT, INT4), TEXT),
    "repeat": ((TEXT, INT4), TEXT),
    "replace": ((TEXT, TEXT, TEXT), TEXT),
    "split_part": ((TEXT, TEXT, INT4), TEXT),
    "lpad": ((TEXT, INT4, TEXT), TEXT),
    "rpad": ((TEXT, INT4, TEXT), TEXT),
    "strpos": ((TEXT, TEXT), INT4),
    "substr": ((TEXT, INT4, INT4), TEXT),
    "concat": (None, TEXT),
    "now": ((), TIMESTAMPTZ),
    "transaction_timestamp": ((), TIMESTAMPTZ),
    "statement_timestamp": ((), TIMESTAMPTZ),
    "clock_timestamp": ((), TIMESTAMPTZ),
    "gen_random_uuid": ((), UUID),
    "random": ((), FLOAT8),
    "nextval": ((REGCLASS,), INT8),
    "currval": ((REGCLASS,), INT8),
    "abs": (None, "arg"),
    "sign": (None, "arg"),
    "ceil": (None, "arg"),
    "ceiling": (None, "arg"),
    "floor": (None, "arg"),
    "sqrt": ((FLOAT8,), FLOAT8),
    "round": (None, "arg"),
    "trunc": (None, "arg"),
    "date_trunc": ((TEXT, TIMESTAMPTZ), TIMESTAMPTZ),
    "to_char": (None, TEXT),
    "date_part": ((TEXT,), FLOAT8),
    "jsonb_build_object": (None, JSONB),
    "json_build_object": (None, JSON),
}
ANY_ARGS = ("concat", "concat_ws", "format", "jsonb_build_object", "json_build_object")


# the SQL grammar's calls: their words and result types
def partner(other: int, op: str) -> int:
    """The type a quoted literal takes beside an operand of type ``other``."""
    if other in (VARCHAR, NAME):
        return TEXT
    if op == "||" and other not in STRINGS:
        return TEXT
    return other


def numbers(lt: int, rt: int, op: str) -> tuple[int, int, int]:
    """Two numbers' operand types as an operator takes them, and its result's type."""
    if lt == rt:
        return lt, rt, lt
    if lt in INTEGERS and rt in INTEGERS:
        wide = max((lt, rt), key=INTEGERS.index)
        return (wide, wide, wide) if op == "%" else (lt, rt, wide)
    if lt in FLOATS or rt in FLOATS:
        return (lt if lt in FLOATS else FLOAT8), (rt if rt in FLOATS else FLOAT8), FLOAT8
    return NUMERIC, NUMERIC, NUMERIC


def temporal(lt: int, rt: int, op: str) -> int:
    if op in COMPARE:
        return BOOL
    if lt == DATE and rt == DATE and op == "-":
        return INT4
    if lt == DATE and rt in INTEGERS:
        return DATE
    if lt in (TIMESTAMP, TIMESTAMPTZ) and rt == lt and op == "-":
        return INTERVAL
    if lt == DATE and rt == INTERVAL:
        return TIMESTAMP
    return lt


def common(types: list[int]) -> int:
    """The type PostgreSQL resolves a CASE's, COALESCE's or IN list's values to."""
    known = [t for t in types if t != UNKNOWN]
    if not known:
        return TEXT
    if all(t in NUMBERS for t in known):
        order = (*INTEGERS, NUMERIC, FLOAT4, FLOAT8)
        return max(known, key=order.index)
    if all(t in STRINGS for t in known):
        return known[0] if len(set(known)) == 1 else TEXT
    return known[0]


ARRAYS = {16: 1000, 21: 1005, 23: 1007, 20: 1016, 1700: 1231, 700: 1021, 701: 1022, 25: 1009}
ARRAYS |= {1082: 1182}
ARRAYS |= {1114: 1115, 1184: 1185, 3802: 3807, 114: 199, 2950: 2951, 1043: 1015, 1042: 1014}
ARRAYS |= {19: 1003}
ELEMENTS = {array: element for element, array in ARRAYS.items()}
