"""A session's run-time parameters as PostgreSQL's: every parameter PostgreSQL 15 knows (from
:mod:`changeflow.adapter.pg_parameters`) and any custom ``a.b``, checked by type, unit, range
and context as it checks them, held in its base unit (``pg_settings.setting``) and shown with
the largest unit that fits (``SHOW work_mem`` is ``4MB``); SET, SET LOCAL, RESET, SHOW, SHOW
ALL, current_setting, set_config and pg_settings all read them from here. A SET inside a
transaction block is undone if the transaction rolls back (or to a savepoint before it); SET
LOCAL lasts until the transaction ends. Parameters changeflow acts on keep changeflow's values
(the time zone is UTC, strict serializable isolation); the others are kept and shown."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from functools import cache
from typing import Any
from weakref import WeakKeyDictionary

from changeflow.adapter.pg_parameters import TABLE
from changeflow.adapter.result import Result, text_result
from changeflow.adapter.sql.statements import DML_KINDS
from changeflow.compute.scalars import array_text
from changeflow.compute.types import TEXT
from changeflow.errors import PlanError

# changeflow's own values, where they differ from PostgreSQL's starting ones
OWN = {
    "transaction_isolation": "strict serializable",
    "default_transaction_isolation": "serializable",
    "server_version": "15.0",
    "server_version_num": "150000",
    "server_encoding": "UTF8",
    "client_encoding": "UTF8",
    "lc_collate": "C",
    "lc_ctype": "C",
    "timezone": "UTC",
    "log_timezone": "UTC",
    "is_superuser": "off",
    "jit": "off",
    "integer_datetimes": "on",
}
UTC_NAMES = {"UTC", "ETC/UTC", "GMT", "Z", "ZULU", "UCT", "+00", "+00:00", "0", "DEFAULT", "LOCAL"}

# bytes of each memory unit, milliseconds of each time unit, largest first
MEMORY = {"TB": 1024**4, "GB": 1024**3, "MB": 1024**2, "kB": 1024, "B": 1}
TIME = {"d": 86_400_000, "h": 3_600_000, "min": 60_000, "s": 1000, "ms": 1, "us": 0.001}
BASE = {"kB": (MEMORY, 1024), "8kB": (MEMORY, 8192), "B": (MEMORY, 1), "MB": (MEMORY, 1024**2)}
BASE |= {"ms": (TIME, 1), "s": (TIME, 1000), "min": (TIME, 60_000)}
_NUMBER = re.compile(r"\s*([-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)\s*([A-Za-z]*)\s*")
_BOOLS = {"true": "on", "false": "off", "yes": "on", "no": "off", "1": "on", "0": "off"}
_REFUSED = {
    "internal": "cannot be changed",
    "postmaster": "cannot be changed without restarting the server",
    "sighup": "cannot be changed now",
    "backend": "cannot be set after connection start",
    "superuser-backend": "cannot be set after connection start",
}


@dataclass(frozen=True)
class Parameter:
    name: str  # as PostgreSQL spells it
    vartype: str  # bool, integer, real, string or enum
    unit: str  # the base unit, "" if none
    context: str
    category: str
    low: str | None
    high: str | None
    boot: str  # its starting value, in the base unit
    values: tuple[str, ...]  # an enum's


@cache
def parameters() -> dict[str, Parameter]:
    """Every parameter by its lower-case name."""
    out = {}
    for line in TABLE.splitlines():
        name, vartype, unit, context, category, low, high, boot, values = line.split("|")
        boot = OWN.get(name.lower(), boot)
        out[name.lower()] = Parameter(
            name, vartype, unit, context, category, low or None, high or None, boot,
            tuple(values.split(",")) if values else (),
        )  # fmt: skip
    return out


_STARTED: WeakKeyDictionary[Any, dict[str, str]] = WeakKeyDictionary()


def start_with(session: Any, key: str, value: str) -> None:
    """``key`` set to ``value`` as the session starts (a client's startup parameter, as
    application_name): the value RESET and RESET ALL give back, as PostgreSQL's."""
    session.settings[key] = value
    _STARTED.setdefault(session, {})[key] = value


