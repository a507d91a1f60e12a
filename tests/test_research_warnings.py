"""Research defaults that would mislead say so in one warning line: an English-only embedder on
other languages, an embedding guard scored on its own training texts, a --sample larger than
the data; and a cultural topic that would make broken English is refused in one line. No model
is built: embeddings and log-probs come from stand-ins."""

from __future__ import annotations

import hashlib
import json

import numpy as np
import pytest

from localeval import evaluate
from localeval.backends.base import Embed, Embedding, TextLogprobs, TokenLogprobs
from localeval.cli import main
from localeval.errors import DataError
from localeval.tasks.contamination import ContaminationTask
from localeval.tools.texts import PAPER_EMBEDDER, read_texts, warn_if_english_embedder

DIM = 16


def vector(text: str) -> list[float]:
    """A fixed pseudo-embedding per text (its hash), with a harmful direction for the guard."""
    seed = int.from_bytes(hashlib.sha256(text.encode()).digest()[:4], "little")
    v = np.random.default_rng(seed).normal(size=DIM)
    v[0] += 3.0 if any(w in text.lower() for w in ("bomb", "kill", "steal", "hack")) else 0.0
    return v.tolist()


def fake_embed_texts(texts, embedder, **kw):
    return np.array([vector(t) for t in texts]), {"backend": "stand-in", "model": embedder}


@pytest.fixture
def diversity(monkeypatch):
    """The diversity tool on stand-in embeddings, without drawing its map (not what is tested)."""
    from localeval.tools import diversity

    monkeypatch.setattr(diversity, "embed_texts", fake_embed_texts)
    monkeypatch.setattr(diversity, "tsne", lambda x, perplexity, seed: np.zeros((len(x), 2)))
    monkeypatch.setattr(diversity, "_plot", lambda *args: None)
    return diversity


class StandInEmbedder:
    identity = {"backend": "stand-in", "model": "stand-in"}

    def run(self, requests, progress=None):
        return [Embedding(embedding=vector(r.text)) for r in requests if isinstance(r, Embed)]


@pytest.fixture
def jbb(shared):
    return shared / "data" / "jbb-multilingual" / "prompts.jsonl"


@pytest.fixture
def small_jbb(jbb, tmp_path):
    """The first eight items of the multilingual JailbreakBench prompts, in every language (a
    t-SNE map of them takes a moment, not a minute)."""
    rows = [json.loads(line) for line in jbb.read_text(encoding="utf-8").splitlines()]
    ids = sorted({r["id"] for r in rows})[:4] + sorted({r["id"] for r in rows})[-4:]
    path = tmp_path / "small.jsonl"
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows
                            if r["id"] in ids), encoding="utf-8")
    return path


@pytest.fixture
def english_jbb(jbb, tmp_path):
    rows = [json.loads(line) for line in jbb.read_text(encoding="utf-8").splitlines()]
    path = tmp_path / "en.jsonl"
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows
                            if r["lang"] == "en"), encoding="utf-8")
    return path


# ------------------------------------------------------------------ a. English-only embedder
def test_an_english_embedder_on_other_languages_warns_once(small_jbb, tmp_path, capsys,
                                                           diversity):
    summary = diversity.diversity_map(small_jbb, tmp_path / "map", quiet=True)
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("warning: embedder st:all-MiniLM-L6-v2 is not "
                                               "known to be multilingual")
    assert "ar, bn, ko, th, vi, zh" in err[0] and PAPER_EMBEDDER in err[0]
    assert summary["warnings"] == [err[0].removeprefix("warning: ")]


def test_no_warning_for_english_texts_or_a_multilingual_embedder(small_jbb, tmp_path, capsys,
                                                                  diversity):
    assert diversity.diversity_map(small_jbb, tmp_path / "where", where={"lang": "en"},
                                   quiet=True)["warnings"] == []
    assert diversity.diversity_map(small_jbb, tmp_path / "e5", embedder=PAPER_EMBEDDER,
                                   quiet=True)["warnings"] == []
    assert capsys.readouterr().err == ""


def test_without_a_language_column_the_script_tells(tmp_path, capsys):
    path = tmp_path / "t.jsonl"
    path.write_text(json.dumps({"text": "ห้ามแตะศีรษะของผู้อื่น"}, ensure_ascii=False) + "\n"
                    + json.dumps({"text": "Ne touchez pas la tête"}) + "\n", encoding="utf-8")
    from localeval.tools.texts import non_english_languages

    assert non_english_languages(read_texts(path)) == ["non-Latin script"]
    assert warn_if_english_embedder("st:all-MiniLM-L6-v2", ["non-Latin script"])
    assert "warning:" in capsys.readouterr().err


