"""``localeval view``: every page answers, the runs' and the samples' filters keep what they
say, hostile text from a run (subjects, questions, a model's name, a folder's name, a server's
error) is shown as text on every page, and the app only reads: other methods are refused, a
foreign Host header is refused, the store is opened on a connection that cannot write and is
left byte for byte as it was. The same pages in Chromium: tests/test_viewer_chromium.py."""

from __future__ import annotations

import json
import re
import socket
import threading
from datetime import date, timedelta
from html import unescape

import pytest
from starlette.testclient import TestClient
from viewer_runs import IMG, SCRIPT, make_runs

from localeval.cli import main
from localeval.store.database import StoreError, opened
from localeval.store.results_db import SCHEMA, folder_id
from localeval.web.app import make_app, make_server
from localeval.web.catalog import Catalog


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    return make_runs(tmp_path_factory.mktemp("viewer"))


@pytest.fixture(scope="module")
def client(runs):
    catalog = Catalog(runs["store"], [runs["loose"].parent])
    client = TestClient(make_app(catalog), base_url="http://127.0.0.1")
    client.store_before = runs["store"].read_bytes()  # before the viewer read it at all
    client.files_before = _files(runs)
    return client


def _files(runs) -> dict[str, int]:
    """Every file under the runs' folder with its size, but SQLite's -wal and -shm (a reader of
    a store in WAL mode opens them)."""
    root = runs["store"].parent
    return {str(p.relative_to(root)): p.stat().st_size for p in root.rglob("*")
            if p.is_file() and not p.name.endswith(("-wal", "-shm"))}


def _ids(runs) -> dict[str, str]:
    return {name: folder_id(folder) for name, folder in runs.items() if name != "store"}


def _count(text: str) -> int:
    return int(re.search(r'class="count" data-matching="(\d+)"', text).group(1))


def _samples(folder) -> list[dict]:
    return [json.loads(line) for line in (folder / "samples.jsonl").read_text().splitlines()]


def _pages(runs) -> list[str]:
    ids = _ids(runs)
    return ["/", "/leaderboard", "/leaderboard?task=my-exam",
            "/leaderboard?task=sea-safeguard&any_protocol=1", "/compare",
            f"/compare?a={ids['mcq']}&b={ids['mcq_b']}",
            f"/compare?a={ids['safety']}&b={ids['safety']}",
            *(f"/runs/{i}/{what}" for i in ids.values() for what in ("report", "samples"))]


@pytest.fixture(scope="module")
def pages(runs, client) -> dict:
    return {url: client.get(url) for url in _pages(runs)}


def test_every_page_answers(runs, client, pages):
    for url, response in pages.items():
        assert response.status_code == 200, (url, response.text[-400:])
        assert "default-src 'none'" in response.headers["content-security-policy"]
    listed = client.get("/").text
    for rid in _ids(runs).values():  # the loose run is found by scanning its folder
        assert f'data-run="{rid}"' in listed
    assert client.get("/assets/viewer.css").headers["content-type"].startswith("text/css")


def test_hostile_text_is_text_on_every_page(pages):
    shown = ""
    for url, response in pages.items():
        text = response.text
        assert SCRIPT not in text and "<img" not in text, url
        if "/report" not in url:  # the viewer's own pages hold no script at all
            assert "<script" not in text, url
        shown += unescape(text)
    assert SCRIPT in shown and IMG in shown  # escaped, so shown as it was written


def test_the_report_runs_only_its_own_script(runs, pages):
    response = pages[f"/runs/{_ids(runs)['mcq']}/report"]
    policy = response.headers["content-security-policy"]
    scripts = re.findall(r"<script>(.*?)</script>", response.text, re.S)
    assert len(scripts) == 1 and policy.count("'sha256-") == 1
    assert "unsafe-inline" not in policy.split("script-src")[1].split(";")[0]


