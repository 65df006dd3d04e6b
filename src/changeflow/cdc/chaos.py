"""Seeded chaos: duplicate, reorder and re-batch CDC v2 messages without changing their meaning.

What at-least-once storage does to a stream, on purpose: Updates messages are split and
merged, progress statements over int times are split at a time inside their interval, some
messages are repeated, and all are shuffled across files.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from pathlib import Path

from changeflow.cdc.files import open_source, write_messages
from changeflow.cdc.messages import Message, Progress, Updates
from changeflow.time import Antichain, Product


def rebatch_updates(messages: Sequence[Message], rng: random.Random) -> list[Message]:
    """Cut every Updates message into random pieces, then glue random neighbours together."""
    pieces: list[Message] = []
    for m in messages:
        if not isinstance(m, Updates) or len(m.updates) < 2:
            pieces.append(m)
            continue
        updates, start = m.updates, 0
        while start < len(updates):
            end = start + rng.randint(1, len(updates) - start)
            pieces.append(Updates(updates[start:end]))
            start = end
    out: list[Message] = []
    for m in pieces:
        if isinstance(m, Updates) and out and isinstance(out[-1], Updates) and rng.random() < 0.3:
            out[-1] = Updates(out[-1].updates + m.updates)
        else:
            out.append(m)
    return out


def split_progress(p: Progress, rng: random.Random) -> list[Progress]:
    """Split an int-time progress statement in two at a time inside its interval."""
    if len(p.lower) != 1 or isinstance(p.lower.elements[0], Product):
        return [p]
    low = p.lower.elements[0]
    high = p.upper.elements[0] if p.upper else max((t for t, _ in p.counts), default=low) + 2
    if high - low < 2:
        return [p]
    mid = rng.randint(low + 1, high - 1)
    middle = Antichain([mid])
    return [
        Progress(p.lower, middle, tuple((t, c) for t, c in p.counts if t < mid)),
        Progress(middle, p.upper, tuple((t, c) for t, c in p.counts if t >= mid)),
    ]


def mangle(
    messages: Sequence[Message], rng: random.Random, duplication: float = 0.5
) -> list[Message]:
    """Re-batch, duplicate (each message again with probability ``duplication``) and shuffle."""
    out = rebatch_updates(messages, rng)
    out = [q for m in out for q in (split_progress(m, rng) if isinstance(m, Progress) else [m])]
    out += [m for m in out if rng.random() < duplication]
    rng.shuffle(out)
    return out


def chaos_copy(
    src: Sequence[str | Path],
    dst: Path,
    seed: int = 0,
    files: int = 8,
    duplication: float = 0.5,
    fmt: str | None = None,
) -> list[Path]:
    """Copy the CDC v2 files under ``src`` to ``dst`` with seeded chaos, in the same format."""
    source = open_source(src, fmt)
    messages = list(source.messages())
    rng = random.Random(seed)
    mangled = mangle(messages, rng, duplication)
    assign = [rng.randrange(files) for _ in mangled]
    return write_messages(dst, mangled, source.format, source.columns, files, assign, "chaos")