def _reset_value(session: Any, key: str, boot: str) -> str:
    return _STARTED.get(session, {}).get(key, boot)


def defaults() -> dict[str, str]:
    """A new session's settings: each parameter's starting value (in its base unit)."""
    return {key: p.boot for key, p in parameters().items()}


def spelled(name: str) -> str:
    """``name`` as PostgreSQL spells it (``TimeZone``, ``DateStyle``)."""
    found = parameters().get(name.lower())
    return found.name if found else name.lower()


def shown(name: str, value: str) -> str:
    """``value`` of ``name`` as SHOW and current_setting show it: a number in the largest unit
    that holds it whole (``5min``, ``128MB``); 0 and negatives without a unit."""
    p = parameters().get(name.lower())
    if p is None or not p.unit or p.vartype not in ("integer", "real"):
        return value
    number = float(value)
    if number <= 0:
        return value
    units, size = BASE[p.unit]
    amount = number * size
    for unit, each in units.items():
        whole = amount / each
        if abs(whole - round(whole)) < 1e-9 * max(1.0, abs(whole)) or unit == "us":
            text = str(round(whole)) if p.vartype == "integer" else f"{whole:g}"
            return f"{text}{unit}"
    return value


def checked(name: str, text: str) -> str:
    """``text`` as the value of parameter ``name`` is stored (its base unit, a Boolean as on or
    off, an enum's own spelling), or PostgreSQL's error for it."""
    p = parameters()[name.lower()]
    if p.vartype == "bool":
        found = _bool(text.strip().lower())
        if found is None:
            raise PlanError(f'parameter "{p.name}" requires a Boolean value', sqlstate="22023")
        return found
    if p.vartype == "enum":
        for value in p.values:
            if value.lower() == text.strip().lower():
                return value
        raise PlanError(
            f'invalid value for parameter "{p.name}": "{text}"',
            sqlstate="22023",
            hint=f"Available values: {', '.join(p.values)}.",
        )
    if p.vartype in ("integer", "real"):
        return _number(p, text)
    if name.lower() == "timezone":
        if text.upper() not in UTC_NAMES:
            raise PlanError(
                f"time zone {text!r} is not supported: timestamps are shown in UTC",
                sqlstate="0A000",
            )
        return "UTC"
    return text


def _bool(text: str) -> str | None:
    """on or off for a Boolean as PostgreSQL reads one (any prefix of true, false, yes or no;
    on, of, off; 1, 0), else None."""
    if text.startswith("o"):
        return {"on": "on", "of": "off", "off": "off"}.get(text)
    return next((value for word, value in _BOOLS.items() if text and word.startswith(text)), None)


def _number(p: Parameter, text: str) -> str:
    """A number with an optional unit, in ``p``'s base unit, checked against its range."""
    match = _NUMBER.fullmatch(text)
    if match is None:
        raise PlanError(f'invalid value for parameter "{p.name}": "{text}"', sqlstate="22023")
    number, unit = float(match.group(1)), match.group(2)
    if unit:
        units, size = BASE.get(p.unit, ({}, 1))
        if unit not in units:
            names = [f'"{u}"' for u in reversed(units)]
            hint = None
            if names:
                hint = "Valid units for this parameter are "
                hint += f"{', '.join(names[:-1])}, and {names[-1]}."
            raise PlanError(
                f'invalid value for parameter "{p.name}": "{text}"', sqlstate="22023", hint=hint
            )
        number = number * units[unit] / size
    low, high = float(p.low or "-inf"), float(p.high or "inf")
    if p.vartype == "integer":
        number = float(round(number))  # half to even, as rint
        shown_number = str(int(number))
    else:
        shown_number = f"{number:g}"
    if not low <= number <= high:
        unit_text = f" {p.unit}" if p.unit else ""
        bounds = (p.low, p.high) if p.vartype == "integer" else (f"{low:g}", f"{high:g}")
        raise PlanError(
            f"{shown_number}{unit_text} is outside the valid range for parameter "
            f'"{p.name}" ({bounds[0]} .. {bounds[1]})',
            sqlstate="22023",
        )
    return shown_number