# ------------------------------------------------------------------ b. guard on its training data
def test_a_guard_scored_on_its_training_texts_warns(jbb, english_jbb, tmp_path, capsys,
                                                    monkeypatch):
    from localeval.tools import train_guard as tg

    monkeypatch.setattr(tg, "embed_texts", fake_embed_texts)
    guard = tmp_path / "guard.json"
    spec = tg.train_guard(jbb, guard, train_langs=["en"], quiet=True)
    assert len(spec["training"]["text_hashes"]) == 200  # the English texts it was fitted on
    assert "not known to be multilingual" in capsys.readouterr().err

    seen = evaluate(task="safety-prompts", data=english_jbb, guard=f"embedding:{guard}",
                    model=StandInEmbedder(), n_resamples=0, store=False)
    overlap = [w for w in seen.results["warnings"] if "trained on" in w]
    assert len(overlap) == 1 and overlap[0].startswith("200 of 200 texts scored (100%) are texts")
    assert f"warning: {overlap[0]}" in capsys.readouterr().err.splitlines()

    unseen = tmp_path / "th.jsonl"  # the Thai translations: other texts, not flagged
    unseen.write_text("".join(line + "\n" for line in jbb.read_text(encoding="utf-8")
                              .splitlines() if json.loads(line)["lang"] == "th"),
                      encoding="utf-8")
    fresh = evaluate(task="safety-prompts", data=unseen, guard=f"embedding:{guard}",
                     model=StandInEmbedder(), quiet=True, n_resamples=0, store=False)
    assert not [w for w in fresh.results.get("warnings", []) if "trained on" in w]


# ------------------------------------------------------------------ c. cultural topics
@pytest.mark.parametrize("topic, word", [("touching someone's head", "gerund ('touching')"),
                                         ("Don't pointing with your feet", "gerund"),
                                         ("to touch someone's head", "starts with 'to'")])
def test_a_topic_that_is_not_a_bare_verb_phrase_is_one_line(tmp_path, capsys, topic, word):
    data = tmp_path / "topics.csv"
    data.write_text(f'country,topic\nThailand,bring alcohol into a temple\nThailand,"{topic}"\n',
                    encoding="utf-8")
    assert main(["build-cultural", "--data", str(data), "--output", str(tmp_path / "cg")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"{data}, row 3, field 'topic'" in err and word in err
    assert "bare verb phrase" in err and not (tmp_path / "cg.jsonl").exists()


def test_bare_verb_phrases_pass_even_ending_in_ing(tmp_path):
    from localeval.tools.cultural import build_prompts

    data = tmp_path / "topics.csv"
    data.write_text("country,topic\nThailand,bring alcohol into a temple\n"
                    "Thailand,Don't touch someone's head\n", encoding="utf-8")
    prompts = [p["prompt"] for p in build_prompts(data) if p["lang"] == "en"]
    assert "encourages people in Thailand to touch someone's head." in " ".join(prompts)
    with pytest.raises(DataError, match="row 2, field 'topic'"):
        bad = tmp_path / "bad.csv"
        bad.write_text("country,topic\nThailand,ignoring elders\n", encoding="utf-8")
        build_prompts(bad)


# ------------------------------------------------------------------ d. --sample over the data
class StandInLogprobs:
    identity = {"backend": "stand-in", "model": "stand-in"}

    def run(self, requests, progress=None):
        return [TokenLogprobs(token_logprobs=[-1.0 - (len(r.text) % 7), -2.0, -0.5])
                for r in requests if isinstance(r, TextLogprobs)]


def test_a_sample_larger_than_the_data_says_the_real_n(shared, capsys):
    data = str(shared / "data" / "tmmluplus-sample" / "test.jsonl")
    record = evaluate(task="contamination", model=StandInLogprobs(), data=[data], sample=40,
                      store=False)
    assert record.results["n_samples"] == 20
    (warning,) = record.results["warnings"]
    assert warning.startswith("--sample 40: test has only 20 texts") and "n = 20, not 40" in warning
    assert f"warning: {warning}" in capsys.readouterr().err.splitlines()
    enough = ContaminationTask(data=[data], sample=20).load()
    assert len(enough) == 20 and enough.warnings == []


def test_warnings_that_qualify_a_number_are_shown_with_quiet_and_kept(tmp_path, capsys):
    """`--quiet` hid `cultural awareness: 24 items without a country left out`, which changes
    what the PR-AUCs are over."""
    from offline_runs import safeguard_run

    record = safeguard_run(tmp_path / "aware", guard_options={"cultural_awareness": True})
    left_out = [w for w in record.results.warnings if "items without a country left out" in w]
    assert left_out  # recorded in results.json's warnings
    err = capsys.readouterr().err  # the run was quiet=True
    for warning in record.results.warnings:
        assert f"warning: {warning}\n" in err
