"""The JSON-lines codec of CDC v2: one message a line.

``{"updates": [{"data": …, "time": …, "diff": …}, …]}`` or
``{"progress": {"lower": […], "upper": […], "counts": [{"time": …, "count": …}, …]}}``.
``data`` is any JSON value; in memory it is held as its canonical JSON text (sorted keys, no
spaces), so equal values from different writers deduplicate.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any, TextIO

from changeflow.cdc.messages import Message, Progress, Updates
from changeflow.errors import ChangeflowError, InvalidInput
from changeflow.time import Antichain, time_from_json, time_to_json


def canonical_json(value: Any) -> str:
    """The one text of a JSON value that every reader agrees on."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def message_to_json(message: Message, data_to_json: Any = json.loads) -> dict[str, Any]:
    """The JSON form of a message; ``data_to_json`` turns held data back into a JSON value."""
    if isinstance(message, Updates):
        return {
            "updates": [
                {"data": data_to_json(d), "time": time_to_json(t), "diff": r}
                for d, t, r in message.updates
            ]
        }
    return {
        "progress": {
            "lower": message.lower.to_json(),
            "upper": message.upper.to_json(),
            "counts": [{"time": time_to_json(t), "count": c} for t, c in message.counts],
        }
    }


def message_from_json(obj: Any) -> Message:
    """Parse the JSON form of one message (data becomes canonical JSON text)."""
    if not isinstance(obj, dict) or len(obj) != 1:
        raise InvalidInput('a message is {"updates": [...]} or {"progress": {...}}')
    if "updates" in obj:
        updates = obj["updates"]
        if not isinstance(updates, list):
            raise InvalidInput('"updates" must be a list')
        return Updates(tuple(_update_from_json(u) for u in updates))
    if "progress" in obj:
        p = obj["progress"]
        if not isinstance(p, dict) or not {"lower", "upper"} <= p.keys():
            raise InvalidInput('"progress" needs "lower", "upper" and "counts"')
        counts = []
        for c in p.get("counts", []):
            if not isinstance(c, dict) or not {"time", "count"} <= c.keys():
                raise InvalidInput(f'a progress count is {{"time": …, "count": …}}, not {c!r}')
            count = c["count"]
            if isinstance(count, bool) or not isinstance(count, int):
                raise InvalidInput(f"a progress count is an int, not {count!r}")
            counts.append((time_from_json(c["time"]), count))
        return Progress(
            Antichain.from_json(p["lower"]), Antichain.from_json(p["upper"]), tuple(counts)
        ).validate()
    raise InvalidInput('a message is {"updates": [...]} or {"progress": {...}}')


def _update_from_json(u: Any) -> tuple[str, Any, int]:
    if not isinstance(u, dict) or not {"data", "time", "diff"} <= u.keys():
        raise InvalidInput(f'an update is {{"data": …, "time": …, "diff": …}}, not {u!r}')
    diff = u["diff"]
    if isinstance(diff, bool) or not isinstance(diff, int):
        raise InvalidInput(f"an update's diff is an int, not {diff!r}")
    return canonical_json(u["data"]), time_from_json(u["time"]), diff


def read_jsonl(path: Path) -> Iterator[Message]:
    """The messages of one JSON-lines file; errors name the file and line."""
    with open(path, encoding="utf-8") as f:
        for number, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                yield message_from_json(json.loads(line))
            except json.JSONDecodeError as e:
                raise InvalidInput(f"{path}:{number}: not JSON: {e.msg}") from None
            except ChangeflowError as e:
                raise type(e)(f"{path}:{number}: {e}") from None


def write_jsonl(out: TextIO, messages: Iterable[Message], data_to_json: Any = json.loads) -> None:
    for message in messages:
        out.write(json.dumps(message_to_json(message, data_to_json), ensure_ascii=False))
        out.write("\n")
