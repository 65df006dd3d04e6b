"""``changeflow serve``: the PostgreSQL wire protocol (3.0) over a home's environment, so that
psql, psycopg and other PostgreSQL clients can talk to it.

:mod:`pgwire` frames messages, :mod:`values` puts values on the wire and takes parameters off
it, :mod:`auth` checks passwords (SCRAM-SHA-256, md5), :mod:`connection` serves one client and
:mod:`server` accepts them.
"""
