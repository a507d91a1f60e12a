"""The run's request executor (store/executor.py ``CachedExecutor``): a
prompt asked twice is one request, said on stderr, and a cached rerun counts each distinct
request once."""

from __future__ import annotations

from offline_runs import Writes

from localeval.backends.base import Generate


def test_duplicate_prompts_say_why_the_bar_counts_fewer(capsys):
    """The bar said `1361/1361 questions` where results said 1362: a question twice in the data
    is one request."""
    from offline_runs import AlwaysLetter

    from localeval.backends.base import Response, ScoreNext
    from localeval.store.executor import CachedExecutor

    requests = [ScoreNext(prompt=q, candidates=("A", "B")) for q in ("q1", "q2", "q1")]
    answers = CachedExecutor(AlwaysLetter("A"), None, False, "questions")(requests)
    assert len(answers) == 3 and all(isinstance(a, Response) for a in answers)
    assert ("note: 1 of 3 requests repeat another's prompt exactly (the same question twice in "
            "the data): each is sent once, so the bar counts 2") in capsys.readouterr().err
    CachedExecutor(AlwaysLetter("A"), None, False, "questions")(requests[:2])
    assert "repeat" not in capsys.readouterr().err


def test_a_cached_rerun_counts_each_distinct_request_once(tmp_path):
    from localeval.run import CachedExecutor
    from localeval.store.cache import RequestCache

    a, b = Generate("a", max_tokens=2), Generate("b", max_tokens=2)
    with RequestCache(tmp_path / "c.sqlite") as cache:
        first = CachedExecutor(Writes(), cache, quiet=True, unit="requests")
        first([a, b, a])
        again = CachedExecutor(Writes(), cache, quiet=True, unit="requests")
        again([a, b, a])
    assert first.counts == {"requests_cached": 0, "requests_run": 2}
    assert again.counts == {"requests_cached": 2, "requests_run": 0}
