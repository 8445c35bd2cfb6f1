"""The trusted drivers' texts, as they run inside the sandbox with `python -I -c` (never imported there): each
driver file with its `# <prelude>` ... `# </prelude>` import block replaced by prelude.py's own text."""

from __future__ import annotations

import re
from pathlib import Path

HERE = Path(__file__).parent
_PRELUDE_BLOCK = re.compile(r"^# <prelude>.*?^# </prelude>\n", re.DOTALL | re.MULTILINE)
_PACKAGE_IMPORT = re.compile(r"^\s*(from|import)\s+reasoneval\b", re.MULTILINE)


def with_prelude(text: str, name: str = "driver") -> str:
    """A driver's text with prelude.py's text in place of its `# <prelude>` import block (a driver from before the
    prelude, which has none, is returned as it is)."""
    if "# <prelude>" not in text:
        return text
    prelude = (HERE / "prelude.py").read_text(encoding="utf-8")
    source, count = _PRELUDE_BLOCK.subn(lambda _: prelude, text)
    if count != 1:
        raise RuntimeError(f"{name}: expected one `# <prelude>` ... `# </prelude>` block, found {count}")
    if _PACKAGE_IMPORT.search(source):
        raise RuntimeError(f"{name}: the driver's text imports the reasoneval package, which the sandbox lacks")
    return source


def driver_source(filename: str) -> str:
    """The text of driver `filename` (in this folder) as it runs in the sandbox."""
    text = (HERE / filename).read_text(encoding="utf-8")
    if "# <prelude>" not in text:
        raise RuntimeError(f"{filename}: no `# <prelude>` block")
    return with_prelude(text, filename)


DRIVER_SOURCE = driver_source("driver.py")
STDIO_DRIVER_SOURCE = driver_source("stdio_driver.py")
