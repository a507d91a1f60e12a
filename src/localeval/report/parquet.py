"""A run's samples and results as Parquet in the Hugging Face datasets layout (``export --format
parquet``), so a team loads them with ``datasets`` or pushes the folder to the Hub as it is.

The layout is the one ``datasets.Dataset.push_to_hub(config_name=...)`` writes (datasets
``arrow_dataset.py``, ``Dataset.push_to_hub``: ``<config>/<split>-00000-of-00001.parquet``, and
the README.md's YAML ``configs`` list naming each config's ``data_files``, one marked
``default``): three configs, each with one ``train`` split:

- ``samples`` (default): one row per line of samples.jsonl;
- ``results``: one row per headline metric the run's view names (``metric``, ``value``, ``n``);
- ``run``: one row, config.json and results.json whole (as JSON text).

Sample records are not all alike (a chat prompt is a list of messages, log-probs a dict keyed
by letter), so a field whose values are all text, numbers or booleans keeps its type, and any
other field is stored as JSON text; the dataset card lists those columns.
"""

from __future__ import annotations

import io
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import yaml

from ..records.base import Results
from ..records.samples import Sample
from ..store.files import make_own_folder, write_bytes_whole, write_text_whole
from ..store.runs import stored_data
from ..version import __version__
from ..views.registry import view_for

SPLIT = "train"  # what load_dataset names a split given by files alone
CONFIGS = ("samples", "results", "run")


def _scalar_kind(value: Any) -> type:
    """bool, int, float or str; object for anything else. bool first: True is an int to
    Python."""
    for kind in (bool, int, float, str):
        if isinstance(value, kind):
            return kind
    return object


INT64 = (-(2**63), 2**63 - 1)
EXACT_IN_DOUBLE = 2**53  # every integer up to this size is exactly a float64


def _arrow_type(values: list[Any]) -> pa.DataType | None:
    """The column's type when every value is a scalar of one kind (None allowed) that the type
    holds exactly, else None (stored as JSON text, which loses nothing): an integer beyond
    int64 (a year of 10**30 in a data file), or one a float64 would round among floats."""
    present = [v for v in values if v is not None]
    kinds = {_scalar_kind(v) for v in present}
    ints = [v for v in present if _scalar_kind(v) is int]
    if not kinds or kinds == {str}:
        return pa.string()
    if kinds == {bool}:
        return pa.bool_()
    if kinds == {int} and all(INT64[0] <= v <= INT64[1] for v in ints):
        return pa.int64()
    exact_as_float = all(abs(v) <= EXACT_IN_DOUBLE for v in ints)
    if kinds <= {int, float} and float in kinds and exact_as_float:
        return pa.float64()
    return None


def samples_table(records: Sequence[Sample]) -> tuple[pa.Table, list[str]]:
    """samples.jsonl as a table (a column per JSON field, in the file's order), and the names
    of the columns held as JSON text."""
    samples = [stored_data(s) for s in records]
    names = list(dict.fromkeys(k for s in samples for k in s))
    columns, as_json = {}, []
    for name in names:
        values = [s.get(name) for s in samples]
        kind = _arrow_type(values)
        if kind is None:
            as_json.append(name)
            values = [None if v is None else json.dumps(v, ensure_ascii=False, sort_keys=True)
                      for v in values]
            kind = pa.string()
        columns[name] = pa.array(values, type=kind)
    return pa.table(columns), as_json


def results_table(results: Results) -> pa.Table:
    rows = view_for(results).store_metrics(results)
    return pa.table({"metric": pa.array([str(r[0]) for r in rows], pa.string()),
                     "value": pa.array([r[1] for r in rows], pa.float64()),
                     "n": pa.array([r[2] for r in rows], pa.int64())})


def run_table(config: dict[str, Any], results: Results) -> pa.Table:
    def text(value: Any) -> str:
        return json.dumps(value, ensure_ascii=False, sort_keys=True)

    return pa.table({"task": [str(config.get("task") or results.task or "")],
                     "model": [str(config.get("model") or results.model or "")],
                     "schema": [results.schema_], "config_json": [text(config)],
                     "results_json": [text(results.data())]})


def _parquet_bytes(table: pa.Table) -> bytes:
    sink = io.BytesIO()
    pq.write_table(table, sink)
    return sink.getvalue()


def write_parquet(config: dict[str, Any], results: Results, samples: Sequence[Sample],
                  out: Path, source: str) -> list[Path]:
    """The three configs' Parquet files and README.md (the dataset card) under ``out``."""
    samples_t, as_json = samples_table(samples)
    tables = {"samples": samples_t, "results": results_table(results),
              "run": run_table(config, results)}
    written = []
    for name, table in tables.items():
        path = out / name / f"{SPLIT}-00000-of-00001.parquet"
        make_own_folder(path.parent)
        write_bytes_whole(path, _parquet_bytes(table))  # never through a link
        written.append(path)
    card = out / "README.md"
    write_text_whole(card, dataset_card(config, results, tables, as_json, source))
    return [*written, card]


def dataset_card(config: dict[str, Any], results: Results, tables: dict[str, pa.Table],
                 as_json: list[str], source: str) -> str:
    meta = {"configs": [{"config_name": name, "data_files": [
        {"split": SPLIT, "path": f"{name}/{SPLIT}-*"}], **({"default": True} if
                                                          name == "samples" else {})}
        for name in CONFIGS],
        "tags": ["localeval", "evaluation"]}
    task, model = tables["run"]["task"][0].as_py(), tables["run"]["model"][0].as_py()
    lines = [
        "---", yaml.safe_dump(meta, sort_keys=False, allow_unicode=True).rstrip(), "---", "",
        f"# localeval run: {task} on {model}", "",
        f"Exported by localeval {__version__} from the run folder `{source}` "
        f"(results schema `{results.schema_}`).", "",
        f"- `samples` (default): {tables['samples'].num_rows} rows, one per line of "
        "samples.jsonl.",
        f"- `results`: {tables['results'].num_rows} headline metrics (`metric`, `value`, `n`).",
        "- `run`: config.json and results.json whole, as JSON text.", "",
        "Columns of `samples` held as JSON text: "
        + (", ".join(f"`{c}`" for c in as_json) if as_json else "none") + ".", "",
        "```python",
        "from datasets import load_dataset",
        "samples = load_dataset(\"path/to/this/folder\", \"samples\", split=\"train\")",
        "```", ""]
    return "\n".join(lines)
