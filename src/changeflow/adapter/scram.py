"""SCRAM-SHA-256 secrets (RFC 5802 / 7677), as PostgreSQL keeps a role's password: salt,
iterations and the two keys, never the password; written as PostgreSQL's
``SCRAM-SHA-256$<iterations>:<salt>$<StoredKey>:<ServerKey>`` (base64), which pg_authid shows
and CREATE ROLE … PASSWORD takes back as it is."""

from __future__ import annotations

import base64
import hashlib
import hmac
import re
import secrets
from dataclasses import dataclass

ITERATIONS = 4096
_B64 = r"([A-Za-z0-9+/=]+)"
_TEXT = re.compile(rf"SCRAM-SHA-256\$(\d+):{_B64}\${_B64}:{_B64}")


def hmac_sha256(key: bytes, msg: bytes) -> bytes:
    return hmac.new(key, msg, hashlib.sha256).digest()


@dataclass(frozen=True)
class ScramSecret:
    """What the server keeps of a password for SCRAM: salt, iterations and the two keys."""

    salt: bytes
    iterations: int
    stored_key: bytes
    server_key: bytes

    @classmethod
    def of(cls, password: str, salt: bytes | None = None) -> ScramSecret:
        salt = salt or secrets.token_bytes(16)
        salted = hashlib.pbkdf2_hmac("sha256", password.encode("utf-8"), salt, ITERATIONS)
        client_key = hmac_sha256(salted, b"Client Key")
        server_key = hmac_sha256(salted, b"Server Key")
        return cls(salt, ITERATIONS, hashlib.sha256(client_key).digest(), server_key)

    def text(self) -> str:
        """PostgreSQL's form of the secret (rolpassword)."""
        salt, stored, server = (
            base64.b64encode(v).decode() for v in (self.salt, self.stored_key, self.server_key)
        )
        return f"SCRAM-SHA-256${self.iterations}:{salt}${stored}:{server}"

    @classmethod
    def parse(cls, text: str) -> ScramSecret | None:
        """The secret written as :meth:`text` writes it, None for anything else."""
        m = _TEXT.fullmatch(text)
        if m is None:
            return None
        salt, stored, server = (base64.b64decode(m[i]) for i in (2, 3, 4))
        return cls(salt, int(m[1]), stored, server)
