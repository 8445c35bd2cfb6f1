"""`reasoneval view`'s web server (aiohttp): read-only pages over a results folder.

Safe by default: it binds 127.0.0.1 and then answers only requests addressed to a loopback name (a page elsewhere
cannot reach it through DNS rebinding); on any other address every request needs the token printed at start (in the
URL once, then a same-site cookie, or `Authorization: Bearer TOKEN`). Only GET and HEAD are served, paths outside
the results folder are refused, and nothing is written into the folder. Blocking work (scanning the folder,
reading a journal, grading a running run's finished problems) runs in threads, off the event loop.
"""

from __future__ import annotations

import asyncio
import hmac
import ipaddress
import json
import logging
import secrets
import socket
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Awaitable, Callable

from aiohttp import web

from reasoneval.errors import UserError
from reasoneval.results.store.sample_store import read_lock
from reasoneval.view import pages
from reasoneval.view.folder import COMPLETE, INCOMPLETE, RUNNING, Folder, Run
from reasoneval.view.live import Interim, Journal

log = logging.getLogger("reasoneval")

COOKIE = "reasoneval_view"
INTERIM_EVERY_S = 5.0  # a running run's interim figures are graded again at most this often
TYPES = {".html": "text/html", ".js": "text/javascript", ".json": "application/json", ".png": "image/png"}


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


@dataclass
class _Live:
    journal: Journal
    interim: Interim
    figures: dict[str, Any] = field(default_factory=dict)
    graded_at: float = 0.0
    busy: threading.Lock = field(default_factory=threading.Lock)


class Viewer:
    """The state behind the pages: the folder's runs, and the journals of the runs followed live."""

    def __init__(self, root: Path) -> None:
        self.folder = Folder(root)
        self._lock = threading.Lock()
        self._live: dict[Path, _Live] = {}

    def runs(self) -> list[Run]:
        with self._lock:
            return self.folder.runs()

    def run(self, rel: str) -> Run:
        with self._lock:
            return self.folder.run_at(rel)

    def run_state(self, run: Run) -> dict[str, Any]:
        """A run's page data: its progress from the journal while it is not finished (a finished run's page reads
        only its summary), the interim figures, the headline."""
        if run.status in (COMPLETE, INCOMPLETE) and run.result is not None:
            self._live.pop(run.dir, None)
            return pages.run_payload(run, None, None)
        drawing = None
        if run.status == RUNNING:  # count against what the running command draws
            said = read_lock(run.dir)
            if said is None:
                # It holds the lock but has not written its record yet (the file is empty, or torn): starting.
                # Counted against config.json meanwhile, a K extension from 2 to 6 read "6 of 6" (CI, under load).
                return pages.run_payload(run, None, None)
            drawing = said[1]
        with self._lock:
            live = self._live.get(run.dir)
            if live is None or live.journal.config != run.config or live.journal.drawing != drawing:
                live = self._live[run.dir] = _Live(Journal(run.dir, run.config, drawing), Interim(run.dir, run.config))
        live.journal.update()
        progress = live.journal.progress()
        # An adaptive run (--target-se) has no fixed K: "all its samples in" is known only at its end, so no interim.
        if run.config.adaptive is None and time.monotonic() - live.graded_at >= INTERIM_EVERY_S \
                and live.busy.acquire(blocking=False):
            try:
                ks = {t["task"]: t["k"] for t in progress["tasks"]}
                live.figures = live.interim.update(live.journal.complete_problems(), ks)
            except Exception as e:  # a scorer that cannot start here: the page shows progress without figures
                log.warning("view: interim figures of %s: %s", run.dir, e)
            finally:
                live.graded_at = time.monotonic()
                live.busy.release()
        return pages.run_payload(run, progress, live.figures)


def _token_of(request: web.Request) -> str | None:
    auth = request.headers.get("Authorization", "")
    if auth.startswith("Bearer "):
        return auth[len("Bearer "):].strip()
    return request.query.get("token") or request.cookies.get(COOKIE)