def test_runs_filters(runs, client):
    every = _count(client.get("/").text)
    assert every == 4
    assert _count(client.get("/?task=sea-safeguard").text) == 1
    assert _count(client.get("/?model=ORG/OTHER").text) == 1
    assert _count(client.get("/?protocol=shots+0").text) == 3  # the multiple-choice runs
    assert _count(client.get("/?protocol=subsets+general&task=my-exam").text) == 0
    today = date.today()
    assert _count(client.get(f"/?since={today - timedelta(days=1)}").text) == every
    assert _count(client.get(f"/?until={today - timedelta(days=1)}").text) == 0
    assert client.get("/?since=yesterday").status_code == 400


def test_sample_filters(runs, client):
    ids, safety = _ids(runs), _samples(runs["safety"])
    url = f"/runs/{ids['safety']}/samples"
    assert _count(client.get(url).text) == len(safety)
    for lang in ("th", "vi"):
        assert _count(client.get(f"{url}?lang={lang}").text) == \
            sum(s["lang"] == lang for s in safety) > 0
    subset = safety[0]["subset"]
    assert _count(client.get(f"{url}?lang=th&subset={subset}").text) == \
        sum(s["lang"] == "th" and s["subset"] == subset for s in safety) > 0
    mcq = _samples(runs["mcq"])
    url = f"/runs/{ids['mcq']}/samples"
    right, wrong = (_count(client.get(f"{url}?correct={v}").text) for v in ("yes", "no"))
    assert right == sum(s.get("correct") is True for s in mcq) > 0
    assert wrong == sum(s.get("correct") is False for s in mcq) > 0
    failed = client.get(f"{url}?failed=yes").text
    assert _count(failed) == sum(bool(s.get("error")) for s in mcq) == 1
    assert "please fail" in failed and "HTTP 500: &lt;script&gt;" in failed
    assert _count(client.get(f"{url}?q=physics").text) == 3
    assert _count(client.get(f"{url}?q=physics+Q2").text) == 1


def test_bad_queries_are_one_line(runs, client):
    ids = _ids(runs)
    for url, status, says in [
            (f"/runs/{ids['mcq']}/samples?lang=th", 400, "no such filter"),
            (f"/runs/{ids['mcq']}/samples?correct=maybe", 400, "no sample has it"),
            (f"/runs/{ids['mcq']}/samples?page=9", 400, "there are pages 1 to 1"),
            # issue 48 item 9: "²".isdigit() was HTTP 500; "٣" page 3, 9999-99-99 a date
            (f"/runs/{ids['mcq']}/samples?page=²", 400, "there are pages 1 to 1"),
            (f"/runs/{ids['mcq']}/samples?page=١", 400, "there are pages 1 to 1"),
            (f"/runs/{ids['mcq']}/samples?page={'9' * 5000}", 400, "there are pages 1 to 1"),
            ("/?since=9999-99-99", 400, "a date is YYYY-MM-DD"),
            ("/?until=2026-02-30", 400, "a date is YYYY-MM-DD"),
            ("/?since=٢٠٢٦-٠١-٠١", 400, "a date is YYYY-MM-DD"),
            ("/runs/0123456789abcdef/report", 404, "no run '0123456789abcdef'"),
            ("/leaderboard?task=nope", 404, "no recorded run of it"),
            ("/leaderboard?task=my-exam&reference=ffffffff", 400, "reference run ffffffff"),
            (f"/compare?a={ids['mcq']}&b={ids['safety']}", 422, "same kind"),
            ("/no/such/page", 404, "no page")]:
        response = client.get(url)
        assert response.status_code == status, url
        assert says in unescape(re.search(r'class="error">(.*?)</p>', response.text).group(1))


def test_the_leaderboard_ranks_the_store_and_the_folders(runs, client):
    text = unescape(client.get("/leaderboard?task=my-exam").text)
    assert "my-exam leaderboard" in text
    assert "org/other" in text and "org/unrecorded" in text and SCRIPT in text
    # issue 51 item 3: the page says which run is the reference, and any run can be picked
    assert "Ranked on the protocol of run " in text and "(the reference)" in text
    picked = _ids(runs)["mcq_b"]
    text = unescape(client.get(f"/leaderboard?task=my-exam&reference={picked}").text)
    assert f"Ranked on the protocol of run {picked[:8]}" in text and "picked" in text


