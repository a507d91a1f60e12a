"""The HTML report: one self-contained file per run (``<run>/report.html``, written at the end of
``localeval run`` and by ``localeval report``), or one file comparing several runs.

It reads the run folder only (config.json, results.json, samples.jsonl) and recomputes nothing:
tables are the console's data tables (:func:`report.tables.run_tables`) rendered as HTML,
figures are the view's of the run's task kind, drawn from its typed results, and the sample
browser shows samples.jsonl (:mod:`localeval.render.browser`). Styles, script, figures (inline SVG) and data are all inside the file: it
opens offline, makes no request, and prints. Figures are also saved as PNG and SVG in
``<report stem>_figures/`` beside it.

It is read like slides, top down: the headline numbers, the papers' figures, then the tables;
failures, provenance and every sample after them. Wide content (a long table, the sample
browser) scrolls inside its own box, so the page itself never scrolls sideways.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from html import escape
from importlib.resources import files
from pathlib import Path
from typing import Any

from ..errors import LocalevalError
from ..records import Results
from ..render.browser import browser_data, script_json
from ..render.facts import fact_html, records_table
from ..render.figures import Figure
from ..render.formats import to_html
from ..render.table import DataTable
from ..store.executor import rerun_advice
from ..store.files import refuse_link
from ..store.runs import RunRecord, load_run, write_text_whole
from ..version import __version__
from ..views.base import ResultsView, distinct_names
from ..views.registry import view_for
from .headline import headline
from .tables import run_tables

SECTIONS = (("summary", "Summary"), ("figures", "Figures"), ("tables", "Tables"),
            ("failures", "Failures and warnings"), ("provenance", "Provenance"),
            ("samples", "Samples"))
FIGURE_HEIGHT = 440  # px: a figure's height on a wide screen; narrower ones scale it down


def write_report(folders: list[str | Path], output: str | Path | None = None) -> Path:
    """Write the report of one run folder (default ``<folder>/report.html``) or of several
    (``output`` required) and return its path."""
    if not folders:
        raise LocalevalError("report: give at least one run folder")
    if output is None and len(folders) > 1:
        raise LocalevalError("report: several run folders need --output FILE.html")
    runs = [load_run(f) for f in folders]  # a run that has not finished is refused there
    return write_report_of(runs, Path(output) if output is not None else
                           Path(folders[0]) / "report.html")


def write_report_of(runs: list[RunRecord], path: Path) -> Path:
    """Write the report of runs already read (a run that is finishing writes its own before it
    is marked finished: a finished folder has every file it promises)."""
    figures = refuse_link(path.with_name(path.stem + "_figures"))  # made when a figure is
    text = render(runs, figures)
    path.parent.mkdir(parents=True, exist_ok=True)
    write_text_whole(path, text)
    return path


def render(runs: list[RunRecord], figures: Path | None = None) -> str:
    """The whole page. With several runs: a side-by-side comparison first, then each run."""
    several = len(runs) > 1
    labels = distinct_names(runs)  # two runs of one model and method told apart
    body = []
    if several:
        body.append(_comparison(runs, labels, figures))
    for k, (run, label) in enumerate(zip(runs, labels), start=1):
        folder = None
        if figures:
            folder = figures / f"run{k}" if several else figures
        body.append(_run_sections(run, label, f"run{k}-" if several else "", folder))
    title = labels[0] if not several else f"{len(runs)} runs compared"
    return _page(title, _header(runs, labels), "\n".join(body))


# ------------------------------------------------------------------------ page frame
def _asset(name: str) -> str:
    package = __name__.rpartition(".")[0]  # this module's package: a str (__package__ is str | None)
    return files(package).joinpath("assets", name).read_text(encoding="utf-8")


def _page(title: str, header: str, body: str) -> str:
    return (
        "<!doctype html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
        "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
        f"<meta name=\"generator\" content=\"localeval {escape(__version__)}\">\n"
        f"<title>{escape(title)} · localeval report</title>\n"
        f"<style>\n{_asset('report.css')}</style>\n</head>\n<body>\n{header}\n"
        f"<main>\n{body}\n</main>\n<script>\n{_asset('report.js')}</script>\n</body>\n</html>\n")


def _header(runs: list[RunRecord], labels: list[str]) -> str:
    several = len(runs) > 1
    finished = max((r.finished_at or "") for r in runs)[:19].replace("T", " ")
    links = [("compare", "Comparison")] if several else []
    prefix = "run1-" if several else ""
    links += [(prefix + sid, title) for sid, title in SECTIONS]
    nav = "".join(f'<a href="#{sid}">{escape(t)}</a>' for sid, t in links)
    title = "Runs compared" if several else labels[0]
    return (f'<header class="page"><h1>{escape(title)}</h1>'
            f"<p>localeval {escape(__version__)} · finished {escape(finished)} UTC</p>"
            f'<nav class="toc">{nav}</nav></header>')


def _section(sid: str, title: str, inner: str) -> str:
    name = sid.split("-")[-1]
    return (f'<section id="{escape(sid)}" data-section="{escape(name)}">'
            f"<h2>{escape(title)}</h2>\n{inner}\n</section>")


# ------------------------------------------------------------------------ one run
def _run_sections(run: RunRecord, label: str, prefix: str, figures: Path | None) -> str:
    parts = [f'<h2 class="run-title">{escape(label)}</h2>'] if prefix else []
    tables = run_tables(run.results)  # built once: the summary links to the headline ones
    headline_count = view_for(run.results).headline(run.results)
    builders: dict[str, Callable[[RunRecord], str]] = {"summary": lambda r: _summary(r, prefix, tables[:headline_count]),
                "provenance": _provenance,
                "tables": lambda r: _tables(tables, headline_count, prefix),
                "figures": lambda r: _figures(r, figures), "failures": _failures,
                "samples": lambda r: _samples(r, prefix)}
    for sid, title in SECTIONS:
        parts.append(_section(prefix + sid, title, builders[sid](run)))
    return f'<div class="run" data-run="{escape(prefix.rstrip("-") or "run1")}">' \
        + "\n".join(parts) + "</div>"


def _summary(run: RunRecord, prefix: str, tables: list[DataTable]) -> str:
    """The cards, then links to the figures and to the headline ``tables``."""
    cards = "".join(
        f'<div class="card{" bad" if bad else ""}"><div class="value">{escape(value)}</div>'
        f'<div class="label">{escape(what)}</div></div>' for value, what, bad in
        headline(run.results))
    links = [(f"{prefix}figures", "Figures")] + [(f"{prefix}table-{k}", t.title)
                                                 for k, t in enumerate(tables, start=1)]
    jump = "".join(f'<a href="#{escape(target)}">{escape(title)}</a>' for target, title in links)
    return f'<div class="cards">{cards}</div><nav class="jump">{jump}</nav>'


def provenance(run: RunRecord) -> list[tuple[str, Any]]:
    """What made these numbers, in reading order: versions, model, data, protocol, timing."""
    config = run.config.data()  # every key, in config.json's order
    results = run.results
    backend = config.get("backend") or {}
    known = ("localeval_version", "python", "packages", "command", "backend", "model", "run",
             "task", "data", "dataset_revision")
    facts = [("localeval", config.get("localeval_version")), ("python", config.get("python")),
             ("command", " ".join(config.get("command") or []) or None),
             ("task", config.get("task")), ("model", config.get("model") or backend.get("model")),
             *((k.replace("_", " "), v) for k, v in backend.items() if k != "model"),
             ("data", config.get("data")), ("data revision", config.get("dataset_revision"))]
    facts += [(k.replace("_", " "), v) for k, v in config.items() if k not in known]
    facts += _protocol_facts(config, results.data())
    facts += [("status", run.status), ("started", run.started_at), ("finished", run.finished_at),
              ("timing", results.timing or None),
              ("tokens", {role: u.data() for role, u in results.usage.items()} or None),
              ("cost", results.cost.data() if results.cost else None)]
    if results.history:  # each later invocation of a rerun in this folder
        facts.append(("history", results.history))
    facts.append(("packages", config.get("packages")))
    return facts


def _protocol_facts(config: dict[str, Any], stored: dict[str, Any]) -> list[tuple[str, Any]]:
    """The protocol choices results.json records and config.json does not (older runs)."""
    return [(key.replace("_", " "), stored[key])
            for key in ("label_policy", "sensitive", "on_failure", "auprc", "calibration")
            if key in stored and key not in config
            and not (key == "calibration" and "calibrate_on" in config)]


def _provenance(run: RunRecord) -> str:
    rows = "".join(f"<dt>{escape(k)}</dt><dd>{fact_html(v, k)}</dd>" for k, v in provenance(run))
    return f'<dl class="facts">{rows}</dl>'


def table_html(table: DataTable) -> str:
    return to_html(table)


def _tables(tables: list[DataTable], headline_count: int, prefix: str) -> str:
    """Every table, listed first; the headline ones open, the rest one click away, folded."""
    if not tables:
        return "<p>No tables.</p>"
    listed = "".join(f'<li><a href="#{escape(prefix)}table-{k}">{escape(t.title)}</a></li>'
                     for k, t in enumerate(tables, start=1))
    folded = "".join(
        f'<details class="table" id="{escape(prefix)}table-{k}"'
        f'{" open" if k <= headline_count else ""}><summary>{escape(t.title)}</summary>'
        f"{to_html(t, title=False)}</details>" for k, t in enumerate(tables, start=1))
    return f'<ol class="tables-list">{listed}</ol>{folded}'


def run_figures(results: Results, folder: Path | None) -> list[Figure]:
    return view_for(results).figures(results, folder)


def figure_html(figure: Figure) -> str:
    return (f'<figure data-figure="{escape(figure.name)}"><h3>{escape(figure.title)}</h3>'
            f"{_fitted_svg(figure.svg)}<figcaption>{escape(figure.caption)}</figcaption></figure>")


def _fitted_svg(svg: str) -> str:
    """The SVG ``FIGURE_HEIGHT`` high where the page is wide enough, and scaled down as a whole
    (never cropped, never letterboxed) where it is not: its fixed size gives way to a width of
    at most the page's, and the height follows from its viewBox."""
    size = re.match(r'<svg[^>]*?\swidth="([\d.]+)pt" height="([\d.]+)pt"', svg)
    if not size:
        return svg
    width = FIGURE_HEIGHT * float(size.group(1)) / float(size.group(2))
    return re.sub(r'\swidth="[\d.]+pt" height="[\d.]+pt"',
                  f' style="width: min(100%, {width:.0f}px)"', svg, count=1)


