"""``localeval view`` over a team's PostgreSQL store (a real throwaway server): the runs
recorded there are listed, ranked and opened, and the viewer's connection cannot write (the
server refuses it), so the store is neither created nor migrated nor changed."""

from __future__ import annotations

import re

import pytest
from postgres_server import PASSWORD, running_postgres
from starlette.testclient import TestClient
from viewer_runs import Answers, exam

from localeval import evaluate
from localeval.store.database import StoreError, opened
from localeval.store.results_db import SCHEMA, folder_id
from localeval.web.app import make_app
from localeval.web.catalog import Catalog

pytestmark = [pytest.mark.slow, pytest.mark.postgres]


@pytest.fixture(scope="module")
def postgres():
    yield from running_postgres()


def test_the_viewer_reads_a_postgres_store_and_cannot_write_it(postgres, tmp_path):
    data = exam(tmp_path)
    folders = [tmp_path / "a", tmp_path / "b"]
    for folder, letter in zip(folders, "AB"):
        evaluate(task="my-exam", model=Answers(letter, f"org/{letter}"), data=data, shots=0,
                 output=folder, quiet=True, store=postgres.url)
    client = TestClient(make_app(Catalog(postgres.url, [])), base_url="http://127.0.0.1")
    listed = client.get("/").text
    assert re.search(r'data-matching="(\d+)"', listed).group(1) == "2"
    assert PASSWORD not in listed  # the store is named without its password
    ids = [folder_id(f) for f in folders]
    for url in ("/leaderboard?task=my-exam", f"/runs/{ids[0]}/report",
                f"/runs/{ids[1]}/samples?correct=yes", f"/compare?a={ids[0]}&b={ids[1]}"):
        assert client.get(url).status_code == 200, url
    with pytest.raises(StoreError) as e, opened(postgres.url, SCHEMA, read_only=True) as db:
        db.execute("DELETE FROM metrics")
    assert "read-only transaction" in str(e.value)
    with opened(postgres.url, SCHEMA) as db:
        assert db.execute("SELECT count(*) FROM metrics").fetchone()[0] > 0