def test_it_only_reads(runs, client, pages):
    ids = _ids(runs)
    for method in ("post", "put", "delete", "patch"):
        for url in ("/", f"/runs/{ids['mcq']}/report", "/no/such/page"):
            response = getattr(client, method)(url)
            assert response.status_code == 405 and response.headers["allow"] == "GET, HEAD"
    assert client.head("/").status_code == 200
    for url in ("/", "/leaderboard?task=my-exam", f"/runs/{ids['loose']}/samples"):
        client.get(url)
    assert runs["store"].read_bytes() == client.store_before
    assert _files(runs) == client.files_before  # no report, figure or cache written
    with pytest.raises(StoreError) as e, opened(runs["store"], SCHEMA, read_only=True) as db:
        db.execute("DELETE FROM runs")  # the connection itself cannot write
    assert "readonly" in str(e.value)


def test_another_host_name_is_refused(client):
    assert client.get("/", headers={"host": "attacker.example"}).status_code == 400
    assert client.get("/", headers={"host": "localhost:7576"}).status_code == 200


def test_it_listens_on_127_0_0_1_only(runs):
    import httpx

    server, sock = make_server(Catalog(runs["store"], []), 0)
    assert sock.getsockname()[0] == "127.0.0.1"
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    try:
        port = sock.getsockname()[1]
        for _ in range(100):
            if server.started:
                break
            threading.Event().wait(0.05)
        assert httpx.get(f"http://127.0.0.1:{port}/").status_code == 200
    finally:
        server.should_exit = True
        thread.join(10)


