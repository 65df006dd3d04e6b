"""``files:PATH``: Parquet tables, exactly once through a recovery log with idempotent apply.

A binding's table lives under ``PATH/<resource>/``: version folders ``v<seq>-<id>/`` of Parquet
parts and ``manifest.json`` (replaced atomically) naming the current version and the staged files
it has applied. ``start_commit`` writes the transaction to a fresh file in ``_staged/`` and names
it in the driver checkpoint, which the runtime commits with its own; ``acknowledge`` applies it
(the new version holds the old rows whose key it does not mention, plus its non-deleted rows).
An applied file is listed in the manifest, so applying it again does nothing: a new session
re-applies what the checkpoint in ``Open.state`` names, in case the last one crashed before.
Large tables are applied through Spark with a join on the key, small ones with pyarrow.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import re
import shutil
import uuid
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds
import pyarrow.parquet as pq

from changeflow.errors import ChangeflowError, InvalidInput, ProtocolViolation
from changeflow.materialize.columns import DELETED, EXISTS, KEY_META, arrow_schema, parse_type
from changeflow.materialize.driver import Driver
from changeflow.materialize.protocol import Binding, DriverState, Key, Open

SPARK_ROWS = 1_000_000  # tables (old rows + staged rows) this large are applied through Spark
KEEP_APPLIED = 16  # applied names kept in a manifest; only the last one can be named again


# -- durable files, shared by the file-based drivers ---------------------------------------------


def endpoint(url: str, scheme: str) -> Path:
    """The folder of ``scheme:PATH``."""
    prefix = f"{scheme}:"
    path = url[len(prefix) :] if url.startswith(prefix) else ""
    if not path.strip():
        raise InvalidInput(f"{url!r} is not {scheme}:PATH (a folder for the targets)")
    return Path(path).expanduser().absolute()


def make_folder(path: Path) -> Path:
    """Create ``path`` (and its parents); a clear error if it cannot be a folder."""
    try:
        path.mkdir(parents=True, exist_ok=True)
    except (FileExistsError, NotADirectoryError):
        raise InvalidInput(f"{path} is not a folder") from None
    except OSError as e:
        raise InvalidInput(f"cannot create the folder {path}: {e}") from None
    return path


def check_resource(resource: Any, driver: str) -> str:
    """A resource names a folder of the target: a plain name, not starting with '.' or '_'."""
    r = resource
    if not isinstance(r, str) or not r or "/" in r or os.sep in r or r[0] in "._":
        raise InvalidInput(
            f"{driver}: resource {r!r} is not a plain folder name (no '/', no leading '.' or '_')"
        )
    return r


def check_bindings(bindings: Iterable[Binding], driver: str) -> None:
    """Resources are distinct plain folder names; keys are columns; no column starts with '_'."""
    seen: set[str] = set()
    for b in bindings:
        r = check_resource(b.resource, driver)
        if r in seen:
            raise InvalidInput(f"{driver}: two bindings write to resource {r!r}")
        seen.add(r)
        if not b.key or not set(b.key) <= set(b.columns):
            raise InvalidInput(f"{driver}: {r}: key {list(b.key)} is not among {list(b.columns)}")
        for c in b.columns:
            if c.startswith("_"):
                raise InvalidInput(
                    f"{driver}: {r}: column {c!r} starts with '_', which is reserved"
                )


def check_key(binding: Binding, key: Key, driver: str) -> None:
    """A key has one value per key column of its binding."""
    if len(key) != len(binding.key):
        raise ProtocolViolation(
            f"{driver}: {binding.resource}: key {list(key)} does not match {list(binding.key)}"
        )


def fsync(path: Path) -> None:
    """Flush a file or a folder's entries to stable storage."""
    fd = os.open(path, os.O_RDONLY | (os.O_DIRECTORY if path.is_dir() else 0))
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def write_atomic(path: Path, data: bytes, sync_folder: bool = True) -> None:
    """Replace ``path`` with ``data`` all at once: a flushed temporary file, then ``os.replace``."""
    temp = path.with_name(f".{path.name}.{uuid.uuid4().hex[:8]}.tmp")
    try:
        with open(temp, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(temp, path)
    finally:
        with contextlib.suppress(FileNotFoundError):
            temp.unlink()
    if sync_folder:
        fsync(path.parent)


# -- one binding's table -------------------------------------------------------------------------


class Table:
    """The versions, manifest and staged files of one resource under ``folder``."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.staged = folder / "_staged"
        self.manifest_path = folder / "manifest.json"

    def manifest(self) -> dict[str, Any]:
        """The manifest; ``{}`` before the first apply."""
        try:
            return json.loads(self.manifest_path.read_bytes())
        except FileNotFoundError:
            return {}

    def schema(self) -> pa.Schema | None:
        m = self.manifest()
        if not m:
            return None
        return pa.schema(
            [(c, parse_type(t)) for c, t in zip(m["columns"], m["types"], strict=True)]
        )

    def check(self, binding: Binding) -> None:
        """Refuse a binding whose columns, types or key differ from the table's."""
        m = self.manifest()
        want = arrow_schema(binding)
        if m and (self.schema() != want or m["key"] != list(binding.key)):
            raise InvalidInput(
                f"files: table {self.folder} has columns {m['columns']} of types {m['types']} "
                f"and key {m['key']}; the binding has {list(binding.columns)} of types "
                f"{[str(t) for t in want.types]} and key {list(binding.key)}"
            )

    def read(self, where: ds.Expression | None = None) -> pa.Table:
        """The current rows (an empty table before the first apply)."""
        m = self.manifest()
        schema = self.schema()
        if schema is None:
            return pa.table({})
        data = ds.dataset(self.folder / m["version"], format="parquet")
        table = data.to_table(columns=schema.names, filter=where)
        return table.cast(schema)

    def lookup(self, key: list[str], wanted: pa.Table) -> pa.Table:
        """The rows whose key is one of the rows of ``wanted`` (a table of the key columns)."""
        schema = self.schema()
        if schema is None or not wanted.num_rows:
            return pa.table({})
        key_schema = pa.schema([schema.field(k) for k in key])
        try:
            wanted = wanted.select(key).cast(key_schema)
        except (pa.ArrowException, KeyError, ValueError) as e:
            raise InvalidInput(
                f"files: {self.folder.name}: Load keys do not fit {key}: {e}"
            ) from None
        first = ds.field(key[0]).isin(wanted.column(key[0]).unique())
        rows = self.read(where=first)
        return rows.join(wanted, keys=key, join_type="left semi").select(schema.names)

    def stage(self, rows: pa.Table, schema: pa.Schema, key: tuple[str, ...]) -> str:
        """Write ``rows`` (the columns and a ``_deleted`` flag) to a fresh, flushed staged file."""
        meta = {KEY_META: json.dumps(list(key)).encode()}
        full = schema.append(pa.field(DELETED, pa.bool_())).with_metadata(meta)
        try:
            table = rows.select(full.names).cast(full)
        except (pa.ArrowException, TypeError, ValueError, OverflowError) as e:
            raise InvalidInput(
                f"files: {self.folder.name}: a stored document does not fit {schema.names} "
                f"of types {[str(t) for t in schema.types]}: {e}"
            ) from None
        make_folder(self.staged)
        name = f"{uuid.uuid4().hex}.parquet"
        path = self.staged / name
        pq.write_table(table, path)
        fsync(path)
        fsync(self.staged)
        return name

    def apply(
        self, name: str, spark_rows: int = SPARK_ROWS, spark_master: str | None = None
    ) -> bool:
        """Apply the staged file ``name`` once; False if the manifest lists it already."""
        if not re.fullmatch(r"[0-9a-f]{32}\.parquet", name):
            raise ProtocolViolation(f"files: {name!r} is not the name of a staged file")
        with self._lock():
            m = self.manifest()
            if name in m.get("applied", []):
                return False
            path = self.staged / name
            if not path.exists():
                raise ChangeflowError(
                    f"files: {self.folder}: the staged file {name} that the driver checkpoint "
                    "names was neither applied nor found; the table cannot catch up with the "
                    "recovery log"
                )
            staged = pq.read_table(path)
            key = json.loads(staged.schema.metadata[KEY_META])
            schema = staged.schema.remove(staged.schema.get_field_index(DELETED))
            schema = schema.remove_metadata()
            if m and (self.schema() != schema or m["key"] != key):
                raise InvalidInput(f"files: the staged file {path} does not fit the table's schema")
            seq = m.get("seq", 0) + 1
            version = f"v{seq:08d}-{uuid.uuid4().hex[:8]}"
            target = self.folder / version
            if m.get("rows", 0) + staged.num_rows >= spark_rows:
                self._apply_spark(path, m.get("version"), target, key, schema, spark_master)
            else:
                self._apply_arrow(staged, target, key, schema)
            for part in target.iterdir():
                fsync(part)
            fsync(target)
            fsync(self.folder)
            manifest = {
                "version": version,
                "previous": m.get("version"),
                "seq": seq,
                "rows": ds.dataset(target, format="parquet").count_rows(),
                "key": key,
                "columns": schema.names,
                "types": [str(t) for t in schema.types],
                "applied": [*m.get("applied", []), name][-KEEP_APPLIED:],
            }
            write_atomic(self.manifest_path, json.dumps(manifest, indent=1).encode())
            return True

    def _apply_arrow(
        self, staged: pa.Table, target: Path, key: list[str], schema: pa.Schema
    ) -> None:
        old = self.read()
        if old.num_rows:
            old = old.join(staged.select(key), keys=key, join_type="left anti")
        upserts = staged.filter(pc.invert(staged.column(DELETED))).select(schema.names)
        parts = [t.select(schema.names).cast(schema) for t in (old, upserts) if t.num_rows]
        make_folder(target)
        pq.write_table(
            pa.concat_tables(parts) if parts else schema.empty_table(), target / "part-0.parquet"
        )

    def _apply_spark(
        self,
        path: Path,
        old: str | None,
        target: Path,
        key: list[str],
        schema: pa.Schema,
        master: str | None,
    ) -> None:
        from pyspark.sql import functions as F

        from changeflow.spark import get_spark

        spark = get_spark(master)
        staged = spark.read.parquet(path.as_uri())
        new = staged.filter(~F.col(DELETED)).select(*schema.names)
        if old is not None:
            kept = spark.read.parquet((self.folder / old).as_uri()).join(
                staged.select(*key), on=key, how="left_anti"
            )
            new = kept.select(*schema.names).unionByName(new)
        new.write.parquet(target.as_uri())

    def tidy(self) -> None:
        """Delete what no reader needs: staged files (the caller has applied every committed
        one), versions but the current and previous, and temporary files a crash left."""
        if not self.folder.exists():
            return
        with self._lock():
            m = self.manifest()
            keep = {m.get("version"), m.get("previous")}
            for entry in self.folder.iterdir():
                if entry.is_dir() and entry.name.startswith("v") and entry.name not in keep:
                    shutil.rmtree(entry, ignore_errors=True)
                elif entry.name.endswith(".tmp"):
                    entry.unlink(missing_ok=True)
            if self.staged.exists():
                for entry in self.staged.iterdir():
                    entry.unlink(missing_ok=True)

    @contextlib.contextmanager
    def _lock(self) -> Iterator[None]:
        """Serialize applies on this table across processes of this machine."""
        make_folder(self.folder)
        with open(self.folder / ".lock", "a") as f:
            fcntl.flock(f, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(f, fcntl.LOCK_UN)


# -- the driver ----------------------------------------------------------------------------------


class FilesDriver(Driver):
    """Parquet tables, exactly once: stage in ``start_commit``, apply in ``acknowledge``.

    Options, in the URL's query (``files:PATH?spark_rows=100000``) or in ``Open.config``:
    ``spark_rows``, the table size from which applies run on Spark, and ``spark_master``.
    """

    spark_rows = SPARK_ROWS

    def __init__(self, url: str) -> None:
        url, _, query = url.partition("?")
        self.root = endpoint(url, "files")
        self.options = dict(parse_qsl(query, strict_parsing=bool(query)))
        if unknown := set(self.options) - {"spark_rows", "spark_master"}:
            raise InvalidInput(f"files: unknown options {sorted(unknown)} in {url}?{query}")
        self.bindings: tuple[Binding, ...] = ()
        self.pending: dict[str, str] = {}  # resource -> staged file committed, not yet applied
        self.schemas: list[pa.Schema] = []
        self.stores: list[list[pa.Table]] = []  # per binding, this transaction's Store tables
        self.first = True  # the next Acknowledge is the session's first
        self.spark_master: str | None = None

    @staticmethod
    def read_table(path: str | Path, resource: str) -> pa.Table:
        """The current rows of ``resource`` under ``path`` (for checks and tests)."""
        return Table(Path(path) / resource).read()

    def open(self, request: Open) -> dict[str, Any] | None:
        check_bindings(request.bindings, "files")
        make_folder(self.root)
        for b in request.bindings:
            Table(self.root / b.resource).check(b)
        self.bindings = request.bindings
        self.schemas = [arrow_schema(b) for b in request.bindings]
        self.stores = [[] for _ in request.bindings]
        self.pending = dict(request.state.get("staged", {}))  # re-applied at the first Acknowledge
        self.first = True
        options = {**self.options, **request.config}
        try:
            self.spark_rows = int(options.get("spark_rows", self.spark_rows))
        except ValueError:
            raise InvalidInput(
                f"files: spark_rows={options['spark_rows']!r} is not a number"
            ) from None
        self.spark_master = options.get("spark_master")
        return None

    def acknowledge(self) -> DriverState | None:
        for resource, name in self.pending.items():
            check_resource(resource, "files")
            Table(self.root / resource).apply(str(name), self.spark_rows, self.spark_master)
        tidy = set(self.pending) | ({b.resource for b in self.bindings} if self.first else set())
        for resource in tidy:
            Table(self.root / resource).tidy()
        self.pending, self.first = {}, False
        return None

    def load_batch(self, binding: int, keys: pa.Table) -> pa.Table:
        if self.pending:
            raise ProtocolViolation(
                f"files: Load before the staged files {self.pending} were applied "
                "(an Acknowledge must come first)"
            )
        b = self._binding(binding)
        return Table(self.root / b.resource).lookup(list(b.key), keys)

    def store_batch(self, binding: int, rows: pa.Table) -> None:
        self._binding(binding)
        self.stores[binding].append(rows)

    def start_commit(self, runtime_checkpoint: dict[str, Any]) -> DriverState | None:
        staged: dict[str, str] = {}
        for b, schema, tables in zip(self.bindings, self.schemas, self.stores, strict=True):
            if tables:
                rows = _last_per_key(pa.concat_tables(tables, promote_options="permissive"), b)
                staged[b.resource] = Table(self.root / b.resource).stage(rows, schema, b.key)
        self.stores = [[] for _ in self.bindings]
        self.pending = staged
        return DriverState({"staged": staged})

    def _binding(self, index: int) -> Binding:
        if not 0 <= index < len(self.bindings):
            raise ProtocolViolation(f"files: no binding {index} (there are {len(self.bindings)})")
        return self.bindings[index]


def _last_per_key(rows: pa.Table, binding: Binding) -> pa.Table:
    """The last row of each key (a delete's other columns null): a staged file holds a key
    once."""
    key = list(binding.key)
    at = pa.array(np.arange(rows.num_rows, dtype=np.int64))
    last = rows.select(key).append_column("_at", at).group_by(key, use_threads=False)
    positions = np.sort(last.aggregate([("_at", "max")])["_at_max"].to_numpy())
    rows = rows.take(positions).drop_columns([EXISTS])
    deleted = rows[DELETED]
    columns = {
        c: rows[c] if c in key else pc.if_else(deleted, pa.scalar(None, rows[c].type), rows[c])
        for c in binding.columns
    }
    return pa.table({**columns, DELETED: deleted})
