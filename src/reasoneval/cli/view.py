"""`reasoneval view [RESULTS_DIR]`: the flags and the command; the server is reasoneval.view.server."""

from __future__ import annotations

import argparse

from reasoneval.run.options import OUTPUT_DIR


def add_view_parser(p: argparse.ArgumentParser) -> None:
    p.epilog = ("examples:\n  reasoneval view results            # http://127.0.0.1:8765/\n"
                "  reasoneval view results --host 0.0.0.0 --port 9000   # prints a URL with its token\n"
                "Read-only; any host but loopback needs the token printed at start on every request.")
    p.add_argument("dir", nargs="?", default=OUTPUT_DIR, metavar="RESULTS_DIR",
                   help=f"the results folder (default: {OUTPUT_DIR})")
    p.add_argument("--host", default="127.0.0.1",
                   help="address to listen on (default 127.0.0.1; any other needs the token printed at start)")
    p.add_argument("--port", type=int, default=8765, help="port (default 8765; 0: a free one)")
    p.set_defaults(func=_cmd_view)


def _cmd_view(a: argparse.Namespace) -> int:
    from pathlib import Path

    from reasoneval.errors import UserError
    from reasoneval.view.server import serve

    if not 0 <= a.port <= 65535:
        raise UserError(f"--port must be 0 to 65535 (0: a free port), got {a.port}")
    try:
        serve(Path(a.dir), a.host, a.port, announce=lambda line: print(line, flush=True))
    except KeyboardInterrupt:
        pass
    return 0
