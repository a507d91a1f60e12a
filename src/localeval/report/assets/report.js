// localeval report: the sample browser. Plain JavaScript, no library, no network. Sample text
// is only ever set with textContent, never parsed as HTML, whatever the samples hold.
"use strict";
(function () {
  const PAGE = 100; // rows drawn at a time; "Show more" draws the next page

  function element(tag, props, children) {
    const node = document.createElement(tag);
    Object.assign(node, props || {});
    for (const child of children || []) node.append(child);
    return node;
  }

  function shown(value, type) {
    if (value === null || value === undefined) return "";
    if (type === "bool") return value ? "yes" : "no";
    if (type === "num") return Number.isInteger(value) ? String(value) : value.toFixed(3);
    return String(value);
  }

  function compare(a, b) {
    if (a === b) return 0;
    if (a === null || a === undefined) return 1; // empty cells last, whichever the direction
    if (b === null || b === undefined) return -1;
    if (typeof a === "number" && typeof b === "number") return a - b;
    return String(a).localeCompare(String(b), undefined, {numeric: true});
  }

  // Longer texts show their start and a button for the rest: laying out hundreds of thousands
  // of characters on every redraw (sort, filter, show harmful text) can freeze the page.
  const LONG_TEXT = 4000;

  // start: where the preview begins, after what the text shares with other samples' (a
  // few-shot prefix; data.starts), so each question shows, not the same examples
  function textCell(value, warn, start) {
    const text = shown(value, "text");
    if (!text) return element("td");
    const preview = warn ? "⚠ Content warning: harmful or sensitive text (click to show)"
      : (start ? "…" : "") + (text.length > start + 70 ? text.slice(start, start + 70) + "…"
                                                       : text.slice(start));
    const long = text.length > LONG_TEXT;
    const pre = element("pre", {textContent: long ? text.slice(0, LONG_TEXT) + "…" : text});
    const parts = [element("summary", {textContent: preview}), pre];
    if (long) {
      const all = element("button", {type: "button", className: "all",
        textContent: `Show all ${text.length.toLocaleString("en")} characters`});
      all.addEventListener("click", () => { pre.textContent = text; all.remove(); });
      parts.push(all);
    }
    return element("td", {className: "text"},
      [element("details", {className: warn ? "cw" : ""}, parts)]);
  }

  function cell(value, column, warn, start) {
    if (column.type === "text") return textCell(value, warn, start || 0);
    const td = element("td", {textContent: shown(value, column.type)});
    if (column.type === "num") td.className = "num";
    else if (td.textContent.length <= 24) td.className = "short"; // ids and labels stay on one line
    if (column.type === "bool" && value !== null && value !== undefined) {
      // failed and unanswered are bad news when true; any other yes/no good news
      const bad = column.key === "failed" || column.key === "unanswered";
      td.className = bad === Boolean(value) ? "no" : "yes";
    }
    return td;
  }

  function setUp(root) {
    const data = JSON.parse(document.getElementById(root.dataset.source).textContent);
    const columns = data.columns;
    const state = {query: "", filters: {}, sortBy: null, descending: false, limit: PAGE};
    const body = element("tbody");
    const count = element("p", {className: "count"});
    const more = element("button", {className: "more", type: "button", textContent: "Show more"});
    const controls = element("div", {className: "controls"});
    const search = element("input", {type: "search", placeholder: "Search every column…"});
    search.setAttribute("aria-label", "search samples");
    search.dataset.role = "search";
    search.addEventListener("input", () => { state.query = search.value.toLowerCase(); redraw(true); });
    controls.append(element("label", {}, ["Search", search]));
    columns.forEach((column, index) => {
      if (!column.filter) return;
      const values = [...new Set(data.rows.map((row) => shown(row[index], column.type)))]
        .sort((a, b) => a.localeCompare(b, undefined, {numeric: true}));
      const select = element("select", {}, [element("option", {value: "", textContent: "all"})]);
      for (const value of values) {
        select.append(element("option", {value: value, textContent: value || "(empty)"}));
      }
      select.dataset.filter = column.key;
      select.addEventListener("change", () => {
        if (select.selectedIndex === 0) delete state.filters[index];
        else state.filters[index] = select.value;
        redraw(true);
      });
      controls.append(element("label", {}, [column.title, select]));
    });
    if (data.warn.some((cells) => cells.length)) {
      const reveal = element("input", {type: "checkbox"});
      reveal.dataset.role = "reveal";
      reveal.addEventListener("change", () => {
        for (const d of body.querySelectorAll("details.cw")) d.open = reveal.checked;
        state.reveal = reveal.checked;
      });
      controls.append(element("label", {className: "toggle"}, [reveal, "Show harmful text"]));
    }
    const headRow = element("tr");
    columns.forEach((column, index) => {
      const button = element("button", {type: "button", textContent: column.title});
      const th = element("th", {className: column.type === "num" ? "num" : ""}, [button]);
      th.setAttribute("aria-sort", "none");
      button.addEventListener("click", () => {
        state.descending = state.sortBy === index ? !state.descending : false;
        state.sortBy = index;
        for (const other of headRow.children) other.setAttribute("aria-sort", "none");
        th.setAttribute("aria-sort", state.descending ? "descending" : "ascending");
        redraw(true);
      });
      headRow.append(th);
    });
    const table = element("table", {className: "data samples"},
      [element("thead", {}, [headRow]), body]);
    more.addEventListener("click", () => { state.limit += PAGE; redraw(false); });
    // A table wider than the page scrolls in its own box: the page never scrolls sideways.
    root.append(controls, count, element("div", {className: "scroll"}, [table]), more);

    const haystacks = data.rows.map((row) => row.map((v) => shown(v, "text")).join("\u0001").toLowerCase());

    function matching() {
      const out = [];
      data.rows.forEach((row, i) => {
        if (state.query && !haystacks[i].includes(state.query)) return;
        for (const [index, value] of Object.entries(state.filters)) {
          if (shown(row[index], columns[index].type) !== value) return;
        }
        out.push(i);
      });
      if (state.sortBy !== null) {
        const k = state.sortBy;
        out.sort((a, b) => {
          const order = compare(data.rows[a][k], data.rows[b][k]);
          const empty = data.rows[a][k] === null || data.rows[b][k] === null;
          return state.descending && !empty ? -order : order;
        });
      }
      return out;
    }

    function redraw(reset) {
      if (reset) state.limit = PAGE;
      const rows = matching();
      const fragment = document.createDocumentFragment();
      for (const i of rows.slice(0, state.limit)) {
        const tr = element("tr");
        tr.dataset.row = String(i);
        // data.warn[i]: the columns of row i whose text is harmful or sensitive
        const warned = new Set(data.warn[i]);
        const starts = (data.starts || [])[i] || {};
        data.rows[i].forEach((value, k) => tr.append(cell(value, columns[k], warned.has(k),
                                                          starts[k])));
        if (state.reveal) for (const d of tr.querySelectorAll("details.cw")) d.open = true;
        fragment.append(tr);
      }
      body.replaceChildren(fragment);
      const drawn = Math.min(rows.length, state.limit);
      count.textContent = `Showing ${drawn} of ${rows.length} matching samples (${data.rows.length} in all)`;
      count.dataset.matching = String(rows.length);
      more.hidden = drawn >= rows.length;
    }

    redraw(true);
  }

  for (const root of document.querySelectorAll(".browser")) setUp(root);
})();

// Printing (or saving as PDF) shows every table, the folded ones too.
window.addEventListener("beforeprint", () => {
  for (const d of document.querySelectorAll("details.table")) d.open = true;
});
