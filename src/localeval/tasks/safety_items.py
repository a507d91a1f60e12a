"""The items of the three safety tasks: where each reads them, the subset and language filters,
and ``--limit`` (item ids per subset, every language version kept so pairs stay whole)."""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any, Literal, get_args

from ..data.rows import TABLE_SUFFIXES
from ..data.safety import (
    HUB_REPO,
    SEA_LANGS,
    SafetyItem,
    load_labelled_prompts,
    load_seasafeguard_hub,
    load_seasafeguard_local,
    load_xstest_completions,
)
from ..errors import LocalevalError

# The safety tasks, each reading its own kind of data (llm-safety reads sea-safeguard's or a
# prompt file's items)
SafetyTask = Literal["sea-safeguard", "safety-prompts", "safety-responses"]
SAFETY_TASKS: tuple[SafetyTask, ...] = get_args(SafetyTask)


def safety_task(name: str) -> SafetyTask:
    """``name`` as one of the safety tasks, or LocalevalError naming them."""
    for task in SAFETY_TASKS:
        if name == task:
            return task
    raise LocalevalError(f"unknown safety task {name!r}; use one of {', '.join(SAFETY_TASKS)}")


def load_safety_items(task: SafetyTask, data: str | Path | None = None,
                      subsets: Sequence[str] | None = None, langs: Sequence[str] | None = None,
                      limit: int | None = None,
                      dataset_revision: str | None = None) -> list[SafetyItem]:
    """The task's items, filtered by subset and language, then cut by :func:`limit_items`."""
    if data is not None and not Path(data).exists():
        raise LocalevalError(f"--data {data}: no such file or folder")
    items = _items(task, data, subsets, langs, dataset_revision)
    if subsets:
        items = [i for i in items if i.subset in subsets]
    if langs:
        check_langs(langs, {i.lang for i in items})
        items = [i for i in items if i.lang in langs]
    if not items:
        raise LocalevalError(f"no {task} items left after the subset/language filters "
                             f"(subsets={subsets}, langs={langs})")
    return limit_items(items, limit)


# Country codes written for a language code (`vn` for Vietnamese): the did-you-mean they get.
COUNTRY_FOR_LANGUAGE = {"vn": "vi", "cn": "zh", "tw": "zh", "kr": "ko", "jp": "ja", "ph": "tl",
                        "fil": "tl", "mm": "my", "bd": "bn", "sa": "ar", "my": "ms",
                        "us": "en", "uk": "en", "gb": "en", "kh": "km", "la": "lo"}


def _items(task: SafetyTask, data: str | Path | None, subsets: Sequence[str] | None,
           langs: Sequence[str] | None, revision: str | None) -> list[SafetyItem]:
    """Every item the task's data holds (the Hub benchmark: only the subsets and languages
    named)."""
    if task == "sea-safeguard" and (data is None or Path(data).is_dir()):
        check_langs(langs, ("en", *SEA_LANGS))  # the Hub layout loads only the languages named
    if task == "sea-safeguard":
        items = _sea_safeguard(data, subsets, langs, revision)
    elif data is None:
        what = "a prompt file (or folder of them)" if task == "safety-prompts" else \
            "the XSTest model_completions folder"
        raise LocalevalError(f"task {task} needs --data: {what}")
    elif task == "safety-prompts":
        items = _labelled_prompts(Path(data))
    else:
        items = load_xstest_completions(data)
    return items


def check_langs(langs: Sequence[str] | None, held: Iterable[str]) -> None:
    """``--lang`` names only languages the data holds: an unknown code (a typo, a country code)
    would silently drop a language from the run."""
    held = sorted(set(held))
    unknown = [lang for lang in langs or () if lang not in held]
    if not unknown:
        return
    lang = unknown[0]
    code = str(lang).lower()
    if code in held:
        guesses = [code]
    elif COUNTRY_FOR_LANGUAGE.get(code) in held:  # a language code where the data has countries
        guesses = [COUNTRY_FOR_LANGUAGE[code]]
    else:
        guesses = difflib.get_close_matches(code, held, n=2, cutoff=0.5)
    hint = f"did you mean {' or '.join(guesses)}? " if guesses else ""
    raise LocalevalError(f"--lang: unknown language {lang!r} ({hint}the data holds "
                         f"{', '.join(held)})")


def _sea_safeguard(data: str | Path | None, subsets: Sequence[str] | None,
                   langs: Sequence[str] | None, revision: str | None) -> list[SafetyItem]:
    """The Hub dataset, a local folder in its layout, or one file of items."""
    if data is not None and not Path(data).is_dir():
        return load_seasafeguard_local(data)
    if data is not None and not (Path(data) / "README.md").is_file():
        raise LocalevalError(f"{data} is a folder without a README.md: --data for "
                             "sea-safeguard is one file of items (JSONL, CSV or Parquet) or a "
                             "folder in the Hub's layout (README.md with configs: and its "
                             "data files)")
    opts: dict[str, Any] = {"revision": revision, "repo": str(data) if data else HUB_REPO}
    if subsets:
        opts["subsets"] = subsets
    if langs:
        opts["langs"] = langs
    return load_seasafeguard_hub(**opts)


def _labelled_prompts(path: Path) -> list[SafetyItem]:
    """One labelled prompt file, or every such file in a folder."""
    if path.is_dir() and (path / "test").is_dir():  # CMMLU's layout: dev/<subject>.csv, test/…
        raise LocalevalError(f"--data {path} is a multiple-choice folder (test/<subject>.csv), "
                             "not labelled prompts; run it with --task cmmlu, tmlu, tmmluplus "
                             "or a name of your own (safety-prompts reads files with the "
                             "columns prompt and label: XSTest CSV, JailbreakBench JSONL)")
    files = sorted(f for f in path.iterdir() if f.suffix in TABLE_SUFFIXES) if path.is_dir() \
        else [path]
    if not files:
        raise LocalevalError(f"no {', '.join(TABLE_SUFFIXES)} files in {path}")
    return [i for f in files for i in load_labelled_prompts(f)]


def limit_items(items: list[SafetyItem], limit: int | None) -> list[SafetyItem]:
    """At most ``limit`` item ids per subset, each with all its language versions (so pairs stay
    whole). The ids are evenly spaced over the subset's ids in file order, id number
    ``floor(k * n / limit)`` for k = 0..limit-1, so that files sorted by label keep both."""
    if not limit:
        return items
    if limit < 0:
        raise LocalevalError(f"limit must be a positive number, not {limit}")
    order: dict[str, dict[str, None]] = {}
    for item in items:
        order.setdefault(item.subset, {})[item.id] = None
    keep = {(sub, ids[k * len(ids) // limit]) for sub, ids in
            ((s, list(d)) for s, d in order.items())
            for k in range(min(limit, len(ids)))}
    return [i for i in items if (i.subset, i.id) in keep]