ROLE_SETTINGS = ("role", "session_authorization")  # SET ROLE's and SET SESSION AUTHORIZATION's


def _known(name: str) -> bool:
    return name in parameters() or "." in name or name in ROLE_SETTINGS


def _unknown(name: str) -> PlanError:
    return PlanError(f'unrecognized configuration parameter "{name}"', sqlstate="42704")


def set_parameter(session: Any, name: str, value: str | None, local: bool = False) -> Result:
    """SET [LOCAL] ``name`` TO ``value`` (None: DEFAULT, and RESET) in ``session``: checked,
    kept, and undone with the transaction block it runs in (SET LOCAL: at its end in any
    case). Outside a block SET LOCAL only warns, as PostgreSQL does."""
    key = name.lower()
    if not _known(key):
        raise _unknown(name)
    p = parameters().get(key)
    if p is not None and p.context in _REFUSED:
        raise PlanError(f'parameter "{p.name}" {_REFUSED[p.context]}', sqlstate="55P02")
    if value is None:
        stored = _reset_value(session, key, p.boot) if p is not None else ""
    elif key in ROLE_SETTINGS:  # a role's name, checked by SET ROLE
        stored = value
    else:
        value = plain_value(value)
        stored = checked(key, value) if p is not None else value
    txn = session.txn
    if local and (txn is None or not txn.explicit):
        warning = ("25P01", "SET LOCAL can only be used in transaction blocks", "")
        return Result("SET", notices=[warning])
    settings = session.settings
    if txn is not None and txn.explicit:
        before = settings.get(key)
        txn.undo.append(lambda: _put(settings, key, before))
        if local:
            txn.local_settings.setdefault(key, before)
        else:  # a SET after a SET LOCAL outlasts the transaction
            txn.local_settings.pop(key, None)
    settings[key] = stored
    if key == "default_transaction_read_only" and not (txn is not None and txn.explicit):
        settings["transaction_read_only"] = stored  # what a statement outside a block runs as
    return Result("SET")


def end_local(settings: dict[str, str], txn: Any) -> None:
    """A committed transaction's SET LOCAL values back to what they were before it."""
    for key, before in txn.local_settings.items():
        _put(settings, key, before)


def reset_all(session: Any) -> Result:
    """RESET ALL: every parameter a session may set back to its starting value (undone, as a
    SET, with the transaction block it runs in)."""
    txn, settings = session.txn, session.settings
    if txn is not None and txn.explicit:
        before = dict(settings)
        txn.undo.append(lambda: (settings.clear(), settings.update(before)))
    for key, value in list(settings.items()):
        p = parameters().get(key)
        if key in ROLE_SETTINGS:  # RESET ALL leaves them, as PostgreSQL's
            continue
        if p is None:
            settings[key] = ""
        elif p.context not in _REFUSED and value != _reset_value(session, key, p.boot):
            settings[key] = _reset_value(session, key, p.boot)
    return Result("RESET")


def _put(settings: dict[str, str], key: str, value: str | None) -> None:
    if value is None:
        settings.pop(key, None)
    else:
        settings[key] = value


def show(settings: dict[str, str], name: str) -> Result:
    """SHOW ``name``."""
    key = name.lower()
    if key in ROLE_SETTINGS:
        from changeflow.adapter.sql.session_values import session_user

        value = settings.get(key) or ("none" if key == "role" else session_user())
        return text_result("SHOW", [key], [(value,)])
    if key not in settings:
        raise _unknown(name)
    return text_result("SHOW", [spelled(key)], [(shown(key, settings[key]),)])


