"""Password authentication (SCRAM-SHA-256 and md5 from a password file) and TLS."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import psycopg
import pytest
from serve_clients import PSQL, psql


def _passwords(tmp_path: Path) -> Path:
    path = tmp_path / "passwords"
    path.write_text("# user:password\nalice:s3cret:with:colons\nbob:hunter2\n")
    return path


@pytest.mark.parametrize("method", ["scram", "md5"])
def test_password_file(start_server, tmp_path: Path, method: str) -> None:
    server = start_server("--password-file", str(_passwords(tmp_path)), "--auth", method)
    with server.connect(user="alice", password="s3cret:with:colons") as c:
        assert c.execute("SELECT current_user").fetchone() == ("alice",)
    for user, password in [("alice", "wrong"), ("nobody", "hunter2"), ("bob", "")]:
        with pytest.raises(psycopg.OperationalError) as e:
            server.connect(user=user, password=password or "x")
        assert "password authentication failed" in str(e.value)
    with pytest.raises(psycopg.OperationalError):  # no password at all
        psycopg.connect(server.dsn(user="bob"))
    with server.connect(user="bob", password="hunter2") as c:  # the server is still up
        assert c.execute("SELECT 1").fetchone() == (1,)
    if method == "scram" and PSQL is not None:
        ok = psql(server, "-At", "-c", "SELECT 2", user="bob", password="hunter2")
        assert ok.returncode == 0 and ok.stdout.strip() == "2", ok.stderr
        bad = psql(server, "-c", "SELECT 2", user="bob", password="nope")
        assert bad.returncode == 2 and "password authentication failed" in bad.stderr


@pytest.mark.skipif(shutil.which("openssl") is None, reason="openssl is not installed")
def test_tls(start_server, server, tmp_path: Path) -> None:
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1"]
        + ["-subj", "/CN=localhost", "-keyout", str(key), "-out", str(cert)],
        check=True,
        capture_output=True,
    )
    tls = start_server("--tls-cert", str(cert), "--tls-key", str(key), "--require-tls")
    with tls.connect(sslmode="require") as c:
        assert c.pgconn.ssl_in_use
        assert c.execute("SELECT 'over tls'").fetchone() == ("over tls",)
        c.execute("CREATE TABLE secure (a int)")
        c.execute("INSERT INTO secure VALUES (1)")
        c.execute("BEGIN")
        c.execute("DECLARE s CURSOR FOR SUBSCRIBE secure")
        assert [r[2:] for r in c.execute("FETCH ALL s WITH (timeout = '2s')")] == [(1,)]
        assert c.execute("FETCH ALL s WITH (timeout = '0.6s')").fetchall() == []
        c.execute("COMMIT")
    with pytest.raises(psycopg.OperationalError) as e:
        tls.connect(sslmode="disable")
    assert "requires TLS" in str(e.value)
    with tls.connect(sslmode="prefer") as c:
        assert c.pgconn.ssl_in_use
    with pytest.raises(psycopg.OperationalError):  # a server without a certificate
        server.connect(sslmode="require")
    with server.connect(sslmode="prefer") as c:
        assert not c.pgconn.ssl_in_use
