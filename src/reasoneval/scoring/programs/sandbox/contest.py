"""The contest programs' trusted driver (stdio_driver.py), read as text: it runs inside the sandbox with
`python -I -c` and is never imported here."""

from __future__ import annotations

from pathlib import Path

STDIO_DRIVER_SOURCE = (Path(__file__).parent / "stdio_driver.py").read_text(encoding="utf-8")