def test_the_command_line_says_what_is_wrong_in_one_line(runs, tmp_path, capsys):
    assert main(["view", "--store", str(tmp_path / "none.sqlite")]) == 2
    assert capsys.readouterr().err.startswith(f"error: {tmp_path / 'none.sqlite'}: no such "
                                              "results store")
    assert main(["view", "--port", "70000", "--store", str(runs["store"])]) == 2
    assert "a port is 0 to 65535" in capsys.readouterr().err
    assert main(["view", "--runs", str(tmp_path / "nowhere")]) == 2
    assert "--runs" in capsys.readouterr().err
    taken = socket.socket()
    taken.bind(("127.0.0.1", 0))
    taken.listen()
    try:
        port = taken.getsockname()[1]
        assert main(["view", "--port", str(port), "--store", str(runs["store"])]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and f"cannot listen on 127.0.0.1:{port}" in err
    finally:
        taken.close()


def test_the_command_serves_until_stopped(runs):
    """`localeval view` as a user starts it: it says where it listens, answers there, and
    Ctrl-C (SIGINT) or SIGTERM stops it with exit 0 and one line (no "rerun to resume")."""
    import os
    import signal
    import subprocess
    import sys
    from pathlib import Path

    import httpx
    from child_signals import default_stop_signals

    src = str(Path(__file__).resolve().parents[1] / "src")
    env = {**os.environ, "PYTHONPATH": src + os.pathsep + os.environ.get("PYTHONPATH", "")}
    for stop in (signal.SIGINT, signal.SIGTERM):
        server = subprocess.Popen(
            [sys.executable, "-m", "localeval.cli", "view", "--port", "0", "--store",
             str(runs["store"])], stderr=subprocess.PIPE, text=True, env=env,
            preexec_fn=default_stop_signals)
        try:
            first = server.stderr.readline()
            url = re.search(r"http://127\.0\.0\.1:\d+/", first).group(0)
            assert _count(httpx.get(url, timeout=30).text) == 3
        finally:
            server.send_signal(stop)
            _, err = server.communicate(timeout=30)
        assert server.returncode == 0 and err == "localeval view: stopped\n", (stop, err)


def test_a_pipe_in_a_run_folder_holds_up_nothing(tmp_path):
    """Issue 48 item 9: before, a named pipe (FIFO) as a recorded run's samples.jsonl had the
    catalog wait for a writer while holding its lock: every report and samples page of every
    run timed out, and the viewer then ignored SIGTERM and SIGINT. Now that page is one line,
    the others answer, and SIGTERM stops it."""
    import os
    import signal
    import subprocess
    import sys
    from pathlib import Path

    import httpx
    from child_signals import default_stop_signals

    runs = make_runs(tmp_path)
    piped = runs["mcq_b"] / "samples.jsonl"
    piped.unlink()
    os.mkfifo(piped)
    src = str(Path(__file__).resolve().parents[1] / "src")
    env = {**os.environ, "PYTHONPATH": src + os.pathsep + os.environ.get("PYTHONPATH", "")}
    server = subprocess.Popen(
        [sys.executable, "-m", "localeval.cli", "view", "--port", "0", "--store",
         str(runs["store"])], stderr=subprocess.PIPE, text=True, env=env,
        preexec_fn=default_stop_signals)
    try:
        url = re.search(r"http://127\.0\.0\.1:\d+/", server.stderr.readline()).group(0)
        ids = _ids(runs)
        pages = {f"runs/{ids['mcq_b']}/samples": 422, f"runs/{ids['mcq_b']}/report": 422,
                 f"runs/{ids['mcq']}/report": 200, f"runs/{ids['mcq']}/samples": 200}
        for page, status in pages.items():
            try:
                response = httpx.get(url + page, timeout=20)
            except httpx.TimeoutException:
                pytest.fail(f"{page} timed out")
            assert response.status_code == status, page
            assert ("samples.jsonl: not a plain file" in unescape(response.text)) == \
                (status == 422), page
        server.send_signal(signal.SIGTERM)
        _, err = server.communicate(timeout=30)
        assert server.returncode == 0 and err == "localeval view: stopped\n", err
    finally:
        if server.poll() is None:
            server.kill()
            server.communicate()


def test_a_run_recorded_elsewhere_is_listed_and_says_where_its_folder_is(runs, tmp_path):
    from dataclasses import replace

    from localeval.store.results_db import record_run
    from localeval.store.runs import load_run
    from localeval.views.registry import protocol_facts, view_for

    record = replace(load_run(runs["mcq_b"]), folder=tmp_path / "on-a-teammates-machine")
    store = tmp_path / "team.sqlite"
    record_run(record, view_for(record.results).store_metrics(record.results), store,
               protocol_of=protocol_facts)
    client = TestClient(make_app(Catalog(store, [])), base_url="http://127.0.0.1")
    rid = folder_id(record.folder)
    assert f'data-run="{rid}"' in client.get("/").text
    assert client.get("/leaderboard?task=my-exam").status_code == 200
    for what in ("report", "samples"):
        response = client.get(f"/runs/{rid}/{what}")
        assert response.status_code == 404
        assert "which is not on this machine" in response.text


def test_a_hand_edited_store_value_is_a_page_saying_so_not_a_500(runs, tmp_path):
    """Issue 48 item 4: a metric edited to 'abc' in the store was HTTP 500 on the leaderboard."""
    import sqlite3
    from dataclasses import replace

    from localeval.store.results_db import record_run
    from localeval.store.runs import load_run
    from localeval.views.registry import protocol_facts, view_for

    record = replace(load_run(runs["mcq_b"]), folder=tmp_path / "edited")
    store = tmp_path / "edited.sqlite"
    record_run(record, view_for(record.results).store_metrics(record.results), store,
               protocol_of=protocol_facts)
    with sqlite3.connect(store) as db:
        db.execute("UPDATE metrics SET value = 'abc' WHERE name = 'micro'")
    client = TestClient(make_app(Catalog(store, [])), base_url="http://127.0.0.1")
    response = client.get("/leaderboard?task=my-exam")
    assert response.status_code == 422
    assert "metric micro is 'abc', not a number from 0 to 1" in unescape(response.text)


# ------------------------------------------- issue 63 item 9: the store read as the leaderboard
def _edited_store(runs, tmp_path, *edits: tuple[str, tuple]):
    """A copy of the runs' store with ``edits`` (SQL, parameters) applied, as by hand."""
    import sqlite3

    store = tmp_path / "edited.sqlite"
    with sqlite3.connect(runs["store"]) as source, sqlite3.connect(store) as copy:
        source.backup(copy)
        for sql, params in edits:
            copy.execute(sql, params)
    return store


def _row(text: str, run_id: str) -> str:
    return unescape(re.search(rf'<tr data-run="{run_id}">.*?</tr>', text, re.S).group(0))


@pytest.mark.parametrize("value, refused", [(-5.0, "-500.00"), (1.5, "150.00"),
                                            (float("inf"), "inf"), ("abc", None)])
def test_a_hand_edited_metric_is_refused_on_the_runs_page_as_on_the_leaderboard(
        runs, tmp_path, value, refused):
    """Before: the runs page showed "micro -500.00", "150.00" and "inf", which the leaderboard
    refuses, and a text ('abc') was HTTP 500 (``catalog.headline_metric``). Now the cell says
    what the leaderboard says, and the page answers."""
    run_id = _ids(runs)["mcq"]
    store = _edited_store(runs, tmp_path, ("UPDATE metrics SET value = ? WHERE run_id = ? AND "
                                           "name = 'micro'", (value, run_id)))
    client = TestClient(make_app(Catalog(store, [])), base_url="http://127.0.0.1")
    page = client.get("/")
    assert page.status_code == 200, page.text
    row = _row(page.text, run_id)
    assert f"micro is {value!r}, not a number from 0 to 1" in row, row
    assert refused is None or f"micro {refused}" not in row
    board = client.get("/leaderboard?task=my-exam")
    assert board.status_code == 422
    assert f"metric micro is {value!r}, not a number from 0 to 1" in unescape(board.text)


@pytest.mark.parametrize("value", [-3, "abc", 2.5])
def test_a_hand_edited_summary_row_is_not_shown_as_written(runs, tmp_path, value):
    """A summary's count of items edited by hand (negative, a text, a fraction) was shown as
    written; now the cell says what is wrong with the store's value."""
    run_id = _ids(runs)["mcq"]
    store = _edited_store(runs, tmp_path, ("UPDATE run_summary SET n_samples = ? WHERE "
                                           "run_id = ?", (value, run_id)))
    page = TestClient(make_app(Catalog(store, [])), base_url="http://127.0.0.1").get("/")
    assert page.status_code == 200
    row = _row(page.text, run_id)
    assert f"n_samples {value!r} is not a count" in row, row


@pytest.mark.parametrize("path", ["/", "/leaderboard?task=my-exam"])
@pytest.mark.parametrize("page", ["1000000000000000000", "9" * 5000, "1000001"])
def test_a_page_number_out_of_bounds_is_one_line_not_a_500(client, path, page):
    """``/?page=1000000000000000000`` was HTTP 500 (OverflowError: the OFFSET past SQLite's
    integers; 5000 digits past Python's int conversion)."""
    response = client.get(path, params={"page": page})
    assert response.status_code == 400, response.text[-300:]
    assert "a page is a number from 1 to 1000000" in response.text


def test_the_report_page_has_the_viewers_bar(runs, pages):
    """Issue 69: the report page's links were a plain strip, unlike every other page's bar."""
    rid = _ids(runs)["mcq"]
    text = pages[f"/runs/{rid}/report"].text
    bar = re.search(r'<header class="viewer-bar">(.*?)</header>', text, re.S)
    assert bar, text[:500]
    links = re.findall(r'<a href="([^"]+)">', bar.group(1))
    assert links == ["/", "/leaderboard", "/compare", f"/runs/{rid}/samples"]
    assert "header.viewer-bar{" in text
