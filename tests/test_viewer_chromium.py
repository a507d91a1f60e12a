"""``localeval view`` in headless Chromium (Debian's, through Playwright; no browser is
downloaded), served by uvicorn on 127.0.0.1 as the command serves it: every page loads with no
console error (a Content-Security-Policy violation is one) and no request to any other host,
a hostile sample text stays text (no dialog opens, no element is injected), and the sample
browser's search and filters work from the page's own form."""

from __future__ import annotations

import threading
from urllib.parse import urlsplit

import pytest
from viewer_runs import IMG, SCRIPT, make_runs

from localeval.store.results_db import folder_id
from localeval.web.app import make_server
from localeval.web.catalog import Catalog

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    runs = make_runs(tmp_path_factory.mktemp("viewer"))
    server, sock = make_server(Catalog(runs["store"], [runs["loose"].parent]), 0)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    for _ in range(200):
        if server.started:
            break
        threading.Event().wait(0.05)
    ids = {name: folder_id(folder) for name, folder in runs.items() if name != "store"}
    yield f"http://127.0.0.1:{sock.getsockname()[1]}", ids
    server.should_exit = True
    thread.join(10)


def _visit(watched, url: str, dialogs: list) -> None:
    page = watched.page
    # a safeguard compare page runs a 1000-resample paired bootstrap: on a loaded machine
    # that outlasts Playwright's 30 s default
    page.goto(url, wait_until="load", timeout=300_000)
    assert page.evaluate("document.querySelectorAll('img').length") == 0, url
    assert page.evaluate("() => window.__pwned === undefined"), url
    assert dialogs == [], url


def test_every_page_in_chromium(served, tmp_path):
    from headless_chromium import open_page, screenshot

    base, ids = served
    urls = ["/", "/leaderboard?task=my-exam", "/leaderboard?task=sea-safeguard",
            f"/compare?a={ids['mcq']}&b={ids['mcq_b']}",
            f"/compare?a={ids['safety']}&b={ids['safety']}",
            *(f"/runs/{i}/{what}" for i in ids.values() for what in ("report", "samples"))]
    with open_page(base + "/", tmp_path / "profile") as watched:
        dialogs: list[str] = []
        watched.page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
        for url in urls:
            _visit(watched, base + url, dialogs)
            if url == "/":
                screenshot(watched.page, "viewer-runs", full_page=True)
        assert watched.console_errors == []
        hosts = {urlsplit(u).netloc for u in watched.requests if not u.startswith("data:")}
        assert hosts == {urlsplit(base).netloc}


def test_hostile_text_stays_text(served, tmp_path):
    from headless_chromium import open_page, screenshot

    base, ids = served
    with open_page(f"{base}/runs/{ids['mcq']}/samples", tmp_path / "profile") as watched:
        page, dialogs = watched.page, []
        page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
        page.evaluate("document.querySelectorAll('details').forEach(d => d.open = true)")
        text = page.evaluate("document.body.textContent")
        assert SCRIPT in text and IMG in text  # shown as written
        assert page.evaluate("document.querySelectorAll('script, img').length") == 0
        # the subject filter offers the hostile subject as a value, and it filters
        page.select_option('select[data-filter="subject"]', f"law {SCRIPT}")
        page.click('form.filters button[type="submit"]')
        page.wait_for_load_state("load")
        assert page.locator(".count").get_attribute("data-matching") == "2"
        page.fill('input[data-role="q"]', "Q1")
        page.click('form.filters button[type="submit"]')
        page.wait_for_load_state("load")
        assert page.locator(".count").get_attribute("data-matching") == "1"
        screenshot(page, "viewer-samples", full_page=True)
        page.goto(f"{base}/runs/{ids['mcq']}/report", wait_until="load")
        page.fill('input[data-role="search"]', "law")  # the report's own browser, its script
        assert int(page.locator(".count").first.get_attribute("data-matching")) == 2
        assert page.evaluate("document.querySelectorAll('img').length") == 0
        assert dialogs == [] and watched.console_errors == []
