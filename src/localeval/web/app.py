"""The viewer's Starlette application and its server.

Starlette and uvicorn: the ASGI toolkit and server the Python web ecosystem is built on
(FastAPI is Starlette served by uvicorn), both maintained, small, with no compiled parts
needed, and Starlette's TestClient runs the whole app in a test without a socket. The app
is a handful of GET routes and needs nothing more (no templates engine, no ORM).

Read-only by construction: every method but GET and HEAD is answered 405 before any route
runs, the store is opened on a connection that cannot write, and no route writes a file.
Served on 127.0.0.1 only; a request whose Host header names another host is refused (400),
so a page elsewhere cannot reach the app by pointing a name of its own at 127.0.0.1."""

from __future__ import annotations

import base64
import hashlib
import re
import socket
import threading
from collections.abc import Callable
from datetime import date
from importlib.resources import files
from typing import TYPE_CHECKING

from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.middleware.trustedhost import TrustedHostMiddleware
from starlette.requests import Request
from starlette.responses import HTMLResponse, PlainTextResponse, Response
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send

from ..errors import LocalevalError
from ..render.figures import Figure
from ..report.html import figure_html, render, table_html, two_runs_compared
from ..report.leaderboard import leaderboard_tables
from ..store.results_db import Wanted
from ..store.runs import RunRecord
from ..views.base import distinct_names
from ..views.registry import view_for
from ..words import with_article
from . import pages
from .catalog import KEPT, PAGE, PICKER, Catalog, NotFound
from .samples import BadQuery, browse

if TYPE_CHECKING:  # uvicorn is imported when the server starts
    import uvicorn

HOST = "127.0.0.1"
ALLOWED_HOSTS = ["127.0.0.1", "localhost"]
# The viewer's own pages: no script at all, styles from the app itself (and the style
# attributes of figures and tables), images only inline.
CSP = ("default-src 'none'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; "
       "form-action 'self'; base-uri 'none'; frame-ancestors 'none'")
HEADERS = {"X-Content-Type-Options": "nosniff", "Referrer-Policy": "no-referrer",
           "Cache-Control": "no-store"}
BACKLOG = 128
MAX_PAGE = 1_000_000  # the last page a URL may ask for: 50 million runs, an OFFSET SQL holds
DATE = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}")  # ASCII: \d also takes "٢٠٢٦"
# matplotlib's pyplot (the figures) is not thread-safe, and Starlette runs routes in threads
DRAWING = threading.Lock()


