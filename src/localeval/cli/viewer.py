"""``localeval view``: the local web app over the results store and run folders
(:mod:`localeval.web`). Thin: checks its options and serves."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import LocalevalError
from .results import STORE_DEFAULT, store_flag

if TYPE_CHECKING:
    from .parsers import Commands

DEFAULT_PORT = 7576


def add_view_parser(sub: Commands) -> None:
    v = sub.add_parser("view", help="a local, read-only web app over the results store and run "
                       "folders: runs, leaderboards, reports, samples, two runs compared")
    v.add_argument("--port", type=int, default=DEFAULT_PORT, metavar="N",
                   help="the port on 127.0.0.1 (0: any free one)")
    store_flag(v, f"the results store to show: a SQLite file or a postgresql:// URL "
               f"{STORE_DEFAULT}; opened read-only")
    v.add_argument("--runs", action="append", default=[], metavar="DIR",
                   help="also show the finished run folders under DIR (runs made with "
                   "--no-store too); repeatable")
    v.set_defaults(func=cmd_view)


def cmd_view(args: argparse.Namespace) -> None:
    try:
        import starlette  # noqa: F401
        import uvicorn  # noqa: F401
    except ImportError:
        raise LocalevalError("localeval view needs starlette and uvicorn: pip install "
                             "'localeval[view]'") from None
    from ..store.results_db import store_path
    from ..web.app import serve
    from ..web.catalog import Catalog

    if not 0 <= args.port <= 65535:
        raise LocalevalError(f"--port {args.port}: a port is 0 to 65535")
    roots = [Path(r) for r in args.runs]
    for root in roots:
        if not root.is_dir():
            raise LocalevalError(f"--runs {root}: no such folder")
    target = store_path(args.store)
    use_store = not isinstance(target, Path) or target.is_file()
    if not use_store and (args.store or not roots):
        raise LocalevalError(f"{target}: no such results store (finished runs are recorded "
                             "there; --store PATH|URL names another, --runs DIR shows folders)")
    catalog = Catalog(args.store, roots, use_store)
    catalog.runs()  # a store that cannot be read is one line now, not on the first page

    def ready(port: int) -> None:
        print(f"localeval view: http://127.0.0.1:{port}/ ({catalog.label()}); Ctrl-C stops",
              file=sys.stderr, flush=True)

    try:
        serve(catalog, args.port, ready)
    except KeyboardInterrupt:  # Ctrl-C, SIGTERM: the usual way a server stops; nothing to resume
        print("localeval view: stopped", file=sys.stderr)
