"""Named points at which a test can make the process die, to prove that crashes lose nothing.

Set ``CHANGEFLOW_FAILPOINT`` to a point's name and the process exits at once when it reaches
that point: no cleanup, no flushing, as if it were killed.
"""

import os

ENV = "CHANGEFLOW_FAILPOINT"
EXIT_CODE = 86


def failpoint(name: str) -> None:
    """Die here if ``CHANGEFLOW_FAILPOINT`` names this point."""
    if os.environ.get(ENV) == name:
        os._exit(EXIT_CODE)