class ReadOnly:
    """ASGI middleware: GET and HEAD pass, every other method is 405, whatever the path."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["method"] not in ("GET", "HEAD"):
            response = PlainTextResponse("localeval view is read-only: GET and HEAD only\n",
                                         405, headers={"Allow": "GET, HEAD", **HEADERS})
            await response(scope, receive, send)
            return
        await self.app(scope, receive, send)


def html(text: str, status: int = 200, csp: str = CSP) -> HTMLResponse:
    return HTMLResponse(text, status, headers={"Content-Security-Policy": csp, **HEADERS})


class Drawn:
    """Pages that draw figures, kept while the runs they show are the same records (the
    catalog reads a run again when its files change): a reload costs nothing."""

    def __init__(self) -> None:
        # by page (its kind and run ids): the records drawn, and the page
        self.kept: dict[tuple[str, ...], tuple[tuple[RunRecord, ...], str]] = {}

    def get(self, key: tuple[str, ...], records: tuple[RunRecord, ...],
            make: Callable[[], str]) -> str:
        with DRAWING:
            kept = self.kept.get(key)
            if kept is None or any(a is not b for a, b in zip(kept[0], records)):
                self.kept.pop(key, None)
                kept = self.kept[key] = (records, make())
                while len(self.kept) > KEPT:  # the page drawn longest ago goes first
                    self.kept.pop(next(iter(self.kept)))
            return kept[1]


def make_app(catalog: Catalog) -> Starlette:
    source = catalog.label()
    drawn = Drawn()

    def page(title: str, body: str, status: int = 200) -> HTMLResponse:
        return html(pages.frame(title, body, source), status)

    def wanted(request: Request) -> Wanted:
        q = request.query_params
        f = Wanted(*(q.get(k, "").strip() for k in ("task", "model", "guard", "protocol",
                                                    "since", "until")))
        for name in ("since", "until"):
            value = getattr(f, name)
            if value and not is_date(value):
                raise BadQuery(f"{name}={value}: a date is YYYY-MM-DD")
        return f

    def page_number(request: Request) -> int:
        text = request.query_params.get("page", "1")
        # bounded before it is a number: 5,000 digits are past Python's int(), and a page
        # past 2**63 / PAGE an OFFSET past SQLite's integers (HTTP 500 both)
        if not text.isascii() or not text.isdigit() or len(text) > len(str(MAX_PAGE)) or \
                not 1 <= int(text) <= MAX_PAGE:
            raise BadQuery(f"page={text[:20]}{'…' if len(text) > 20 else ''}: a page is a "
                           f"number from 1 to {MAX_PAGE}")
        return int(text)

    def runs(request: Request) -> HTMLResponse:
        f, number = wanted(request), page_number(request)
        listing = catalog.listing(f, PAGE, (number - 1) * PAGE)
        return page("Runs", pages.runs_page(listing, f, number, PAGE))

    def board(request: Request) -> HTMLResponse:
        task = request.query_params.get("task", "")
        any_protocol = request.query_params.get("any_protocol") == "1"
        reference = request.query_params.get("reference") or None
        number = page_number(request)
        tasks = catalog.tasks()
        if task and task not in tasks:
            raise NotFound(f"task={task}: no recorded run of it (tasks: {', '.join(tasks)})")
        if not task:
            return page("Leaderboard", pages.leaderboard_page("", tasks, False, "", None))
        try:
            ranked, note = catalog.board(task, any_protocol, reference, PAGE,
                                         (number - 1) * PAGE)
        except LocalevalError as error:
            if reference is None:
                raise
            raise BadQuery(str(error)) from None
        tables = "".join(table_html(t) for t in leaderboard_tables(task, ranked))
        return page(f"{task} leaderboard", pages.leaderboard_page(
            task, tasks, any_protocol, tables, ranked, reference or "", note, number, PAGE))

    def report(request: Request) -> HTMLResponse:
        run_id = request.path_params["run_id"]
        record = catalog.record(run_id)
        text = drawn.get(("report", run_id), (record,), lambda: render([record], None))
        text = text.replace("<body>\n", "<body>\n" + pages.report_bar(run_id), 1)
        return html(text, csp=report_csp(text))

    def samples(request: Request) -> HTMLResponse:
        run_id = request.path_params["run_id"]
        entry, record = catalog.entry(run_id), catalog.record(run_id)
        query = dict(request.query_params)
        shown = browse(record.samples, query)
        return page(f"Samples · {pages.run_label(entry)}",
                    pages.samples_page(entry, shown, query))

    def compare(request: Request) -> HTMLResponse:
        f = wanted(request)
        a, b = (request.query_params.get(k, "") for k in ("a", "b"))
        listing = catalog.listing(f, PICKER)
        chosen = [catalog.entry(i) for i in (a, b) if i and i not in
                  {r["run_id"] for r in listing.runs}]
        content = ""
        if a and b:
            records = (catalog.record(a), catalog.record(b))
            content = drawn.get(("compare", a, b), records, lambda: comparison(*records))
        return page("Two runs compared", pages.compare_page(listing, chosen, f, a, b, content))

    def stylesheet(request: Request) -> Response:
        package = __name__.rpartition(".")[0]  # this module's package: a str (__package__ is str | None)
        text = files(package).joinpath("assets", "viewer.css").read_text(encoding="utf-8")
        return Response(text, media_type="text/css", headers=HEADERS)

    def no_icon(request: Request) -> Response:
        return Response(status_code=204, headers=HEADERS)

    async def refused(request: Request, error: Exception) -> HTMLResponse:
        status = 404 if isinstance(error, NotFound) else 400 if isinstance(error, BadQuery) \
            else 422
        return page("Not shown", pages.message_page(str(error)), status)

    async def missing(request: Request, error: Exception) -> HTMLResponse:
        return page("Not found", pages.message_page(f"no page {request.url.path}"), 404)

    routes = [Route("/", runs), Route("/leaderboard", board), Route("/compare", compare),
              Route("/runs/{run_id:str}/report", report),
              Route("/runs/{run_id:str}/samples", samples),
              Route("/assets/viewer.css", stylesheet), Route("/favicon.ico", no_icon)]
    return Starlette(routes=routes,
                     middleware=[Middleware(ReadOnly),
                                 Middleware(TrustedHostMiddleware, allowed_hosts=ALLOWED_HOSTS)],
                     exception_handlers={LocalevalError: refused, 404: missing})


def is_date(text: str) -> bool:
    """``text`` is a day of the calendar as YYYY-MM-DD (9999-99-99 is not)."""
    try:
        return DATE.fullmatch(text) is not None and bool(date.fromisoformat(text))
    except ValueError:
        return False


def report_csp(text: str) -> str:
    """The report page's policy: its own inline scripts, each by its hash, and nothing else
    (a script injected into the page would not have one)."""
    hashes = " ".join(
        "'sha256-" + base64.b64encode(hashlib.sha256(body.encode()).digest()).decode() + "'"
        for body in re.findall(r"<script>(.*?)</script>", text, re.S))
    return (f"default-src 'none'; script-src {hashes or chr(39) + 'none' + chr(39)}; "
            "style-src 'unsafe-inline'; img-src data:; base-uri 'none'; "
            "form-action 'none'; frame-ancestors 'none'")


def comparison(run_a: RunRecord, run_b: RunRecord) -> str:
    """``localeval compare``'s comparison of runs A and B (figures, tables, notes), then the
    runs side by side (the report's tables and figures of several runs); the caller holds
    DRAWING."""
    view_a, view_b = view_for(run_a.results), view_for(run_b.results)
    if view_a.schema != view_b.schema:
        raise LocalevalError(f"run A is {with_article(view_a.kind)} run and run B "
                             f"{with_article(view_b.kind)} run; "
                             "compare two runs of the same kind")
    if not view_a.compares:
        view_a.compare(run_a, run_b)  # a kind without a comparison says so in one line (422)
    names = distinct_names([run_a, run_b])
    labels = (names[0], names[1])
    parts = two_runs_compared(run_a, run_b, labels, None)
    shown = view_a.side_by_side(list(zip(labels, (run_a.results, run_b.results))), None)
    parts += [figure_html(p) for p in shown if isinstance(p, Figure)]
    parts += [table_html(p) for p in shown if not isinstance(p, Figure)]
    return "\n".join(parts)


def serve(catalog: Catalog, port: int,
          ready: Callable[[int], object] | None = None) -> None:
    """Serve on 127.0.0.1:``port`` until interrupted; ``ready(port)`` once it listens."""
    server, sock = make_server(catalog, port)
    if ready is not None:
        ready(sock.getsockname()[1])
    server.run(sockets=[sock])


def make_server(catalog: Catalog, port: int) -> tuple[uvicorn.Server, socket.socket]:
    """The uvicorn server and its socket, bound here to 127.0.0.1 (``port`` 0: any free one),
    so a port in use is one line before anything starts, and nothing can make the server
    listen elsewhere. ``server.run(sockets=[sock])`` serves; ``server.should_exit`` stops."""
    import uvicorn

    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((HOST, port))
    except OSError as e:
        sock.close()
        raise LocalevalError(f"cannot listen on {HOST}:{port}: {e.strerror}; give another "
                             "--port") from None
    sock.listen(BACKLOG)  # now: a browser opened at once waits in the queue, is not refused
    config = uvicorn.Config(make_app(catalog), log_level="warning", access_log=False)
    return uvicorn.Server(config), sock