def show_all(settings: dict[str, str]) -> Result:
    """SHOW ALL: every parameter's name, value and description, by name."""
    shown_all = [(k, v) for k, v in settings.items() if k not in ROLE_SETTINGS]
    rows = sorted((spelled(k), shown(k, v), "") for k, v in shown_all)
    return text_result("SHOW", ["name", "setting", "description"], rows)


def current_setting(settings: dict[str, str], name: str, missing_ok: bool = False) -> str | None:
    """current_setting(name [, missing_ok])."""
    key = name.lower()
    if key in ROLE_SETTINGS:
        return show(settings, key).rows[0][0]
    if key not in settings:
        if missing_ok:
            return None
        raise _unknown(name)
    return shown(key, settings[key])


REPORTED = ("application_name", "client_encoding", "datestyle", "intervalstyle", "timezone")
REPORTED += ("standard_conforming_strings", "integer_datetimes", "server_version")


def reported_values(settings: dict[str, str]) -> tuple[str | None, ...]:
    """The stored values of the parameters a server reports (ParameterStatus), to compare."""
    return tuple(settings.get(k) for k in REPORTED)


def reported_changes(settings: dict[str, str], before: tuple[str | None, ...]) -> dict[str, str]:
    """The reported parameters changed since :func:`reported_values` gave ``before``, each
    by its name and value as the client is told them."""
    return {
        spelled(k): shown(k, settings[k])
        for k, old in zip(REPORTED, before, strict=True)
        if k in settings and settings[k] != old
    }


def setting_rows(settings: dict[str, str]) -> list[tuple[Any, ...]]:
    """pg_settings' rows: name, setting, unit, category, short_desc, extra_desc, context,
    vartype, source, min_val, max_val, enumvals, boot_val, reset_val, sourcefile, sourceline,
    pending_restart."""
    rows = []
    for key, value in sorted(settings.items()):
        p = parameters().get(key)
        if key in ROLE_SETTINGS:
            continue
        if p is None:  # a custom parameter
            rows.append((key, value, None, "Customized Options", "", None, "user", "string"))
            rows[-1] += ("session", None, None, None, None, None, None, None, False)
            continue
        values = array_text(p.values, TEXT) if p.values else None
        source = "default" if value == p.boot else "session"
        rows.append((p.name, value, p.unit or None, p.category, "", None, p.context, p.vartype))
        rows[-1] += (source, p.low, p.high, values, p.boot, p.boot, None, None, False)
    return rows


def plain_value(text: str) -> str:
    """The value of a SET as written (``'5s'``, ``on``, ``'a', 'b'``) as the parameter's text:
    each quoted string without its quotes, a list's items joined by ``, ``, a bare word in lower
    case as PostgreSQL's lexer leaves it."""
    items, quoted = [], re.compile(r"\s*('(?:[^']|'')*'|\"(?:[^\"]|\"\")*\"|[^,]+?)\s*(?:,|$)")
    for match in quoted.finditer(text.strip()):
        item = match.group(1)
        if not item:
            continue
        if item.startswith("'"):
            items.append(item[1:-1].replace("''", "'"))
        elif item.startswith('"') or math.isfinite(_float(item)):
            items.append(item)
        else:
            items.append(item.lower())
    return ", ".join(items)


def _float(text: str) -> float:
    try:
        return float(text)
    except ValueError:
        return math.nan


_MODE = re.compile(
    r"\s*(?:ISOLATION\s+LEVEL\s+(?P<level>SERIALIZABLE|REPEATABLE\s+READ|READ\s+COMMITTED"
    r"|READ\s+UNCOMMITTED)|READ\s+(?P<access>ONLY|WRITE)|(?P<deferrable>(?:NOT\s+)?DEFERRABLE))"
    r"\s*,?",
    re.IGNORECASE,
)
_MODIFIERS = {"UNIQUE", "OR", "REPLACE", "TEMP", "TEMPORARY", "UNLOGGED", "GLOBAL", "LOCAL"}
WRITES = {"create_table", "create_view", "create_index", "create_source", "create_sink", "drop"}
WRITES |= {"create_sequence", "alter_sequence", "drop_sequence", "rename", "alter_table"}
WRITES |= {"create_schema", "drop_schema", "truncate", *DML_KINDS}
_WRITES = {"truncate": "TRUNCATE TABLE", **{k: k.upper() for k in DML_KINDS}}


