"""Password authentication: the password file, SCRAM-SHA-256 (RFC 5802 / 7677) and md5.

An unknown user goes through the same exchange as a known one, with a made-up salt, and fails
at the same point with the same message as a wrong password, as PostgreSQL does.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets
from pathlib import Path

from changeflow.adapter.access import check_role
from changeflow.adapter.scram import ScramSecret, hmac_sha256
from changeflow.errors import InvalidInput

MECHANISM = "SCRAM-SHA-256"


class AuthFailed(Exception):
    """The client did not prove that it knows the user's password (SQLSTATE 28P01)."""

    sqlstate = "28P01"


def read_passwords(path: str | Path) -> dict[str, str]:
    """``user:password`` lines (blank lines and ``#`` comments skipped)."""
    return read_password_file(path)[0]


def read_password_file(path: str | Path) -> tuple[dict[str, str], dict[str, frozenset[str]]]:
    """The users' passwords and roles: ``user:password`` lines, then optionally a ``[roles]``
    line followed by ``user: role, role`` lines (``superuser``, ``pg_read_server_files``,
    ``pg_write_server_files``). Blank lines and ``#`` comments are skipped."""
    try:
        lines = Path(path).read_text(encoding="utf-8").splitlines()
    except OSError as e:
        raise InvalidInput(f"cannot read the password file {path}: {e.strerror}") from None
    passwords: dict[str, str] = {}
    roles: dict[str, frozenset[str]] = {}
    in_roles = False
    for number, line in enumerate(lines, 1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        if line.strip() == "[roles]":
            in_roles = True
            continue
        user, sep, rest = line.partition(":")
        if in_roles:
            user = user.strip()
            where = f"{path}, line {number}"
            if not sep or user not in passwords:
                raise InvalidInput(f"{where}: expected user: role, … for a user given above")
            named = [r.strip() for r in rest.split(",") if r.strip()]
            roles[user] = roles.get(user, frozenset()) | {check_role(r, where) for r in named}
            continue
        if not sep or not user:
            raise InvalidInput(f"{path}, line {number}: expected user:password")
        passwords[user] = rest
    return passwords, roles


def _attrs(message: str) -> dict[str, str]:
    out = {}
    for part in message.split(","):
        key, sep, value = part.partition("=")
        if sep and len(key) == 1:
            out.setdefault(key, value)
    return out


class Scram:
    """The server side of one SCRAM-SHA-256 exchange."""

    def __init__(self, secret: ScramSecret | None) -> None:
        self.known = secret is not None
        self.secret = secret or ScramSecret.of(secrets.token_hex(16))
        self.nonce = ""
        self.client_first_bare = ""
        self.server_first = ""

    def first(self, client_first: str) -> str:
        """The server-first message in answer to the client-first one."""
        gs2, _, bare = client_first.partition(",")
        if gs2.startswith("p"):
            raise AuthFailed("SCRAM channel binding is not supported")
        if gs2 not in ("n", "y"):
            raise AuthFailed("malformed SCRAM message")
        _authzid, _, bare = bare.partition(",")
        attrs = _attrs(bare)
        if "r" not in attrs:
            raise AuthFailed("malformed SCRAM message: no nonce")
        self.client_first_bare = bare
        self.nonce = attrs["r"] + base64.b64encode(secrets.token_bytes(18)).decode()
        salt = base64.b64encode(self.secret.salt).decode()
        self.server_first = f"r={self.nonce},s={salt},i={self.secret.iterations}"
        return self.server_first

    def final(self, client_final: str) -> str:
        """The server-final message (its signature) once the client's proof checks out."""
        without_proof, _, proof_part = client_final.rpartition(",p=")
        attrs = _attrs(without_proof)
        if not proof_part or attrs.get("r") != self.nonce:
            raise AuthFailed("malformed SCRAM message")
        try:
            proof = base64.b64decode(proof_part, validate=True)
        except ValueError:
            raise AuthFailed("malformed SCRAM proof") from None
        auth = f"{self.client_first_bare},{self.server_first},{without_proof}".encode()
        signature = hmac_sha256(self.secret.stored_key, auth)
        if len(proof) != len(signature):
            raise AuthFailed("malformed SCRAM proof")
        client_key = bytes(a ^ b for a, b in zip(proof, signature, strict=True))
        if not (
            hmac.compare_digest(hashlib.sha256(client_key).digest(), self.secret.stored_key)
            and self.known
        ):
            raise AuthFailed("wrong password")
        server_signature = hmac_sha256(self.secret.server_key, auth)
        return "v=" + base64.b64encode(server_signature).decode()


def md5_expected(user: str, password: str, salt: bytes) -> str:
    """What an md5 client sends: ``md5`` + md5(md5(password + user) + salt)."""
    inner = hashlib.md5((password + user).encode("utf-8")).hexdigest()
    return "md5" + hashlib.md5(inner.encode() + salt).hexdigest()
