"""Serve a driver on stdin and stdout: ``python -m changeflow.materialize.drivers URL``."""

import sys

from changeflow.errors import ChangeflowError
from changeflow.materialize.drivers import open_driver
from changeflow.materialize.transport import serve_stdio

if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: python -m changeflow.materialize.drivers URL")
    try:
        driver = open_driver(sys.argv[1])
    except ChangeflowError as e:
        sys.exit(f"error: {e}")
    sys.exit(serve_stdio(driver))
