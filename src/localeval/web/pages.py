"""The viewer's pages as HTML. Every text from a run, a store or a query goes through
``escape`` (attributes quoted, quotes escaped); the pages hold no script and fetch only the
app's own stylesheet. Forms use GET: a filter is a link one can share."""

from __future__ import annotations

from collections import Counter
from html import escape
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

from ..render.cells import short_model
from ..store.results_db import Wanted
from ..version import __version__
from .catalog import Listing, headline_metric, items, protocol_text
from .samples import Browsed, shown_value

TEXT_PREVIEW = 80  # characters of a long text shown before it is opened


def e(value: Any) -> str:
    return escape("" if value is None else str(value), quote=True)


def frame(title: str, body: str, source: str) -> str:
    return (
        "<!doctype html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
        "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
        f"<title>{e(title)} · localeval view</title>\n"
        "<link rel=\"stylesheet\" href=\"/assets/viewer.css\">\n</head>\n<body>\n"
        "<header class=\"bar\"><nav><a href=\"/\">Runs</a><a href=\"/leaderboard\">Leaderboard"
        "</a><a href=\"/compare\">Compare</a></nav>"
        f"<span class=\"source\">localeval {e(__version__)} · {e(source)}</span></header>\n"
        f"<main>\n<h1>{e(title)}</h1>\n{body}\n</main>\n</body>\n</html>\n")


# The viewer's bar on a run's report page, which is the report as written (its own styles; its
# policy loads no stylesheet): the same links and look as every other page (issue 69: a plain
# unstyled strip). The report's own rules name no "viewer-bar".
REPORT_BAR_STYLE = (
    "<style>header.viewer-bar{display:flex;flex-wrap:wrap;gap:12px;align-items:baseline;"
    "padding:8px 16px;border-bottom:1px solid #d8dce4;background:#f6f7f9;"
    "font:15px/1.45 system-ui,sans-serif}header.viewer-bar a{margin-right:16px;"
    "font-weight:600;color:#1f5fbf}</style>")


def report_bar(run_id: str) -> str:
    """The viewer's header above a run's report: its pages, and this run's samples."""
    rid = e(run_id)
    return (f'{REPORT_BAR_STYLE}<header class="viewer-bar"><nav><a href="/">Runs</a>'
            '<a href="/leaderboard">Leaderboard</a><a href="/compare">Compare</a>'
            f'<a href="/runs/{rid}/samples">This run\'s samples (searchable)</a></nav>'
            "</header>\n")


def run_label(run: dict[str, Any]) -> str:
    """A run in a picker: its name (its RunSpec's, as the store's summary or its folder gives
    it) and when it finished."""
    return " · ".join([run.get("name") or short_model(str(run["model"] or "")),
                       (run["finished_at"] or "")[:16].replace("T", " ")])


def _select(name: str, values: list[str], chosen: str, anything: str = "any") -> str:
    options = [f'<option value="">{e(anything)}</option>'] + [
        f'<option value="{e(v)}"{" selected" if v == chosen else ""}>{e(v)}</option>'
        for v in values]
    return f'<select name="{e(name)}" data-filter="{e(name)}">{"".join(options)}</select>'


def _label(text: str, control: str) -> str:
    return f"<label>{e(text)} {control}</label>"


def _input(name: str, value: str, kind: str = "search") -> str:
    return f'<input type="{kind}" name="{e(name)}" value="{e(value)}" data-role="{e(name)}">'


# ------------------------------------------------------------------------ the runs
def _filters(action: str, listing: Listing, f: Wanted, extra: str = "") -> str:
    return (f'<form class="filters" method="get" action="{action}">'
            + _label("task", _select("task", listing.tasks, f.task))
            + _label("model", _input("model", f.model))
            + _label("guard", _select("guard", listing.guards, f.guard))
            + _label("protocol", _input("protocol", f.protocol))
            + _label("finished from", _input("since", f.since, "date"))
            + _label("to", _input("until", f.until, "date")) + extra
            + '<button type="submit">Filter</button></form>')


def _note(listing_note: str) -> str:
    return f'<p class="note small">{e(listing_note)}</p>' if listing_note else ""


def runs_page(listing: Listing, f: Wanted, number: int = 1, per_page: int = 50) -> str:
    shown = listing.runs
    form = _filters("/", listing, f)
    first = (number - 1) * per_page
    where = (f" · {first + 1}–{first + len(shown)} shown" if listing.matching > len(shown)
             and shown else "")
    count = (f'<p class="count" data-matching="{listing.matching}">{listing.matching} of '
             f"{listing.total} runs{where}</p>")
    if not shown:
        return _note(listing.note) + form + count + "<p>No run matches.</p>"
    head = ("<tr><th>A</th><th>B</th><th>finished</th><th>task</th><th>model</th>"
            "<th>guard</th><th>options</th><th>items</th><th>headline</th><th>protocol</th>"
            "<th>open</th></tr>")
    rows = "".join(_run_row(r) for r in shown)
    table = (f'<form method="get" action="/compare"><div class="scroll"><table class="data runs">'
             f"<thead>{head}</thead><tbody>{rows}</tbody></table></div>"
             '<button type="submit">Compare A with B</button></form>')
    query = {k: v for k, v in vars(f).items() if v}
    return _note(listing.note) + form + count + table + _pages("/", query, number,
                                                               listing.matching, per_page)