def _figures(run: RunRecord, folder: Path | None) -> str:
    drawn = run_figures(run.results, folder)
    return "\n".join(figure_html(f) for f in drawn) or "<p>No figures for this kind of run.</p>"


def _failures(run: RunRecord) -> str:
    r = run.results
    parts = [f'<p class="warning">{escape(w)}</p>' for w in r.warnings]
    rows = r.failures or [{"id": i} for i in r.failed]
    if rows:
        parts.append(f"<h3>{r.n_failed} failed (left out; "
                     f"{escape(rerun_advice(r.data()))})</h3>" + records_table(rows, "failures"))
    if r.unanswered:
        parts.append(f"<h3>{len(r.unanswered)} unanswered (no extractable answer, counted "
                     "wrong)</h3>" + records_table(_unanswered(run), "failures"))
    return "\n".join(parts) or "<p>No failures and no warnings.</p>"


def _unanswered(run: RunRecord) -> list[dict[str, Any]]:
    wanted = set(run.results.unanswered)
    # subject and output: an MCQ sample's (the kind whose results list the unanswered)
    return [{"id": s.id, "subject": s.get("subject"), "error": s.error,
             "output": (s.get("output") or "")[-200:]} for s in run.samples if s.id in wanted]


def _samples(run: RunRecord, prefix: str) -> str:
    source = f"{prefix}samples-data"
    return (f'<p class="caption">Every sample of samples.jsonl. Search looks in every column; '
            f"text of items labelled harmful or sensitive stays collapsed behind a content "
            f"warning until opened.</p>"
            f'<script type="application/json" id="{source}">{script_json(browser_data(run.samples))}'
            f'</script><div class="browser" data-source="{source}"></div>')


