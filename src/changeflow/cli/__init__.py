"""The ``changeflow`` command line, one module per command group.

A user's mistake prints one line and exits non-zero; Ctrl-C exits 130.
"""

from __future__ import annotations

import click

from changeflow.cli.cdc import cdc
from changeflow.cli.dataflow import dataflow
from changeflow.cli.demo import demo
from changeflow.cli.materialize import materialize_command
from changeflow.cli.serve import serve
from changeflow.cli.shard import shard
from changeflow.cli.sql import sql_command


@click.group()
@click.version_option(package_name="changeflow")
def main() -> None:
    """changeflow: exact, consistent views of change streams on Spark."""


for command in (demo, cdc, shard, materialize_command, dataflow, sql_command, serve):
    main.add_command(command)
