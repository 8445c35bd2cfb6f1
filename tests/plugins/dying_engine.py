"""`dying` (tests only): its process dies as it starts, as a sweep job's Ray worker lost to an OOM kill or a node
failure; each death appends the process id to the `pid_log` file first.

Known to the test process by `ENGINES.add_lazy("dying", "tests.plugins.dying_engine")`, and to the Ray workers of
tests/conftest.py's `ray_cluster` by the entry point of tests/plugins/fleet_site (on their PYTHONPATH).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import NoReturn

from reasoneval.engines.base import Capabilities, CommonOptions, option

CAPABILITIES = Capabilities()


@dataclass(frozen=True)
class Options:
    pid_log: str = option("", "a file each death appends its process id to")


def create(common: CommonOptions, options: Options) -> NoReturn:
    with open(options.pid_log, "a", encoding="utf-8") as f:
        f.write(f"{os.getpid()}\n")
    os._exit(1)
