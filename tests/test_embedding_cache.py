"""One embedding cache (issue 53 item 3): ``diversity``, ``train-guard`` and ``run --guard
embedding:…`` on the same texts embed each (model, text) once, in a cache they share by
default, and each says how many of its embeddings came from it. Counted as texts the real
offline MiniLM embedder is asked to embed, never as time."""

from __future__ import annotations

import json

import pytest

from localeval.backends.embedding import SentenceEmbeddingBackend
from localeval.cli import main

TEXTS = [f"Sentence number {i}: how would one {'bake bread' if i % 2 else 'break a lock'}?"
         for i in range(20)]


@pytest.fixture
def data(tmp_path):
    path = tmp_path / "texts.jsonl"
    path.write_text("".join(json.dumps({"id": f"q{i}", "lang": "en" if i < 12 else "ms",
                                        "label": "safe" if i % 2 else "harmful", "prompt": t})
                            + "\n" for i, t in enumerate(TEXTS)))
    return path


@pytest.fixture
def embedded(monkeypatch):
    """The texts each command asks the embedder for, one list per model call."""
    calls: list[list[str]] = []
    run = SentenceEmbeddingBackend.run

    def counting(self, requests, progress=None):
        calls.append([r.text for r in requests])
        return run(self, requests, progress)

    monkeypatch.setattr(SentenceEmbeddingBackend, "run", counting)
    return calls


def _texts(calls: list[list[str]]) -> int:
    n = sum(len(c) for c in calls)
    calls.clear()
    return n


def _hit_lines(err: str) -> list[str]:
    return [line for line in err.splitlines() if line.startswith("embeddings: ")]


def test_the_three_commands_embed_each_text_once(data, tmp_path, embedded, capsys):
    counts, said = [], []
    assert main(["diversity", "--data", str(data), "--output", str(tmp_path / "map")]) == 0
    counts.append(_texts(embedded))
    said += _hit_lines(capsys.readouterr().err)
    assert main(["train-guard", "--data", str(data), "--output", str(tmp_path / "g.json"),
                 "--folds", "2"]) == 0
    counts.append(_texts(embedded))
    said += _hit_lines(capsys.readouterr().err)
    assert main(["run", "--task", "safety-prompts", "--data", str(data), "--guard",
                 f"embedding:{tmp_path / 'g.json'}", "--output", str(tmp_path / "run"),
                 "--bootstrap", "0"]) == 0
    counts.append(_texts(embedded))
    said += _hit_lines(capsys.readouterr().err)
    assert counts == [20, 0, 0]  # the second and third read the first's embeddings back
    assert said == ["embeddings: 0 of 20 from the cache", "embeddings: 20 of 20 from the cache",
                    "embeddings: 20 of 20 from the cache"]
    hits = {"embeddings": 20, "embeddings_cached": 0}
    assert json.loads((tmp_path / "map" / "diversity.json").read_text())["embedding_cache"] == hits
    hits["embeddings_cached"] = 20
    spec = json.loads((tmp_path / "g.json").read_text())
    assert spec["training"]["embedding_cache"] == hits
    timing = json.loads((tmp_path / "run" / "results.json").read_text())["timing"]
    assert {k: timing[k] for k in hits} == hits
    # the run folder's own cache holds what it used: a rerun reads it there
    assert main(["run", "--task", "safety-prompts", "--data", str(data), "--guard",
                 f"embedding:{tmp_path / 'g.json'}", "--output", str(tmp_path / "run"),
                 "--bootstrap", "0", "--quiet"]) == 0
    assert _texts(embedded) == 0


def test_the_default_cache_is_under_xdg_cache_home_and_no_cache_keeps_none(
        data, tmp_path, embedded, monkeypatch):
    from localeval.store.embed_cache import embedding_cache_path

    monkeypatch.delenv("LOCALEVAL_EMBED_CACHE")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert embedding_cache_path() == tmp_path / "xdg" / "localeval" / "embeddings.sqlite"
    monkeypatch.setenv("LOCALEVAL_EMBED_CACHE", "off")
    assert embedding_cache_path() is None
    monkeypatch.delenv("LOCALEVAL_EMBED_CACHE")
    for _ in range(2):
        assert main(["diversity", "--data", str(data), "--output", str(tmp_path / "map"),
                     "--no-cache", "--quiet"]) == 0
        assert _texts(embedded) == 20
    assert not (tmp_path / "xdg").exists()
    assert main(["train-guard", "--data", str(data), "--output", str(tmp_path / "g.json"),
                 "--folds", "2", "--quiet"]) == 0
    assert _texts(embedded) == 20
    assert (tmp_path / "xdg" / "localeval" / "embeddings.sqlite").is_file()