def make_app(root: Path, *, token: str | None = None, loopback: bool = True) -> web.Application:
    """The application over results folder `root`. token: required on every request (non-loopback binds);
    loopback: answer only requests whose Host is a loopback name."""
    viewer = Viewer(root)

    @web.middleware
    async def guard(request: web.Request, handler: Callable[[web.Request], Awaitable[web.StreamResponse]]
                    ) -> web.StreamResponse:
        if request.method not in ("GET", "HEAD"):
            return web.Response(status=405, text="reasoneval view is read-only\n")
        try:
            host = request.url.host or ""
        except ValueError:
            host = ""
        if loopback and not is_loopback(host):
            return web.Response(status=403, text="refused: this server answers only requests to 127.0.0.1 / "
                                                 "localhost\n")
        given = _token_of(request)
        if token is not None and not (given and hmac.compare_digest(given.encode(), token.encode())):
            return web.Response(status=401, text="refused: this server needs its token (printed when it started): "
                                                 "open the URL it printed, with ?token=...\n")
        try:
            response = await handler(request)
        except UserError as e:
            response = web.Response(status=403 if str(e).startswith("refused") else 404, text=f"{e}\n")
        response.headers.setdefault("Content-Security-Policy", "default-src 'none'; frame-ancestors 'none'")
        response.headers["X-Content-Type-Options"] = "nosniff"
        response.headers["Referrer-Policy"] = "no-referrer"
        response.headers["Cache-Control"] = "no-store"
        if token is not None and request.query.get("token") and request.cookies.get(COOKIE) != token:
            response.set_cookie(COOKIE, token, httponly=True, samesite="Strict")
        return response

    def html(text: str, nonce: str) -> web.Response:
        """A page rendered with a fresh script nonce, and the policy that lets only that nonce's scripts run."""
        response = web.Response(text=text, content_type="text/html", charset="utf-8")
        response.headers["Content-Security-Policy"] = (
            f"default-src 'none'; script-src 'nonce-{nonce}'; style-src 'unsafe-inline'; img-src 'self' data:; "
            "connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'")
        return response

    def payload(obj: Any) -> web.Response:
        return web.Response(text=json.dumps(obj, ensure_ascii=False, default=str), content_type="application/json")

    async def index(request: web.Request) -> web.Response:
        runs = await asyncio.to_thread(viewer.runs)
        nonce = secrets.token_urlsafe(16)
        return html(pages.index_page(pages.runs_payload(runs), str(viewer.folder.root), nonce), nonce)

    async def api_runs(request: web.Request) -> web.Response:
        runs = await asyncio.to_thread(viewer.runs)
        return payload(pages.runs_payload(runs))

    async def run_page(request: web.Request) -> web.Response:
        run = await asyncio.to_thread(viewer.run, request.match_info["rel"])
        state = await asyncio.to_thread(viewer.run_state, run)
        nonce = secrets.token_urlsafe(16)
        return html(pages.run_page(run, state, nonce), nonce)

    async def api_run(request: web.Request) -> web.Response:
        run = await asyncio.to_thread(viewer.run, request.match_info["rel"])
        return payload(await asyncio.to_thread(viewer.run_state, run))

    async def training(request: web.Request) -> web.Response:
        groups = pages.training_runs(await asyncio.to_thread(viewer.runs))
        name = request.query.get("name")
        nonce = secrets.token_urlsafe(16)
        if name is None:
            return html(pages.training_index(groups, nonce), nonce)
        if name not in groups:
            raise UserError(f"no run of training run {name!r} under the results folder")
        return html(await asyncio.to_thread(pages.training_page, name, groups[name], nonce), nonce)

    async def compare(request: web.Request) -> web.Response:
        a, b = request.query.get("a"), request.query.get("b")
        if a is None or b is None:
            raise UserError("compare needs two runs: /compare?a=RUN&b=RUN (paths under the results folder)")
        ra, rb = await asyncio.to_thread(viewer.run, a), await asyncio.to_thread(viewer.run, b)
        nonce = secrets.token_urlsafe(16)
        return html(await asyncio.to_thread(pages.compare_page, ra, rb, nonce), nonce)

    async def files(request: web.Request) -> web.StreamResponse:
        path = viewer.folder.resolve(request.match_info["rel"])
        if not path.is_file():
            return web.Response(status=404, text="not found\n")
        kind = TYPES.get(path.suffix, "text/plain")
        response = web.FileResponse(path, headers={"Content-Type": f"{kind}; charset=utf-8" if kind != "image/png"
                                                   else kind})
        if path.suffix == ".html":  # report.html: its own inline script and on-demand sidecar scripts
            response.headers["Content-Security-Policy"] = (
                "default-src 'none'; script-src 'self' 'unsafe-inline'; style-src 'unsafe-inline'; img-src 'self' "
                "data:; connect-src 'self'; base-uri 'none'; frame-ancestors 'none'")
        return response

    async def favicon(request: web.Request) -> web.Response:
        return web.Response(status=204)

    app = web.Application(middlewares=[guard])
    app.router.add_get("/favicon.ico", favicon)
    app.router.add_get("/", index)
    app.router.add_get("/api/runs", api_runs)
    app.router.add_get("/run/{rel:.*}", run_page)
    app.router.add_get("/api/run/{rel:.*}", api_run)
    app.router.add_get("/training", training)
    app.router.add_get("/compare", compare)
    app.router.add_get("/files/{rel:.*}", files)
    return app


def serve(root: Path, host: str = "127.0.0.1", port: int = 8765, *, announce: Callable[[str], None] = print,
          ready: threading.Event | None = None, stop: threading.Event | None = None) -> None:
    """Serve the folder until interrupted (or `stop` is set). A host other than loopback gets a fresh token, and the
    URL printed carries it."""
    loopback = is_loopback(host)
    token = None if loopback else secrets.token_urlsafe(24)
    app = make_app(root, token=token, loopback=loopback)
    shown_root = Path(root).resolve()

    async def main() -> None:
        runner = web.AppRunner(app, access_log=None)
        await runner.setup()
        site = web.TCPSite(runner, host, port)
        try:
            await site.start()
        except OSError as e:
            await runner.cleanup()
            raise UserError(f"cannot listen on {host}:{port} ({e.strerror or e}): pick another --port") from None
        bound = port
        server = getattr(site, "_server", None)
        if server is not None and server.sockets:
            bound = server.sockets[0].getsockname()[1]
        shown = host if host not in ("0.0.0.0", "::", "") else socket.gethostname()
        shown = f"[{shown}]" if ":" in shown else shown
        url = f"http://{shown}:{bound}/" + (f"?token={token}" if token else "")
        announce(f"reasoneval view: {shown_root} at {url}" +
                 ("" if loopback else "  (every request needs this token)"))
        if ready is not None:
            ready.set()
        try:
            while stop is None or not stop.is_set():
                await asyncio.sleep(0.2)
        finally:
            await runner.cleanup()

    asyncio.run(main())
