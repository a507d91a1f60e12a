"""Issue 69's nits of wording: a count says its noun in the singular or plural it needs, a kind
of run takes the article it is read with, and a rerun the cache answered whole says so, not
"0.00 questions/s"."""

from __future__ import annotations

import io

from localeval.progress import progress_lines


def test_a_rerun_the_cache_answered_says_so_not_a_rate_of_zero():
    out = io.StringIO()
    with progress_lines("questions", 12, 12, 30.0, out, clock=lambda: 5.0):
        pass
    # before: "questions: 12/12 done (100%), 0.00 questions/s"
    assert out.getvalue().splitlines() == ["questions: 12/12 done (100%), all from the cache"]


def test_counts_and_articles_read_as_english():
    from localeval.words import counted, with_article

    assert [counted(1, "more table"), counted(2, "more table")] == ["1 more table",
                                                                    "2 more tables"]
    assert counted(1, "country", "countries") == "1 country"
    assert [with_article(k) for k in ("mcq", "safety", "llm-safety", "contamination")] == [
        "an mcq", "a safety", "an llm-safety", "a contamination"]


def test_compare_of_two_kinds_names_them_with_their_articles(tmp_path, capsys):
    from offline_runs import mcq_run, safeguard_run

    from localeval.cli import main

    mcq, safety = mcq_run(tmp_path / "mcq"), safeguard_run(tmp_path / "safety")
    capsys.readouterr()
    assert main(["compare", str(mcq.folder), str(safety.folder)]) != 0
    err = " ".join(capsys.readouterr().err.split())
    # before: "... is a mcq run and ... a safety run"
    assert "is an mcq run and" in err and "a safety run" in err


def test_one_table_left_out_is_one_table(tmp_path, capsys):
    from localeval.cli.run_and_report import say_where

    say_where(tmp_path, 1, report=False)
    # before: "1 more tables: localeval show ..."
    assert "1 more table: localeval show" in capsys.readouterr().err


def test_each_models_progress_names_its_role_where_a_run_has_several():
    """Issue 69: llm-safety printed two lines of "requests" (the model's, then the judge's)."""
    from types import SimpleNamespace

    from offline_runs import AlwaysLetter

    from localeval.store.executor import CachedExecutor

    alone = CachedExecutor(AlwaysLetter("A"), None, True, "requests")
    assert alone.progress_label() == "requests"
    with_judge = CachedExecutor(AlwaysLetter("A"), None, True, "requests",
                                roles=SimpleNamespace(models=["judge"], get=lambda r: None))
    judge = with_judge.on(AlwaysLetter("B"), "judge")
    assert [with_judge.progress_label(), judge.progress_label()] == [
        "requests (model)", "requests (judge)"]
    out = io.StringIO()
    with progress_lines("requests", 2, 0, 30.0, out, clock=lambda: 1.0,
                        label=judge.progress_label()) as advance:
        advance(2)
    assert out.getvalue().startswith("requests (judge): 2/2 done")


def test_a_bar_the_cache_filled_says_so():
    from rich.progress import Progress

    from localeval.progress import RateColumn

    with Progress(disable=True) as progress:
        task = progress.add_task("questions", total=12, completed=12, cached=12)
        shown = RateColumn("questions").render(progress.tasks[task])
    assert shown.plain == "all from the cache"