# ------------------------------------------------------------------------ several runs
def _comparison(runs: list[RunRecord], labels: list[str], figures: Path | None) -> str:
    head = "<tr><th>run</th><th>folder</th><th>headline</th></tr>"
    rows = "".join(
        f"<tr><td>{escape(label)}</td><td><code>{escape(str(run.folder or ''))}</code></td>"
        f"<td>{escape(' · '.join(f'{v} {w}' for v, w, _ in headline(run.results)[:3]))}</td></tr>"
        for run, label in zip(runs, labels))
    parts = [f'<div class="scroll"><table class="data"><thead>{head}</thead><tbody>{rows}'
             "</tbody></table></div>"]
    if len(runs) == 2:
        parts += two_runs_compared(runs[0], runs[1], (labels[0], labels[1]), figures)
    for view, group in _by_kind(runs, labels):
        shown = view.side_by_side(group, figures)  # figures first, as in each run's sections
        parts += [figure_html(p) for p in shown if isinstance(p, Figure)]
        parts += [table_html(p) for p in shown if not isinstance(p, Figure)]
    return _section("compare", "Comparison", "\n".join(parts))


def two_runs_compared(run_a: RunRecord, run_b: RunRecord, labels: tuple[str, str],
                      figures: Path | None) -> list[str]:
    """``localeval compare``'s comparison of runs A and B as HTML: its figures, its tables (per
    language, per subject), its notes; where the two cannot be compared, one line saying why."""
    view = view_for(run_a.results)
    if view.schema != view_for(run_b.results).schema or not view.compares:
        return []
    try:
        comparison = view.compare(run_a, run_b)
    except LocalevalError as e:
        return [f'<p class="warning">Not compared sample by sample: {escape(str(e))}</p>']
    names = f"<p>A: {escape(labels[0])}<br>B: {escape(labels[1])}</p>"
    return [names, *(figure_html(f) for f in view.comparison_figures(comparison, labels, figures)),
            *(table_html(t) for t in view.comparison_tables(comparison)),
            *(f'<p class="caption">{escape(line)}</p>' for line in
              view.comparison_notes(comparison))]


def _by_kind(runs: list[RunRecord], labels: list[str]
             ) -> list[tuple[ResultsView[Any], list[tuple[str, Results]]]]:
    """(view, [(label, results), ...]) per kind of task, in the order kinds first appear."""
    groups: dict[str, tuple[ResultsView[Any], list[tuple[str, Results]]]] = {}
    for run, label in zip(runs, labels):
        view = view_for(run.results)
        groups.setdefault(view.schema, (view, []))[1].append((label, run.results))
    return list(groups.values())