def _pages(path: str, query: dict[str, str], number: int, total: int, per_page: int) -> str:
    """Links to the previous and the next page (the filters kept)."""
    last = max(1, -(-total // per_page))
    links = [f'<a href="{path}?{e(urlencode({**query, "page": n}))}" rel="{rel}">{what} page'
             "</a>" for n, what, rel in ((number - 1, "previous", "prev"),
                                         (number + 1, "next", "next")) if 1 <= n <= last]
    return (f'<nav class="pager">page {number} of {last}' + (" · " if links else "")
            + " · ".join(links) + "</nav>") if last > 1 else ""


def model_shown(model: Any) -> str:
    """A run's model as a row shows it: a guard's ``none:`` backend is no model (the run is
    named by its guard alone, :attr:`RunSpec.name`)."""
    return "no model" if str(model or "").startswith("none:") else str(model or "")


def _run_row(run: dict[str, Any]) -> str:
    rid = e(run["run_id"])
    title, value = headline_metric(run)
    links = (f'<a href="/runs/{rid}/report">report</a> · <a href="/runs/{rid}/samples">samples'
             f'</a> · <a href="/leaderboard?{e(urlencode({"task": run["task"]}))}">'
             "leaderboard</a>")
    return (f'<tr data-run="{rid}"><td><input type="radio" name="a" value="{rid}" '
            f'aria-label="A"></td><td><input type="radio" name="b" value="{rid}" '
            f'aria-label="B"></td><td>{e((run["finished_at"] or "")[:19].replace("T", " "))}'
            f'</td><td>{e(run["task"])}</td><td>{e(model_shown(run["model"]))}</td>'
            f'<td>{e(run.get("guard") or "none")}</td>'
            f'<td class="small">{e(run.get("options") or "")}</td>'
            f'<td class="num">{e(items(run))}</td><td>{e(title)} {e(value)}</td>'
            f'<td class="small">{e(protocol_text(run))}</td><td>{links}</td></tr>')


# ------------------------------------------------------------------------ a leaderboard
def leaderboard_page(task: str, tasks: list[str], any_protocol: bool, tables_html: str,
                     board: dict[str, Any] | None, reference: str = "", note: str = "",
                     number: int = 1, per_page: int = 50) -> str:
    form = ('<form class="filters" method="get" action="/leaderboard">'
            + _label("task", _select("task", tasks, task, "choose a task"))
            + _label("reference run", _input("reference", reference, "text"))
            + f'<label><input type="checkbox" name="any_protocol" value="1"'
            f'{" checked" if any_protocol else ""}> every protocol</label>'
            + '<button type="submit">Show</button></form>')
    if board is None:
        return form + "<p>Choose a task.</p>"
    def pick(r: dict[str, Any]) -> str:
        if r["reference"]:
            return ' <span class="small">(the reference)</span>'
        link = urlencode({"task": task, "reference": r["run_id"],
                          **({"any_protocol": "1"} if any_protocol else {})})
        return f' <a class="small" href="/leaderboard?{e(link)}">rank on its protocol</a>'

    def named(r: dict[str, Any]) -> str:
        """The model as stored (its whole path or Hub id), with the guard and what the run's
        name says of its protocol (its RunSpec's)."""
        extra = [x for x in ((r.get("guard") or "none"), r.get("options") or "")
                 if x and x != "none"]
        return e(model_shown(r["model"])) + (f' <span class="small">({e(" · ".join(extra))})</span>'
                                if extra else "")

    said = f'<p class="small">Ranked on {e(board["reference_is"])}.</p>'
    runs = "".join(f'<li><a href="/runs/{e(r["run_id"])}/report">{named(r)}</a> '
                   f'<span class="small">{e(r["finished_at"])}</span>{pick(r)}</li>'
                   for r in board["rows"] + board["apart"])
    total = max(board.get("ranked_total", 0), board.get("apart_total", 0))
    query = {"task": task, **({"any_protocol": "1"} if any_protocol else {}),
             **({"reference": reference} if reference else {})}
    return (_note(note) + form + said + tables_html + f"<h2>The runs' reports</h2><ol>{runs}"
            "</ol>" + _pages("/leaderboard", query, number, total, per_page))


# ------------------------------------------------------------------------ the samples
def samples_page(run: dict[str, Any], browsed: Browsed, query: dict[str, str]) -> str:
    rid = e(run["run_id"])
    controls = "".join(_label(c["title"], _select(c["key"], browsed.choices[c["key"]],
                                                   query.get(c["key"], "")))
                       for c in browsed.columns if c["key"] in browsed.choices)
    form = (f'<form class="filters" method="get" action="/runs/{rid}/samples">'
            + _label("search", _input("q", query.get("q", ""))) + controls
            + '<button type="submit">Filter</button></form>')
    count = (f'<p class="count" data-matching="{browsed.matching}">{browsed.matching} of '
             f"{browsed.total} samples · page {browsed.page} of {browsed.pages} · "
             f'<a href="/runs/{rid}/report">report</a></p>')
    head = "".join(f"<th>{e(c['title'])}</th>" for c in browsed.columns)
    rows = "".join("<tr>" + "".join(_cell(c, v, k in warn, starts.get(str(k), 0)) for k, (c, v)
                                    in enumerate(zip(browsed.columns, cells))) + "</tr>"
                   for cells, warn, starts in browsed.rows)
    table = (f'<div class="scroll"><table class="data samples"><thead><tr>{head}</tr></thead>'
             f"<tbody>{rows}</tbody></table></div>")
    return form + count + table + _pager(rid, browsed, query)


def _cell(column: dict[str, Any], value: Any, warned: bool, start: int = 0) -> str:
    """A sample's cell; a long text previews from ``start``, after what it shares with other
    samples (a few-shot prefix: browser_data's starts), and opens whole."""
    text = shown_value(value)
    if column["type"] == "num" and isinstance(value, float):
        text = f"{value:.4g}"
    if warned and text:
        return ('<td><details class="cw"><summary>content warning: labelled harmful or '
                f'sensitive; open to read</summary><div class="text">{e(text)}</div>'
                "</details></td>")
    if column["type"] == "text" and (start or len(text) > TEXT_PREVIEW):
        cut = "…" if start + TEXT_PREVIEW < len(text) else ""
        return (f"<td><details><summary>{'…' if start else ''}"
                f"{e(text[start:start + TEXT_PREVIEW])}{cut}</summary>"
                f'<div class="text">{e(text)}</div></details></td>')
    return f'<td class="{e(column["type"])}">{e(text)}</td>'


def _pager(rid: str, browsed: Browsed, query: dict[str, str]) -> str:
    links = []
    for page, what in ((browsed.page - 1, "previous"), (browsed.page + 1, "next")):
        if 1 <= page <= browsed.pages:
            target = urlencode({**{k: v for k, v in query.items() if v}, "page": page})
            links.append(f'<a href="/runs/{rid}/samples?{e(target)}" rel="{what[:4]}">'
                         f"{what} page</a>")
    return f'<nav class="pager">{" · ".join(links)}</nav>' if links else ""


# ------------------------------------------------------------------------ two runs
def picker_labels(runs: list[dict[str, Any]]) -> dict[str, str]:
    """Each run's entry in a picker: its name and time, told apart where two coincide by the
    end of its folder (issue 69: entries that differed only by an id), then by its id."""
    labels = {r["run_id"]: run_label(r) for r in runs}
    for told in (_folder_tail, lambda r: r["run_id"][:8]):
        same = Counter(labels.values())
        labels = {r["run_id"]: labels[r["run_id"]] + (f" · {told(r)}" if same[labels[
            r["run_id"]]] > 1 and told(r) else "") for r in runs}
    return labels


def _folder_tail(run: dict[str, Any]) -> str:
    return "/".join(Path(run.get("folder") or "").parts[-2:])


def compare_page(listing: Listing, chosen: list[dict[str, Any]], f: Wanted, a: str, b: str,
                 content: str) -> str:
    """Two pickers of the newest runs the filters keep (the runs chosen always among them)."""
    every = listing.runs + chosen
    labels = picker_labels(every)

    def choose(name: str, picked: str) -> str:
        options = ['<option value="">choose a run</option>'] + [
            f'<option value="{e(i)}"{" selected" if i == picked else ""}>{e(label)}'
            "</option>" for i, label in labels.items()]
        return f'<select name="{name}" data-filter="{name}">{"".join(options)}</select>'

    narrow = (f'<p class="small">The newest {len(listing.runs)} of {listing.matching} runs '
              "matching; the filters narrow them.</p>" if listing.matching >
              len(listing.runs) else "")
    pickers = ('<form class="filters" method="get" action="/compare">'
               + "".join(f'<input type="hidden" name="{k}" value="{e(v)}">'
                         for k, v in vars(f).items() if v)
               + _label("run A", choose("a", a)) + _label("run B", choose("b", b))
               + '<button type="submit">Compare</button></form>')
    return (_note(listing.note) + _filters("/compare", listing, f) + narrow + pickers
            + (content or "<p>Choose two runs of the same kind.</p>"))


def message_page(message: str) -> str:
    return f'<p class="error">{e(message)}</p>'
