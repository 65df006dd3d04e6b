"""Multi-dimensional arrays: ``ARRAY[[1,2],[3,4]]``, ``'{{1,2},{3,4}}'::int[]``.

As in PostgreSQL, the number of dimensions belongs to a value, not to its type: an ``int[]``
may hold ``{1,2}`` or ``{{1,2},{3,4}}``. A value of two or more dimensions is a tuple of its
sub-arrays (each a tuple, all of the same shape), a one-dimensional one a tuple of elements;
no element of an array is itself a tuple, so the two are told apart by their first item.
Functions that see an array as its elements in storage order (``cardinality``, ``unnest``,
``array_to_string``) read :func:`flat`; ``array_dims``, ``array_ndims``, ``array_length``,
``array_lower`` and ``array_upper`` read :func:`shape`.

A table's or a materialized view's column stores an array as one Arrow list of its elements,
which has no room for a second dimension: writing a value of several dimensions there is
refused (0A000); ad hoc queries and plain views compute with them.
"""

from __future__ import annotations

from typing import Any

from changeflow.errors import EvalError

MISMATCHED = "multidimensional arrays must have array expressions with matching dimensions"
MAX_DIMS = 6  # PostgreSQL's MAXDIM


def nested(values: Any) -> bool:
    """Is the array ``values`` of two or more dimensions?"""
    return bool(values) and isinstance(values[0], tuple)


def shape(values: tuple) -> tuple[int, ...]:
    """The length of each dimension of a non-empty array (``()`` for an empty one)."""
    out: list[int] = []
    while values:
        out.append(len(values))
        if not isinstance(values[0], tuple):
            break
        values = values[0]
    return tuple(out)


def flat(values: tuple) -> tuple:
    """The elements of an array in storage order (row-major), whatever its dimensions."""
    if not nested(values):
        return values
    return tuple(v for sub in values for v in flat(sub))


def of_arrays(items: list[Any]) -> tuple:
    """``ARRAY[a, b, …]`` of arrays: one more dimension (2202E unless all have one shape, as
    PostgreSQL's: a NULL sub-array or an empty one beside others too; all NULL or empty:
    ``{}``)."""
    if not any(items):
        return ()
    shapes = {None if i is None else shape(i) for i in items}
    if len(shapes) > 1 or None in shapes or () in shapes:
        raise EvalError(MISMATCHED, sqlstate="2202E")
    depth = len(next(iter(shapes)) or ()) + 1
    if depth > MAX_DIMS:
        raise EvalError(
            f"number of array dimensions ({depth}) exceeds the maximum allowed ({MAX_DIMS})",
            sqlstate="54000",
        )
    return tuple(items)


def accumulated(items: list[Any]) -> tuple:
    """``array_agg`` of arrays: one more dimension, as PostgreSQL's (22004 for a NULL array,
    2202E for an empty one or for arrays of different shapes)."""
    for n, item in enumerate(items):  # in turn, as PostgreSQL accumulates them
        if item is None:
            raise EvalError("cannot accumulate null arrays", sqlstate="22004")
        if n == 0 and not item:
            raise EvalError("cannot accumulate empty arrays", sqlstate="2202E")
        if shape(item) != shape(items[0]):
            raise EvalError(
                "cannot accumulate arrays of different dimensionality", sqlstate="2202E"
            )
    return of_arrays(items)


def element_at(values: tuple, indexes: list[int]) -> Any:
    """``a[i][j]…`` of an array: NULL unless there is one index a dimension and each is in
    range."""
    if len(indexes) != len(shape(values)) or not values:
        return None
    for i in indexes:
        if not 1 <= i <= len(values):
            return None
        values = values[i - 1]
    return values


def dims_text(values: tuple) -> str | None:
    """``array_dims``: ``[1:2][1:3]`` (NULL for an empty array)."""
    return "".join(f"[1:{n}]" for n in shape(values)) or None


def length(values: tuple, dimension: int) -> int | None:
    """``array_length(a, d)`` and ``array_upper(a, d)``: NULL for a dimension it has not."""
    dims = shape(values)
    return dims[dimension - 1] if 1 <= dimension <= len(dims) else None


def lower(values: tuple, dimension: int) -> int | None:
    """``array_lower(a, d)``: 1 for a dimension it has, else NULL."""
    return 1 if 1 <= dimension <= len(shape(values)) else None


def parse(text: str, read_flat: Any) -> tuple:
    """An array literal whose body opens with ``{`` (several dimensions): each innermost
    ``{…}`` read by ``read_flat``; 22P02 where sub-arrays differ in shape or are malformed."""
    malformed = EvalError(f'malformed array literal: "{text}"', sqlstate="22P02")
    s = text.strip()

    def group(i: int) -> tuple[tuple, int]:
        # s[i] == "{": a group of groups or, innermost, of elements
        j = i + 1
        while j < len(s) and s[j].isspace():
            j += 1
        if j < len(s) and s[j] == "{":
            items = []
            while True:
                item, j = group(j)
                items.append(item)
                while j < len(s) and s[j].isspace():
                    j += 1
                if j < len(s) and s[j] == ",":
                    j += 1
                    while j < len(s) and s[j].isspace():
                        j += 1
                    if j >= len(s) or s[j] != "{":
                        raise malformed
                    continue
                if j < len(s) and s[j] == "}":
                    if len({shape(x) for x in items}) > 1 or not all(items):
                        raise malformed
                    return tuple(items), j + 1
                raise malformed
        end, quoted = j, False
        while end < len(s) and (quoted or s[end] != "}"):
            if s[end] == "\\":
                end += 1
            elif s[end] == '"':
                quoted = not quoted
            elif s[end] == "{" and not quoted:
                raise malformed
            end += 1
        if end >= len(s):
            raise malformed
        return read_flat(s[i : end + 1]), end + 1

    if not s.startswith("{"):
        raise malformed
    values, end = group(0)
    if s[end:].strip():
        raise malformed
    return values


def text_of(values: tuple, flat_text: Any) -> str:
    """An array's text: ``{{1,2},{3,4}}``, each innermost group written by ``flat_text``."""
    if not nested(values):
        return flat_text(values)
    return "{" + ",".join(text_of(v, flat_text) for v in values) + "}"


def one_dimension(values: list[Any]) -> None:
    """Refuse (0A000) to store an array of several dimensions: a stored array column is one
    Arrow list of elements, with no room for a second dimension."""
    found = next((v for v in values if nested(v)), None)
    if found is not None:
        raise EvalError(
            f"arrays of {len(shape(found))} dimensions cannot be stored in a table or a "
            "materialized view here (a stored array has one dimension); ad hoc queries and "
            "views compute with them",
            sqlstate="0A000",
        )
