"""The uuid-ossp extension's deterministic functions (built in here, as PostgreSQL has them
once ``CREATE EXTENSION "uuid-ossp"`` ran): ``uuid_nil()``, the namespaces
``uuid_ns_dns/url/oid/x500()`` and the name-based ``uuid_generate_v3/v5(namespace, name)``;
``uuid_generate_v4()`` is ``gen_random_uuid()`` (the planner's)."""

from __future__ import annotations

import uuid

from changeflow.compute.functions.base import Function, _sig, in_process
from changeflow.compute.types import TEXT, UUID

_IN_PROCESS = in_process("uuids are made in the process")
_NAMESPACES = {
    "uuid_ns_dns": uuid.NAMESPACE_DNS,
    "uuid_ns_url": uuid.NAMESPACE_URL,
    "uuid_ns_oid": uuid.NAMESPACE_OID,
    "uuid_ns_x500": uuid.NAMESPACE_X500,
}


FUNCTIONS = [
    Function("uuid_nil", _sig((), result=UUID), lambda: uuid.UUID(int=0), spark=_IN_PROCESS),
    *(
        Function(name, _sig((), result=UUID), lambda ns=ns: ns, spark=_IN_PROCESS)
        for name, ns in _NAMESPACES.items()
    ),
    Function("uuid_generate_v3", _sig((UUID, TEXT), result=UUID), uuid.uuid3, spark=_IN_PROCESS),
    Function("uuid_generate_v5", _sig((UUID, TEXT), result=UUID), uuid.uuid5, spark=_IN_PROCESS),
]
