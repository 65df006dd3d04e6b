"""Work a dataflow finishes after it answers: a hydration's output is written (the view reads
at its as_of) before its arrangements are, which a thread then writes while the caller goes on;
the next step waits for them. Threads share the Spark session (``session_conf`` keeps their
settings apart)."""

from __future__ import annotations

import threading
from collections.abc import Callable

from changeflow.spark import spark_errors


class Background:
    """``work`` run in a thread (none when ``work`` is None); :meth:`wait` joins it and raises
    what it raised, at every call: a dataflow whose arrangements failed does not step on."""

    def __init__(self, work: Callable[[], None] | None = None, where: str = "") -> None:
        self.error: BaseException | None = None
        self.thread: threading.Thread | None = None
        if work is not None:
            self.thread = threading.Thread(target=self._run, args=(work, where), daemon=True)
            self.thread.start()

    def _run(self, work: Callable[[], None], where: str) -> None:
        try:
            with spark_errors(where):
                work()
        except BaseException as error:  # raised to the caller of wait()
            self.error = error

    def wait(self) -> None:
        if self.thread is not None:
            self.thread.join()
        if self.error is not None:
            raise self.error
