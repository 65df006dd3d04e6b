"""What every command shares: one line for any changeflow error, exit 130 on Ctrl-C."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from changeflow import errors
from changeflow.cli.common import INTERRUPTED, friendly
from changeflow.time import Antichain


def failing(error: BaseException) -> click.Command:
    @click.command()
    @friendly
    def command() -> None:
        raise error

    return command


@pytest.mark.parametrize(
    "error, line",
    [
        (
            errors.InvalidInput("bad value\n  in column 'a'\n\nfix it"),
            "bad value in column 'a' fix it",
        ),
        (
            errors.UpperMismatch("orders", Antichain([3]), Antichain([5])),
            "orders: upper mismatch: expected Antichain([3]), current Antichain([5])",
        ),
        (errors.Timeout("waited 5 s for the upper", seconds=5), "waited 5 s for the upper"),
        (errors.from_wire(errors.StoreMismatch("foreign\nstore").to_wire()), "foreign store"),
    ],
)
def test_any_changeflow_error_is_one_line_and_exit_1(error: Exception, line: str) -> None:
    result = CliRunner().invoke(failing(error))
    assert result.exit_code == 1
    assert result.output == f"error: {line}\n"


def test_ctrl_c_exits_130_without_a_traceback() -> None:
    result = CliRunner().invoke(failing(KeyboardInterrupt()))
    assert (result.exit_code, result.output) == (INTERRUPTED, "stopped (Ctrl-C)\n")


def test_sigint_stops_a_running_demo_with_130(tmp_path: Path) -> None:
    home = tmp_path / "home"
    command = [sys.executable, "-m", "changeflow.cli", "demo", "--home", str(home)]
    # A history so long that the demo is still generating it when the signal comes.
    process = subprocess.Popen(
        [*command, "--ticks", "1000000"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    deadline = time.monotonic() + 60
    while not home.exists() and process.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    time.sleep(0.5)
    os.kill(process.pid, signal.SIGINT)
    out, err = process.communicate(timeout=60)
    assert process.returncode == INTERRUPTED, (out, err)
    assert "Traceback" not in out + err and err.strip().endswith("stopped (Ctrl-C)")
