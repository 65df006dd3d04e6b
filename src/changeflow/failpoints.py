"""Named points at which a test can make the process die, to prove that crashes lose nothing,
or run a function of its own, to force an interleaving of threads deterministically.

Set ``CHANGEFLOW_FAILPOINT`` to a point's name and the process exits at once when it reaches
that point: no cleanup, no flushing, as if it were killed. Set ``CHANGEFLOW_FAILPOINT_HANG``
to a point's name and each thread that reaches it waits there for good (as a statement stuck
on a store that stopped answering), after a line on stderr saying so: what must end anyway,
a server's stop, is tested with it. Within a process, :func:`hooked` runs a function each
time a point is reached (what another thread could do just there).
"""

import os
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager

ENV = "CHANGEFLOW_FAILPOINT"
HANG = "CHANGEFLOW_FAILPOINT_HANG"
EXIT_CODE = 86
_HOOKS: dict[str, Callable[[], None]] = {}


def failpoint(name: str) -> None:
    """Die here if ``CHANGEFLOW_FAILPOINT`` names this point; run its hook if one is set."""
    if os.environ.get(ENV) == name:
        os._exit(EXIT_CODE)
    if os.environ.get(HANG) == name:
        print(f"failpoint {name}: waiting for good", file=sys.stderr, flush=True)
        threading.Event().wait()
    hook = _HOOKS.get(name)
    if hook is not None:
        hook()


@contextmanager
def hooked(name: str, hook: Callable[[], None]) -> Iterator[None]:
    """Run ``hook`` whenever point ``name`` is reached, while the context lasts."""
    _HOOKS[name] = hook
    try:
        yield
    finally:
        _HOOKS.pop(name, None)
