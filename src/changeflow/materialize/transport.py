"""Transports between the runtime and a driver: in-process (called directly) or a subprocess
speaking the wire form of :mod:`~changeflow.materialize.protocol` on stdin and stdout (a JSON
line per message, followed by Arrow IPC for a batch), so a driver can be written in any language.

A driver that fails sends ``{"error": {"kind": …, "message": …}}`` before it stops; the runtime
raises the same changeflow error.
"""

from __future__ import annotations

import contextlib
import json
import queue
import subprocess
import sys
import threading
from abc import ABC, abstractmethod
from collections import deque
from typing import IO, Any

from changeflow.errors import ChangeflowError, ProtocolViolation, Timeout
from changeflow.materialize.driver import Driver, Runner, serve
from changeflow.materialize.protocol import Message, read_message, to_bytes


class Transport(ABC):
    """The runtime's end: send requests, receive responses."""

    @abstractmethod
    def send(self, message: Message) -> None: ...

    @abstractmethod
    def receive(self, timeout: float | None = None) -> Message:
        """The next response; the driver's own error if it failed; ProtocolViolation if it
        closed the stream; :class:`~changeflow.errors.Timeout` after ``timeout`` seconds."""

    @abstractmethod
    def close(self) -> None: ...


class _Queues:
    """Responses (or the driver's failure) waiting for the runtime."""

    def __init__(self) -> None:
        self.responses: queue.Queue[Any] = queue.Queue()

    def take(self, timeout: float | None, who: str) -> Message:
        try:
            item = self.responses.get(timeout=timeout)
        except queue.Empty:
            raise Timeout(f"{who} did not answer within {timeout} s", seconds=timeout) from None
        if isinstance(item, BaseException):  # the driver failed or exited: say so every time
            self.responses.put(item)
            raise item
        return item


class InProcess(Transport):
    """The driver in this process, called directly: each request is handled as it is sent
    (a driver's error is raised by ``send``), its responses wait for ``receive``."""

    def __init__(self, driver: Driver) -> None:
        self.runner = Runner(driver)
        self.responses: deque[Message] = deque()
        self.closed = False

    def send(self, message: Message) -> None:
        if self.closed:
            raise ProtocolViolation("the driver is closed")
        self.responses.extend(self.runner.handle(message))

    def receive(self, timeout: float | None = None) -> Message:
        if not self.responses:
            raise ProtocolViolation(
                "the driver has no response to give: the runtime is out of step"
            )
        return self.responses.popleft()

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            self.runner.driver.close()


class Subprocess(Transport):
    """A driver process: requests on its stdin, responses on its stdout, one JSON per line."""

    def __init__(self, command: list[str], env: dict[str, str] | None = None) -> None:
        self.command = command
        self.process = subprocess.Popen(
            command,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=env,
        )
        self.out = _Queues()
        self.stderr: list[str] = []
        threading.Thread(target=self._read, daemon=True).start()
        threading.Thread(target=self._drain_stderr, daemon=True).start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        while True:
            try:
                message = read_message(self.process.stdout)
            except ChangeflowError as e:
                self.out.responses.put(e)
                return
            if message is None:
                break
            self.out.responses.put(message)
        self.process.wait()
        tail = "".join(self.stderr[-20:]).strip()
        self.out.responses.put(
            ProtocolViolation(
                f"driver process {self.command[-1]!r} exited ({self.process.returncode})"
                + (f": {tail}" if tail else "")
            )
        )

    def _drain_stderr(self) -> None:
        assert self.process.stderr is not None
        for line in self.process.stderr:
            self.stderr.append(line.decode(errors="replace"))

    def send(self, message: Message) -> None:
        assert self.process.stdin is not None
        try:
            self.process.stdin.write(to_bytes(message))
            self.process.stdin.flush()
        except BrokenPipeError:
            pass  # the process is gone: receive() says why

    def receive(self, timeout: float | None = None) -> Message:
        return self.out.take(timeout, f"driver process {self.command[-1]!r}")

    def close(self) -> None:
        if self.process.stdin and not self.process.stdin.closed:
            with contextlib.suppress(BrokenPipeError):
                self.process.stdin.close()
        try:
            self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.process.kill()


class StdioChannel:
    """The driver's end of :class:`Subprocess`: this process's stdin and stdout."""

    def __init__(
        self, stdin: IO[bytes] = sys.stdin.buffer, stdout: IO[bytes] = sys.stdout.buffer
    ) -> None:
        self.stdin, self.stdout = stdin, stdout

    def receive(self) -> Message | None:
        return read_message(self.stdin)

    def send(self, message: Message) -> None:
        self.stdout.write(to_bytes(message))
        self.stdout.flush()


def serve_stdio(driver: Driver) -> int:
    """Serve ``driver`` on stdin and stdout; a failure is reported as an error line."""
    channel = StdioChannel()
    try:
        serve(driver, channel)
        return 0
    except ChangeflowError as e:
        channel.stdout.write(json.dumps({"error": e.to_wire()}).encode() + b"\n")
        channel.stdout.flush()
        return 1