def _modes(text: str) -> dict[str, str]:
    """A transaction's modes (``ISOLATION LEVEL …``, ``READ ONLY|WRITE``, ``[NOT]
    DEFERRABLE``) as the parameters they set; 42601 for anything else."""
    found, at, text = {}, 0, text.strip().rstrip(";")
    while at < len(text):
        m = _MODE.match(text, at)
        if m is None or m.end() == at:
            rest = text[at:].replace(",", " ").split()
            keywords = ("ISOLATION", "LEVEL", "READ", "NOT", "REPEATABLE")
            word = next((w for w in rest if w.upper() not in keywords), rest[-1] if rest else "")
            raise PlanError(f'syntax error at or near "{word}"', sqlstate="42601")
        if m["level"]:
            found["transaction_isolation"] = " ".join(m["level"].lower().split())
        if m["access"]:
            found["transaction_read_only"] = "on" if m["access"].upper() == "ONLY" else "off"
        if m["deferrable"]:
            deferrable = not m["deferrable"].upper().startswith("NOT")
            found["transaction_deferrable"] = "on" if deferrable else "off"
        at = m.end()
    return found


def transaction_modes(session: Any, text: str | None, default: bool) -> Result:
    """SET TRANSACTION modes (the transaction block's own; outside one a warning) or SET
    SESSION CHARACTERISTICS AS TRANSACTION modes (the defaults of the session's next ones).
    Every isolation level is accepted: each transaction here is strict serializable."""
    if text is None:  # SET ROLE NONE, RESET SESSION AUTHORIZATION …: no role is ever set
        return Result("SET")
    modes = _modes(text)
    if default:
        for key, value in modes.items():
            set_parameter(session, f"default_{key}", value)
        return Result("SET")
    txn = session.txn
    if txn is None or not txn.explicit:
        warning = ("25P01", "SET TRANSACTION can only be used in transaction blocks", "")
        return Result("SET", notices=[warning])
    if "transaction_read_only" in modes:
        set_parameter(session, "transaction_read_only", modes["transaction_read_only"], True)
    return Result("SET")


def begin_modes(session: Any, text: str) -> None:
    """At BEGIN [modes] (or START TRANSACTION [modes]): the block is read-only as its modes or,
    without READ ONLY or WRITE, the session's default say."""
    rest = re.sub(
        r"^\s*(?:BEGIN(?:\s+(?:WORK|TRANSACTION))?|START\s+TRANSACTION)", "", text, flags=re.I
    )
    modes = _modes(rest) if rest.strip().rstrip(";") else {}
    read_only = modes.get(
        "transaction_read_only", session.settings["default_transaction_read_only"]
    )
    if read_only != session.settings["transaction_read_only"]:
        set_parameter(session, "transaction_read_only", read_only, True)


def check_writable(session: Any, kind: str, text: str) -> None:
    """25006 for a write in a read-only transaction (an implicit one is read-only by
    default_transaction_read_only), as PostgreSQL names the statement."""
    if kind not in WRITES:
        return
    txn, settings = session.txn, session.settings
    explicit = txn is not None and txn.explicit
    name = "transaction_read_only" if explicit else "default_transaction_read_only"
    if settings.get(name) != "on":
        return
    what = _WRITES.get(kind)
    if what is None:  # DDL: its verb and kind (CREATE MATERIALIZED VIEW, DROP TABLE, …)
        words = [w.upper() for w in text.split()[:6] if w.upper() not in _MODIFIERS]
        what = " ".join(words[: 3 if words[1:2] == ["MATERIALIZED"] else 2])
    raise PlanError(f"cannot execute {what} in a read-only transaction", sqlstate="25006")
